// The GPU runtime as seen from plain C++ (implemented in cuda/gpu_runtime.cu,
// or by src/core/gpu_none.cpp in a CPU-only build).
//
// CUDA is initialised lazily on the first call that needs it, in the calling
// backend, never in the postmaster (_PG_init touches none of this).
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace approx::gpu
