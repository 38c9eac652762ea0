// The planner side of approximate aggregates in SQL: a
// create_upper_paths_hook that, at UPPERREL_GROUP_AGG, recognises
//   SELECT [group cols,] approx_*(...) FROM t WHERE <AND of col op const>
//   [GROUP BY discrete cols] [HAVING ...]
// and adds a CustomPath answering it from the most recently built fresh
// synopsis of t covering every column it mentions. Otherwise it adds nothing
// and records the reason for last_run() ({"answered_from": "rows", ...}).
//
// Mechanics (PostgreSQL 15, optimizer/plan/planner.c): the hook is called at
// the end of create_ordinary_grouping_paths with the scan/join rel as
// input_rel and the grouped rel as output_rel; partitionwise aggregation calls
// it again for child rels (IS_OTHER_REL), which we ignore. The CustomPath's
// child is a fresh AggPath over input_rel's cheapest path (add_path may
// pfree a path already in output_rel once ours dominates it).
#include "aqp/aqp.h"

#include "synopsis/synopsis_table.h"

extern "C" {
#include "access/stratnum.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/rls.h"
}

using approx::synopsis::Mode;

// expression_tree_walker takes bool (*)() in PostgreSQL 15 (nodeFuncs.h);
// the cast goes through void (*)() to say it is deliberate.
using TreeWalker = bool (*)();
template <class Fn>
static TreeWalker walker(Fn fn) {
    return reinterpret_cast<TreeWalker>(reinterpret_cast<void (*)()>(fn));
}

create_upper_paths_hook_type aqp_prev_upper_paths_hook = nullptr;

// ---- recognition ----------------------------------------------------------------

