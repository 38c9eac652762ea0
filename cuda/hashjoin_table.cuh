// The GPU engine's hash table (hashjoin.hpp, "1. Table"): phase 1 (count,
// CUB exclusive scan, scatter), phase 2 (one block per bucket), lookups, and
// the backend of build_table() (hashjoin_build.hpp). Internal to
// cuda/hashjoin.cu; a header so that the unit tests can run the same build
// with a test gate (test/unit/hashjoin_seam.cu) without a hook in the product.
// Everything here has internal linkage: each including file gets its own copy.
#pragma once

#include <cub/device/device_scan.cuh>

#include <climits>
#include <memory>

#include "common.cuh"
#include "core/hashjoin_build.hpp"
#include "core/hashjoin_internal.hpp"

namespace approx::hashjoin {

namespace {

using gpu::blocks_for;
using gpu::CubTemp;
using gpu::DeviceBuffer;
using gpu::PinnedBuffer;

constexpr unsigned kThreads = 256;
constexpr int kBuildThreads = kBucketCapacity;  // one thread per key of a bucket

// Events around a stretch of stream work, added to a running total.
class Lap {
public:
    Lap() = default;
    Lap(const Lap&) = delete;
    Lap& operator=(const Lap&) = delete;
    ~Lap() {
        if (a_) cudaEventDestroy(a_);
        if (b_) cudaEventDestroy(b_);
    }
    Status start(cudaStream_t s) {
        if (!a_) APPROX_CUDA(cudaEventCreate(&a_));
        if (!b_) APPROX_CUDA(cudaEventCreate(&b_));
        APPROX_CUDA(cudaEventRecord(a_, s));
        return Status::Ok();
    }
    Status stop(cudaStream_t s, double& total_ms) {
        APPROX_CUDA(cudaEventRecord(b_, s));
        APPROX_CUDA(cudaEventSynchronize(b_));
        float ms = 0;
        APPROX_CUDA(cudaEventElapsedTime(&ms, a_, b_));
        total_ms += ms;
        return Status::Ok();
    }

private:
    cudaEvent_t a_ = nullptr, b_ = nullptr;
};

struct BuildFlags {
    unsigned long long restarts;
    int failed;
    int dup;
    long long dup_key;
    int max_keys;
    int overflow;
};

struct BuildParams {
    int max_attempts;
    int max_rounds;
};

// ---- phase 1 -------------------------------------------------------------------

__global__ void count_kernel(const int64_t* __restrict__ keys, size_t n, uint64_t seed, uint32_t buckets,
                             uint32_t* __restrict__ counts, uint16_t* __restrict__ rank, BuildFlags* flags) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t b = bucket_of(mix_key(keys[i], seed), buckets);
    uint32_t r = atomicAdd(&counts[b], 1u);
    if (r >= static_cast<uint32_t>(kBucketCapacity)) {
        flags->overflow = 1;
        r = 0;
    }
    rank[i] = static_cast<uint16_t>(r);
}

__global__ void scatter_kernel(const int64_t* __restrict__ keys, const int64_t* __restrict__ values, size_t n,
                               uint64_t seed, uint32_t buckets, const uint32_t* __restrict__ offsets,
                               const uint16_t* __restrict__ rank, Slot* __restrict__ out) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Slot pair;
    pair.key = keys[i];
    pair.value = values ? values[i] : static_cast<int64_t>(i);
    uint32_t b = bucket_of(mix_key(pair.key, seed), buckets);
    out[offsets[b] + rank[i]] = pair;  // one 16-byte store per pair
}

// ---- phase 2 -------------------------------------------------------------------

__device__ __forceinline__ uint32_t pick(uint32_t a, uint32_t b, uint32_t c, int j) {
    return j == 0 ? a : (j == 1 ? b : c);
}

