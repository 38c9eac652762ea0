// GPU engine for top-k: exact radix selection on CUB primitives and the NRA
// engine's candidate bookkeeping (see src/core/topk.hpp). The selection's
// control logic (fast path with a sampled threshold, histogram levels over
// 12-bit digits of the 128-bit key (score_key, id_key), materialisation and
// final sort) is src/core/topk_radix.hpp; this file supplies its passes:
// shared-memory histograms with warp-aggregated atomics, warp-aggregated
// appends, a one-block sorted sample, and cub::DeviceRadixSort on the 128-bit
// key (a decomposer) for the final candidate sets.
#include <cub/cub.cuh>
#include <cuda/std/tuple>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/topk.hpp"
#include "core/topk_internal.hpp"
#include "core/topk_radix.hpp"
#include "common.cuh"
#include "topk_device.cuh"

namespace approx::topk {
namespace detail {
namespace {

using gpu::CubTemp;
using gpu::DeviceBuffer;
using gpu::PinnedBuffer;

using radix::kBins;
using radix::kSamples;
using radix::PassParams;
using radix::SrcDesc;
using radix::Tail;

constexpr int kBlock = 256;
constexpr int kItems = 4;
constexpr int kSampleThreads = 512;
constexpr int kSampleItems = kSamples / kSampleThreads;
static_assert(kSampleThreads * kSampleItems == kSamples, "sample layout");

struct Key128 {
    uint64_t hi;  // score_key
    uint64_t lo;  // id_key
};

struct Key128Decomposer {
    __host__ __device__ ::cuda::std::tuple<uint64_t&, uint64_t&> operator()(Key128& k) const { return {k.hi, k.lo}; }
};

// The pairs as the engine API receives them (device copies).
struct FullSrc {
    const double* scores;
    const int64_t* ids;
    Order order;
    __device__ __forceinline__ uint64_t hi(size_t i) const { return score_key(scores[i], order); }
    __device__ __forceinline__ uint64_t lo(size_t i) const { return id_key(ids[i]); }
    __device__ __forceinline__ uint64_t idx(size_t i) const { return i; }
};

// A materialised candidate set.
struct BufSrc {
    const Key128* keys;
    const uint64_t* idxs;
    __device__ __forceinline__ uint64_t hi(size_t i) const { return keys[i].hi; }
    __device__ __forceinline__ uint64_t lo(size_t i) const { return keys[i].lo; }
    __device__ __forceinline__ uint64_t idx(size_t i) const { return idxs[i]; }
};

// Appends the lanes' pairs that `want` to out[count..] (gpu::warp_append: one
// atomic per warp); slots at or past cap are counted but not written. Every
// lane of the warp must call it.
__device__ __forceinline__ void warp_append(bool want, unsigned long long* count, unsigned long long cap, Key128* keys,
                                            uint64_t* idxs, uint64_t hi, uint64_t lo, uint64_t idx) {
    unsigned long long slot = gpu::warp_append(want, count);
    if (want && slot < cap) {
        keys[slot] = Key128{hi, lo};
        idxs[slot] = idx;
    }
}

struct PassOut {
    unsigned long long* hist;  // kBins
    Key128* sure_keys;
    uint64_t* sure_idx;
    unsigned long long* sure_count;
    unsigned long long sure_cap;
    Key128* mat_keys;
    uint64_t* mat_idx;
    unsigned long long* mat_count;
};

// One pass of the exact path (radix::classify decides per element).
template <class Src>
__global__ void __launch_bounds__(kBlock) pass_kernel(Src src, size_t n, PassParams pp, PassOut out) {
    __shared__ unsigned int hist[kBins];
    const bool do_hist = pp.hist_w > 0;
    if (do_hist)
        for (int b = threadIdx.x; b < kBins; b += kBlock) hist[b] = 0;
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const size_t tile = size_t(kBlock) * kItems;
    for (size_t base = size_t(blockIdx.x) * tile; base < n; base += size_t(gridDim.x) * tile) {
        uint64_t h[kItems];
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
            size_t i = base + size_t(it) * kBlock + threadIdx.x;
            h[it] = i < n ? src.hi(i) : 0;
        }
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
            const size_t i = base + size_t(it) * kBlock + threadIdx.x;
            uint64_t lo = 0;
            bool have_lo = false;
            uint32_t d = 0;
            int state = radix::kOut;
            if (i < n)
                state = radix::classify(
                    h[it], [&] { return src.lo(i); }, lo, have_lo, pp, d);
            if (do_hist) {
                const bool hv = state == radix::kIn;
                unsigned mask = __ballot_sync(0xffffffffu, hv);
                if (hv) {
                    unsigned peers = __match_any_sync(mask, d);
                    if (lane == __ffs(peers) - 1) atomicAdd(&hist[d], static_cast<unsigned>(__popc(peers)));
                }
            }
            const bool to_sure = state == radix::kSure;
            const bool to_mat = state == radix::kIn && pp.mat_cap > 0;
            uint64_t ix = 0;
            if (to_sure || to_mat) {
                if (!have_lo) lo = src.lo(i);
                ix = src.idx(i);
            }
            warp_append(to_sure, out.sure_count, out.sure_cap, out.sure_keys, out.sure_idx, h[it], lo, ix);
            if (pp.mat_cap > 0)
                warp_append(to_mat, out.mat_count, pp.mat_cap, out.mat_keys, out.mat_idx, h[it], lo, ix);
        }
    }
    if (do_hist) {
        __syncthreads();
        for (int b = threadIdx.x; b < kBins; b += kBlock)
            if (hist[b]) atomicAdd(&out.hist[b], static_cast<unsigned long long>(hist[b]));
    }
}

// The fast path's sample: 4096 evenly spaced score keys, sorted in one block;
// the r-th smallest becomes the threshold.
using SampleSort = cub::BlockRadixSort<uint64_t, kSampleThreads, kSampleItems>;
static_assert(sizeof(SampleSort::TempStorage) <= 48 * 1024, "sample sort needs too much shared memory");

__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(const double* scores, size_t n, Order order, int r, uint64_t* t_out) {
    __shared__ typename SampleSort::TempStorage temp;
    uint64_t keys[kSampleItems];
#pragma unroll
    for (int it = 0; it < kSampleItems; ++it) {
        size_t j = size_t(threadIdx.x) * kSampleItems + it;
        size_t pos = (j * n) / kSamples;  // j * n < 2^64 for any n below 2^52
        keys[it] = score_key(scores[pos], order);
    }
    SampleSort(temp).Sort(keys);
    int rank = r - 1;  // blocked arrangement: thread t holds ranks t*items .. t*items+items-1
    if (static_cast<int>(threadIdx.x) == rank / kSampleItems) {
#pragma unroll
        for (int it = 0; it < kSampleItems; ++it)
            if (it == rank % kSampleItems) *t_out = keys[it];
    }
}

// The fast path's single streaming pass: every pair with score_key <= t.
__global__ void __launch_bounds__(kBlock)
    fast_pass_kernel(const double* scores, const int64_t* ids, size_t n, Order order, const uint64_t* t_in,
                     unsigned long long cap, Key128* keys, uint64_t* idxs, unsigned long long* count) {
    const uint64_t t = *t_in;
    const size_t tile = size_t(kBlock) * kItems;
    for (size_t base = size_t(blockIdx.x) * tile; base < n; base += size_t(gridDim.x) * tile) {
        uint64_t h[kItems];
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
            size_t i = base + size_t(it) * kBlock + threadIdx.x;
            h[it] = i < n ? score_key(scores[i], order) : ~uint64_t(0);
        }
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
            size_t i = base + size_t(it) * kBlock + threadIdx.x;
            bool want = i < n && h[it] <= t;
            uint64_t lo = want ? id_key(ids[i]) : 0;
            warp_append(want, count, cap, keys, idxs, h[it], lo, i);
        }
    }
}

