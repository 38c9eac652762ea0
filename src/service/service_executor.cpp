// The GPU service's executor threads (service.h): one per GPU, or one
// running the CPU engines. They sleep on their semaphore, take requests from
// the shared slots with compare-and-swap, run the engines, and post the
// slot's semaphore, which wakes its backend. Nothing here calls PostgreSQL:
// only atomics and semaphores in the shared segment (and glue_clock_ms, a
// plain clock_gettime).
#include "service/service_executor.h"
#include "service/service_settings.h"

#include <atomic>
#include <thread>

using approx::Status;
using approx::StatusCode;

namespace {

ServiceShared* sh = nullptr;  // set by start()

std::atomic<bool> stopping{false};
std::atomic<bool> context_broken{false};

struct Executor {
    std::thread thread;
    int device = -1;  // -1: the CPU engines
    std::atomic<bool> finished{false};
};
Executor executors[kServiceMaxDevices];
int n_executors = 0;

// The engines' cancel callback takes no argument: one function per executor,
// each reading the cancel flag of the slot its executor runs and its time
// limit (approx_gpu.service_request_limit; the engines ask between chunks).
std::atomic<pg_atomic_uint32*> running_cancel[kServiceMaxDevices];
std::atomic<double> running_deadline[kServiceMaxDevices];  // glue_clock_ms(); 0: none
template <int I>
bool executor_cancelled() {
    pg_atomic_uint32* f = running_cancel[I].load();
    const double deadline = running_deadline[I].load();
    return stopping.load() || (f != nullptr && pg_atomic_read_u32(f) != 0) ||
           (deadline > 0 && glue_clock_ms() > deadline);
}
const approx::CancelFn cancel_fns[kServiceMaxDevices] = {
    executor_cancelled<0>, executor_cancelled<1>, executor_cancelled<2>, executor_cancelled<3>,
    executor_cancelled<4>, executor_cancelled<5>, executor_cancelled<6>, executor_cancelled<7>,
};

// Whether executor `index` runs a request for `affinity` (Request::device):
// any executor when -1, else that device's; executor 0 takes what names no
// device of this incarnation (a request on state an earlier service held:
// the answer is that it is gone).
bool takes(int index, int32 affinity) {
    if (affinity < 0 || affinity == executors[index].device) return true;
    const bool held_here = sh->gpu_usable && affinity < n_executors;
    return index == 0 && !held_here;
}

// The oldest queued request for this executor whose test delay has passed,
// now RUNNING; -1 if none.
int take_request(int index) {
    const double now = glue_clock_ms();
    int best = -1;
    uint64 best_seq = 0;
    for (int i = 0; i < sh->n_slots; ++i) {
        ServiceSlot* s = &sh->slots[i];
        if (pg_atomic_read_u32(&s->state) != SLOT_QUEUED) continue;
        pg_read_barrier();
        if (s->test_delay_ms > 0 && now - s->submitted_ms < s->test_delay_ms) continue;
        if (!takes(index, s->device_affinity)) continue;
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

bool owner_alive(uint64_t owner) { return gpu_service_session_alive(sh, owner); }

// Frees what this device keeps for sessions that have ended (moving-object
// indexes, closure results).
void reap(int device) {
    pg_atomic_write_u64(&sh->session_objects, static_cast<uint64>(approx::service::reap_held(device, owner_alive)));
}

// Publishes the answer of a RUNNING slot: DONE, and its backend woken -- or,
// when the backend gave up meanwhile (cancel, terminate), the answer and the
// slot are dropped.
void finish_request(int slot_no) {
    ServiceSlot* s = &sh->slots[slot_no];
    pg_write_barrier();
    uint32 expected = SLOT_RUNNING;
    if (!s->detached && pg_atomic_compare_exchange_u32(&s->state, &expected, SLOT_DONE)) {
        (void)sem_post(&s->answered);  // fails only on overflow: the backend's next look finds DONE anyway
        return;
    }
    // Nobody waits (a detached request), or nobody waits any more (abandoned).
    s->staging_bytes = 0;
    pg_write_barrier();
    pg_atomic_write_u32(&s->state, SLOT_FREE);
    if (!s->detached) pg_atomic_fetch_add_u64(&sh->requests_abandoned, 1);
}

void run_request(int index, int slot_no) {
    const int device = executors[index].device;
    ServiceSlot* s = &sh->slots[slot_no];
    pg_read_barrier();
    const double t0 = glue_clock_ms();
    s->ms_queued = t0 - s->submitted_ms;
    s->device = device;
    for (bool& h : s->cache_hit) h = false;

    approx::ExecContext ctx;
    ctx.mode = device < 0 ? approx::DeviceMode::Cpu : static_cast<approx::DeviceMode>(s->mode);
    ctx.gpu_min_rows = s->gpu_min_rows;
    ctx.cpu_threads = s->cpu_threads;
    ctx.gpu_memory_limit = s->gpu_memory_limit;
    running_cancel[index].store(&s->cancel);
    running_deadline[index].store(s->time_limit_ms > 0 ? t0 + s->time_limit_ms : 0);
    ctx.cancel = cancel_fns[index];
    s->stats.reset(approx::service::op_name(static_cast<approx::service::Op>(s->op)));
    ctx.stats = &s->stats;

    approx::service::Served r;
    r.op = static_cast<approx::service::Op>(s->op);
    r.owner = s->owner;
    r.incarnation = pg_atomic_read_u32(&sh->generation);
    r.device = device;
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
    approx::service::CachedInputs pins;  // unpinned below, or by its destructor
    if (!layout_ok) {
        st = Status::Error(StatusCode::Internal, "GPU service: request outside the staging area");
    } else {
        st = approx::service::pin_cached(ctx, device < 0 ? 0 : device, s->n_cached, s->cache_in, s->cache_key,
                                         s->cache_omitted, r, pins);
        for (int k = 0; k < pins.looked; ++k) {
            s->cache_hit[k] = pins.hit[k];
            pg_atomic_fetch_add_u64(pins.hit[k] ? &sh->cache_hits : &sh->cache_misses, 1);
        }
        if (!st.ok()) {
            // an omitted input evicted (NotServed: the backend sends it), or a bad request
        } else if (s->test_fault == SERVICE_FAULT_ERROR)
            st = Status::Error(StatusCode::GpuError, "a GPU error injected by approx_gpu.service_test_fault");
        else if (s->test_fault == SERVICE_FAULT_TRAP)
            st = device >= 0 ? approx::gpu::test_trap()
                             : Status::Error(StatusCode::GpuError,
                                             "a GPU error injected by approx_gpu.service_test_fault "
                                             "(trap: the service runs the CPU engines)");
        else {
            approx::gpu::request_begin();
            st = approx::service::serve(ctx, r);
        }
    }
    pins.unpin();
    running_cancel[index].store(nullptr);
    running_deadline[index].store(0);
    // A stop the backend did not ask for is not its cancel (57014 tells the
    // client that it cancelled): the service stopping is "service down", the
    // time limit "busy" -- both run on the CPU in the backend under auto.
    if (st.code == StatusCode::Cancelled && pg_atomic_read_u32(&s->cancel) == 0) {
        if (stopping.load())
            st = Status::Error(StatusCode::ServiceDown, "the GPU service stopped while the call was running");
        else if (s->time_limit_ms > 0)
            st = Status::Error(StatusCode::ServiceBusy,
                               "the call ran past approx_gpu.service_request_limit (%d ms) in the GPU service",
                               s->time_limit_ms);
    }
    if (st.code == StatusCode::GpuError && device >= 0 && !approx::gpu::context_healthy()) context_broken = true;

    s->status_code = static_cast<int32>(st.code);
    memcpy(s->message, st.message, sizeof s->message);
    s->ms_run = glue_clock_ms() - t0;
    pg_atomic_fetch_add_u64(st.ok() ? &sh->requests_done : &sh->requests_failed, 1);
    if (device >= 0 && device < kServiceMaxDevices) sh->pools[device] = approx::gpu::pool_info(device);
    publish_cache();
    if (r.op == approx::service::Op::MovingIndex || r.op == approx::service::Op::Closure) reap(device);

    finish_request(slot_no);
}

// Sleeps until a backend posts this executor's semaphore, or 20 ms; then
// takes the other posts too (the scan that follows sees every request queued
// before them).
void wait_for_work(int index) {
    sem_t* sem = &sh->executor_wake[index];
    gpu_service_sem_wait(sem, 20);
    while (sem_trywait(sem) == 0) {
    }
}

void executor_main(int index) {
    uint32 owners_seen = pg_atomic_read_u32(&sh->owners_changed);
    while (!stopping.load() && !context_broken.load()) {
        const uint32 owners_now = pg_atomic_read_u32(&sh->owners_changed);
        if (owners_now != owners_seen) {  // a session ended: free what it left here
            owners_seen = owners_now;
            reap(executors[index].device);
        }
        int slot = take_request(index);
        if (slot >= 0) {
            try {
                run_request(index, slot);
            } catch (...) {
                // Only a failed allocation of the bookkeeping can land here: answer
                // with an error.
                ServiceSlot* s = &sh->slots[slot];
                running_cancel[index].store(nullptr);
                s->status_code = static_cast<int32>(StatusCode::OutOfMemory);
                snprintf(s->message, sizeof s->message, "GPU service: out of host memory");
                finish_request(slot);
            }
            continue;
        }
        if (slot == -2) continue;
        wait_for_work(index);
    }
    executors[index].finished = true;
}

}  // namespace

namespace service_executor {

bool start(ServiceShared* shared, int n, bool gpu) noexcept {
    sh = shared;
    n_executors = n;
    sh->n_executors = n;
    // Every signal blocked while they start: the threads inherit the mask.
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
        stopping = true;
        return false;
    }
}

void wake() { gpu_service_wake_executors(sh); }

void stop() {
    stopping = true;
    wake();
}

bool finished() {
    for (int i = 0; i < n_executors; ++i)
        if (!executors[i].finished.load()) return false;
    return true;
}

// before_shmem_exit: stop taking requests, cancel what runs, wait a little

void join_or_detach() {
    const bool all_returned = finished();
    for (int i = 0; i < n_executors; ++i)
        if (executors[i].thread.joinable()) {
            if (all_returned)
                executors[i].thread.join();
            else
                executors[i].thread.detach();
        }
}

bool context_broken() { return ::context_broken.load(); }

}  // namespace service_executor
