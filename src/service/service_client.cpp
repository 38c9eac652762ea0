// The backends' side of the GPU service (service.h): the transport that
// ExecContext::service points at, and gpu_service_info().
//
// The transport runs inside an engine call (C++ frames with destructors on
// the stack), so it never raises: a cancel, a timeout or a service that went
// away come back as a Status, and the glue raises after the engine returns.
#include "service/service.h"

#include <algorithm>

extern "C" {
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "utils/timestamp.h"
}

#include "runtime/jsonb_builder.h"
#include "service/service_settings.h"

using approx::Status;
using approx::StatusCode;

namespace {

uint64 align_up(uint64 v) { return (v + 63) & ~uint64(63); }

bool interrupted() { return QueryCancelPending || ProcDiePending; }

// First fit among the live allocations. Caller holds sh->lock.
bool staging_alloc(ServiceShared* sh, uint64 bytes, uint64& off) {
    struct Range {
        uint64 off, bytes;
    };
    Range live[kServiceMaxSlots];
    int n = 0;
    for (int i = 0; i < sh->n_slots && n < kServiceMaxSlots; ++i) {
        const ServiceSlot* s = &sh->slots[i];
        if (pg_atomic_read_u32(const_cast<pg_atomic_uint32*>(&s->state)) != SLOT_FREE && s->staging_bytes > 0)
            live[n++] = Range{s->staging_off, s->staging_bytes};
    }
    std::sort(live, live + n, [](const Range& a, const Range& b) { return a.off < b.off; });
    uint64 at = 0;
    for (int i = 0; i < n; ++i) {
        if (live[i].off >= at + bytes) break;
        at = std::max(at, align_up(live[i].off + live[i].bytes));
    }
    if (at + bytes > sh->staging_size) return false;
    off = at;
    return true;
}

bool key_resident(ServiceShared* sh, uint64 key) {
    uint32 n = std::min<uint32>(pg_atomic_read_u32(&sh->n_cache_keys), kServiceCacheKeys);
    for (uint32 i = 0; i < n; ++i)
        if (sh->cache_keys[i] == key) return true;
    return false;
}

void wait_a_little(long ms) {
    int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH, ms, PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    (void)rc;  // postmaster death: the ready flag and the next look decide
}

// Stops waiting for slot `no` (if it is still ours): a queued call is taken
// back; a running one is cancelled and left for the service to free.
void give_up(ServiceShared* sh, int no, uint64 seq) {
    ServiceSlot* s = &sh->slots[no];
    SpinLockAcquire(&sh->lock);
    if (s->seq == seq) {
        pg_atomic_write_u32(&s->cancel, 1);
        for (;;) {
            uint32 st = pg_atomic_read_u32(&s->state);
            if (st == SLOT_QUEUED || st == SLOT_DONE || st == SLOT_FILLING) {
                if (pg_atomic_compare_exchange_u32(&s->state, &st, SLOT_FREE)) {
                    s->staging_bytes = 0;
                    break;
                }
            } else if (st == SLOT_RUNNING) {
                if (pg_atomic_compare_exchange_u32(&s->state, &st, SLOT_ABANDONED)) break;
            } else {
                break;  // FREE (a new service freed it) or already ABANDONED
            }
        }
    }
    SpinLockRelease(&sh->lock);
}

// Whether input i goes without its bytes: omit's bit k set for the cacheable input k that it is.
bool omitted(const approx::service::Request& req, unsigned omit, int i) {
    for (int k = 0; k < req.n_cached; ++k)
        if ((omit >> k & 1u) && req.cache_in[k] == i) return true;
    return false;
}

void merge_stats(const approx::ExecContext& ctx, const ServiceSlot* s, double ms_round_trip) {
    if (ctx.stats == nullptr) return;
    approx::RunStats& mine = *ctx.stats;
    const approx::RunStats& theirs = s->stats;
    mine.device = s->device >= 0 ? theirs.device : approx::Device::Cpu;
    mine.cpu_threads = theirs.cpu_threads;
    if (theirs.rows) mine.rows = theirs.rows;
    mine.ms_transfer = theirs.ms_transfer;
    mine.ms_compute = theirs.ms_compute;
    if (theirs.notice[0]) memcpy(mine.notice, theirs.notice, sizeof mine.notice);
    for (int i = 0; i < theirs.n_extra && i < approx::RunStats::kMaxExtra; ++i)
        mine.add(theirs.extra[i].key, theirs.extra[i].value);
    mine.add("service_ms_queued", s->ms_queued);
    mine.add("service_ms_run", s->ms_run);  // the engine call in the service, all of it
    mine.add("service_ms_round_trip", ms_round_trip);
    // 1 only when every cacheable input was resident: nothing cacheable was copied to the device.
    if (s->n_cached > 0) {
        bool all = true;
        for (int k = 0; k < s->n_cached && k < approx::service::kMaxCached; ++k) all = all && s->cache_hit[k];
        mine.add("service_resident_hit", all ? 1 : 0);
    }
}

// omit: bit k set when cacheable input k goes without its bytes.
Status send_and_wait(ServiceShared* sh, const approx::ExecContext& ctx, approx::service::Request& req, unsigned omit) {
    const double t0 = glue_clock_ms();
    const double timeout = service_queue_timeout_ms;
    uint64 need = 0;
    for (int i = 0; i < req.n_in; ++i)
        if (!omitted(req, omit, i)) need += align_up(req.in_bytes[i]);
    for (int i = 0; i < req.n_out; ++i) need += align_up(req.out_bytes[i]);
    if (need > sh->staging_size) {
        pg_atomic_fetch_add_u64(&sh->requests_not_served, 1);
        return Status::Error(StatusCode::NotServed, "the call's %llu bytes pass approx_gpu.service_staging_size",
                             static_cast<unsigned long long>(need));
    }

    // A free slot and room in the staging area.
    int no = -1;
    uint64 off = 0, seq = 0;
    for (;;) {
        if (pg_atomic_read_u32(&sh->ready) == 0)
            return Status::Error(StatusCode::ServiceDown, "the GPU service is not running");
        SpinLockAcquire(&sh->lock);
        for (int i = 0; i < sh->n_slots; ++i)
            if (pg_atomic_read_u32(&sh->slots[i].state) == SLOT_FREE) {
                if (staging_alloc(sh, need, off)) no = i;
                break;
            }
        if (no >= 0) {
            ServiceSlot* s = &sh->slots[no];
            seq = pg_atomic_fetch_add_u64(&sh->next_seq, 1);
            s->seq = seq;
            s->staging_off = off;
            s->staging_bytes = need;
            while (sem_trywait(&s->answered) == 0) {
                // a post its previous request did not consume
            }
            pg_atomic_write_u32(&s->state, SLOT_FILLING);
        }
        SpinLockRelease(&sh->lock);
        if (no >= 0) break;
        if (req.detached)  // it must not wait: what it would free goes when this backend exits
            return Status::Error(StatusCode::ServiceBusy, "the GPU service's queue is full");
        if (interrupted()) return approx::cancelled_status();
        if (glue_clock_ms() - t0 > timeout) {
            pg_atomic_fetch_add_u64(&sh->requests_timed_out, 1);
            return Status::Error(StatusCode::ServiceBusy,
                                 "the GPU service's queue stayed full for %d ms (approx_gpu.gpu_queue_timeout)",
                                 service_queue_timeout_ms);
        }
        wait_a_little(5);
    }

    // The request: inputs copied once, into the staging area.
    ServiceSlot* s = &sh->slots[no];
    uint64 at = off;
    s->n_in = req.n_in;
    s->n_out = req.n_out;
    for (int i = 0; i < req.n_in; ++i) {
        s->in_bytes[i] = req.in_bytes[i];
        if (omitted(req, omit, i)) {
            s->in_off[i] = 0;
            continue;
        }
        s->in_off[i] = at;
        if (req.in_bytes[i]) memcpy(sh->staging + at, req.in[i], req.in_bytes[i]);
        at += align_up(req.in_bytes[i]);
    }
    for (int i = 0; i < req.n_out; ++i) {
        s->out_off[i] = at;
        s->out_bytes[i] = req.out_bytes[i];
        at += align_up(req.out_bytes[i]);
    }
    s->op = static_cast<uint32>(req.op);
    s->mode = static_cast<int32>(ctx.mode);
    s->gpu_min_rows = ctx.gpu_min_rows;
    s->cpu_threads = ctx.cpu_threads;
    s->gpu_memory_limit = ctx.gpu_memory_limit;
    s->test_delay_ms = service_test_delay_ms;
    s->time_limit_ms = service_request_limit_ms;
    s->test_fault = service_test_fault;
    s->rows = req.rows;
    s->n_cached = req.n_cached;
    for (int k = 0; k < approx::service::kMaxCached; ++k) {
        s->cache_in[k] = k < req.n_cached ? req.cache_in[k] : -1;
        s->cache_key[k] = k < req.n_cached ? req.cache_key[k] : 0;
        s->cache_omitted[k] = k < req.n_cached && (omit >> k & 1u);
    }
    s->device_affinity = req.device;
    s->detached = req.detached;
    s->owner = gpu_service_session_token();
    s->backend_pid = MyProcPid;
    const uint32 generation = pg_atomic_read_u32(&sh->generation);
    s->generation = generation;
    pg_atomic_write_u32(&s->cancel, 0);
    const double submitted = glue_clock_ms();
    s->submitted_ms = submitted;
    pg_write_barrier();
    pg_atomic_write_u32(&s->state, SLOT_QUEUED);
    gpu_service_wake_executors(sh);
    if (req.detached) return Status::Ok();  // the slot is the service's now: it frees it when done

    for (;;) {
        uint32 state = pg_atomic_read_u32(&s->state);
        if (state == SLOT_DONE) {
            pg_read_barrier();
            Status st;
            st.code = static_cast<StatusCode>(s->status_code);
            memcpy(st.message, s->message, sizeof st.message);
            st.message[sizeof st.message - 1] = '\0';
            if (st.ok())
                for (int i = 0; i < req.n_out; ++i)
                    if (req.out_bytes[i]) memcpy(req.out[i], sh->staging + s->out_off[i], req.out_bytes[i]);
            if (st.code != StatusCode::NotServed) merge_stats(ctx, s, glue_clock_ms() - t0);
            SpinLockAcquire(&sh->lock);
            s->staging_bytes = 0;
            pg_atomic_write_u32(&s->state, SLOT_FREE);
            SpinLockRelease(&sh->lock);
            return st;
        }
        if (interrupted()) {
            give_up(sh, no, seq);
            return approx::cancelled_status();
        }
        if (pg_atomic_read_u32(&sh->ready) == 0 || pg_atomic_read_u32(&sh->generation) != generation ||
            state == SLOT_FREE || s->seq != seq || !PostmasterIsAlive()) {
            give_up(sh, no, seq);
            return Status::Error(StatusCode::ServiceDown, "the GPU service exited while the call was %s",
                                 state == SLOT_RUNNING ? "running" : "queued");
        }
        if (state == SLOT_QUEUED && glue_clock_ms() - submitted > timeout) {
            give_up(sh, no, seq);
            pg_atomic_fetch_add_u64(&sh->requests_timed_out, 1);
            return Status::Error(StatusCode::ServiceBusy,
                                 "waited %d ms for the GPU service to start the call (approx_gpu.gpu_queue_timeout)",
                                 service_queue_timeout_ms);
        }
        // A signal does not end the wait early, so the slice is what a cancel waits at most.
        gpu_service_sem_wait(&s->answered, 10);
    }
}

Status transport(const approx::ExecContext& ctx, approx::service::Request& req) {
    ServiceShared* sh = gpu_service_shared();
    if (sh == nullptr) return Status::Error(StatusCode::NotServed, "no GPU service");
    // Each cacheable input goes omitted when the caller never read it
    // (Request::cache_absent) or the directory lists its key. One evicted
    // meanwhile: if the caller has every omitted one, send them all after
    // all; else the NotServed answer is the caller's to act on.
    unsigned omit = 0;
    bool absent = false;
    for (int k = 0; k < req.n_cached && k < approx::service::kMaxCached; ++k)
        if (req.cache_absent[k] || key_resident(sh, req.cache_key[k])) {
            omit |= 1u << k;
            absent = absent || req.cache_absent[k];
        }
    Status st = send_and_wait(sh, ctx, req, omit);
    if (omit != 0 && !absent && st.code == StatusCode::NotServed) st = send_and_wait(sh, ctx, req, 0);
    return st;
}

// ---- sessions that hold state in the service -------------------------------------------

uint64 session_token = 0;
int session_index = -1;

// before_shmem_exit: the backend is leaving; the executors free what it left.
void session_ended(int, Datum) {
    ServiceShared* sh = gpu_service_shared();
    if (sh == nullptr || session_index < 0) return;
    uint64 mine = session_token;
    (void)pg_atomic_compare_exchange_u64(&sh->owners[session_index], &mine, 0);
    pg_atomic_fetch_add_u32(&sh->owners_changed, 1);
    gpu_service_wake_executors(sh);
    session_token = 0;
}

}  // namespace

