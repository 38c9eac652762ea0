// The measures whose spread per stratum the sample path's SUM / AVG borrow
// (core/sample_estimate.hpp, Options::spread): an aggregate's argument when
// it is arithmetic over the sampled table's numeric columns. This file is
// the planner side: what qualifies (only the built-in + - * / and casts
// between numeric types) and the copy of such an argument over the sample
// relation's columns (aqp_sample_measure_copy). The pass that evaluates the
// copies on every sample row at execution is sample/measure_spread.cpp.
#include "aqp/sample/internal.h"

#include <cstring>

extern "C" {
#include "access/transam.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
}

#include "synopsis/synopsis_codec.h"

static bool numeric_type(Oid type) { return synopsis_glue::is_measure_type(getBaseType(type)); }

bool aqp_sample_integer_type(Oid type) {
    Oid t = getBaseType(type);
    return t == INT2OID || t == INT4OID || t == INT8OID;
}

char aqp_sample_measure_operator(const OpExpr* op) {
    if (op->opno >= FirstNormalObjectId || !numeric_type(op->opresulttype)) return '\0';
    ListCell* lc;
    foreach (lc, op->args)
        if (!numeric_type(exprType(static_cast<Node*>(lfirst(lc))))) return '\0';
    char* name = get_opname(op->opno);
    if (name == nullptr || strlen(name) != 1 || strchr("+-*/", name[0]) == nullptr) return '\0';
    if (list_length(op->args) == 1 && name[0] != '-' && name[0] != '+') return '\0';
    return name[0];
}

bool aqp_sample_measure_cast(const FuncExpr* f) {
    return f->funcid < FirstNormalObjectId && list_length(f->args) == 1 &&
           (f->funcformat == COERCE_IMPLICIT_CAST || f->funcformat == COERCE_EXPLICIT_CAST) &&
           numeric_type(f->funcresulttype) && numeric_type(exprType(static_cast<Node*>(linitial(f->args))));
}

Node* aqp_sample_measure_copy(Node* e, Node* (*map_var)(const Var*, void*), void* arg) {
    if (e == nullptr) return nullptr;
    switch (nodeTag(e)) {
        case T_Var: {
            const Var* v = reinterpret_cast<Var*>(e);
            return numeric_type(v->vartype) ? map_var(v, arg) : nullptr;
        }
        case T_Const: {
            Const* c = reinterpret_cast<Const*>(e);
            return !c->constisnull && numeric_type(c->consttype) ? reinterpret_cast<Node*>(copy_node(c)) : nullptr;
        }
        case T_RelabelType: {
            RelabelType* r = reinterpret_cast<RelabelType*>(e);
            if (!numeric_type(r->resulttype)) return nullptr;
            Node* inner = aqp_sample_measure_copy(reinterpret_cast<Node*>(r->arg), map_var, arg);
            if (inner == nullptr) return nullptr;
            RelabelType* out = copy_node(r);
            out->arg = reinterpret_cast<Expr*>(inner);
            return reinterpret_cast<Node*>(out);
        }
        case T_FuncExpr:
        case T_OpExpr: {
            List* args = IsA(e, FuncExpr) ? reinterpret_cast<FuncExpr*>(e)->args : reinterpret_cast<OpExpr*>(e)->args;
            if (IsA(e, FuncExpr) ? !aqp_sample_measure_cast(reinterpret_cast<FuncExpr*>(e))
                                 : aqp_sample_measure_operator(reinterpret_cast<OpExpr*>(e)) == '\0')
                return nullptr;
            List* copied = NIL;
            ListCell* lc;
            foreach (lc, args) {
                Node* a = aqp_sample_measure_copy(static_cast<Node*>(lfirst(lc)), map_var, arg);
                if (a == nullptr) return nullptr;
                copied = lappend(copied, a);
            }
            Node* out = copy_node(e);
            if (IsA(out, FuncExpr))
                reinterpret_cast<FuncExpr*>(out)->args = copied;
            else
                reinterpret_cast<OpExpr*>(out)->args = copied;
            return out;
        }
        default:
            return nullptr;
    }
}
