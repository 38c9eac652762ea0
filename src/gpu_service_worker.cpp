// The GPU service process (gpu_service.h): the main thread is a plain
// PostgreSQL background worker (signals, latches, configuration); executor
// threads -- one per GPU, or one running the CPU engines -- take requests
// from the shared slots and run the engines. Executors never call PostgreSQL:
// they touch the shared slots with atomics and tell the main thread through
// an eventfd which backends to wake (SetLatch stays on the main thread).
#include "gpu_service.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
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
#include "gpu_service_settings.h"

using approx::Status;
using approx::StatusCode;

namespace {

ServiceShared* sh = nullptr;

std::atomic<bool> stopping{false};
std::atomic<bool> context_broken{false};
std::mutex wake_lock;
std::condition_variable wake_cv;
uint64 wake_count = 0;  // under wake_lock

int event_fd = -1;
std::mutex done_lock;
std::vector<int> done_slots;  // under done_lock: answered slots whose backends the main thread wakes

struct Executor {
    std::thread thread;
    int device = -1;  // -1: the CPU engines
    std::atomic<bool> finished{false};
};
Executor executors[kServiceMaxDevices];
int n_executors = 0;

// The engines' cancel callback takes no argument: one function per executor,
// each reading the cancel flag of the slot its executor runs.
std::atomic<pg_atomic_uint32*> running_cancel[kServiceMaxDevices];
template <int I>
bool executor_cancelled() {
    pg_atomic_uint32* f = running_cancel[I].load();
    return stopping.load() || (f != nullptr && pg_atomic_read_u32(f) != 0);
}
const approx::CancelFn cancel_fns[kServiceMaxDevices] = {
    executor_cancelled<0>, executor_cancelled<1>, executor_cancelled<2>, executor_cancelled<3>,
    executor_cancelled<4>, executor_cancelled<5>, executor_cancelled<6>, executor_cancelled<7>,
};

// The oldest queued request whose test delay has passed, now RUNNING; -1 if none.
int take_request() {
    const double now = glue_clock_ms();
    int best = -1;
    uint64 best_seq = 0;
    for (int i = 0; i < sh->n_slots; ++i) {
        ServiceSlot* s = &sh->slots[i];
        if (pg_atomic_read_u32(&s->state) != SLOT_QUEUED) continue;
        pg_read_barrier();
        if (s->test_delay_ms > 0 && now - s->submitted_ms < s->test_delay_ms) continue;
        if (best < 0 || s->seq < best_seq) {
            best = i;
            best_seq = s->seq;
        }
    }
    if (best < 0) return -1;
    uint32 expected = SLOT_QUEUED;
    if (!pg_atomic_compare_exchange_u32(&sh->slots[best].state, &expected, SLOT_RUNNING)) return -2;  // lost a race
    return best;
}

void publish_cache(void) {
    approx::service::CacheStats c = approx::service::cache_stats();
    sh->cache = c;
    uint64 keys[kServiceCacheKeys];
    int n = approx::service::cache_keys(keys, kServiceCacheKeys);
    // Readers may see a mix of old and new keys: a key seen by mistake costs
    // a retry (the service answers "not resident"), never a wrong answer.
    for (int i = 0; i < n; ++i) sh->cache_keys[i] = keys[i];
    pg_atomic_write_u32(&sh->n_cache_keys, static_cast<uint32>(n));
}

void run_request(int index, int slot_no) {
    const int device = executors[index].device;
    ServiceSlot* s = &sh->slots[slot_no];
    pg_read_barrier();
    const double t0 = glue_clock_ms();
    s->ms_queued = t0 - s->submitted_ms;
    s->device = device;
    s->cache_hit = false;

    approx::ExecContext ctx;
    ctx.mode = device < 0 ? approx::DeviceMode::Cpu : static_cast<approx::DeviceMode>(s->mode);
    ctx.gpu_min_rows = s->gpu_min_rows;
    ctx.cpu_threads = s->cpu_threads;
    ctx.gpu_memory_limit = s->gpu_memory_limit;
    running_cancel[index].store(&s->cancel);
    ctx.cancel = cancel_fns[index];
    s->stats.reset(approx::service::op_name(static_cast<approx::service::Op>(s->op)));
    ctx.stats = &s->stats;

    approx::service::Served r;
    r.op = static_cast<approx::service::Op>(s->op);
    r.n_in = s->n_in;
    r.n_out = s->n_out;
    bool layout_ok = r.n_in >= 0 && r.n_in <= approx::service::kMaxIn && r.n_out >= 0 &&
                     r.n_out <= approx::service::kMaxOut;
    for (int i = 0; layout_ok && i < r.n_in; ++i) {
        layout_ok = s->in_off[i] + s->in_bytes[i] <= sh->staging_size;
        r.in[i] = sh->staging + s->in_off[i];
        r.in_bytes[i] = s->in_bytes[i];
    }
    for (int i = 0; layout_ok && i < r.n_out; ++i) {
        layout_ok = s->out_off[i] + s->out_bytes[i] <= sh->staging_size;
        r.out[i] = sh->staging + s->out_off[i];
        r.out_bytes[i] = s->out_bytes[i];
    }

    Status st;
    approx::ResidentInput resident;
    const approx::service::CacheEntry* pinned = nullptr;
    if (!layout_ok) {
        st = Status::Error(StatusCode::Internal, "GPU service: request outside the staging area");
    } else {
        const int ci = s->cache_in;
        const int cache_device = device < 0 ? 0 : device;
        if (ci >= 0 && ci < r.n_in) {
            pinned = approx::service::cache_find(cache_device, s->cache_key, resident);
            if (pinned) {
                s->cache_hit = true;
                pg_atomic_fetch_add_u64(&sh->cache_hits, 1);
                r.in[ci] = resident.host;
                r.in_bytes[ci] = resident.bytes;
            } else {
                pg_atomic_fetch_add_u64(&sh->cache_misses, 1);
                if (!s->cache_omitted &&
                    approx::service::cache_insert(ctx, cache_device, s->cache_key, r.in[ci], r.in_bytes[ci], pinned,
                                                  resident)
                        .ok())
                    r.in[ci] = resident.host;
            }
            if (pinned) ctx.resident = &resident;
        }
        if (ci >= 0 && s->cache_omitted && pinned == nullptr)
            st = Status::Error(StatusCode::NotServed, "resident input evicted");
        else {
            approx::gpu::request_begin();
            st = approx::service::serve(ctx, r);
        }
    }
    approx::service::cache_unpin(pinned);
    running_cancel[index].store(nullptr);
    if (st.code == StatusCode::GpuError && device >= 0 && !approx::gpu::context_healthy()) context_broken = true;

    s->status_code = static_cast<int32>(st.code);
    memcpy(s->message, st.message, sizeof s->message);
    s->ms_run = glue_clock_ms() - t0;
    pg_atomic_fetch_add_u64(st.ok() ? &sh->requests_done : &sh->requests_failed, 1);
    if (device >= 0 && device < kServiceMaxDevices) sh->pools[device] = approx::gpu::pool_info(device);
    publish_cache();

    pg_write_barrier();
    uint32 expected = SLOT_RUNNING;
    if (pg_atomic_compare_exchange_u32(&s->state, &expected, SLOT_DONE)) {
        std::lock_guard<std::mutex> g(done_lock);
        done_slots.push_back(slot_no);
        uint64 one = 1;
        if (write(event_fd, &one, sizeof one) < 0) {
            // The counter is far from overflowing; a failed write only delays the
            // wake-up until the main thread's next periodic sweep.
        }
    } else {
        // The backend gave up (cancel, terminate): drop the answer and the slot.
        s->staging_bytes = 0;
        pg_write_barrier();
        pg_atomic_write_u32(&s->state, SLOT_FREE);
        pg_atomic_fetch_add_u64(&sh->requests_abandoned, 1);
    }
}

void executor_main(int index) {
    uint64 seen = 0;
    while (!stopping.load() && !context_broken.load()) {
        int slot = take_request();
        if (slot >= 0) {
            try {
                run_request(index, slot);
            } catch (...) {
                // Only a failed allocation of the bookkeeping can land here: answer
                // with an error; the backend polls, so it sees DONE without a wake-up.
                ServiceSlot* s = &sh->slots[slot];
                running_cancel[index].store(nullptr);
                s->status_code = static_cast<int32>(StatusCode::OutOfMemory);
                snprintf(s->message, sizeof s->message, "GPU service: out of host memory");
                pg_write_barrier();
                uint32 expected = SLOT_RUNNING;
                if (!pg_atomic_compare_exchange_u32(&s->state, &expected, SLOT_DONE)) {
                    s->staging_bytes = 0;
                    pg_atomic_write_u32(&s->state, SLOT_FREE);
                }
            }
            continue;
        }
        if (slot == -2) continue;
        std::unique_lock<std::mutex> g(wake_lock);
        wake_cv.wait_for(g, std::chrono::milliseconds(20), [&] { return wake_count != seen || stopping.load(); });
        seen = wake_count;
    }
    executors[index].finished = true;
}

void wake_executors(void) {
    {
        std::lock_guard<std::mutex> g(wake_lock);
        ++wake_count;
    }
    wake_cv.notify_all();
}

void wake_done_backends(void) {
    uint64 count;
    if (read(event_fd, &count, sizeof count) < 0) {
        // EAGAIN: nothing new; the list below is drained anyway.
    }
    std::vector<int> slots;
    {
        std::lock_guard<std::mutex> g(done_lock);
        slots.swap(done_slots);
    }
    for (int i : slots) {
        Latch* latch = sh->slots[i].latch;
        if (latch) SetLatch(latch);
    }
}

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

bool executors_finished(void) {
    for (int i = 0; i < n_executors; ++i)
        if (!executors[i].finished.load()) return false;
    return true;
}

// before_shmem_exit: stop taking requests, cancel what runs, wait a little
// for the executors, then tell every waiting backend (they see ready = 0).
void service_shutdown(int code, Datum arg) {
    stopping = true;
    wake_executors();
    for (int waited = 0; waited < 5000 && !executors_finished(); waited += 10) pg_usleep(10000L);
    pg_atomic_write_u32(&sh->ready, 0);
    sh->service_pid = 0;
    sh->service_latch = nullptr;
    for (int i = 0; i < sh->n_slots; ++i) {
        uint32 st = pg_atomic_read_u32(&sh->slots[i].state);
        if ((st == SLOT_QUEUED || st == SLOT_RUNNING) && sh->slots[i].latch) SetLatch(sh->slots[i].latch);
    }
    if (executors_finished()) {
        for (int i = 0; i < n_executors; ++i)
            if (executors[i].thread.joinable()) executors[i].thread.join();
    }
}

// on_proc_exit (after the shared-memory cleanup, so the postmaster sees a
// clean exit 1): an executor still inside a kernel must not race the CUDA
// runtime's teardown in exit(), so leave without it.
void service_exit_now(int code, Datum arg) {
    if (!executors_finished()) _exit(code);
    for (int i = 0; i < n_executors; ++i)
        if (executors[i].thread.joinable()) executors[i].thread.detach();
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

// Starts the executors with every signal blocked (threads inherit the mask).
bool start_executors(bool gpu) noexcept {
    try {
        approx::SignalBlock block;
        for (int i = 0; i < n_executors; ++i) {
            executors[i].device = gpu ? i : -1;
            executors[i].thread = std::thread([i] {
                if (executors[i].device >= 0) (void)approx::gpu::bind_thread(executors[i].device);
                executor_main(i);
            });
        }
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
    event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (event_fd < 0) ereport(ERROR, (errcode_for_file_access(), errmsg("approx_gpu gpu service: eventfd: %m")));

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

    approx::service::cache_configure(static_cast<int64>(service_cache_size_mb) * 1024 * 1024, start.gpu);
    if (start.gpu)
        n_executors = sh->n_devices;
    else if (cpu_engine)
        n_executors = 1;
    before_shmem_exit(service_shutdown, 0);
    on_proc_exit(service_exit_now, 0);
    if (!start_executors(start.gpu)) {
        stopping = true;
        ereport(ERROR, (errmsg("approx_gpu gpu service: could not start its executor threads")));
    }
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

    WaitEventSet* set = CreateWaitEventSet(CurrentMemoryContext, 3);
    AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
    AddWaitEventToSet(set, WL_POSTMASTER_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
    AddWaitEventToSet(set, WL_SOCKET_READABLE, event_fd, nullptr, nullptr);
    while (!ShutdownRequestPending && !context_broken.load()) {
        WaitEvent events[3];
        int n = WaitEventSetWait(set, 1000, events, 3, PG_WAIT_EXTENSION);
        for (int i = 0; i < n; ++i) {
            if (events[i].events & WL_LATCH_SET) {
                ResetLatch(MyLatch);
                wake_executors();
            }
            if (events[i].events & WL_POSTMASTER_DEATH) proc_exit(1);
            if (events[i].events & WL_SOCKET_READABLE) wake_done_backends();
        }
        if (n == 0) wake_done_backends();  // periodic sweep
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        CHECK_FOR_INTERRUPTS();
    }
    if (context_broken.load())
        ereport(LOG, (errmsg("approx_gpu gpu service: a CUDA error made the context unusable; restarting")));
    proc_exit(1);  // status 1: the postmaster starts a fresh service after bgw_restart_time
}
