// The sample path's plan spec (AqpSampleSpec, sample/internal.h) and its
// sample plan written into and read back from plain nodes (aqp_plan_spec.cpp:
// the kind and the synopsis' identity that start every private list).
// Layout of its private list:
//   Integer AQP_PLAN_SAMPLE,
//   List (the synopsis' identity, aqp_form_synopsis),
//   List (Integer sample_relid, Const int8 sample_rows,
//     limit_count, limit_offset (int8 expressions of constants and the
//     statement's parameters; a NULL Const: none), Boolean grouped,
//     Boolean groups_within_strata, String domain_sql ("": none), List of
//     measures (expressions over the sample relation's columns: Var, Const,
//     OpExpr, FuncExpr, RelabelType, never seen by setrefs), Integer
//     spread_role (the role the measures were allowed for), Integer
//     hidden_columns, Integer rank_column, Boolean rank_desc, Integer
//     having_column, List having_checks, String unjudged ("": none),
//     String star_join ("": none)), then
//   the sample plan (PlannedStmt).
#include "aqp/sample/internal.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
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
    fields = lappend(fields, aqp_int8_const(spec->sample_rows));
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
    fields = lappend(fields, makeString(pstrdup(spec->star_join != nullptr ? spec->star_join : "")));
    return list_make4(makeInteger(AQP_PLAN_SAMPLE),
                      aqp_form_synopsis(spec->relid, spec->owner, spec->synopsis, spec->built), fields, sample);
}

void aqp_sample_spec_deform(List* priv, AqpSampleSpec* spec, PlannedStmt** sample) {
    memset(spec, 0, sizeof *spec);
    AqpNodeCursor in{priv, 0};
    int kind = in.take_int();
    if (kind != AQP_PLAN_SAMPLE) elog(ERROR, "approx sample scan: unknown plan kind %d", kind);
    aqp_deform_synopsis(in.take_list(), &spec->relid, &spec->owner, &spec->synopsis, &spec->built);
    AqpNodeCursor fields{in.take_list(), 0};
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
    const char* star_join = strVal(fields.take());
    spec->star_join = star_join[0] != '\0' ? star_join : nullptr;
    *sample = castNode(PlannedStmt, in.take());
}
