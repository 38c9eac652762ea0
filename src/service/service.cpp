// The GPU service's registration: settings, shared memory and the background
// worker (service.h). The worker itself is service_worker.cpp; the
// backends' side is service_client.cpp.
#include "service/service.h"

#include <errno.h>
#include <time.h>

extern "C" {
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
}

#include "service/service_settings.h"

// ---- settings --------------------------------------------------------------------------

bool service_use = true;
int service_engine = SERVICE_ENGINE_GPU;
int service_memory_limit_mb = 4096;
int service_cache_size_mb = 1024;
int service_staging_size_mb = 128;
int service_queue_size = 256;
int service_queue_timeout_ms = 10000;
int service_test_delay_ms = 0;
int service_request_limit_ms = 60000;
int service_test_fault = SERVICE_FAULT_NONE;

static const struct config_enum_entry fault_options[] = {
    {"none", SERVICE_FAULT_NONE, false},
    {"error", SERVICE_FAULT_ERROR, false},
    {"trap", SERVICE_FAULT_TRAP, false},
    {nullptr, 0, false},
};

static const struct config_enum_entry engine_options[] = {
    {"gpu", SERVICE_ENGINE_GPU, false},
    {"cpu", SERVICE_ENGINE_CPU, false},
    {nullptr, 0, false},
};

