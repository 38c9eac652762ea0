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

Status stage_begin(const ExecContext&, int, int64_t, StagedColumns*& out) {
    out = nullptr;
    return Status::Error(StatusCode::NoGpu, "approx_gpu was built without CUDA");
}
Status stage_rows(StagedColumns*, const void* const*, int64_t, int64_t, bool& staged) {
    staged = false;
    return Status::Ok();
}
Status stage_finish(StagedColumns*, const void* const*, int64_t) { return Status::Ok(); }
void stage_free(StagedColumns*) {}
double stage_wait_ms(const StagedColumns*) { return 0; }

Status bind_thread(int) { return Status::Ok(); }
Status pool_configure(int, int64_t) { return Status::Error(StatusCode::NoGpu, "approx_gpu was built without CUDA"); }
PoolInfo pool_info(int) { return PoolInfo(); }
void request_begin() {}
Status host_register(void*, size_t) { return Status::Ok(); }
void host_unregister(void*) {}
Status resident_upload(const void*, size_t, void*& device) {
    device = nullptr;
    return Status::Error(StatusCode::NoGpu, "approx_gpu was built without CUDA");
}
void resident_free(void*, size_t) {}
bool context_healthy() { return true; }
Status test_trap() { return Status::Error(StatusCode::NoGpu, "no GPU to fault"); }

}  // namespace approx::gpu
