// The plan specifications of the extension's two CustomScans written into
// and read back from plain nodes, in one place, as PG-Strom's
// form_pgstrom_plan_info / deform_pgstrom_plan_info do for its CustomScans
// (heterodb/pg-strom, src/gpu_join.c): the "Approx Synopsis Scan"
// (AqpPlanSpec, aqp.h) and the "Approx Sample Scan" (AqpSampleSpec,
// sample/internal.h). The lists hold Integer, Boolean, String, Const and List nodes
// (and the sample plan, a PlannedStmt) only, so copyObject (the plan cache),
// outfuncs and readfuncs reproduce them; the box path's expressions go to
// custom_exprs, where setrefs fixes them. Layout of a private list:
//   Integer kind,
//   List (Integer relid, Integer owner, String synopsis, Const int8 built),
//   for AQP_PLAN_BOXES a List (
//     List of Integer: attnums,
//     List of Integer: group_cols,
//     Boolean groups_are_strata,
//     List of aggregates, each List (Integer kind, Boolean ci, Integer col),
//     List of conditions, each List (Integer col, Integer kind, Integer strategy, Integer value)),
//   for AQP_PLAN_SAMPLE a List (Integer sample_relid, Const int8 sample_rows,
//     limit_count, limit_offset (int8 expressions of constants and the
//     statement's parameters; a NULL Const: none), Boolean grouped,
//     Boolean groups_within_strata, String domain_sql ("": none), List of
//     measures (expressions over the sample relation's columns: Var, Const,
//     OpExpr, FuncExpr, RelabelType, never seen by setrefs), Integer
//     spread_role (the role the measures were allowed for), Integer
//     hidden_columns, Integer rank_column, Boolean rank_desc, Integer
//     having_column, List having_checks, String unjudged ("": none)), then
//     the sample plan (PlannedStmt).
#include "aqp/aqp.h"
#include "aqp/sample/internal.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
}

static Const* int8_const(int64 v) {
    return makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(v), false, FLOAT8PASSBYVAL);
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
    int64 take_int8() { return DatumGetInt64(castNode(Const, take())->constvalue); }
};

// The synopsis' identity, by which the executor pins it again.
static List* form_synopsis(Oid relid, Oid owner, const char* synopsis, TimestampTz built) {
    List* l = NIL;
    l = lappend(l, makeInteger(static_cast<int>(relid)));
    l = lappend(l, makeInteger(static_cast<int>(owner)));
    l = lappend(l, makeString(pstrdup(synopsis)));
    l = lappend(l, int8_const(built));
    return l;
}

static void deform_synopsis(List* l, Oid* relid, Oid* owner, const char** synopsis, TimestampTz* built) {
    NodeCursor in{l, 0};
    *relid = static_cast<Oid>(in.take_int());
    *owner = static_cast<Oid>(in.take_int());
    *synopsis = strVal(in.take());
    *built = in.take_int8();
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
    List* priv = list_make2(makeInteger(spec->kind), form_synopsis(spec->relid, spec->owner, spec->synopsis, spec->built));
    switch (spec->kind) {
        case AQP_PLAN_BOXES: priv = lappend(priv, form_boxes(spec->boxes)); break;
        case AQP_PLAN_SAMPLE: elog(ERROR, "approx synopsis scan: a sample plan is written by aqp_sample_spec_form");
    }
    *values = spec->values;
    return priv;
}

AqpPlanSpec* aqp_plan_spec_deform(List* priv, List* values) {
    AqpPlanSpec* spec = static_cast<AqpPlanSpec*>(palloc0(sizeof(AqpPlanSpec)));
    NodeCursor in{priv, 0};
    int kind = in.take_int();
    deform_synopsis(in.take_list(), &spec->relid, &spec->owner, &spec->synopsis, &spec->built);
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

// A LIMIT / OFFSET expression of the sample spec: a NULL Const for none.
static Node* limit_node(Node* e) {
    return e != nullptr ? e : reinterpret_cast<Node*>(makeNullConst(INT8OID, -1, InvalidOid));
}
static Node* limit_expr(Node* n) {
    return IsA(n, Const) && reinterpret_cast<Const*>(n)->constisnull ? nullptr : n;
}

List* aqp_sample_spec_form(const AqpSampleSpec* spec, PlannedStmt* sample) {
    List* fields = NIL;
    fields = lappend(fields, makeInteger(static_cast<int>(spec->sample_relid)));
    fields = lappend(fields, int8_const(spec->sample_rows));
    fields = lappend(fields, limit_node(spec->limit_count));
    fields = lappend(fields, limit_node(spec->limit_offset));
    fields = lappend(fields, makeBoolean(spec->grouped));
    fields = lappend(fields, makeBoolean(spec->groups_within_strata));
    fields = lappend(fields, makeString(pstrdup(spec->domain_sql != nullptr ? spec->domain_sql : "")));
    fields = lappend(fields, spec->measures);
    fields = lappend(fields, makeInteger(static_cast<int>(spec->spread_role)));
    fields = lappend(fields, makeInteger(spec->hidden_columns));
    fields = lappend(fields, makeInteger(spec->rank_column));
    fields = lappend(fields, makeBoolean(spec->rank_desc));
    fields = lappend(fields, makeInteger(spec->having_column));
    fields = lappend(fields, spec->having_checks);
    fields = lappend(fields, makeString(pstrdup(spec->unjudged != nullptr ? spec->unjudged : "")));
    return list_make4(makeInteger(AQP_PLAN_SAMPLE), form_synopsis(spec->relid, spec->owner, spec->synopsis, spec->built),
                      fields, sample);
}

void aqp_sample_spec_deform(List* priv, AqpSampleSpec* spec, PlannedStmt** sample) {
    memset(spec, 0, sizeof *spec);
    NodeCursor in{priv, 0};
    int kind = in.take_int();
    if (kind != AQP_PLAN_SAMPLE) elog(ERROR, "approx sample scan: unknown plan kind %d", kind);
    deform_synopsis(in.take_list(), &spec->relid, &spec->owner, &spec->synopsis, &spec->built);
    NodeCursor fields{in.take_list(), 0};
    spec->sample_relid = static_cast<Oid>(fields.take_int());
    spec->sample_rows = fields.take_int8();
    spec->limit_count = limit_expr(fields.take());
    spec->limit_offset = limit_expr(fields.take());
    spec->grouped = fields.take_bool();
    spec->groups_within_strata = fields.take_bool();
    const char* domain = strVal(fields.take());
    spec->domain_sql = domain[0] != '\0' ? domain : nullptr;
    spec->measures = reinterpret_cast<List*>(fields.take());  // NIL when none
    spec->spread_role = static_cast<Oid>(fields.take_int());
    spec->hidden_columns = fields.take_int();
    spec->rank_column = fields.take_int();
    spec->rank_desc = fields.take_bool();
    spec->having_column = fields.take_int();
    spec->having_checks = reinterpret_cast<List*>(fields.take());  // NIL when none
    const char* unjudged = strVal(fields.take());
    spec->unjudged = unjudged[0] != '\0' ? unjudged : nullptr;
    *sample = castNode(PlannedStmt, in.take());
}
