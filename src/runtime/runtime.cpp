// Settings, introspection, argument readers and the error boundary shared by
// every feature's glue.
#include "runtime/runtime.h"

#include <cmath>
#include <thread>

extern "C" {
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/guc.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
}

#include "core/gpu.hpp"
#include "service/service.h"

using approx::DeviceMode;
using approx::Status;
using approx::StatusCode;

// ---- settings ----------------------------------------------------------------------

static int device_setting = static_cast<int>(DeviceMode::Auto);
static int gpu_min_rows_setting = 10000;
static int cpu_threads_setting = 0;       // 0 = one per core (capped)
static int gpu_memory_limit_kb = 0;       // 0 = no cap
static int random_seed_setting = -1;      // -1 = fresh seeds
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
                            kMaxCpuThreads, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.gpu_memory_limit", "GPU memory one backend may allocate (0 = no cap).",
                            "Under device = auto a larger allocation falls back to the CPU.", &gpu_memory_limit_kb, 0,
                            0, INT_MAX, PGC_USERSET, GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.random_seed", "Seed for sampling (-1 = a fresh seed each call).",
                            "Set it to make sampling reproducible.", &random_seed_setting, -1, -1, INT_MAX,
                            PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable("approx_gpu.progress_interval",
                             "Seconds between progress NOTICEs of long builds (0 = off).", nullptr,
                             &progress_interval_setting, 0, 0, 86400, PGC_USERSET, GUC_UNIT_S, nullptr, nullptr,
                             nullptr);
}

void runtime_reserve_prefix(void) { MarkGUCPrefixReserved("approx_gpu"); }

// ---- engine calls --------------------------------------------------------------------

static approx::RunStats last_stats;
// Answer provenance of the last approximate SQL aggregate query (issue 13):
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
    ctx.service = gpu_service_transport();
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

// ---- arguments ---------------------------------------------------------------------

void check_float_value(double v, const char* fn, const char* arg, bool allow_infinity) {
    if (std::isnan(v))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: %s contains NaN", fn, arg)));
    if (!allow_infinity && std::isinf(v))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: %s contains an infinite value", fn, arg)));
}

ArrayType* array_arg_flat(FunctionCallInfo fcinfo, int argno) {
    Datum d = PG_GETARG_DATUM(argno);
    if (VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(d))) {
        ExpandedArrayHeader* ea = reinterpret_cast<ExpandedArrayHeader*>(DatumGetEOHP(d));
        if (ea->ea_magic == EA_MAGIC && ea->fvalue != nullptr) return ea->fvalue;  // valid whenever set (array.h)
    }
    return DatumGetArrayTypeP(d);
}

static ArrayType* float8_array_checked(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg) {
    ArrayType* a = array_arg_flat(fcinfo, argno);
    if (ARR_ELEMTYPE(a) != FLOAT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("%s: %s must be a float8 array", fn, arg)));
    return a;
}

FloatArray float_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, bool allow_infinity) {
    ArrayType* a = float8_array_checked(fcinfo, argno, fn, arg);
    if (ARR_NDIM(a) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: %s must be a one-dimensional array, not %d-dimensional", fn, arg, ARR_NDIM(a))));
    int total = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
    FloatArray out{static_cast<double*>(palloc(sizeof(double) * (total > 0 ? total : 1))), 0, 0};
    Float8Cursor elements(a);
    for (int i = 0; i < total; ++i) {
        double v;
        if (!elements.next(v)) {
            ++out.skipped;
            continue;
        }
        check_float_value(v, fn, arg, allow_infinity);
        out.data[out.n++] = v;
    }
    return out;
}

PointMatrix point_matrix_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, int max_d) {
    ArrayType* a = float8_array_checked(fcinfo, argno, fn, arg);
    int ndim = ARR_NDIM(a);
    if (ndim > 2)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: %s must be an n x d (two-dimensional) array, not %d-dimensional", fn, arg, ndim)));
    int rows = ndim == 0 ? 0 : ARR_DIMS(a)[0];
    int d = ndim == 2 ? ARR_DIMS(a)[1] : 1;
    if (d > max_d)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: %s has %d columns; at most %d are supported", fn, arg, d, max_d)));
    PointMatrix out{static_cast<double*>(palloc(sizeof(double) * (rows > 0 ? static_cast<size_t>(rows) * d : 1))), 0,
                    d, 0};
    Float8Cursor elements(a);
    for (int r = 0; r < rows; ++r) {
        bool has_null = false;
        double* dst = out.data + out.n * d;
        for (int j = 0; j < d; ++j) {
            double v;
            if (!elements.next(v)) {
                has_null = true;
                continue;
            }
            check_float_value(v, fn, arg, false);
            dst[j] = v;
        }
        if (has_null)
            ++out.skipped;
        else
            ++out.n;
    }
    return out;
}

int choice_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, const char* const* choices,
               int n_choices) {
    char* s = text_to_cstring(PG_GETARG_TEXT_PP(argno));
    for (int i = 0; i < n_choices; ++i)
        if (pg_strcasecmp(s, choices[i]) == 0) return i;
    StringInfoData list;
    initStringInfo(&list);
    for (int i = 0; i < n_choices; ++i) appendStringInfo(&list, "%s%s", i ? ", " : "", choices[i]);
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: unknown %s \"%s\"", fn, arg, s),
                    errhint("Use one of: %s.", list.data)));
    return -1;
}

