// Recognition of the query shape the box path answers (AqpQueryShape, box/internal.h):
//   SELECT [group cols,] approx_*(...) FROM t WHERE <AND of col op value>
//   [GROUP BY plain columns] [HAVING ...]
// read from the planner's structures at UPPERREL_GROUP_AGG: the range table,
// the grouping clause, the target list and HAVING's aggregates, t's
// baserestrictinfo. Anything else gives the reason last_run() reports.
#include "aqp/box/internal.h"
#include "synopsis/synopsis_codec.h"

extern "C" {
#include "access/stratnum.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
}

static bool mentions_approx(Node* node, void*) {
    if (node == nullptr) return false;
    if (IsA(node, Aggref)) {
        AqpAgg agg;
        if (aqp_lookup_aggregate(reinterpret_cast<Aggref*>(node)->aggfnoid, &agg)) return true;
    }
    return expression_tree_walker(node, walker(mentions_approx), nullptr);
}

bool aqp_mentions_approx(Node* node) { return mentions_approx(node, nullptr); }

bool aqp_is_number_type(Oid t) {
    return t == INT2OID || t == INT4OID || t == INT8OID || t == FLOAT4OID || t == FLOAT8OID || t == NUMERICOID;
}

// Strips what the parser put over a column: binary-compatible relabelling
// (varchar -> text) and implicit casts between number types or date ->
// timestamp (both order-preserving; the comparison's value is converted to
// the column's encoding at executor start). Other casts (date -> timestamptz
// depends on the time zone) stay, so the clause is not a column comparison.
static Node* strip_implicit(Node* node) {
    for (;;) {
        if (node == nullptr) return nullptr;
        if (IsA(node, RelabelType)) {
            node = reinterpret_cast<Node*>(reinterpret_cast<RelabelType*>(node)->arg);
            continue;
        }
        if (IsA(node, FuncExpr)) {
            FuncExpr* f = reinterpret_cast<FuncExpr*>(node);
            if (f->funcformat != COERCE_IMPLICIT_CAST || list_length(f->args) != 1) return node;
            Node* arg = static_cast<Node*>(linitial(f->args));
            Oid from = exprType(arg), to = f->funcresulttype;
            if ((aqp_is_number_type(from) && aqp_is_number_type(to)) || (from == DATEOID && to == TIMESTAMPOID)) {
                node = arg;
                continue;
            }
        }
        return node;
    }
}

Var* aqp_strip_to_var(Node* node) {
    node = strip_implicit(node);
    return node != nullptr && IsA(node, Var) ? reinterpret_cast<Var*>(node) : nullptr;
}

// A value known at executor start: no column, no volatile function, no
// subquery, no aggregate, and no Param but PARAM_EXTERN ($1 of a prepared
// statement).
static bool only_extern_params(Node* node, void*) {
    if (node == nullptr) return false;
    if (IsA(node, Param) && reinterpret_cast<Param*>(node)->paramkind != PARAM_EXTERN) return true;
    return expression_tree_walker(node, walker(only_extern_params), nullptr);
}
static bool is_runtime_constant(Node* node) {
    return !contain_var_clause(node) && !contain_volatile_functions(node) && !contain_subplans(node) &&
           !contain_agg_clause(node) && !contain_window_function(node) && !only_extern_params(node, nullptr);
}

// The btree strategy of opno for a comparison in type lefttype's default
// btree family (`<>` is the negator of that family's `=`: ROWCOMPARE_NE).
static int btree_strategy(Oid opno, Oid lefttype) {
    Oid opclass = GetDefaultOpClass(lefttype, BTREE_AM_OID);
    if (!OidIsValid(opclass)) return 0;
    Oid family = get_opclass_family(opclass);
    List* interps = get_op_btree_interpretation(opno);
    ListCell* lc;
    foreach (lc, interps) {
        OpBtreeInterpretation* bi = static_cast<OpBtreeInterpretation*>(lfirst(lc));
        if (bi->opfamily_id == family) return bi->strategy;
    }
    return 0;
}

static int commute_strategy(int s) {
    switch (s) {
        case BTLessStrategyNumber: return BTGreaterStrategyNumber;
        case BTLessEqualStrategyNumber: return BTGreaterEqualStrategyNumber;
        case BTGreaterEqualStrategyNumber: return BTLessEqualStrategyNumber;
        case BTGreaterStrategyNumber: return BTLessStrategyNumber;
        default: return s;
    }
}

