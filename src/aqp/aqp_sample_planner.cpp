// The sample path's planner side: a planner_hook that, for a SELECT whose
// approx_* aggregates the box path did not answer, plans the same query
// again with the sampled table replaced by its sample relation and each
// approx_* Aggref by its weighted form (aqp.h), and returns the exact plan
// under an "Approx Sample Scan" that runs the sample plan first
// (aqp_sample_scan.cpp).
//
// Mechanics (PostgreSQL 15):
// - The exact plan comes first, from the untouched Query (standard_planner
//   scribbles on its input, so the copy is taken before).
// - In the copy the sampled table's range-table entry becomes a subquery
//   over the sample relation whose target list reproduces the table's
//   attribute layout (NULL for dropped columns) plus the stratum, so that
//   every Var of the table keeps its meaning and pull_up_subqueries
//   (optimizer/prep/prepjointree.c) flattens it into a plain scan. The
//   original entry stays in the range table, outside the join tree: the
//   executor checks the caller's privileges on it (ExecCheckRTPerms reads
//   requiredPerms / selectedCols / checkAsUser from every RTE_RELATION), the
//   plan cache locks it and the plan depends on it. The sample relation's
//   own entry requires no privilege: nobody reads it directly.
// - The copy is planned separately by standard_planner into its own
//   PlannedStmt (no merging of range tables, PARAM_EXEC or subplan ids),
//   kept in the node's custom_private and run nested by the executor.
// Views reach the hook expanded (rewriteHandler.c) into subqueries: the
// table may sit in row-preserving FROM subqueries below the aggregated level;
// the stratum is passed up through them.
#include "aqp/aqp_sample.h"

#include "synopsis/synopsis_table.h"

extern "C" {
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_aggregate.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/planmain.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/syscache.h"
}

bool aqp_box_path_enabled = true;
int aqp_box_path_max_groups = 16;
const char* aqp_box_path_reason = nullptr;
static planner_hook_type prev_planner_hook = nullptr;


// ---- survey of the whole query ---------------------------------------------------------

struct Survey {
    List* agg_levels;       // Query* holding approx_* Aggrefs of their own level
    bool outer_approx;      // an approx_* Aggref of an outer level (in a sublink)
    bool row_marks;         // FOR UPDATE / SHARE somewhere
    List* relids;           // every RTE_RELATION's relid, with repeats
};

// Aggrefs of a query's own level (not descending into sublinks' queries).
struct LevelAggs {
    List* approx;
    List* other;
};
static bool level_aggs_walker(Node* node, LevelAggs* out) {
    if (node == nullptr || IsA(node, Query)) return false;
    if (IsA(node, Aggref)) {
        Aggref* a = reinterpret_cast<Aggref*>(node);
        if (a->agglevelsup == 0) {
            AqpAgg agg;
            if (aqp_lookup_aggregate(a->aggfnoid, &agg))
                out->approx = lappend(out->approx, a);
            else
                out->other = lappend(out->other, a);
        }
        return false;  // arguments hold no aggregate of this level
    }
    return expression_tree_walker(node, walker(level_aggs_walker), out);
}
static LevelAggs level_aggs(Query* q) {
    LevelAggs r{NIL, NIL};
    level_aggs_walker(reinterpret_cast<Node*>(q->targetList), &r);
    level_aggs_walker(q->havingQual, &r);
    return r;
}

static bool survey_walker(Node* node, Survey* s) {
    if (node == nullptr) return false;
    if (IsA(node, Query)) {
        Query* q = reinterpret_cast<Query*>(node);
        if (q->rowMarks != NIL) s->row_marks = true;
        ListCell* lc;
        foreach (lc, q->rtable) {
            RangeTblEntry* r = static_cast<RangeTblEntry*>(lfirst(lc));
            if (r->rtekind == RTE_RELATION) s->relids = lappend_oid(s->relids, r->relid);
        }
        if (q->hasAggs && level_aggs(q).approx != NIL) s->agg_levels = lappend(s->agg_levels, q);
        return query_tree_walker(q, walker(survey_walker), s, 0);
    }
    if (IsA(node, Aggref)) {
        Aggref* a = reinterpret_cast<Aggref*>(node);
        AqpAgg agg;
        if (a->agglevelsup > 0 && aqp_lookup_aggregate(a->aggfnoid, &agg)) s->outer_approx = true;
    }
    return expression_tree_walker(node, walker(survey_walker), s);
}

