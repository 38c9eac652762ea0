// Box estimates on a kde_synopsis value: approx_count / approx_sum /
// approx_avg (+ _ci, _many) and kde_density.
#include "synopsis/synopsis.h"
#include "runtime/arguments.h"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "tcop/dest.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
}

#include <cmath>

namespace synopsis_glue {

// ---- boxes ---------------------------------------------------------------------------------------

// Box bounds from a float8 array: NULL and +-Infinity = unbounded, NaN = error.
// rows = -1: a 1-D array of d values (one box); otherwise a q x d 2-D array.
const double* bounds_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, int d, bool upper,
                         bool many, int64& q) {
    ArrayType* a = array_arg_flat(fcinfo, argno);
    if (ARR_ELEMTYPE(a) != FLOAT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("%s: %s must be a float8 array", fn, arg)));
    int ndim = ARR_NDIM(a);
    int total = ArrayGetNItems(ndim, ARR_DIMS(a));
    if (many) {
        if (ndim == 0) {
            q = 0;
        } else if (ndim == 2 && ARR_DIMS(a)[1] == d) {
            q = ARR_DIMS(a)[0];
        } else if (ndim == 2) {
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("%s: %s has %d columns; the synopsis has %d", fn, arg, ARR_DIMS(a)[1], d)));
        } else {
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("%s: %s must be a q x %d two-dimensional array (one box per row)", fn, arg, d)));
        }
    } else {
        if (ndim != 1 || total != d)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("%s: %s must be a one-dimensional array of %d values (one per column), not %d", fn,
                                   arg, d, total)));
        q = 1;
    }
    if (!ARR_HASNULL(a) && q > 0) {
        // No NULLs: the array's own data, checked in place (no copy: a batch
        // of 10^4 boxes is 160 kB a side).
        const double* values = reinterpret_cast<const double*>(ARR_DATA_PTR(a));
        for (int64 i = 0; i < q * d; ++i) check_float_value(values[i], fn, arg, true);
        return values;
    }
    double* out = static_cast<double*>(palloc_extended(sizeof(double) * std::max<int64>(1, q * d), MCXT_ALLOC_HUGE));
    Float8Cursor elements(a);
    for (int64 i = 0; i < q * d; ++i) {
        double v;
        if (!elements.next(v)) {
            out[i] = upper ? INFINITY : -INFINITY;
            continue;
        }
        check_float_value(v, fn, arg, true);
        out[i] = v;
    }
    return out;
}

// The column of SUM / AVG: a number column (a table synopsis' dates and
// dictionary codes have no SQL sum, as in synopsis_predicate.cpp).
int column_arg(FunctionCallInfo fcinfo, int argno, const SynValue* v, const char* fn) {
    int d = v->s.d;
    int32 col = PG_GETARG_INT32(argno);
    if (col < 1 || col > d)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: col must be between 1 and %d, not %d", fn, d, col)));
    if (v->encoding[col - 1] != static_cast<uint8>(ValueEncoding::Number))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("%s: argument col: column %d is a %s column, not a number; it has no sum or average",
                               fn, col, kEncodingNames[v->encoding[col - 1]])));
    return col - 1;
}

// Runs the engine over q boxes; out is palloc'd.
syn::BoxEstimate* run_boxes(const SynValue* v, int64 q, const double* lo, const double* hi, syn::Aggregate agg,
                            int column, const char* fn, syn::BoxEstimate* out) {
    if (out == nullptr)
        out = static_cast<syn::BoxEstimate*>(palloc_extended(sizeof(syn::BoxEstimate) * std::max<int64>(1, q),
                                                             MCXT_ALLOC_HUGE));
    syn::BoxBatch batch;
    batch.q = q;
    batch.lo = lo;
    batch.hi = hi;
    batch.agg = agg;
    batch.column = column;
    // A bounded column compares its value, and a NULL satisfies no comparison
    // (as in WHERE); an unbounded one lets NULLs through.
    bool has_nulls = false;
    for (int j = 0; j < v->s.d; ++j) has_nulls |= v->s.cols[j].null_count > 0;
    if (has_nulls) {
        uint8* nulls = static_cast<uint8*>(palloc_extended(std::max<int64>(1, q * v->s.d), MCXT_ALLOC_HUGE));
        for (int64 i = 0; i < q * v->s.d; ++i)
            nulls[i] = static_cast<uint8>(lo[i] > -INFINITY || hi[i] < INFINITY ? syn::NullPolicy::NotNull
                                                                                : syn::NullPolicy::Any);
        batch.nulls = nulls;
    }
    approx::Status st =
        run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) { return syn::evaluate(v->s, batch, ctx, out); });
    check_engine_result(st, fn);
    return out;
}

