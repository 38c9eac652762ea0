// The weighted (Horvitz-Thompson) aggregates of the sample path (sample/internal.h):
// sample_count / sample_sum / sample_avg (internal state: per stratum the
// moments of the group's rows; combine, serialise, deserialise: the nested
// plan may be parallel), each with its _ci form, and the argument and
// final-function helpers they share with sample_percentile_cont / _disc
// (sample/percentiles.cpp; sample/aggregates.h). The
// transition functions need no design (a parallel worker has none); the
// final functions find it by the sample's OID and ask the engine
// (core/sample_estimate.hpp) for the estimate and interval.
#include "aqp/sample/aggregates.h"

#include <cmath>

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
}

#include "runtime/aggregate_state.h"
#include "runtime/byte_codec.h"

using namespace sample_aggs;

// ---- state of COUNT / SUM / AVG --------------------------------------------------------

struct MomentState {
    Oid sample;     // the sample relation the rows come from (InvalidOid: no row yet)
    int32 measure;  // sample_sum / sample_avg's measure argument (0: none or COUNT): a
                    // Finalize Aggregate's Aggref no longer holds the arguments
    int32 n_parts;  // parts sorted by stratum (0-based), distinct
    int32 capacity;
    int32 last;  // the part the previous row went to (rows come stratum by stratum)
    smp::GroupPart* parts;
};
constexpr uint8 kMomentStateVersion = 3;  // 2: + nonzero, 3: + measure (states are never stored: parallel workers only)

static MomentState* new_moment_state(MemoryContext mcxt) {
    return static_cast<MomentState*>(MemoryContextAllocZero(mcxt, sizeof(MomentState)));
}

// Transition functions name the aggregate (calling_aggregate_name, a
// catalog lookup) only when they raise an error, not per row.
const char* sample_aggs::agg_name(FunctionCallInfo fcinfo, const char* fallback) {
    return calling_aggregate_name(fcinfo, fallback);
}

void sample_aggs::check_sample(Oid* have, Oid sample, FunctionCallInfo fcinfo, const char* fallback) {
    if (!OidIsValid(*have)) {
        *have = sample;
    } else if (OidIsValid(sample) && *have != sample) {
        const char* fn = agg_name(fcinfo, fallback);
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument sample must be the same on every row", fn)));
    }
}

// The 0-based stratum of argument argno (1..n_strata, checked against the
// design in the final function).
int32 sample_aggs::stratum_arg(FunctionCallInfo fcinfo, int argno, const char* fallback) {
    if (PG_ARGISNULL(argno)) {
        const char* fn = agg_name(fcinfo, fallback);
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: argument stratum must not be NULL", fn)));
    }
    int32 s = PG_GETARG_INT32(argno);
    if (s < 1) {
        const char* fn = agg_name(fcinfo, fallback);
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument stratum must be at least 1, not %d", fn, s)));
    }
    return s - 1;
}

Oid sample_aggs::sample_arg(FunctionCallInfo fcinfo, int argno, const char* fallback) {
    if (PG_ARGISNULL(argno)) {
        const char* fn = agg_name(fcinfo, fallback);
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: argument sample must not be NULL", fn)));
    }
    return PG_GETARG_OID(argno);
}