// `gate` decides which converged attempts stand (hashjoin_build.hpp).
template <class Gate>
__global__ void __launch_bounds__(kBuildThreads)
    bucket_kernel(const Slot* __restrict__ pairs, const uint32_t* __restrict__ offsets, uint64_t seed, BuildParams p,
                  Gate gate, Slot* __restrict__ slots, BucketMeta* __restrict__ meta, BuildFlags* flags) {
    __shared__ int64_t s_key[kBucketCapacity];
    __shared__ int64_t s_val[kBucketCapacity];
    __shared__ int s_slot[kBucketSlots];
    __shared__ Filler s_fill[kSubtables];
    __shared__ int s_fill_ok;

    const uint32_t b = blockIdx.x;
    const uint32_t start = offsets[b];
    const int count = static_cast<int>(offsets[b + 1] - start);
    const int t = static_cast<int>(threadIdx.x);
    const bool active = t < count;
    int64_t k = 0;
    if (active) {
        Slot pair = pairs[start + t];
        k = pair.key;
        s_key[t] = k;
        s_val[t] = pair.value;
    }
    if (t == 0) atomicMax(&flags->max_keys, count);
    const uint64_t u = mix_key(k, seed);

    int attempt = 0;
    bool ok = false;
    uint32_t pos0 = 0, pos1 = 0, pos2 = 0;
    for (; attempt < p.max_attempts; ++attempt) {
        const uint64_t m0 = bucket_multiplier(seed, b, attempt, 0);
        const uint64_t m1 = bucket_multiplier(seed, b, attempt, 1);
        const uint64_t m2 = bucket_multiplier(seed, b, attempt, 2);
        pos0 = slot_of(u, m0);
        pos1 = kSubtableSlots + slot_of(u, m1);
        pos2 = 2 * kSubtableSlots + slot_of(u, m2);
        for (int s = t; s < kBucketSlots; s += kBuildThreads) s_slot[s] = -1;
        if (t == 0) s_fill_ok = 1;
        __syncthreads();
        if (t < kSubtables) {
            Filler f{0, 0};
            if (!make_filler(seed, t == 0 ? m0 : (t == 1 ? m1 : m2), f)) s_fill_ok = 0;
            s_fill[t] = f;
        }
        // Parallel cuckoo: unplaced keys write their slot in their current
        // sub-table; after the barrier each key checks its slot, and one that
        // lost the slot (or was overwritten) moves to its next sub-table.
        bool placed = false;
        int sub = 0;
        uint32_t my = pos0;
        int rounds = 0;
        int any_unplaced;
        do {
            if (active && !placed) s_slot[my] = t;
            __syncthreads();
            if (active) {
                bool mine = s_slot[my] == t;
                if (mine != placed) {
                    placed = mine;
                    if (!mine) {
                        sub = sub == kSubtables - 1 ? 0 : sub + 1;
                        my = pick(pos0, pos1, pos2, sub);
                    }
                }
            }
            any_unplaced = __syncthreads_or(active && !placed);
        } while (any_unplaced && ++rounds < p.max_rounds);
        ok = !any_unplaced && s_fill_ok != 0 && gate.accepts(attempt);
        if (ok) break;
        if (t == 0) atomicAdd(&flags->restarts, 1ull);
        __syncthreads();  // everyone has read s_fill_ok and s_slot before they are reset
    }

    if (!ok) {
        if (t == 0) atomicExch(&flags->failed, 1);
        // More than three equal keys never fit: report them as what they are.
        if (active)
            for (int i = 0; i < t; ++i)
                if (s_key[i] == k) {
                    if (atomicExch(&flags->dup, 1) == 0) flags->dup_key = k;
                    break;
                }
        return;
    }
    // Up to three equal keys fit; an equal key then sits in one of my slots.
    if (active) {
        int idx[kSubtables] = {s_slot[pos0], s_slot[pos1], s_slot[pos2]};
#pragma unroll
        for (int j = 0; j < kSubtables; ++j)
            if (idx[j] >= 0 && idx[j] != t && s_key[idx[j]] == k) {
                if (atomicExch(&flags->dup, 1) == 0) flags->dup_key = k;
                break;
            }
    }
    Slot* out = slots + static_cast<size_t>(b) * kBucketSlots;
    for (int s = t; s < kBucketSlots; s += kBuildThreads) {
        int idx = s_slot[s];
        Slot v;
        if (idx >= 0) {
            v.key = s_key[idx];
            v.value = s_val[idx];
        } else {
            int j = s / kSubtableSlots;
            v.key = filler_key(s_fill[j], static_cast<uint32_t>(s - j * kSubtableSlots));
            v.value = 0;
        }
        out[s] = v;
    }
    if (t == 0) {
        BucketMeta m;
        for (int j = 0; j < kSubtables; ++j) m.mul[j] = bucket_multiplier(seed, b, attempt, j);
        m.attempt = static_cast<uint32_t>(attempt);
        m.keys = static_cast<uint32_t>(count);
        meta[b] = m;
    }
}