// SUM over boxes whose sample rows all hold NULL in the column is NULL, as
// sum() (a box with no sample row at all stays an estimate of 0 with its
// interval): marks them NaN. Only a column with NULLs needs the COUNT.
void null_sums(const SynValue* v, int64 q, const double* lo, const double* hi, int column, const char* fn,
                      syn::BoxEstimate* e) {
    if (v->s.cols[column].null_count == 0) return;
    bool any = false;
    for (int64 i = 0; i < q && !any; ++i) any = e[i].support == 0;
    if (!any) return;
    syn::BoxEstimate* rows = run_boxes(v, q, lo, hi, syn::Aggregate::Count, 0, fn);
    for (int64 i = 0; i < q; ++i)
        if (e[i].support == 0 && rows[i].support > 0) e[i].estimate = NAN;
    pfree(rows);
}

// A buffer for q estimates that lives as long as the backend (up to 32 MB;
// larger batches get a palloc'd one): the many-box forms run again and again,
// and a fresh buffer of 10^4 estimates (320 kB) costs a page fault per 4 kB
// on every call -- more than the copy into it. Valid until the next call.
static syn::BoxEstimate* estimate_scratch(int64 q) {
    static syn::BoxEstimate* buffer = nullptr;
    static int64 capacity = 0;
    constexpr int64 kMaxScratch = (int64(32) << 20) / sizeof(syn::BoxEstimate);
    if (q > kMaxScratch) return nullptr;
    if (q > capacity) {
        if (buffer) pfree(buffer);
        buffer = nullptr;
        capacity = 0;
        const int64 want = std::max<int64>(q, 1024);
        buffer = static_cast<syn::BoxEstimate*>(MemoryContextAlloc(TopMemoryContext, sizeof(syn::BoxEstimate) * want));
        capacity = want;
    }
    return buffer;
}

Datum estimate_datum(FunctionCallInfo fcinfo, const syn::BoxEstimate& e) {
    if (std::isnan(e.estimate)) PG_RETURN_NULL();
    PG_RETURN_FLOAT8(e.estimate);
}

// The one-box forms' arguments: (s, lo, hi) for COUNT, (s, col, lo, hi) for
// SUM and AVG; next_arg is the argument after hi.
struct OneBox {
    const SynValue* v;
    int column;
    const double* lo;
    const double* hi;
    int next_arg;
};

OneBox one_box_args(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    OneBox b;
    b.v = synopsis_arg_shared(fcinfo, 0);
    int base = agg == syn::Aggregate::Count ? 1 : 2;
    b.column = agg == syn::Aggregate::Count ? 0 : column_arg(fcinfo, 1, b.v, fn);
    int64 q;
    b.lo = bounds_arg(fcinfo, base, fn, "lo", b.v->s.d, false, false, q);
    b.hi = bounds_arg(fcinfo, base + 1, fn, "hi", b.v->s.d, true, false, q);
    b.next_arg = base + 2;
    return b;
}

Datum one_box(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    OneBox b = one_box_args(fcinfo, agg, fn);
    syn::BoxEstimate* e = run_boxes(b.v, 1, b.lo, b.hi, agg, b.column, fn);
    if (agg == syn::Aggregate::Sum) null_sums(b.v, 1, b.lo, b.hi, b.column, fn, e);
    return estimate_datum(fcinfo, e[0]);
}

