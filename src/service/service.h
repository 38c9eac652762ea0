// The GPU service: one background worker owns the CUDA context, the device
// memory pool and the resident cache for every backend; backends send engine
// calls (src/core/service.hpp, each engine's core/*_served.cpp) through
// shared memory. The folder's files:
//   service.cpp           gpu_service_init(): settings, shared memory, the worker's
//                         registration, the transport handed to the runtime
//   service_worker.cpp    the service process's main thread (signals, configuration, restart)
//   service_executor.cpp  the executor threads, one per GPU (service_executor.h)
//   service_client.cpp    the backends' side: the transport, gpu_service_info()
//   service_settings.h    the settings both sides read
//
// Shared memory (requested once by _PG_init under shared_preload_libraries):
//   ServiceShared: what the service found (devices, engine), its counters and
//                  the resident cache's key directory;
//   slots[]:       one request each, with its own cancel flag and answer;
//   staging area:  the requests' input and output bytes, page-aligned and
//                  registered with cudaHostRegister by the service once, so
//                  the service copies straight from it to the GPU.
//
// Wake-ups go straight between the processes through POSIX semaphores in
// this segment (as PostgreSQL's own semaphores on Linux, posix_sema.c): a
// backend posts its executors' semaphores when it queues a request; an
// executor posts the slot's semaphore when the answer is there. sem_post is a
// plain atomic (a futex wake when someone sleeps), so the executor threads
// call no PostgreSQL function for it, and no hop through the service's main
// thread is needed either way.
//
// A slot's state moves FREE -> FILLING -> QUEUED -> RUNNING -> DONE -> FREE.
// Backends take and free slots under `lock` (and check `seq`, the slot's
// owner token, before touching it); the service's executor threads, which
// never call PostgreSQL, move QUEUED -> RUNNING -> DONE with compare-and-swap.
// A backend that stops waiting (cancel, timeout, the service exited) frees a
// QUEUED slot itself or marks a RUNNING one ABANDONED; the service frees an
// ABANDONED slot when its engine returns, so no slot or staging byte leaks.
#pragma once

#include <semaphore.h>

#include "runtime/runtime.h"

extern "C" {
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/spin.h"
}

#include "core/gpu.hpp"
#include "core/service.hpp"

enum ServiceSlotState : uint32 {
    SLOT_FREE = 0,
    SLOT_FILLING,
    SLOT_QUEUED,
    SLOT_RUNNING,
    SLOT_DONE,
    SLOT_ABANDONED,
};

constexpr int kServiceMaxDevices = 8;
constexpr int kServiceMaxSlots = 1024;  // the staging allocator scans the slots on the stack
constexpr int kServiceCacheKeys = 256;

struct ServiceSlot {
    pg_atomic_uint32 state;
    pg_atomic_uint32 cancel;  // set by the backend; read by the engine's cancel callback
    uint64 seq;               // owner token: a new value every time a backend takes the slot
    uint32 generation;        // the service incarnation the request was sent to
    int backend_pid;
    sem_t answered;       // posted when the slot is DONE (or the service stops); the backend waits on it
    double submitted_ms;  // glue_clock_ms() at QUEUED (CLOCK_MONOTONIC: same clock in every process)

    // The request: the engine call and its settings.
    uint32 op;
    int32 mode;  // approx::DeviceMode
    int64 gpu_min_rows;
    int32 cpu_threads;
    int64 gpu_memory_limit;
    int32 test_delay_ms;  // approx_gpu.service_test_delay: stay queued this long
    int32 time_limit_ms;  // approx_gpu.service_request_limit: run at most this long (0: no limit)
    int32 test_fault;     // approx_gpu.service_test_fault (ServiceTestFault)
    int64 rows;
    int32 n_in, n_out;
    uint64 in_off[approx::service::kMaxIn], in_bytes[approx::service::kMaxIn];
    uint64 out_off[approx::service::kMaxOut], out_bytes[approx::service::kMaxOut];
    int32 n_cached;  // cacheable inputs (Request::n_cached): in[cache_in[k]] under cache_key[k]
    int32 cache_in[approx::service::kMaxCached];
    uint64 cache_key[approx::service::kMaxCached];
    int32 device_affinity;  // only this device's executor takes it (-1: any); Request::device
    bool detached;          // nobody waits for the answer: the executor frees the slot (Request::detached)
    uint64 owner;           // the session's token (gpu_service_session_token), 0 if none
    bool cache_omitted[approx::service::kMaxCached];  // in[cache_in[k]] not copied: the backend saw it resident
    uint64 staging_off, staging_bytes;

