// The sample path's rewrite of the copied Query (sample/plan.h): the
// sampled table's range-table entry becomes a subquery over the sample
// relation whose target list reproduces the table's attribute layout (NULL
// for dropped columns) plus the stratum, so that every Var of the table keeps
// its meaning and pull_up_subqueries (optimizer/prep/prepjointree.c) flattens
// it into a plain scan. The original entry stays in the range table, outside
// the join tree: the executor checks the caller's privileges on it
// (ExecCheckRTPerms reads requiredPerms / selectedCols / checkAsUser from every
// RTE_RELATION), the plan cache locks it and the plan depends on it. Each
// approx_* Aggref becomes its weighted form (sample/internal.h).
#include "aqp/sample/plan.h"

extern "C" {
#include "access/relation.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/rls.h"
#include "utils/fmgroids.h"
}

// The subquery over the sample relation that stands for the table: its
// target list is the table's attribute layout, then the stratum.
static RangeTblEntry* sample_subquery(RangeTblEntry* orig, Relation table, Relation sample, const TableSynopsis* ts) {
    TupleDesc td = RelationGetDescr(table), sd = RelationGetDescr(sample);
    RangeTblEntry* srte = makeNode(RangeTblEntry);
    srte->rtekind = RTE_RELATION;
    srte->relid = RelationGetRelid(sample);
    srte->relkind = RELKIND_RELATION;
    srte->rellockmode = AccessShareLock;
    srte->requiredPerms = 0;  // the original entry carries the caller's check
    srte->inh = false;
    srte->inFromCl = true;
    List* scols = NIL;
    for (int k = 0; k < sd->natts; ++k) scols = lappend(scols, makeString(pstrdup(NameStr(TupleDescAttr(sd, k)->attname))));
    srte->eref = makeAlias("approx_sample", scols);

    Query* sub = makeNode(Query);
    sub->commandType = CMD_SELECT;
    sub->querySource = QSRC_ORIGINAL;
    sub->canSetTag = true;
    sub->rtable = list_make1(srte);
    sub->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), nullptr);
    static_cast<RangeTblRef*>(linitial(sub->jointree->fromlist))->rtindex = 1;
    List* cols = NIL;
    for (int a = 1; a <= td->natts; ++a) {
        Form_pg_attribute ta = TupleDescAttr(td, a - 1);
        int k = ta->attisdropped ? 0 : aqp_sample_column(ts, static_cast<AttrNumber>(a));
        Expr* e = k > 0 ? reinterpret_cast<Expr*>(makeVar(1, static_cast<AttrNumber>(k), ta->atttypid, ta->atttypmod,
                                                          ta->attcollation, 0))
                  : ta->attisdropped ? reinterpret_cast<Expr*>(makeNullConst(INT4OID, -1, InvalidOid))
                                     : reinterpret_cast<Expr*>(makeNullConst(ta->atttypid, ta->atttypmod, ta->attcollation));
        const char* name = ta->attisdropped ? "" : NameStr(ta->attname);
        sub->targetList = lappend(sub->targetList, makeTargetEntry(e, static_cast<AttrNumber>(a), pstrdup(name), false));
        cols = lappend(cols, makeString(pstrdup(name)));
    }
    Var* stratum = makeVar(1, static_cast<AttrNumber>(sd->natts), INT4OID, -1, InvalidOid, 0);
    sub->targetList = lappend(sub->targetList, makeTargetEntry(reinterpret_cast<Expr*>(stratum),
                                                               static_cast<AttrNumber>(td->natts + 1),
                                                               pstrdup("approx_stratum"), false));
    cols = lappend(cols, makeString(pstrdup("approx_stratum")));

    RangeTblEntry* rte = makeNode(RangeTblEntry);
    rte->rtekind = RTE_SUBQUERY;
    rte->subquery = sub;
    rte->alias = orig->alias;
    rte->eref = makeAlias(orig->eref->aliasname, cols);
    rte->inFromCl = orig->inFromCl;
    return rte;
}

