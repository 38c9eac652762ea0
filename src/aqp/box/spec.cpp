// The box path's plan spec (AqpPlanSpec, box/internal.h) written into and
// read back from plain nodes (aqp_plan_spec.cpp: the kind and the synopsis'
// identity that start every private list); its expressions go to
// custom_exprs, where setrefs fixes them. Layout of its private list:
//   Integer AQP_PLAN_BOXES,
//   List (the synopsis' identity, aqp_form_synopsis),
//   List (
//     List of Integer: attnums,
//     List of Integer: group_cols,
//     Boolean groups_are_strata,
//     List of aggregates, each List (Integer kind, Boolean ci, Integer col),
//     List of conditions, each List (Integer col, Integer kind, Integer strategy, Integer value)).
#include "aqp/box/internal.h"

extern "C" {
#include "nodes/makefuncs.h"
}

static List* int_list(const int* v, int n) {
    List* l = NIL;
    for (int i = 0; i < n; ++i) l = lappend(l, makeInteger(v[i]));
    return l;
}

static List* form_boxes(const AqpBoxSpec& b) {
    List* attnums = NIL;
    for (int j = 0; j < b.n_cols; ++j) attnums = lappend(attnums, makeInteger(b.attnums[j]));
    List* aggs = NIL;
    for (int a = 0; a < b.n_aggs; ++a)
        aggs = lappend(aggs,
                       list_make3(makeInteger(b.aggs[a].kind), makeBoolean(b.aggs[a].ci), makeInteger(b.aggs[a].col)));
    List* conds = NIL;
    for (int c = 0; c < b.n_conds; ++c) {
        const AqpBoxCondition& k = b.conds[c];
        conds = lappend(conds, list_make4(makeInteger(k.col), makeInteger(k.kind), makeInteger(k.strategy),
                                          makeInteger(k.value)));
    }
    List* l = NIL;
    l = lappend(l, attnums);
    l = lappend(l, int_list(b.group_cols, b.n_groups));
    l = lappend(l, makeBoolean(b.groups_are_strata));
    l = lappend(l, aggs);
    l = lappend(l, conds);
    return l;
}

static void deform_boxes(List* l, AqpBoxSpec* b) {
    AqpNodeCursor in{l, 0};
    List* attnums = in.take_list();
    b->n_cols = list_length(attnums);
    b->attnums = static_cast<AttrNumber*>(palloc0(sizeof(AttrNumber) * (b->n_cols + 1)));
    for (int j = 0; j < b->n_cols; ++j) b->attnums[j] = static_cast<AttrNumber>(intVal(list_nth(attnums, j)));
    List* groups = in.take_list();
    b->n_groups = list_length(groups);
    b->group_cols = static_cast<int*>(palloc0(sizeof(int) * (b->n_groups + 1)));
    for (int g = 0; g < b->n_groups; ++g) b->group_cols[g] = intVal(list_nth(groups, g));
    b->groups_are_strata = in.take_bool();
    List* aggs = in.take_list();
    b->n_aggs = list_length(aggs);
    b->aggs = static_cast<AqpAggregateSpec*>(palloc0(sizeof(AqpAggregateSpec) * (b->n_aggs + 1)));
    for (int a = 0; a < b->n_aggs; ++a) {
        AqpNodeCursor agg{castNode(List, list_nth(aggs, a)), 0};
        b->aggs[a].kind = static_cast<AqpAggKind>(agg.take_int());
        b->aggs[a].ci = agg.take_bool();
        b->aggs[a].col = agg.take_int();
    }
    List* conds = in.take_list();
    b->n_conds = list_length(conds);
    b->conds = static_cast<AqpBoxCondition*>(palloc0(sizeof(AqpBoxCondition) * (b->n_conds + 1)));
    for (int c = 0; c < b->n_conds; ++c) {
        AqpNodeCursor cond{castNode(List, list_nth(conds, c)), 0};
        b->conds[c].col = cond.take_int();
        b->conds[c].kind = static_cast<AqpCondKind>(cond.take_int());
        b->conds[c].strategy = cond.take_int();
        b->conds[c].value = cond.take_int();
    }
}

List* aqp_plan_spec_form(const AqpPlanSpec* spec, List** values) {
    List* priv = list_make2(makeInteger(spec->kind),
                            aqp_form_synopsis(spec->relid, spec->owner, spec->synopsis, spec->built));
    switch (spec->kind) {
        case AQP_PLAN_BOXES: priv = lappend(priv, form_boxes(spec->boxes)); break;
        case AQP_PLAN_SAMPLE: elog(ERROR, "approx synopsis scan: a sample plan is written by aqp_sample_spec_form");
    }
    *values = spec->values;
    return priv;
}

AqpPlanSpec* aqp_plan_spec_deform(List* priv, List* values) {
    AqpPlanSpec* spec = static_cast<AqpPlanSpec*>(palloc0(sizeof(AqpPlanSpec)));
    AqpNodeCursor in{priv, 0};
    int kind = in.take_int();
    aqp_deform_synopsis(in.take_list(), &spec->relid, &spec->owner, &spec->synopsis, &spec->built);
    switch (kind) {
        case AQP_PLAN_BOXES:
            spec->kind = AQP_PLAN_BOXES;
            deform_boxes(in.take_list(), &spec->boxes);
            break;
        default: elog(ERROR, "approx synopsis scan: unknown plan kind %d", kind);
    }
    spec->values = values;
    return spec;
}
