// The executor of the "Approx Synopsis Scan" (box/scan_state.h): at start,
// the plan's spec, the pinned synopsis and its boxes (box/boxes.cpp); on the
// first row, the engine's estimates of every box, then the rows (one per
// group present in the sample) or the decision to fall back to the child
// plan, whose rows are then returned as they are.
#include "aqp/box/scan_state.h"

#include <cmath>

namespace syn = approx::synopsis;
using syn::NullPolicy;

void aqp_begin(CustomScanState* node, EState* estate, int eflags) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    CustomScan* cs = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
    node->custom_ps = list_make1(ExecInitNode(static_cast<Plan*>(linitial(cs->custom_plans)), estate, eflags));

    st->spec = aqp_plan_spec_deform(cs->custom_private, cs->custom_exprs);
    st->values = ExecInitExprList(st->spec->values, &node->ss.ps);
    st->natts = list_length(cs->custom_scan_tlist);

    // Generic plans and cached plans: the synopsis may be gone, rebuilt or
    // stale since planning; the parameters are known only now.
    const AqpPlanSpec* spec = st->spec;
    Oid role = GetUserId();
    const char* syn = table_synopsis_phrase(spec->relid, spec->owner, spec->synopsis, role);
    // Another role's synopsis answers only its builder. Plans are
    // role-dependent (planned again for another role), but a cached plan
    // outlives a change of role membership (plancache.c watches no
    // pg_auth_members): check again. No name: it may be hidden now.
    if (!table_synopsis_answers(spec->relid, spec->owner, role)) {
        fall_back(st, psprintf("the synopsis chosen at planning may not answer role %s (roles changed since planning)",
                               GetUserNameFromId(role, false)));
        return;
    }
    st->ts = table_synopsis_pin(spec->relid, spec->owner, spec->synopsis, spec->built);
    if (st->ts == nullptr) {
        fall_back(st, psprintf("%s was dropped or rebuilt since planning", syn));
        return;
    }
    const char* stale = table_synopsis_staleness(st->ts);
    if (stale != nullptr) {
        fall_back(st, psprintf("%s: %s", syn, stale));
        return;
    }
    build_boxes(st);
}

// ---- the estimates ----------------------------------------------------------------------

// The engine's estimates of every box, for each aggregate kind and column the
// node returns (nullptr where none needs it).
struct BoxEstimates {
    syn::BoxEstimate* counts;
    syn::BoxEstimate* sums[syn::kMaxDim];
    syn::BoxEstimate* avgs[syn::kMaxDim];  // one box per group
    // AVG over several boxes per group: SUM over the boxes divided by the
    // COUNT of their rows with a non-NULL value in the column (avg skips NULLs).
    syn::BoxEstimate* value_counts[syn::kMaxDim];
};

