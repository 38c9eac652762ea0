// Shared building blocks of the GPU engines: the checking macro, RAII device
// and pinned buffers with the per-backend memory cap, CUB temp storage, and
// the device/stream every engine uses. One copy here, none per feature.
#pragma once

#include <cub/device/device_for.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/exec.hpp"
#include "core/gpu.hpp"

namespace approx::gpu {

// Turns a CUDA error into a Status (allocation failures become GpuOutOfMemory,
// which `auto` answers by rerunning on the CPU).
Status cuda_status(cudaError_t err, const char* what, const char* file, int line);

// Check a CUDA call (or the last error after a launch); return its Status on failure.
#define APPROX_CUDA(call)                                                                                      \
    do {                                                                                                       \
        cudaError_t cuda_err_ = (call);                                                                        \
        if (cuda_err_ != cudaSuccess) return ::approx::gpu::cuda_status(cuda_err_, #call, __FILE__, __LINE__); \
    } while (0)
#define APPROX_CUDA_LAUNCHED() APPROX_CUDA(cudaGetLastError())

// Makes the device current (initialising CUDA with signals blocked on the
// first call in this process) and returns the engines' stream.
Status begin(const ExecContext& ctx, cudaStream_t& stream);

// The device copy of host array `host` of n 8-byte values when the reader
// staged it (ExecContext::staged, gpu.hpp), else nullptr.
const void* staged_device(const ExecContext& ctx, const void* host, size_t n);

// Copies n values of host array `src` to device `dst` on the stream: from the
// staged device copy when there is one (device to device), else from the host.
template <class T>
cudaError_t copy_input(const ExecContext& ctx, T* dst, const T* src, size_t n, cudaStream_t s) {
    static_assert(sizeof(T) == 8, "staged columns hold 8-byte values");
    if (const void* d = staged_device(ctx, src, n))
        return cudaMemcpyAsync(dst, d, n * sizeof(T), cudaMemcpyDeviceToDevice, s);
    return cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyHostToDevice, s);
}

// The device copy of `host` when the GPU service keeps it resident
// (ExecContext::resident, service.hpp), else nullptr.
const void* resident_device(const ExecContext& ctx, const void* host, size_t bytes);

// Accounting for approx_gpu.gpu_memory_limit (bytes one request -- in a
// backend, the process -- holds) and, in the service, the pool's limit.
Status reserve_bytes(const ExecContext& ctx, size_t bytes);
void release_bytes(size_t bytes);

// Device memory within those limits: from the service's pool (stream-ordered,
// no driver call per allocation) or, in a backend, cudaMalloc.
Status device_alloc(const ExecContext& ctx, size_t bytes, void*& p);
void device_free(void* p, size_t bytes);

// Device memory owned by RAII: freed on every return path, so errors and
// cancellations never leak GPU memory.
template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        reset();
        swap(o);
        return *this;
    }
    ~DeviceBuffer() { reset(); }

    Status alloc(const ExecContext& ctx, size_t count) {
        reset();
        if (count == 0) return Status::Ok();
        void* p = nullptr;
        APPROX_TRY(device_alloc(ctx, count * sizeof(T), p));
        ptr_ = static_cast<T*>(p);
        count_ = count;
        return Status::Ok();
    }
    void reset() {
        if (ptr_) device_free(ptr_, count_ * sizeof(T));
        ptr_ = nullptr;
        count_ = 0;
    }
    T* get() const { return ptr_; }
    size_t size() const { return count_; }
    size_t bytes() const { return count_ * sizeof(T); }

private:
    void swap(DeviceBuffer& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(count_, o.count_);
    }
    T* ptr_ = nullptr;
    size_t count_ = 0;
};

// Pinned host staging memory (fast async copies), also RAII.
template <class T>
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    ~PinnedBuffer() { reset(); }
    Status alloc(size_t count) {
        reset();
        if (count == 0) return Status::Ok();
        void* p = nullptr;
        cudaError_t err = cudaMallocHost(&p, count * sizeof(T));
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            return cuda_status(err, "cudaMallocHost", __FILE__, __LINE__);
        }
        ptr_ = static_cast<T*>(p);
        count_ = count;
        return Status::Ok();
    }
    void reset() {
        if (ptr_) cudaFreeHost(ptr_);
        ptr_ = nullptr;
        count_ = 0;
    }
    T* get() const { return ptr_; }
    size_t size() const { return count_; }

private:
    T* ptr_ = nullptr;
    size_t count_ = 0;
};

// CUB's two-phase temp-storage protocol in one place:
//   CubTemp tmp; APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& n) {
//       return cub::DeviceReduce::Sum(p, n, in, out, count, stream); }));
class CubTemp {
public:
    template <class Call>
    Status run(const ExecContext& ctx, Call&& call) {
        size_t need = 0;
        APPROX_CUDA(call(nullptr, need));
        if (need > buf_.size()) APPROX_TRY(buf_.alloc(ctx, need));
        size_t have = buf_.size();
        APPROX_CUDA(call(static_cast<void*>(buf_.get()), have));
        return Status::Ok();
    }

private:
    DeviceBuffer<unsigned char> buf_;
};

// Host-side timing split (transfer vs compute) recorded into RunStats.
inline void add_transfer_ms(const ExecContext& ctx, double ms) {
    if (ctx.stats) ctx.stats->ms_transfer += ms;
}

// ---- launch geometry -------------------------------------------------------------------

