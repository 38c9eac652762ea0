// SQL glue for KDE bandwidth selection: kde_bandwidth, kde_lscv and their
// aggregates. Reads and checks arguments, calls approx::kde, builds results.
#include "runtime/runtime.h"
#include "runtime/aggregate_state.h"
#include "runtime/arguments.h"
#include "runtime/byte_codec.h"

extern "C" {
#include "access/htup_details.h"
}

#include <cmath>

#include "core/kde.hpp"

namespace kde = approx::kde;

static const char* const kMethodNames[] = {"plugin", "lscv", "scott", "silverman"};
static const kde::Method kMethods[] = {kde::Method::Plugin, kde::Method::Lscv, kde::Method::Scott,
                                       kde::Method::Silverman};
static const char* const kCovarianceNames[] = {"full", "diagonal"};
static const kde::Covariance kCovariances[] = {kde::Covariance::Full, kde::Covariance::Diagonal};
static constexpr int kDefaultGrid = 150;

static int method_arg(FunctionCallInfo fcinfo, int argno, const char* fn) {
    return choice_arg(fcinfo, argno, fn, "method", kMethodNames, lengthof(kMethodNames));
}

static int grid_arg(FunctionCallInfo fcinfo, int argno, const char* fn) {
    int32 grid = PG_GETARG_INT32(argno);
    if (grid < 2 || grid > 100000)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: grid must be between 2 and 100000, not %d", fn, grid)));
    return grid;
}

// Engine calls: each returns the Status; the callers raise after it.
static double bandwidth_or_raise(const double* x, int64 n, int64 skipped, double ms_read, int method, const char* fn) {
    double h = 0;
    approx::Status st = run_engine(fn, skipped, ms_read, [&](const approx::ExecContext& ctx) {
        return kde::bandwidth(x, static_cast<size_t>(n), kMethods[method], ctx, h);
    });
    check_engine_result(st, fn);
    return h;
}

static Datum lscv_result_datum(FunctionCallInfo fcinfo, const kde::LscvResult& r) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("kde_lscv: result type must be lscv_result")));
    desc = BlessTupleDesc(desc);
    Datum values[5];
    bool nulls[5] = {false, false, false, false, false};
    values[0] = Float8GetDatum(r.h);
    values[1] = PointerGetDatum(float8_matrix(r.bandwidth_matrix, r.d, r.d));
    values[2] = Float8GetDatum(r.objective);
    values[3] = Float8GetDatum(r.h0);
    values[4] = BoolGetDatum(r.at_boundary);
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

static Datum lscv_or_raise(FunctionCallInfo fcinfo, const double* x, int64 n, int d, int64 skipped, double ms_read,
                           int grid, int covariance, const char* fn) {
    // LscvResult is trivially destructible and palloc'd, so an ERROR leaks nothing.
    kde::LscvResult* r = static_cast<kde::LscvResult*>(palloc0(sizeof(kde::LscvResult)));
    approx::Status st = run_engine(fn, skipped, ms_read, [&](const approx::ExecContext& ctx) {
        return kde::lscv(x, static_cast<size_t>(n), d, grid, kCovariances[covariance], ctx, *r);
    });
    check_engine_result(st, fn);
    // h is in whitened units and always representable; h^2 * Sigma is in the
    // data's squared units and is not for data near 1e-160 or 1e155 and beyond.
    for (int a = 0; a < d; ++a) {
        double v = r->bandwidth_matrix[a * d + a];
        if (!std::isfinite(v) || !(v > 0))
            ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                            errmsg("%s: the bandwidth matrix h^2*S of x %s double precision (column %d's "
                                   "variance is %s)",
                                   fn, v > 0 ? "overflows" : "underflows", a + 1, v > 0 ? "too large" : "too small"),
                            errhint("Scale x (the bandwidth h = %.17g is in units of the covariance).", r->h)));
    }
    return lscv_result_datum(fcinfo, *r);
}

