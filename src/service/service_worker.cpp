// The GPU service process (service.h): the main thread is a plain
// PostgreSQL background worker (signals, latches, configuration); executor
// threads (service_executor.cpp) -- one per GPU, or one running the CPU
// engines -- take requests from the shared slots and run the engines. They
// never call PostgreSQL; backends and executors wake each other through the
// semaphores in the shared segment (service.h), not through this thread.
#include "service/service_executor.h"

#include <unistd.h>

#include <thread>
#include <vector>

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include "core/hashjoin.hpp"
#include "core/kde.hpp"
#include "core/topk.hpp"
#include "service/service_settings.h"

using approx::Status;
using approx::StatusCode;

namespace {

ServiceShared* sh = nullptr;

// Frees the slots a previous incarnation left queued, running or abandoned:
// their backends have seen the generation change and stopped waiting, or
// will on their next look (they check the owner token before touching a slot).
void reset_stale_slots(uint32 generation) {
    SpinLockAcquire(&sh->lock);
    for (int i = 0; i < sh->n_slots; ++i) {
        ServiceSlot* s = &sh->slots[i];
        uint32 st = pg_atomic_read_u32(&s->state);
        if ((st == SLOT_QUEUED || st == SLOT_RUNNING || st == SLOT_ABANDONED) && s->generation != generation) {
            s->staging_bytes = 0;
            pg_atomic_write_u32(&s->state, SLOT_FREE);
        }
    }
    SpinLockRelease(&sh->lock);
}

// for the executors, then tell every waiting backend (they see ready = 0).
void service_shutdown(int code, Datum arg) {
    service_executor::stop();
    for (int waited = 0; waited < 5000 && !service_executor::finished(); waited += 10) pg_usleep(10000L);
    pg_atomic_write_u32(&sh->ready, 0);
    sh->service_pid = 0;
    sh->service_latch = nullptr;
    for (int i = 0; i < sh->n_slots; ++i) {
        uint32 st = pg_atomic_read_u32(&sh->slots[i].state);
        if (st == SLOT_QUEUED || st == SLOT_RUNNING) (void)sem_post(&sh->slots[i].answered);
    }
    if (service_executor::finished()) service_executor::join_or_detach();
}

// on_proc_exit (after the shared-memory cleanup, so the postmaster sees a
// clean exit 1): an executor still inside a kernel must not race the CUDA
// runtime's teardown in exit(), so leave without it.
void service_exit_now(int code, Datum arg) {
    if (!service_executor::finished()) _exit(code);
    service_executor::join_or_detach();
}

struct StartResult {
    bool gpu = false;    // the service runs the GPU engines
    bool found = false;  // a usable GPU is there
    char why[256] = {0};
    int n_devices = 0;
    approx::gpu::DeviceInfo devices[kServiceMaxDevices];
    int runtime_version = 0, driver_version = 0;
    bool registered = false;
};

// CUDA initialisation, on a thread of its own (the main thread makes no CUDA call).
void start_gpu(StartResult& r, bool cpu_engine) {
    // Load every kernel when the context is created, not at its first
    // launch (CUDA's lazy default): the service pays it once at start, and
    // no backend's first call does.
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    r.found = approx::gpu::available(r.why, sizeof r.why);  // said even under service_engine = cpu
    r.gpu = r.found && !cpu_engine;
    if (!r.gpu) return;
    r.n_devices = approx::gpu::devices(r.devices, kServiceMaxDevices);
    if (r.n_devices > kServiceMaxDevices) r.n_devices = kServiceMaxDevices;
    approx::gpu::versions(r.runtime_version, r.driver_version);
    const int64 limit = static_cast<int64>(service_memory_limit_mb) * 1024 * 1024;
    for (int d = 0; d < r.n_devices; ++d) {
        Status st = approx::gpu::pool_configure(d, limit);
        if (!st.ok()) {
            snprintf(r.why, sizeof r.why, "device %d: %.200s", d, st.message);
            r.found = false;
            r.gpu = false;
            return;
        }
    }
    // A tiny call of each GPU engine on every device: the pool takes its first
    // block and the first launches are paid here, not by a backend.
    for (int d = 0; d < r.n_devices; ++d) {
        if (!approx::gpu::bind_thread(d).ok()) continue;
        approx::ExecContext warm;
        warm.mode = approx::DeviceMode::Gpu;
        double x[64];
        int64_t ids[64], out_ids[4];
        double out_scores[4], h = 0;
        for (int i = 0; i < 64; ++i) {
            x[i] = (i * 37 % 64) + 0.5 * (i % 3);
            ids[i] = i;
        }
        size_t got = 0;
        (void)approx::topk::select(ids, x, 64, 4, approx::topk::Order::Desc, warm, out_ids, out_scores, got);
        (void)approx::kde::plugin_bandwidth(x, 64, approx::kde::PluginTarget::Density, warm, h);
        approx::hashjoin::JoinSide side;
        side.keys = ids;
        side.n = 64;
        approx::hashjoin::JoinInfo info;
        (void)approx::hashjoin::join_count(side, side, warm, info);
    }
    (void)approx::gpu::bind_thread(0);
    // Pinned once for every later request: copies from it need no bounce buffer.
    r.registered = approx::gpu::host_register(sh->staging, sh->staging_size).ok();
}

// Runs fn on a thread of its own, every signal blocked, and waits for it.
template <class Fn>
bool run_on_thread(Fn&& fn) noexcept {
    try {
        approx::SignalBlock block;
        std::thread t(fn);
        t.join();
        return true;
    } catch (...) {
        return false;
    }
}

}  // namespace