static bool var_of(Var* v, Index rti) {
    return v != nullptr && v->varno == static_cast<int>(rti) && v->varlevelsup == 0;
}

// Parses one baserestrictinfo clause into shape->conds; false with shape->reason.
static bool parse_clause(AqpQueryShape* shape, Node* clause) {
    AqpQueryCondition* c = static_cast<AqpQueryCondition*>(palloc0(sizeof(AqpQueryCondition)));
    if (IsA(clause, Var) && var_of(reinterpret_cast<Var*>(clause), shape->rti) &&
        reinterpret_cast<Var*>(clause)->vartype == BOOLOID) {  // WHERE flag
        *c = {reinterpret_cast<Var*>(clause)->varattno,
              AQP_COND_CMP,
              BTEqualStrategyNumber,
              reinterpret_cast<Node*>(makeBoolConst(true, false)),
              BOOLOID,
              InvalidOid};
    } else if (is_notclause(clause) && IsA(get_notclausearg(reinterpret_cast<Expr*>(clause)), Var) &&
               var_of(reinterpret_cast<Var*>(get_notclausearg(reinterpret_cast<Expr*>(clause))), shape->rti) &&
               reinterpret_cast<Var*>(get_notclausearg(reinterpret_cast<Expr*>(clause)))->vartype == BOOLOID) {
        *c = {reinterpret_cast<Var*>(get_notclausearg(reinterpret_cast<Expr*>(clause)))->varattno,
              AQP_COND_CMP,
              BTEqualStrategyNumber,
              reinterpret_cast<Node*>(makeBoolConst(false, false)),
              BOOLOID,
              InvalidOid};
    } else if (IsA(clause, NullTest)) {
        NullTest* nt = reinterpret_cast<NullTest*>(clause);
        Var* v = IsA(nt->arg, Var) ? reinterpret_cast<Var*>(nt->arg) : nullptr;
        if (nt->argisrow || !var_of(v, shape->rti)) {
            shape->reason = "IS NULL on an expression";
            return false;
        }
        *c = {v->varattno, nt->nulltesttype == IS_NULL ? AQP_COND_IS_NULL : AQP_COND_NOT_NULL, 0, nullptr, InvalidOid,
              InvalidOid};
    } else if (IsA(clause, OpExpr) && list_length(reinterpret_cast<OpExpr*>(clause)->args) == 2) {
        OpExpr* op = reinterpret_cast<OpExpr*>(clause);
        Node* l = static_cast<Node*>(linitial(op->args));
        Node* r = static_cast<Node*>(lsecond(op->args));
        Var* v = aqp_strip_to_var(l);
        Node* other = r;
        bool commuted = false;
        if (!var_of(v, shape->rti)) {
            v = aqp_strip_to_var(r);
            other = l;
            commuted = true;
        }
        if (!var_of(v, shape->rti)) {
            shape->reason = "a WHERE condition does not compare a column with a value";
            return false;
        }
        if (!is_runtime_constant(other)) {
            shape->reason = contain_volatile_functions(other)
                                ? "volatile function in WHERE"
                                : "a WHERE condition compares a column with a non-constant";
            return false;
        }
        Oid ltype, rtype;
        op_input_types(op->opno, &ltype, &rtype);
        int s = btree_strategy(op->opno, ltype);
        if (s == 0) {
            shape->reason = psprintf("operator %s is not a btree comparison", get_opname(op->opno));
            return false;
        }
        *c = {v->varattno, AQP_COND_CMP, commuted ? commute_strategy(s) : s, other, exprType(other), op->inputcollid};
    } else if (IsA(clause, ScalarArrayOpExpr)) {
        ScalarArrayOpExpr* sa = reinterpret_cast<ScalarArrayOpExpr*>(clause);
        Var* v = aqp_strip_to_var(static_cast<Node*>(linitial(sa->args)));
        Node* arr = static_cast<Node*>(lsecond(sa->args));
        if (!var_of(v, shape->rti) || !is_runtime_constant(arr)) {
            shape->reason = "ANY / ALL over something other than a column and constants";
            return false;
        }
        Oid ltype, rtype;
        op_input_types(sa->opno, &ltype, &rtype);
        int s = btree_strategy(sa->opno, ltype);
        if (sa->useOr && s == BTEqualStrategyNumber)
            *c = {v->varattno, AQP_COND_IN, s, arr, get_element_type(exprType(arr)), sa->inputcollid};
        else if (!sa->useOr && s == AQP_STRATEGY_NE)
            *c = {v->varattno, AQP_COND_NOT_IN, s, arr, get_element_type(exprType(arr)), sa->inputcollid};
        else {
            shape->reason = "ANY / ALL with an operator other than = ANY or <> ALL";
            return false;
        }
    } else if (is_orclause(clause)) {
        shape->reason = "OR in WHERE";
        return false;
    } else {
        shape->reason = "unsupported WHERE condition";
        return false;
    }
    if (c->attno <= 0) {
        shape->reason = "system column in WHERE";
        return false;
    }
    // The comparison's collation, as GROUP BY's below (char(n) values are
    // refused per synopsis: box/planner.cpp, encoding_mismatch).
    const char* problem = synopsis_glue::dictionary_equality_problem(InvalidOid, -1, c->collation);
    if (problem != nullptr) {
        shape->reason = psprintf("%s on column %s", problem, get_attname(shape->relid, c->attno, false));
        return false;
    }
    shape->conds = lappend(shape->conds, c);
    return true;
}