// The stratum column passed up through the intermediate subqueries: each
// step's entry gets one more output column; the Var of the aggregated level.
static Var* pass_stratum_up(List* path, int table_natts) {
    AqpSampleStep* last = static_cast<AqpSampleStep*>(llast(path));
    AttrNumber attno = static_cast<AttrNumber>(table_natts + 1);
    Index rti = last->rti;
    for (int i = list_length(path) - 2; i >= 0; --i) {
        AqpSampleStep* s = static_cast<AqpSampleStep*>(list_nth(path, i));
        Query* below = static_cast<AqpSampleStep*>(list_nth(path, i + 1))->query;
        Var* v = makeVar(rti, attno, INT4OID, -1, InvalidOid, 0);
        AttrNumber resno = static_cast<AttrNumber>(list_length(below->targetList) + 1);
        below->targetList =
            lappend(below->targetList, makeTargetEntry(reinterpret_cast<Expr*>(v), resno, pstrdup("approx_stratum"), false));
        RangeTblEntry* rte = rt_fetch(s->rti, s->query->rtable);
        rte->eref->colnames = lappend(rte->eref->colnames, makeString(pstrdup("approx_stratum")));
        attno = resno;
        rti = s->rti;
    }
    return makeVar(rti, attno, INT4OID, -1, InvalidOid, 0);
}

struct WeightContext {
    Var* stratum;
    Oid sample_relid;
    List* path;  // the levels from the aggregated one down to the table
    const TableSynopsis* ts;
    const char* failed;
    List* measures;  // the SUM / AVG arguments over the sample's columns
    bool filtered;   // some weighted Aggref has a FILTER
    bool borrow;     // may a measure's spread be borrowed at all (spread_borrowable)
    Oid role;        // the role the plan is made for
};

// A Var of the path's level `level` as a measure over the sample's columns:
// the table's column at the last level, else the next level's output
// expression as a measure in turn.
struct MeasureLevel {
    const WeightContext* c;
    int level;
};
static Node* measure_var(const Var* v, void* arg) {
    const MeasureLevel* at = static_cast<MeasureLevel*>(arg);
    const AqpSampleStep* s = static_cast<AqpSampleStep*>(list_nth(at->c->path, at->level));
    if (v->varlevelsup != 0 || v->varno != static_cast<int>(s->rti)) return nullptr;
    if (at->level == list_length(at->c->path) - 1) {
        int k = aqp_sample_column(at->c->ts, v->varattno);
        return k > 0 ? reinterpret_cast<Node*>(makeVar(1, static_cast<AttrNumber>(k), v->vartype, v->vartypmod,
                                                       v->varcollid, 0))
                     : nullptr;
    }
    const Query* below = static_cast<AqpSampleStep*>(list_nth(at->c->path, at->level + 1))->query;
    const TargetEntry* te = get_tle_by_resno(below->targetList, v->varattno);
    if (te == nullptr) return nullptr;
    MeasureLevel next{at->c, at->level + 1};
    return aqp_sample_measure_copy(reinterpret_cast<Node*>(te->expr), measure_var, &next);
}

// May the plan's SUM / AVG borrow their stratum's spread (docs/aqp.md,
// "Row-level security and views")? The spread is read from every sample row,
// also those the query's views and policies hide: only where no
// security_barrier view lies between the aggregates and the table and no
// row-level security binds the role the plan is made for on the table (that
// role's column privileges: measure_readable). Decided per plan, for its
// role; the executor borrows nothing for another (sample/scan.cpp).
static bool spread_borrowable(const AqpSampleChoice& best, Oid role) {
    ListCell* lc;
    foreach (lc, best.path) {
        const AqpSampleStep* s = static_cast<AqpSampleStep*>(lfirst(lc));
        if (rt_fetch(s->rti, s->query->rtable)->security_barrier) return false;
    }
    return check_enable_rls(RelationGetRelid(best.table), role, true) != RLS_ENABLED;
}

