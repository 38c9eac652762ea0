// Lazy CUDA initialisation, device introspection and the memory cap.
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
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

// The device the calling thread's engines use (bind_thread), and per device
// the engines' stream and the service's memory pool.
constexpr int kMaxDevices = 64;
thread_local int t_device = 0;
thread_local int64_t t_request_bytes = 0;

struct DeviceState {
    cudaStream_t stream = nullptr;
    cudaMemPool_t pool = nullptr;  // set by pool_configure (the service only)
    int64_t limit = 0;
    std::atomic<int64_t> used{0};
    std::atomic<int64_t> peak{0};
};
DeviceState device_state[kMaxDevices];

// The engines' stream of the calling thread's device (device 0's is the
// probe's, made when CUDA was first initialised).
cudaStream_t thread_stream() { return t_device == 0 ? probe_state().stream : device_state[t_device].stream; }

Status begin(const ExecContext&, cudaStream_t& stream) {
    char why[256];
    if (!available(why, sizeof why)) return Status::Error(StatusCode::NoGpu, "no GPU is usable: %s", why);
    APPROX_CUDA(cudaSetDevice(t_device));
    stream = thread_stream();
    return Status::Ok();
}

Status bind_thread(int device) {
    char why[256];
    if (!available(why, sizeof why)) return Status::Error(StatusCode::NoGpu, "no GPU is usable: %s", why);
    int count = 0;
    APPROX_CUDA(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count || device >= kMaxDevices)
        return Status::Error(StatusCode::InvalidArgument, "bind_thread: no device %d", device);
    SignalBlock block;
    APPROX_CUDA(cudaSetDevice(device));
    {
        std::lock_guard<std::mutex> g(probe_lock);
        if (device != 0 && device_state[device].stream == nullptr)
            APPROX_CUDA(cudaStreamCreateWithFlags(&device_state[device].stream, cudaStreamNonBlocking));
    }
    t_device = device;
    return Status::Ok();
}

Status pool_configure(int device, int64_t limit_bytes) {
    APPROX_TRY(bind_thread(device));
    DeviceState& d = device_state[device];
    if (d.pool) return Status::Ok();
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool;
    APPROX_CUDA(cudaMemPoolCreate(&pool, &props));
    // Keep what was allocated (up to the limit) instead of handing it back to
    // the driver at every synchronisation: later calls reuse it.
    uint64_t keep = limit_bytes > 0 ? static_cast<uint64_t>(limit_bytes) : ~uint64_t(0);
    cudaError_t err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (err != cudaSuccess) {
        cudaMemPoolDestroy(pool);
        return cuda_status(err, "cudaMemPoolSetAttribute", __FILE__, __LINE__);
    }
    d.limit = limit_bytes;
    d.pool = pool;
    return Status::Ok();
}

PoolInfo pool_info(int device) {
    PoolInfo info;
    if (device < 0 || device >= kMaxDevices) return info;
    DeviceState& d = device_state[device];
    info.limit = d.limit;
    info.used = d.used.load();
    info.peak = d.peak.load();
    if (d.pool) {
        uint64_t reserved = 0;
        if (cudaMemPoolGetAttribute(d.pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess)
            info.reserved = static_cast<int64_t>(reserved);
        (void)cudaGetLastError();
    }
    return info;
}

void request_begin() { t_request_bytes = 0; }

Status host_register(void* p, size_t bytes) {
    APPROX_CUDA(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
    return Status::Ok();
}

void host_unregister(void* p) {
    cudaHostUnregister(p);
    (void)cudaGetLastError();
}

bool context_healthy() {
    // A non-sticky error is cleared by the first call; a sticky one (the
    // context is unusable) comes back on every call.
    if (cudaDeviceSynchronize() == cudaSuccess) return true;
    (void)cudaGetLastError();
    return cudaDeviceSynchronize() == cudaSuccess;
}

namespace {
__global__ void trap_kernel() { __trap(); }
}  // namespace

Status test_trap() {
    trap_kernel<<<1, 1, 0, thread_stream()>>>();
    cudaError_t err = cudaStreamSynchronize(thread_stream());
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err == cudaSuccess) return Status::Error(StatusCode::Internal, "the trap kernel did not fault");
    return Status::Error(StatusCode::GpuError, "%s (%s), injected by approx_gpu.service_test_fault",
                         cudaGetErrorString(err), cudaGetErrorName(err));
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
    const int64_t b = static_cast<int64_t>(bytes);
    if (ctx.gpu_memory_limit > 0 && t_request_bytes + b > ctx.gpu_memory_limit)
        return Status::Error(
            StatusCode::GpuOutOfMemory,
            "GPU allocation of %zu bytes would pass approx_gpu.gpu_memory_limit (%lld bytes, %lld in use)", bytes,
            static_cast<long long>(ctx.gpu_memory_limit), static_cast<long long>(t_request_bytes));
    DeviceState& d = device_state[t_device];
    const int64_t after = d.used.fetch_add(b) + b;
    if (d.pool && d.limit > 0 && after > d.limit) {
        d.used.fetch_sub(b);
        return Status::Error(
            StatusCode::GpuOutOfMemory,
            "GPU allocation of %zu bytes would pass approx_gpu.service_memory_limit (%lld bytes, %lld in use)", bytes,
            static_cast<long long>(d.limit), static_cast<long long>(after - b));
    }
    int64_t peak = d.peak.load();
    while (after > peak && !d.peak.compare_exchange_weak(peak, after)) {
    }
    t_request_bytes += b;
    held_bytes.fetch_add(b);
    return Status::Ok();
}

void release_bytes(size_t bytes) {
    const int64_t b = static_cast<int64_t>(bytes);
    held_bytes.fetch_sub(b);
    device_state[t_device].used.fetch_sub(b);
    t_request_bytes = t_request_bytes > b ? t_request_bytes - b : 0;
}

Status device_alloc(const ExecContext& ctx, size_t bytes, void*& p) {
    p = nullptr;
    APPROX_TRY(reserve_bytes(ctx, bytes));
    DeviceState& d = device_state[t_device];
    cudaError_t err = d.pool ? cudaMallocFromPoolAsync(&p, bytes, d.pool, thread_stream()) : cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
        release_bytes(bytes);
        p = nullptr;
        (void)cudaGetLastError();  // clear the error state (an allocation failure is not sticky)
        return cuda_status(err, d.pool ? "cudaMallocFromPoolAsync" : "cudaMalloc", __FILE__, __LINE__);
    }
    return Status::Ok();
}

