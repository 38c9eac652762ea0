// The "Approx Synopsis Scan" CustomScan (issue 13 items 3 and 4): answers the
// approx_* aggregates of one grouped query from a pinned table synopsis, one
// box per group, every box in one engine call per aggregate kind; falls back
// to its child (the exact aggregation plan) when the synopsis is gone, stale,
// or an answer is less precise than approx_gpu.max_relative_error allows.
//
// Plan shape (PostgreSQL 15, nodes/extensible.h, executor/nodeCustom.c,
// optimizer/plan/setrefs.c set_customscan_references): scanrelid = 0;
// custom_scan_tlist = the group Vars, then every Aggref of the target list
// and HAVING, so that setrefs turns the target list and the HAVING qual into
// INDEX_VAR references to it and ExecScan evaluates them over the tuples this
// node produces. custom_exprs hold the comparison values (Consts, Params,
// stable expressions), fixed by setrefs and evaluated at executor start.
#include "aqp/aqp_scan_state.h"

#include <cmath>

#include "synopsis/synopsis_table.h"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/typcache.h"
}

namespace syn = approx::synopsis;
using syn::NullPolicy;

// copyObject() is a typeof macro that C++ does not compile.
template <class T>
static T* copy_node(T* node) {
    return static_cast<T*>(copyObjectImpl(node));
}

static constexpr const char* kNodeName = "Approx Synopsis Scan";
extern const CustomScanMethods aqp_scan_methods;

// ---- plan -------------------------------------------------------------------

static Plan* plan_aqp_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* best_path, List* tlist, List* clauses,
                           List* custom_plans) {
    List* priv = best_path->custom_private;
    List* attnums = static_cast<List*>(list_nth(priv, AQP_PATH_ATTNUMS));
    List* group_vars = static_cast<List*>(list_nth(priv, AQP_PATH_GROUP_VARS));
    List* having = reinterpret_cast<List*>(root->parse->havingQual);  // implicit-AND (preprocess_expression, EXPRKIND_QUAL)

    List* scan_tlist = NIL;
    ListCell* lc;
    foreach (lc, group_vars)
        scan_tlist = lappend(scan_tlist, makeTargetEntry(static_cast<Expr*>(copy_node(lfirst(lc))),
                                                         list_length(scan_tlist) + 1, nullptr, false));
    List* aggs = NIL;
    List* pulled = list_concat(pull_var_clause(reinterpret_cast<Node*>(tlist), PVC_INCLUDE_AGGREGATES),
                               pull_var_clause(reinterpret_cast<Node*>(having), PVC_INCLUDE_AGGREGATES));
    foreach (lc, pulled) {
        Node* n = static_cast<Node*>(lfirst(lc));
        if (!IsA(n, Aggref) || tlist_member(reinterpret_cast<Expr*>(n), scan_tlist) != nullptr) continue;
        Aggref* a = reinterpret_cast<Aggref*>(n);
        AqpAgg agg;
        if (!aqp_lookup_aggregate(a->aggfnoid, &agg)) elog(ERROR, "approx synopsis scan: unexpected aggregate");
        int col = -1;
        if (agg.kind != AQP_COUNT) {
            Var* v = aqp_strip_to_var(reinterpret_cast<Node*>(static_cast<TargetEntry*>(linitial(a->args))->expr));
            int j = 0;
            ListCell* an;
            foreach (an, attnums) {
                if (v != nullptr && intVal(lfirst(an)) == v->varattno) col = j;
                ++j;
            }
            if (col < 0) elog(ERROR, "approx synopsis scan: aggregate column not in synopsis");
        }
        aggs = lappend(aggs, makeInteger(agg.kind));
        aggs = lappend(aggs, makeInteger(agg.ci ? 1 : 0));
        aggs = lappend(aggs, makeInteger(col));
        scan_tlist = lappend(scan_tlist, makeTargetEntry(reinterpret_cast<Expr*>(copy_node(n)),
                                                         list_length(scan_tlist) + 1, nullptr, false));
    }

    List* plan_priv = NIL;
    for (int i = 0; i < AQP_PRIV_COUNT; ++i)
        plan_priv = lappend(plan_priv, i == AQP_PRIV_AGGS ? aggs : copy_node(list_nth(priv, i)));

    CustomScan* cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    cs->scan.plan.qual = having;
    cs->scan.scanrelid = 0;
    cs->flags = best_path->flags;
    cs->custom_plans = custom_plans;
    cs->custom_exprs = static_cast<List*>(copy_node(list_nth(priv, AQP_PATH_EXPRS)));
    cs->custom_private = plan_priv;
    cs->custom_scan_tlist = scan_tlist;
    cs->methods = &aqp_scan_methods;
    return reinterpret_cast<Plan*>(cs);
}