APPROX_FUNCTION(approx_gpu_kde_bandwidth) {
    const char* fn = "kde_bandwidth";
    double t0 = glue_clock_ms();
    FloatArray x = float_array_arg(fcinfo, 0, fn, "x", false);
    int method = method_arg(fcinfo, 1, fn);
    double h = bandwidth_or_raise(x.data, x.n, x.skipped, glue_clock_ms() - t0, method, fn);
    PG_RETURN_FLOAT8(h);
}

APPROX_FUNCTION(approx_gpu_kde_lscv) {
    const char* fn = "kde_lscv";
    double t0 = glue_clock_ms();
    PointMatrix x = point_matrix_arg(fcinfo, 0, fn, "x", kde::kMaxLscvDim);
    int grid = grid_arg(fcinfo, 1, fn);
    int covariance = choice_arg(fcinfo, 2, fn, "covariance", kCovarianceNames, lengthof(kCovarianceNames));
    return lscv_or_raise(fcinfo, x.data, x.n, x.d, x.skipped, glue_clock_ms() - t0, grid, covariance, fn);
}

// ---- aggregates: kde_bandwidth_agg(x [, method]) and kde_lscv_agg(x [, grid]) ----------

// One state type for both aggregates: the points (n x d, row-major) and the
// optional extra argument, which must be equal on every row of a group.
struct KdePointsState {
    int32 d;         // 0 until the first point
    int32 param;     // method index (bandwidth) or grid (lscv)
    bool has_param;  // the extra argument was given
    int64 skipped;   // rows skipped for a NULL
    DoubleColumn values;
};

static constexpr uint8 kStateVersion = 1;

static KdePointsState* points_state(FunctionCallInfo fcinfo, MemoryContext mcxt) {
    if (!PG_ARGISNULL(0)) return reinterpret_cast<KdePointsState*>(PG_GETARG_POINTER(0));
    KdePointsState* s = static_cast<KdePointsState*>(MemoryContextAllocZero(mcxt, sizeof(KdePointsState)));
    double_column_init(&s->values);
    return s;
}

static void set_param(KdePointsState* s, int32 param, const char* fn, const char* arg) {
    if (s->has_param && s->param != param)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: %s must be the same on every row of a group", fn, arg)));
    s->param = param;
    s->has_param = true;
}

// The parameter argument (method, grid) is the same on every row: a NULL one
// is an error, never a skipped row (the transition functions are not strict,
// so PostgreSQL calls them for such rows; a NULL x is skipped and counted).
static void check_param_not_null(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg) {
    if (PG_NARGS() > argno && PG_ARGISNULL(argno))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: %s must not be NULL", fn, arg)));
}