void gpu_service_register_session(void) {
    ServiceShared* sh = gpu_service_shared();
    if (sh == nullptr || session_token != 0) return;
    if (MyBackendId < 1 || MyBackendId > sh->n_owners) return;  // not a session: the service refuses its state
    before_shmem_exit(session_ended, 0);
    session_index = MyBackendId - 1;
    // Unique for the life of the shared memory: the low 20 bits say where to look.
    const uint64 seq = pg_atomic_fetch_add_u64(&sh->next_seq, 1);
    session_token = (seq << 20) | static_cast<uint64>(session_index);
    pg_atomic_write_u64(&sh->owners[session_index], session_token);
}

uint64 gpu_service_session_token(void) { return session_token; }

bool gpu_service_session_alive(ServiceShared* sh, uint64 token) {
    const uint64 index = token & ((uint64(1) << 20) - 1);
    return token != 0 && index < static_cast<uint64>(sh->n_owners) && pg_atomic_read_u64(&sh->owners[index]) == token;
}

bool gpu_service_key_resident(uint64 key) {
    ServiceShared* sh = gpu_service_shared();
    return sh != nullptr && key != 0 && pg_atomic_read_u32(&sh->ready) != 0 && key_resident(sh, key);
}

approx::service::Transport gpu_service_transport(void) {
    ServiceShared* sh = gpu_service_shared();
    // A service that found no GPU (and does not run the CPU engines for
    // tests) takes nothing: the backends run their engines as without it.
    // One that is restarting does: the transport answers "not running", so
    // `auto` runs on the CPU and `gpu` is an error -- no backend opens a CUDA
    // context of its own meanwhile.
    if (sh == nullptr || !service_use || (!sh->gpu_usable && !sh->cpu_engine)) return nullptr;
    return transport;
}

