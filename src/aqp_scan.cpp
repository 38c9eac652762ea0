// The "Approx Synopsis Scan" CustomScan (issue 13 items 3 and 4): answers the
// approx_* aggregates of one grouped query from a pinned table synopsis, one
// box per group, every box in one engine call per aggregate kind; falls back
// to its child (the exact aggregation plan) when the synopsis is gone, stale,
// or an answer is less precise than approx_gpu.max_relative_error allows.
//
// Plan shape (PostgreSQL 15, nodes/extensible.h, executor/nodeCustom.c,
// optimizer/plan/setrefs.c set_customscan_references): scanrelid = 0;
// custom_scan_tlist = the group Vars, then every Aggref of the target list
// and HAVING, so that setrefs turns the target list and the HAVING qual into
// INDEX_VAR references to it and ExecScan evaluates them over the tuples this
// node produces. custom_exprs hold the comparison values (Consts, Params,
// stable expressions), fixed by setrefs and evaluated at executor start.
#include "aqp.h"

#include <cmath>

#include "synopsis_table.h"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/typcache.h"
}

namespace syn = approx::synopsis;
using syn::NullPolicy;

// copyObject() is a typeof macro that C++ does not compile.
template <class T>
static T* copy_node(T* node) {
    return static_cast<T*>(copyObjectImpl(node));
}

static constexpr const char* kNodeName = "Approx Synopsis Scan";
static constexpr int64 kMaxBoxes = int64{1} << 24;
extern const CustomScanMethods aqp_scan_methods;

// ---- plan -------------------------------------------------------------------

static Plan* plan_aqp_path(PlannerInfo* root, RelOptInfo* rel, CustomPath* best_path, List* tlist, List* clauses,
                           List* custom_plans) {
    List* priv = best_path->custom_private;
    List* attnums = static_cast<List*>(list_nth(priv, AQP_PATH_ATTNUMS));
    List* group_vars = static_cast<List*>(list_nth(priv, AQP_PATH_GROUP_VARS));
    List* having = reinterpret_cast<List*>(root->parse->havingQual);  // implicit-AND (preprocess_expression, EXPRKIND_QUAL)

    List* scan_tlist = NIL;
    ListCell* lc;
    foreach (lc, group_vars)
        scan_tlist = lappend(scan_tlist, makeTargetEntry(static_cast<Expr*>(copy_node(lfirst(lc))),
                                                         list_length(scan_tlist) + 1, nullptr, false));
    List* aggs = NIL;
    List* pulled = list_concat(pull_var_clause(reinterpret_cast<Node*>(tlist), PVC_INCLUDE_AGGREGATES),
                               pull_var_clause(reinterpret_cast<Node*>(having), PVC_INCLUDE_AGGREGATES));
    foreach (lc, pulled) {
        Node* n = static_cast<Node*>(lfirst(lc));
        if (!IsA(n, Aggref) || tlist_member(reinterpret_cast<Expr*>(n), scan_tlist) != nullptr) continue;
        Aggref* a = reinterpret_cast<Aggref*>(n);
        AqpAgg agg;
        if (!aqp_lookup_aggregate(a->aggfnoid, &agg)) elog(ERROR, "approx synopsis scan: unexpected aggregate");
        int col = -1;
        if (agg.kind != AQP_COUNT) {
            Var* v = aqp_strip_to_var(reinterpret_cast<Node*>(static_cast<TargetEntry*>(linitial(a->args))->expr));
            int j = 0;
            ListCell* an;
            foreach (an, attnums) {
                if (v != nullptr && intVal(lfirst(an)) == v->varattno) col = j;
                ++j;
            }
            if (col < 0) elog(ERROR, "approx synopsis scan: aggregate column not in synopsis");
        }
        aggs = lappend(aggs, makeInteger(agg.kind));
        aggs = lappend(aggs, makeInteger(agg.ci ? 1 : 0));
        aggs = lappend(aggs, makeInteger(col));
        scan_tlist = lappend(scan_tlist, makeTargetEntry(reinterpret_cast<Expr*>(copy_node(n)),
                                                         list_length(scan_tlist) + 1, nullptr, false));
    }

    List* plan_priv = NIL;
    for (int i = 0; i < AQP_PRIV_COUNT; ++i)
        plan_priv = lappend(plan_priv, i == AQP_PRIV_AGGS ? aggs : copy_node(list_nth(priv, i)));

    CustomScan* cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    cs->scan.plan.qual = having;
    cs->scan.scanrelid = 0;
    cs->flags = best_path->flags;
    cs->custom_plans = custom_plans;
    cs->custom_exprs = static_cast<List*>(copy_node(list_nth(priv, AQP_PATH_EXPRS)));
    cs->custom_private = plan_priv;
    cs->custom_scan_tlist = scan_tlist;
    cs->methods = &aqp_scan_methods;
    return reinterpret_cast<Plan*>(cs);
}

