// Glue-side runtime shared by every feature: PostgreSQL headers, settings,
// argument readers, the engine call wrapper and the error boundary.
//
// Only src/*.cpp include this (the engines never see PostgreSQL). Rules that
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
#include "utils/expandeddatum.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
}

#include "core/exec.hpp"

// Declares an SQL-callable C function with C linkage.
#define APPROX_FUNCTION(name)                \
    extern "C" {                             \
    PG_FUNCTION_INFO_V1(name);               \
    }                                        \
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

// The seed of a sampling call: approx_gpu.random_seed when set, else a fresh
// one from pg_strong_random(). Touches no statistics (unlike exec_context()).
uint64 random_seed_for_call(void);

// Where the last engine call recorded its statistics (approx_gpu.last_run()).
approx::RunStats& last_run_stats(void);

// Where the answer of the last approximate SQL aggregate query came from
// (issue 13): last_run() adds "answered_from" ("synopsis" or "rows"), and
// "reason" / "synopsis" when given (nullptr: omitted). Cleared by every
// exec_context(). last_run_rows() also starts a fresh record for `op` (the
// exact path runs no engine).
void last_run_set_answer(const char* answered_from, const char* reason, const char* synopsis);
void last_run_rows(const char* op, const char* reason);

// How the last call read its input ("parallel scan", "query", ...; nullptr
// clears); last_run() reports it as "read". Cleared by every exec_context().
void last_run_set_read(const char* path);

// Milliseconds between two calls, for RunStats::ms_read.
double glue_clock_ms(void);

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

// ---- arguments ------------------------------------------------------------------
// float8 values of an array argument, NULL elements skipped (counted), checked
// for NaN (and ±Infinity unless allowed). palloc'd; 1-D (or empty) only.
struct FloatArray {
    double* data;
    int64 n;
    int64 skipped;
};
FloatArray float_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, bool allow_infinity);
// Argument argno as a flat array, to read only. PL/pgSQL keeps array
// variables in expanded form; one that still holds its flat copy is read
// through it instead of being flattened into a new one (a 10^4 x 2 float8
// array is 160 kB of fresh memory per call).
ArrayType* array_arg_flat(FunctionCallInfo fcinfo, int argno);

// An n x d point matrix: a 2-D array (one point per row) or a 1-D array (d = 1).
// Rows holding a NULL are skipped (counted). NaN / ±Infinity are errors.
struct PointMatrix {
    double* data;  // row-major n x d
    int64 n;
    int d;
    int64 skipped;
};
PointMatrix point_matrix_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, int max_d);

// One of `choices` (case-insensitive); ERROR 22023 listing them otherwise.
int choice_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, const char* const* choices,
               int n_choices);

// Walks the elements of a float8 array in storage order, the one reader of its
// NULL bitmap: next() reads the next element into v and returns true, or returns
// false (v untouched) when that element is NULL. NULLs take no space in the data
// area. Holds no resources, so it may be live across ereport. The caller checks
// the element type (FLOAT8OID) and reads at most ArrayGetNItems elements.
class Float8Cursor {
public:
    explicit Float8Cursor(ArrayType* a)
        : values_(reinterpret_cast<const double*>(ARR_DATA_PTR(a))), nulls_(ARR_NULLBITMAP(a)) {}
    bool next(double& v) {
        int64 i = index_++;
        if (nulls_ && !(nulls_[i / 8] & (1 << (i % 8)))) return false;
        v = *values_++;
        return true;
    }

private:
    const double* values_;
    const bits8* nulls_;
    int64 index_ = 0;
};

// Checks one float8 value (NaN / ±Infinity) the way the readers above do.
void check_float_value(double v, const char* fn, const char* arg, bool allow_infinity);

// ---- results --------------------------------------------------------------------
// A 1-D or 2-D float8 array.
ArrayType* float8_array(const double* values, int n);
ArrayType* float8_matrix(const double* values, int rows, int cols);

// Minimal jsonb object builder over pushJsonbValue.
class JsonbBuilder {
public:
    JsonbBuilder();
    void begin_object(const char* key = nullptr);  // key = nullptr at top level / inside arrays
    void end_object();
    void begin_array(const char* key);
    void end_array();
    void add_number(const char* key, double v);
    void add_int(const char* key, int64 v);
    void add_string(const char* key, const char* v);
    void add_bool(const char* key, bool v);
    void add_null(const char* key);
    Jsonb* finish();

private:
    void put_key(const char* key);
    JsonbParseState* state_;
    JsonbValue* result_;
};

// ---- aggregates -----------------------------------------------------------------
// The aggregate memory context, or an ERROR if called outside an aggregate.
MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* fn);

// The SQL name of the aggregate a support function (transition, combine,
// final) runs for, so that a function shared by several aggregates reports
// errors as the one the user called; `fallback` outside an aggregate call.
const char* calling_aggregate_name(FunctionCallInfo fcinfo, const char* fallback);

// A growable float8 column in one MemoryContext (no per-row palloc; huge
// allocations past 1 GB).
struct DoubleColumn {
    double* data;
    int64 n;
    int64 capacity;
};
void double_column_init(DoubleColumn* c);
void double_column_append(DoubleColumn* c, MemoryContext mcxt, const double* values, int64 count);

// Serialisation helpers (explicit little-endian layout for every stored value).
struct ByteWriter {
    StringInfoData buf;
};
void byte_writer_init(ByteWriter* w);
void put_u8(ByteWriter* w, uint8 v);
void put_i32(ByteWriter* w, int32 v);
void put_i64(ByteWriter* w, int64 v);
void put_f64(ByteWriter* w, double v);
void put_f64s(ByteWriter* w, const double* v, int64 n);
bytea* byte_writer_finish(ByteWriter* w);

struct ByteReader {
    const char* p;
    const char* end;
    const char* what;  // for error messages: the type or aggregate being read
};
void byte_reader_init(ByteReader* r, const bytea* b, const char* what);
void byte_reader_init_raw(ByteReader* r, const char* data, size_t len, const char* what);
uint8 get_u8(ByteReader* r);
int32 get_i32(ByteReader* r);
int64 get_i64(ByteReader* r);
double get_f64(ByteReader* r);
void get_f64s(ByteReader* r, double* out, int64 n);
void byte_reader_expect_end(ByteReader* r);