// Could the role read every column of measure m (over the sample's columns)
// in the table itself?
static bool measure_readable(Node* m, const WeightContext* c) {
    List* vars = pull_var_clause(m, 0);
    ListCell* lc;
    foreach (lc, vars) {
        const Var* v = static_cast<Var*>(lfirst(lc));
        if (v->varattno < 1 || v->varattno > c->ts->sample_natts ||
            !table_column_readable(c->ts->relid, c->ts->sample_attnum[v->varattno - 1], c->role))
            return false;
    }
    return true;
}

// The position (1-based) of x among the plan's measures, added when new; 0
// when x is not arithmetic over the table's numeric columns, or its spread
// may not be borrowed (no spread).
static int measure_of(Expr* x, WeightContext* c) {
    if (!c->borrow) return 0;
    MeasureLevel top{c, 0};
    Node* m = aqp_sample_measure_copy(reinterpret_cast<Node*>(x), measure_var, &top);
    if (m == nullptr || !measure_readable(m, c)) return 0;
    ListCell* lc;
    foreach (lc, c->measures)
        if (equal(lfirst(lc), m)) return foreach_current_index(lc) + 1;
    c->measures = lappend(c->measures, m);
    return list_length(c->measures);
}

static TargetEntry* arg(Expr* e, int resno) { return makeTargetEntry(e, static_cast<AttrNumber>(resno), nullptr, false); }

// The weighted form of one approx_* Aggref of the aggregated level.
static Node* weighted_aggref(Aggref* a, const AqpAgg& agg, WeightContext* c) {
    Oid fn = aqp_sample_aggregate(agg);
    if (!OidIsValid(fn)) {
        c->failed = "the weighted aggregates are missing (ALTER EXTENSION approx_gpu UPDATE)";
        return reinterpret_cast<Node*>(a);
    }
    Aggref* n = makeNode(Aggref);
    n->aggfnoid = fn;
    n->aggtype = a->aggtype;
    n->aggkind = AGGKIND_NORMAL;
    n->aggsplit = AGGSPLIT_SIMPLE;
    n->aggno = n->aggtransno = -1;
    n->location = a->location;
    n->aggfilter = a->aggfilter;
    Expr* stratum = reinterpret_cast<Expr*>(copy_node(c->stratum));
    Expr* sample = reinterpret_cast<Expr*>(makeConst(OIDOID, -1, InvalidOid, sizeof(Oid),
                                                     ObjectIdGetDatum(c->sample_relid), false, true));
    Expr* x = a->args != NIL ? static_cast<TargetEntry*>(linitial(a->args))->expr : nullptr;
    switch (agg.kind) {
        case AQP_COUNT:
        case AQP_COUNT_VALUE:
            n->args = list_make2(arg(stratum, 1), arg(sample, 2));
            n->aggargtypes = list_make2_oid(INT4OID, OIDOID);
            if (agg.kind == AQP_COUNT_VALUE) {
                NullTest* nt = makeNode(NullTest);
                nt->arg = x;
                nt->nulltesttype = IS_NOT_NULL;
                nt->location = -1;
                n->aggfilter = n->aggfilter == nullptr
                                   ? reinterpret_cast<Expr*>(nt)
                                   : make_andclause(list_make2(n->aggfilter, nt));
            }
            break;
        case AQP_SUM:
        case AQP_AVG:
            n->args = list_make4(arg(x, 1), arg(stratum, 2), arg(sample, 3),
                                 arg(reinterpret_cast<Expr*>(makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
                                                                       Int32GetDatum(measure_of(x, c)), false,
                                                                       true)),
                                     4));
            n->aggargtypes = list_make4_oid(FLOAT8OID, INT4OID, OIDOID, INT4OID);
            break;
        case AQP_PERCENTILE_CONT:
        case AQP_PERCENTILE_DISC: {
            Expr* fraction = static_cast<Expr*>(linitial(a->aggdirectargs));
            // ORDER BY x DESC / USING >: the stratum goes in negated (strata
            // are >= 1, so its sign is free; sample/internal.h); sample/survey.cpp
            // sent any other ordering operator to the exact path.
            if (aqp_percentile_order(a) == AqpPercentileOrder::Descending)
                stratum = reinterpret_cast<Expr*>(makeFuncExpr(F_INT4UM, INT4OID, list_make1(stratum), InvalidOid,
                                                               InvalidOid, COERCE_EXPLICIT_CALL));
            n->args = list_make4(arg(x, 1), arg(stratum, 2), arg(sample, 3), arg(fraction, 4));
            n->aggargtypes = list_make4_oid(FLOAT8OID, INT4OID, OIDOID, FLOAT8OID);
            break;
        }
    }
    c->filtered |= n->aggfilter != nullptr;
    return reinterpret_cast<Node*>(n);
}