// ---- where the sampled table sits ------------------------------------------------------

// One step from the aggregated query down to the table: the query and the
// range-table index of the next subquery (or, last, of the table).
struct Step {
    Query* query;
    Index rti;
};

// Is rti on the nullable side of an outer join of the join tree?
static bool nullable_in(Node* jt, Index rti, bool nullable, bool* found) {
    if (jt == nullptr) return false;
    if (IsA(jt, RangeTblRef)) {
        if (reinterpret_cast<RangeTblRef*>(jt)->rtindex == static_cast<int>(rti)) *found = true;
        return *found && nullable;
    }
    if (IsA(jt, FromExpr)) {
        ListCell* lc;
        foreach (lc, reinterpret_cast<FromExpr*>(jt)->fromlist) {
            bool r = nullable_in(static_cast<Node*>(lfirst(lc)), rti, nullable, found);
            if (*found) return r;
        }
        return false;
    }
    if (IsA(jt, JoinExpr)) {
        JoinExpr* j = reinterpret_cast<JoinExpr*>(jt);
        bool l = nullable_in(j->larg, rti, nullable || j->jointype == JOIN_RIGHT || j->jointype == JOIN_FULL, found);
        if (*found) return l;
        return nullable_in(j->rarg, rti, nullable || j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL, found);
    }
    return false;
}

// A FROM subquery whose rows pass one for one (a view, a derived table).
static bool row_preserving(const Query* q) {
    return q->commandType == CMD_SELECT && !q->hasAggs && q->groupClause == NIL && q->groupingSets == NIL &&
           q->havingQual == nullptr && !q->hasWindowFuncs && !q->hasTargetSRFs && q->distinctClause == NIL &&
           q->limitCount == nullptr && q->limitOffset == nullptr && q->setOperations == nullptr &&
           q->rowMarks == NIL && q->sortClause == NIL;
}

// Range-table indexes of the join tree's leaves.
static void jointree_leaves(Node* jt, List** out) {
    if (jt == nullptr) return;
    if (IsA(jt, RangeTblRef)) {
        *out = lappend_int(*out, reinterpret_cast<RangeTblRef*>(jt)->rtindex);
    } else if (IsA(jt, FromExpr)) {
        ListCell* lc;
        foreach (lc, reinterpret_cast<FromExpr*>(jt)->fromlist) jointree_leaves(static_cast<Node*>(lfirst(lc)), out);
    } else if (IsA(jt, JoinExpr)) {
        jointree_leaves(reinterpret_cast<JoinExpr*>(jt)->larg, out);
        jointree_leaves(reinterpret_cast<JoinExpr*>(jt)->rarg, out);
    }
}

// Every table reachable from q through non-nullable row-preserving FROM
// subqueries, each with its path of steps.
static void candidate_tables(Query* q, List* path, List** paths) {
    List* leaves = NIL;
    jointree_leaves(reinterpret_cast<Node*>(q->jointree), &leaves);
    ListCell* lc;
    foreach (lc, leaves) {
        Index rti = static_cast<Index>(lfirst_int(lc));
        bool found = false;
        if (nullable_in(reinterpret_cast<Node*>(q->jointree), rti, false, &found)) continue;
        RangeTblEntry* rte = rt_fetch(rti, q->rtable);
        Step* step = static_cast<Step*>(palloc(sizeof(Step)));
        *step = {q, rti};
        List* here = lappend(list_copy(path), step);
        // A parent's synopsis samples its leaves (FROM ONLY: plan_over_sample).
        if (rte->rtekind == RTE_RELATION &&
            (rte->relkind == RELKIND_RELATION || rte->relkind == RELKIND_MATVIEW ||
             rte->relkind == RELKIND_PARTITIONED_TABLE) &&
            rte->tablesample == nullptr)
            *paths = lappend(*paths, here);
        else if (rte->rtekind == RTE_SUBQUERY && !rte->lateral && row_preserving(rte->subquery))
            candidate_tables(rte->subquery, here, paths);
    }
}

