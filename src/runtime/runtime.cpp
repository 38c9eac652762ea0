// Settings, the engine call's ExecContext, the error boundary and last_run()
// (runtime.h).
#include "runtime/runtime.h"

#include <thread>

extern "C" {
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include "runtime/jsonb_builder.h"

using approx::DeviceMode;
using approx::Status;
using approx::StatusCode;

// ---- settings ----------------------------------------------------------------------

static int device_setting = static_cast<int>(DeviceMode::Auto);
static int gpu_min_rows_setting = 10000;
static int cpu_threads_setting = 0;   // 0 = one per core (capped)
static int gpu_memory_limit_kb = 0;   // 0 = no cap
static int random_seed_setting = -1;  // -1 = fresh seeds
static double progress_interval_setting = 0;

static constexpr int kMaxCpuThreads = 64;

static const struct config_enum_entry device_options[] = {
    {"auto", static_cast<int>(DeviceMode::Auto), false},
    {"gpu", static_cast<int>(DeviceMode::Gpu), false},
    {"cpu", static_cast<int>(DeviceMode::Cpu), false},
    {nullptr, 0, false},
};

void runtime_define_settings(void) {
    DefineCustomEnumVariable("approx_gpu.device", "Where approx_gpu runs its engines: auto, gpu or cpu.",
                             "auto uses the GPU when one is present and the input has at least "
                             "approx_gpu.gpu_min_rows rows; gpu raises an error when there is none.",
                             &device_setting, static_cast<int>(DeviceMode::Auto), device_options, PGC_USERSET, 0,
                             nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.gpu_min_rows", "Inputs smaller than this run on the CPU under device = auto.",
                            nullptr, &gpu_min_rows_setting, 10000, 0, INT_MAX, PGC_USERSET, 0, nullptr, nullptr,
                            nullptr);
    DefineCustomIntVariable("approx_gpu.cpu_threads", "Worker threads of the CPU engine (0 = one per core).",
                            "Capped at 64. The threads never call PostgreSQL functions.", &cpu_threads_setting, 0, 0,
                            kMaxCpuThreads, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.gpu_memory_limit", "GPU memory one backend may allocate (0 = no cap).",
                            "Under device = auto a larger allocation falls back to the CPU.", &gpu_memory_limit_kb, 0,
                            0, INT_MAX, PGC_SUSET, GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.random_seed", "Seed for sampling (-1 = a fresh seed each call).",
                            "Set it to make sampling reproducible.", &random_seed_setting, -1, -1, INT_MAX, PGC_USERSET,
                            0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable("approx_gpu.progress_interval",
                             "Seconds between progress NOTICEs of long builds (0 = off).", nullptr,
                             &progress_interval_setting, 0, 0, 86400, PGC_USERSET, GUC_UNIT_S, nullptr, nullptr,
                             nullptr);
}

void runtime_reserve_prefix(void) { MarkGUCPrefixReserved("approx_gpu"); }

const char* device_setting_name(void) { return device_options[device_setting].name; }

// ---- the GPU service ---------------------------------------------------------------

static GpuServiceHooks service_hooks = {nullptr, nullptr, nullptr};

void runtime_register_gpu_service(const GpuServiceHooks& hooks) { service_hooks = hooks; }

const GpuServiceHooks& gpu_service_hooks(void) { return service_hooks; }

// ---- the last_run() record -------------------------------------------------------------

static approx::RunStats last_stats;
// Where the answer of the last approximate SQL aggregate query came from:
// plain fixed buffers, like RunStats, so that they survive an ERROR.
static char answered_from[16];
static char answer_reason[256];
static char answer_synopsis[NAMEDATALEN];
// How the last call read its input (relation_reader.h: record_read()).
static char read_path[48];

void last_run_set_read(const char* path) { strlcpy(read_path, path ? path : "", sizeof read_path); }

void last_run_set_answer(const char* from, const char* reason, const char* synopsis) {
    strlcpy(answered_from, from ? from : "", sizeof answered_from);
    strlcpy(answer_reason, reason ? reason : "", sizeof answer_reason);
    strlcpy(answer_synopsis, synopsis ? synopsis : "", sizeof answer_synopsis);
}

void last_run_rows(const char* op, const char* reason) {
    last_stats.reset(op);
    last_run_set_answer("rows", reason, nullptr);
    last_run_set_read(nullptr);
}

approx::RunStats& last_run_stats(void) { return last_stats; }

// ---- engine calls --------------------------------------------------------------------

// Called from engine threads too: reads the flags the signal handlers set,
// never longjmps.
static bool query_cancel_requested() { return QueryCancelPending || ProcDiePending; }

static int effective_cpu_threads() {
    if (cpu_threads_setting > 0) return cpu_threads_setting;
    unsigned hc = std::thread::hardware_concurrency();
    int n = hc == 0 ? 1 : static_cast<int>(hc);
    return n > kMaxCpuThreads ? kMaxCpuThreads : n;
}

uint64 random_seed_for_call(void) {
    if (random_seed_setting >= 0) return static_cast<uint64>(random_seed_setting);
    uint64 seed;
    if (pg_strong_random(&seed, sizeof seed)) return seed;
    // No strong source: time and pid still differ between calls and backends.
    return static_cast<uint64>(GetCurrentTimestamp()) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64>(MyProcPid);
}

approx::ExecContext engine_settings(void) {
    approx::ExecContext ctx;
    ctx.mode = static_cast<DeviceMode>(device_setting);
    ctx.gpu_min_rows = gpu_min_rows_setting;
    ctx.cpu_threads = effective_cpu_threads();
    ctx.gpu_memory_limit = static_cast<int64_t>(gpu_memory_limit_kb) * 1024;
    ctx.cancel = query_cancel_requested;
    ctx.service = service_hooks.transport ? service_hooks.transport() : nullptr;
    return ctx;
}

approx::ExecContext exec_context(const char* op) {
    approx::ExecContext ctx = engine_settings();
    last_stats.reset(op);
    last_run_set_answer(nullptr, nullptr, nullptr);
    last_run_set_read(nullptr);
    ctx.stats = &last_stats;
    return ctx;
}

double glue_clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// ---- the error boundary ------------------------------------------------------------

static int errcode_for(StatusCode code) {
    switch (code) {
        case StatusCode::InvalidArgument: return ERRCODE_INVALID_PARAMETER_VALUE;
        case StatusCode::DataException: return ERRCODE_DATA_EXCEPTION;
        case StatusCode::OutOfRange: return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
        case StatusCode::ProgramLimit: return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
        case StatusCode::OutOfMemory:
        case StatusCode::GpuOutOfMemory:
        case StatusCode::ServiceBusy: return ERRCODE_OUT_OF_MEMORY;
        case StatusCode::ServiceDown: return ERRCODE_SYSTEM_ERROR;
        case StatusCode::NoGpu: return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
        case StatusCode::Cancelled: return ERRCODE_QUERY_CANCELED;
        case StatusCode::DivisionByZero: return ERRCODE_DIVISION_BY_ZERO;
        case StatusCode::Declined:
        case StatusCode::Ok:
        case StatusCode::GpuError:
        case StatusCode::NotServed:
        case StatusCode::Internal: break;
    }
    return ERRCODE_INTERNAL_ERROR;
}

void notice_if_fell_back(const char* function_name) {
    if (last_stats.notice[0] != '\0') ereport(NOTICE, (errmsg("%s: %s", function_name, last_stats.notice)));
}

void check_engine_result(const Status& st, const char* function_name) {
    raise_if_error(st, function_name);
    notice_if_fell_back(function_name);
}

void raise_if_error(const Status& st, const char* function_name) {
    if (st.ok()) return;
    if (st.code == StatusCode::Cancelled) {
        // The engine stopped because a cancel or timeout is pending: let
        // PostgreSQL raise its own message ("... due to statement timeout").
        CHECK_FOR_INTERRUPTS();
    }
    ereport(ERROR, (errcode(errcode_for(st.code)), errmsg("%s: %s", function_name, st.message)));
}

// ---- last_run() ---------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_last_run) {
    const approx::RunStats& s = last_stats;
    if (s.op[0] == '\0') PG_RETURN_NULL();
    JsonbBuilder j;
    j.begin_object();
    j.add_string("function", s.op);
    j.add_string("device", approx::device_name(s.device));
    if (s.device == approx::Device::Cpu) j.add_int("cpu_threads", s.cpu_threads);
    j.add_int("rows", s.rows);
    j.add_int("rows_skipped", s.rows_skipped);
    j.add_number("ms_read", s.ms_read);
    j.add_number("ms_transfer", s.ms_transfer);
    j.add_number("ms_compute", s.ms_compute);
    if (s.notice[0]) j.add_string("notice", s.notice);
    if (answered_from[0]) j.add_string("answered_from", answered_from);
    if (answer_synopsis[0]) j.add_string("synopsis", answer_synopsis);
    if (answer_reason[0]) j.add_string("reason", answer_reason);
    if (read_path[0]) j.add_string("read", read_path);
    for (int i = 0; i < s.n_extra; ++i) j.add_number(s.extra[i].key, s.extra[i].value);
    j.end_object();
    PG_RETURN_JSONB_P(j.finish());
}