__global__ void gather_kernel(const uint64_t* idx, size_t k, const int64_t* ids, const double* scores, int64_t* out_ids,
                              double* out_scores) {
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= k) return;
    uint64_t j = idx[i];
    if (out_ids) out_ids[i] = ids[j];
    if (out_scores) out_scores[i] = scores[j];
}

using gpu::ensure;

// Grid of the radix passes: up to 8 blocks per SM (each block loops over its share).
unsigned grid_for(size_t n, size_t per_block) {
    return gpu::grid_for(n, static_cast<int64_t>(per_block), int64_t(gpu::sm_count()) * 8);
}

}  // namespace

// Scratch space of the device selection (topk_device.cuh), kept between calls
// (NRA rounds, benchmark repetitions) so that steady-state calls allocate nothing.
struct SelectWork {
    DeviceBuffer<unsigned long long> counters;  // [0] sure, [1] materialised, [2] fast-path candidates
    DeviceBuffer<unsigned long long> hist;
    DeviceBuffer<uint64_t> threshold;
    DeviceBuffer<Key128> sure_keys, sort_keys, mat_keys[2];
    DeviceBuffer<uint64_t> sure_idx, sort_idx, mat_idx[2];
    PinnedBuffer<unsigned long long> host;  // kBins + 4
    CubTemp temp;

    Status prepare(const ExecContext& ctx) {
        APPROX_TRY(ensure(counters, ctx, 4));
        APPROX_TRY(ensure(hist, ctx, kBins));
        APPROX_TRY(ensure(threshold, ctx, 1));
        return ensure(host, kBins + 4);
    }
};

namespace {

// The passes of radix::select_k on the GPU (see topk_radix.hpp for the contract).
class GpuSelect {
public:
    GpuSelect(FullSrc full, const ExecContext& ctx, cudaStream_t s, SelectWork& w, uint64_t* out)
        : full_(full), ctx_(ctx), s_(s), w_(w), out_(out) {}

    Status prepare() {
        APPROX_TRY(w_.prepare(ctx_));
        APPROX_CUDA(cudaMemsetAsync(w_.counters.get(), 0, 4 * sizeof(unsigned long long), s_));
        return Status::Ok();
    }

    bool cancelled() { return ctx_.cancelled(); }

    Status reserve_sure(size_t k) {
        APPROX_TRY(ensure(w_.sure_keys, ctx_, k));
        APPROX_TRY(ensure(w_.sure_idx, ctx_, k));
        APPROX_CUDA(cudaMemsetAsync(w_.counters.get(), 0, sizeof(unsigned long long), s_));
        return Status::Ok();
    }

