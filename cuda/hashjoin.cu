// Hashed joins: the GPU engine (hybrid FKS + cuckoo, Alcantara et al.).
//
// Build: phase 1 counts keys per bucket with atomics (each key keeps its
// rank in its bucket), an exclusive scan (CUB) turns the counts into bucket
// offsets and a scatter writes the pairs bucket by bucket; a bucket over
// kBucketCapacity makes phase 1 start again with a new seed. Phase 2 runs one
// 512-thread block per bucket: every thread holds one key and the block
// builds a 3-sub-table cuckoo table of slot -> key index in shared memory
// (unplaced keys write their slot, evicted ones move to their next
// sub-table), restarting with new multipliers when a round limit passes,
// then writes the bucket's 576 slots coalesced.
// Join: CUB radix sort of the build side, run-length encoding into distinct
// keys with (offset, count), a table over the distinct keys, one probe pass
// counting matches, an exclusive scan and a load-balanced emit per output row.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>

#include "common.cuh"
#include "../src/core/hashjoin_build.hpp"
#include "../src/core/hashjoin_detail.hpp"

namespace approx::hashjoin {

using gpu::CubTemp;
using gpu::DeviceBuffer;
using gpu::PinnedBuffer;
using gpu::blocks_for;

namespace {

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
    int fail_attempts;  // test hook (0 after the first table build)
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

__global__ void __launch_bounds__(kBuildThreads) bucket_kernel(const Slot* __restrict__ pairs,
                                                               const uint32_t* __restrict__ offsets, uint64_t seed,
                                                               BuildParams p, Slot* __restrict__ slots,
                                                               BucketMeta* __restrict__ meta, BuildFlags* flags) {
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
        ok = !any_unplaced && s_fill_ok != 0 && attempt >= p.fail_attempts;
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
// kernels); the flags come back to the host after each phase.
class GpuBuild {
public:
    GpuBuild(const int64_t* d_keys, const int64_t* d_values, size_t n, const int64_t* host_keys, uint32_t buckets,
             const ExecContext& ctx, const BuildOptions& o, cudaStream_t stream, GpuTable& table, double& kernel_ms)
        : d_keys_(d_keys), d_values_(d_values), n_(n), host_keys_(host_keys), buckets_(buckets), ctx_(ctx), o_(o),
          stream_(stream), table_(table), kernel_ms_(kernel_ms) {}

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
            scatter_kernel<<<blocks_for(n_, kThreads), kThreads, 0, stream_>>>(
                d_keys_, d_values_, n_, seed, buckets_, offsets_.get(), rank_.get(), pairs_.get());
            APPROX_CUDA_LAUNCHED();
        }
        return Status::Ok();
    }

    bool find_duplicate(int64_t& key) const { return host_keys_ && hashjoin::find_duplicate(host_keys_, n_, key); }

