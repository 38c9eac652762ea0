// The guard's judgement of what a query does with approximate values beyond
// returning them (sample/internal.h; docs/aqp.md, "Error bounds"). An interval
// within approx_gpu.max_relative_error on every row does not make the rows
// right when the query ranks by the estimates (ORDER BY approx_avg(x) DESC
// LIMIT 10 keeps the groups whose noise was largest) or filters on them
// (HAVING approx_count(*) > 100 drops a group whose estimate fell below).
// Under the guard:
// - a LIMIT / OFFSET over an ordering by one approx_* aggregate (the first
//   sort key, no other key approximate) is answered only when the intervals
//   separate the rows it keeps from the others: for DESC the smallest lower
//   bound before each cut exceeds the largest upper bound after it; the
//   group set is complete by the guard's own rule (sample/scan.cpp);
// - a HAVING whose conjuncts over approx_* aggregates are each `aggregate op
//   constant` is answered only when no group's interval straddles a
//   threshold; the HAVING moves out of the sample plan (a hidden boolean
//   column) so that the node sees every group;
// - any other shape (several approximate sort keys, an expression over the
//   aggregate, a filter or LIMIT at a level above the aggregated one, a
//   LIMIT left in the sample plan) runs the exact plan.
// The intervals reach the node as hidden columns: the _ci twin of the
// aggregate, appended to the sample plan's target list (its transition state
// is shared with the aggregate's own: nodeAgg.c finds them compatible).
#include "aqp/sample/internal.h"

#include <algorithm>

extern "C" {
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/lsyscache.h"
}

namespace {

bool weighted_walker(Node* node, void*) {
    if (node == nullptr || IsA(node, Query)) return false;
    if (IsA(node, Aggref)) {
        AqpAgg agg;
        Aggref* a = reinterpret_cast<Aggref*>(node);
        return a->agglevelsup == 0 && aqp_sample_weighted_kind(a->aggfnoid, &agg);
    }
    return expression_tree_walker(node, walker(weighted_walker), nullptr);
}
bool has_weighted(Node* n) { return weighted_walker(n, nullptr); }

// e itself a weighted aggregate's estimate (not its _ci form), else nullptr.
Aggref* bare_weighted(Node* e, AqpAgg* agg) {
    if (e == nullptr || !IsA(e, Aggref)) return nullptr;
    Aggref* a = reinterpret_cast<Aggref*>(e);
    return a->agglevelsup == 0 && aqp_sample_weighted_kind(a->aggfnoid, agg) && !agg->ci ? a : nullptr;
}

// Appends e to q's output as a hidden column; its 1-based position among
// the sample plan's output columns (the non-junk entries).
int add_hidden(Query* q, Expr* e, AqpSampleSpec* spec) {
    AttrNumber resno = static_cast<AttrNumber>(list_length(q->targetList) + 1);
    q->targetList = lappend(q->targetList, makeTargetEntry(e, resno, pstrdup("approx_hidden"), false));
    ++spec->hidden_columns;
    int n = 0;
    ListCell* lc;
    foreach (lc, q->targetList) n += !static_cast<TargetEntry*>(lfirst(lc))->resjunk;
    return n;
}

// The hidden column of a's interval (its _ci twin), 0 when there is none.
int interval_column(Query* q, Aggref* a, AqpAgg agg, AqpSampleSpec* spec) {
    Oid fn = aqp_sample_aggregate({agg.kind, true});
    if (!OidIsValid(fn)) return 0;
    Aggref* twin = static_cast<Aggref*>(copyObjectImpl(a));
    twin->aggfnoid = fn;
    twin->aggtype = get_func_rettype(fn);
    return add_hidden(q, reinterpret_cast<Expr*>(twin), spec);
}

// `aggregate op constant` (either side) over float8 as (the aggregate's
// interval column, the strategy with the aggregate on the left, the
// constant); nullptr when c has another shape.
List* having_check(Query* q, Node* c, AqpSampleSpec* spec) {
    if (!IsA(c, OpExpr) || list_length(reinterpret_cast<OpExpr*>(c)->args) != 2) return nullptr;
    OpExpr* op = reinterpret_cast<OpExpr*>(c);
    Node* l = static_cast<Node*>(linitial(op->args));
    Node* r = static_cast<Node*>(lsecond(op->args));
    AqpAgg agg;
    Aggref* a = bare_weighted(l, &agg);
    bool swapped = a == nullptr;
    if (swapped) a = bare_weighted(r, &agg);
    if (a == nullptr) return nullptr;
    Node* other = eval_const_expressions(nullptr, swapped ? l : r);
    if (!IsA(other, Const) || reinterpret_cast<Const*>(other)->constisnull ||
        reinterpret_cast<Const*>(other)->consttype != FLOAT8OID)
        return nullptr;
    int strategy = 0;
    List* interpretations = get_op_btree_interpretation(op->opno);
    ListCell* lc;
    foreach (lc, interpretations) {
        OpBtreeInterpretation* i = static_cast<OpBtreeInterpretation*>(lfirst(lc));
        if (i->oplefttype == FLOAT8OID && i->oprighttype == FLOAT8OID && i->strategy != BTEqualStrategyNumber)
            strategy = i->strategy;
    }
    if (strategy == 0) return nullptr;
    if (swapped) strategy = BTMaxStrategyNumber + 1 - strategy;  // c < agg is agg > c
    int column = interval_column(q, a, agg, spec);
    if (column == 0) return nullptr;
    return list_make3(makeInteger(column), makeInteger(strategy), copyObjectImpl(other));
}

}  // namespace