    // The answer.
    int32 status_code;  // approx::StatusCode
    char message[320];
    bool cache_hit[approx::service::kMaxCached];
    int32 device;  // the executor's device (-1: CPU engine)
    double ms_queued, ms_run;
    approx::RunStats stats;
};

struct ServiceShared {
    slock_t lock;                 // slot FREE <-> FILLING, the staging allocator, owner checks
    pg_atomic_uint32 ready;       // 1 while a service takes requests
    pg_atomic_uint32 generation;  // +1 at every service start
    pg_atomic_uint64 next_seq;
    int service_pid;
    Latch* service_latch;
    int n_executors;                          // executor_wake[0 .. n_executors) take requests
    sem_t executor_wake[kServiceMaxDevices];  // posted by a backend that queued a request
    int64 started_at;                         // TimestampTz of the current incarnation
    uint32 starts;

    // What the service found.
    bool gpu_usable;  // the service runs the GPU engines
    bool gpu_found;   // a usable GPU is present (also under service_engine = cpu)
    bool cpu_engine;  // approx_gpu.service_engine = cpu (the CI test setting)
    char why[256];    // why there is no usable GPU
    int n_devices;
    approx::gpu::DeviceInfo devices[kServiceMaxDevices];
    int runtime_version, driver_version;

    // Counters (the service's executors and the backends).
    pg_atomic_uint64 requests_done, requests_failed, requests_abandoned, requests_timed_out, requests_not_served;
    pg_atomic_uint64 cache_hits, cache_misses;
    approx::gpu::PoolInfo pools[kServiceMaxDevices];
    approx::service::CacheStats cache;
    pg_atomic_uint32 n_cache_keys;
    uint64 cache_keys[kServiceCacheKeys];

    // Sessions that hold state in the service (moving-object indexes): owners[i]
    // is the token of the session with backend id i + 1, 0 when none. A
    // backend clears its entry at exit and bumps owners_changed; the
    // executors then free what it left.
    int n_owners;
    pg_atomic_uint64* owners;
    pg_atomic_uint32 owners_changed;
    pg_atomic_uint64 session_objects;  // what the service keeps for sessions (service::Held)

    int n_slots;
    uint64 staging_size;
    char* staging;  // page-aligned, inside this segment (same address in every process)
    ServiceSlot slots[FLEXIBLE_ARRAY_MEMBER];
};

// _PG_init: settings; under shared_preload_libraries also the shared memory
// and the background worker.
void gpu_service_init(void);

// The service's shared state, or null when the library was not preloaded.
ServiceShared* gpu_service_shared(void);

// Wake-ups (no PostgreSQL call: the executor threads use them too). Posts
// every executor's semaphore; waits on a semaphore up to ms (a signal does
// not end the wait early: the deadline does).
void gpu_service_wake_executors(ServiceShared* sh);
void gpu_service_sem_wait(sem_t* sem, long ms);

// Registers this session as one that may hold state in the service (before
// mo_create: an exit callback frees it when the backend exits). May raise.
void gpu_service_register_session(void);
// This session's token (0 when not registered) and whether a token's session
// is still there (no PostgreSQL call: the executors use it).
uint64 gpu_service_session_token(void);
bool gpu_service_session_alive(ServiceShared* sh, uint64 token);

// The transport for ExecContext::service when calls should go to the
// service (preloaded, approx_gpu.use_service, a service is up with a GPU or
// the CPU-engine test setting), else null.
approx::service::Transport gpu_service_transport(void);

// Whether the service's resident directory lists key now (a hint: the
// service may evict it before a request arrives).
bool gpu_service_key_resident(uint64 key);

// Entry point of the background worker (bgw_function_name).
extern "C" PGDLLEXPORT void approx_gpu_service_main(Datum arg);
