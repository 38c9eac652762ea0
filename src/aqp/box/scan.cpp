// The "Approx Synopsis Scan" CustomScan: answers the approx_* aggregates of
// one grouped query from a pinned table synopsis, one box per group, every
// box in one engine call per aggregate kind; falls back to its child (the
// exact aggregation plan) when the synopsis is gone, stale, or an answer is
// less precise than approx_gpu.max_relative_error allows. This file holds its
// plan, its methods and EXPLAIN; the executor is box/scan_exec.cpp.
//
// Plan shape (PostgreSQL 15, nodes/extensible.h, executor/nodeCustom.c,
// optimizer/plan/setrefs.c set_customscan_references): scanrelid = 0;
// custom_scan_tlist = the group Vars, then every Aggref of the target list
// and HAVING, so that setrefs turns the target list and the HAVING qual into
// INDEX_VAR references to it and ExecScan evaluates them over the tuples this
// node produces. custom_private is the plan spec (box/spec.cpp);
// custom_exprs hold its comparison values (Consts, Params, stable
// expressions), fixed by setrefs and evaluated at executor start.
#include "aqp/box/scan_state.h"

static constexpr const char* kNodeName = "Approx Synopsis Scan";
extern const CustomScanMethods aqp_scan_methods;

// ---- plan -------------------------------------------------------------------

// The path's spec completed with the aggregates of the plan's target list and
// HAVING, which become custom_scan_tlist's entries after the group columns.
static Plan* plan_aqp_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* best_path, List* tlist, List* clauses,
                           List* custom_plans) {
    List* path_priv = best_path->custom_private;
    AqpPlanSpec* spec = aqp_plan_spec_deform(static_cast<List*>(list_nth(path_priv, AQP_PATH_SPEC)),
                                             static_cast<List*>(list_nth(path_priv, AQP_PATH_VALUES)));
    List* group_vars = static_cast<List*>(list_nth(path_priv, AQP_PATH_GROUP_VARS));
    List* having =
        reinterpret_cast<List*>(root->parse->havingQual);  // implicit-AND (preprocess_expression, EXPRKIND_QUAL)

    List* scan_tlist = NIL;
    ListCell* lc;
    foreach (lc, group_vars)
        scan_tlist = lappend(scan_tlist, makeTargetEntry(static_cast<Expr*>(copy_node(lfirst(lc))),
                                                         list_length(scan_tlist) + 1, nullptr, false));
    AqpBoxSpec& box = spec->boxes;
    List* pulled = list_concat(pull_var_clause(reinterpret_cast<Node*>(tlist), PVC_INCLUDE_AGGREGATES),
                               pull_var_clause(reinterpret_cast<Node*>(having), PVC_INCLUDE_AGGREGATES));
    box.n_aggs = 0;
    box.aggs = static_cast<AqpAggregateSpec*>(palloc(sizeof(AqpAggregateSpec) * (list_length(pulled) + 1)));
    foreach (lc, pulled) {
        Node* n = static_cast<Node*>(lfirst(lc));
        if (!IsA(n, Aggref) || tlist_member(reinterpret_cast<Expr*>(n), scan_tlist) != nullptr) continue;
        Aggref* a = reinterpret_cast<Aggref*>(n);
        AqpAgg agg;
        if (!aqp_lookup_aggregate(a->aggfnoid, &agg)) elog(ERROR, "approx synopsis scan: unexpected aggregate");
        int col = -1;
        if (agg.kind != AQP_COUNT) {
            Var* v = aqp_strip_to_var(reinterpret_cast<Node*>(static_cast<TargetEntry*>(linitial(a->args))->expr));
            for (int j = 0; j < box.n_cols; ++j)
                if (v != nullptr && box.attnums[j] == v->varattno) col = j;
            if (col < 0) elog(ERROR, "approx synopsis scan: aggregate column not in synopsis");
        }
        box.aggs[box.n_aggs++] = {agg.kind, agg.ci, col};
        scan_tlist = lappend(scan_tlist, makeTargetEntry(reinterpret_cast<Expr*>(copy_node(n)),
                                                         list_length(scan_tlist) + 1, nullptr, false));
    }
    spec->values = copy_node(spec->values);

    CustomScan* cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    cs->scan.plan.qual = having;
    cs->scan.scanrelid = 0;
    cs->flags = best_path->flags;
    cs->custom_plans = custom_plans;
    cs->custom_private = aqp_plan_spec_form(spec, &cs->custom_exprs);
    cs->custom_scan_tlist = scan_tlist;
    cs->methods = &aqp_scan_methods;
    return reinterpret_cast<Plan*>(cs);
}

const CustomPathMethods aqp_path_methods = {kNodeName, plan_aqp_path, nullptr};

// ---- EXPLAIN -------------------------------------------------------------------------

static void explain_aqp(CustomScanState* node, List* ancestors, ExplainState* es) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    const AqpPlanSpec* spec = st->spec;
    // Only a name the caller may see (table_synopsis_visible).
    ExplainPropertyText("Synopsis", table_synopsis_shown_name(spec->relid, spec->owner, spec->synopsis, GetUserId()),
                        es);
    if (st->ts != nullptr) {
        ExplainPropertyInteger("Sample Rows", nullptr, st->ts->model.m, es);
        if (st->fallback == nullptr || st->q > 0) ExplainPropertyInteger("Boxes", nullptr, st->q, es);
    }
    if (es->analyze) ExplainPropertyText("Answered From", st->fallback != nullptr ? "rows" : "synopsis", es);
    if (st->fallback != nullptr) ExplainPropertyText("Fallback", st->fallback, es);
}

// ---- methods ----------------------------------------------------------------------

static const CustomExecMethods aqp_exec_methods = {
    kNodeName, aqp_begin, aqp_exec, aqp_end, aqp_rescan, nullptr,     nullptr,
    nullptr,   nullptr,   nullptr,  nullptr, nullptr,    explain_aqp,
};

static Node* create_aqp_state(CustomScan* cs) {
    AqpScanState* st = static_cast<AqpScanState*>(palloc0(sizeof(AqpScanState)));
    NodeSetTag(st, T_CustomScanState);
    st->css.methods = &aqp_exec_methods;
    return reinterpret_cast<Node*>(st);
}

const CustomScanMethods aqp_scan_methods = {kNodeName, create_aqp_state};

void aqp_scan_register(void) { RegisterCustomScanMethods(&aqp_scan_methods); }

bool aqp_is_box_scan(const CustomScan* cs) {
    return cs->methods != nullptr && strcmp(cs->methods->CustomName, kNodeName) == 0;
}