// The missing-groups rule counts a group's sample rows (sample/internal.h); a FILTER
// hides some from its aggregate, so beside FILTERed aggregates the grouped
// top level gets an unfiltered sample_count as a junk column: it reports the
// group's rows, is marked by its location and trips no guard.
static void add_group_rows(Query* q, WeightContext* c) {
    if (!c->filtered || q->groupClause == NIL || c->failed != nullptr) return;
    AqpAgg count{AQP_COUNT, false};
    Aggref* a = makeNode(Aggref);
    a->aggtype = FLOAT8OID;  // sample_count's; weighted_aggref reads only the type, FILTER and location
    a->location = kAqpGroupRowsLocation;
    Node* n = weighted_aggref(a, count, c);
    AttrNumber resno = static_cast<AttrNumber>(list_length(q->targetList) + 1);
    q->targetList =
        lappend(q->targetList, makeTargetEntry(reinterpret_cast<Expr*>(n), resno, pstrdup("approx_group_rows"), true));
}

static Node* weight_mutator(Node* node, WeightContext* c) {
    if (node == nullptr || IsA(node, Query)) return node;
    if (IsA(node, Aggref)) {
        Aggref* a = reinterpret_cast<Aggref*>(node);
        AqpAgg agg;
        if (a->agglevelsup == 0 && aqp_lookup_aggregate(a->aggfnoid, &agg)) return weighted_aggref(a, agg, c);
        return node;
    }
    return expression_tree_mutator(node, mutator(weight_mutator), c);
}

// Does GROUP BY list every stratify column of the table as a plain column
// (the table directly in the aggregated level)? Then a group's rows lie in
// the strata where the sample saw it.
static bool groups_include_strata(Query* q, List* path, const TableSynopsis* ts) {
    if (ts->n_stratify == 0 || list_length(path) != 1) return false;
    Index rti = static_cast<AqpSampleStep*>(linitial(path))->rti;
    List* keys = get_sortgrouplist_exprs(q->groupClause, q->targetList);
    for (int s = 0; s < ts->n_stratify; ++s) {
        AttrNumber a = ts->attnum[ts->stratify[s]];
        bool found = false;
        ListCell* lc;
        foreach (lc, keys) {
            Node* k = static_cast<Node*>(lfirst(lc));
            while (k != nullptr && IsA(k, RelabelType)) k = reinterpret_cast<Node*>(reinterpret_cast<RelabelType*>(k)->arg);
            found |= k != nullptr && IsA(k, Var) && reinterpret_cast<Var*>(k)->varno == static_cast<int>(rti) &&
                     reinterpret_cast<Var*>(k)->varlevelsup == 0 && reinterpret_cast<Var*>(k)->varattno == a;
        }
        if (!found) return false;
    }
    return true;
}

