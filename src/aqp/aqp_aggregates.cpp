// The approx_* aggregates over rows: run over rows they give the exact answer
// (count(*) and count(x) as float8, sum and avg like sum(float8) and
// avg(float8), the percentiles as percentile_cont / percentile_disc, the _ci
// forms with lower = upper = estimate). The planner hooks and the CustomScans
// of the two paths (aqp.h) answer the same Aggrefs from a synopsis.
//
// The transition functions carry a planner support function,
// approx_gpu_aqp_support: the planner calls it while costing aggregates
// (get_agg_clause_costs -> add_function_cost -> SupportRequestCost, see
// PostgreSQL's optimizer/prep/prepagg.c and optimizer/util/plancat.c), which
// loads this library -- and so installs the create_upper_paths_hook from
// _PG_init -- during planning of a session's first query, before
// create_ordinary_grouping_paths consults the hook. The planner_hook itself
// was passed by before that, so the support function also notes this
// planning, and the statement is planned again through the hook at its
// executor start (aqp_first_statement.cpp). shared_preload_libraries =
// 'approx_gpu' is the alternative.
#include "aqp/aqp.h"
#include "runtime/aggregate_state.h"

#include <cmath>

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/supportnodes.h"
#include "common/int.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

double aqp_confidence = 0.95;
double aqp_max_relative_error = 0;
double aqp_max_missing_groups = 0.05;

// ---- transition and final functions ------------------------------------------------

APPROX_FUNCTION(approx_gpu_aqp_count_trans) {
    int64 result;
    if (unlikely(pg_add_s64_overflow(PG_GETARG_INT64(0), 1, &result)))
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("approx_count: bigint out of range")));
    PG_RETURN_INT64(result);
}

// sum(float8)'s transition (float8pl): the first non-NULL value is the state
// (strict, no initial value), so no rows give NULL, like sum(float8).
APPROX_FUNCTION(approx_gpu_aqp_sum_trans) { PG_RETURN_FLOAT8(float8_pl(PG_GETARG_FLOAT8(0), PG_GETARG_FLOAT8(1))); }

// avg(float8)'s transition (float8_accum: N, Sx, Sxx updated in place inside
// an aggregate); the combine and final functions are float8_combine and
// float8_avg themselves.
// The avg state (N, Sx, Sxx), checked before float8_accum (whose own check is
// an elog, XX000) or the final function reads it.
static const double* avg_state(ArrayType* a, const char* fn) {
    if (ARR_NDIM(a) != 1 || ARR_DIMS(a)[0] != 3 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: state must be float8[3]", fn)));
    return reinterpret_cast<const double*>(ARR_DATA_PTR(a));
}

APPROX_FUNCTION(approx_gpu_aqp_avg_trans) {
    avg_state(PG_GETARG_ARRAYTYPE_P(0), "approx_avg");
    return float8_accum(fcinfo);
}

APPROX_FUNCTION(approx_gpu_aqp_count_final) { PG_RETURN_FLOAT8(static_cast<double>(PG_GETARG_INT64(0))); }

// An approx_estimate (estimate, lower, upper) of an exact answer.
static Datum exact_estimate(FunctionCallInfo fcinfo, double v, const char* fn) {
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s: result type must be approx_estimate", fn)));
    desc = BlessTupleDesc(desc);
    Datum values[3] = {Float8GetDatum(v), Float8GetDatum(v), Float8GetDatum(v)};
    bool nulls[3] = {false, false, false};
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

APPROX_FUNCTION(approx_gpu_aqp_count_ci_final) {
    return exact_estimate(fcinfo, static_cast<double>(PG_GETARG_INT64(0)), "approx_count_ci");
}

APPROX_FUNCTION(approx_gpu_aqp_sum_ci_final) { return exact_estimate(fcinfo, PG_GETARG_FLOAT8(0), "approx_sum_ci"); }

// float8_avg's arithmetic on the {N, Sx, Sxx} state: NULL for no rows.
APPROX_FUNCTION(approx_gpu_aqp_avg_ci_final) {
    const double* t = avg_state(PG_GETARG_ARRAYTYPE_P(0), "approx_avg_ci");
    if (t[0] == 0.0) PG_RETURN_NULL();
    return exact_estimate(fcinfo, t[1] / t[0], "approx_avg_ci");
}

// ---- approx_percentile_cont / _disc over rows: percentile_cont / percentile_disc --------------
// The ordered-set machinery is PostgreSQL's own (utils/adt/orderedsetaggs.c):
// the transition and final functions forward their fcinfo to
// ordered_set_transition and percentile_*_final, so the answers are theirs;
// the wrappers carry the support function and name this extension's
// aggregate in the fraction's error.

// (Called outside an aggregate, PostgreSQL's functions raise XX000 or assert:
// checked first, as 0A000.)
APPROX_FUNCTION(approx_gpu_aqp_ordered_set_trans) {
    aggregate_context(fcinfo, "approx_percentile transition");
    return ordered_set_transition(fcinfo);
}

// percentile_*_final's check of the direct argument, naming the aggregate.
static bool fraction_is_null(FunctionCallInfo fcinfo, const char* fn) {
    aggregate_context(fcinfo, fn);
    if (PG_ARGISNULL(1)) return true;
    double f = PG_GETARG_FLOAT8(1);
    if (!(f >= 0 && f <= 1))
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("%s: fraction %g is not between 0 and 1", fn, f)));
    return false;
}

