// The conditions and groups of an "Approx Synopsis Scan" as boxes over the
// synopsis' encoded columns: values encoded as the synopsis stores them
// (numbers, dates, dictionary codes; synopsis/synopsis_codec.h), each
// column's condition as a set of intervals, the candidate groups from the
// sample, one box per group and interval combination (box/scan_state.h).
#include "aqp/box/scan_state.h"

#include <cmath>

namespace syn = approx::synopsis;
using syn::NullPolicy;

// ---- values ---------------------------------------------------------------------------

// A comparison value in the column's encoding (table_synopsis_encode); false
// (and a fallback) when it has none. Dictionary columns give the code, -1 for
// a value no sample row holds.
// Also false where the float8 comparison would not decide as SQL does
// (table_synopsis_inexact_value: int8 beyond 2^53, long numerics, equality
// on numeric columns).
static bool encode_value(AqpScanState* st, int col, Datum d, Oid type, bool equality, double* out) {
    const char* why = table_synopsis_encode(st->ts, col, d, type, out);
    if (why == nullptr) why = table_synopsis_inexact_value(st->ts, col, d, type, *out, equality);
    if (why != nullptr) fall_back(st, why);
    return why == nullptr;
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
static bool condition_set(AqpScanState* st, const AqpBoxCondition& cond, Intervals* out, uint8* policy) {
    int col = cond.col, kind = cond.kind, strategy = cond.strategy;
    bool dict = st->ts->encoding[col] == ValueEncoding::Dictionary;
    *policy = static_cast<uint8>(NullPolicy::NotNull);
    if (kind == AQP_COND_IS_NULL || kind == AQP_COND_NOT_NULL) {
        if (kind == AQP_COND_IS_NULL) *policy = static_cast<uint8>(NullPolicy::IsNull);
        *out = iv_all();
        return true;
    }
    ExprState* es = static_cast<ExprState*>(list_nth(st->values, cond.value));
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
        bool equality = strategy == BTEqualStrategyNumber || strategy == AQP_STRATEGY_NE;
        if (!encode_value(st, col, d, type, equality, &v)) return false;
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
        if (!encode_value(st, col, elems[i], ARR_ELEMTYPE(arr), true, &p[k])) return false;
        ++k;
    }
    if (n == 0) {  // x = ANY ('{}') is false, x <> ALL ('{}') true, for every row, NULLs included
        *out = kind == AQP_COND_NOT_IN ? iv_all() : iv_make(0);
        if (kind == AQP_COND_NOT_IN) *policy = static_cast<uint8>(NullPolicy::Any);
        return true;
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
    const AqpBoxSpec& box = st->spec->boxes;
    int ng = box.n_groups;
    if (ng == 0) {
        st->groups_are_strata = false;
        st->n_cand = 1;
        st->keys = nullptr;
        return;
    }
    st->groups_are_strata = box.groups_are_strata;
    // A stratum whose sample rows differ in a group key (the census stratum
    // of a synopsis stratified on them) is not one group.
    for (int g = 0; g < s.n_strata && st->groups_are_strata; ++g)
        for (int64 i = s.strata[g].begin + 1; i < s.strata[g].end && st->groups_are_strata; ++i)
            for (int j = 0; j < ng; ++j) {
                const double a = s.sample[s.strata[g].begin * s.d + box.group_cols[j]],
                             b = s.sample[i * s.d + box.group_cols[j]];
                if (!(a == b || (std::isnan(a) && std::isnan(b)))) st->groups_are_strata = false;
            }
    if (st->groups_are_strata) {
        st->keys = static_cast<double*>(palloc(sizeof(double) * ng * (s.n_strata > 0 ? s.n_strata : 1)));
        st->n_cand = 0;
        for (int g = 0; g < s.n_strata; ++g) {
            if (s.strata[g].begin >= s.strata[g].end) continue;
            for (int j = 0; j < ng; ++j)
                st->keys[st->n_cand * ng + j] = s.sample[s.strata[g].begin * s.d + box.group_cols[j]];
            ++st->n_cand;
        }
        return;
    }
    double* all = static_cast<double*>(palloc_extended(sizeof(double) * ng * (s.m > 0 ? s.m : 1), MCXT_ALLOC_HUGE));
    int64* idx = static_cast<int64*>(palloc_extended(sizeof(int64) * (s.m > 0 ? s.m : 1), MCXT_ALLOC_HUGE));
    for (int64 i = 0; i < s.m; ++i) {
        idx[i] = i;
        for (int j = 0; j < ng; ++j) all[i * ng + j] = s.sample[i * s.d + box.group_cols[j]];
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
void build_boxes(AqpScanState* st) {
    const TableSynopsis* ts = st->ts;
    const AqpBoxSpec& box = st->spec->boxes;
    int d = ts->d;
    Intervals* cols = static_cast<Intervals*>(palloc(sizeof(Intervals) * d));
    uint8* policy = static_cast<uint8*>(palloc0(sizeof(uint8) * d));
    bool* empty = static_cast<bool*>(palloc0(sizeof(bool) * d));
    for (int j = 0; j < d; ++j) cols[j] = iv_all();
    for (int c = 0; c < box.n_conds; ++c) {
        int col = box.conds[c].col;
        Intervals set;
        uint8 pol;
        if (!condition_set(st, box.conds[c], &set, &pol)) return;
        // Any (no condition on NULLs) is the identity; NotNull and IsNull exclude each other.
        if (pol != static_cast<uint8>(NullPolicy::Any)) {
            if (policy[col] != static_cast<uint8>(NullPolicy::Any) && policy[col] != pol) empty[col] = true;
            policy[col] = pol;
        }
        cols[col] = iv_intersect(cols[col], set);
        if (cols[col].n == 0) empty[col] = true;
    }
    find_groups(st);
    for (int64 g = 0; g < st->n_cand; ++g)
        for (int j = 0; j < box.n_groups; ++j) {
            const char* why = table_synopsis_inexact_key(ts, box.group_cols[j], st->keys[g * box.n_groups + j]);
            if (why != nullptr) {
                fall_back(st, why);
                return;
            }
        }

    // Columns fixed per group (not in the strata case: a stratum holds its key).
    bool* fixed = static_cast<bool*>(palloc0(sizeof(bool) * d));
    if (!st->groups_are_strata)
        for (int g = 0; g < box.n_groups; ++g) fixed[box.group_cols[g]] = true;
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
    // Bounds, NULL policies and stratum per box, and the engine's sums.
    const double box_bytes = 17.0 * d + 4 + 64;
    if (static_cast<double>(per_group * st->n_cand) * box_bytes > 1024.0 * aqp_box_memory_limit_kb) {
        fall_back(st, psprintf("the boxes (%lld) would need %.0f MB, more than approx_gpu.box_memory_limit",
                               static_cast<long long>(per_group * st->n_cand),
                               static_cast<double>(per_group * st->n_cand) * box_bytes / (1024.0 * 1024.0)));
        return;
    }
    st->per_group = per_group;
    st->q = per_group * st->n_cand;
    int64 q = st->q > 0 ? st->q : 1;
    st->lo = static_cast<double*>(palloc_extended(sizeof(double) * q * d, MCXT_ALLOC_HUGE));
    st->hi = static_cast<double*>(palloc_extended(sizeof(double) * q * d, MCXT_ALLOC_HUGE));
    st->nulls = static_cast<uint8*>(palloc_extended(q * d, MCXT_ALLOC_HUGE));
    st->stratum = nullptr;
    if (st->groups_are_strata) st->stratum = static_cast<int32*>(palloc_extended(sizeof(int32) * q, MCXT_ALLOC_HUGE));

    const syn::Synopsis& s = ts->model;
    int stratum_index = -1;
    for (int64 g = 0; g < st->n_cand; ++g) {
        if (st->groups_are_strata) {  // the g-th non-empty stratum
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
            for (int gi = 0; gi < box.n_groups && !st->groups_are_strata; ++gi) {
                int j = box.group_cols[gi];
                if (empty[j]) continue;
                double v = st->keys[g * box.n_groups + gi];
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
            // A stratum holds one value of its keys: when the conditions
            // exclude it, the box is empty for certain (exact 0, not a
            // sampled stratum that merely shows no row).
            for (int gi = 0; gi < box.n_groups && st->groups_are_strata; ++gi) {
                int j = box.group_cols[gi];
                double v = st->keys[g * box.n_groups + gi];
                bool inside = std::isnan(v) ? nul[j] != static_cast<uint8>(NullPolicy::NotNull)
                                            : nul[j] != static_cast<uint8>(NullPolicy::IsNull) && lo[j] <= v && v <= hi[j];
                if (!inside) {
                    lo[j] = 1;
                    hi[j] = 0;
                }
            }
        }
    }
}