    Status build_buckets(uint64_t seed, int fail_attempts, BucketsResult& r) {
        BuildParams params{o_.max_bucket_attempts, o_.max_cuckoo_rounds, fail_attempts};
        bucket_kernel<<<buckets_, kBuildThreads, 0, stream_>>>(pairs_.get(), offsets_.get(), seed, params,
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
// repeated key. Adds kernel time to kernel_ms.
Status build_on_device(const int64_t* d_keys, const int64_t* d_values, size_t n, const int64_t* host_keys,
                       const ExecContext& ctx, const BuildOptions& o, cudaStream_t stream, GpuTable& table,
                       TableInfo& info, double& kernel_ms) {
    APPROX_TRY(check_options(o));
    const uint32_t buckets = bucket_count(n, o);
    if (buckets > static_cast<uint32_t>(INT_MAX))
        return Status::Error(StatusCode::ProgramLimit, "too many buckets (%u) for one GPU launch", buckets);
    info = TableInfo();
    info.device = Device::Gpu;
    GpuBuild backend(d_keys, d_values, n, host_keys, buckets, ctx, o, stream, table, kernel_ms);
    APPROX_TRY(backend.init());
    return build_table(backend, n, buckets, ctx, o, info);
}

class GpuStorage final : public TableStorage {
public:
    GpuTable table;

    Status find(const int64_t* keys, size_t m, int64_t* values, uint8_t* found,
                const ExecContext& ctx) const override {
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

// ---- join kernels ----------------------------------------------------------------------

// Matches of each probe row: its run among the distinct build keys (or -1)
// and that run's length.
__global__ void probe_kernel(const int64_t* __restrict__ keys, size_t m, TableView tv,
                             const int64_t* __restrict__ run_off, int64_t* __restrict__ run,
                             int64_t* __restrict__ matches) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= m) return;
    int64_t r = -1;
    int64_t c = 0;
    if (lookup(tv.slots, tv.meta, tv.buckets, tv.seed, keys[i], r)) c = run_off[r + 1] - run_off[r];
    else r = -1;
    if (run) run[i] = r;
    matches[i] = c;
}

// Output rows [o0, o0 + len): each finds its probe row by binary search over
// out_off (exclusive scan of the matches, m + 1 entries), so one probe row
// with millions of matches is spread over many threads.
__global__ void emit_kernel(int64_t o0, size_t len, const int64_t* __restrict__ out_off, size_t m,
                            const int64_t* __restrict__ run, const int64_t* __restrict__ run_off,
                            const int64_t* __restrict__ sorted_values, const int64_t* __restrict__ probe_keys,
                            const int64_t* __restrict__ probe_values, int64_t* __restrict__ out_keys,
                            int64_t* __restrict__ out_build, int64_t* __restrict__ out_probe) {
    size_t x = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (x >= len) return;
    int64_t t = o0 + static_cast<int64_t>(x);
    size_t lo = 0, hi = m;  // out_off[lo] <= t < out_off[hi]
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (out_off[mid] <= t) lo = mid;
        else hi = mid;
    }
    int64_t j = t - out_off[lo];
    int64_t b = run_off[run[lo]] + j;
    out_keys[x] = probe_keys[lo];
    out_build[x] = sorted_values[b];
    out_probe[x] = probe_values ? probe_values[lo] : static_cast<int64_t>(lo);
}

Status upload(int64_t* dst, const int64_t* src, size_t n, cudaStream_t stream, double& transfer_ms) {
    if (n == 0) return Status::Ok();
    Lap lap;
    APPROX_TRY(lap.start(stream));
    APPROX_CUDA(cudaMemcpyAsync(dst, src, n * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
    return lap.stop(stream, transfer_ms);
}

Status gpu_join_impl(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                     JoinInfo& info, const JoinOptions& o, double& transfer, double& kernels, bool& emitting) {
    const size_t n = build.n, m = probe.n;
    if (n > static_cast<size_t>(INT_MAX))
        return Status::Error(StatusCode::ProgramLimit,
                             "the GPU join takes at most %d build rows (CUB run-length encoding), not %zu", INT_MAX, n);
    cudaStream_t stream;
    APPROX_TRY(gpu::begin(ctx, stream));
    CubTemp tmp;
    Lap lap;

    // Build side: sort by key, distinct keys with (offset, count).
    DeviceBuffer<int64_t> keys_in, vals_in, sorted_keys, sorted_vals, run_len, num_runs;
    APPROX_TRY(keys_in.alloc(ctx, n));
    APPROX_TRY(vals_in.alloc(ctx, n + 1));  // + 1: the run lengths get a trailing 0 for the scan
    APPROX_TRY(sorted_keys.alloc(ctx, n));
    APPROX_TRY(sorted_vals.alloc(ctx, n));
    APPROX_TRY(num_runs.alloc(ctx, 1));
    APPROX_TRY(upload(keys_in.get(), build.keys, n, stream, transfer));
    if (build.values) {
        APPROX_TRY(upload(vals_in.get(), build.values, n, stream, transfer));
    }
    APPROX_TRY(lap.start(stream));
    if (!build.values) {
        APPROX_TRY(gpu::sequence(vals_in.get(), static_cast<int64_t>(n), int64_t(0), stream));
    }
    const int n_items = static_cast<int>(n);
    APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(p, bytes, keys_in.get(), sorted_keys.get(), vals_in.get(),
                                               sorted_vals.get(), n_items, 0, 64, stream);
    }));
    // keys_in / vals_in are free again: distinct keys and run lengths go there.
    int64_t* unique_keys = keys_in.get();
    int64_t* run_lengths = vals_in.get();
    APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
        return cub::DeviceRunLengthEncode::Encode(p, bytes, sorted_keys.get(), unique_keys, run_lengths,
                                                  num_runs.get(), n_items, stream);
    }));
    int64_t distinct = 0;
    APPROX_CUDA(cudaMemcpyAsync(&distinct, num_runs.get(), sizeof distinct, cudaMemcpyDeviceToHost, stream));
    APPROX_TRY(lap.stop(stream, kernels));
    info.distinct_keys = distinct;
    sorted_keys.reset();
    if (ctx.cancelled()) return cancelled_status();

    DeviceBuffer<int64_t> run_off;
    APPROX_TRY(run_off.alloc(ctx, static_cast<size_t>(distinct) + 1));
    APPROX_TRY(lap.start(stream));
    APPROX_CUDA(cudaMemsetAsync(run_lengths + distinct, 0, sizeof(int64_t), stream));
    APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
        return cub::DeviceScan::ExclusiveSum(p, bytes, run_lengths, run_off.get(), distinct + 1, stream);
    }));
    APPROX_TRY(lap.stop(stream, kernels));

    GpuTable table;
    APPROX_TRY(build_on_device(unique_keys, nullptr, static_cast<size_t>(distinct), nullptr, ctx, o.table, stream,
                               table, info.table, kernels));
    keys_in.reset();
    vals_in.reset();
    if (ctx.cancelled()) return cancelled_status();

    // Probe side: matches per row, then where each row's output starts.
    DeviceBuffer<int64_t> probe_keys, probe_vals, run, out_off;
    APPROX_TRY(probe_keys.alloc(ctx, m));
    APPROX_TRY(out_off.alloc(ctx, m + 1));
    if (sink) {
        APPROX_TRY(run.alloc(ctx, m));
        if (probe.values) APPROX_TRY(probe_vals.alloc(ctx, m));
    }
    APPROX_TRY(upload(probe_keys.get(), probe.keys, m, stream, transfer));
    if (sink && probe.values) APPROX_TRY(upload(probe_vals.get(), probe.values, m, stream, transfer));
    DeviceBuffer<int64_t> total;
    APPROX_TRY(total.alloc(ctx, 1));
    APPROX_TRY(lap.start(stream));
    probe_kernel<<<blocks_for(m, kThreads), kThreads, 0, stream>>>(probe_keys.get(), m, table.view(), run_off.get(),
                                                                  sink ? run.get() : nullptr, out_off.get());
    APPROX_CUDA_LAUNCHED();
    int64_t matches = 0;
    if (!sink) {
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::Sum(p, bytes, out_off.get(), total.get(), m, stream);
        }));
        APPROX_CUDA(cudaMemcpyAsync(&matches, total.get(), sizeof matches, cudaMemcpyDeviceToHost, stream));
    } else {
        APPROX_CUDA(cudaMemsetAsync(out_off.get() + m, 0, sizeof(int64_t), stream));
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceScan::ExclusiveSum(p, bytes, out_off.get(), m + 1, stream);
        }));
        APPROX_CUDA(cudaMemcpyAsync(&matches, out_off.get() + m, sizeof matches, cudaMemcpyDeviceToHost, stream));
    }
    APPROX_TRY(lap.stop(stream, kernels));
    info.matches = matches;
    if (!sink || matches == 0) return Status::Ok();

    // Emit in chunks; everything is allocated before the first row goes out
    // (a later GPU allocation failure must not rerun the join on the CPU).
    const size_t cap = static_cast<size_t>(std::min<int64_t>(matches, static_cast<int64_t>(o.chunk_rows)));
    DeviceBuffer<int64_t> out_keys, out_build, out_probe;
    PinnedBuffer<int64_t> h_keys, h_build, h_probe;
    APPROX_TRY(out_keys.alloc(ctx, cap));
    APPROX_TRY(out_build.alloc(ctx, cap));
    APPROX_TRY(out_probe.alloc(ctx, cap));
    APPROX_TRY(h_keys.alloc(cap));
    APPROX_TRY(h_build.alloc(cap));
    APPROX_TRY(h_probe.alloc(cap));
    emitting = true;
    for (int64_t o0 = 0; o0 < matches; o0 += static_cast<int64_t>(cap)) {
        if (ctx.cancelled()) return cancelled_status();
        size_t len = static_cast<size_t>(std::min<int64_t>(matches - o0, static_cast<int64_t>(cap)));
        APPROX_TRY(lap.start(stream));
        emit_kernel<<<blocks_for(len, kThreads), kThreads, 0, stream>>>(
            o0, len, out_off.get(), m, run.get(), run_off.get(), sorted_vals.get(), probe_keys.get(),
            probe.values ? probe_vals.get() : nullptr, out_keys.get(), out_build.get(), out_probe.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_TRY(lap.stop(stream, kernels));
        APPROX_TRY(lap.start(stream));
        APPROX_CUDA(cudaMemcpyAsync(h_keys.get(), out_keys.get(), len * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaMemcpyAsync(h_build.get(), out_build.get(), len * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaMemcpyAsync(h_probe.get(), out_probe.get(), len * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
        APPROX_TRY(lap.stop(stream, transfer));
        APPROX_TRY(emit_chunk(sink, user, h_keys.get(), h_build.get(), h_probe.get(), len, info));
    }
    return Status::Ok();
}

}  // namespace

Status gpu_build_table(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                       const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info) {
    Stopwatch wall;
    cudaStream_t stream;
    APPROX_TRY(gpu::begin(ctx, stream));
    double transfer = 0, kernels = 0;
    DeviceBuffer<int64_t> d_keys, d_values;
    APPROX_TRY(d_keys.alloc(ctx, n));
    if (values) APPROX_TRY(d_values.alloc(ctx, n));
    APPROX_TRY(upload(d_keys.get(), keys, n, stream, transfer));
    if (values) APPROX_TRY(upload(d_values.get(), values, n, stream, transfer));
    std::unique_ptr<GpuStorage> st(new GpuStorage);
    APPROX_TRY(build_on_device(d_keys.get(), values ? d_values.get() : nullptr, n, keys, ctx, o, stream, st->table,
                               info, kernels));
    out = std::move(st);
    if (ctx.stats) {
        ctx.stats->ms_transfer = transfer;
        ctx.stats->ms_compute = wall.ms() - transfer;
        ctx.stats->add("ms_kernels", kernels);
    }
    return Status::Ok();
}

Status gpu_join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                JoinInfo& info, const JoinOptions& o) {
    Stopwatch wall;
    double transfer = 0, kernels = 0;
    bool emitting = false;
    Status st = gpu_join_impl(build, probe, sink, user, ctx, info, o, transfer, kernels, emitting);
    if (st.code == StatusCode::GpuOutOfMemory && emitting) st.code = StatusCode::GpuError;  // rows already went out
    if (ctx.stats) {
        ctx.stats->ms_transfer = transfer;
        ctx.stats->ms_compute = wall.ms() - transfer - info.ms_emit;
        ctx.stats->add("ms_kernels", kernels);
    }
    return st;
}

}  // namespace approx::hashjoin