// Vars of one range-table entry at one level (and in its sublinks).
struct VarUse {
    Index rti;
    int depth;
    bool system;   // a system column or a whole-row reference
    List* attnos;  // user columns referenced
};
static bool var_use_walker(Node* node, VarUse* u) {
    if (node == nullptr) return false;
    if (IsA(node, Var)) {
        Var* v = reinterpret_cast<Var*>(node);
        if (v->varno == static_cast<int>(u->rti) && static_cast<int>(v->varlevelsup) == u->depth) {
            if (v->varattno <= 0)
                u->system = true;
            else
                u->attnos = list_append_unique_int(u->attnos, v->varattno);
        }
        return false;
    }
    if (IsA(node, Query)) {
        ++u->depth;
        bool r = query_tree_walker(reinterpret_cast<Query*>(node), walker(var_use_walker), u, 0);
        --u->depth;
        return r;
    }
    return expression_tree_walker(node, walker(var_use_walker), u);
}
static VarUse var_use(Query* q, Index rti) {
    VarUse u{rti, 0, false, NIL};
    query_tree_walker(q, walker(var_use_walker), &u, 0);
    return u;
}

static int count_oid(List* l, Oid oid) {
    int n = 0;
    ListCell* lc;
    foreach (lc, l) n += lfirst_oid(lc) == oid;
    return n;
}

// ---- the synopsis ---------------------------------------------------------------------

static int sample_column(const TableSynopsis* ts, AttrNumber attno) {
    for (int k = 0; k < ts->sample_natts; ++k)
        if (ts->sample_attnum[k] == attno) return k + 1;
    return 0;
}

// nullptr when ts's sample answers for the table's columns in `attnos`.
static const char* sample_unfit(const TableSynopsis* ts, Relation table, Relation sample, List* attnos,
                                const char* phrase) {
    if (!OidIsValid(ts->sample_relid) && ts->unusable != nullptr) return psprintf("%s: %s", phrase, ts->unusable);
    if (!OidIsValid(ts->sample_relid))
        return psprintf("%s has no sample relation (built before 0.7.0 or restored from a dump: refresh_synopsis "
                        "builds one)",
                        phrase);
    if (sample == nullptr) return psprintf("the sample relation of %s is gone", phrase);
    TupleDesc td = RelationGetDescr(table), sd = RelationGetDescr(sample);
    if (sd->natts != ts->sample_natts + 1) return psprintf("the sample relation of %s has another layout", phrase);
    ListCell* lc;
    foreach (lc, attnos) {
        AttrNumber a = static_cast<AttrNumber>(lfirst_int(lc));
        Form_pg_attribute ta = TupleDescAttr(td, a - 1);
        int k = sample_column(ts, a);
        if (k == 0) return psprintf("column %s was added after %s was built", NameStr(ta->attname), phrase);
        Form_pg_attribute sa = TupleDescAttr(sd, k - 1);
        if (sa->atttypid != ta->atttypid || sa->atttypmod != ta->atttypmod || sa->attcollation != ta->attcollation)
            return psprintf("column %s changed type or collation since %s was built", NameStr(ta->attname), phrase);
    }
    const char* stale = table_synopsis_staleness(ts);
    if (stale != nullptr) return psprintf("%s: %s", phrase, stale);
    return nullptr;
}

// ---- rewriting the copy -----------------------------------------------------------------

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
        int k = ta->attisdropped ? 0 : sample_column(ts, static_cast<AttrNumber>(a));
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
    Step* last = static_cast<Step*>(llast(path));
    AttrNumber attno = static_cast<AttrNumber>(table_natts + 1);
    Index rti = last->rti;
    for (int i = list_length(path) - 2; i >= 0; --i) {
        Step* s = static_cast<Step*>(list_nth(path, i));
        Query* below = static_cast<Step*>(list_nth(path, i + 1))->query;
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
    const char* failed;
};

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
            n->args = list_make3(arg(x, 1), arg(stratum, 2), arg(sample, 3));
            n->aggargtypes = list_make3_oid(FLOAT8OID, INT4OID, OIDOID);
            break;
        case AQP_PERCENTILE_CONT:
        case AQP_PERCENTILE_DISC: {
            Expr* fraction = static_cast<Expr*>(linitial(a->aggdirectargs));
            n->args = list_make4(arg(x, 1), arg(stratum, 2), arg(sample, 3), arg(fraction, 4));
            n->aggargtypes = list_make4_oid(FLOAT8OID, INT4OID, OIDOID, FLOAT8OID);
            break;
        }
    }
    return reinterpret_cast<Node*>(n);
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
    Index rti = static_cast<Step*>(linitial(path))->rti;
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