// Blocks to cover n items at `threads` per block, uncapped (one thread per item;
// the kernel checks i < n). 0 when n == 0: callers skip empty launches.
inline unsigned blocks_for(size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Streaming multiprocessors of the current device, queried once per device and
// cached (80, an A100's count, if the query fails).
int sm_count();

// Grid for a grid-stride kernel (GRID_STRIDE below) over n items, `per_block`
// items per block (the block size, or block size x items per thread): at least 1
// block, at most max_blocks; the stride loop covers what the cap leaves. The cap
// is the caller's performance choice, so callers that need another one say so.
constexpr int64_t kDefaultMaxBlocks = 65536;
template <class N>
inline unsigned grid_for(N n, int64_t per_block = 256, int64_t max_blocks = kDefaultMaxBlocks) {
    int64_t b = (static_cast<int64_t>(n) + per_block - 1) / per_block;
    if (b < 1) b = 1;
    if (b > max_blocks) b = max_blocks;
    return static_cast<unsigned>(b);
}

// for (int64_t i = this thread's first index; i < n; i += the whole grid).
#define GRID_STRIDE(i, n) \
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// The same loop with one warp per item: for (int64_t w = this thread's warp;
// w < n; w += the grid's warps). blockDim.x must be a multiple of 32.
#define WARP_GRID_STRIDE(w, n)                                                       \
    for (int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5; w < (n); \
         w += (int64_t(gridDim.x) * blockDim.x) >> 5)

// ---- device building blocks -----------------------------------------------------------

// Warp-aggregated append: one atomicAdd on *counter per warp for the lanes whose
// `pred` holds; returns each such lane's slot (base + its rank among them; the
// value is meaningless for lanes with pred false). Every lane of the warp must call it.
__device__ __forceinline__ unsigned long long warp_append(bool pred, unsigned long long* counter) {
    unsigned mask = __ballot_sync(0xffffffffu, pred);
    unsigned lane = threadIdx.x & 31;
    unsigned long long base = 0;
    if (lane == 0 && mask != 0) base = atomicAdd(counter, static_cast<unsigned long long>(__popc(mask)));
    base = __shfl_sync(0xffffffffu, base, 0);
    return base + static_cast<unsigned long long>(__popc(mask & ((1u << lane) - 1u)));
}

template <class T>
struct SequenceOp {
    T* out;
    T first;
    __device__ void operator()(int64_t i) const { out[i] = static_cast<T>(first + static_cast<T>(i)); }
};

// out[i] = first + i for i in [0, n), queued on `stream` (cub::DeviceFor).
template <class T>
Status sequence(T* out, int64_t n, T first, cudaStream_t stream) {
    if (n <= 0) return Status::Ok();
    APPROX_CUDA(cub::DeviceFor::Bulk(n, SequenceOp<T>{out, first}, stream));
    return Status::Ok();
}

// ---- segment bounds -------------------------------------------------------------------

// Runs of equal values in in[0, n) (grouped, e.g. sorted): unique[r] is the
// value of run r and offsets[r] its first index, for r < *num_runs (left on the
// device), and offsets[*num_runs] = n, so run r is [offsets[r], offsets[r + 1]).
// lengths and offsets hold n + 1 entries and may be the same buffer (in place);
// lengths past the runs are zeroed, so every entry of offsets up to n is
// defined (n itself from the last run on). 0 < n <= INT_MAX (CUB's item count).
// cub::DeviceRunLengthEncode::Encode, then cub::DeviceScan::ExclusiveSum.
template <class In, class UniqueOut, class Off, class NumRuns>
Status run_offsets(CubTemp& tmp, const ExecContext& ctx, In in, int64_t n, UniqueOut unique, Off* lengths, Off* offsets,
                   NumRuns* num_runs, cudaStream_t stream) {
    if (n <= 0) return Status::Ok();
    const int items = static_cast<int>(n);
    APPROX_CUDA(cudaMemsetAsync(lengths, 0, (static_cast<size_t>(n) + 1) * sizeof(Off), stream));
    APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
        return cub::DeviceRunLengthEncode::Encode(p, bytes, in, unique, lengths, num_runs, items, stream);
    }));
    return tmp.run(ctx, [&](void* p, size_t& bytes) {
        return cub::DeviceScan::ExclusiveSum(p, bytes, lengths, offsets, items + 1, stream);
    });
}

// ---- buffer growth --------------------------------------------------------------------

// The one growth rule of scratch buffers: a buffer that must hold `need`
// elements and holds `have` grows to max(need, have * 5/4), so a run of slowly
// growing requests reallocates O(log) times while overshooting by at most 25%.
inline size_t grown_capacity(size_t have, size_t need) {
    if (have >= need) return have;
    return std::max(need, have + have / 4);
}

// Grows buf to hold at least `count` elements (contents not kept; never
// shrinks), by grown_capacity(), within approx_gpu.gpu_memory_limit.
template <class T>
Status ensure(DeviceBuffer<T>& buf, const ExecContext& ctx, size_t count) {
    if (buf.size() >= count) return Status::Ok();
    return buf.alloc(ctx, grown_capacity(buf.size(), count));
}
template <class T>
Status ensure(PinnedBuffer<T>& buf, size_t count) {
    if (buf.size() >= count) return Status::Ok();
    return buf.alloc(grown_capacity(buf.size(), count));
}

}  // namespace approx::gpu
