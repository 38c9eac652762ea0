// The sample path's weighted percentiles (sample/internal.h): sample_percentile_cont /
// _disc and their _ci forms. The state is the group's values and strata (no
// partial aggregation: ordered-set answers need every value); the final
// function asks the engine (core/sample_estimate.hpp) for the weighted
// percentile and its Woodruff interval.
#include "aqp/sample/aggregates.h"

#include "runtime/aggregate_state.h"

using namespace sample_aggs;

struct ValueState {
    Oid sample;
    bool has_fraction;   // the first row's fraction is recorded
    bool null_fraction;  // ... and it was NULL (the answer is NULL, as percentile_cont's)
    double fraction;
    bool descending;     // the first row's stratum was negated: ORDER BY x DESC
    int64 n, capacity;
    smp::WeightedValue* rows;
};

// sample_percentile_cont / _disc(x, stratum, sample, fraction): the
// fraction is an argument (the user's direct argument), equal on every row.
// The order is in the stratum's sign (no signature of its own): stratum
// s >= 1 is ORDER BY x, -s ORDER BY x DESC (the rewrite negates it), one
// sign on every row of a group.
APPROX_FUNCTION(approx_gpu_aqp_sample_values_trans) {
    const char* fn = "sample_percentile";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    ValueState* st = PG_ARGISNULL(0) ? static_cast<ValueState*>(MemoryContextAllocZero(mcxt, sizeof(ValueState)))
                                     : reinterpret_cast<ValueState*>(PG_GETARG_POINTER(0));
    const bool descending = !PG_ARGISNULL(2) && PG_GETARG_INT32(2) < 0;
    int32 s;
    if (descending) {
        int32 raw = PG_GETARG_INT32(2);
        if (raw == PG_INT32_MIN) {
            fn = agg_name(fcinfo, fn);
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: argument stratum %d is out of range", fn, raw)));
        }
        s = -raw - 1;
    } else {
        s = stratum_arg(fcinfo, 2, fn);
    }
    if (st->has_fraction && st->descending != descending) {
        fn = agg_name(fcinfo, fn);
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument stratum must have the same sign on every row of a group", fn)));
    }
    check_sample(&st->sample, sample_arg(fcinfo, 3, fn), fcinfo, fn);
    bool null_fraction = PG_ARGISNULL(4);
    double f = null_fraction ? 0 : PG_GETARG_FLOAT8(4);
    if (!st->has_fraction) {
        if (!null_fraction && !(f >= 0 && f <= 1)) {
            fn = agg_name(fcinfo, fn);
            ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                            errmsg("%s: argument fraction %g is not between 0 and 1", fn, f)));
        }
        st->has_fraction = true;
        st->descending = descending;
        st->null_fraction = null_fraction;
        st->fraction = f;
    } else if (st->null_fraction != null_fraction || (!null_fraction && f != st->fraction)) {
        fn = agg_name(fcinfo, fn);
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument fraction must be the same on every row of a group", fn)));
    }
    if (PG_ARGISNULL(1)) PG_RETURN_POINTER(st);
    if (st->n == st->capacity) {
        int64 cap = st->capacity > 0 ? st->capacity * 2 : 64;
        Size bytes = sizeof(smp::WeightedValue) * static_cast<Size>(cap);
        if (bytes > MaxAllocHugeSize / 2) {
            fn = agg_name(fcinfo, fn);
            ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED), errmsg("%s: too many rows in one group", fn)));
        }
        st->rows = static_cast<smp::WeightedValue*>(st->rows ? repalloc_huge(st->rows, bytes)
                                                             : MemoryContextAllocHuge(mcxt, bytes));
        st->capacity = cap;
    }
    st->rows[st->n].value = PG_GETARG_FLOAT8(1);
    st->rows[st->n].stratum = s;
    ++st->n;
    PG_RETURN_POINTER(st);
}

// Sorts the state's rows in place: the same rows in another order, so a
// later final function (a shared state) or transition sees the same group.
static Datum values_final(FunctionCallInfo fcinfo, smp::Percentile kind, bool ci) {
    const char* fn = calling_aggregate_name(fcinfo, "sample_percentile");
    ValueState* st = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<ValueState*>(PG_GETARG_POINTER(0));
    const AqpSampleDesign* d = final_design(fcinfo, st ? st->sample : InvalidOid, 2, fn);
    if (st != nullptr && st->null_fraction) PG_RETURN_NULL();  // percentile_cont(NULL): NULL
    int32 top = -1;
    const int64 n = st != nullptr ? st->n : 0;
    for (int64 i = 0; i < n; ++i) top = Max(top, st->rows[i].stratum);
    if (n > 0) check_stratum_in_design(top, d, fn);
    for (int64 i = 0; i < n; ++i) aqp_sample_guard_saw_stratum(st->rows[i].stratum);
    smp::Stratum* design = engine_design(d);
    smp::Options opt = engine_options(d);
    opt.descending = st != nullptr && st->descending;
    smp::Estimate e;  // no value seen: the engine says whether NULL is exact
    approx::Status status = smp::percentile(kind, n > 0 ? st->fraction : 0, design, d->n_strata,
                                            n > 0 ? st->rows : nullptr, n, opt, e);
    if (!status.ok()) raise_engine_error(status, fn);
    pfree(design);
    return answer(fcinfo, e, ci, fn);
}

APPROX_FUNCTION(approx_gpu_aqp_sample_cont_final) { return values_final(fcinfo, smp::Percentile::Cont, false); }
APPROX_FUNCTION(approx_gpu_aqp_sample_cont_ci_final) { return values_final(fcinfo, smp::Percentile::Cont, true); }
APPROX_FUNCTION(approx_gpu_aqp_sample_disc_final) { return values_final(fcinfo, smp::Percentile::Disc, false); }
APPROX_FUNCTION(approx_gpu_aqp_sample_disc_ci_final) { return values_final(fcinfo, smp::Percentile::Disc, true); }