    Status reserve_buf(int buf, size_t cap) {
        APPROX_TRY(ensure(w_.mat_keys[buf], ctx_, cap));
        return ensure(w_.mat_idx[buf], ctx_, cap);
    }

    Status zero_hist() {
        APPROX_CUDA(cudaMemsetAsync(w_.hist.get(), 0, kBins * sizeof(unsigned long long), s_));
        return Status::Ok();
    }

    Status pass(const SrcDesc& d, const PassParams& pp, int mat_buf) {
        if (d.n == 0) return Status::Ok();
        PassOut o;
        o.hist = w_.hist.get();
        o.sure_keys = w_.sure_keys.get();
        o.sure_idx = w_.sure_idx.get();
        o.sure_count = w_.counters.get();
        o.sure_cap = w_.sure_keys.size();
        o.mat_keys = w_.mat_keys[mat_buf].get();
        o.mat_idx = w_.mat_idx[mat_buf].get();
        o.mat_count = w_.counters.get() + 1;
        if (pp.mat_cap > 0) {
            if (w_.mat_keys[mat_buf].size() < pp.mat_cap || w_.mat_idx[mat_buf].size() < pp.mat_cap)
                return Status::Error(StatusCode::Internal, "top-k selection: buffer %d too small", mat_buf);
            APPROX_CUDA(cudaMemsetAsync(o.mat_count, 0, sizeof(unsigned long long), s_));
        }
        unsigned grid = grid_for(d.n, size_t(kBlock) * kItems);
        if (d.full) {
            pass_kernel<FullSrc><<<grid, kBlock, 0, s_>>>(full_, d.n, pp, o);
        } else {
            BufSrc b{w_.mat_keys[d.buf].get(), w_.mat_idx[d.buf].get()};
            pass_kernel<BufSrc><<<grid, kBlock, 0, s_>>>(b, d.n, pp, o);
        }
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }

    Status read_hist(const unsigned long long*& h) {
        APPROX_CUDA(cudaMemcpyAsync(w_.host.get(), w_.hist.get(), kBins * sizeof(unsigned long long),
                                    cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        h = w_.host.get();
        return Status::Ok();
    }

    Status sort_buf(int buf, size_t n) { return sort(w_.mat_keys[buf].get(), w_.mat_idx[buf].get(), n); }

    Status sample_threshold(size_t n, size_t r) {
        sample_kernel<<<1, kSampleThreads, 0, s_>>>(full_.scores, n, full_.order, static_cast<int>(r),
                                                    w_.threshold.get());
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }

    Status fast_filter(size_t n, size_t cap, unsigned long long& passed) {
        APPROX_CUDA(cudaMemsetAsync(w_.counters.get() + 2, 0, sizeof(unsigned long long), s_));
        fast_pass_kernel<<<grid_for(n, size_t(kBlock) * kItems), kBlock, 0, s_>>>(
            full_.scores, full_.ids, n, full_.order, w_.threshold.get(), cap, w_.mat_keys[0].get(), w_.mat_idx[0].get(),
            w_.counters.get() + 2);
        APPROX_CUDA_LAUNCHED();
        return read_counter(2, passed);
    }

    // out = sort(sure elements) ++ tail[0..tail_n).
    Status finish(size_t c_sure, Tail tail, size_t tail_n) {
        if (tail_n > 0) {
            const uint64_t* t = tail == Tail::Sorted ? w_.sort_idx.get()
                                : tail == Tail::Buf0 ? w_.mat_idx[0].get()
                                                     : w_.mat_idx[1].get();
            if (tail == Tail::None) return Status::Error(StatusCode::Internal, "top-k selection: no tail");
            APPROX_CUDA(cudaMemcpyAsync(out_ + c_sure, t, tail_n * sizeof(uint64_t), cudaMemcpyDeviceToDevice, s_));
        }
        unsigned long long written = 0;
        APPROX_TRY(read_counter(0, written));
        if (written != c_sure)
            return Status::Error(StatusCode::Internal, "top-k selection wrote %llu sure pairs, expected %zu", written,
                                 c_sure);
        if (c_sure > 0) {
            APPROX_TRY(sort(w_.sure_keys.get(), w_.sure_idx.get(), c_sure));
            APPROX_CUDA(cudaMemcpyAsync(out_, w_.sort_idx.get(), c_sure * sizeof(uint64_t), cudaMemcpyDeviceToDevice,
                                        s_));
        }
        return Status::Ok();
    }

private:
    Status read_counter(int i, unsigned long long& v) {
        APPROX_CUDA(cudaMemcpyAsync(w_.host.get() + kBins + i, w_.counters.get() + i, sizeof(unsigned long long),
                                    cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        v = w_.host.get()[kBins + i];
        return Status::Ok();
    }

    Status sort(const Key128* keys, const uint64_t* idx, size_t n) {
        if (n == 0) return Status::Ok();
        APPROX_TRY(ensure(w_.sort_keys, ctx_, n));
        APPROX_TRY(ensure(w_.sort_idx, ctx_, n));
        Key128* ko = w_.sort_keys.get();
        uint64_t* io = w_.sort_idx.get();
        cudaStream_t s = s_;
        return w_.temp.run(ctx_, [&](void* p, size_t& bytes) {
            return cub::DeviceRadixSort::SortPairs(p, bytes, keys, ko, idx, io, n, Key128Decomposer{}, s);
        });
    }

    FullSrc full_;
    const ExecContext& ctx_;
    cudaStream_t s_;
    SelectWork& w_;
    uint64_t* out_;
};

}  // namespace

SelectWork* new_select_work() { return new SelectWork(); }
void SelectWorkDeleter::operator()(SelectWork* w) const noexcept { delete w; }

// The k best (0 < k <= n) of n device-resident pairs: their positions, best first, into d_out (room for k).
Status device_select(const double* d_scores, const int64_t* d_ids, size_t n, size_t k, Order order,
                     const ExecContext& ctx, cudaStream_t s, SelectWork& w, uint64_t* d_out) {
    if (k == 0 || n == 0 || k > n) return Status::Error(StatusCode::Internal, "device_select needs 0 < k <= n");
    GpuSelect backend(FullSrc{d_scores, d_ids, order}, ctx, s, w, d_out);
    APPROX_TRY(backend.prepare());
    return radix::select_k(backend, n, k);
}

Status gather(const uint64_t* d_idx, size_t k, const int64_t* d_ids, const double* d_scores, int64_t* d_out_ids,
              double* d_out_scores, cudaStream_t s) {
    if (k == 0) return Status::Ok();
    gather_kernel<<<gpu::blocks_for(k, 256), 256, 0, s>>>(d_idx, k, d_ids, d_scores, d_out_ids, d_out_scores);
    APPROX_CUDA_LAUNCHED();
    return Status::Ok();
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Copies the n (id, score) inputs to the device on stream s (allocating
// d_ids, d_scores) and waits; ms = the copy's time.
Status upload_inputs(const ExecContext& ctx, cudaStream_t s, const int64_t* ids, const double* scores, size_t n,
                     DeviceBuffer<int64_t>& d_ids, DeviceBuffer<double>& d_scores, double& ms) {
    APPROX_TRY(d_scores.alloc(ctx, n));
    APPROX_TRY(d_ids.alloc(ctx, n));
    auto t0 = std::chrono::steady_clock::now();
    // From the reader's staged device copies when it uploaded them while reading.
    APPROX_CUDA(gpu::copy_input(ctx, d_scores.get(), scores, n, s));
    APPROX_CUDA(gpu::copy_input(ctx, d_ids.get(), ids, n, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    ms = ms_since(t0);
    return Status::Ok();
}

Status select_gpu(const int64_t* ids, const double* scores, size_t n, size_t k, Order order, const ExecContext& ctx,
                  int64_t* out_ids, double* out_scores, size_t& out_n) {
    out_n = 0;
    size_t kk = std::min(k, n);
    if (kk == 0) return Status::Ok();
    cudaStream_t s;
    APPROX_TRY(gpu::begin(ctx, s));
    DeviceBuffer<double> d_scores;
    DeviceBuffer<int64_t> d_ids;
    double ms_upload;
    APPROX_TRY(upload_inputs(ctx, s, ids, scores, n, d_ids, d_scores, ms_upload));
    gpu::add_transfer_ms(ctx, ms_upload);
    if (ctx.cancelled()) return cancelled_status();

    SelectWork w;
    DeviceBuffer<uint64_t> d_idx;
    DeviceBuffer<int64_t> d_out_ids;
    DeviceBuffer<double> d_out_scores;
    APPROX_TRY(d_idx.alloc(ctx, kk));
    APPROX_TRY(d_out_ids.alloc(ctx, kk));
    APPROX_TRY(d_out_scores.alloc(ctx, kk));
    APPROX_TRY(device_select(d_scores.get(), d_ids.get(), n, kk, order, ctx, s, w, d_idx.get()));
    APPROX_TRY(gather(d_idx.get(), kk, d_ids.get(), d_scores.get(), d_out_ids.get(), d_out_scores.get(), s));
    auto t1 = std::chrono::steady_clock::now();
    APPROX_CUDA(cudaMemcpyAsync(out_ids, d_out_ids.get(), kk * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaMemcpyAsync(out_scores, d_out_scores.get(), kk * sizeof(double), cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    gpu::add_transfer_ms(ctx, ms_since(t1));
    out_n = kk;
    return Status::Ok();
}

// ---- NRA: device candidate bookkeeping ---------------------------------------------------
//
// Candidates live in device arrays (id, seen mask, the m scores list-major,
// the lower bound W); a hash table of 32-bit slots maps ids to candidates.
// A round: find-or-claim every entry's id (CAS on an empty slot; the slot
// holds the claiming entry until kernel 2 gives it a candidate index),
// allocate the claimed candidates, apply the scores, recompute W for every
// candidate while counting W > T. Only when at least k candidates have
// W > T (i.e. W_k > T) is the k-th found (device selection on (W, id)) and
// the upper bounds of the others checked.

namespace {

constexpr uint32_t kEmptySlot = 0xffffffffu;
constexpr uint32_t kClaimBit = 0x80000000u;
constexpr uint8_t kNoList = 0xff;
enum : uint8_t { kSkip = 0, kFound = 1, kOwner = 2, kJoin = 3 };

__device__ __forceinline__ uint64_t hash_id(int64_t id) {
    uint64_t x = static_cast<uint64_t>(id) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

struct NraBounds {
    int m;
    uint32_t ex_mask;
    uint32_t full_mask;
    double t;
    double minv[kMaxNraLists];
    double bnd[kMaxNraLists];
};

// counters: [0] candidates, [1] W > T, [2] blocked, [3] duplicate entry, [4] unlisted object already known
__global__ void nra_find_kernel(const int64_t* e_id, size_t e_n, bool insert, uint32_t* slot, size_t hmask,
                                const int64_t* cid, uint8_t* e_kind, uint32_t* e_res) {
    size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= e_n) return;
    const int64_t x = e_id[e];
    size_t h = hash_id(x) & hmask;
    for (;;) {
        uint32_t s = *reinterpret_cast<volatile uint32_t*>(&slot[h]);
        if (s == kEmptySlot) {
            if (!insert) {
                e_kind[e] = kSkip;
                return;
            }
            uint32_t old = atomicCAS(&slot[h], kEmptySlot, kClaimBit | static_cast<uint32_t>(e));
            if (old == kEmptySlot) {
                e_kind[e] = kOwner;
                e_res[e] = static_cast<uint32_t>(h);
                return;
            }
            s = old;
        }
        if (s & kClaimBit) {
            if (e_id[s & ~kClaimBit] == x) {
                e_kind[e] = kJoin;
                e_res[e] = static_cast<uint32_t>(h);
                return;
            }
        } else if (cid[s] == x) {
            e_kind[e] = kFound;
            e_res[e] = s;
            return;
        }
        h = (h + 1) & hmask;
    }
}

__global__ void nra_alloc_kernel(const int64_t* e_id, size_t e_n, uint8_t* e_kind, uint32_t* e_res, uint32_t* slot,
                                 int64_t* cid, uint32_t* seen, unsigned long long* counters) {
    size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= e_n || e_kind[e] != kOwner) return;
    uint32_t c = static_cast<uint32_t>(atomicAdd(&counters[0], 1ULL));
    cid[c] = e_id[e];
    seen[c] = 0;
    slot[e_res[e]] = c;
    e_res[e] = c;
}

__global__ void nra_apply_kernel(const double* e_sc, const uint8_t* e_list, size_t e_n, const uint8_t* e_kind,
                                 const uint32_t* e_res, const uint32_t* slot, double* sc, size_t cap, uint32_t* seen,
                                 unsigned long long* counters) {
    size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= e_n) return;
    uint8_t kind = e_kind[e];
    if (kind == kSkip) return;
    uint8_t j = e_list[e];
    if (j == kNoList) {  // an unlisted object must be new and given once
        if (kind != kOwner) atomicOr(&counters[4], 1ULL);
        return;
    }
    uint32_t c = kind == kJoin ? slot[e_res[e]] : e_res[e];
    sc[size_t(j) * cap + c] = e_sc[e];
    uint32_t old = atomicOr(&seen[c], 1u << j);
    if (old & (1u << j)) atomicOr(&counters[3], 1ULL);
}

__global__ void nra_rehash_kernel(const int64_t* cid, size_t n, uint32_t* slot, size_t hmask) {
    size_t c = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= n) return;
    for (size_t h = hash_id(cid[c]) & hmask;; h = (h + 1) & hmask)
        if (atomicCAS(&slot[h], kEmptySlot, static_cast<uint32_t>(c)) == kEmptySlot) return;
}

__global__ void __launch_bounds__(kBlock)
    nra_bounds_kernel(const uint32_t* seen, const double* sc, size_t cap, const unsigned long long* counters,
                      NraBounds b, double* w, unsigned long long* gt) {
    using BR = cub::BlockReduce<unsigned, kBlock>;
    __shared__ typename BR::TempStorage tmp;
    const size_t n = counters[0];
    unsigned local = 0;
    for (size_t c = size_t(blockIdx.x) * kBlock + threadIdx.x; c < n; c += size_t(gridDim.x) * kBlock) {
        uint32_t sn = seen[c];
        double s = (sn & 1u) ? sc[c] : b.minv[0];
        for (int j = 1; j < b.m; ++j) s += ((sn >> j) & 1u) ? sc[size_t(j) * cap + c] : b.minv[j];
        w[c] = s;
        if (s > b.t) ++local;
    }
    unsigned total = BR(tmp).Sum(local);
    if (threadIdx.x == 0 && total) atomicAdd(gt, static_cast<unsigned long long>(total));
}

__global__ void __launch_bounds__(kBlock)
    nra_check_kernel(const int64_t* cid, const uint32_t* seen, const double* sc, const double* w, size_t cap, size_t n,
                     NraBounds b, double wk, int64_t idk, unsigned long long* blocked) {
    for (size_t c = size_t(blockIdx.x) * kBlock + threadIdx.x; c < n; c += size_t(gridDim.x) * kBlock) {
        double wc = w[c];
        int64_t id = cid[c];
        if (wc > wk || (wc == wk && id <= idk)) continue;  // one of the k best by (W DESC, id ASC)
        uint32_t sn = seen[c];
        double ub = (sn & 1u) ? sc[c] : b.bnd[0];
        for (int j = 1; j < b.m; ++j) ub += ((sn >> j) & 1u) ? sc[size_t(j) * cap + c] : b.bnd[j];
        if (ub < wk) continue;
        bool exact = ((sn | b.ex_mask) == b.full_mask);
        if (ub == wk && exact && id > idk) continue;
        atomicOr(blocked, 1ULL);
    }
}

}  // namespace

struct NraGpu {
    int m = 0;
    size_t k = 0;
    cudaStream_t s = nullptr;
    size_t cap = 0;    // candidate capacity
    size_t count = 0;  // candidates (host copy, updated after every round)
    DeviceBuffer<int64_t> cid;
    DeviceBuffer<uint32_t> seen;
    DeviceBuffer<double> sc;  // list-major: sc[j * cap + c]
    DeviceBuffer<double> w;
    size_t hcap = 0;
    DeviceBuffer<uint32_t> slot;
    DeviceBuffer<int64_t> e_id;
    DeviceBuffer<double> e_sc;
    DeviceBuffer<uint8_t> e_list, e_kind;
    DeviceBuffer<uint32_t> e_res;
    PinnedBuffer<int64_t> h_id;
    PinnedBuffer<double> h_sc;
    PinnedBuffer<uint8_t> h_list;
    DeviceBuffer<unsigned long long> counters;
    PinnedBuffer<unsigned long long> h_counters;
    SelectWork sel;
    DeviceBuffer<uint64_t> sel_idx;
    DeviceBuffer<int64_t> out_ids;
    DeviceBuffer<double> out_w;
};

namespace {

NraBounds bounds_of(const NraShared& sh) {
    NraBounds b{};
    b.m = sh.m;
    b.ex_mask = sh.exhausted_mask();
    b.full_mask = sh.full_mask();
    b.t = sh.threshold();
    for (int j = 0; j < sh.m; ++j) {
        b.minv[j] = sh.min[j];
        b.bnd[j] = sh.bound(j);
    }
    return b;
}

// Room for `need` candidates and a hash table at most half full; done before
// any state changes, so an allocation failure leaves the state intact.
Status nra_reserve(NraGpu* g, const ExecContext& ctx, size_t need) {
    if (need > 0x7fffffffULL) return Status::Error(StatusCode::ProgramLimit, "more than 2^31 NRA candidates");
    if (need > g->cap) {
        size_t cap = std::max({need, g->cap * 2, size_t(4096)});
        DeviceBuffer<int64_t> cid;
        DeviceBuffer<uint32_t> seen;
        DeviceBuffer<double> sc, w;
        APPROX_TRY(cid.alloc(ctx, cap));
        APPROX_TRY(seen.alloc(ctx, cap));
        APPROX_TRY(sc.alloc(ctx, cap * g->m));
        APPROX_TRY(w.alloc(ctx, cap));
        if (g->count > 0) {
            APPROX_CUDA(cudaMemcpyAsync(cid.get(), g->cid.get(), g->count * sizeof(int64_t), cudaMemcpyDeviceToDevice,
                                        g->s));
            APPROX_CUDA(cudaMemcpyAsync(seen.get(), g->seen.get(), g->count * sizeof(uint32_t),
                                        cudaMemcpyDeviceToDevice, g->s));
            APPROX_CUDA(cudaMemcpy2DAsync(sc.get(), cap * sizeof(double), g->sc.get(), g->cap * sizeof(double),
                                          g->count * sizeof(double), g->m, cudaMemcpyDeviceToDevice, g->s));
        }
        APPROX_CUDA(cudaStreamSynchronize(g->s));
        g->cid = std::move(cid);
        g->seen = std::move(seen);
        g->sc = std::move(sc);
        g->w = std::move(w);
        g->cap = cap;
    }
    if (need * 2 > g->hcap) {
        size_t hcap = 1024;
        while (hcap < need * 4) hcap *= 2;
        DeviceBuffer<uint32_t> slot;
        APPROX_TRY(slot.alloc(ctx, hcap));
        APPROX_CUDA(cudaMemsetAsync(slot.get(), 0xff, hcap * sizeof(uint32_t), g->s));
        if (g->count > 0) {
            nra_rehash_kernel<<<gpu::blocks_for(g->count, 256), 256, 0, g->s>>>(g->cid.get(), g->count, slot.get(),
                                                                                hcap - 1);
            APPROX_CUDA_LAUNCHED();
        }
        APPROX_CUDA(cudaStreamSynchronize(g->s));
        g->slot = std::move(slot);
        g->hcap = hcap;
    }
    return Status::Ok();
}

Status nra_entries_room(NraGpu* g, const ExecContext& ctx, size_t e) {
    APPROX_TRY(ensure(g->e_id, ctx, e));
    APPROX_TRY(ensure(g->e_sc, ctx, e));
    APPROX_TRY(ensure(g->e_list, ctx, e));
    APPROX_TRY(ensure(g->e_kind, ctx, e));
    APPROX_TRY(ensure(g->e_res, ctx, e));
    APPROX_TRY(ensure(g->h_id, e));
    APPROX_TRY(ensure(g->h_sc, e));
    return ensure(g->h_list, e);
}

// Inserts/updates the e staged entries (find-or-claim, allocate, apply).
Status nra_insert(NraGpu* g, size_t e, bool insert) {
    APPROX_CUDA(cudaMemcpyAsync(g->e_id.get(), g->h_id.get(), e * sizeof(int64_t), cudaMemcpyHostToDevice, g->s));
    APPROX_CUDA(cudaMemcpyAsync(g->e_sc.get(), g->h_sc.get(), e * sizeof(double), cudaMemcpyHostToDevice, g->s));
    APPROX_CUDA(cudaMemcpyAsync(g->e_list.get(), g->h_list.get(), e, cudaMemcpyHostToDevice, g->s));
    unsigned blocks = gpu::blocks_for(e, 256);
    nra_find_kernel<<<blocks, 256, 0, g->s>>>(g->e_id.get(), e, insert, g->slot.get(), g->hcap - 1, g->cid.get(),
                                              g->e_kind.get(), g->e_res.get());
    APPROX_CUDA_LAUNCHED();
    if (insert) {
        nra_alloc_kernel<<<blocks, 256, 0, g->s>>>(g->e_id.get(), e, g->e_kind.get(), g->e_res.get(), g->slot.get(),
                                                   g->cid.get(), g->seen.get(), g->counters.get());
        APPROX_CUDA_LAUNCHED();
    }
    nra_apply_kernel<<<blocks, 256, 0, g->s>>>(g->e_sc.get(), g->e_list.get(), e, g->e_kind.get(), g->e_res.get(),
                                               g->slot.get(), g->sc.get(), g->cap, g->seen.get(), g->counters.get());
    APPROX_CUDA_LAUNCHED();
    return Status::Ok();
}

// Recomputes W for every candidate, counts W > T, reads the counters back.
Status nra_refresh(NraGpu* g, const NraShared& sh, size_t upper) {
    APPROX_CUDA(cudaMemsetAsync(g->counters.get() + 1, 0, 2 * sizeof(unsigned long long), g->s));
    if (upper > 0) {
        nra_bounds_kernel<<<grid_for(upper, kBlock), kBlock, 0, g->s>>>(g->seen.get(), g->sc.get(), g->cap,
                                                                        g->counters.get(), bounds_of(sh), g->w.get(),
                                                                        g->counters.get() + 1);
        APPROX_CUDA_LAUNCHED();
    }
    APPROX_CUDA(cudaMemcpyAsync(g->h_counters.get(), g->counters.get(), 5 * sizeof(unsigned long long),
                                cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaStreamSynchronize(g->s));
    g->count = static_cast<size_t>(g->h_counters.get()[0]);
    return Status::Ok();
}

// The k-th best candidate by (W DESC, id ASC) (count >= k).
Status nra_kth(NraGpu* g, const ExecContext& ctx, size_t kk, double& wk, int64_t& idk) {
    APPROX_TRY(ensure(g->sel_idx, ctx, kk));
    APPROX_TRY(ensure(g->out_ids, ctx, kk));
    APPROX_TRY(ensure(g->out_w, ctx, kk));
    APPROX_TRY(device_select(g->w.get(), g->cid.get(), g->count, kk, Order::Desc, ctx, g->s, g->sel, g->sel_idx.get()));
    APPROX_TRY(gather(g->sel_idx.get() + (kk - 1), 1, g->cid.get(), g->w.get(), g->out_ids.get(), g->out_w.get(),
                      g->s));
    APPROX_CUDA(cudaMemcpyAsync(&idk, g->out_ids.get(), sizeof(int64_t), cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaMemcpyAsync(&wk, g->out_w.get(), sizeof(double), cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaStreamSynchronize(g->s));
    return Status::Ok();
}

}  // namespace

Status nra_gpu_create(const NraShared& sh, const ExecContext& ctx, NraGpu*& out) {
    out = nullptr;
    NraGpu* g = new NraGpu();
    g->m = sh.m;
    g->k = static_cast<size_t>(sh.k);
    Status st = [&]() -> Status {
        APPROX_TRY(gpu::begin(ctx, g->s));
        APPROX_TRY(g->counters.alloc(ctx, 8));
        APPROX_TRY(g->h_counters.alloc(8));
        APPROX_CUDA(cudaMemsetAsync(g->counters.get(), 0, 8 * sizeof(unsigned long long), g->s));
        APPROX_CUDA(cudaStreamSynchronize(g->s));
        return Status::Ok();
    }();
    if (!st.ok()) {
        delete g;
        return st;
    }
    out = g;
    return Status::Ok();
}

Status nra_gpu_round(NraGpu* g, NraShared& sh, const NraList* lists, const ExecContext& ctx, NraProgress& progress,
                     bool& applied) {
    progress = NraProgress();
    applied = false;
    size_t e = 0;
    for (int j = 0; j < sh.m; ++j) e += lists[j].n;
    if (e >= kClaimBit - 1) return Status::Error(StatusCode::ProgramLimit, "too many entries in one NRA round");
    const bool insert = !sh.phase2;
    if (e > 0) {
        APPROX_TRY(nra_reserve(g, ctx, g->count + (insert ? e : 0)));
        APPROX_TRY(nra_entries_room(g, ctx, e));
        size_t at = 0;
        for (int j = 0; j < sh.m; ++j) {
            const NraList& l = lists[j];
            if (l.n == 0) continue;
            std::copy(l.ids, l.ids + l.n, g->h_id.get() + at);
            std::copy(l.scores, l.scores + l.n, g->h_sc.get() + at);
            std::fill(g->h_list.get() + at, g->h_list.get() + at + l.n, static_cast<uint8_t>(j));
            at += l.n;
        }
        APPROX_TRY(nra_insert(g, e, insert));
    }
    applied = true;
    APPROX_TRY(nra_refresh(g, sh, g->count + (insert ? e : 0)));
    const unsigned long long* hc = g->h_counters.get();
    if (hc[3]) return Status::Error(StatusCode::InvalidArgument, "a list holds an id more than once");

    const bool all_ex = sh.all_exhausted();
    if (g->count < g->k || hc[1] < g->k) {  // fewer than k candidates, or W_k <= T
        progress.need_unlisted = all_ex;
        return Status::Ok();
    }
    sh.phase2 = true;
    double wk = 0;
    int64_t idk = 0;
    APPROX_TRY(nra_kth(g, ctx, g->k, wk, idk));
    APPROX_CUDA(cudaMemsetAsync(g->counters.get() + 2, 0, sizeof(unsigned long long), g->s));
    nra_check_kernel<<<grid_for(g->count, kBlock), kBlock, 0, g->s>>>(g->cid.get(), g->seen.get(), g->sc.get(),
                                                                      g->w.get(), g->cap, g->count, bounds_of(sh), wk,
                                                                      idk, g->counters.get() + 2);
    APPROX_CUDA_LAUNCHED();
    APPROX_CUDA(cudaMemcpyAsync(g->h_counters.get() + 2, g->counters.get() + 2, sizeof(unsigned long long),
                                cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaStreamSynchronize(g->s));
    progress.done = g->h_counters.get()[2] == 0;
    return Status::Ok();
}

Status nra_gpu_add_unlisted(NraGpu* g, NraShared& sh, const int64_t* ids, size_t n, const ExecContext& ctx) {
    if (n >= kClaimBit - 1) return Status::Error(StatusCode::ProgramLimit, "too many unlisted objects");
    if (n > 0) {
        APPROX_TRY(nra_reserve(g, ctx, g->count + n));
        APPROX_TRY(nra_entries_room(g, ctx, n));
        std::copy(ids, ids + n, g->h_id.get());
        std::fill(g->h_sc.get(), g->h_sc.get() + n, 0.0);
        std::fill(g->h_list.get(), g->h_list.get() + n, kNoList);
        APPROX_TRY(nra_insert(g, n, true));
    }
    APPROX_TRY(nra_refresh(g, sh, g->count + n));
    if (g->h_counters.get()[4])
        return Status::Error(StatusCode::InvalidArgument, "an unlisted object is in a list or given twice");
    return Status::Ok();
}

Status nra_gpu_winners(NraGpu* g, NraShared& sh, const ExecContext& ctx, int64_t* ids, size_t cap, size_t& n) {
    n = 0;
    size_t kk = std::min({g->k, g->count, cap});
    if (kk == 0) return Status::Ok();
    APPROX_TRY(ensure(g->sel_idx, ctx, kk));
    APPROX_TRY(ensure(g->out_ids, ctx, kk));
    APPROX_TRY(device_select(g->w.get(), g->cid.get(), g->count, kk, Order::Desc, ctx, g->s, g->sel, g->sel_idx.get()));
    APPROX_TRY(gather(g->sel_idx.get(), kk, g->cid.get(), g->w.get(), g->out_ids.get(), nullptr, g->s));
    APPROX_CUDA(cudaMemcpyAsync(ids, g->out_ids.get(), kk * sizeof(int64_t), cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaStreamSynchronize(g->s));
    n = kk;
    return Status::Ok();
}

int64_t nra_gpu_candidates(const NraGpu* g) { return g ? static_cast<int64_t>(g->count) : 0; }

Status nra_gpu_export(NraGpu* g, const NraShared& sh, std::vector<int64_t>& ids, std::vector<uint32_t>& seen,
                      std::vector<double>& scores) {
    size_t n = g->count;
    ids.assign(n, 0);
    seen.assign(n, 0);
    scores.assign(n * g->m, 0.0);
    if (n == 0) return Status::Ok();
    std::vector<double> by_list(n * g->m);
    APPROX_CUDA(cudaMemcpyAsync(ids.data(), g->cid.get(), n * sizeof(int64_t), cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaMemcpyAsync(seen.data(), g->seen.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaMemcpy2DAsync(by_list.data(), n * sizeof(double), g->sc.get(), g->cap * sizeof(double),
                                  n * sizeof(double), g->m, cudaMemcpyDeviceToHost, g->s));
    APPROX_CUDA(cudaStreamSynchronize(g->s));
    for (size_t c = 0; c < n; ++c)
        for (int j = 0; j < g->m; ++j) scores[c * g->m + j] = (seen[c] >> j & 1u) ? by_list[size_t(j) * n + c] : 0.0;
    return Status::Ok();
}

void nra_gpu_destroy(NraGpu* g) noexcept { delete g; }

}  // namespace detail

}  // namespace approx::topk