const CustomPathMethods aqp_path_methods = {kNodeName, plan_aqp_path, nullptr};

// ---- executor state ------------------------------------------------------------------

// Sorted disjoint closed intervals of a column's encoded values (n = 0: none).
struct Intervals {
    int n;
    double* lo;
    double* hi;
};

struct AggSpec {
    int kind, ci, col;
};

struct AqpScanState {
    CustomScanState css;
    // from the plan
    Oid relid, owner;
    const char* name;
    TimestampTz built;
    int n_group;
    int* group_cols;
    int n_aggs;
    AggSpec* aggs;
    bool strata_groups;
    List* exprs;  // ExprState per custom_exprs entry
    // executor start
    const TableSynopsis* ts;  // pinned
    const char* fallback;     // non-null: the rows answer, and why
    int64 n_cand;             // candidate groups
    double* keys;             // n_cand x n_group group key values (NaN = NULL)
    int64 per_group;          // boxes per group
    int64 q;
    double* lo;
    double* hi;
    uint8* nulls;
    int32* stratum;  // nullptr: every box over every stratum
    // results
    bool computed, recorded;
    int natts;
    int64 n_out, next;
    Datum* out_values;
    bool* out_nulls;
};

static void fall_back(AqpScanState* st, const char* reason) {
    if (st->fallback == nullptr) st->fallback = reason;
}

// ---- values ---------------------------------------------------------------------------

// A comparison value in the column's encoding; false (and a fallback) when it
// has none. Dictionary columns give the code, -1 for a value no sample row holds.
static bool encode_value(AqpScanState* st, int col, Datum d, Oid type, double* out) {
    const TableSynopsis* ts = st->ts;
    switch (ts->encoding[col]) {
        case ValueEncoding::Dictionary: {
            Oid out_fn;
            bool varlena;
            getTypeOutputInfo(type, &out_fn, &varlena);
            *out = table_synopsis_code(ts, col, OidOutputFunctionCall(out_fn, d));
            return true;
        }
        case ValueEncoding::Number: {
            double v;
            switch (type) {
                case INT2OID: v = DatumGetInt16(d); break;
                case INT4OID: v = DatumGetInt32(d); break;
                case INT8OID: v = static_cast<double>(DatumGetInt64(d)); break;
                case FLOAT4OID: v = DatumGetFloat4(d); break;
                case FLOAT8OID: v = DatumGetFloat8(d); break;
                case NUMERICOID: v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d)); break;
                default: fall_back(st, "comparison value of an unsupported type"); return false;
            }
            if (std::isnan(v)) {
                fall_back(st, "NaN comparison value");
                return false;
            }
            *out = v;
            return true;
        }
        case ValueEncoding::Date:
        case ValueEncoding::Timestamp: {
            bool days = ts->encoding[col] == ValueEncoding::Date;
            if (type == DATEOID) {
                DateADT v = DatumGetDateADT(d);
                *out = DATE_IS_NOBEGIN(v) ? -INFINITY
                       : DATE_IS_NOEND(v) ? INFINITY
                                          : (days ? v : static_cast<double>(v) * USECS_PER_DAY);
                return true;
            }
            if (type == TIMESTAMPOID) {
                Timestamp v = DatumGetTimestamp(d);
                *out = TIMESTAMP_IS_NOBEGIN(v) ? -INFINITY
                       : TIMESTAMP_IS_NOEND(v) ? INFINITY
                                               : (days ? static_cast<double>(v) / USECS_PER_DAY : static_cast<double>(v));
                return true;
            }
            break;
        }
        case ValueEncoding::TimestampTz:
            if (type == TIMESTAMPTZOID) {
                TimestampTz v = DatumGetTimestampTz(d);
                *out = TIMESTAMP_IS_NOBEGIN(v) ? -INFINITY : TIMESTAMP_IS_NOEND(v) ? INFINITY : static_cast<double>(v);
                return true;
            }
            break;
    }
    fall_back(st, "comparison value of an unsupported type");
    return false;
}