// Walks the aggregates and the Vars outside them (tlist and HAVING).
static bool check_aggregates(PlannerInfo* root, RelOptInfo* output_rel, AqpQueryShape* shape) {
    List* nodes = pull_var_clause(reinterpret_cast<Node*>(output_rel->reltarget->exprs),
                                  PVC_INCLUDE_AGGREGATES | PVC_INCLUDE_PLACEHOLDERS | PVC_INCLUDE_WINDOWFUNCS);
    nodes = list_concat(nodes,
                        pull_var_clause(root->parse->havingQual,
                                        PVC_INCLUDE_AGGREGATES | PVC_INCLUDE_PLACEHOLDERS | PVC_INCLUDE_WINDOWFUNCS));
    ListCell* lc;
    foreach (lc, nodes) {
        Node* n = static_cast<Node*>(lfirst(lc));
        if (IsA(n, Var)) {
            Var* v = reinterpret_cast<Var*>(n);
            bool grouped = false;
            ListCell* g;
            foreach (g, shape->group_vars) {
                Var* gv = static_cast<Var*>(lfirst(g));
                if (gv->varno == v->varno && gv->varattno == v->varattno) grouped = true;
            }
            if (!grouped) {
                shape->reason = "a column outside the aggregates is not a GROUP BY column";
                return false;
            }
            continue;
        }
        if (!IsA(n, Aggref)) {
            shape->reason = "placeholder or window function in the target list";
            return false;
        }
        Aggref* a = reinterpret_cast<Aggref*>(n);
        AqpAgg agg;
        if (!aqp_lookup_aggregate(a->aggfnoid, &agg)) {
            shape->reason = psprintf("aggregate %s is not an approx_* aggregate", get_func_name(a->aggfnoid));
            return false;
        }
        if (agg.kind != AQP_COUNT && agg.kind != AQP_SUM && agg.kind != AQP_AVG) {
            shape->reason = "approx_count(expr) / percentiles are answered by the sample path only";
            return false;
        }
        if (a->aggdistinct != NIL) {
            shape->reason = "DISTINCT aggregate";
            return false;
        }
        if (a->aggfilter != nullptr) {
            shape->reason = "FILTER on an aggregate";
            return false;
        }
        if (a->aggorder != NIL || a->aggkind != AGGKIND_NORMAL || a->agglevelsup != 0) {
            shape->reason = "ORDER BY inside an aggregate";
            return false;
        }
        if (agg.kind != AQP_COUNT) {
            TargetEntry* te = static_cast<TargetEntry*>(linitial(a->args));
            Var* v = aqp_strip_to_var(reinterpret_cast<Node*>(te->expr));
            if (!var_of(v, shape->rti) || v->varattno <= 0) {
                shape->reason = "an aggregate's argument is not a column";
                return false;
            }
            shape->agg_attnos = lappend_int(shape->agg_attnos, v->varattno);
        }
    }
    return true;
}