const CustomPathMethods aqp_path_methods = {kNodeName, plan_aqp_path, nullptr};

// ---- executor -------------------------------------------------------------------------

static void begin_aqp(CustomScanState* node, EState* estate, int eflags) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    CustomScan* cs = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
    node->custom_ps = list_make1(ExecInitNode(static_cast<Plan*>(linitial(cs->custom_plans)), estate, eflags));

    List* priv = cs->custom_private;
    st->relid = static_cast<Oid>(intVal(list_nth(priv, AQP_PRIV_RELID)));
    st->owner = static_cast<Oid>(intVal(list_nth(priv, AQP_PRIV_OWNER)));
    st->name = strVal(list_nth(priv, AQP_PRIV_NAME));
    st->built = DatumGetInt64(static_cast<Const*>(list_nth(priv, AQP_PRIV_BUILT))->constvalue);
    List* groups = static_cast<List*>(list_nth(priv, AQP_PRIV_GROUPS));
    st->n_group = list_length(groups);
    st->group_cols = static_cast<int*>(palloc(sizeof(int) * (st->n_group + 1)));
    for (int i = 0; i < st->n_group; ++i) st->group_cols[i] = intVal(list_nth(groups, i));
    List* aggs = static_cast<List*>(list_nth(priv, AQP_PRIV_AGGS));
    st->n_aggs = list_length(aggs) / 3;
    st->aggs = static_cast<AggSpec*>(palloc(sizeof(AggSpec) * (st->n_aggs + 1)));
    for (int i = 0; i < st->n_aggs; ++i)
        st->aggs[i] = {intVal(list_nth(aggs, 3 * i)), intVal(list_nth(aggs, 3 * i + 1)),
                       intVal(list_nth(aggs, 3 * i + 2))};
    st->strata_groups = intVal(list_nth(priv, AQP_PRIV_STRATA)) != 0;
    st->exprs = ExecInitExprList(cs->custom_exprs, &node->ss.ps);
    st->natts = list_length(cs->custom_scan_tlist);

    // Generic plans and cached plans: the synopsis may be gone, rebuilt or
    // stale since planning; the parameters are known only now.
    st->ts = table_synopsis_pin(st->relid, st->owner, st->name, st->built);
    if (st->ts == nullptr) {
        fall_back(st, psprintf("synopsis %s was dropped or rebuilt since planning", st->name));
        return;
    }
    const char* stale = table_synopsis_staleness(st->ts);
    if (stale != nullptr) {
        fall_back(st, psprintf("synopsis %s: %s", st->name, stale));
        return;
    }
    build_boxes(st, static_cast<List*>(list_nth(priv, AQP_PRIV_CONDS)));
}

// Sums of one group's boxes (disjoint, so estimates and variances add; the
// covariance of disjoint boxes' estimates is ignored, which widens the
// interval slightly).
static syn::BoxEstimate combine(const syn::BoxEstimate* e, int64 first, int64 n) {
    syn::BoxEstimate r;
    double var = 0;
    for (int64 b = first; b < first + n; ++b) {
        r.estimate += e[b].estimate;
        var += e[b].se * e[b].se;
        r.support += e[b].support;
    }
    r.se = std::sqrt(var);
    r.n_rows = e[first].n_rows;
    return r;
}