static Intervals iv_make(int n) {
    Intervals r{0, static_cast<double*>(palloc(sizeof(double) * (n > 0 ? n : 1))),
                static_cast<double*>(palloc(sizeof(double) * (n > 0 ? n : 1)))};
    return r;
}
static void iv_add(Intervals* r, double lo, double hi) {
    if (lo > hi) return;
    r->lo[r->n] = lo;
    r->hi[r->n] = hi;
    ++r->n;
}
static Intervals iv_all() {
    Intervals r = iv_make(1);
    iv_add(&r, -INFINITY, INFINITY);
    return r;
}
static Intervals iv_intersect(const Intervals& a, const Intervals& b) {
    Intervals r = iv_make(a.n + b.n);
    int i = 0, k = 0;
    while (i < a.n && k < b.n) {
        iv_add(&r, std::fmax(a.lo[i], b.lo[k]), std::fmin(a.hi[i], b.hi[k]));
        if (a.hi[i] < b.hi[k])
            ++i;
        else
            ++k;
    }
    return r;
}
// The values below / above v in the column's encoding (a strict bound: codes
// are integers; numbers the adjacent double).
static double below(double v, bool dict) { return dict ? v - 1 : std::nextafter(v, -INFINITY); }
static double above(double v, bool dict) { return dict ? v + 1 : std::nextafter(v, INFINITY); }

static int cmp_double(const void* a, const void* b) {
    double x = *static_cast<const double*>(a), y = *static_cast<const double*>(b);
    return x < y ? -1 : x > y ? 1 : 0;
}

// {p_1..p_n} (or its complement) as intervals; points absent from a
// dictionary (-1) are dropped first.
static Intervals iv_points(double* p, int n, bool complement, bool dict) {
    int k = 0;
    for (int i = 0; i < n; ++i)
        if (!(dict && p[i] < 0)) p[k++] = p[i];
    n = k;
    qsort(p, n, sizeof(double), cmp_double);
    Intervals r = iv_make(n + 1);
    if (!complement) {
        for (int i = 0; i < n; ++i) {
            if (r.n > 0 && (r.hi[r.n - 1] >= p[i] || (dict && r.hi[r.n - 1] + 1 == p[i]))) {
                r.hi[r.n - 1] = std::fmax(r.hi[r.n - 1], p[i]);
                continue;
            }
            iv_add(&r, p[i], p[i]);
        }
        return r;
    }
    double from = -INFINITY;
    for (int i = 0; i < n; ++i) {
        iv_add(&r, from, below(p[i], dict));
        from = std::fmax(from, above(p[i], dict));
    }
    iv_add(&r, from, INFINITY);
    return r;
}

// One condition's set of values; false when the node must fall back.
static bool condition_set(AqpScanState* st, List* cond, Intervals* out, uint8* policy) {
    int col = intVal(linitial(cond)), kind = intVal(lsecond(cond)), strategy = intVal(lthird(cond));
    int expr_index = intVal(lfourth(cond));
    bool dict = st->ts->encoding[col] == ValueEncoding::Dictionary;
    *policy = static_cast<uint8>(NullPolicy::NotNull);
    if (kind == AQP_COND_IS_NULL || kind == AQP_COND_NOT_NULL) {
        if (kind == AQP_COND_IS_NULL) *policy = static_cast<uint8>(NullPolicy::IsNull);
        *out = iv_all();
        return true;
    }
    ExprState* es = static_cast<ExprState*>(list_nth(st->exprs, expr_index));
    ExprContext* econtext = st->css.ss.ps.ps_ExprContext;
    bool isnull;
    Datum d = ExecEvalExprSwitchContext(es, econtext, &isnull);
    Oid type = exprType(reinterpret_cast<Node*>(es->expr));
    if (isnull) {  // a comparison with NULL holds for no row
        *out = iv_make(0);
        return true;
    }
    if (kind == AQP_COND_CMP) {
        double v;
        if (!encode_value(st, col, d, type, &v)) return false;
        if (dict && v < 0 && strategy != AQP_STRATEGY_NE) {
            *out = iv_make(0);
            return true;
        }
        *out = iv_make(2);
        switch (strategy) {
            case BTLessStrategyNumber: iv_add(out, -INFINITY, below(v, dict)); break;
            case BTLessEqualStrategyNumber: iv_add(out, -INFINITY, v); break;
            case BTEqualStrategyNumber: iv_add(out, v, v); break;
            case BTGreaterEqualStrategyNumber: iv_add(out, v, INFINITY); break;
            case BTGreaterStrategyNumber: iv_add(out, above(v, dict), INFINITY); break;
            default: *out = iv_points(&v, 1, true, dict); break;
        }
        return true;
    }
    // IN / NOT IN: the array's elements.
    ArrayType* arr = DatumGetArrayTypeP(d);
    int16 typlen;
    bool typbyval;
    char typalign;
    get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
    Datum* elems;
    bool* enulls;
    int n;
    deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign, &elems, &enulls, &n);
    double* p = static_cast<double*>(palloc(sizeof(double) * (n > 0 ? n : 1)));
    int k = 0;
    for (int i = 0; i < n; ++i) {
        if (enulls[i]) {
            if (kind == AQP_COND_NOT_IN) {  // x <> ALL (.., NULL) is never true
                *out = iv_make(0);
                return true;
            }
            continue;
        }
        if (!encode_value(st, col, elems[i], ARR_ELEMTYPE(arr), &p[k])) return false;
        ++k;
    }
    *out = iv_points(p, k, kind == AQP_COND_NOT_IN, dict);
    return true;
}