void device_free(void* p, size_t bytes) {
    if (p == nullptr) return;
    DeviceState& d = device_state[t_device];
    if (d.pool)
        cudaFreeAsync(p, thread_stream());
    else
        cudaFree(p);
    release_bytes(bytes);
}

Status resident_upload(const void* host, size_t bytes, void*& device) {
    device = nullptr;
    ExecContext unlimited;  // the cache's own limit applies, not a request's quota
    const int64_t quota = t_request_bytes;
    void* p = nullptr;
    APPROX_TRY(device_alloc(unlimited, bytes, p));
    t_request_bytes = quota;  // resident memory belongs to the service, not to the request
    cudaStream_t stream = thread_stream();
    cudaError_t err = cudaMemcpyAsync(p, host, bytes, cudaMemcpyHostToDevice, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) {
        resident_free(p, bytes);
        return cuda_status(err, "cudaMemcpyAsync", __FILE__, __LINE__);
    }
    device = p;
    return Status::Ok();
}

void resident_free(void* device, size_t bytes) {
    const int64_t quota = t_request_bytes;
    device_free(device, bytes);
    t_request_bytes = quota;
}

const void* resident_device(const ExecContext& ctx, const void* host, size_t bytes) {
    const ResidentInput* r = ctx.resident.find(host);
    if (r && r->device && bytes <= r->bytes) return r->device;
    return nullptr;
}

Status cuda_status(cudaError_t err, const char* what, const char* file, int line) {
    const char* base = file;
    for (const char* c = file; *c; ++c)
        if (*c == '/') base = c + 1;
    StatusCode code = (err == cudaErrorMemoryAllocation) ? StatusCode::GpuOutOfMemory : StatusCode::GpuError;
    return Status::Error(code, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(err), cudaGetErrorString(err),
                         what, base, line);
}

// ---- staged input columns (gpu.hpp) ----------------------------------------------------

