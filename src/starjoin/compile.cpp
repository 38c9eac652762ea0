// SQL expressions over the fact (the sample relation) -> the star-join
// engine's postfix programs (core/starjoin/program.hpp), with PostgreSQL's
// semantics: built-in arithmetic of int2 / int4 / int8 (overflow of the
// result type's width raises 22003, / 0 22012) and float8 (float8pl's
// overflow checks), casts between those types, comparisons (also date's),
// AND / OR / NOT evaluated left to right and stopping where PostgreSQL's
// executor stops, IS [NOT] NULL, x [NOT] IN (constants). A dimension's
// column in a fact program is that dimension's output (DimOut); a predicate
// over one text column (=, <>, <, IN, LIKE ..., AND / OR / NOT of them) is a
// Lookup of the column's dictionary code, its table filled at execution
// (read.cpp). Anything else: no program (the caller keeps the CPU plan, with
// c->failed as the reason). The tables and the whole plan: tables.cpp.
#include "starjoin/starjoin_glue.h"

#include <algorithm>
#include <iterator>
#include <vector>

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/varlena.h"
}

namespace sj = approx::starjoin;
using sj::Instr;
using sj::Kind;
using sj::Op;

static bool fail(StarJoinCompiler* c, const char* why) {
    if (c->failed == nullptr) c->failed = why;
    return false;
}