// ---- groups and boxes -------------------------------------------------------------------

struct KeyCmpArg {
    const double* keys;  // rows x n
    int n;
};
static int cmp_key_values(double a, double b) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : na ? 1 : -1;  // NULLs last
    return a < b ? -1 : a > b ? 1 : 0;
}
static int cmp_rows(const void* x, const void* y, void* arg) {
    const KeyCmpArg* k = static_cast<const KeyCmpArg*>(arg);
    int64 a = *static_cast<const int64*>(x), b = *static_cast<const int64*>(y);
    for (int j = 0; j < k->n; ++j) {
        int c = cmp_key_values(k->keys[a * k->n + j], k->keys[b * k->n + j]);
        if (c != 0) return c;
    }
    return 0;
}

// Candidate groups: the strata (a stratified synopsis grouped by its stratify
// columns), else the distinct group keys among the sample rows.
static void find_groups(AqpScanState* st) {
    const syn::Synopsis& s = st->ts->model;
    int ng = st->n_group;
    if (ng == 0) {
        st->n_cand = 1;
        st->keys = nullptr;
        return;
    }
    if (st->strata_groups) {
        st->keys = static_cast<double*>(palloc(sizeof(double) * ng * (s.n_strata > 0 ? s.n_strata : 1)));
        st->n_cand = 0;
        for (int g = 0; g < s.n_strata; ++g) {
            if (s.strata[g].begin >= s.strata[g].end) continue;
            for (int j = 0; j < ng; ++j)
                st->keys[st->n_cand * ng + j] = s.sample[s.strata[g].begin * s.d + st->group_cols[j]];
            ++st->n_cand;
        }
        return;
    }
    double* all = static_cast<double*>(palloc_extended(sizeof(double) * ng * (s.m > 0 ? s.m : 1), MCXT_ALLOC_HUGE));
    int64* idx = static_cast<int64*>(palloc_extended(sizeof(int64) * (s.m > 0 ? s.m : 1), MCXT_ALLOC_HUGE));
    for (int64 i = 0; i < s.m; ++i) {
        idx[i] = i;
        for (int j = 0; j < ng; ++j) all[i * ng + j] = s.sample[i * s.d + st->group_cols[j]];
    }
    KeyCmpArg arg{all, ng};
    qsort_arg(idx, s.m, sizeof(int64), cmp_rows, &arg);
    st->keys = static_cast<double*>(palloc_extended(sizeof(double) * ng * (s.m > 0 ? s.m : 1), MCXT_ALLOC_HUGE));
    st->n_cand = 0;
    for (int64 i = 0; i < s.m; ++i) {
        if (i > 0 && cmp_rows(&idx[i - 1], &idx[i], &arg) == 0) continue;
        memcpy(st->keys + st->n_cand * ng, all + idx[i] * ng, sizeof(double) * ng);
        ++st->n_cand;
    }
}

