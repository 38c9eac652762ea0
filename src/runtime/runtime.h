// The runtime every feature's glue stands on: the PostgreSQL headers each
// glue file needs, the approx_gpu.* engine settings, the engine call wrapper
// with its error boundary, and the record behind approx_gpu.last_run().
//
// The runtime folder, by concern:
//   runtime.h / .cpp          settings, ExecContext, run_engine and the error
//                             boundary, last_run() and its record, the GPU
//                             service's registration
//   device_info.cpp           approx_gpu.device_info()
//   extension_schema.cpp      where the extension's objects are: its schema
//                             (looked up), the internal schema, fixed SQL text
//   arguments.h / .cpp        argument readers (float8 arrays, point matrices,
//                             choices) and float8 array results
//   jsonb_builder.h / .cpp    JsonbBuilder
//   byte_codec.h / .cpp       ByteWriter / ByteReader: stored values and states
//   aggregate_state.h / .cpp  aggregate_context, calling_aggregate_name, DoubleColumn
//
// Only the glue includes these (the engines never see PostgreSQL). Rules that
// keep ereport safe here: values that must survive an ERROR live in palloc'd
// memory; engine results are trivially destructible; check_engine_result()
// and raise_if_error() run after every C++ object with a destructor is out of scope.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include "core/exec.hpp"

// Declares an SQL-callable C function with C linkage.
#define APPROX_FUNCTION(name)  \
    extern "C" {               \
    PG_FUNCTION_INFO_V1(name); \
    }                          \
    extern "C" Datum name(PG_FUNCTION_ARGS)

// ---- settings (approx_gpu.*) ---------------------------------------------------
void runtime_define_settings(void);
void runtime_reserve_prefix(void);

// An ExecContext from the current settings, with the cancel callback and
// last_run() statistics reset for operation `op`.
approx::ExecContext exec_context(const char* op);
// The same settings without touching last_run() (no stats): for decisions
// made before the engine call, e.g. whether the reader stages for the GPU.
approx::ExecContext engine_settings(void);
// approx_gpu.device as set ("auto", "gpu" or "cpu"), for device_info().
const char* device_setting_name(void);

// The seed of a sampling call: approx_gpu.random_seed when set, else a fresh
// one from pg_strong_random(). Touches no statistics (unlike exec_context()).
uint64 random_seed_for_call(void);

// ---- the extension's schemas -----------------------------------------------------
// User-facing objects live in the schema CREATE EXTENSION installed them into
// (no schema is named in approx_gpu.control), internal ones in
// kInternalSchema (created by the install script, sql/ext/00_runtime.sql).
// Nothing else in the glue names either schema.
constexpr const char* kInternalSchema = "approx_gpu_internal";
// The extension's schema; InvalidOid when the extension is not installed in
// this database and missing_ok (else ERROR 42704).
Oid approx_gpu_schema_oid(bool missing_ok);
// The internal schema; InvalidOid when the extension is not installed (or its
// objects are older than 0.7.0) and missing_ok.
Oid approx_gpu_internal_schema_oid(bool missing_ok);
// Fixed SQL text with "@extschema@" and "@internal@" replaced by the quoted
// schema names (as PostgreSQL does for extension scripts); palloc'd. Only for
// text written in the source: never pass it anything a user wrote.
char* approx_gpu_sql(const char* fixed_sql);
// The same with the extension's schema already looked up (a caller that
// needed its OID anyway resolves it once).
char* approx_gpu_sql(const char* fixed_sql, Oid extschema);

// ---- the GPU service ------------------------------------------------------------
// The GPU service (src/service/) registers what the runtime needs of it from
// _PG_init, so that the runtime depends on no service code.
namespace approx::gpu {
struct DeviceInfo;  // core/gpu.hpp
}
struct GpuServiceHooks {
    // The transport for ExecContext::service when calls go to the service
    // now, else null.
    approx::service::Transport (*transport)(void);
    // The service's GPUs for device_info(): up to `max` into `out`, their
    // number and CUDA versions; false (nothing written) when it runs no GPU.
    bool (*devices)(approx::gpu::DeviceInfo* out, int max, int* count, int* runtime_version, int* driver_version);
    // Whether the service holds an input under this key in its resident
    // cache now (its shared directory; a hint, see Request::cache_absent).
    bool (*resident)(uint64 key);
};
void runtime_register_gpu_service(const GpuServiceHooks& hooks);
// The registered hooks (null members when there is no service).
const GpuServiceHooks& gpu_service_hooks(void);

// ---- last_run() -----------------------------------------------------------------
// Where the last engine call recorded its statistics (approx_gpu.last_run()).
approx::RunStats& last_run_stats(void);

// Where the answer of the last approximate SQL aggregate query came from:
// last_run() adds "answered_from" ("synopsis" or "rows"), and "reason" /
// "synopsis" when given (nullptr: omitted). Cleared by every exec_context().
// last_run_rows() also starts a fresh record for `op` (the exact path runs
// no engine).
void last_run_set_answer(const char* answered_from, const char* reason, const char* synopsis);
void last_run_rows(const char* op, const char* reason);

// How the last call read its input ("parallel scan", "query", ...; nullptr
// clears); last_run() reports it as "read". Cleared by every exec_context().
void last_run_set_read(const char* path);

// Milliseconds between two calls, for RunStats::ms_read.
double glue_clock_ms(void);

// ---- engine calls and the error boundary -----------------------------------------
// Runs an engine call with a fresh ExecContext for operation `op` (settings,
// cancel callback, last_run() statistics seeded with what the glue measured).
// The callable takes the ExecContext and returns approx::Status; nothing it
// throws escapes.
template <class Fn>
approx::Status run_engine(const char* op, int64 rows_skipped, double ms_read, Fn&& fn) {
    approx::ExecContext ctx = exec_context(op);
    ctx.stats->rows_skipped = rows_skipped;
    ctx.stats->ms_read = ms_read;
    return approx::guarded([&] { return fn(ctx); });
}

// ereport(ERROR) for a failed Status (errcode from its code, message prefixed
// with the function name); nothing for a successful one. Call with no C++
// object that owns resources alive in the caller.
void raise_if_error(const approx::Status& st, const char* function_name);

// NOTICE when the last engine call fell back from the GPU to the CPU (`auto`
// after a GPU allocation failure).
void notice_if_fell_back(const char* function_name);

// What a glue function does after its engine call: raise_if_error(), then
// notice_if_fell_back().
void check_engine_result(const approx::Status& st, const char* function_name);