static void define_settings(void) {
    DefineCustomBoolVariable("approx_gpu.use_service", "Send GPU engine calls to the GPU service when it runs.",
                             "Off: this session runs them in its own process (its own CUDA context), as "
                             "without shared_preload_libraries.",
                             &service_use, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.gpu_queue_timeout", "How long a call waits for the GPU service to start it.",
                            "Then device = auto runs it on the CPU (with a NOTICE) and device = gpu raises "
                            "an error (53200).",
                            &service_queue_timeout_ms, 10000, 1, INT_MAX, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr,
                            nullptr);
    // Superuser-only: the service's executors are shared by every session, so
    // one role may not hold one longer than the administrator allows.
    DefineCustomIntVariable("approx_gpu.service_request_limit",
                            "How long one call may run in the GPU service (0 = no limit).",
                            "Checked between the engine's chunks; a call that runs longer is stopped there and, "
                            "under device = auto, runs on the CPU in its own session (with a NOTICE); under "
                            "device = gpu it fails with SQLSTATE 53200 (as a queue timeout).",
                            &service_request_limit_ms, 60000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable("approx_gpu.service_test_delay",
                            "Tests only: each call of this session stays queued in the GPU service this long.", nullptr,
                            &service_test_delay_ms, 0, 0, 600000, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable("approx_gpu.service_test_fault",
                             "Tests only: each call of this session fails in the GPU service.",
                             "error: the engine call answers with a GPU error (the service goes on); trap: a "
                             "kernel faults on the GPU, which poisons the context (the service restarts).",
                             &service_test_fault, SERVICE_FAULT_NONE, fault_options, PGC_SUSET, 0, nullptr, nullptr,
                             nullptr);
    // The rest size the shared memory and the service: only with the library
    // preloaded (PostgreSQL allows PGC_POSTMASTER settings only then).
    if (!process_shared_preload_libraries_in_progress) return;
    DefineCustomEnumVariable("approx_gpu.service_engine", "Which engines the GPU service runs: gpu or cpu.",
                             "cpu runs the CPU engines in the service (for testing the service path on "
                             "machines without a GPU).",
                             &service_engine, SERVICE_ENGINE_GPU, engine_options, PGC_POSTMASTER, 0, nullptr, nullptr,
                             nullptr);
    DefineCustomIntVariable("approx_gpu.service_memory_limit",
                            "Device memory the GPU service's pool may hold, per GPU (0 = no limit).", nullptr,
                            &service_memory_limit_mb, 4096, 0, INT_MAX / 2, PGC_POSTMASTER, GUC_UNIT_MB, nullptr,
                            nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.service_cache_size",
                            "Memory the GPU service keeps resident inputs (synopsis samples) in.",
                            "Part of approx_gpu.service_memory_limit; least recently used entries go first.",
                            &service_cache_size_mb, 1024, 0, INT_MAX / 2, PGC_POSTMASTER, GUC_UNIT_MB, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable("approx_gpu.service_staging_size",
                            "Shared memory for the inputs and outputs of calls in the GPU service's queue.",
                            "A call larger than this runs in its backend.", &service_staging_size_mb, 128, 1, 65536,
                            PGC_POSTMASTER, GUC_UNIT_MB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.service_queue_size", "Calls the GPU service's queue holds at once.", nullptr,
                            &service_queue_size, 256, 1, kServiceMaxSlots, PGC_POSTMASTER, 0, nullptr, nullptr,
                            nullptr);
}

// ---- shared memory ---------------------------------------------------------------------

static ServiceShared* shared = nullptr;
static shmem_request_hook_type prev_shmem_request_hook = nullptr;
static shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

static constexpr Size kPage = 4096;

static Size slots_end(void) {
    return add_size(offsetof(ServiceShared, slots), mul_size(service_queue_size, sizeof(ServiceSlot)));
}

// The session table (one entry per backend id) after the slots.
static Size owners_end(void) {
    return add_size(TYPEALIGN(sizeof(uint64), slots_end()), mul_size(MaxBackends, sizeof(pg_atomic_uint64)));
}

static Size shared_size(void) {
    return add_size(add_size(owners_end(), kPage), mul_size(static_cast<Size>(service_staging_size_mb), 1024 * 1024));
}

static void service_shmem_request(void) {
    if (prev_shmem_request_hook) prev_shmem_request_hook();
    RequestAddinShmemSpace(shared_size());
}

static void service_shmem_startup(void) {
    if (prev_shmem_startup_hook) prev_shmem_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    bool found = false;
    shared = static_cast<ServiceShared*>(ShmemInitStruct("approx_gpu gpu service", shared_size(), &found));
    if (!found) {
        memset(static_cast<void*>(shared), 0, owners_end());
        SpinLockInit(&shared->lock);
        pg_atomic_init_u32(&shared->ready, 0);
        pg_atomic_init_u32(&shared->generation, 0);
        pg_atomic_init_u64(&shared->next_seq, 1);
        pg_atomic_init_u64(&shared->requests_done, 0);
        pg_atomic_init_u64(&shared->requests_failed, 0);
        pg_atomic_init_u64(&shared->requests_abandoned, 0);
        pg_atomic_init_u64(&shared->requests_timed_out, 0);
        pg_atomic_init_u64(&shared->requests_not_served, 0);
        pg_atomic_init_u64(&shared->cache_hits, 0);
        pg_atomic_init_u64(&shared->cache_misses, 0);
        pg_atomic_init_u32(&shared->n_cache_keys, 0);
        shared->n_slots = service_queue_size;
        shared->staging_size = static_cast<uint64>(service_staging_size_mb) * 1024 * 1024;
        shared->n_owners = MaxBackends;
        shared->owners = reinterpret_cast<pg_atomic_uint64*>(reinterpret_cast<char*>(shared) +
                                                             TYPEALIGN(sizeof(uint64), slots_end()));
        for (int i = 0; i < shared->n_owners; ++i) pg_atomic_init_u64(&shared->owners[i], 0);
        pg_atomic_init_u32(&shared->owners_changed, 0);
        pg_atomic_init_u64(&shared->session_objects, 0);
        shared->staging = reinterpret_cast<char*>(TYPEALIGN(kPage, reinterpret_cast<char*>(shared) + owners_end()));
        for (int i = 0; i < shared->n_slots; ++i) {
            pg_atomic_init_u32(&shared->slots[i].state, SLOT_FREE);
            pg_atomic_init_u32(&shared->slots[i].cancel, 0);
            if (sem_init(&shared->slots[i].answered, 1, 0) != 0)
                ereport(FATAL, (errmsg("approx_gpu: could not create a semaphore: %m")));
        }
        for (int i = 0; i < kServiceMaxDevices; ++i)
            if (sem_init(&shared->executor_wake[i], 1, 0) != 0)
                ereport(FATAL, (errmsg("approx_gpu: could not create a semaphore: %m")));
    }
    LWLockRelease(AddinShmemInitLock);
}

ServiceShared* gpu_service_shared(void) { return shared; }

void gpu_service_wake_executors(ServiceShared* sh) {
    for (int i = 0; i < sh->n_executors && i < kServiceMaxDevices; ++i) (void)sem_post(&sh->executor_wake[i]);
}

void gpu_service_sem_wait(sem_t* sem, long ms) {
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += ms * 1000 * 1000;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    while (sem_clockwait(sem, CLOCK_MONOTONIC, &until) != 0 && errno == EINTR) {
    }
}

// ---- registration ----------------------------------------------------------------------

// GpuServiceHooks::devices: what the service found, for device_info().
static bool service_devices(approx::gpu::DeviceInfo* out, int max, int* count, int* runtime_version,
                            int* driver_version) {
    if (shared == nullptr || !shared->gpu_usable) return false;
    *count = shared->n_devices;
    for (int i = 0; i < shared->n_devices && i < max; ++i) out[i] = shared->devices[i];
    *runtime_version = shared->runtime_version;
    *driver_version = shared->driver_version;
    return true;
}

void gpu_service_init(void) {
    define_settings();
    if (!process_shared_preload_libraries_in_progress) return;  // in-process mode (README: "GPU service")

    runtime_register_gpu_service(GpuServiceHooks{gpu_service_transport, service_devices, gpu_service_key_resident});

    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = service_shmem_request;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = service_shmem_startup;

    BackgroundWorker worker;
    memset(&worker, 0, sizeof worker);
    // A connection to no database: the service is in the ProcArray (so
    // pg_stat_activity shows it and pg_terminate_backend reaches it) but
    // reads no catalog.
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = 2;  // seconds: exit status 1 (SIGTERM, a poisoned context) restarts it
    snprintf(worker.bgw_library_name, BGW_MAXLEN, "approx_gpu");
    snprintf(worker.bgw_function_name, BGW_MAXLEN, "approx_gpu_service_main");
    snprintf(worker.bgw_name, BGW_MAXLEN, "approx_gpu gpu service");
    snprintf(worker.bgw_type, BGW_MAXLEN, "approx_gpu gpu service");
    RegisterBackgroundWorker(&worker);
}
