// The plan specification of an "Approx Synopsis Scan" (AqpPlanSpec, aqp.h)
// written into and read back from plain nodes, in one place, as PG-Strom's
// form_pgstrom_plan_info / deform_pgstrom_plan_info do for its CustomScans
// (heterodb/pg-strom, src/gpu_join.c). The list holds Integer, Boolean,
// String, Const and List nodes only, so copyObject (the plan cache), outfuncs
// and readfuncs reproduce it; the expressions go to custom_exprs, where
// setrefs fixes them. Layout of the private list:
//   Integer kind,
//   List (Integer relid, Integer owner, String synopsis, Const int8 built),
//   and for AQP_PLAN_BOXES a List (
//     List of Integer: attnums,
//     List of Integer: group_cols,
//     Boolean groups_are_strata,
//     List of aggregates, each List (Integer kind, Boolean ci, Integer col),
//     List of conditions, each List (Integer col, Integer kind, Integer strategy, Integer value)).
#include "aqp/aqp.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
}

static List* int_list(const int* v, int n) {
    List* l = NIL;
    for (int i = 0; i < n; ++i) l = lappend(l, makeInteger(v[i]));
    return l;
}

// Reads the next node of a list written by aqp_plan_spec_form.
struct NodeCursor {
    List* list;
    int next;
    Node* take() { return static_cast<Node*>(list_nth(list, next++)); }
    int take_int() { return intVal(take()); }
    bool take_bool() { return boolVal(take()); }
    List* take_list() { return castNode(List, take()); }
};

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
    NodeCursor in{l, 0};
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
        NodeCursor agg{castNode(List, list_nth(aggs, a)), 0};
        b->aggs[a].kind = static_cast<AqpAggKind>(agg.take_int());
        b->aggs[a].ci = agg.take_bool();
        b->aggs[a].col = agg.take_int();
    }
    List* conds = in.take_list();
    b->n_conds = list_length(conds);
    b->conds = static_cast<AqpBoxCondition*>(palloc0(sizeof(AqpBoxCondition) * (b->n_conds + 1)));
    for (int c = 0; c < b->n_conds; ++c) {
        NodeCursor cond{castNode(List, list_nth(conds, c)), 0};
        b->conds[c].col = cond.take_int();
        b->conds[c].kind = static_cast<AqpCondKind>(cond.take_int());
        b->conds[c].strategy = cond.take_int();
        b->conds[c].value = cond.take_int();
    }
}

List* aqp_plan_spec_form(const AqpPlanSpec* spec, List** values) {
    List* synopsis = NIL;
    synopsis = lappend(synopsis, makeInteger(static_cast<int>(spec->relid)));
    synopsis = lappend(synopsis, makeInteger(static_cast<int>(spec->owner)));
    synopsis = lappend(synopsis, makeString(pstrdup(spec->synopsis)));
    synopsis = lappend(synopsis,
                       makeConst(INT8OID, -1, InvalidOid, 8, Int64GetDatum(spec->built), false, FLOAT8PASSBYVAL));
    List* priv = list_make2(makeInteger(spec->kind), synopsis);
    switch (spec->kind) {
        case AQP_PLAN_BOXES: priv = lappend(priv, form_boxes(spec->boxes)); break;
    }
    *values = spec->values;
    return priv;
}

AqpPlanSpec* aqp_plan_spec_deform(List* priv, List* values) {
    AqpPlanSpec* spec = static_cast<AqpPlanSpec*>(palloc0(sizeof(AqpPlanSpec)));
    NodeCursor in{priv, 0};
    int kind = in.take_int();
    NodeCursor synopsis{in.take_list(), 0};
    spec->relid = static_cast<Oid>(synopsis.take_int());
    spec->owner = static_cast<Oid>(synopsis.take_int());
    spec->synopsis = strVal(synopsis.take());
    spec->built = DatumGetInt64(castNode(Const, synopsis.take())->constvalue);
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
