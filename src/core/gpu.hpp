// The GPU runtime as seen from plain C++ (implemented in cuda/gpu_runtime.cu,
// or by src/core/gpu_none.cpp in a CPU-only build).
//
// CUDA is initialised lazily on the first call that needs it, in the calling
// backend, never in the postmaster (_PG_init touches none of this).
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec.hpp"

namespace approx::gpu {

// True when a CUDA device can be used; otherwise writes the reason to why.
// The first call probes (cudaGetDeviceCount with signals blocked) and caches.
bool available(char* why, size_t why_len);

struct DeviceInfo {
    int index = 0;
    char name[256] = {0};
    int cc_major = 0, cc_minor = 0;
    int multiprocessors = 0;
    int64_t total_bytes = 0;
    int64_t free_bytes = 0;
};

// Fills up to max entries; returns how many devices there are (0 without a GPU).
int devices(DeviceInfo* out, int max);

// Runtime and driver versions (0 when unknown), for device_info().
void versions(int& runtime_version, int& driver_version);

// Bytes this process currently holds through the engines' device buffers.
int64_t bytes_in_use();

// Input columns uploaded while they are read (the relation reader's GPU
// path): device buffers of `capacity` rows for each of `ncols` columns of
// 8-byte values, filled as rows arrive -- each stage_rows() copies the new
// rows into a pinned slot and queues their upload on the engines' stream, so
// the copies run while the reader's workers go on reading. stage_finish()
// waits and binds each column to its final host array; an engine that is
// handed that host array (ExecContext::staged) copies the device copy
// instead of uploading (staged_device()). Rows past `capacity` are not
// staged: stage_rows() then returns false and the engine uploads as usual.
struct StagedColumns;
Status stage_begin(const ExecContext& ctx, int ncols, int64_t capacity, StagedColumns*& out);
Status stage_rows(StagedColumns* s, const void* const* host_cols, int64_t first, int64_t n, bool& staged);
Status stage_finish(StagedColumns* s, const void* const* host_cols, int64_t rows);
void stage_free(StagedColumns* s);
// Milliseconds the uploads took that the read did not hide (stage_finish's wait).
double stage_wait_ms(const StagedColumns* s);

// ---- the GPU service (src/service/) ---------------------------------------

// The calling thread's engines use device `device` (default 0) and its own
// stream; the service binds one executor thread per device.
Status bind_thread(int device);

// Device memory from a stream-ordered pool on `device` that keeps up to
// limit_bytes reserved between calls (no cudaMalloc per call), and refuses
// allocations past it (GpuOutOfMemory: "the service-wide limit"). Called
// once per device by the service; backends never use the pool.
Status pool_configure(int device, int64_t limit_bytes);
struct PoolInfo {
    int64_t limit = 0;     // approx_gpu.service_memory_limit (0: none)
    int64_t used = 0;      // bytes the engines hold now
    int64_t reserved = 0;  // bytes the pool holds from the driver
    int64_t peak = 0;      // high-water mark of used
};
PoolInfo pool_info(int device);

// Starts a request's quota (approx_gpu.gpu_memory_limit counts the device
// memory one request allocates on this thread).
void request_begin();

// Page-locks a host range for fast copies (the service's staging area, once).
Status host_register(void* p, size_t bytes);
void host_unregister(void* p);

// Device memory outside any request (the resident cache): uploads `bytes`
// of host memory to a new buffer on the calling thread's device.
Status resident_upload(const void* host, size_t bytes, void*& device);
void resident_free(void* device, size_t bytes);

// False after a CUDA error that poisons the context (e.g. an illegal
// address): every later call would fail, so the service exits and the
// postmaster starts a fresh one.
bool context_healthy();

// Tests only (approx_gpu.service_test_fault = trap): a kernel on the calling
// thread's device that traps -- a real, sticky device fault. Returns the
// GpuError the runtime reports; context_healthy() is false afterwards.
Status test_trap();

}  // namespace approx::gpu