// Evaluates the conditions and builds every box: per group, the product of
// the columns' interval sets (IN lists and <> on discrete columns are
// unions of disjoint boxes); a group column is fixed to the group's value.
static void build_boxes(AqpScanState* st, List* conds) {
    const TableSynopsis* ts = st->ts;
    int d = ts->d;
    Intervals* cols = static_cast<Intervals*>(palloc(sizeof(Intervals) * d));
    uint8* policy = static_cast<uint8*>(palloc0(sizeof(uint8) * d));
    bool* empty = static_cast<bool*>(palloc0(sizeof(bool) * d));
    for (int j = 0; j < d; ++j) cols[j] = iv_all();
    ListCell* lc;
    foreach (lc, conds) {
        List* cond = static_cast<List*>(lfirst(lc));
        int col = intVal(linitial(cond));
        Intervals set;
        uint8 pol;
        if (!condition_set(st, cond, &set, &pol)) return;
        if (policy[col] != static_cast<uint8>(NullPolicy::Any) && policy[col] != pol) empty[col] = true;
        policy[col] = pol;
        cols[col] = iv_intersect(cols[col], set);
        if (cols[col].n == 0) empty[col] = true;
    }
    find_groups(st);

    // Columns fixed per group (not in the strata case: a stratum holds its key).
    bool* fixed = static_cast<bool*>(palloc0(sizeof(bool) * d));
    if (!st->strata_groups)
        for (int g = 0; g < st->n_group; ++g) fixed[st->group_cols[g]] = true;
    int64 per_group = 1;
    for (int j = 0; j < d; ++j)
        if (!fixed[j] && !empty[j]) {
            per_group *= cols[j].n;
            if (per_group > kMaxBoxes) break;
        }
    if (per_group * st->n_cand > kMaxBoxes || per_group > kMaxBoxes) {
        fall_back(st, "too many boxes");
        return;
    }
    st->per_group = per_group;
    st->q = per_group * st->n_cand;
    int64 q = st->q > 0 ? st->q : 1;
    st->lo = static_cast<double*>(palloc_extended(sizeof(double) * q * d, MCXT_ALLOC_HUGE));
    st->hi = static_cast<double*>(palloc_extended(sizeof(double) * q * d, MCXT_ALLOC_HUGE));
    st->nulls = static_cast<uint8*>(palloc_extended(q * d, MCXT_ALLOC_HUGE));
    st->stratum = nullptr;
    if (st->strata_groups) st->stratum = static_cast<int32*>(palloc_extended(sizeof(int32) * q, MCXT_ALLOC_HUGE));

    const syn::Synopsis& s = ts->model;
    int stratum_index = -1;
    for (int64 g = 0; g < st->n_cand; ++g) {
        if (st->strata_groups) {  // the g-th non-empty stratum
            do ++stratum_index;
            while (s.strata[stratum_index].begin >= s.strata[stratum_index].end);
        }
        for (int64 k = 0; k < per_group; ++k) {
            int64 b = g * per_group + k;
            double* lo = st->lo + b * d;
            double* hi = st->hi + b * d;
            uint8* nul = st->nulls + b * d;
            if (st->stratum) st->stratum[b] = stratum_index;
            int64 rest = k;
            for (int j = 0; j < d; ++j) {
                nul[j] = policy[j];
                if (empty[j]) {  // no value satisfies the column's conditions
                    lo[j] = 1;
                    hi[j] = 0;
                    continue;
                }
                if (fixed[j]) continue;
                int which = static_cast<int>(rest % cols[j].n);
                rest /= cols[j].n;
                lo[j] = cols[j].lo[which];
                hi[j] = cols[j].hi[which];
                if (policy[j] == static_cast<uint8>(NullPolicy::IsNull)) {
                    lo[j] = -INFINITY;
                    hi[j] = INFINITY;
                }
            }
            for (int gi = 0; gi < st->n_group && !st->strata_groups; ++gi) {
                int j = st->group_cols[gi];
                if (empty[j]) continue;
                double v = st->keys[g * st->n_group + gi];
                bool inside = false;
                if (std::isnan(v)) {  // the NULL group
                    inside = policy[j] != static_cast<uint8>(NullPolicy::NotNull);
                    nul[j] = static_cast<uint8>(NullPolicy::IsNull);
                    lo[j] = -INFINITY;
                    hi[j] = INFINITY;
                } else {
                    for (int w = 0; w < cols[j].n; ++w) inside = inside || (cols[j].lo[w] <= v && v <= cols[j].hi[w]);
                    inside = inside && policy[j] != static_cast<uint8>(NullPolicy::IsNull);
                    nul[j] = static_cast<uint8>(NullPolicy::NotNull);
                    lo[j] = v;
                    hi[j] = v;
                }
                if (!inside) {
                    lo[j] = 1;
                    hi[j] = 0;
                }
            }
        }
    }
}