APPROX_FUNCTION(approx_gpu_aqp_percentile_cont_final) {
    if (fraction_is_null(fcinfo, "approx_percentile_cont")) PG_RETURN_NULL();
    return percentile_cont_float8_final(fcinfo);
}

APPROX_FUNCTION(approx_gpu_aqp_percentile_disc_final) {
    if (fraction_is_null(fcinfo, "approx_percentile_disc")) PG_RETURN_NULL();
    return percentile_disc_final(fcinfo);
}

static Datum percentile_ci(FunctionCallInfo fcinfo, bool cont, const char* fn) {
    if (fraction_is_null(fcinfo, fn)) PG_RETURN_NULL();
    Datum v = cont ? percentile_cont_float8_final(fcinfo) : percentile_disc_final(fcinfo);
    if (fcinfo->isnull) PG_RETURN_NULL();  // no rows
    return exact_estimate(fcinfo, DatumGetFloat8(v), fn);
}

APPROX_FUNCTION(approx_gpu_aqp_percentile_cont_ci_final) {
    return percentile_ci(fcinfo, true, "approx_percentile_cont_ci");
}
APPROX_FUNCTION(approx_gpu_aqp_percentile_disc_ci_final) {
    return percentile_ci(fcinfo, false, "approx_percentile_disc_ci");
}

// The planner support function of the transition functions: answers no
// request (NULL = "no information"); being called is its purpose (see the
// top). Called before the planner hook has planned anything, it notes the
// planning that loaded the library: that statement is planned again at its
// executor start (aqp_first_statement.cpp).
APPROX_FUNCTION(approx_gpu_aqp_support) {
    Node* req = reinterpret_cast<Node*>(PG_GETARG_POINTER(0));
    if (IsA(req, SupportRequestCost) && !aqp_planner_hook_seen())
        aqp_note_unhooked_planning(reinterpret_cast<SupportRequestCost*>(req)->root);
    PG_RETURN_POINTER(nullptr);
}

// ---- the aggregates' OIDs -------------------------------------------------------