static bool is_number_type(Oid t) {
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
            if ((is_number_type(from) && is_number_type(to)) || (from == DATEOID && to == TIMESTAMPOID)) {
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

// One WHERE clause as a box condition.
struct Cond {
    AttrNumber attno;
    int kind;      // AqpCondKind
    int strategy;  // btree strategy (CMP, IN = equality, NOT_IN = AQP_STRATEGY_NE)
    Node* expr;    // the value (CMP), the array (IN / NOT_IN), nullptr (NULL tests)
    Oid value_type;  // the value's type (the array's element type)
    Oid collation;   // the comparison's collation
};

struct Query1 {
    Index rti;
    Oid relid;
    List* conds;       // Cond*
    List* group_vars;  // Var*
    List* agg_attnos;  // int: columns under approx_sum / approx_avg
    const char* reason;
};

static const char* attname(Oid relid, AttrNumber attno) { return get_attname(relid, attno, false); }

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

static bool var_of(Var* v, Index rti) { return v != nullptr && v->varno == static_cast<int>(rti) && v->varlevelsup == 0; }

// Parses one baserestrictinfo clause into q->conds; false with q->reason.
static bool parse_clause(Query1* q, Node* clause) {
    Cond* c = static_cast<Cond*>(palloc0(sizeof(Cond)));
    if (IsA(clause, Var) && var_of(reinterpret_cast<Var*>(clause), q->rti) &&
        reinterpret_cast<Var*>(clause)->vartype == BOOLOID) {  // WHERE flag
        *c = {reinterpret_cast<Var*>(clause)->varattno, AQP_COND_CMP, BTEqualStrategyNumber,
              reinterpret_cast<Node*>(makeBoolConst(true, false)), BOOLOID, InvalidOid};
    } else if (is_notclause(clause) && IsA(get_notclausearg(reinterpret_cast<Expr*>(clause)), Var) &&
               var_of(reinterpret_cast<Var*>(get_notclausearg(reinterpret_cast<Expr*>(clause))), q->rti) &&
               reinterpret_cast<Var*>(get_notclausearg(reinterpret_cast<Expr*>(clause)))->vartype == BOOLOID) {
        *c = {reinterpret_cast<Var*>(get_notclausearg(reinterpret_cast<Expr*>(clause)))->varattno, AQP_COND_CMP,
              BTEqualStrategyNumber, reinterpret_cast<Node*>(makeBoolConst(false, false)), BOOLOID, InvalidOid};
    } else if (IsA(clause, NullTest)) {
        NullTest* nt = reinterpret_cast<NullTest*>(clause);
        Var* v = IsA(nt->arg, Var) ? reinterpret_cast<Var*>(nt->arg) : nullptr;
        if (nt->argisrow || !var_of(v, q->rti)) {
            q->reason = "IS NULL on an expression";
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
        if (!var_of(v, q->rti)) {
            v = aqp_strip_to_var(r);
            other = l;
            commuted = true;
        }
        if (!var_of(v, q->rti)) {
            q->reason = "a WHERE condition does not compare a column with a value";
            return false;
        }
        if (!is_runtime_constant(other)) {
            q->reason = contain_volatile_functions(other) ? "volatile function in WHERE"
                                                          : "a WHERE condition compares a column with a non-constant";
            return false;
        }
        Oid ltype, rtype;
        op_input_types(op->opno, &ltype, &rtype);
        int s = btree_strategy(op->opno, ltype);
        if (s == 0) {
            q->reason = psprintf("operator %s is not a btree comparison", get_opname(op->opno));
            return false;
        }
        *c = {v->varattno, AQP_COND_CMP, commuted ? commute_strategy(s) : s, other, exprType(other), op->inputcollid};
    } else if (IsA(clause, ScalarArrayOpExpr)) {
        ScalarArrayOpExpr* sa = reinterpret_cast<ScalarArrayOpExpr*>(clause);
        Var* v = aqp_strip_to_var(static_cast<Node*>(linitial(sa->args)));
        Node* arr = static_cast<Node*>(lsecond(sa->args));
        if (!var_of(v, q->rti) || !is_runtime_constant(arr)) {
            q->reason = "ANY / ALL over something other than a column and constants";
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
            q->reason = "ANY / ALL with an operator other than = ANY or <> ALL";
            return false;
        }
    } else if (is_orclause(clause)) {
        q->reason = "OR in WHERE";
        return false;
    } else {
        q->reason = "unsupported WHERE condition";
        return false;
    }
    if (c->attno <= 0) {
        q->reason = "system column in WHERE";
        return false;
    }
    if (OidIsValid(c->collation) && !get_collation_isdeterministic(c->collation)) {
        q->reason = psprintf("nondeterministic collation on column %s", attname(q->relid, c->attno));
        return false;
    }
    q->conds = lappend(q->conds, c);
    return true;
}

// Walks the aggregates and the Vars outside them (tlist and HAVING).
static bool check_aggregates(PlannerInfo* root, RelOptInfo* output_rel, Query1* q) {
    List* nodes = pull_var_clause(reinterpret_cast<Node*>(output_rel->reltarget->exprs),
                                  PVC_INCLUDE_AGGREGATES | PVC_INCLUDE_PLACEHOLDERS | PVC_INCLUDE_WINDOWFUNCS);
    nodes = list_concat(nodes, pull_var_clause(root->parse->havingQual, PVC_INCLUDE_AGGREGATES |
                                                                           PVC_INCLUDE_PLACEHOLDERS |
                                                                           PVC_INCLUDE_WINDOWFUNCS));
    ListCell* lc;
    foreach (lc, nodes) {
        Node* n = static_cast<Node*>(lfirst(lc));
        if (IsA(n, Var)) {
            Var* v = reinterpret_cast<Var*>(n);
            bool grouped = false;
            ListCell* g;
            foreach (g, q->group_vars) {
                Var* gv = static_cast<Var*>(lfirst(g));
                if (gv->varno == v->varno && gv->varattno == v->varattno) grouped = true;
            }
            if (!grouped) {
                q->reason = "a column outside the aggregates is not a GROUP BY column";
                return false;
            }
            continue;
        }
        if (!IsA(n, Aggref)) {
            q->reason = "placeholder or window function in the target list";
            return false;
        }
        Aggref* a = reinterpret_cast<Aggref*>(n);
        AqpAgg agg;
        if (!aqp_lookup_aggregate(a->aggfnoid, &agg)) {
            q->reason = psprintf("aggregate %s is not an approx_* aggregate", get_func_name(a->aggfnoid));
            return false;
        }
        if (a->aggdistinct != NIL) {
            q->reason = "DISTINCT aggregate";
            return false;
        }
        if (a->aggfilter != nullptr) {
            q->reason = "FILTER on an aggregate";
            return false;
        }
        if (a->aggorder != NIL || a->aggkind != AGGKIND_NORMAL || a->agglevelsup != 0) {
            q->reason = "ORDER BY inside an aggregate";
            return false;
        }
        if (agg.kind != AQP_COUNT) {
            TargetEntry* te = static_cast<TargetEntry*>(linitial(a->args));
            Var* v = aqp_strip_to_var(reinterpret_cast<Node*>(te->expr));
            if (!var_of(v, q->rti) || v->varattno <= 0) {
                q->reason = "an aggregate's argument is not a column";
                return false;
            }
            q->agg_attnos = lappend_int(q->agg_attnos, v->varattno);
        }
    }
    return true;
}

// The query's shape: one plain table, no joins, sublinks, SRFs, windows,
// DISTINCT, grouping sets, row marks; our aggregates only; WHERE a
// conjunction of column comparisons. nullptr when answerable (by some
// synopsis), else the reason.
static const char* check_query(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel, Query1* q) {
    Query* parse = root->parse;
    if (parse->groupingSets != NIL) return "GROUPING SETS";
    if (parse->hasWindowFuncs) return "window function";
    if (parse->hasTargetSRFs) return "set-returning function in the target list";
    if (parse->hasSubLinks) return "subquery in the query";
    if (parse->distinctClause != NIL) return "DISTINCT";
    if (parse->rowMarks != NIL) return "FOR UPDATE / SHARE";
    if (parse->cteList != NIL) return "WITH query";
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
    q->rti = rti;
    q->relid = rte->relid;
    if (IS_DUMMY_REL(input_rel)) return "WHERE is always false";

    foreach (lc, parse->groupClause) {
        SortGroupClause* sgc = static_cast<SortGroupClause*>(lfirst(lc));
        Node* e = get_sortgroupclause_expr(sgc, root->processed_tlist);
        if (!IsA(e, Var) || !var_of(reinterpret_cast<Var*>(e), rti) || reinterpret_cast<Var*>(e)->varattno <= 0)
            return "GROUP BY an expression";
        q->group_vars = lappend(q->group_vars, e);
    }
    if (!check_aggregates(root, output_rel, q)) return q->reason;

    RelOptInfo* base = find_base_rel(root, rti);
    foreach (lc, base->baserestrictinfo) {
        RestrictInfo* ri = static_cast<RestrictInfo*>(lfirst(lc));
        if (ri->pseudoconstant) return "a WHERE condition without a column";
        if (ri->orclause != nullptr) return "OR in WHERE";
        if (!parse_clause(q, reinterpret_cast<Node*>(ri->clause))) return q->reason;
    }
    return nullptr;
}

// ---- choosing the synopsis ------------------------------------------------------

static int synopsis_column(const TableSynopsis* ts, AttrNumber attno) {
    for (int j = 0; j < ts->d; ++j)
        if (ts->attnum[j] == attno) return j;
    return -1;
}

// Can value_type be compared with a column of this encoding by converting
// it to the column's doubles?
static const char* encoding_mismatch(const TableSynopsis* ts, int col, const Cond* c, Oid relid) {
    const char* name = attname(relid, c->attno);
    switch (ts->encoding[col]) {
        case ValueEncoding::Dictionary:
            if (c->kind == AQP_COND_CMP && c->strategy != BTEqualStrategyNumber && c->strategy != AQP_STRATEGY_NE)
                return psprintf("range comparison on discrete column %s", name);
            if (ts->atttype[col] == BPCHAROID && c->kind != AQP_COND_IS_NULL && c->kind != AQP_COND_NOT_NULL)
                return psprintf("comparison on char(n) column %s", name);
            return nullptr;
        case ValueEncoding::Number:
            return c->expr == nullptr || is_number_type(c->value_type)
                       ? nullptr
                       : psprintf("column %s compared with a value of type %s", name, format_type_be(c->value_type));
        case ValueEncoding::Date:
        case ValueEncoding::Timestamp:
            return c->expr == nullptr || c->value_type == DATEOID || c->value_type == TIMESTAMPOID
                       ? nullptr
                       : psprintf("column %s compared with a value of type %s (time zone dependent)", name,
                                  format_type_be(c->value_type));
        case ValueEncoding::TimestampTz:
            return c->expr == nullptr || c->value_type == TIMESTAMPTZOID
                       ? nullptr
                       : psprintf("column %s compared with a value of type %s (time zone dependent)", name,
                                  format_type_be(c->value_type));
    }
    return "unknown column encoding";
}

// nullptr when ts answers q; else why not.
static const char* synopsis_unfit(const TableSynopsis* ts, const Query1* q) {
    if (ts->unusable != nullptr) return psprintf("synopsis %s unusable: %s", ts->name, ts->unusable);
    ListCell* lc;
    foreach (lc, q->group_vars) {
        Var* v = static_cast<Var*>(lfirst(lc));
        int j = synopsis_column(ts, v->varattno);
        if (j < 0) return psprintf("column %s not in synopsis %s", attname(q->relid, v->varattno), ts->name);
        if (ts->encoding[j] != ValueEncoding::Dictionary && ts->model.cols[j].mode != Mode::Exact)
            return psprintf("GROUP BY column %s is smoothed in synopsis %s", attname(q->relid, v->varattno), ts->name);
    }
    foreach (lc, q->agg_attnos) {
        int j = synopsis_column(ts, static_cast<AttrNumber>(lfirst_int(lc)));
        if (j < 0)
            return psprintf("column %s not in synopsis %s", attname(q->relid, static_cast<AttrNumber>(lfirst_int(lc))),
                            ts->name);
        if (ts->encoding[j] != ValueEncoding::Number)
            return psprintf("approx_sum / approx_avg of non-number column %s",
                            attname(q->relid, static_cast<AttrNumber>(lfirst_int(lc))));
    }
    foreach (lc, q->conds) {
        const Cond* c = static_cast<const Cond*>(lfirst(lc));
        int j = synopsis_column(ts, c->attno);
        if (j < 0) return psprintf("column %s not in synopsis %s", attname(q->relid, c->attno), ts->name);
        const char* why = encoding_mismatch(ts, j, c, q->relid);
        if (why != nullptr) return why;
    }
    const char* stale = table_synopsis_staleness(ts);
    if (stale != nullptr) return psprintf("synopsis %s: %s", ts->name, stale);
    return nullptr;
}

// ---- the paths --------------------------------------------------------------------

// A fresh exact aggregation path (the node's child), as
// add_paths_to_grouping_rel builds its simplest ones (planner.c).
static Path* exact_path(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel) {
    Query* parse = root->parse;
    AggClauseCosts costs;
    MemSet(&costs, 0, sizeof costs);
    get_agg_clause_costs(root, AGGSPLIT_SIMPLE, &costs);
    Path* input = input_rel->cheapest_total_path;
    List* having = reinterpret_cast<List*>(parse->havingQual);
    double groups = output_rel->pathlist != NIL ? static_cast<Path*>(linitial(output_rel->pathlist))->rows : 1;
    if (parse->groupClause == NIL)
        return reinterpret_cast<Path*>(create_agg_path(root, output_rel, input, output_rel->reltarget, AGG_PLAIN,
                                                       AGGSPLIT_SIMPLE, NIL, having, &costs, 1));
    if (grouping_is_hashable(parse->groupClause))
        return reinterpret_cast<Path*>(create_agg_path(root, output_rel, input, output_rel->reltarget, AGG_HASHED,
                                                       AGGSPLIT_SIMPLE, parse->groupClause, having, &costs, groups));
    if (!pathkeys_contained_in(root->group_pathkeys, input->pathkeys))
        input = reinterpret_cast<Path*>(create_sort_path(root, output_rel, input, root->group_pathkeys, -1.0));
    return reinterpret_cast<Path*>(create_agg_path(root, output_rel, input, output_rel->reltarget, AGG_SORTED,
                                                   AGGSPLIT_SIMPLE, parse->groupClause, having, &costs, groups));
}

static bool same_column_set(const TableSynopsis* ts, const int* cols, int n) {
    if (ts->n_stratify != n || n == 0) return false;
    for (int i = 0; i < n; ++i) {
        bool found = false;
        for (int k = 0; k < n; ++k) found = found || ts->stratify[k] == cols[i];
        if (!found) return false;
    }
    return true;
}

// The box path's spec for the query (its aggregates come with the plan's
// target list, in plan_aqp_path).
static AqpPlanSpec* box_spec(const Query1* q, const TableSynopsis* ts, List** group_vars) {
    AqpPlanSpec* spec = static_cast<AqpPlanSpec*>(palloc0(sizeof(AqpPlanSpec)));
    spec->kind = AQP_PLAN_BOXES;
    spec->relid = ts->relid;
    spec->owner = ts->owner;
    spec->synopsis = pstrdup(ts->name);
    spec->built = ts->built;
    AqpBoxSpec& b = spec->boxes;
    b.n_cols = ts->d;
    b.attnums = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * ts->d));
    for (int j = 0; j < ts->d; ++j) b.attnums[j] = ts->attnum[j];
    b.n_groups = list_length(q->group_vars);
    b.group_cols = static_cast<int*>(palloc(sizeof(int) * (b.n_groups + 1)));
    ListCell* lc;
    foreach (lc, q->group_vars)
        b.group_cols[foreach_current_index(lc)] = synopsis_column(ts, static_cast<Var*>(lfirst(lc))->varattno);
    b.groups_are_strata = same_column_set(ts, b.group_cols, b.n_groups);
    b.n_conds = list_length(q->conds);
    b.conds = static_cast<AqpBoxCondition*>(palloc(sizeof(AqpBoxCondition) * (b.n_conds + 1)));
    foreach (lc, q->conds) {
        const Cond* c = static_cast<const Cond*>(lfirst(lc));
        int value = -1;
        if (c->expr != nullptr) {
            value = list_length(spec->values);
            spec->values = lappend(spec->values, c->expr);
        }
        b.conds[foreach_current_index(lc)] = {synopsis_column(ts, c->attno), static_cast<AqpCondKind>(c->kind),
                                              c->strategy, value};
    }
    *group_vars = q->group_vars;
    return spec;
}

static void add_synopsis_path(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel,
                              const Query1* q, const TableSynopsis* ts) {
    Path* child = exact_path(root, input_rel, output_rel);
    List* group_vars;
    List* values;
    List* spec = aqp_plan_spec_form(box_spec(q, ts, &group_vars), &values);

    CustomPath* cp = makeNode(CustomPath);
    cp->path.pathtype = T_CustomScan;
    cp->path.parent = output_rel;
    cp->path.pathtarget = output_rel->reltarget;
    cp->path.param_info = nullptr;
    cp->path.parallel_aware = false;
    cp->path.parallel_safe = false;  // pins a backend-local synopsis
    cp->path.parallel_workers = 0;
    cp->path.rows = child->rows;
    // Far below the exact plan: the node reads the sample, not the table.
    cp->path.startup_cost = 0.001 * child->startup_cost;
    cp->path.total_cost = 0.001 * child->total_cost;
    cp->path.pathkeys = NIL;
    // No CUSTOMPATH_SUPPORT_PROJECTION: the node's target list stays the
    // grouping target, the child's own, so that its rows can be returned as
    // they are when the node falls back.
    cp->flags = 0;
    cp->custom_paths = list_make1(child);
    cp->custom_private = list_make3(spec, values, group_vars);  // AqpPathSlot
    cp->methods = &aqp_path_methods;
    add_path(output_rel, reinterpret_cast<Path*>(cp));
}

// Is any approx_* aggregate in the query? (Otherwise stay silent.)
static bool mentions_approx(Node* node, void*) {
    if (node == nullptr) return false;
    if (IsA(node, Aggref)) {
        AqpAgg agg;
        if (aqp_lookup_aggregate(reinterpret_cast<Aggref*>(node)->aggfnoid, &agg)) return true;
    }
    return expression_tree_walker(node, walker(mentions_approx), nullptr);
}

void aqp_upper_paths(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel, RelOptInfo* output_rel,
                     void* extra) {
    if (aqp_prev_upper_paths_hook) aqp_prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
    if (stage != UPPERREL_GROUP_AGG) return;
    // Per-partition (partitionwise aggregation) calls: child rels.
    if (IS_OTHER_REL(output_rel) || IS_OTHER_REL(input_rel)) return;
    GroupPathExtraData* gextra = static_cast<GroupPathExtraData*>(extra);
    if (gextra != nullptr && gextra->patype == PARTITIONWISE_AGGREGATE_PARTIAL) return;
    if (!root->parse->hasAggs) return;
    if (!mentions_approx(reinterpret_cast<Node*>(output_rel->reltarget->exprs), nullptr) &&
        !mentions_approx(root->parse->havingQual, nullptr))
        return;

    Query1 q;
    memset(&q, 0, sizeof q);
    const char* reason = check_query(root, input_rel, output_rel, &q);
    if (reason == nullptr) {
        // Row-level security: a synopsis is derived from every row.
        switch (check_enable_rls(q.relid, InvalidOid, true)) {
            case RLS_ENABLED: reason = "row-level security applies to the table"; break;
            case RLS_NONE_ENV: root->glob->dependsOnRole = true; break;
            default: break;
        }
    }
    if (reason == nullptr) {
        const TableSynopsis* const* list;
        int n = table_synopses(q.relid, &list);
        const TableSynopsis* chosen = nullptr;
        for (int i = 0; i < n && chosen == nullptr; ++i) {
            const char* why = synopsis_unfit(list[i], &q);
            if (why == nullptr)
                chosen = list[i];
            else if (reason == nullptr)
                reason = why;  // the most recent synopsis's reason
        }
        if (n == 0) reason = psprintf("no synopsis on table %s", get_rel_name(q.relid));
        if (chosen != nullptr) {
            add_synopsis_path(root, input_rel, output_rel, &q, chosen);
            return;
        }
    }
    last_run_rows("approx aggregate", reason);
}