// ---- lookups -----------------------------------------------------------------------

struct TableView {
    const Slot* slots;
    const BucketMeta* meta;
    uint32_t buckets;
    uint64_t seed;
};

__global__ void find_kernel(const int64_t* __restrict__ keys, size_t m, TableView tv, int64_t* __restrict__ values,
                            uint8_t* __restrict__ found) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= m) return;
    int64_t v = 0;
    bool f = lookup(tv.slots, tv.meta, tv.buckets, tv.seed, keys[i], v);
    values[i] = f ? v : 0;
    found[i] = f ? 1 : 0;
}

// ---- the table on the GPU ------------------------------------------------------------

struct GpuTable {
    DeviceBuffer<Slot> slots;
    DeviceBuffer<BucketMeta> meta;
    uint32_t buckets = 0;
    uint64_t seed = 0;
    TableView view() const { return TableView{slots.get(), meta.get(), buckets, seed}; }
};

// The GPU phases of build_table() (hashjoin_build.hpp): phase 1 by a count
// kernel, CUB's exclusive scan and a scatter kernel; phase 2 one thread block
// per bucket. Device buffers are allocated up front (no allocation between
// kernels); the flags come back to the host after each phase. `gate` decides
// which converged bucket attempts stand (EveryAttempt in the product).
template <class Gate = EveryAttempt>
class GpuBuild {
public:
    Gate gate{};

    GpuBuild(const int64_t* d_keys, const int64_t* d_values, size_t n, const int64_t* host_keys, uint32_t buckets,
             const ExecContext& ctx, const BuildOptions& o, cudaStream_t stream, GpuTable& table, double& kernel_ms)
        : d_keys_(d_keys),
          d_values_(d_values),
          n_(n),
          host_keys_(host_keys),
          buckets_(buckets),
          ctx_(ctx),
          o_(o),
          stream_(stream),
          table_(table),
          kernel_ms_(kernel_ms) {}

    Status init() {
        APPROX_TRY(counts_.alloc(ctx_, static_cast<size_t>(buckets_) + 1));
        APPROX_TRY(offsets_.alloc(ctx_, static_cast<size_t>(buckets_) + 1));
        APPROX_TRY(flags_.alloc(ctx_, 1));
        if (n_ > 0) {
            APPROX_TRY(rank_.alloc(ctx_, n_));
            APPROX_TRY(pairs_.alloc(ctx_, n_));
        }
        APPROX_TRY(table_.slots.alloc(ctx_, static_cast<size_t>(buckets_) * kBucketSlots));
        APPROX_TRY(table_.meta.alloc(ctx_, buckets_));
        // CUB's temp storage first, so that no allocation happens between kernels.
        APPROX_TRY(scan());
        return lap_.start(stream_);
    }