// One plain table, no joins, sublinks, SRFs, windows, DISTINCT, grouping
// sets, row marks; our aggregates only; WHERE a conjunction of column
// comparisons.
const char* aqp_recognise_query(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel,
                                AqpQueryShape* shape) {
    Query* parse = root->parse;
    if (parse->groupingSets != NIL) return "GROUPING SETS";
    if (parse->hasWindowFuncs) return "window function";
    if (parse->hasTargetSRFs) return "set-returning function in the target list";
    if (parse->hasSubLinks) return "subquery in the query";
    if (parse->distinctClause != NIL) return "DISTINCT";
    if (parse->rowMarks != NIL) return "FOR UPDATE / SHARE";
    if (parse->cteList != NIL) return "WITH query";
    // What a query does with the estimates beyond returning them: the
    // sample path judges it under approx_gpu.max_relative_error (sample/judge.cpp).
    if (aqp_mentions_approx(parse->havingQual)) return "HAVING over approx_* aggregates (the sample path judges it)";
    if (parse->limitCount != nullptr || parse->limitOffset != nullptr) {
        ListCell* lc;
        foreach (lc, parse->sortClause)
            if (aqp_mentions_approx(reinterpret_cast<Node*>(
                    get_sortgroupclause_expr(static_cast<SortGroupClause*>(lfirst(lc)), parse->targetList))))
                return "LIMIT over an ordering by approx_* aggregates (the sample path judges it)";
    }
    for (PlannerInfo* up = root->parent_root; up != nullptr; up = up->parent_root)
        if (aqp_query_filters_rows(up->parse))
            return "a query level above the approx_* aggregates filters or limits their rows (the sample path judges it)";
    if (root->hasJoinRTEs || bms_membership(input_rel->relids) != BMS_SINGLETON) return "join";
    int rti = bms_singleton_member(input_rel->relids);
    RangeTblEntry* rte = planner_rt_fetch(rti, root);
    if (rte->rtekind != RTE_RELATION) return rte->rtekind == RTE_SUBQUERY ? "subquery in FROM" : "FROM is not a table";
    // Before the other entries: a parent's children are range table entries too.
    if (rte->relkind == RELKIND_PARTITIONED_TABLE) return "partitioned table";
    if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW) return "not a table or materialized view";
    // subquery_planner clears inh for a table without children, so inh or
    // has_subclass means children exist (FROM t or FROM ONLY t): the
    // synopsis describes the parent's own rows only.
    if (rte->inh || has_subclass(rte->relid)) return "table has inheritance children";
    // Every other range table entry is what a view or a pulled-up subquery
    // left behind (PostgreSQL 15's rewriter keeps a view's own RTE).
    ListCell* lc;
    foreach (lc, root->parse->rtable) {
        RangeTblEntry* other = static_cast<RangeTblEntry*>(lfirst(lc));
        if (other->rtekind == RTE_RELATION && other->relkind == RELKIND_VIEW) return "view";
    }
    for (int i = 1; i < root->simple_rel_array_size; ++i) {
        if (i == rti) continue;
        RangeTblEntry* other = root->simple_rte_array[i];
        if (other == nullptr) continue;
        if (other->rtekind == RTE_SUBQUERY) return "subquery in FROM";
        if (other->rtekind == RTE_RELATION) return "more than one table";
    }
    if (rte->tablesample != nullptr) return "TABLESAMPLE";
    shape->rti = rti;
    shape->relid = rte->relid;
    if (IS_DUMMY_REL(input_rel)) return "WHERE is always false";

    foreach (lc, parse->groupClause) {
        SortGroupClause* sgc = static_cast<SortGroupClause*>(lfirst(lc));
        Node* e = get_sortgroupclause_expr(sgc, root->processed_tlist);
        if (!IsA(e, Var) || !var_of(reinterpret_cast<Var*>(e), rti) || reinterpret_cast<Var*>(e)->varattno <= 0)
            return "GROUP BY an expression";
        // The groups are the dictionary's distinct strings: only where the
        // column's equality is theirs (the grouping uses the column's collation).
        Var* gv = reinterpret_cast<Var*>(e);
        const char* problem = synopsis_glue::dictionary_equality_problem(gv->vartype, gv->vartypmod, gv->varcollid);
        if (problem != nullptr)
            return psprintf("GROUP BY column %s: %s", get_attname(rte->relid, gv->varattno, false), problem);
        shape->group_vars = lappend(shape->group_vars, e);
    }
    if (!check_aggregates(root, output_rel, shape)) return shape->reason;

    RelOptInfo* base = find_base_rel(root, rti);
    foreach (lc, base->baserestrictinfo) {
        RestrictInfo* ri = static_cast<RestrictInfo*>(lfirst(lc));
        if (ri->pseudoconstant) return "a WHERE condition without a column";
        if (ri->orclause != nullptr) return "OR in WHERE";
        if (!parse_clause(shape, reinterpret_cast<Node*>(ri->clause))) return shape->reason;
    }
    return nullptr;
}