// ---- executor -------------------------------------------------------------------------

static void begin_aqp(CustomScanState* node, EState* estate, int eflags) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    CustomScan* cs = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
    node->custom_ps = list_make1(ExecInitNode(static_cast<Plan*>(linitial(cs->custom_plans)), estate, eflags));

    List* priv = cs->custom_private;
    st->relid = static_cast<Oid>(intVal(list_nth(priv, AQP_PRIV_RELID)));
    st->owner = static_cast<Oid>(intVal(list_nth(priv, AQP_PRIV_OWNER)));
    st->name = strVal(list_nth(priv, AQP_PRIV_NAME));
    st->built = DatumGetInt64(static_cast<Const*>(list_nth(priv, AQP_PRIV_BUILT))->constvalue);
    List* groups = static_cast<List*>(list_nth(priv, AQP_PRIV_GROUPS));
    st->n_group = list_length(groups);
    st->group_cols = static_cast<int*>(palloc(sizeof(int) * (st->n_group + 1)));
    for (int i = 0; i < st->n_group; ++i) st->group_cols[i] = intVal(list_nth(groups, i));
    List* aggs = static_cast<List*>(list_nth(priv, AQP_PRIV_AGGS));
    st->n_aggs = list_length(aggs) / 3;
    st->aggs = static_cast<AggSpec*>(palloc(sizeof(AggSpec) * (st->n_aggs + 1)));
    for (int i = 0; i < st->n_aggs; ++i)
        st->aggs[i] = {intVal(list_nth(aggs, 3 * i)), intVal(list_nth(aggs, 3 * i + 1)),
                       intVal(list_nth(aggs, 3 * i + 2))};
    st->strata_groups = intVal(list_nth(priv, AQP_PRIV_STRATA)) != 0;
    st->exprs = ExecInitExprList(cs->custom_exprs, &node->ss.ps);
    st->natts = list_length(cs->custom_scan_tlist);

    // Generic plans and cached plans: the synopsis may be gone, rebuilt or
    // stale since planning; the parameters are known only now.
    st->ts = table_synopsis_pin(st->relid, st->owner, st->name, st->built);
    if (st->ts == nullptr) {
        fall_back(st, psprintf("synopsis %s was dropped or rebuilt since planning", st->name));
        return;
    }
    const char* stale = table_synopsis_staleness(st->ts);
    if (stale != nullptr) {
        fall_back(st, psprintf("synopsis %s: %s", st->name, stale));
        return;
    }
    build_boxes(st, static_cast<List*>(list_nth(priv, AQP_PRIV_CONDS)));
}

// Sums of one group's boxes (disjoint, so estimates and variances add; the
// covariance of disjoint boxes' estimates is ignored, which widens the
// interval slightly).
static syn::BoxEstimate combine(const syn::BoxEstimate* e, int64 first, int64 n) {
    syn::BoxEstimate r;
    double var = 0;
    for (int64 b = first; b < first + n; ++b) {
        r.estimate += e[b].estimate;
        var += e[b].se * e[b].se;
        r.support += e[b].support;
    }
    r.se = std::sqrt(var);
    r.n_rows = e[first].n_rows;
    return r;
}