static Datum estimate_datum(AqpScanState* st, int att, double estimate, double lower, double upper, bool ci) {
    if (!ci) return Float8GetDatum(estimate);
    TupleDesc scan_desc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
    TupleDesc desc = lookup_rowtype_tupdesc_copy(TupleDescAttr(scan_desc, att)->atttypid, -1);
    desc = BlessTupleDesc(desc);
    Datum values[3] = {Float8GetDatum(estimate), Float8GetDatum(lower), Float8GetDatum(upper)};
    bool nulls[3] = {false, false, false};
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

// Runs the engine over every box and fills the result rows (or decides to
// fall back).
static void compute(AqpScanState* st) {
    const syn::Synopsis& s = st->ts->model;
    int64 q = st->q;
    int d = s.d;
    syn::BoxEstimate* counts = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
    syn::BoxEstimate* sums[syn::kMaxDim] = {};
    syn::BoxEstimate* avgs[syn::kMaxDim] = {};
    // AVG over several boxes per group: SUM over the boxes divided by the
    // COUNT of their rows with a non-NULL value in the column (avg skips NULLs).
    syn::BoxEstimate* value_counts[syn::kMaxDim] = {};
    uint8* value_nulls[syn::kMaxDim] = {};
    for (int a = 0; a < st->n_aggs; ++a) {
        int c = st->aggs[a].col;
        if (st->aggs[a].kind == AQP_COUNT) continue;
        if (sums[c] == nullptr) sums[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
        if (st->aggs[a].kind != AQP_AVG) continue;
        if (st->per_group == 1 && avgs[c] == nullptr)
            avgs[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
        if (st->per_group > 1 && value_counts[c] == nullptr) {
            value_counts[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
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
        approx::Status r = q > 0 ? syn::evaluate(s, batch, ctx, counts) : approx::Status();
        for (int c = 0; c < d && r.ok() && q > 0; ++c) {
            batch.column = c;
            if (sums[c] != nullptr) {
                batch.agg = syn::Aggregate::Sum;
                r = syn::evaluate(s, batch, ctx, sums[c]);
            }
            if (r.ok() && avgs[c] != nullptr) {
                batch.agg = syn::Aggregate::Avg;
                r = syn::evaluate(s, batch, ctx, avgs[c]);
            }
            if (r.ok() && value_counts[c] != nullptr) {
                batch.agg = syn::Aggregate::Count;
                batch.nulls = value_nulls[c];
                r = syn::evaluate(s, batch, ctx, value_counts[c]);
                batch.nulls = st->nulls;
            }
        }
        return r;
    });
    check_engine_result(status, "approx aggregate");

    st->out_values = static_cast<Datum*>(palloc(sizeof(Datum) * st->natts * (st->n_cand + 1)));
    st->out_nulls = static_cast<bool*>(palloc(sizeof(bool) * st->natts * (st->n_cand + 1)));
    st->n_out = 0;
    double mre = aqp_max_relative_error;
    for (int64 g = 0; g < st->n_cand; ++g) {
        int64 first = g * st->per_group, n = st->per_group;
        syn::BoxEstimate cnt = q > 0 ? combine(counts, first, n) : syn::BoxEstimate();
        if (st->n_group > 0 && cnt.support == 0) continue;  // a group no sample row answers
        if (mre > 0 && cnt.support == 0) {
            fall_back(st, "the box holds no sample row");
            return;
        }
        Datum* values = st->out_values + st->n_out * st->natts;
        bool* nulls = st->out_nulls + st->n_out * st->natts;
        for (int gi = 0; gi < st->n_group; ++gi) {
            bool isnull;
            values[gi] = table_synopsis_datum(st->ts, st->group_cols[gi], st->keys[g * st->n_group + gi], &isnull);
            nulls[gi] = isnull;
        }
        for (int a = 0; a < st->n_aggs; ++a) {
            const AggSpec& spec = st->aggs[a];
            int att = st->n_group + a;
            syn::BoxEstimate e = cnt;
            syn::Aggregate agg = syn::Aggregate::Count;
            if (spec.kind == AQP_SUM) {
                e = combine(sums[spec.col], first, n);
                agg = syn::Aggregate::Sum;
            } else if (spec.kind == AQP_AVG) {
                agg = syn::Aggregate::Avg;
                if (avgs[spec.col] != nullptr) {
                    e = avgs[spec.col][first];
                } else {  // ratio of the summed boxes; se from the SUM's alone (an approximation)
                    syn::BoxEstimate sum = combine(sums[spec.col], first, n);
                    syn::BoxEstimate rows = combine(value_counts[spec.col], first, n);
                    e.estimate = rows.estimate > 0 ? sum.estimate / rows.estimate : NAN;
                    e.se = rows.estimate > 0 ? sum.se / rows.estimate : NAN;
                    e.support = rows.support;
                }
            }
            // No sample row: like sum / avg of no rows, NULL.
            if (spec.kind != AQP_COUNT && (cnt.support == 0 || std::isnan(e.estimate))) {
                values[att] = 0;
                nulls[att] = true;
                if (mre > 0) {
                    fall_back(st, "the box holds no sample row");
                    return;
                }
                continue;
            }
            double lower = e.estimate, upper = e.estimate;
            if (spec.ci || mre > 0) syn::interval(s, agg, e, aqp_confidence, lower, upper);
            if (mre > 0 && !((upper - lower) / 2 <= mre * std::fabs(e.estimate))) {
                fall_back(st, "an interval is wider than approx_gpu.max_relative_error allows");
                return;
            }
            values[att] = estimate_datum(st, att, e.estimate, lower, upper, spec.ci != 0);
            nulls[att] = false;
        }
        ++st->n_out;
    }
    last_run_set_answer("synopsis", nullptr, st->name);
    last_run_stats().add("boxes", static_cast<double>(q));
    last_run_stats().add("groups", static_cast<double>(st->n_out));
    last_run_stats().add("sample_rows", static_cast<double>(s.m));
}

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

static TupleTableSlot* exec_aqp(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    if (!st->computed && st->fallback == nullptr) {
        MemoryContext old = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
        compute(st);
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

static void end_aqp(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    ExecEndNode(static_cast<PlanState*>(linitial(node->custom_ps)));
    if (st->ts != nullptr) table_synopsis_unpin(st->ts);
    st->ts = nullptr;
}

static void rescan_aqp(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    st->next = 0;
    PlanState* child = static_cast<PlanState*>(linitial(node->custom_ps));
    if (child->chgParam == nullptr) ExecReScan(child);
}

static void explain_aqp(CustomScanState* node, List* ancestors, ExplainState* es) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    ExplainPropertyText("Synopsis", st->name, es);
    if (st->ts != nullptr) {
        ExplainPropertyInteger("Sample Rows", nullptr, st->ts->model.m, es);
        if (st->fallback == nullptr || st->q > 0) ExplainPropertyInteger("Boxes", nullptr, st->q, es);
    }
    if (es->analyze) ExplainPropertyText("Answered From", st->fallback != nullptr ? "rows" : "synopsis", es);
    if (st->fallback != nullptr) ExplainPropertyText("Fallback", st->fallback, es);
}

static const CustomExecMethods aqp_exec_methods = {
    kNodeName, begin_aqp, exec_aqp, end_aqp, rescan_aqp, nullptr, nullptr, nullptr,
    nullptr,   nullptr,   nullptr,  nullptr, explain_aqp,
};

static Node* create_aqp_state(CustomScan* cs) {
    AqpScanState* st = static_cast<AqpScanState*>(palloc0(sizeof(AqpScanState)));
    NodeSetTag(st, T_CustomScanState);
    st->css.methods = &aqp_exec_methods;
    return reinterpret_cast<Node*>(st);
}

const CustomScanMethods aqp_scan_methods = {kNodeName, create_aqp_state};

void aqp_scan_register(void) { RegisterCustomScanMethods(&aqp_scan_methods); }