namespace {

struct Above {
    Query* aggregated;
    bool filters;
};
bool above_walker(Node* node, Above* c) {
    if (node == nullptr || node == reinterpret_cast<Node*>(c->aggregated)) return false;
    if (IsA(node, Query)) {
        Query* q = reinterpret_cast<Query*>(node);
        if (aqp_query_filters_rows(q)) return (c->filters = true);
        return query_tree_walker(q, walker(above_walker), c, 0);
    }
    return expression_tree_walker(node, walker(above_walker), c);
}

}  // namespace

void aqp_sample_judge_plan(Query* copy, Query* q, AqpSampleSpec* spec) {
    spec->hidden_columns = spec->rank_column = spec->having_column = 0;
    spec->rank_desc = false;
    spec->having_checks = NIL;
    spec->unjudged = nullptr;
    if (q != copy) {
        Above above{q, false};
        above_walker(reinterpret_cast<Node*>(copy), &above);
        if (above.filters)
            spec->unjudged = "a query level above the approximate aggregates filters or limits their rows (the guard "
                             "judges only their own level's LIMIT and HAVING; approx_gpu.max_relative_error is set)";
    }
    // Hidden columns need the statement's own rows (the top level), as they
    // are (no DISTINCT or SRF over them), and the whole LIMIT off the sample plan.
    bool can_hide = q == copy && q->distinctClause == NIL && !q->hasTargetSRFs && q->limitCount == nullptr &&
                    q->limitOffset == nullptr;

    // Ranking: the LIMIT cuts an ordering by an approximate aggregate.
    bool limited = spec->limit_count != nullptr || spec->limit_offset != nullptr || q->limitCount != nullptr ||
                   q->limitOffset != nullptr;
    int approx_keys = 0;
    SortGroupClause* first = nullptr;
    ListCell* lc;
    foreach (lc, q->sortClause) {
        SortGroupClause* sc = static_cast<SortGroupClause*>(lfirst(lc));
        if (!has_weighted(reinterpret_cast<Node*>(get_sortgroupclause_tle(sc, q->targetList)->expr))) continue;
        ++approx_keys;
        if (foreach_current_index(lc) == 0) first = sc;
    }
    if (limited && approx_keys > 0) {
        AqpAgg agg;
        Aggref* a = first != nullptr
                        ? bare_weighted(reinterpret_cast<Node*>(get_sortgroupclause_tle(first, q->targetList)->expr), &agg)
                        : nullptr;
        Oid family, type;
        int16 strategy = 0;
        if (a != nullptr && !get_ordering_op_properties(first->sortop, &family, &type, &strategy)) strategy = 0;
        int column = can_hide && approx_keys == 1 && a != nullptr && strategy != 0 ? interval_column(q, a, agg, spec) : 0;
        if (column == 0 && spec->unjudged == nullptr)
            spec->unjudged = "a LIMIT over an ordering by approximate aggregates that the guard cannot judge (it judges "
                             "one approx_* aggregate, the first sort key; approx_gpu.max_relative_error is set)";
        spec->rank_column = column;
        spec->rank_desc = strategy == BTGreaterStrategyNumber;
    }

    // HAVING: each conjunct over an approximate aggregate `aggregate op constant`.
    if (q->havingQual == nullptr || !has_weighted(q->havingQual)) return;
    bool judged = can_hide;
    List* checks = NIL;
    List* conjuncts = make_ands_implicit(reinterpret_cast<Expr*>(q->havingQual));
    foreach (lc, conjuncts) {
        Node* c = static_cast<Node*>(lfirst(lc));
        if (!judged || !has_weighted(c)) continue;
        List* check = having_check(q, c, spec);
        judged = check != nullptr;
        checks = lappend(checks, check);
    }
    if (!judged) {
        if (spec->unjudged == nullptr)
            spec->unjudged = "a HAVING over approximate aggregates that the guard cannot judge (it judges `approx_* op "
                             "constant`; approx_gpu.max_relative_error is set)";
        return;
    }
    spec->having_checks = checks;
    spec->having_column = add_hidden(q, reinterpret_cast<Expr*>(q->havingQual), spec);
    q->havingQual = nullptr;
}

