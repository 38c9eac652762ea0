// ExecContext, RunStats and the CPU/GPU dispatcher shared by every engine.
//
// The glue fills an ExecContext from the approx_gpu.* settings; an engine's
// public function calls dispatch() once, which picks the device, runs the CPU
// or GPU implementation behind a catch-all, and records what ran in RunStats.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>

#include "status.hpp"

namespace approx {

enum class DeviceMode { Auto, Gpu, Cpu };
enum class Device { Cpu, Gpu };

const char* device_name(Device d);

// What the last engine call did; the glue turns it into approx_gpu.last_run().
// Fixed-size on purpose (trivially destructible, see status.hpp).
struct RunStats {
    static constexpr int kMaxExtra = 24;
    struct Extra {
        char key[40];
        double value;
    };

    char op[64] = {0};
    Device device = Device::Cpu;
    int cpu_threads = 1;
    int64_t rows = 0;          // rows (or points) the engine worked on
    int64_t rows_skipped = 0;  // NULL rows/elements skipped by the glue
    double ms_read = 0;        // reading input (arrays, SPI) in the glue
    double ms_transfer = 0;    // host <-> device copies
    double ms_compute = 0;     // engine work
    char notice[256] = {0};    // e.g. "GPU allocation failed; ran on the CPU"
    Extra extra[kMaxExtra] = {};
    int n_extra = 0;

    void reset(const char* op_name);
    void add(const char* key, double value);  // adds or overwrites a named number
    double get(const char* key, double missing = -1) const;  // a named number, or `missing`
};

// Cancel callback supplied by the glue: true when the query should stop
// (QueryCancelPending / ProcDiePending). Never longjmps; safe from any thread.
using CancelFn = bool (*)();

namespace gpu {
struct StagedColumns;  // gpu.hpp
}

struct ExecContext;
namespace service {
struct Request;  // service.hpp
// Sends one request to the GPU service and waits for its answer (the glue's
// backend side, src/service/service_client.cpp).
using Transport = Status (*)(const ExecContext& ctx, Request& req);
}  // namespace service

// An input the GPU service keeps on the device between calls (service.hpp's
// resident cache): the engine that is handed `host` uses `device` instead of
// uploading it (gpu::resident_device()).
struct ResidentInput {
    const void* host = nullptr;
    const void* device = nullptr;
    size_t bytes = 0;
};

// The resident inputs of one service request (up to service::kMaxCached: a
// star join keeps its fact table and its dimension tables, each under its
// own key). Engines look theirs up by the host pointer they were handed.
constexpr int kMaxResident = 2;
struct ResidentInputs {
    ResidentInput in[kMaxResident];
    int n = 0;
    void add(const ResidentInput& r) {
        if (n < kMaxResident) in[n++] = r;
    }
    // The entry whose host copy is `host`, or null.
    const ResidentInput* find(const void* host) const {
        for (int i = 0; host && i < n; ++i)
            if (in[i].host == host) return &in[i];
        return nullptr;
    }
};

struct ExecContext {
    DeviceMode mode = DeviceMode::Auto;
    int64_t gpu_min_rows = 10000;
    int cpu_threads = 1;
    int64_t gpu_memory_limit = 0;  // bytes one backend may allocate on the GPU; 0 = no cap
    CancelFn cancel = nullptr;
    RunStats* stats = nullptr;  // may be null (unit tests)
    // Inputs already on the GPU (gpu.hpp, stage_begin): up to two read inputs.
    const gpu::StagedColumns* staged[2] = {nullptr, nullptr};
    // Backends: the GPU service's transport when calls go to the service
    // (library preloaded, service up, approx_gpu.use_service on), else null.
    service::Transport service = nullptr;
    // The service: this request's inputs that are resident on the device.
    ResidentInputs resident;

    bool cancelled() const { return cancel != nullptr && cancel(); }
};

Status cancelled_status();

// Runs fn(), turning any escaping exception into a Status (the engines'
// no-throw boundary).
template <class Fn>
Status guarded(Fn&& fn) noexcept {
    try {
        return fn();
    } catch (const std::bad_alloc&) {
        return Status::Error(StatusCode::OutOfMemory, "out of host memory");
    } catch (const std::exception& e) {
        return Status::Error(StatusCode::Internal, "internal error: %s", e.what());
    } catch (...) {
        return Status::Error(StatusCode::Internal, "internal error: unknown C++ exception");
    }
}

// The one CPU/GPU decision, for an input of `rows` under ctx.mode: dispatch()
// runs the device it picks, and work done ahead of the engine call asks it
// through will_run_on_gpu(), so the two cannot disagree. Returns an error only
// for mode = Gpu without a GPU.
Status choose_device(const ExecContext& ctx, int64_t rows, Device& out);

// Whether dispatch() under ctx would run the GPU implementation for `rows`
// (choose_device() picks the GPU without an error): e.g. the relation reader
// uploading its rows while it reads them.
bool will_run_on_gpu(const ExecContext& ctx, int64_t rows) noexcept;

bool gpu_compiled_in();

// Run the CPU or the GPU implementation. Under `auto`, a GPU out-of-memory
// reruns on the CPU and leaves a notice in ctx.stats.
template <class CpuFn, class GpuFn>
Status dispatch(const ExecContext& ctx, int64_t rows, CpuFn&& cpu, GpuFn&& gpu) noexcept {
    Device device;
    Status st = guarded([&] { return choose_device(ctx, rows, device); });
    if (!st.ok()) return st;
    if (ctx.stats) {
        ctx.stats->device = device;
        ctx.stats->cpu_threads = device == Device::Cpu ? ctx.cpu_threads : 0;
    }
    auto t0 = std::chrono::steady_clock::now();
    if (device == Device::Gpu) {
        st = guarded(gpu);
        if (st.code == StatusCode::GpuOutOfMemory && ctx.mode == DeviceMode::Auto) {
            if (ctx.stats) {
                std::snprintf(ctx.stats->notice, sizeof ctx.stats->notice,
                              "GPU allocation failed (%.180s); ran on the CPU instead", st.message);
                ctx.stats->device = Device::Cpu;
                ctx.stats->cpu_threads = ctx.cpu_threads;
            }
            st = guarded(cpu);
        }
    } else {
        st = guarded(cpu);
    }
    if (ctx.stats && ctx.stats->ms_compute == 0) {
        std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
        ctx.stats->ms_compute = ms.count() - ctx.stats->ms_transfer;
    }
    return st;
}

// Feature code writes APPROX_GPU(gpu_function(args...)) as dispatch()'s GPU
// argument, so a CPU-only build never references the CUDA objects.
#ifdef APPROX_WITH_CUDA
#define APPROX_GPU(expr) [&]() -> ::approx::Status { return (expr); }
#else
#define APPROX_GPU(expr) \
    [&]() -> ::approx::Status { return ::approx::Status::Error(::approx::StatusCode::NoGpu, "built without CUDA"); }
#endif

// Runs body(task, worker) for task in [0, n_tasks) on up to ctx.cpu_threads
// threads (all signals blocked in them, so PostgreSQL's handlers only run in
// the backend's main thread). Tasks are handed out dynamically; the cancel
// callback is polled between tasks. body returns a Status; the first error
// stops the rest.
template <class Body>
Status parallel_for(const ExecContext& ctx, size_t n_tasks, Body&& body);

// Wall-clock helper for RunStats.
class Stopwatch {
public:
    Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
    double ms() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    }

private:
    std::chrono::steady_clock::time_point t0_;
};

}  // namespace approx

#include "parallel.hpp"