// A LIMIT / OFFSET expression the node can evaluate: no subquery (it may
// hold the statement's parameters and stable functions; volatile ones keep
// the whole statement exact).
static bool limit_movable(Node* e) {
    return e == nullptr || (!contain_subplans(e) && !contain_vars_of_level(e, 0));
}

bool aqp_sample_rewrite(Query* copy, AqpSampleChoice* choice, AqpSampleSpec* spec, const char** reason) {
    AqpSampleChoice& best = *choice;
    Query* q = best.level;
    // The sample subquery, the stratum passed up, the weighted aggregates.
    // The groups the other tables allow, from the query as written: the top
    // level's groups are the sample plan's rows (no DISTINCT or SRF between
    // them; HAVING: below).
    spec->domain_sql = nullptr;
    if (q == copy && q->distinctClause == NIL && !q->hasTargetSRFs)
        spec->domain_sql = aqp_sample_domain_sql(q, static_cast<AqpSampleStep*>(linitial(best.path))->rti);
    AqpSampleStep* last = static_cast<AqpSampleStep*>(llast(best.path));
    RangeTblEntry* orig = rt_fetch(last->rti, last->query->rtable);
    int table_natts = RelationGetDescr(best.table)->natts;
    const Oid role = GetUserId();
    const bool borrow = spread_borrowable(best, role);  // before the table's entry is replaced
    RangeTblEntry* replacement = sample_subquery(orig, best.table, best.sample, best.ts);
    last->query->rtable = lappend(last->query->rtable, copy_node(orig));  // kept for privileges and locks
    list_nth_cell(last->query->rtable, last->rti - 1)->ptr_value = replacement;
    WeightContext wc{pass_stratum_up(best.path, table_natts), best.ts->sample_relid, best.path, best.ts, nullptr, NIL,
                     false, borrow, role};
    q->targetList = reinterpret_cast<List*>(weight_mutator(reinterpret_cast<Node*>(q->targetList), &wc));
    q->havingQual = weight_mutator(q->havingQual, &wc);
    if (q == copy) add_group_rows(q, &wc);  // a lower level's junk column would be dropped (allpaths.c)
    relation_close(best.table, NoLock);
    relation_close(best.sample, NoLock);
    if (wc.failed != nullptr) return (*reason = wc.failed, false);
    const char* too_big = aqp_sample_state_problem(best.ts->model.n_strata, list_length(wc.measures));
    if (too_big != nullptr) return (*reason = too_big, false);

    // The checks count and judge every group: the aggregated top level's
    // LIMIT / OFFSET (constant-folded; parameters are evaluated by the node)
    // is applied by the node, after them. WITH TIES or a subquery stays.
    spec->limit_count = spec->limit_offset = nullptr;
    if (q == copy && q->limitOption != LIMIT_OPTION_WITH_TIES && limit_movable(q->limitCount) &&
        limit_movable(q->limitOffset)) {
        if (q->limitCount != nullptr) spec->limit_count = eval_const_expressions(nullptr, q->limitCount);
        if (q->limitOffset != nullptr) spec->limit_offset = eval_const_expressions(nullptr, q->limitOffset);
        q->limitCount = q->limitOffset = nullptr;
    }
    aqp_sample_judge_plan(copy, q, spec);
    // The groups the other tables allow, when the sample plan's rows are the
    // groups (a HAVING the judgement moved out of the plan is applied by the node).
    if (q->havingQual != nullptr) spec->domain_sql = nullptr;
    spec->grouped = q->groupClause != NIL;
    spec->groups_within_strata = spec->grouped && groups_include_strata(q, best.path, best.ts);
    spec->relid = best.ts->relid;
    spec->owner = best.ts->owner;
    spec->synopsis = pstrdup(best.ts->name);
    spec->built = best.ts->built;
    spec->sample_relid = best.ts->sample_relid;
    spec->sample_rows = best.ts->model.m;
    spec->measures = wc.measures;
    spec->spread_role = role;
    return true;
}