// ---- execution -----------------------------------------------------------------------

// The interval in column `column` of the row (false: NULL, an exact NULL answer).
static bool interval_of(TupleTableSlot* slot, int column, double* lo, double* hi) {
    bool isnull;
    Datum d = slot_getattr(slot, column, &isnull);
    if (isnull) return false;
    HeapTupleHeader t = DatumGetHeapTupleHeader(d);
    bool lnull, hnull;
    Datum l = GetAttributeByNum(t, 2, &lnull);
    Datum h = GetAttributeByNum(t, 3, &hnull);
    if (lnull || hnull) return false;
    *lo = DatumGetFloat8(l);
    *hi = DatumGetFloat8(h);
    return true;
}

bool aqp_sample_having_passes(const AqpSampleSpec* spec, TupleTableSlot* slot) {
    if (spec->having_column == 0) return true;
    bool isnull;
    Datum d = slot_getattr(slot, spec->having_column, &isnull);
    return !isnull && DatumGetBool(d);
}

// Does the whole interval fall on one side of `value op threshold`? (NaN: no.)
static bool decided(double lo, double hi, int strategy, double c) {
    switch (strategy) {
        case BTLessStrategyNumber: return hi < c || lo >= c;
        case BTLessEqualStrategyNumber: return hi <= c || lo > c;
        case BTGreaterEqualStrategyNumber: return lo >= c || hi < c;
        case BTGreaterStrategyNumber: return lo > c || hi <= c;
        default: return false;
    }
}

// The rows before position b (in the plan's order) apart from those after it.
static bool separated(const double* lo, const double* hi, int64 n, int64 b, bool desc) {
    if (b <= 0 || b >= n) return true;
    double before = desc ? lo[0] : hi[0], after = desc ? hi[b] : lo[b];
    for (int64 i = 0; i < b; ++i) before = desc ? std::min(before, lo[i]) : std::max(before, hi[i]);
    for (int64 i = b; i < n; ++i) after = desc ? std::max(after, hi[i]) : std::min(after, lo[i]);
    return desc ? before > after : before < after;
}

const char* aqp_sample_judge(const AqpSampleSpec* spec, Tuplestorestate* store, TupleTableSlot* slot, int64 offset,
                             int64 count) {
    if (spec->unjudged != nullptr) return spec->unjudged;
    if (spec->rank_column == 0 && spec->having_checks == NIL) return nullptr;
    int64 rows = tuplestore_tuple_count(store);
    double* lo = static_cast<double*>(palloc(sizeof(double) * (rows + 1)));
    double* hi = static_cast<double*>(palloc(sizeof(double) * (rows + 1)));
    int64 n = 0;
    const char* why = nullptr;
    tuplestore_rescan(store);
    while (why == nullptr && tuplestore_gettupleslot(store, true, false, slot)) {
        ListCell* lc;
        foreach (lc, spec->having_checks) {
            List* check = static_cast<List*>(lfirst(lc));
            double l, h;
            double c = DatumGetFloat8(castNode(Const, lthird(check))->constvalue);
            if (interval_of(slot, intVal(linitial(check)), &l, &h) && !decided(l, h, intVal(lsecond(check)), c))
                why = "a group's interval straddles a HAVING threshold (approx_gpu.max_relative_error is set)";
        }
        if (why != nullptr || spec->rank_column == 0 || !aqp_sample_having_passes(spec, slot)) continue;
        if (!interval_of(slot, spec->rank_column, &lo[n], &hi[n]))
            why = "a NULL approximate value under an ordering a LIMIT cuts (approx_gpu.max_relative_error is set)";
        ++n;
    }
    tuplestore_rescan(store);
    int64 first = std::min(offset, n), last = count >= 0 && count < n - first ? first + count : n;
    if (why == nullptr && spec->rank_column != 0 &&
        (!separated(lo, hi, n, first, spec->rank_desc) || !separated(lo, hi, n, last, spec->rank_desc)))
        why = "the intervals do not separate the rows a LIMIT keeps from the others (ORDER BY an approximate aggregate; "
              "approx_gpu.max_relative_error is set)";
    pfree(lo);
    pfree(hi);
    return why;
}