namespace {

constexpr int kMaxStagedCols = 8;
constexpr int kRingSlots = 8;
constexpr size_t kSlotBytes = size_t(1) << 20;

// One pinned ring per process, allocated on first use and kept: pinning
// memory costs milliseconds, and one staging uses it at a time.
struct PinnedRing {
    char* base = nullptr;
    cudaEvent_t done[kRingSlots] = {};
    bool pending[kRingSlots] = {};
    int next = 0;
    bool busy = false;
};
PinnedRing ring;

double ms_between(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct StagedColumns {
    int ncols = 0;
    int64_t capacity = 0;
    int64_t queued = 0;  // rows [0, queued) are uploaded or on their way
    bool overflow = false;
    bool finished = false;
    cudaStream_t stream = nullptr;
    void* dev[kMaxStagedCols] = {};
    size_t reserved = 0;
    const void* host[kMaxStagedCols] = {};
    int64_t rows = 0;
    double wait_ms = 0;
};

Status stage_begin(const ExecContext& ctx, int ncols, int64_t capacity, StagedColumns*& out) {
    out = nullptr;
    if (ncols < 1 || ncols > kMaxStagedCols || capacity < 1)
        return Status::Error(StatusCode::InvalidArgument, "stage_begin: %d columns of %lld rows", ncols,
                             static_cast<long long>(capacity));
    cudaStream_t stream;
    APPROX_TRY(begin(ctx, stream));
    if (ring.busy) return Status::Error(StatusCode::Internal, "stage_begin: another staging is running");
    if (ring.base == nullptr) {
        void* p = nullptr;
        APPROX_CUDA(cudaHostAlloc(&p, kRingSlots * kSlotBytes, cudaHostAllocDefault));
        for (int i = 0; i < kRingSlots; ++i) {
            cudaError_t err = cudaEventCreateWithFlags(&ring.done[i], cudaEventDisableTiming);
            if (err != cudaSuccess) {
                for (int j = 0; j < i; ++j) cudaEventDestroy(ring.done[j]);
                cudaFreeHost(p);
                return cuda_status(err, "cudaEventCreateWithFlags", __FILE__, __LINE__);
            }
        }
        ring.base = static_cast<char*>(p);
    }
    std::unique_ptr<StagedColumns> s(new StagedColumns);
    s->ncols = ncols;
    s->capacity = capacity;
    s->stream = stream;
    const size_t bytes = static_cast<size_t>(capacity) * 8;
    for (int c = 0; c < ncols; ++c) {
        Status st = device_alloc(ctx, bytes, s->dev[c]);
        if (!st.ok()) {
            stage_free(s.release());
            return st;
        }
        s->reserved += bytes;
    }
    ring.busy = true;
    for (int i = 0; i < kRingSlots; ++i) ring.pending[i] = false;
    out = s.release();
    return Status::Ok();
}

Status stage_rows(StagedColumns* s, const void* const* host_cols, int64_t first, int64_t n, bool& staged) {
    staged = false;
    if (s == nullptr || s->finished || s->overflow || n <= 0) return Status::Ok();
    if (first != s->queued || first + n > s->capacity) {
        s->overflow = true;  // the engine uploads from the host instead
        return Status::Ok();
    }
    for (int c = 0; c < s->ncols; ++c) {
        const char* src = static_cast<const char*>(host_cols[c]) + first * 8;
        char* dst = static_cast<char*>(s->dev[c]) + first * 8;
        size_t left = static_cast<size_t>(n) * 8;
        while (left > 0) {
            const int slot = ring.next;
            ring.next = (ring.next + 1) % kRingSlots;
            if (ring.pending[slot]) {
                auto t0 = std::chrono::steady_clock::now();
                APPROX_CUDA(cudaEventSynchronize(ring.done[slot]));
                s->wait_ms += ms_between(t0);
            }
            const size_t piece = std::min(left, kSlotBytes);
            char* pinned = ring.base + static_cast<size_t>(slot) * kSlotBytes;
            std::memcpy(pinned, src, piece);
            APPROX_CUDA(cudaMemcpyAsync(dst, pinned, piece, cudaMemcpyHostToDevice, s->stream));
            APPROX_CUDA(cudaEventRecord(ring.done[slot], s->stream));
            ring.pending[slot] = true;
            src += piece;
            dst += piece;
            left -= piece;
        }
    }
    s->queued += n;
    staged = true;
    return Status::Ok();
}

Status stage_finish(StagedColumns* s, const void* const* host_cols, int64_t rows) {
    if (s == nullptr || s->finished) return Status::Ok();
    auto t0 = std::chrono::steady_clock::now();
    cudaError_t err = cudaStreamSynchronize(s->stream);
    s->wait_ms += ms_between(t0);
    s->finished = true;
    ring.busy = false;
    for (int i = 0; i < kRingSlots; ++i) ring.pending[i] = false;
    if (err != cudaSuccess) return cuda_status(err, "cudaStreamSynchronize", __FILE__, __LINE__);
    if (s->overflow || rows != s->queued) {
        s->overflow = true;
        return Status::Ok();
    }
    for (int c = 0; c < s->ncols; ++c) s->host[c] = host_cols[c];
    s->rows = rows;
    return Status::Ok();
}

void stage_free(StagedColumns* s) {
    if (s == nullptr) return;
    if (!s->finished) {
        // Uploads may still read the ring: wait for them before it is reused.
        (void)cudaStreamSynchronize(s->stream);
        (void)cudaGetLastError();
        ring.busy = false;
        for (int i = 0; i < kRingSlots; ++i) ring.pending[i] = false;
    }
    const size_t each = static_cast<size_t>(s->capacity) * 8;
    for (int c = 0; c < s->ncols; ++c)
        if (s->dev[c]) device_free(s->dev[c], each);
    delete s;
}

double stage_wait_ms(const StagedColumns* s) { return s ? s->wait_ms : 0; }

const void* staged_device(const ExecContext& ctx, const void* host, size_t n) {
    for (const StagedColumns* s : ctx.staged) {
        if (s == nullptr || !s->finished || s->overflow || host == nullptr) continue;
        for (int c = 0; c < s->ncols; ++c)
            if (s->host[c] == host && static_cast<int64_t>(n) <= s->rows) return s->dev[c];
    }
    return nullptr;
}

}  // namespace approx::gpu
