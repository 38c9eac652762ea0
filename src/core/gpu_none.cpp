// CPU-only build: the GPU runtime answers "no GPU" (compiled only when
// WITH_CUDA=0 or nvcc is missing; see the Makefile).
#include "gpu.hpp"

#include <cstdio>

namespace approx::gpu {

bool available(char* why, size_t why_len) {
    std::snprintf(why, why_len, "approx_gpu was built without CUDA");
    return false;
}

int devices(DeviceInfo*, int) { return 0; }

void versions(int& runtime_version, int& driver_version) { runtime_version = driver_version = 0; }

int64_t bytes_in_use() { return 0; }

}  // namespace approx::gpu