struct AggName {
    const char* name;
    int nargs;  // 0: (*)
    Oid args[2];
    AqpAgg agg;
};
static const AggName kAggs[] = {
    {"approx_count", 0, {}, {AQP_COUNT, false}},
    {"approx_sum", 1, {FLOAT8OID}, {AQP_SUM, false}},
    {"approx_avg", 1, {FLOAT8OID}, {AQP_AVG, false}},
    {"approx_count_ci", 0, {}, {AQP_COUNT, true}},
    {"approx_sum_ci", 1, {FLOAT8OID}, {AQP_SUM, true}},
    {"approx_avg_ci", 1, {FLOAT8OID}, {AQP_AVG, true}},
    {"approx_count", 1, {ANYOID}, {AQP_COUNT_VALUE, false}},
    {"approx_count_ci", 1, {ANYOID}, {AQP_COUNT_VALUE, true}},
    // ordered-set aggregates: the direct argument, then the ordered one
    {"approx_percentile_cont", 2, {FLOAT8OID, FLOAT8OID}, {AQP_PERCENTILE_CONT, false}},
    {"approx_percentile_cont_ci", 2, {FLOAT8OID, FLOAT8OID}, {AQP_PERCENTILE_CONT, true}},
    {"approx_percentile_disc", 2, {FLOAT8OID, FLOAT8OID}, {AQP_PERCENTILE_DISC, false}},
    {"approx_percentile_disc_ci", 2, {FLOAT8OID, FLOAT8OID}, {AQP_PERCENTILE_DISC, true}},
};
constexpr int kNumAggs = sizeof kAggs / sizeof kAggs[0];
static Oid agg_oids[kNumAggs];
static bool agg_oids_valid = false;

// Any change to pg_proc (CREATE / DROP EXTENSION among them) forgets the OIDs.
static void forget_agg_oids(Datum, int, uint32) { agg_oids_valid = false; }

static void resolve_agg_oids() {
    // By OID in the extension's schema, wherever it was installed and
    // whether or not it is on search_path.
    Oid nsp = approx_gpu_schema_oid(true);
    for (int i = 0; i < kNumAggs; ++i) {
        agg_oids[i] = InvalidOid;
        if (!OidIsValid(nsp)) continue;
        oidvector* args = buildoidvector(kAggs[i].args, kAggs[i].nargs);
        agg_oids[i] = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(kAggs[i].name),
                                      PointerGetDatum(args), ObjectIdGetDatum(nsp));
    }
    agg_oids_valid = true;
}

bool aqp_lookup_aggregate(Oid fnoid, AqpAgg* out) {
    if (!agg_oids_valid) resolve_agg_oids();
    for (int i = 0; i < kNumAggs; ++i)
        if (OidIsValid(agg_oids[i]) && agg_oids[i] == fnoid) {
            *out = kAggs[i].agg;
            return true;
        }
    return false;
}

// ---- settings ---------------------------------------------------------------------

static bool check_confidence(double* newval, void** extra, GucSource source) {
    if (*newval > 0 && *newval < 1) return true;
    GUC_check_errdetail("approx_gpu.confidence must be strictly between 0 and 1.");
    return false;
}

void aqp_define_settings(void) {
    DefineCustomRealVariable("approx_gpu.confidence",
                             "Confidence level of the intervals of approx_count_ci, approx_sum_ci and approx_avg_ci.",
                             "Strictly between 0 and 1.", &aqp_confidence, 0.95, 0, 1, PGC_USERSET, 0, check_confidence,
                             nullptr, nullptr);
    DefineCustomRealVariable("approx_gpu.max_relative_error",
                             "Largest relative interval half-width a synopsis answer may have (0 = off).",
                             "When a group's half-width at approx_gpu.confidence exceeds this fraction of its "
                             "estimate, or its box holds no sample row, the query runs over the rows instead.",
                             &aqp_max_relative_error, 0, 0, 1e6, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomRealVariable("approx_gpu.max_missing_groups",
                             "Largest estimated share of groups a GROUP BY over a sample may miss; more runs the "
                             "exact plan.",
                             "Estimated from the groups the sample saw once and twice (Chao1). 1: never fall back "
                             "for missing groups.",
                             &aqp_max_missing_groups, 0.05, 0.0, 1.0, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    CacheRegisterSyscacheCallback(PROCOID, forget_agg_oids, 0);
}