// One engine call per aggregate kind and column, over every box.
static void run_estimates(AqpScanState* st, BoxEstimates* out) {
    const AqpBoxSpec& box = st->spec->boxes;
    // A group's key is a value, not a range: its column is exact membership
    // whatever the synopsis smooths it with (the model is plain data; the
    // sample is shared).
    syn::Synopsis s = st->ts->model;
    for (int gi = 0; gi < box.n_groups; ++gi) {
        syn::Column& c = s.cols[box.group_cols[gi]];
        c.mode = syn::Mode::Exact;
        c.discrete = true;
    }
    int64 q = st->q;
    int d = s.d;
    memset(out, 0, sizeof *out);
    out->counts = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
    uint8* value_nulls[syn::kMaxDim] = {};
    for (int a = 0; a < box.n_aggs; ++a) {
        int c = box.aggs[a].col;
        if (box.aggs[a].kind == AQP_COUNT) continue;
        if (out->sums[c] == nullptr)
            out->sums[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
        if (box.aggs[a].kind != AQP_AVG) continue;
        if (st->per_group == 1 && out->avgs[c] == nullptr)
            out->avgs[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
        if (st->per_group > 1 && out->value_counts[c] == nullptr) {
            out->value_counts[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
            value_nulls[c] = static_cast<uint8*>(palloc_extended(q * d + 1, MCXT_ALLOC_HUGE));
            memcpy(value_nulls[c], st->nulls, q * d);
            for (int64 b = 0; b < q; ++b)
                if (value_nulls[c][b * d + c] == static_cast<uint8>(NullPolicy::Any))
                    value_nulls[c][b * d + c] = static_cast<uint8>(NullPolicy::NotNull);
        }
    }
    approx::Status status = run_engine("approx aggregate", 0, 0, [&](const approx::ExecContext& ctx) {
        syn::BoxBatch batch;
        batch.q = q;
        batch.lo = st->lo;
        batch.hi = st->hi;
        batch.nulls = st->nulls;
        batch.stratum = st->stratum;
        batch.agg = syn::Aggregate::Count;
        approx::Status r = q > 0 ? syn::evaluate(s, batch, ctx, out->counts) : approx::Status();
        for (int c = 0; c < d && r.ok() && q > 0; ++c) {
            batch.column = c;
            if (out->sums[c] != nullptr) {
                batch.agg = syn::Aggregate::Sum;
                r = syn::evaluate(s, batch, ctx, out->sums[c]);
            }
            if (r.ok() && out->avgs[c] != nullptr) {
                batch.agg = syn::Aggregate::Avg;
                r = syn::evaluate(s, batch, ctx, out->avgs[c]);
            }
            if (r.ok() && out->value_counts[c] != nullptr) {
                batch.agg = syn::Aggregate::Count;
                batch.nulls = value_nulls[c];
                r = syn::evaluate(s, batch, ctx, out->value_counts[c]);
                batch.nulls = st->nulls;
            }
        }
        return r;
    });
    check_engine_result(status, "approx aggregate");
}

// Sums of one group's boxes (disjoint, so estimates and variances add; the
// covariance of disjoint boxes' estimates is ignored, which widens the
// interval slightly).
static syn::BoxEstimate combine(const syn::BoxEstimate* e, int64 first, int64 n) {
    syn::BoxEstimate r = e[first];  // the column's range and the population
    double var = 0, count_var = 0;
    r.estimate = r.count = 0;
    r.support = 0;
    for (int64 b = first; b < first + n; ++b) {
        r.estimate += e[b].estimate;
        var += e[b].se * e[b].se;
        r.support += e[b].support;
        r.count += e[b].count;
        count_var += e[b].count_se * e[b].count_se;
    }
    r.se = std::sqrt(var);
    r.count_se = std::sqrt(count_var);
    return r;
}

// The COUNT of group g's boxes: its support says whether any sample row answers the group.
static syn::BoxEstimate group_count(const AqpScanState* st, const BoxEstimates& est, int64 g) {
    return st->q > 0 ? combine(est.counts, g * st->per_group, st->per_group) : syn::BoxEstimate();
}

// One aggregate of one group: estimate and interval, or no answer.
struct GroupEstimate {
    bool answered;  // false: no sample row (NULL, like sum / avg of no rows)
    double estimate, lower, upper;
};

// Aggregate a of group g, whose COUNT is cnt; the interval only when asked for.
static GroupEstimate group_estimate(const AqpScanState* st, const BoxEstimates& est, int64 g, int a,
                                    const syn::BoxEstimate& cnt, bool with_interval) {
    const AqpAggregateSpec& spec = st->spec->boxes.aggs[a];
    int64 first = g * st->per_group, n = st->per_group;
    syn::BoxEstimate e = cnt;
    syn::Aggregate agg = syn::Aggregate::Count;
    if (spec.kind == AQP_SUM) {
        e = combine(est.sums[spec.col], first, n);
        agg = syn::Aggregate::Sum;
    } else if (spec.kind == AQP_AVG) {
        agg = syn::Aggregate::Avg;
        if (est.avgs[spec.col] != nullptr) {
            e = est.avgs[spec.col][first];
        } else {  // ratio of the summed boxes; se from the SUM's alone (an approximation)
            syn::BoxEstimate sum = combine(est.sums[spec.col], first, n);
            syn::BoxEstimate rows = combine(est.value_counts[spec.col], first, n);
            e = sum;  // the column's range (interval clips AVG to it)
            e.estimate = rows.estimate > 0 ? sum.estimate / rows.estimate : NAN;
            e.se = rows.estimate > 0 ? sum.se / rows.estimate : NAN;
            e.support = rows.support;
        }
    }
    // No value to add up: NULL as sum() and avg() give, where the sample saw
    // rows of the group but none with a value (all NULL), or saw no row of
    // an exact box. A SUM over rows the sample did not see is 0 with an
    // interval (the engine's zero-count bound) rather than a claimed NULL.
    if (spec.kind != AQP_COUNT) {
        bool unseen = cnt.support == 0 && !(cnt.se == 0 && cnt.estimate == 0);
        if (std::isnan(e.estimate) || (e.support == 0 && !(spec.kind == AQP_SUM && unseen)))
            return GroupEstimate{false, 0, 0, 0};
    }
    GroupEstimate r{true, e.estimate, e.estimate, e.estimate};
    if (with_interval) syn::interval(st->ts->model, agg, e, aqp_confidence, r.lower, r.upper);
    return r;
}

// ---- the rows or the fallback ---------------------------------------------------------

static Datum estimate_datum(AqpScanState* st, int att, const GroupEstimate& e, bool ci) {
    if (!ci) return Float8GetDatum(e.estimate);
    TupleDesc scan_desc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
    TupleDesc desc = lookup_rowtype_tupdesc_copy(TupleDescAttr(scan_desc, att)->atttypid, -1);
    desc = BlessTupleDesc(desc);
    Datum values[3] = {Float8GetDatum(e.estimate), Float8GetDatum(e.lower), Float8GetDatum(e.upper)};
    bool nulls[3] = {false, false, false};
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

// The result rows, one per group a sample row answers; with
// approx_gpu.max_relative_error set, the first group or aggregate the
// synopsis cannot answer precisely enough makes the node fall back instead.
static void assemble_rows(AqpScanState* st, const BoxEstimates& est) {
    const AqpBoxSpec& box = st->spec->boxes;
    st->out_values = static_cast<Datum*>(palloc(sizeof(Datum) * st->natts * (st->n_cand + 1)));
    st->out_nulls = static_cast<bool*>(palloc(sizeof(bool) * st->natts * (st->n_cand + 1)));
    st->n_out = 0;
    double mre = aqp_max_relative_error;
    // The groups of an unstratified sample (or one stratified on other
    // columns) are those it holds: a group it missed would be missing from
    // the answer, which no bound covers.
    const syn::Synopsis& model = st->ts->model;
    if (mre > 0 && box.n_groups > 0 && !st->groups_are_strata && model.m < model.n_rows) {
        fall_back(st, "GROUP BY over a sample that may miss groups (stratify the synopsis on the GROUP BY columns)");
        return;
    }
    // Without the guard, the missing-groups rule of the sample path: the
    // groups seen on one and on two sample rows estimate those never seen.
    if (aqp_max_missing_groups < 1 && box.n_groups > 0 && !st->groups_are_strata && model.m < model.n_rows) {
        AqpSampleGroups seen{0, 0, 0};
        for (int64 g = 0; g < st->n_cand; ++g) {
            double support = group_count(st, est, g).support;
            seen.seen += support > 0;
            seen.once += support == 1;
            seen.twice += support == 2;
        }
        const char* missing = aqp_missing_groups_reason(seen, true);
        if (missing != nullptr) {
            fall_back(st, missing);
            return;
        }
    }
    for (int64 g = 0; g < st->n_cand; ++g) {
        syn::BoxEstimate cnt = group_count(st, est, g);
        // No sample row in the box: the answer is exactly "no rows" only where
        // every stratum it covers was wholly sampled (zero count, zero se);
        // otherwise rows may exist that the sample missed, so the guard's
        // promise needs the exact path (grouped or not).
        if (cnt.support == 0) {
            if (mre > 0 && !(cnt.se == 0 && cnt.estimate == 0)) {
                fall_back(st, "the box holds no sample row");
                return;
            }
            if (box.n_groups > 0) continue;  // a group no sample row answers
        }
        Datum* values = st->out_values + st->n_out * st->natts;
        bool* nulls = st->out_nulls + st->n_out * st->natts;
        for (int gi = 0; gi < box.n_groups; ++gi) {
            bool isnull;
            values[gi] = table_synopsis_datum(st->ts, box.group_cols[gi], st->keys[g * box.n_groups + gi], &isnull);
            nulls[gi] = isnull;
        }
        for (int a = 0; a < box.n_aggs; ++a) {
            int att = box.n_groups + a;
            GroupEstimate e = group_estimate(st, est, g, a, cnt, box.aggs[a].ci || mre > 0);
            if (!e.answered) {
                values[att] = 0;
                nulls[att] = true;
                if (mre > 0) {
                    fall_back(st, "the box holds no sample row");
                    return;
                }
                continue;
            }
            if (mre > 0 && !((e.upper - e.lower) / 2 <= mre * std::fabs(e.estimate))) {
                fall_back(st, "an interval is wider than approx_gpu.max_relative_error allows");
                return;
            }
            values[att] = estimate_datum(st, att, e, box.aggs[a].ci);
            nulls[att] = false;
        }
        ++st->n_out;
    }
    const AqpPlanSpec* spec = st->spec;
    last_run_set_answer("synopsis", nullptr,
                        table_synopsis_shown_name(spec->relid, spec->owner, spec->synopsis, GetUserId()));
    last_run_stats().add("boxes", static_cast<double>(st->q));
    last_run_stats().add("groups", static_cast<double>(st->n_out));
    last_run_stats().add("sample_rows", static_cast<double>(st->ts->model.m));
}

// ---- the executor's callbacks ------------------------------------------------------

static TupleTableSlot* next_row(ScanState* ss) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(ss);
    TupleTableSlot* slot = ss->ss_ScanTupleSlot;
    ExecClearTuple(slot);
    if (st->next >= st->n_out) return slot;
    int64 r = st->next++;
    memcpy(slot->tts_values, st->out_values + r * st->natts, sizeof(Datum) * st->natts);
    memcpy(slot->tts_isnull, st->out_nulls + r * st->natts, sizeof(bool) * st->natts);
    return ExecStoreVirtualTuple(slot);
}

static bool recheck_row(ScanState*, TupleTableSlot*) { return true; }

TupleTableSlot* aqp_exec(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    if (!st->computed && st->fallback == nullptr) {
        MemoryContext old = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
        BoxEstimates est;
        run_estimates(st, &est);
        assemble_rows(st, est);
        MemoryContextSwitchTo(old);
        st->computed = true;
    }
    if (st->fallback != nullptr) {
        if (!st->recorded) last_run_rows("approx aggregate", st->fallback);
        st->recorded = true;
        return ExecProcNode(static_cast<PlanState*>(linitial(node->custom_ps)));
    }
    return ExecScan(&node->ss, next_row, recheck_row);
}

void aqp_end(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    ExecEndNode(static_cast<PlanState*>(linitial(node->custom_ps)));
    if (st->ts != nullptr) table_synopsis_unpin(st->ts);
    st->ts = nullptr;
}

void aqp_rescan(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    st->next = 0;
    PlanState* child = static_cast<PlanState*>(linitial(node->custom_ps));
    if (child->chgParam == nullptr) ExecReScan(child);
}