// The part of stratum s, inserted in order when new.
static smp::GroupPart* part_of(MomentState* st, int32 s, MemoryContext mcxt) {
    if (st->last < st->n_parts && st->parts[st->last].stratum == s) return &st->parts[st->last];
    int32 lo = 0, hi = st->n_parts;
    while (lo < hi) {
        int32 mid = lo + (hi - lo) / 2;
        if (st->parts[mid].stratum < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == st->n_parts || st->parts[lo].stratum != s) {
        if (st->n_parts == st->capacity) {
            int32 cap = st->capacity > 0 ? st->capacity * 2 : 4;
            Size bytes = sizeof(smp::GroupPart) * static_cast<Size>(cap);
            st->parts = static_cast<smp::GroupPart*>(st->parts ? repalloc(st->parts, bytes)
                                                               : MemoryContextAlloc(mcxt, bytes));
            st->capacity = cap;
        }
        memmove(st->parts + lo + 1, st->parts + lo, sizeof(smp::GroupPart) * (st->n_parts - lo));
        st->parts[lo].stratum = s;
        st->parts[lo].m = smp::Moments();
        ++st->n_parts;
    }
    st->last = lo;
    return &st->parts[lo];
}

// sample_count(stratum, sample): a row of the group (COUNT(expr) comes with
// FILTER (WHERE expr IS NOT NULL)).
APPROX_FUNCTION(approx_gpu_aqp_sample_count_trans) {
    const char* fn = "sample_count";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    MomentState* st = PG_ARGISNULL(0) ? new_moment_state(mcxt) : reinterpret_cast<MomentState*>(PG_GETARG_POINTER(0));
    int32 s = stratum_arg(fcinfo, 1, fn);
    check_sample(&st->sample, sample_arg(fcinfo, 2, fn), fcinfo, fn);
    smp::add(part_of(st, s, mcxt)->m, 1.0);
    PG_RETURN_POINTER(st);
}

// sample_sum / sample_avg(x, stratum, sample, measure): NULL x is skipped,
// as sum() does; measure is the final function's (final_measure).
APPROX_FUNCTION(approx_gpu_aqp_sample_sum_trans) {
    const char* fn = "sample_sum";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    MomentState* st = PG_ARGISNULL(0) ? new_moment_state(mcxt) : reinterpret_cast<MomentState*>(PG_GETARG_POINTER(0));
    int32 s = stratum_arg(fcinfo, 2, fn);
    check_sample(&st->sample, sample_arg(fcinfo, 3, fn), fcinfo, fn);
    // A NULL x still marks the stratum as holding the group (a part of no
    // value): its unsampled rows may hold values (sample_estimate.hpp).
    smp::GroupPart* part = part_of(st, s, mcxt);
    if (!PG_ARGISNULL(1)) smp::add(part->m, PG_GETARG_FLOAT8(1));
    if (PG_NARGS() > 4 && !PG_ARGISNULL(4)) st->measure = PG_GETARG_INT32(4);
    PG_RETURN_POINTER(st);
}

APPROX_FUNCTION(approx_gpu_aqp_sample_combine) {
    const char* fn = "sample aggregate combine";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    if (PG_ARGISNULL(1)) {
        if (PG_ARGISNULL(0)) PG_RETURN_NULL();
        PG_RETURN_POINTER(PG_GETARG_POINTER(0));
    }
    MomentState* other = reinterpret_cast<MomentState*>(PG_GETARG_POINTER(1));
    MomentState* st = PG_ARGISNULL(0) ? new_moment_state(mcxt) : reinterpret_cast<MomentState*>(PG_GETARG_POINTER(0));
    check_sample(&st->sample, other->sample, fcinfo, fn);
    if (st->measure == 0) st->measure = other->measure;
    for (int32 i = 0; i < other->n_parts; ++i) smp::merge(part_of(st, other->parts[i].stratum, mcxt)->m, other->parts[i].m);
    PG_RETURN_POINTER(st);
}

bytea* aqp_sample_moment_state_bytes(Oid sample_relid, int measure, const smp::GroupPart* parts, int n_parts) {
    ByteWriter w;
    byte_writer_init(&w);
    put_u8(&w, kMomentStateVersion);
    put_i32(&w, static_cast<int32>(sample_relid));
    put_i32(&w, measure);
    put_i32(&w, n_parts);
    for (int32 i = 0; i < n_parts; ++i) {
        const smp::GroupPart& p = parts[i];
        put_i32(&w, p.stratum);
        put_f64(&w, p.m.n);
        put_f64(&w, p.m.mean);
        put_f64(&w, p.m.m2);
        put_f64(&w, p.m.m3);
        put_f64(&w, p.m.m4);
        put_f64(&w, p.m.sum);
        put_f64(&w, p.m.nonzero);
    }
    return byte_writer_finish(&w);
}

APPROX_FUNCTION(approx_gpu_aqp_sample_serial) {
    MomentState* st = reinterpret_cast<MomentState*>(PG_GETARG_POINTER(0));
    PG_RETURN_BYTEA_P(aqp_sample_moment_state_bytes(st->sample, st->measure, st->parts, st->n_parts));
}

APPROX_FUNCTION(approx_gpu_aqp_sample_deserial) {
    MemoryContext mcxt = aggregate_context(fcinfo, "sample aggregate deserialize");
    ByteReader r;
    byte_reader_init(&r, PG_GETARG_BYTEA_PP(0), "sample aggregate state");
    if (get_u8(&r) != kMomentStateVersion)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("unsupported sample aggregate state version")));
    MomentState* st = new_moment_state(mcxt);
    st->sample = static_cast<Oid>(get_i32(&r));
    st->measure = get_i32(&r);
    int32 n = get_i32(&r);
    if (n < 0 || n > (r.end - r.p) / 60)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid sample aggregate state")));
    for (int32 i = 0; i < n; ++i) {
        int32 s = get_i32(&r);
        smp::Moments m;
        m.n = get_f64(&r);
        m.mean = get_f64(&r);
        m.m2 = get_f64(&r);
        m.m3 = get_f64(&r);
        m.m4 = get_f64(&r);
        m.sum = get_f64(&r);
        m.nonzero = get_f64(&r);
        // strata strictly increasing; a whole row count (0: rows of NULL x
        // only); no negative even moment (NaN passes: a NaN value gives NaN, as sum() does)
        if (s < 0 || (i > 0 && s <= st->parts[st->n_parts - 1].stratum) || !(m.n >= 0) || m.n != std::floor(m.n) ||
            m.m2 < 0 || m.m4 < 0 || !(m.nonzero >= 0 && m.nonzero <= m.n) || m.nonzero != std::floor(m.nonzero))
            ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid sample aggregate state")));
        part_of(st, s, mcxt)->m = m;
    }
    byte_reader_expect_end(&r);
    PG_RETURN_POINTER(st);
}