static Datum estimate_datum(AqpScanState* st, int att, double estimate, double lower, double upper, bool ci) {
    if (!ci) return Float8GetDatum(estimate);
    TupleDesc scan_desc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
    TupleDesc desc = lookup_rowtype_tupdesc_copy(TupleDescAttr(scan_desc, att)->atttypid, -1);
    desc = BlessTupleDesc(desc);
    Datum values[3] = {Float8GetDatum(estimate), Float8GetDatum(lower), Float8GetDatum(upper)};
    bool nulls[3] = {false, false, false};
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

// Runs the engine over every box and fills the result rows (or decides to
// fall back).
static void compute(AqpScanState* st) {
    const syn::Synopsis& s = st->ts->model;
    int64 q = st->q;
    int d = s.d;
    syn::BoxEstimate* counts = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
    syn::BoxEstimate* sums[syn::kMaxDim] = {};
    syn::BoxEstimate* avgs[syn::kMaxDim] = {};
    // AVG over several boxes per group: SUM over the boxes divided by the
    // COUNT of their rows with a non-NULL value in the column (avg skips NULLs).
    syn::BoxEstimate* value_counts[syn::kMaxDim] = {};
    uint8* value_nulls[syn::kMaxDim] = {};
    for (int a = 0; a < st->n_aggs; ++a) {
        int c = st->aggs[a].col;
        if (st->aggs[a].kind == AQP_COUNT) continue;
        if (sums[c] == nullptr) sums[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
        if (st->aggs[a].kind != AQP_AVG) continue;
        if (st->per_group == 1 && avgs[c] == nullptr)
            avgs[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
        if (st->per_group > 1 && value_counts[c] == nullptr) {
            value_counts[c] = static_cast<syn::BoxEstimate*>(palloc0(sizeof(syn::BoxEstimate) * (q + 1)));
            value_nulls[c] = static_cast<uint8*>(palloc_extended(q * d + 1, MCXT_ALLOC_HUGE));
            memcpy(value_nulls[c], st->nulls, q * d);
            for (int64 b = 0; b < q; ++b)
                if (value_nulls[c][b * d + c] == static_cast<uint8>(NullPolicy::Any))
                    value_nulls[c][b * d + c] = static_cast<uint8>(NullPolicy::NotNull);
        }
    }
    approx::Status status = run_engine("approx aggregate", 0, 0, [&](const approx::ExecContext& ctx) {
        syn::BoxBatch batch;
        batch.q = q;
        batch.lo = st->lo;
        batch.hi = st->hi;
        batch.nulls = st->nulls;
        batch.stratum = st->stratum;
        batch.agg = syn::Aggregate::Count;
        approx::Status r = q > 0 ? syn::evaluate(s, batch, ctx, counts) : approx::Status();
        for (int c = 0; c < d && r.ok() && q > 0; ++c) {
            batch.column = c;
            if (sums[c] != nullptr) {
                batch.agg = syn::Aggregate::Sum;
                r = syn::evaluate(s, batch, ctx, sums[c]);
            }
            if (r.ok() && avgs[c] != nullptr) {
                batch.agg = syn::Aggregate::Avg;
                r = syn::evaluate(s, batch, ctx, avgs[c]);
            }
            if (r.ok() && value_counts[c] != nullptr) {
                batch.agg = syn::Aggregate::Count;
                batch.nulls = value_nulls[c];
                r = syn::evaluate(s, batch, ctx, value_counts[c]);
                batch.nulls = st->nulls;
            }
        }
        return r;
    });
    check_engine_result(status, "approx aggregate");

    st->out_values = static_cast<Datum*>(palloc(sizeof(Datum) * st->natts * (st->n_cand + 1)));
    st->out_nulls = static_cast<bool*>(palloc(sizeof(bool) * st->natts * (st->n_cand + 1)));
    st->n_out = 0;
    double mre = aqp_max_relative_error;
    for (int64 g = 0; g < st->n_cand; ++g) {
        int64 first = g * st->per_group, n = st->per_group;
        syn::BoxEstimate cnt = q > 0 ? combine(counts, first, n) : syn::BoxEstimate();
        if (st->n_group > 0 && cnt.support == 0) continue;  // a group no sample row answers
        if (mre > 0 && cnt.support == 0) {
            fall_back(st, "the box holds no sample row");
            return;
        }
        Datum* values = st->out_values + st->n_out * st->natts;
        bool* nulls = st->out_nulls + st->n_out * st->natts;
        for (int gi = 0; gi < st->n_group; ++gi) {
            bool isnull;
            values[gi] = table_synopsis_datum(st->ts, st->group_cols[gi], st->keys[g * st->n_group + gi], &isnull);
            nulls[gi] = isnull;
        }
        for (int a = 0; a < st->n_aggs; ++a) {
            const AggSpec& spec = st->aggs[a];
            int att = st->n_group + a;
            syn::BoxEstimate e = cnt;
            syn::Aggregate agg = syn::Aggregate::Count;
            if (spec.kind == AQP_SUM) {
                e = combine(sums[spec.col], first, n);
                agg = syn::Aggregate::Sum;
            } else if (spec.kind == AQP_AVG) {
                agg = syn::Aggregate::Avg;
                if (avgs[spec.col] != nullptr) {
                    e = avgs[spec.col][first];
                } else {  // ratio of the summed boxes; se from the SUM's alone (an approximation)
                    syn::BoxEstimate sum = combine(sums[spec.col], first, n);
                    syn::BoxEstimate rows = combine(value_counts[spec.col], first, n);
                    e.estimate = rows.estimate > 0 ? sum.estimate / rows.estimate : NAN;
                    e.se = rows.estimate > 0 ? sum.se / rows.estimate : NAN;
                    e.support = rows.support;
                }
            }
            // No sample row: like sum / avg of no rows, NULL.
            if (spec.kind != AQP_COUNT && (cnt.support == 0 || std::isnan(e.estimate))) {
                values[att] = 0;
                nulls[att] = true;
                if (mre > 0) {
                    fall_back(st, "the box holds no sample row");
                    return;
                }
                continue;
            }
            double lower = e.estimate, upper = e.estimate;
            if (spec.ci || mre > 0) syn::interval(s, agg, e, aqp_confidence, lower, upper);
            if (mre > 0 && !((upper - lower) / 2 <= mre * std::fabs(e.estimate))) {
                fall_back(st, "an interval is wider than approx_gpu.max_relative_error allows");
                return;
            }
            values[att] = estimate_datum(st, att, e.estimate, lower, upper, spec.ci != 0);
            nulls[att] = false;
        }
        ++st->n_out;
    }
    last_run_set_answer("synopsis", nullptr, st->name);
    last_run_stats().add("boxes", static_cast<double>(q));
    last_run_stats().add("groups", static_cast<double>(st->n_out));
    last_run_stats().add("sample_rows", static_cast<double>(s.m));
}

static TupleTableSlot* next_row(ScanState* ss) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(ss);
    TupleTableSlot* slot = ss->ss_ScanTupleSlot;
    ExecClearTuple(slot);
    if (st->next >= st->n_out) return slot;
    int64 r = st->next++;
    memcpy(slot->tts_values, st->out_values + r * st->natts, sizeof(Datum) * st->natts);
    memcpy(slot->tts_isnull, st->out_nulls + r * st->natts, sizeof(bool) * st->natts);
    return ExecStoreVirtualTuple(slot);
}

static bool recheck_row(ScanState*, TupleTableSlot*) { return true; }

static TupleTableSlot* exec_aqp(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    if (!st->computed && st->fallback == nullptr) {
        MemoryContext old = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
        compute(st);
        MemoryContextSwitchTo(old);
        st->computed = true;
    }
    if (st->fallback != nullptr) {
        if (!st->recorded) last_run_rows("approx aggregate", st->fallback);
        st->recorded = true;
        return ExecProcNode(static_cast<PlanState*>(linitial(node->custom_ps)));
    }
    return ExecScan(&node->ss, next_row, recheck_row);
}

static void end_aqp(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    ExecEndNode(static_cast<PlanState*>(linitial(node->custom_ps)));
    if (st->ts != nullptr) table_synopsis_unpin(st->ts);
    st->ts = nullptr;
}

static void rescan_aqp(CustomScanState* node) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    st->next = 0;
    PlanState* child = static_cast<PlanState*>(linitial(node->custom_ps));
    if (child->chgParam == nullptr) ExecReScan(child);
}

static void explain_aqp(CustomScanState* node, List* ancestors, ExplainState* es) {
    AqpScanState* st = reinterpret_cast<AqpScanState*>(node);
    ExplainPropertyText("Synopsis", st->name, es);
    if (st->ts != nullptr) {
        ExplainPropertyInteger("Sample Rows", nullptr, st->ts->model.m, es);
        if (st->fallback == nullptr || st->q > 0) ExplainPropertyInteger("Boxes", nullptr, st->q, es);
    }
    if (es->analyze) ExplainPropertyText("Answered From", st->fallback != nullptr ? "rows" : "synopsis", es);
    if (st->fallback != nullptr) ExplainPropertyText("Fallback", st->fallback, es);
}

static const CustomExecMethods aqp_exec_methods = {
    kNodeName, begin_aqp, exec_aqp, end_aqp, rescan_aqp, nullptr, nullptr, nullptr,
    nullptr,   nullptr,   nullptr,  nullptr, explain_aqp,
};

static Node* create_aqp_state(CustomScan* cs) {
    AqpScanState* st = static_cast<AqpScanState*>(palloc0(sizeof(AqpScanState)));
    NodeSetTag(st, T_CustomScanState);
    st->css.methods = &aqp_exec_methods;
    return reinterpret_cast<Node*>(st);
}

const CustomScanMethods aqp_scan_methods = {kNodeName, create_aqp_state};

void aqp_scan_register(void) { RegisterCustomScanMethods(&aqp_scan_methods); }