// ---- the decision -------------------------------------------------------------------------

// Which approx_* Aggref shapes the weighted forms take.
static const char* aggregate_unfit(List* approx) {
    ListCell* lc;
    foreach (lc, approx) {
        Aggref* a = static_cast<Aggref*>(lfirst(lc));
        AqpAgg agg;
        aqp_lookup_aggregate(a->aggfnoid, &agg);
        bool ordered = agg.kind == AQP_PERCENTILE_CONT || agg.kind == AQP_PERCENTILE_DISC;
        if (a->aggdistinct != NIL) return "approx_* with DISTINCT";
        if (!ordered && a->aggorder != NIL) return "approx_* with ORDER BY";
        if (ordered && contain_vars_of_level(reinterpret_cast<Node*>(a->aggdirectargs), 0))
            return "a percentile fraction that varies by row";
    }
    return nullptr;
}

// A plan (or its subplans) in which the box path answers: keep it (the fast path).
static bool has_box_node(Plan* p) {
    if (p == nullptr) return false;
    if (IsA(p, CustomScan) && aqp_is_box_scan(reinterpret_cast<CustomScan*>(p))) return true;
    return has_box_node(p->lefttree) || has_box_node(p->righttree);
}

struct Candidate {
    const TableSynopsis* ts;
    List* path;
    Relation table;
    Relation sample;
};