// ---- final functions ---------------------------------------------------------------------

// The Aggref's argument argno (the sample plan writes its Consts there);
// nullptr without an Aggref or with fewer arguments.
static TargetEntry* aggref_arg(FunctionCallInfo fcinfo, int argno) {
    Aggref* aggref = AggGetAggref(fcinfo);
    if (aggref == nullptr || list_length(aggref->args) <= argno) return nullptr;
    return static_cast<TargetEntry*>(list_nth(aggref->args, argno));
}

// The sample's OID: from the state, else (no row at all) from the Aggref's
// argument argno, a Const the sample plan wrote.
static Oid final_sample(FunctionCallInfo fcinfo, Oid from_state, int argno) {
    if (OidIsValid(from_state)) return from_state;
    TargetEntry* te = aggref_arg(fcinfo, argno);
    if (te == nullptr) return InvalidOid;
    Node* e = reinterpret_cast<Node*>(te->expr);
    if (e == nullptr || !IsA(e, Const)) return InvalidOid;
    Const* c = reinterpret_cast<Const*>(e);
    return c->consttype == OIDOID && !c->constisnull ? DatumGetObjectId(c->constvalue) : InvalidOid;
}

// sample_sum / sample_avg's measure: which of the design's measures x is
// (0: none), a Const the sample plan wrote as argument argno; the state's
// when it has one (a Finalize Aggregate's Aggref holds the partial state
// as its one argument).
static int final_measure(FunctionCallInfo fcinfo, const MomentState* st, int argno, const char* fn) {
    if (st != nullptr && st->measure != 0) {
        if (st->measure < 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: argument measure %d is not a measure number", fn, st->measure)));
        return st->measure;
    }
    TargetEntry* te = aggref_arg(fcinfo, argno);
    if (te == nullptr) return 0;
    Node* e = reinterpret_cast<Node*>(te->expr);
    if (e == nullptr || !IsA(e, Const) || reinterpret_cast<Const*>(e)->consttype != INT4OID ||
        reinterpret_cast<Const*>(e)->constisnull)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument measure must be a constant measure number", fn)));
    const int32 m = DatumGetInt32(reinterpret_cast<Const*>(e)->constvalue);
    if (m < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument measure %d is not a measure number", fn, m)));
    return m;
}

const AqpSampleDesign* sample_aggs::final_design(FunctionCallInfo fcinfo, Oid from_state, int argno, const char* fn) {
    const AqpSampleDesign* d = aqp_sample_design_find(final_sample(fcinfo, from_state, argno));
    if (d == nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("%s: runs only inside a sample plan", fn),
                        errhint("The planner writes it for approx_* aggregates answered from a sample.")));
    return d;
}

void sample_aggs::check_stratum_in_design(int32 s, const AqpSampleDesign* d, const char* fn) {
    if (s >= d->n_strata)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: argument stratum %d is not between 1 and %d", fn, s + 1, d->n_strata)));
}

// The engine's answer as the aggregate's result; with
// approx_gpu.max_relative_error set, trips the guard where the interval is
// too wide or the sample cannot bound the answer (box/scan_exec.cpp's rule).
Datum sample_aggs::answer(FunctionCallInfo fcinfo, const smp::Estimate& e, bool ci, const char* fn) {
    // The group this final function answers for (sample/internal.h): its Agg and aggno.
    Aggref* aggref = AggGetAggref(fcinfo);
    AggState* agg = fcinfo->context != nullptr && IsA(fcinfo->context, AggState)
                        ? reinterpret_cast<AggState*>(fcinfo->context)
                        : nullptr;
    aqp_sample_guard_count_group(agg, aggref != nullptr ? aggref->aggno : 0,
                                 agg != nullptr && agg->aggstrategy == AGG_PLAIN, e.rows);
    const bool group_rows_only = aggref != nullptr && aggref->location == kAqpGroupRowsLocation;
    double mre = group_rows_only ? 0 : aqp_max_relative_error;
    if (mre > 0) {
        if ((e.null && !e.exact) || !e.estimable)
            aqp_sample_guard_trip("the sample cannot bound a group's answer");
        else if (!((e.upper - e.lower) / 2 <= mre * std::fabs(e.estimate)))
            aqp_sample_guard_trip("an interval is wider than approx_gpu.max_relative_error allows");
        else if (e.repeated)
            aqp_sample_guard_trip("a join repeated sample rows (the intervals assume distinct rows)");
    }
    // NULL: exact (every row the group may have was sampled: NULL interval,
    // as sum's) or unknown (no value seen: the _ci form says (-inf, inf)).
    if (e.null && (!ci || e.exact)) PG_RETURN_NULL();
    if (!ci) PG_RETURN_FLOAT8(e.estimate);
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s: result type must be approx_estimate", fn)));
    desc = BlessTupleDesc(desc);
    Datum values[3] = {Float8GetDatum(e.estimate), Float8GetDatum(e.lower), Float8GetDatum(e.upper)};
    bool nulls[3] = {e.null, false, false};
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

void sample_aggs::raise_engine_error(const approx::Status& st, const char* fn) {
    ereport(ERROR, (errcode(st.code == approx::StatusCode::OutOfRange ? ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE
                                                                     : ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("%s: %s", fn, st.message)));
}

// The design and the interval options as the engine takes them.
smp::Stratum* sample_aggs::engine_design(const AqpSampleDesign* d) {
    smp::Stratum* design = static_cast<smp::Stratum*>(palloc(sizeof(smp::Stratum) * (d->n_strata > 0 ? d->n_strata : 1)));
    for (int s = 0; s < d->n_strata; ++s) {
        design[s].rows = d->rows[s];
        design[s].sampled = d->sampled[s];
    }
    return design;
}
smp::Options sample_aggs::engine_options(const AqpSampleDesign* d) {
    smp::Options opt;
    opt.confidence = aqp_confidence;
    opt.groups_within_strata = d->groups_within_strata;
    return opt;
}

static Datum moment_final(FunctionCallInfo fcinfo, smp::Aggregate agg, bool ci, int sample_argno) {
    const char* fn = calling_aggregate_name(fcinfo, "sample aggregate");
    MomentState* st = PG_ARGISNULL(0) ? nullptr : reinterpret_cast<MomentState*>(PG_GETARG_POINTER(0));
    const AqpSampleDesign* d = final_design(fcinfo, st ? st->sample : InvalidOid, sample_argno, fn);
    if (st != nullptr && st->n_parts > 0) check_stratum_in_design(st->parts[st->n_parts - 1].stratum, d, fn);
    for (int32 i = 0; st != nullptr && i < st->n_parts; ++i) aqp_sample_guard_saw_stratum(st->parts[i].stratum);
    smp::Stratum* design = engine_design(d);
    smp::Options opt = engine_options(d);
    // SUM / AVG of a column or arithmetic over columns: its spread over the
    // stratum's sample rows bounds a group's spread from below
    // (core/sample_estimate.hpp).
    if (agg != smp::Aggregate::Count) opt.spread = aqp_sample_design_spread(d->sample_relid, final_measure(fcinfo, st, 3, fn), fn);
    smp::Estimate e;
    approx::Status status = smp::estimate(agg, design, d->n_strata, st ? st->parts : nullptr, st ? st->n_parts : 0, opt, e);
    if (!status.ok()) raise_engine_error(status, fn);
    pfree(design);  // n_strata entries per group and aggregate: not left to the output tuple's reset
    return answer(fcinfo, e, ci, fn);
}

APPROX_FUNCTION(approx_gpu_aqp_sample_count_final) { return moment_final(fcinfo, smp::Aggregate::Count, false, 1); }
APPROX_FUNCTION(approx_gpu_aqp_sample_count_ci_final) { return moment_final(fcinfo, smp::Aggregate::Count, true, 1); }
APPROX_FUNCTION(approx_gpu_aqp_sample_sum_final) { return moment_final(fcinfo, smp::Aggregate::Sum, false, 2); }
APPROX_FUNCTION(approx_gpu_aqp_sample_sum_ci_final) { return moment_final(fcinfo, smp::Aggregate::Sum, true, 2); }
APPROX_FUNCTION(approx_gpu_aqp_sample_avg_final) { return moment_final(fcinfo, smp::Aggregate::Avg, false, 2); }
APPROX_FUNCTION(approx_gpu_aqp_sample_avg_ci_final) { return moment_final(fcinfo, smp::Aggregate::Avg, true, 2); }