// ---- the operators and casts it knows, by function OID ------------------------------
struct ArithFn {
    Oid fn;
    Op op;
    Kind kind;
    uint8_t width;
};
#define SJ_INT_ARITH(P, W)                                                                              \
    {F_##P##PL, Op::Add, Kind::Int, W}, {F_##P##MI, Op::Sub, Kind::Int, W}, {F_##P##MUL, Op::Mul, Kind::Int, W}, \
        {F_##P##DIV, Op::Div, Kind::Int, W}
static const ArithFn kArith[] = {
    SJ_INT_ARITH(INT2, 2), SJ_INT_ARITH(INT4, 4), SJ_INT_ARITH(INT8, 8), SJ_INT_ARITH(INT24, 4),
    SJ_INT_ARITH(INT42, 4), SJ_INT_ARITH(INT48, 8), SJ_INT_ARITH(INT84, 8), SJ_INT_ARITH(INT28, 8),
    SJ_INT_ARITH(INT82, 8), {F_INT2MOD, Op::Mod, Kind::Int, 2}, {F_INT4MOD, Op::Mod, Kind::Int, 4},
    {F_INT8MOD, Op::Mod, Kind::Int, 8}, {F_FLOAT8PL, Op::Add, Kind::Float, 8}, {F_FLOAT8MI, Op::Sub, Kind::Float, 8},
    {F_FLOAT8MUL, Op::Mul, Kind::Float, 8}, {F_FLOAT8DIV, Op::Div, Kind::Float, 8},
    {F_FLOAT48PL, Op::Add, Kind::Float, 8}, {F_FLOAT48MI, Op::Sub, Kind::Float, 8},
    {F_FLOAT48MUL, Op::Mul, Kind::Float, 8}, {F_FLOAT48DIV, Op::Div, Kind::Float, 8},
    {F_FLOAT84PL, Op::Add, Kind::Float, 8}, {F_FLOAT84MI, Op::Sub, Kind::Float, 8},
    {F_FLOAT84MUL, Op::Mul, Kind::Float, 8}, {F_FLOAT84DIV, Op::Div, Kind::Float, 8},
    {F_INT2UM, Op::Neg, Kind::Int, 2}, {F_INT4UM, Op::Neg, Kind::Int, 4}, {F_INT8UM, Op::Neg, Kind::Int, 8},
    {F_FLOAT8UM, Op::Neg, Kind::Float, 8},
};
struct CmpFn {
    Oid fn;
    sj::CmpOp cmp;
    Kind kind;
};
#define SJ_CMP(P, K)                                                                                    \
    {F_##P##EQ, sj::CmpOp::Eq, K}, {F_##P##NE, sj::CmpOp::Ne, K}, {F_##P##LT, sj::CmpOp::Lt, K},          \
        {F_##P##LE, sj::CmpOp::Le, K}, {F_##P##GT, sj::CmpOp::Gt, K}, {F_##P##GE, sj::CmpOp::Ge, K}
static const CmpFn kCmp[] = {
    SJ_CMP(INT2, Kind::Int),    SJ_CMP(INT4, Kind::Int),     SJ_CMP(INT8, Kind::Int),    SJ_CMP(INT24, Kind::Int),
    SJ_CMP(INT42, Kind::Int),   SJ_CMP(INT48, Kind::Int),    SJ_CMP(INT84, Kind::Int),   SJ_CMP(INT28, Kind::Int),
    SJ_CMP(INT82, Kind::Int),   SJ_CMP(FLOAT8, Kind::Float), SJ_CMP(FLOAT4, Kind::Float), SJ_CMP(FLOAT48, Kind::Float),
    SJ_CMP(FLOAT84, Kind::Float), SJ_CMP(DATE_, Kind::Int),
};
// Casts: IntToFloat, FloatToInt width, IntNarrow width, or none (a no-op).
struct CastFn {
    Oid fn;
    Op op;  // Null: no instruction
    uint8_t width;
};
static const CastFn kCasts[] = {
    {F_FLOAT8_INT2, Op::IntToFloat, 8}, {F_FLOAT8_INT4, Op::IntToFloat, 8}, {F_FLOAT8_INT8, Op::IntToFloat, 8},
    {F_FLOAT8_FLOAT4, Op::Null, 8},     {F_INT8_INT4, Op::Null, 8},         {F_INT8_INT2, Op::Null, 8},
    {F_INT4_INT2, Op::Null, 4},         {F_INT4_INT8, Op::IntNarrow, 4},    {F_INT2_INT4, Op::IntNarrow, 2},
    {F_INT2_INT8, Op::IntNarrow, 2},    {F_INT4_FLOAT8, Op::FloatToInt, 4}, {F_INT8_FLOAT8, Op::FloatToInt, 8},
    {F_INT2_FLOAT8, Op::FloatToInt, 2},
};

// ---- emission ---------------------------------------------------------------------------
struct Emit {
    StarJoinCompiler* c;
    int32 first;  // the program's first instruction (jump targets are relative to it)
    int32 here() const { return static_cast<int32>(c->plan->code.size()) - first; }
    void put(Op op, Kind kind, uint8_t sub = 0, uint8_t width = 8, int32 a = 0, int64 b = 0) {
        c->plan->code.push_back(Instr{op, kind, sub, width, a, b});
    }
    void patch(int32 at, int32 target) { c->plan->code[first + at].a = target; }
};

static bool emit(Emit& e, Node* n, Kind* kind);

static bool emit_const(Emit& e, Const* k, Kind* kind) {
    switch (k->consttype) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case DATEOID: *kind = Kind::Int; break;
        case FLOAT4OID:
        case FLOAT8OID: *kind = Kind::Float; break;
        case BOOLOID: *kind = Kind::Bool; break;
        default: return fail(e.c, psprintf("a constant of type %s", format_type_be(k->consttype)));
    }
    if (k->constisnull) {
        e.put(Op::Null, *kind);
        return true;
    }
    Datum d = k->constvalue;
    switch (k->consttype) {
        case INT2OID: e.put(Op::ConstInt, Kind::Int, 0, 8, 0, DatumGetInt16(d)); break;
        case INT4OID: e.put(Op::ConstInt, Kind::Int, 0, 8, 0, DatumGetInt32(d)); break;
        case INT8OID: e.put(Op::ConstInt, Kind::Int, 0, 8, 0, DatumGetInt64(d)); break;
        case DATEOID: e.put(Op::ConstInt, Kind::Int, 0, 8, 0, DatumGetDateADT(d)); break;
        case FLOAT4OID: e.put(Op::ConstFloat, Kind::Float, 0, 8, 0, sj::float_bits(DatumGetFloat4(d))); break;
        case FLOAT8OID: e.put(Op::ConstFloat, Kind::Float, 0, 8, 0, sj::float_bits(DatumGetFloat8(d))); break;
        default: e.put(Op::ConstBool, Kind::Bool, 0, 8, 0, DatumGetBool(d) ? 1 : 0); break;
    }
    return true;
}

// x [NOT] IN (constants): x = ANY / x <> ALL of a constant array.
static bool emit_in(Emit& e, ScalarArrayOpExpr* sa, Kind* kind) {
    set_sa_opfuncid(sa);
    const CmpFn* cmp = nullptr;
    for (const CmpFn& f : kCmp)
        if (f.fn == sa->opfuncid) cmp = &f;
    Node* arr = static_cast<Node*>(lsecond(sa->args));
    if (cmp == nullptr || list_length(sa->args) != 2 || !IsA(arr, Const) || reinterpret_cast<Const*>(arr)->constisnull ||
        !((sa->useOr && cmp->cmp == sj::CmpOp::Eq) || (!sa->useOr && cmp->cmp == sj::CmpOp::Ne)))
        return fail(e.c, "an operator over an array other than IN / NOT IN of constants");
    Kind xk;
    if (!emit(e, static_cast<Node*>(linitial(sa->args)), &xk)) return false;
    ArrayType* a = DatumGetArrayTypeP(reinterpret_cast<Const*>(arr)->constvalue);
    Oid et = ARR_ELEMTYPE(a);
    int16 len;
    bool byval;
    char align;
    get_typlenbyvalalign(et, &len, &byval, &align);
    Datum* values;
    bool* nulls;
    int n;
    deconstruct_array(a, et, len, byval, align, &values, &nulls, &n);
    std::vector<int64> list;
    bool has_null = false;
    for (int i = 0; i < n; ++i) {
        if (nulls[i]) {
            has_null = true;
            continue;
        }
        switch (et) {
            case INT2OID: list.push_back(DatumGetInt16(values[i])); break;
            case INT4OID: list.push_back(DatumGetInt32(values[i])); break;
            case INT8OID: list.push_back(DatumGetInt64(values[i])); break;
            case DATEOID: list.push_back(DatumGetDateADT(values[i])); break;
            case FLOAT4OID: list.push_back(sj::float_bits(DatumGetFloat4(values[i]))); break;
            case FLOAT8OID: list.push_back(sj::float_bits(DatumGetFloat8(values[i]))); break;
            default: return fail(e.c, psprintf("an IN list of type %s", format_type_be(et)));
        }
    }
    if (xk != cmp->kind) return fail(e.c, "an IN list of another kind than its value");
    if (cmp->kind == Kind::Float) {
        auto less = [](int64 x, int64 y) {  // float8_cmp's order: NaN above everything, NaN = NaN
            double a = sj::bits_float(x), b = sj::bits_float(y);
            if (a != a) return false;
            if (b != b) return true;
            return a < b;
        };
        for (int64& v : list)  // -0.0 = 0.0: one representative
            if (sj::bits_float(v) == 0.0) v = sj::float_bits(0.0);
        std::sort(list.begin(), list.end(), less);
        list.erase(std::unique(list.begin(), list.end(),
                               [&](int64 x, int64 y) { return !less(x, y) && !less(y, x); }),
                   list.end());
    } else {
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
    }
    int32 at = static_cast<int32>(e.c->plan->pool.size());
    e.c->plan->pool.insert(e.c->plan->pool.end(), list.begin(), list.end());
    e.put(Op::In, cmp->kind, has_null ? 1 : 0, 8, at, static_cast<int64>(list.size()));
    if (!sa->useOr) e.put(Op::Not, Kind::Bool);
    *kind = Kind::Bool;
    return true;
}

// AND / OR: a1; JumpIf{False,True}Keep L; a2; And ... L: (PostgreSQL stops at
// the first FALSE / TRUE, so later arguments cannot raise there).
static bool emit_bool(Emit& e, BoolExpr* b, Kind* kind) {
    *kind = Kind::Bool;
    if (b->boolop == NOT_EXPR) {
        Kind k;
        if (!emit(e, static_cast<Node*>(linitial(b->args)), &k) || k != Kind::Bool) return fail(e.c, "NOT of a non-boolean");
        e.put(Op::Not, Kind::Bool);
        return true;
    }
    const bool is_and = b->boolop == AND_EXPR;
    std::vector<int32> jumps;
    ListCell* lc;
    foreach (lc, b->args) {
        Kind k;
        if (foreach_current_index(lc) > 0) {
            jumps.push_back(e.here());
            e.put(is_and ? Op::JumpIfFalseKeep : Op::JumpIfTrueKeep, Kind::Bool);
        }
        if (!emit(e, static_cast<Node*>(lfirst(lc)), &k) || k != Kind::Bool) return fail(e.c, "AND / OR of a non-boolean");
        if (foreach_current_index(lc) > 0) e.put(is_and ? Op::And : Op::Or, Kind::Bool);
    }
    for (int32 at : jumps) e.patch(at, e.here());
    return true;
}

// A predicate over one text column: its Var, and whether only what the
// lookup may evaluate on every distinct value (also of rows the query would
// not evaluate) is in it: comparisons and LIKE (a constant pattern, a
// deterministic collation, no trailing escape) of text, AND / OR / NOT. Each
// gives NULL of a NULL value (the engine's Lookup of a NULL code is NULL;
// read.cpp checks it).
struct TextPredicate {
    Var* var;
    bool ok;
};
static const Oid kTextFns[] = {F_TEXTEQ, F_TEXTNE, F_TEXT_LT, F_TEXT_LE, F_TEXT_GT, F_TEXT_GE, F_TEXTLIKE, F_TEXTNLIKE};
static bool text_predicate(Node* n, TextPredicate* p) {
    if (n == nullptr) return false;
    Oid fn = InvalidOid, coll = InvalidOid;
    List* args = NIL;
    switch (nodeTag(n)) {
        case T_Var: {
            Var* v = reinterpret_cast<Var*>(n);
            if ((v->vartype != TEXTOID && v->vartype != VARCHAROID) ||
                (p->var != nullptr && (p->var->varno != v->varno || p->var->varattno != v->varattno)))
                return !(p->ok = false);
            p->var = v;
            return false;
        }
        case T_Const:
        case T_RelabelType:
        case T_BoolExpr: return expression_tree_walker(n, walker(text_predicate), p);
        case T_OpExpr: {
            OpExpr* o = reinterpret_cast<OpExpr*>(n);
            set_opfuncid(o);
            fn = o->opfuncid, coll = o->inputcollid, args = o->args;
            break;
        }
        case T_ScalarArrayOpExpr: {
            ScalarArrayOpExpr* o = reinterpret_cast<ScalarArrayOpExpr*>(n);
            set_sa_opfuncid(o);
            fn = o->opfuncid, coll = o->inputcollid, args = o->args;
            break;
        }
        default: return !(p->ok = false);
    }
    if (std::find(std::begin(kTextFns), std::end(kTextFns), fn) == std::end(kTextFns)) return !(p->ok = false);
    if (fn == F_TEXTLIKE || fn == F_TEXTNLIKE) {
        Node* pat = static_cast<Node*>(lsecond(args));
        if (!IsA(pat, Const) || !IsA(n, OpExpr) || !OidIsValid(coll) || !get_collation_isdeterministic(coll))
            return !(p->ok = false);
        Const* k = reinterpret_cast<Const*>(pat);
        if (!k->constisnull) {
            text* t = DatumGetTextPP(k->constvalue);
            const char* s = VARDATA_ANY(t);
            int len = VARSIZE_ANY_EXHDR(t), escapes = 0;
            while (len > 0 && s[len - 1] == '\\') --len, ++escapes;
            if (escapes % 2 != 0) return !(p->ok = false);  // LIKE raises on a trailing escape
        }
    }
    return expression_tree_walker(n, walker(text_predicate), p);
}

static bool emit(Emit& e, Node* n, Kind* kind);

// The predicate as a Lookup of the column's code (its table: at execution).
static bool emit_lookup(Emit& e, Node* n, Var* var, Kind* kind) {
    Kind k;
    if (!emit(e, reinterpret_cast<Node*>(var), &k)) return false;
    StarJoinLookup* l = static_cast<StarJoinLookup*>(palloc0(sizeof(StarJoinLookup)));
    l->table = starjoin_table_of(e.c, var->varno);
    l->column = starjoin_column(e.c, l->table, var->varattno, var->vartype);
    l->expr = n;
    l->var = var;
    l->instr = static_cast<int32>(e.c->plan->code.size());
    e.c->lookups = lappend(e.c->lookups, l);
    e.put(Op::Lookup, Kind::Bool);
    *kind = Kind::Bool;
    return true;
}

static bool emit(Emit& e, Node* n, Kind* kind) {
    StarJoinCompiler* c = e.c;
    if (n == nullptr) return fail(c, "an empty expression");
    if (static_cast<int32>(c->plan->code.size()) - e.first >= sj::kMaxProgram - 8) return fail(c, "an expression too long");
    if (!IsA(n, Var) && !IsA(n, Const) && exprType(n) == BOOLOID) {
        TextPredicate p{nullptr, true};
        text_predicate(n, &p);
        if (p.ok && p.var != nullptr) return emit_lookup(e, n, p.var, kind);
    }
    switch (nodeTag(n)) {
        case T_Var: {
            Var* v = reinterpret_cast<Var*>(n);
            const int t = v->varlevelsup == 0 && v->varattno > 0 ? starjoin_table_of(c, v->varno) : -1;
            if (t < 0 || (t != c->current && c->current != 0)) return fail(c, "a column of another relation");
            int col = starjoin_column(c, t, v->varattno, v->vartype);
            if (col < 0) return false;
            sj::ColType ct;
            starjoin_column_type(v->vartype, &ct);
            *kind = sj::column_kind(ct);
            if (t == c->current) {
                e.put(Op::Col, *kind, 0, 8, col);
                return true;
            }
            // A dimension's column in a fact program: its output `Col col`.
            StarJoinTable& d = c->tables[t];
            int o = 0;
            while (o < d.n_outputs && d.output_columns[o] != col) ++o;
            if (o == d.n_outputs) {
                if (d.n_outputs == sj::kMaxDimOutputs) return fail(c, "more columns of a dimension than the star join passes");
                d.output_columns[d.n_outputs++] = col;
            }
            e.put(Op::DimOut, *kind, 0, 8, t - 1, o);
            return true;
        }
        case T_Const: return emit_const(e, reinterpret_cast<Const*>(n), kind);
        case T_RelabelType: return emit(e, reinterpret_cast<Node*>(reinterpret_cast<RelabelType*>(n)->arg), kind);
        case T_FuncExpr: {
            FuncExpr* f = reinterpret_cast<FuncExpr*>(n);
            for (const CastFn& cast : kCasts) {
                if (cast.fn != f->funcid || list_length(f->args) != 1) continue;
                Kind k;
                if (!emit(e, static_cast<Node*>(linitial(f->args)), &k)) return false;
                const bool from_float = cast.op == Op::FloatToInt || (cast.op == Op::Null && cast.fn == F_FLOAT8_FLOAT4);
                if (k != (from_float ? Kind::Float : Kind::Int)) return fail(c, "a cast of an unexpected kind");
                *kind = cast.op == Op::IntToFloat || cast.fn == F_FLOAT8_FLOAT4 ? Kind::Float : Kind::Int;
                if (c->no_raise && (cast.op == Op::FloatToInt || cast.op == Op::IntNarrow))
                    return fail(c, "a cast that may raise, in a filter PostgreSQL may evaluate on other rows");
                if (cast.op != Op::Null) e.put(cast.op, k, 0, cast.width);
                return true;
            }
            return fail(c, psprintf("function %s", get_func_name(f->funcid)));
        }
        case T_OpExpr: {
            OpExpr* o = reinterpret_cast<OpExpr*>(n);
            set_opfuncid(o);
            for (const ArithFn& a : kArith) {
                if (a.fn != o->opfuncid) continue;
                if (c->no_raise)
                    return fail(c, "arithmetic in a filter PostgreSQL may evaluate on other rows (it may raise)");
                Kind k1, k2;
                if (!emit(e, static_cast<Node*>(linitial(o->args)), &k1) || k1 != a.kind) return fail(c, "an operand kind");
                if (a.op == Op::Neg) {
                    e.put(Op::Neg, a.kind, 0, a.width);
                } else {
                    if (!emit(e, static_cast<Node*>(lsecond(o->args)), &k2) || k2 != a.kind) return fail(c, "an operand kind");
                    e.put(a.op, a.kind, 0, a.width);
                }
                *kind = a.kind;
                return true;
            }
            for (const CmpFn& f : kCmp) {
                if (f.fn != o->opfuncid) continue;
                Kind k1, k2;
                if (!emit(e, static_cast<Node*>(linitial(o->args)), &k1) || k1 != f.kind ||
                    !emit(e, static_cast<Node*>(lsecond(o->args)), &k2) || k2 != f.kind)
                    return fail(c, "a comparison's operand kind");
                e.put(Op::Cmp, f.kind, static_cast<uint8_t>(f.cmp));
                *kind = Kind::Bool;
                return true;
            }
            return fail(c, psprintf("operator %s", get_opname(o->opno)));
        }
        case T_ScalarArrayOpExpr: return emit_in(e, reinterpret_cast<ScalarArrayOpExpr*>(n), kind);
        case T_BoolExpr: return emit_bool(e, reinterpret_cast<BoolExpr*>(n), kind);
        case T_NullTest: {
            NullTest* t = reinterpret_cast<NullTest*>(n);
            Kind k;
            if (t->argisrow || !emit(e, reinterpret_cast<Node*>(t->arg), &k)) return fail(c, "a row IS NULL");
            e.put(t->nulltesttype == IS_NULL ? Op::IsNull : Op::IsNotNull, k);
            *kind = Kind::Bool;
            return true;
        }
        default: return fail(c, psprintf("an expression of node type %d", static_cast<int>(nodeTag(n))));
    }
}

bool starjoin_compile(StarJoinCompiler* c, Node* e, Kind want, sj::ProgramRef* out) {
    Emit em{c, static_cast<int32>(c->plan->code.size())};
    Kind k;
    if (!emit(em, e, &k)) return false;
    if (k != want) return fail(c, "an expression of another kind");
    if (em.here() > sj::kMaxProgram) return fail(c, "an expression too long");
    out->first = em.first;
    out->length = em.here();
    return true;
}

bool starjoin_compile_quals(StarJoinCompiler* c, List* quals, sj::ProgramRef* out) {
    out->first = static_cast<int32>(c->plan->code.size());
    out->length = 0;
    if (quals == NIL) return true;
    Node* all = list_length(quals) == 1 ? static_cast<Node*>(linitial(quals))
                                        : reinterpret_cast<Node*>(makeBoolExpr(AND_EXPR, quals, -1));
    return starjoin_compile(c, all, Kind::Bool, out);
}