extern "C" PGDLLEXPORT void approx_gpu_service_main(Datum arg) {
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);

    sh = gpu_service_shared();
    if (sh == nullptr) ereport(ERROR, (errmsg("approx_gpu gpu service: shared memory is missing")));
    const uint32 generation = pg_atomic_add_fetch_u32(&sh->generation, 1);
    reset_stale_slots(generation);

    const bool cpu_engine = service_engine == SERVICE_ENGINE_CPU;
    StartResult start;
    if (!run_on_thread([&] { start_gpu(start, cpu_engine); }))
        ereport(ERROR, (errmsg("approx_gpu gpu service: could not start a thread")));

    sh->gpu_usable = start.gpu;
    sh->gpu_found = start.found;
    sh->cpu_engine = cpu_engine;
    strlcpy(sh->why, start.why, sizeof sh->why);
    sh->n_devices = start.gpu ? start.n_devices : 0;
    for (int d = 0; d < sh->n_devices; ++d) sh->devices[d] = start.devices[d];
    sh->runtime_version = start.runtime_version;
    sh->driver_version = start.driver_version;
    sh->service_pid = MyProcPid;
    sh->service_latch = MyLatch;
    sh->started_at = GetCurrentTimestamp();
    sh->starts += 1;

    pg_atomic_write_u64(&sh->session_objects, 0);  // an earlier incarnation's objects died with it
    approx::service::cache_configure(static_cast<int64>(service_cache_size_mb) * 1024 * 1024, start.gpu);
    const int n_executors = start.gpu ? sh->n_devices : cpu_engine ? 1 : 0;
    before_shmem_exit(service_shutdown, 0);
    on_proc_exit(service_exit_now, 0);
    if (!service_executor::start(sh, n_executors, start.gpu))
        ereport(ERROR, (errmsg("approx_gpu gpu service: could not start its executor threads")));
    pg_write_barrier();
    pg_atomic_write_u32(&sh->ready, 1);
    if (start.gpu)
        ereport(LOG, (errmsg("approx_gpu gpu service: %d GPU(s), pool limit %d MB each, staging %d MB%s", sh->n_devices,
                             service_memory_limit_mb, service_staging_size_mb,
                             start.registered ? "" : " (not page-locked)")));
    else
        ereport(LOG, (errmsg("approx_gpu gpu service: %s; %s", start.found ? "a GPU is present" : start.why,
                             cpu_engine ? "the service runs the CPU engines (approx_gpu.service_engine = cpu)"
                                        : "no GPU: calls run in the backends")));

    while (!ShutdownRequestPending && !service_executor::context_broken()) {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000, PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        service_executor::wake();  // a look at the queue at least every second
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        CHECK_FOR_INTERRUPTS();
    }
    if (service_executor::context_broken())
        ereport(LOG, (errmsg("approx_gpu gpu service: a CUDA error made the context unusable; restarting")));
    proc_exit(1);  // status 1: the postmaster starts a fresh service after bgw_restart_time
}