// ---- gpu_service_info() ----------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_service_info) {
    ServiceShared* sh = gpu_service_shared();
    JsonbBuilder j;
    j.begin_object();
    j.add_bool("preloaded", sh != nullptr);
    if (sh == nullptr) {
        j.add_string("mode",
                     "in-process: each backend runs its GPU calls in its own CUDA context "
                     "(add approx_gpu to shared_preload_libraries for the service)");
        j.end_object();
        PG_RETURN_JSONB_P(j.finish());
    }
    const bool ready = pg_atomic_read_u32(&sh->ready) != 0;
    j.add_bool("running", ready);
    j.add_bool("used_by_this_session", gpu_service_transport() != nullptr);
    if (ready) {
        j.add_int("pid", sh->service_pid);
        j.add_string("started_at", timestamptz_to_str(sh->started_at));
    }
    j.add_int("starts", sh->starts);
    j.add_string("engine", sh->cpu_engine ? "cpu" : "gpu");
    j.add_bool("gpu_available", sh->gpu_found);
    if (!sh->gpu_found) j.add_string("reason", sh->why);
    j.add_int("cuda_contexts", sh->gpu_usable ? sh->n_devices : 0);
    j.begin_array("devices");
    for (int d = 0; d < sh->n_devices && d < kServiceMaxDevices; ++d) {
        j.begin_object();
        j.add_int("index", sh->devices[d].index);
        j.add_string("name", sh->devices[d].name);
        j.add_int("total_bytes", sh->devices[d].total_bytes);
        j.add_int("pool_limit_bytes", sh->pools[d].limit);
        j.add_int("pool_used_bytes", sh->pools[d].used);
        j.add_int("pool_reserved_bytes", sh->pools[d].reserved);
        j.add_int("pool_peak_bytes", sh->pools[d].peak);
        j.end_object();
    }
    j.end_array();

    int queued = 0, running = 0, busy = 0;
    uint64 staged = 0;
    for (int i = 0; i < sh->n_slots; ++i) {
        uint32 st = pg_atomic_read_u32(&sh->slots[i].state);
        if (st == SLOT_QUEUED) ++queued;
        if (st == SLOT_RUNNING || st == SLOT_ABANDONED) ++running;
        if (st != SLOT_FREE) {
            ++busy;
            staged += sh->slots[i].staging_bytes;
        }
    }
    j.begin_object("queue");
    j.add_int("slots", sh->n_slots);
    j.add_int("queued", queued);
    j.add_int("running", running);
    j.add_int("in_use", busy);
    j.add_int("staging_bytes", static_cast<int64>(sh->staging_size));
    j.add_int("staging_in_use_bytes", static_cast<int64>(staged));
    j.end_object();

    const uint64 done = pg_atomic_read_u64(&sh->requests_done);
    j.begin_object("requests");
    j.add_int("done", static_cast<int64>(done));
    j.add_int("failed", static_cast<int64>(pg_atomic_read_u64(&sh->requests_failed)));
    j.add_int("abandoned", static_cast<int64>(pg_atomic_read_u64(&sh->requests_abandoned)));
    j.add_int("timed_out", static_cast<int64>(pg_atomic_read_u64(&sh->requests_timed_out)));
    j.add_int("not_served", static_cast<int64>(pg_atomic_read_u64(&sh->requests_not_served)));
    j.end_object();

    const int64 hits = static_cast<int64>(pg_atomic_read_u64(&sh->cache_hits));
    const int64 misses = static_cast<int64>(pg_atomic_read_u64(&sh->cache_misses));
    j.add_int("session_objects", static_cast<int64>(pg_atomic_read_u64(&sh->session_objects)));
    j.begin_object("cache");
    j.add_int("limit_bytes", static_cast<int64>(service_cache_size_mb) * 1024 * 1024);
    j.add_int("entries", sh->cache.entries);
    j.add_int("bytes", sh->cache.bytes);
    j.add_int("hits", hits);
    j.add_int("misses", misses);
    j.add_int("evictions", sh->cache.evictions);
    if (hits + misses > 0) j.add_number("hit_rate", static_cast<double>(hits) / static_cast<double>(hits + misses));
    j.end_object();
    j.end_object();
    PG_RETURN_JSONB_P(j.finish());
}