// The sample path's plan for `copy` (the unplanned query), or nullptr and *reason.
static PlannedStmt* plan_over_sample(Query* copy, const char* query_string, int cursor_options, ParamListInfo params,
                                     AqpSampleSpec* spec, const char** reason) {
    if (RecoveryInProgress()) {
        *reason = "a standby cannot read sample relations (they are unlogged)";
        return nullptr;
    }
    Survey s{NIL, false, false, NIL};
    survey_walker(reinterpret_cast<Node*>(copy), &s);
    if (s.agg_levels == NIL && !s.outer_approx) return nullptr;  // no approx_* at all
    if (s.outer_approx) return (*reason = "an approx_* aggregate of an outer query level", nullptr);
    if (list_length(s.agg_levels) > 1) return (*reason = "approx_* aggregates at more than one query level", nullptr);
    if (s.row_marks) return (*reason = "FOR UPDATE / FOR SHARE", nullptr);
    if (copy->hasModifyingCTE) return (*reason = "a data-modifying WITH", nullptr);
    if (contain_volatile_functions(reinterpret_cast<Node*>(copy)))
        return (*reason = "a volatile function (a fallback would call it twice)", nullptr);
    Query* q = static_cast<Query*>(linitial(s.agg_levels));
    LevelAggs aggs = level_aggs(q);
    if (aggs.other != NIL) return (*reason = "an exact aggregate beside approx_* at the same level", nullptr);
    if (q->groupingSets != NIL) return (*reason = "GROUPING SETS / ROLLUP / CUBE", nullptr);
    if (q->hasWindowFuncs) return (*reason = "a window function over approx_* aggregates", nullptr);
    if ((*reason = aggregate_unfit(aggs.approx)) != nullptr) return nullptr;

    // The table: the first in the join tree with a synopsis that answers.
    List* paths = NIL;
    candidate_tables(q, NIL, &paths);
    Oid role = GetUserId();
    Candidate best{nullptr, NIL, nullptr, nullptr};
    const char* why = nullptr;
    bool any_synopsis = false;
    ListCell* lc;
    foreach (lc, paths) {
        if (best.ts != nullptr) break;  // table_synopses' list is valid until its next call
        List* path = static_cast<List*>(lfirst(lc));
        Step* last = static_cast<Step*>(llast(path));
        RangeTblEntry* rte = rt_fetch(last->rti, last->query->rtable);
        const TableSynopsis* const* list;
        int n = table_synopses(rte->relid, &list);
        bool answers_any = false;
        for (int i = 0; i < n; ++i) answers_any |= table_synopsis_answers(list[i]->relid, list[i]->owner, role);
        if (n > 0) spec->role_dependent = true;  // which synopsis answers depends on the role
        if (!answers_any) continue;
        any_synopsis = true;
        if (!rte->inh && (rte->relkind == RELKIND_PARTITIONED_TABLE || has_subclass(rte->relid))) {
            why = psprintf("FROM ONLY %s: its synopsis samples its partitions or inheritance children too",
                           get_rel_name(rte->relid));
            continue;
        }
        if (count_oid(s.relids, rte->relid) > 1) {
            why = psprintf("table %s is used more than once in the query", get_rel_name(rte->relid));
            continue;
        }
        switch (check_enable_rls(rte->relid, InvalidOid, true)) {
            case RLS_ENABLED:
                why = psprintf("row-level security applies to table %s", get_rel_name(rte->relid));
                continue;
            default: break;
        }
        VarUse use = var_use(last->query, last->rti);
        for (int i = list_length(path) - 2; i >= 0 && !use.system; --i) {
            Step* st = static_cast<Step*>(list_nth(path, i));
            use.system = var_use(st->query, st->rti).system;  // whole-row references of a view
        }
        if (use.system) {
            why = psprintf("a system column or whole-row reference of table %s", get_rel_name(rte->relid));
            continue;
        }
        Relation table = relation_open(rte->relid, NoLock);  // locked by the parser
        n = table_synopses(rte->relid, &list);
        for (int i = 0; i < n; ++i) {
            const TableSynopsis* ts = list[i];
            if (!table_synopsis_answers(ts->relid, ts->owner, role)) continue;
            const char* phrase = table_synopsis_phrase(ts->relid, ts->owner, ts->name, role);
            Relation sample = nullptr;
            if (OidIsValid(ts->sample_relid)) {
                LockRelationOid(ts->sample_relid, AccessShareLock);
                sample = try_relation_open(ts->sample_relid, NoLock);
            }
            const char* unfit = sample_unfit(ts, table, sample, use.attnos, phrase);
            if (unfit == nullptr) {  // the most recently built usable one
                best = {ts, path, table, sample};
                break;
            }
            if (unfit != nullptr && why == nullptr) why = unfit;
            if (sample != nullptr) relation_close(sample, NoLock);
        }
        if (best.table != table) relation_close(table, NoLock);
    }
    if (best.ts == nullptr) {
        *reason = why != nullptr ? why : any_synopsis ? "no usable synopsis" : "no synopsis on the query's tables";
        return nullptr;
    }

    // Rewrite: the sample subquery, the stratum passed up, the weighted aggregates.
    Step* last = static_cast<Step*>(llast(best.path));
    RangeTblEntry* orig = rt_fetch(last->rti, last->query->rtable);
    int table_natts = RelationGetDescr(best.table)->natts;
    RangeTblEntry* replacement = sample_subquery(orig, best.table, best.sample, best.ts);
    last->query->rtable = lappend(last->query->rtable, copy_node(orig));  // kept for privileges and locks
    list_nth_cell(last->query->rtable, last->rti - 1)->ptr_value = replacement;
    WeightContext wc{pass_stratum_up(best.path, table_natts), best.ts->sample_relid, nullptr};
    q->targetList = reinterpret_cast<List*>(weight_mutator(reinterpret_cast<Node*>(q->targetList), &wc));
    q->havingQual = weight_mutator(q->havingQual, &wc);
    relation_close(best.table, NoLock);
    relation_close(best.sample, NoLock);
    if (wc.failed != nullptr) return (*reason = wc.failed, nullptr);

    // The guard checks every group: a constant LIMIT / OFFSET of the
    // aggregated top level is applied by the node, after the check.
    spec->limit_count = -1;
    spec->limit_offset = 0;
    if (q == copy && q->limitOption == LIMIT_OPTION_COUNT &&
        (q->limitCount == nullptr || IsA(q->limitCount, Const)) &&
        (q->limitOffset == nullptr || IsA(q->limitOffset, Const))) {
        Const* c = reinterpret_cast<Const*>(q->limitCount);
        Const* o = reinterpret_cast<Const*>(q->limitOffset);
        if (c != nullptr && !c->constisnull) spec->limit_count = DatumGetInt64(c->constvalue);
        if (o != nullptr && !o->constisnull) spec->limit_offset = DatumGetInt64(o->constvalue);
        q->limitCount = q->limitOffset = nullptr;
    }
    spec->grouped = q->groupClause != NIL;
    spec->groups_within_strata = spec->grouped && groups_include_strata(q, best.path, best.ts);
    spec->relid = best.ts->relid;
    spec->owner = best.ts->owner;
    spec->synopsis = pstrdup(best.ts->name);
    spec->built = best.ts->built;
    spec->sample_relid = best.ts->sample_relid;
    spec->sample_rows = best.ts->model.m;
    // Serial: the nested plan runs inside the outer statement's executor.
    return standard_planner(copy, query_string, cursor_options & ~CURSOR_OPT_PARALLEL_OK, params);
}