// ---- results -----------------------------------------------------------------------

ArrayType* float8_array(const double* values, int n) {
    return construct_array(const_cast<Datum*>(reinterpret_cast<const Datum*>(values)), n, FLOAT8OID, 8,
                           FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

ArrayType* float8_matrix(const double* values, int rows, int cols) {
    int dims[2] = {rows, cols};
    int lbs[2] = {1, 1};
    return construct_md_array(const_cast<Datum*>(reinterpret_cast<const Datum*>(values)), nullptr, 2, dims, lbs,
                              FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

static_assert(FLOAT8PASSBYVAL, "float8 arrays are built straight from double buffers");

JsonbBuilder::JsonbBuilder() : state_(nullptr), result_(nullptr) {}

void JsonbBuilder::put_key(const char* key) {
    if (key == nullptr) return;
    JsonbValue k;
    k.type = jbvString;
    k.val.string.len = static_cast<int>(strlen(key));
    k.val.string.val = pstrdup(key);
    pushJsonbValue(&state_, WJB_KEY, &k);
}

void JsonbBuilder::begin_object(const char* key) {
    put_key(key);
    result_ = pushJsonbValue(&state_, WJB_BEGIN_OBJECT, nullptr);
}

void JsonbBuilder::end_object() { result_ = pushJsonbValue(&state_, WJB_END_OBJECT, nullptr); }

void JsonbBuilder::begin_array(const char* key) {
    put_key(key);
    result_ = pushJsonbValue(&state_, WJB_BEGIN_ARRAY, nullptr);
}

void JsonbBuilder::end_array() { result_ = pushJsonbValue(&state_, WJB_END_ARRAY, nullptr); }

static void push_scalar(JsonbParseState** state, JsonbValue* v) {
    // Inside an object a scalar follows its key (WJB_VALUE); inside an array
    // it is an element.
    bool in_array = (*state)->contVal.type == jbvArray;
    pushJsonbValue(state, in_array ? WJB_ELEM : WJB_VALUE, v);
}

void JsonbBuilder::add_number(const char* key, double v) {
    if (!std::isfinite(v)) {
        add_null(key);
        return;
    }
    put_key(key);
    JsonbValue j;
    j.type = jbvNumeric;
    j.val.numeric = DatumGetNumeric(DirectFunctionCall1(float8_numeric, Float8GetDatum(v)));
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_int(const char* key, int64 v) {
    put_key(key);
    JsonbValue j;
    j.type = jbvNumeric;
    j.val.numeric = int64_to_numeric(v);
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_string(const char* key, const char* v) {
    put_key(key);
    JsonbValue j;
    j.type = jbvString;
    j.val.string.len = static_cast<int>(strlen(v));
    j.val.string.val = pstrdup(v);
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_bool(const char* key, bool v) {
    put_key(key);
    JsonbValue j;
    j.type = jbvBool;
    j.val.boolean = v;
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_null(const char* key) {
    put_key(key);
    JsonbValue j;
    j.type = jbvNull;
    push_scalar(&state_, &j);
}

Jsonb* JsonbBuilder::finish() { return JsonbValueToJsonb(result_); }

// ---- aggregates ----------------------------------------------------------------------

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* fn) {
    MemoryContext mcxt;
    if (!AggCheckCallContext(fcinfo, &mcxt))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s called in non-aggregate context", fn)));
    return mcxt;
}

const char* calling_aggregate_name(FunctionCallInfo fcinfo, const char* fallback) {
    Aggref* aggref = AggGetAggref(fcinfo);
    if (aggref == nullptr) return fallback;
    char* name = get_func_name(aggref->aggfnoid);
    return name != nullptr ? name : fallback;
}

void double_column_init(DoubleColumn* c) {
    c->data = nullptr;
    c->n = 0;
    c->capacity = 0;
}

void double_column_append(DoubleColumn* c, MemoryContext mcxt, const double* values, int64 count) {
    if (count <= 0) return;
    if (c->n + count > c->capacity) {
        int64 cap = c->capacity > 0 ? c->capacity : 1024;
        while (cap < c->n + count) cap *= 2;
        Size bytes = static_cast<Size>(cap) * sizeof(double);
        c->data = static_cast<double*>(c->data == nullptr ? MemoryContextAllocHuge(mcxt, bytes)
                                                          : repalloc_huge(c->data, bytes));
        c->capacity = cap;
    }
    memcpy(c->data + c->n, values, sizeof(double) * count);
    c->n += count;
}

// ---- serialisation -------------------------------------------------------------------

void byte_writer_init(ByteWriter* w) {
    initStringInfo(&w->buf);
    appendStringInfoSpaces(&w->buf, VARHDRSZ);
}

static void put_le(ByteWriter* w, uint64 v, int bytes) {
    char b[8];
    for (int i = 0; i < bytes; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    appendBinaryStringInfo(&w->buf, b, bytes);
}

void put_u8(ByteWriter* w, uint8 v) { put_le(w, v, 1); }
void put_i32(ByteWriter* w, int32 v) { put_le(w, static_cast<uint32>(v), 4); }
void put_i64(ByteWriter* w, int64 v) { put_le(w, static_cast<uint64>(v), 8); }
void put_f64(ByteWriter* w, double v) {
    uint64 bits;
    memcpy(&bits, &v, 8);
    put_le(w, bits, 8);
}
void put_f64s(ByteWriter* w, const double* v, int64 n) {
#ifdef WORDS_BIGENDIAN
    for (int64 i = 0; i < n; ++i) put_f64(w, v[i]);
#else
    // Little-endian host: the in-memory layout is the stored layout.
    if (static_cast<Size>(w->buf.len) + static_cast<Size>(n) * 8 >= MaxAllocSize)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("serialised value would exceed 1 GB (%lld float8 values)", static_cast<long long>(n)),
                        errhint("Use a smaller sample, or SET max_parallel_workers_per_gather = 0.")));
    appendBinaryStringInfo(&w->buf, reinterpret_cast<const char*>(v), static_cast<int>(n * 8));
#endif
}

bytea* byte_writer_finish(ByteWriter* w) {
    bytea* b = reinterpret_cast<bytea*>(w->buf.data);
    SET_VARSIZE(b, w->buf.len);
    return b;
}

void byte_reader_init_raw(ByteReader* r, const char* data, size_t len, const char* what) {
    r->p = data;
    r->end = data + len;
    r->what = what;
}

void byte_reader_init(ByteReader* r, const bytea* b, const char* what) {
    byte_reader_init_raw(r, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), what);
}

static void need(ByteReader* r, int64 bytes) {
    if (bytes < 0 || r->end - r->p < bytes)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("invalid %s: value is truncated", r->what)));
}

static uint64 get_le(ByteReader* r, int bytes) {
    need(r, bytes);
    uint64 v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64>(static_cast<unsigned char>(r->p[i])) << (8 * i);
    r->p += bytes;
    return v;
}

uint8 get_u8(ByteReader* r) { return static_cast<uint8>(get_le(r, 1)); }
int32 get_i32(ByteReader* r) { return static_cast<int32>(static_cast<uint32>(get_le(r, 4))); }
int64 get_i64(ByteReader* r) { return static_cast<int64>(get_le(r, 8)); }
double get_f64(ByteReader* r) {
    uint64 bits = get_le(r, 8);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}
void get_f64s(ByteReader* r, double* out, int64 n) {
    if (n < 0 || n > (r->end - r->p) / 8) need(r, -1);
#ifdef WORDS_BIGENDIAN
    for (int64 i = 0; i < n; ++i) out[i] = get_f64(r);
#else
    memcpy(out, r->p, static_cast<size_t>(n) * 8);
    r->p += n * 8;
#endif
}
void byte_reader_expect_end(ByteReader* r) {
    if (r->p != r->end)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("invalid %s: %lld trailing bytes", r->what, static_cast<long long>(r->end - r->p))));
}

// ---- introspection -------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_device_info) {
    char why[256] = {0};
    approx::gpu::DeviceInfo info[16];
    int count = 0, runtime_version = 0, driver_version = 0;
    bool usable;
    // With the GPU service, its devices (and no CUDA context in this backend).
    const ServiceShared* service = gpu_service_transport() ? gpu_service_shared() : nullptr;
    if (service && service->gpu_usable) {
        usable = true;
        count = service->n_devices;
        for (int i = 0; i < count && i < 16; ++i) info[i] = service->devices[i];
        runtime_version = service->runtime_version;
        driver_version = service->driver_version;
    } else {
        usable = approx::gpu::available(why, sizeof why);
        count = approx::gpu::devices(info, 16);
        approx::gpu::versions(runtime_version, driver_version);
    }

    JsonbBuilder j;
    j.begin_object();
    j.add_bool("compiled_with_cuda", approx::gpu_compiled_in());
    j.add_bool("gpu_available", usable);
    if (!usable) j.add_string("reason", why);
    j.add_string("gpu_calls_run_in", service ? "the gpu service" : "this backend");
    j.add_string("device_setting", device_options[device_setting].name);
    j.add_int("cpu_threads", effective_cpu_threads());
    if (runtime_version) j.add_int("cuda_runtime_version", runtime_version);
    if (driver_version) j.add_int("cuda_driver_version", driver_version);
    j.add_int("gpu_bytes_in_use", approx::gpu::bytes_in_use());
    j.begin_array("devices");
    for (int i = 0; i < count && i < 16; ++i) {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", info[i].cc_major, info[i].cc_minor);
        j.begin_object();
        j.add_int("index", info[i].index);
        j.add_string("name", info[i].name);
        j.add_string("compute_capability", cc);
        j.add_int("multiprocessors", info[i].multiprocessors);
        j.add_int("total_bytes", info[i].total_bytes);
        j.add_int("free_bytes", info[i].free_bytes);
        j.end_object();
    }
    j.end_array();
    j.end_object();
    PG_RETURN_JSONB_P(j.finish());
}

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