    Status spread(uint64_t seed, bool& overflow) {
        APPROX_CUDA(cudaMemsetAsync(counts_.get(), 0, counts_.bytes(), stream_));
        APPROX_CUDA(cudaMemsetAsync(flags_.get(), 0, sizeof(BuildFlags), stream_));
        if (n_ > 0) {
            count_kernel<<<blocks_for(n_, kThreads), kThreads, 0, stream_>>>(d_keys_, n_, seed, buckets_, counts_.get(),
                                                                             rank_.get(), flags_.get());
            APPROX_CUDA_LAUNCHED();
        }
        APPROX_TRY(read_flags());
        overflow = h_.overflow != 0;
        if (overflow) return Status::Ok();
        APPROX_TRY(scan());
        if (n_ > 0) {
            scatter_kernel<<<blocks_for(n_, kThreads), kThreads, 0, stream_>>>(d_keys_, d_values_, n_, seed, buckets_,
                                                                               offsets_.get(), rank_.get(),
                                                                               pairs_.get());
            APPROX_CUDA_LAUNCHED();
        }
        return Status::Ok();
    }

    bool find_duplicate(int64_t& key) const { return host_keys_ && hashjoin::find_duplicate(host_keys_, n_, key); }

    Status build_buckets(uint64_t seed, BucketsResult& r) {
        BuildParams params{o_.max_bucket_attempts, o_.max_cuckoo_rounds};
        bucket_kernel<<<buckets_, kBuildThreads, 0, stream_>>>(pairs_.get(), offsets_.get(), seed, params, gate,
                                                               table_.slots.get(), table_.meta.get(), flags_.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_TRY(read_flags());
        r.restarts = static_cast<int64_t>(h_.restarts);
        r.dup = h_.dup != 0;
        r.dup_key = static_cast<int64_t>(h_.dup_key);
        r.failed = h_.failed != 0;
        r.max_keys = h_.max_keys;
        return Status::Ok();
    }

    Status finish(uint64_t seed) {
        APPROX_TRY(lap_.stop(stream_, kernel_ms_));
        table_.buckets = buckets_;
        table_.seed = seed;
        return Status::Ok();
    }

    void abandon() {}

private:
    Status scan() {
        return tmp_.run(ctx_, [&](void* p, size_t& bytes) {
            return cub::DeviceScan::ExclusiveSum(p, bytes, counts_.get(), offsets_.get(), buckets_ + 1, stream_);
        });
    }
    Status read_flags() {
        APPROX_CUDA(cudaMemcpyAsync(&h_, flags_.get(), sizeof h_, cudaMemcpyDeviceToHost, stream_));
        APPROX_CUDA(cudaStreamSynchronize(stream_));
        return Status::Ok();
    }

    const int64_t* d_keys_;
    const int64_t* d_values_;
    size_t n_;
    const int64_t* host_keys_;
    uint32_t buckets_;
    const ExecContext& ctx_;
    const BuildOptions& o_;
    cudaStream_t stream_;
    GpuTable& table_;
    double& kernel_ms_;
    DeviceBuffer<uint32_t> counts_, offsets_;
    DeviceBuffer<uint16_t> rank_;
    DeviceBuffer<Slot> pairs_;  // the pairs, bucket by bucket
    DeviceBuffer<BuildFlags> flags_;
    CubTemp tmp_;
    Lap lap_;
    BuildFlags h_{};
};

// Builds a table from n pairs already on the device (d_values == nullptr:
// value = index). host_keys, when given, explains a phase-1 failure by a
// repeated key. Adds kernel time to kernel_ms. Backend: the phases
// (GpuBuild<> in the product).
template <class Backend = GpuBuild<>>
Status build_on_device(const int64_t* d_keys, const int64_t* d_values, size_t n, const int64_t* host_keys,
                       const ExecContext& ctx, const BuildOptions& o, cudaStream_t stream, GpuTable& table,
                       TableInfo& info, double& kernel_ms) {
    APPROX_TRY(check_options(o));
    const uint32_t buckets = bucket_count(n, o);
    if (buckets > static_cast<uint32_t>(INT_MAX))
        return Status::Error(StatusCode::ProgramLimit, "too many buckets (%u) for one GPU launch", buckets);
    info = TableInfo();
    info.device = Device::Gpu;
    Backend backend(d_keys, d_values, n, host_keys, buckets, ctx, o, stream, table, kernel_ms);
    APPROX_TRY(backend.init());
    return build_table(backend, n, buckets, ctx, o, info);
}

class GpuStorage final : public TableStorage {
public:
    GpuTable table;