APPROX_FUNCTION(approx_gpu_kde_bandwidth_sfunc) {
    const char* fn = "kde_bandwidth_agg";
    check_param_not_null(fcinfo, 2, fn, "method");
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    KdePointsState* s = points_state(fcinfo, mcxt);
    s->d = 1;
    if (PG_NARGS() > 2) set_param(s, method_arg(fcinfo, 2, fn), fn, "method");
    if (PG_ARGISNULL(1)) {
        ++s->skipped;
        PG_RETURN_POINTER(s);
    }
    double v = PG_GETARG_FLOAT8(1);
    check_float_value(v, fn, "x", false);
    double_column_append(&s->values, mcxt, &v, 1);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_kde_lscv_sfunc) {
    const char* fn = "kde_lscv_agg";
    check_param_not_null(fcinfo, 2, fn, "grid");
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    KdePointsState* s = points_state(fcinfo, mcxt);
    if (PG_NARGS() > 2) set_param(s, grid_arg(fcinfo, 2, fn), fn, "grid");
    if (PG_ARGISNULL(1)) {
        ++s->skipped;
        PG_RETURN_POINTER(s);
    }
    FloatArray x = float_array_arg(fcinfo, 1, fn, "x", false);
    if (x.skipped > 0 || x.n == 0) {  // a point with a NULL coordinate is skipped, like a NULL row
        ++s->skipped;
        pfree(x.data);
        PG_RETURN_POINTER(s);
    }
    if (x.n > kde::kMaxLscvDim)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("%s: x has %lld coordinates; at most %d are supported",
                                                                 fn, static_cast<long long>(x.n), kde::kMaxLscvDim)));
    if (s->d != 0 && s->d != x.n)
        ereport(ERROR,
                (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR), errmsg("%s: every x must have the same length (%d), got %lld",
                                                                fn, s->d, static_cast<long long>(x.n))));
    s->d = static_cast<int32>(x.n);
    double_column_append(&s->values, mcxt, x.data, x.n);
    pfree(x.data);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_kde_points_combine) {
    const char* fn = "kde aggregate combine";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    if (PG_ARGISNULL(1)) {
        if (PG_ARGISNULL(0)) PG_RETURN_NULL();
        PG_RETURN_POINTER(PG_GETARG_POINTER(0));
    }
    KdePointsState* s = points_state(fcinfo, mcxt);
    KdePointsState* other = reinterpret_cast<KdePointsState*>(PG_GETARG_POINTER(1));
    if (other->has_param) set_param(s, other->param, "kde aggregate", "the extra argument");
    if (other->d != 0) {
        if (s->d != 0 && s->d != other->d)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("kde aggregate: every x must have the same length (%d), got %d", s->d, other->d)));
        s->d = other->d;
    }
    s->skipped += other->skipped;
    double_column_append(&s->values, mcxt, other->values.data, other->values.n);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_kde_points_serial) {
    KdePointsState* s = reinterpret_cast<KdePointsState*>(PG_GETARG_POINTER(0));
    ByteWriter w;
    byte_writer_init(&w);
    put_u8(&w, kStateVersion);
    put_i32(&w, s->d);
    put_i32(&w, s->param);
    put_u8(&w, s->has_param ? 1 : 0);
    put_i64(&w, s->skipped);
    put_i64(&w, s->values.n);
    put_f64s(&w, s->values.data, s->values.n);
    PG_RETURN_BYTEA_P(byte_writer_finish(&w));
}

APPROX_FUNCTION(approx_gpu_kde_points_deserial) {
    MemoryContext mcxt = aggregate_context(fcinfo, "kde aggregate deserialize");
    ByteReader r;
    byte_reader_init(&r, PG_GETARG_BYTEA_PP(0), "kde aggregate state");
    if (get_u8(&r) != kStateVersion)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("unsupported kde aggregate state version")));
    KdePointsState* s = static_cast<KdePointsState*>(MemoryContextAllocZero(mcxt, sizeof(KdePointsState)));
    double_column_init(&s->values);
    s->d = get_i32(&r);
    s->param = get_i32(&r);
    s->has_param = get_u8(&r) != 0;
    s->skipped = get_i64(&r);
    int64 n = get_i64(&r);
    if (s->d < 0 || s->d > kde::kMaxLscvDim || n < 0 || s->skipped < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid kde aggregate state")));
    if (n > 0) {
        s->values.data = static_cast<double*>(MemoryContextAllocHuge(mcxt, static_cast<Size>(n) * sizeof(double)));
        s->values.capacity = n;
        get_f64s(&r, s->values.data, n);
        s->values.n = n;
    }
    byte_reader_expect_end(&r);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_kde_bandwidth_final) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    KdePointsState* s = reinterpret_cast<KdePointsState*>(PG_GETARG_POINTER(0));
    if (s->values.n == 0) PG_RETURN_NULL();  // no rows: NULL, like avg()
    int method = s->has_param ? s->param : 0;
    PG_RETURN_FLOAT8(bandwidth_or_raise(s->values.data, s->values.n, s->skipped, 0, method, "kde_bandwidth_agg"));
}

APPROX_FUNCTION(approx_gpu_kde_lscv_final) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    KdePointsState* s = reinterpret_cast<KdePointsState*>(PG_GETARG_POINTER(0));
    if (s->values.n == 0) PG_RETURN_NULL();
    int grid = s->has_param ? s->param : kDefaultGrid;
    int64 n = s->values.n / s->d;
    return lscv_or_raise(fcinfo, s->values.data, n, s->d, s->skipped, 0, grid, 0, "kde_lscv_agg");
}
