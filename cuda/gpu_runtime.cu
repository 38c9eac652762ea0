// Lazy CUDA initialisation, device introspection and the memory cap.
#include <atomic>
#include <cstdio>
#include <mutex>

#include "common.cuh"

namespace approx::gpu {

namespace {

struct Probe {
    bool done = false;
    bool usable = false;
    char why[256] = {0};
    cudaStream_t stream = nullptr;
};

Probe& probe_state() {
    static Probe p;
    return p;
}

std::mutex probe_lock;
std::atomic<int64_t> held_bytes{0};

// First CUDA call in the process: the runtime may start helper threads, which
// must not receive PostgreSQL's signals.
void probe_once() {
    Probe& p = probe_state();
    if (p.done) return;
    SignalBlock block;
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        std::snprintf(p.why, sizeof p.why, "%s (%s)", cudaGetErrorString(err), cudaGetErrorName(err));
        (void)cudaGetLastError();
    } else if (count == 0) {
        std::snprintf(p.why, sizeof p.why, "no CUDA device found");
    } else if ((err = cudaSetDevice(0)) != cudaSuccess ||
               (err = cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking)) != cudaSuccess) {
        std::snprintf(p.why, sizeof p.why, "CUDA initialisation failed: %s", cudaGetErrorString(err));
        (void)cudaGetLastError();
    } else {
        p.usable = true;
    }
    p.done = true;
}

}  // namespace

bool available(char* why, size_t why_len) {
    std::lock_guard<std::mutex> g(probe_lock);
    probe_once();
    if (!probe_state().usable && why) std::snprintf(why, why_len, "%s", probe_state().why);
    return probe_state().usable;
}

Status begin(const ExecContext&, cudaStream_t& stream) {
    char why[256];
    if (!available(why, sizeof why)) return Status::Error(StatusCode::NoGpu, "no GPU is usable: %s", why);
    APPROX_CUDA(cudaSetDevice(0));
    stream = probe_state().stream;
    return Status::Ok();
}

int devices(DeviceInfo* out, int max) {
    char why[256];
    if (!available(why, sizeof why)) return 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
    for (int i = 0; i < count && i < max; ++i) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        DeviceInfo& d = out[i];
        d.index = i;
        std::snprintf(d.name, sizeof d.name, "%s", prop.name);
        d.cc_major = prop.major;
        d.cc_minor = prop.minor;
        d.multiprocessors = prop.multiProcessorCount;
        d.total_bytes = static_cast<int64_t>(prop.totalGlobalMem);
        size_t free_b = 0, total_b = 0;
        int cur = 0;
        cudaGetDevice(&cur);
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
            d.free_bytes = static_cast<int64_t>(free_b);
        cudaSetDevice(cur);
    }
    (void)cudaGetLastError();
    return count;
}

void versions(int& runtime_version, int& driver_version) {
    runtime_version = driver_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    cudaDriverGetVersion(&driver_version);
    (void)cudaGetLastError();
}

int sm_count() {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cached[kMaxDevices];  // 0 = not asked yet
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
        (void)cudaGetLastError();
        return 80;
    }
    int sms = cached[dev].load(std::memory_order_relaxed);
    if (sms == 0) {
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0) {
            (void)cudaGetLastError();
            sms = 80;
        }
        cached[dev].store(sms, std::memory_order_relaxed);
    }
    return sms;
}

int64_t bytes_in_use() { return held_bytes.load(); }

Status reserve_bytes(const ExecContext& ctx, size_t bytes) {
    int64_t after = held_bytes.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
    if (ctx.gpu_memory_limit > 0 && after > ctx.gpu_memory_limit) {
        held_bytes.fetch_sub(static_cast<int64_t>(bytes));
        return Status::Error(StatusCode::GpuOutOfMemory,
                             "GPU allocation of %zu bytes would pass approx_gpu.gpu_memory_limit (%lld bytes, %lld in use)",
                             bytes, static_cast<long long>(ctx.gpu_memory_limit),
                             static_cast<long long>(after - static_cast<int64_t>(bytes)));
    }
    return Status::Ok();
}

void release_bytes(size_t bytes) { held_bytes.fetch_sub(static_cast<int64_t>(bytes)); }

Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
    const char* base = file;
    for (const char* c = file; *c; ++c)
        if (*c == '/') base = c + 1;
    StatusCode code = (err == cudaErrorMemoryAllocation) ? StatusCode::GpuOutOfMemory : StatusCode::GpuError;
    return Status::Error(code, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(err), cudaGetErrorString(err),
                         what, base, line);
}

}  // namespace approx::gpu