    Status find(const int64_t* keys, size_t m, int64_t* values, uint8_t* found, const ExecContext& ctx) const override {
        Stopwatch wall;
        cudaStream_t stream;
        APPROX_TRY(gpu::begin(ctx, stream));
        DeviceBuffer<int64_t> d_keys, d_values;
        DeviceBuffer<uint8_t> d_found;
        APPROX_TRY(d_keys.alloc(ctx, m));
        APPROX_TRY(d_values.alloc(ctx, m));
        APPROX_TRY(d_found.alloc(ctx, m));
        double transfer = 0, kernels = 0;
        Lap lap;
        APPROX_TRY(lap.start(stream));
        APPROX_CUDA(cudaMemcpyAsync(d_keys.get(), keys, m * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
        APPROX_TRY(lap.stop(stream, transfer));
        APPROX_TRY(lap.start(stream));
        find_kernel<<<blocks_for(m, kThreads), kThreads, 0, stream>>>(d_keys.get(), m, table.view(), d_values.get(),
                                                                      d_found.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_TRY(lap.stop(stream, kernels));
        APPROX_TRY(lap.start(stream));
        APPROX_CUDA(cudaMemcpyAsync(values, d_values.get(), m * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaMemcpyAsync(found, d_found.get(), m, cudaMemcpyDeviceToHost, stream));
        APPROX_TRY(lap.stop(stream, transfer));
        if (ctx.stats) {
            ctx.stats->ms_transfer = transfer;
            ctx.stats->ms_compute = wall.ms() - transfer;
            ctx.stats->add("ms_kernels", kernels);
        }
        return Status::Ok();
    }
};

// From the reader's staged device copy when it uploaded src while reading.
Status upload(const ExecContext& ctx, int64_t* dst, const int64_t* src, size_t n, cudaStream_t stream,
              double& transfer_ms) {
    if (n == 0) return Status::Ok();
    Lap lap;
    APPROX_TRY(lap.start(stream));
    APPROX_CUDA(gpu::copy_input(ctx, dst, src, n, stream));
    return lap.stop(stream, transfer_ms);
}

// gpu_build_table() with the phases of Backend: uploads the pairs, builds,
// records the timings.
template <class Backend = GpuBuild<>>
Status build_gpu_table(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                       const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info) {
    Stopwatch wall;
    cudaStream_t stream;
    APPROX_TRY(gpu::begin(ctx, stream));
    double transfer = 0, kernels = 0;
    DeviceBuffer<int64_t> d_keys, d_values;
    APPROX_TRY(d_keys.alloc(ctx, n));
    if (values) APPROX_TRY(d_values.alloc(ctx, n));
    APPROX_TRY(upload(ctx, d_keys.get(), keys, n, stream, transfer));
    if (values) APPROX_TRY(upload(ctx, d_values.get(), values, n, stream, transfer));
    std::unique_ptr<GpuStorage> st(new GpuStorage);
    APPROX_TRY(build_on_device<Backend>(d_keys.get(), values ? d_values.get() : nullptr, n, keys, ctx, o, stream,
                                        st->table, info, kernels));
    out = std::move(st);
    if (ctx.stats) {
        ctx.stats->ms_transfer = transfer;
        ctx.stats->ms_compute = wall.ms() - transfer;
        ctx.stats->add("ms_kernels", kernels);
    }
    return Status::Ok();
}

}  // namespace

}  // namespace approx::hashjoin
