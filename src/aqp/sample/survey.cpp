// The sample path's survey: which query level aggregates approx_*, which
// table under it has a synopsis whose sample answers for the caller, and
// every reason the statement must keep the exact path instead
// (sample/plan.h). Views reach the planner expanded (rewriteHandler.c)
// into subqueries: the table may sit in row-preserving FROM subqueries below
// the aggregated level.
#include "aqp/sample/plan.h"

extern "C" {
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
}

// ---- survey of the whole query ---------------------------------------------------------

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

static bool survey_walker(Node* node, AqpSurvey* s) {
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
        AqpSampleStep* step = static_cast<AqpSampleStep*>(palloc(sizeof(AqpSampleStep)));
        *step = {q, rti};
        List* here = lappend(list_copy(path), step);
        // A parent's synopsis samples its leaves (FROM ONLY: aqp_sample_choose).
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

int aqp_sample_column(const TableSynopsis* ts, AttrNumber attno) {
    for (int k = 0; k < ts->sample_natts; ++k)
        if (ts->sample_attnum[k] == attno) return k + 1;
    return 0;
}

// Why column a is not in ts's sample relation: its builder could not SELECT
// it (a build keeps only the columns its builder may read; a column numbered
// below a kept one existed at the build), or it was added after the build.
static const char* missing_column(const TableSynopsis* ts, AttrNumber a, const char* name, const char* phrase) {
    bool existed = false;
    for (int k = 0; k < ts->sample_natts; ++k) existed |= ts->sample_attnum[k] > a;
    if (existed || !table_column_readable(ts->relid, a, ts->owner))
        return psprintf("column %s is not in the sample of %s: its builder could not SELECT it", name, phrase);
    return psprintf("column %s was added after %s was built", name, phrase);
}

// A synopsis whose design follows a column the table's reader (the view
// owner for a view's table, else the current user) may not SELECT does not
// answer (docs/aqp.md "Security").
static const char* design_hidden(const TableSynopsis* ts, const RangeTblEntry* rte, const char* phrase) {
    return table_synopsis_hidden_design(ts, OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId(), phrase);
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
        int k = aqp_sample_column(ts, a);
        if (k == 0) return missing_column(ts, a, NameStr(ta->attname), phrase);
        Form_pg_attribute sa = TupleDescAttr(sd, k - 1);
        if (sa->atttypid != ta->atttypid || sa->atttypmod != ta->atttypmod || sa->attcollation != ta->attcollation)
            return psprintf("column %s changed type or collation since %s was built", NameStr(ta->attname), phrase);
    }
    const char* stale = table_synopsis_staleness(ts);
    if (stale != nullptr) return psprintf("%s: %s", phrase, stale);
    return nullptr;
}

AqpPercentileOrder aqp_percentile_order(const Aggref* a) {
    if (list_length(a->aggorder) != 1) return AqpPercentileOrder::Other;
    const SortGroupClause* sgc = static_cast<const SortGroupClause*>(linitial(a->aggorder));
    if (sgc->sortop == Float8LessOperator) return AqpPercentileOrder::Ascending;
    if (sgc->sortop == get_commutator(Float8LessOperator)) return AqpPercentileOrder::Descending;
    return AqpPercentileOrder::Other;
}

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
        // The weighted percentile orders float8 ascending or descending
        // (aqp_percentile_order); another operator's order (USING a
        // custom btree class's operator) is not one it knows.
        if (ordered && aqp_percentile_order(a) == AqpPercentileOrder::Other)
            return "a percentile ordered USING an operator other than float8's < or >";
    }
    return nullptr;
}


AqpSurvey aqp_sample_survey(Query* q) {
    AqpSurvey s{NIL, false, false, NIL};
    survey_walker(reinterpret_cast<Node*>(q), &s);
    return s;
}

// The checks over the whole statement, then the first table of the
// aggregated level's join tree with a synopsis whose sample answers.
bool aqp_sample_choose(Query* copy, AqpSampleChoice* choice, AqpSampleSpec* spec, const char** reason) {
    if (RecoveryInProgress()) {
        *reason = "a standby cannot read sample relations (they are unlogged)";
        return false;
    }
    AqpSurvey s = aqp_sample_survey(copy);
    if (s.agg_levels == NIL && !s.outer_approx) return false;  // no approx_* at all
    if (s.outer_approx) return (*reason = "an approx_* aggregate of an outer query level", false);
    if (list_length(s.agg_levels) > 1) return (*reason = "approx_* aggregates at more than one query level", false);
    if (s.row_marks) return (*reason = "FOR UPDATE / FOR SHARE", false);
    if (copy->hasModifyingCTE) return (*reason = "a data-modifying WITH", false);
    if (contain_volatile_functions(reinterpret_cast<Node*>(copy)))
        return (*reason = "a volatile function (a fallback would call it twice)", false);
    Query* q = static_cast<Query*>(linitial(s.agg_levels));
    LevelAggs aggs = level_aggs(q);
    if (aggs.other != NIL) return (*reason = "an exact aggregate beside approx_* at the same level", false);
    if (q->groupingSets != NIL) return (*reason = "GROUPING SETS / ROLLUP / CUBE", false);
    if (q->hasWindowFuncs) return (*reason = "a window function over approx_* aggregates", false);
    if ((*reason = aggregate_unfit(aggs.approx)) != nullptr) return false;

    // The table: the first in the join tree with a synopsis that answers.
    List* paths = NIL;
    candidate_tables(q, NIL, &paths);
    Oid role = GetUserId();
    AqpSampleChoice best{nullptr, nullptr, NIL, nullptr, nullptr};
    const char* why = nullptr;
    bool any_synopsis = false;
    ListCell* lc;
    foreach (lc, paths) {
        if (best.ts != nullptr) break;  // table_synopses' list is valid until its next call
        List* path = static_cast<List*>(lfirst(lc));
        AqpSampleStep* last = static_cast<AqpSampleStep*>(llast(path));
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
        bool env_dependent;  // spec->role_dependent is set already
        if (aqp_row_security_applies(rte, &env_dependent)) {
            why = psprintf("row-level security applies to table %s", get_rel_name(rte->relid));
            continue;
        }
        VarUse use = var_use(last->query, last->rti);
        for (int i = list_length(path) - 2; i >= 0 && !use.system; --i) {
            AqpSampleStep* st = static_cast<AqpSampleStep*>(list_nth(path, i));
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
            const char* unfit = design_hidden(ts, rte, phrase);
            if (unfit == nullptr) unfit = sample_unfit(ts, table, sample, use.attnos, phrase);
            if (unfit == nullptr) {  // the most recently built usable one
                best = {q, ts, path, table, sample};
                break;
            }
            if (unfit != nullptr && why == nullptr) why = unfit;
            if (sample != nullptr) relation_close(sample, NoLock);
        }
        if (best.table != table) relation_close(table, NoLock);
    }
    if (best.ts == nullptr) {
        *reason = why != nullptr ? why : any_synopsis ? "no usable synopsis" : "no synopsis on the query's tables";
        return false;
    }
    *choice = best;
    return true;
}
