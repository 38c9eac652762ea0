// Shared building blocks of the GPU engines: the checking macro, RAII device
// and pinned buffers with the per-backend memory cap, CUB temp storage, and
// the device/stream every engine uses. One copy here, none per feature.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "../src/core/exec.hpp"
#include "../src/core/gpu.hpp"

namespace approx::gpu {

// Turns a CUDA error into a Status (allocation failures become GpuOutOfMemory,
// which `auto` answers by rerunning on the CPU).
Status cuda_status(cudaError_t err, const char* what, const char* file, int line);

// Check a CUDA call (or the last error after a launch); return its Status on failure.
#define APPROX_CUDA(call)                                                                   \
    do {                                                                                    \
        cudaError_t cuda_err_ = (call);                                                     \
        if (cuda_err_ != cudaSuccess)                                                       \
            return ::approx::gpu::cuda_status(cuda_err_, #call, __FILE__, __LINE__);        \
    } while (0)
#define APPROX_CUDA_LAUNCHED() APPROX_CUDA(cudaGetLastError())

// Makes the device current (initialising CUDA with signals blocked on the
// first call in this process) and returns the engines' stream.
Status begin(const ExecContext& ctx, cudaStream_t& stream);

// Accounting for approx_gpu.gpu_memory_limit (bytes held by this process).
Status reserve_bytes(const ExecContext& ctx, size_t bytes);
void release_bytes(size_t bytes);

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
        size_t bytes = count * sizeof(T);
        APPROX_TRY(reserve_bytes(ctx, bytes));
        void* p = nullptr;
        cudaError_t err = cudaMalloc(&p, bytes);
        if (err != cudaSuccess) {
            release_bytes(bytes);
            (void)cudaGetLastError();  // clear the sticky-free error state
            return cuda_status(err, "cudaMalloc", __FILE__, __LINE__);
        }
        ptr_ = static_cast<T*>(p);
        count_ = count;
        return Status::Ok();
    }
    void reset() {
        if (ptr_) {
            cudaFree(ptr_);
            release_bytes(count_ * sizeof(T));
        }
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

inline unsigned blocks_for(size_t n, unsigned threads) {
    return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace approx::gpu
