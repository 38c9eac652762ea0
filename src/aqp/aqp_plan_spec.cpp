// The plan specifications of the extension's CustomScans as plain nodes,
// as PG-Strom's form_pgstrom_plan_info / deform_pgstrom_plan_info write and
// read those of its CustomScans (heterodb/pg-strom, src/gpu_join.c): the
// lists hold Integer, Boolean, String, Const and List nodes (and the sample
// plan, a PlannedStmt) only, so copyObject (the plan cache), outfuncs and
// readfuncs reproduce them. Every private list starts
//   Integer kind (AqpPlanKind, aqp.h),
//   List (Integer relid, Integer owner, String synopsis, Const int8 built),
// the synopsis' identity (written and read here); the rest is the kind's
// own: the "Approx Synopsis Scan"'s (AQP_PLAN_BOXES, AqpPlanSpec) in
// box/spec.cpp, the "Approx Sample Scan"'s (AQP_PLAN_SAMPLE, AqpSampleSpec)
// in sample/spec.cpp.
#include "aqp/aqp.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
}

Const* aqp_int8_const(int64 v) {
    return makeConst(INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(v), false, FLOAT8PASSBYVAL);
}

List* aqp_form_synopsis(Oid relid, Oid owner, const char* synopsis, TimestampTz built) {
    List* l = NIL;
    l = lappend(l, makeInteger(static_cast<int>(relid)));
    l = lappend(l, makeInteger(static_cast<int>(owner)));
    l = lappend(l, makeString(pstrdup(synopsis)));
    l = lappend(l, aqp_int8_const(built));
    return l;
}

void aqp_deform_synopsis(List* l, Oid* relid, Oid* owner, const char** synopsis, TimestampTz* built) {
    AqpNodeCursor in{l, 0};
    *relid = static_cast<Oid>(in.take_int());
    *owner = static_cast<Oid>(in.take_int());
    *synopsis = strVal(in.take());
    *built = in.take_int8();
}