// ---- the hook ----------------------------------------------------------------------------

// Plans the copy inside a subtransaction: an unexpected error there means
// the exact path, not a failed query (a cancel still cancels).
static PlannedStmt* try_plan_over_sample(Query* copy, const char* query_string, int cursor_options,
                                         ParamListInfo params, AqpSampleSpec* spec, const char** reason) {
    MemoryContext cxt = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    PlannedStmt* result = nullptr;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(cxt);
    PG_TRY();
    {
        result = plan_over_sample(copy, query_string, cursor_options, params, spec, reason);
        ReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(cxt);
        ErrorData* e = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
        if (e->sqlerrcode == ERRCODE_QUERY_CANCELED || e->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN ||
            e->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
            ReThrowError(e);
        *reason = psprintf("planning over the sample failed: %s", e->message);
        result = nullptr;
    }
    PG_END_TRY();
    return result;
}

// Planning under this hook (0: the library was loaded by this very
// planning, through the aggregates' support function, after planner()
// had passed the hook by).
static int hook_depth = 0;
bool aqp_sample_path_considered(void) { return hook_depth > 0; }

static PlannedStmt* aqp_planner(Query* parse, const char* query_string, int cursor_options, ParamListInfo params) {
    // Only SELECTs that mention an approx_* aggregate are copied (cheap walk).
    bool consider = parse->commandType == CMD_SELECT && parse->utilityStmt == nullptr && !IsInParallelMode() &&
                    IsTransactionState();
    Query* copy = nullptr;
    if (consider) {
        Survey s{NIL, false, false, NIL};
        survey_walker(reinterpret_cast<Node*>(parse), &s);
        if (s.agg_levels != NIL || s.outer_approx) copy = copy_node(parse);
    }
    PlannedStmt* exact = nullptr;
    aqp_box_path_reason = nullptr;
    int depth = hook_depth++;
    PG_TRY();
    {
        exact = prev_planner_hook != nullptr ? prev_planner_hook(parse, query_string, cursor_options, params)
                                             : standard_planner(parse, query_string, cursor_options, params);
    }
    PG_FINALLY();
    { hook_depth = depth; }
    PG_END_TRY();
    if (copy == nullptr) return exact;
    bool box = has_box_node(exact->planTree);
    ListCell* lc;
    foreach (lc, exact->subplans) box = box || has_box_node(static_cast<Plan*>(lfirst(lc)));
    if (box) return exact;  // the box path answers (the fast path)

    AqpSampleSpec spec;
    memset(&spec, 0, sizeof spec);
    const char* reason = nullptr;
    PlannedStmt* sample = try_plan_over_sample(copy, query_string, cursor_options, params, &spec, &reason);
    if (spec.role_dependent) exact->dependsOnRole = true;
    if (sample == nullptr) {
        // Both reasons: the box path's names what its shape lacks, the
        // sample path's what the whole statement does.
        const char* box_reason = aqp_box_path_reason;
        if (box_reason != nullptr && strncmp(box_reason, "no synopsis on table", 20) == 0)
            reason = box_reason;  // the one table the box path looked at has none
        else if (reason != nullptr && box_reason != nullptr && strcmp(box_reason, reason) != 0)
            reason = psprintf("%s; sample path: %s", box_reason, reason);
        if (reason != nullptr) last_run_rows("approx aggregate", reason);
        return exact;
    }
    return aqp_sample_wrap(exact, sample, &spec, cursor_options);
}

void aqp_sample_init(void) {
    DefineCustomBoolVariable("approx_gpu.box_path", "Whether the box path answers the queries it can.",
                             "off: queries the box path would answer take the sample path (to compare the two).",
                             &aqp_box_path_enabled, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.box_path_max_groups",
                            "Most groups the box path answers; a GROUP BY with more takes the sample path.",
                            "Each group is one box, a pass over the sample; the sample path passes once "
                            "(measured: 1,000 groups over a 10,000-row sample, box path 135 ms, sample path 4 ms).",
                            &aqp_box_path_max_groups, 16, 0, INT_MAX, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    aqp_sample_scan_register();
    prev_planner_hook = planner_hook;
    planner_hook = aqp_planner;
}