Datum one_box_ci(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    OneBox b = one_box_args(fcinfo, agg, fn);
    double confidence = PG_GETARG_FLOAT8(b.next_arg);
    if (!(confidence > 0 && confidence < 1))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: confidence must be between 0 and 1 (exclusive), not %g", fn, confidence)));
    syn::BoxEstimate* e = run_boxes(b.v, 1, b.lo, b.hi, agg, b.column, fn);
    if (agg == syn::Aggregate::Sum) null_sums(b.v, 1, b.lo, b.hi, b.column, fn, e);
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s: result type must be approx_estimate", fn)));
    desc = BlessTupleDesc(desc);
    Datum values[3];
    bool nulls[3] = {false, false, false};
    if (std::isnan(e[0].estimate)) {
        nulls[0] = nulls[1] = nulls[2] = true;
    } else {
        double lower, upper;
        syn::interval(b.v->s, agg, e[0], confidence, lower, upper);
        values[0] = Float8GetDatum(e[0].estimate);
        values[1] = Float8GetDatum(lower);
        values[2] = Float8GetDatum(upper);
    }
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

Datum many_boxes(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    const SynValue* v = synopsis_arg_shared(fcinfo, 0);
    int base = agg == syn::Aggregate::Count ? 1 : 2;
    int column = agg == syn::Aggregate::Count ? 0 : column_arg(fcinfo, 1, v, fn);
    int64 q_lo, q_hi;
    const double* lo = bounds_arg(fcinfo, base, fn, "lo", v->s.d, false, true, q_lo);
    const double* hi = bounds_arg(fcinfo, base + 1, fn, "hi", v->s.d, true, true, q_hi);
    if (q_lo != q_hi)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: lo has " INT64_FORMAT " boxes and hi " INT64_FORMAT, fn, q_lo, q_hi)));
    if (q_lo == 0) PG_RETURN_ARRAYTYPE_P(construct_empty_array(FLOAT8OID));
    syn::BoxEstimate* e = run_boxes(v, q_lo, lo, hi, agg, column, fn, estimate_scratch(q_lo));
    if (agg == syn::Aggregate::Sum) null_sums(v, q_lo, lo, hi, column, fn, e);
    int64 n_null = 0;
    for (int64 i = 0; i < q_lo; ++i) n_null += std::isnan(e[i].estimate);
    int dims[1] = {static_cast<int>(q_lo)};
    int lbs[1] = {1};
    if (n_null > 0) {
        Datum* values = static_cast<Datum*>(palloc(sizeof(Datum) * q_lo));
        bool* nulls = static_cast<bool*>(palloc(sizeof(bool) * q_lo));
        for (int64 i = 0; i < q_lo; ++i) {
            nulls[i] = std::isnan(e[i].estimate);
            values[i] = Float8GetDatum(nulls[i] ? 0 : e[i].estimate);
        }
        PG_RETURN_ARRAYTYPE_P(construct_md_array(values, nulls, 1, dims, lbs, FLOAT8OID, 8, FLOAT8PASSBYVAL,
                                                 TYPALIGN_DOUBLE));
    }
    // No NULLs (the usual case): the estimates straight into a flat array.
    const Size bytes = ARR_OVERHEAD_NONULLS(1) + sizeof(double) * static_cast<Size>(q_lo);
    ArrayType* out = static_cast<ArrayType*>(palloc_extended(bytes, MCXT_ALLOC_HUGE));
    SET_VARSIZE(out, bytes);
    out->ndim = 1;
    out->dataoffset = 0;
    out->elemtype = FLOAT8OID;
    ARR_DIMS(out)[0] = dims[0];
    ARR_LBOUND(out)[0] = lbs[0];
    double* data = reinterpret_cast<double*>(ARR_DATA_PTR(out));
    for (int64 i = 0; i < q_lo; ++i) data[i] = e[i].estimate;
    PG_RETURN_ARRAYTYPE_P(out);
}

}  // namespace synopsis_glue

using namespace synopsis_glue;

APPROX_FUNCTION(approx_gpu_approx_count) { return one_box(fcinfo, syn::Aggregate::Count, "approx_count"); }
APPROX_FUNCTION(approx_gpu_approx_sum) { return one_box(fcinfo, syn::Aggregate::Sum, "approx_sum"); }
APPROX_FUNCTION(approx_gpu_approx_avg) { return one_box(fcinfo, syn::Aggregate::Avg, "approx_avg"); }
APPROX_FUNCTION(approx_gpu_approx_count_ci) { return one_box_ci(fcinfo, syn::Aggregate::Count, "approx_count_ci"); }
APPROX_FUNCTION(approx_gpu_approx_sum_ci) { return one_box_ci(fcinfo, syn::Aggregate::Sum, "approx_sum_ci"); }
APPROX_FUNCTION(approx_gpu_approx_avg_ci) { return one_box_ci(fcinfo, syn::Aggregate::Avg, "approx_avg_ci"); }
APPROX_FUNCTION(approx_gpu_approx_count_many) { return many_boxes(fcinfo, syn::Aggregate::Count, "approx_count_many"); }
APPROX_FUNCTION(approx_gpu_approx_sum_many) { return many_boxes(fcinfo, syn::Aggregate::Sum, "approx_sum_many"); }
APPROX_FUNCTION(approx_gpu_approx_avg_many) { return many_boxes(fcinfo, syn::Aggregate::Avg, "approx_avg_many"); }

APPROX_FUNCTION(approx_gpu_kde_density) {
    const char* fn = "kde_density";
    SynValue* v = synopsis_arg(fcinfo, 0);
    FloatArray x = float_array_arg(fcinfo, 1, fn, "x", false);
    if (x.skipped > 0) PG_RETURN_NULL();
    if (x.n != v->s.d)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: x has " INT64_FORMAT " values; the synopsis has %d columns", fn, x.n, v->s.d)));
    double f = 0;
    approx::Status st = run_engine(fn, 0, 0,
                                   [&](const approx::ExecContext& ctx) { return syn::density(v->s, x.data, ctx, f); });
    check_engine_result(st, fn);
    PG_RETURN_FLOAT8(f);
}
