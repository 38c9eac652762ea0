// The spread pass of the sample path's measures (sample/measure.cpp: what
// qualifies, the planner's copy over the sample relation): at execution the
// final side evaluates each copy on every sample row, whatever the query's
// WHERE (aqp_sample_measure_spreads), for the moments per stratum that the
// SUM / AVG intervals borrow (core/sample_estimate.hpp, Options::spread),
// kept per backend and sample relation. That pass sees rows the query never
// evaluates, so it must not raise what the query would not: it runs none of
// the expression's functions but their arithmetic in double precision (an
// overflow becomes an infinity, a division by zero a non-finite value: the
// row is left out). Also the memory a statement's pass may hold
// (approx_gpu.sample_max_state) and the spreads a backend keeps
// (approx_gpu.sample_spread_cache_size).
#include "aqp/sample/internal.h"

#include "core/sample_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

extern "C" {
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

#include "synopsis/synopsis_codec.h"

int aqp_sample_max_state_kb = 65536;
int aqp_sample_spread_cache_kb = 16384;

// ---- the pass over the sample ---------------------------------------------------------

namespace {

// The measure compiled to a stack program once per pass (no catalog
// lookups per row).
enum class Step : uint8 { Column, Number, Add, Sub, Mul, Div, Neg, Round, Truncate };
struct Instr {
    Step step;
    AttrNumber column;  // Column
    Oid type;           // Column: the base type
    double number;      // Number
};

struct Program {
    Instr* code;
    int n, capacity;
    void emit(Instr i) {
        if (n == capacity) {
            capacity = capacity > 0 ? 2 * capacity : 8;
            code = static_cast<Instr*>(code ? repalloc(code, sizeof(Instr) * capacity) : palloc(sizeof(Instr) * capacity));
        }
        code[n++] = i;
    }
};

// False when the node is not one aqp_sample_measure_copy writes, or names
// no numeric column of the sample (before the stratum, its last column).
bool compile(const Node* e, TupleDesc desc, Program* p) {
    switch (nodeTag(e)) {
        case T_Var: {
            const Var* v = reinterpret_cast<const Var*>(e);
            if (v->varattno < 1 || v->varattno >= desc->natts) return false;
            Form_pg_attribute att = TupleDescAttr(desc, v->varattno - 1);
            const Oid type = getBaseType(att->atttypid);
            if (att->attisdropped || !synopsis_glue::is_measure_type(type)) return false;
            p->emit({Step::Column, v->varattno, type, 0});
            return true;
        }
        case T_Const: {
            const Const* c = reinterpret_cast<const Const*>(e);
            double x;
            if (c->constisnull || !synopsis_glue::is_measure_type(getBaseType(c->consttype)) ||
                !synopsis_glue::measure_number(c->constvalue, getBaseType(c->consttype), &x))
                return false;
            p->emit({Step::Number, 0, InvalidOid, x});
            return true;
        }
        case T_RelabelType: return compile(reinterpret_cast<const Node*>(reinterpret_cast<const RelabelType*>(e)->arg), desc, p);
        case T_FuncExpr: {
            const FuncExpr* f = reinterpret_cast<const FuncExpr*>(e);
            if (!aqp_sample_measure_cast(f) || !compile(static_cast<const Node*>(linitial(f->args)), desc, p))
                return false;
            if (aqp_sample_integer_type(f->funcresulttype) &&
                !aqp_sample_integer_type(exprType(static_cast<Node*>(linitial(f->args)))))
                p->emit({Step::Round, 0, InvalidOid, 0});
            return true;
        }
        case T_OpExpr: {
            const OpExpr* op = reinterpret_cast<const OpExpr*>(e);
            const char s = aqp_sample_measure_operator(op);
            if (s == '\0') return false;
            ListCell* lc;
            foreach (lc, op->args)
                if (!compile(static_cast<const Node*>(lfirst(lc)), desc, p)) return false;
            if (list_length(op->args) == 1) {
                if (s == '-') p->emit({Step::Neg, 0, InvalidOid, 0});
                return true;
            }
            p->emit({s == '+' ? Step::Add : s == '-' ? Step::Sub : s == '*' ? Step::Mul : Step::Div, 0, InvalidOid, 0});
            // integer division truncates
            if (s == '/' && aqp_sample_integer_type(op->opresulttype)) p->emit({Step::Truncate, 0, InvalidOid, 0});
            return true;
        }
        default:
            return false;
    }
}

// The measure's value on one row; false: NULL or not finite (left out, as
// the column's own pass leaves out NaN and infinities).
bool evaluate(const Program& p, TupleTableSlot* slot, double* stack, double* out) {
    int top = 0;
    for (int i = 0; i < p.n; ++i) {
        const Instr& in = p.code[i];
        switch (in.step) {
            case Step::Column: {
                const int k = in.column - 1;
                if (slot->tts_isnull[k] || !synopsis_glue::measure_number(slot->tts_values[k], in.type, &stack[top]))
                    return false;
                ++top;
                break;
            }
            case Step::Number: stack[top++] = in.number; break;
            case Step::Neg: stack[top - 1] = -stack[top - 1]; break;
            case Step::Round: stack[top - 1] = std::nearbyint(stack[top - 1]); break;
            case Step::Truncate: stack[top - 1] = std::trunc(stack[top - 1]); break;
            default: {
                const double b = stack[--top], a = stack[top - 1];
                // a / 0 is +-inf or NaN: left out by the check below
                stack[top - 1] = in.step == Step::Add ? a + b : in.step == Step::Sub ? a - b : in.step == Step::Mul ? a * b : a / b;
            }
        }
        if (!std::isfinite(stack[top - 1])) return false;
    }
    *out = stack[0];
    return true;
}

// ---- the spreads each backend keeps ------------------------------------------------------

// A sample relation is written once, at its build (a rebuild makes a new
// relation), so a measure's spread over it stays true while it exists: the
// spreads are kept per backend, and a relcache invalidation of the relation
// (its drop among them) forgets its entries. Whatever writes a sample
// relation in place later (maintenance) must forget them too. At most
// kCachedSpreads entries and approx_gpu.sample_spread_cache_size bytes
// (the least recently used go first; an entry larger than the whole
// budget is never kept).
struct CachedSpread {
    Oid sample_relid;
    int n_strata;
    Node* measure;                          // a copy, in cxt
    approx::sample::StratumSpread* spread;  // n_strata entries, in cxt
    uint64 used;
    Size bytes;                             // what cxt holds
    MemoryContext cxt;                      // nullptr: an empty slot
};
constexpr int kCachedSpreads = 64;
CachedSpread cached[kCachedSpreads];
uint64 cache_clock = 0;
Size cached_bytes = 0;

void forget(CachedSpread& c) {
    if (c.cxt != nullptr) {
        MemoryContextDelete(c.cxt);
        cached_bytes -= c.bytes;
    }
    c = CachedSpread();
}

void forget_relation(Datum, Oid relid) {
    for (CachedSpread& c : cached)
        if (c.cxt != nullptr && (relid == InvalidOid || c.sample_relid == relid)) forget(c);
}

Size cache_budget() { return static_cast<Size>(aqp_sample_spread_cache_kb) * 1024; }

// Evicts the least recently used entries (but `keep`) until the kept bytes
// fit the budget (a lowered setting takes effect here).
void trim_cache(const CachedSpread* keep) {
    while (cached_bytes > cache_budget()) {
        CachedSpread* lru = nullptr;
        for (CachedSpread& c : cached)
            if (c.cxt != nullptr && &c != keep && (lru == nullptr || c.used < lru->used)) lru = &c;
        if (lru == nullptr) break;
        forget(*lru);
    }
}

const CachedSpread* find_cached(Oid sample_relid, int n_strata, const Node* measure) {
    for (CachedSpread& c : cached)
        if (c.cxt != nullptr && c.sample_relid == sample_relid && c.n_strata == n_strata && equal(c.measure, measure)) {
            c.used = ++cache_clock;
            return &c;
        }
    return nullptr;
}

void remember(Oid sample_relid, int n_strata, const Node* measure, const approx::sample::StratumSpread* spread) {
    static bool registered = false;
    if (!registered) {
        CacheRegisterRelcacheCallback(forget_relation, 0);
        registered = true;
    }
    const Size spread_bytes = sizeof(approx::sample::StratumSpread) * static_cast<Size>(n_strata);
    if (spread_bytes >= cache_budget()) return;  // never kept (nor anything evicted for it)
    CachedSpread* slot = &cached[0];
    for (CachedSpread& c : cached) {
        if (c.cxt == nullptr) {
            slot = &c;
            break;
        }
        if (c.used < slot->used) slot = &c;
    }
    forget(*slot);
    MemoryContext cxt = AllocSetContextCreate(CacheMemoryContext, "approx_gpu sample spread", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(cxt);
    Node* copy = static_cast<Node*>(copyObjectImpl(measure));
    auto* kept = static_cast<approx::sample::StratumSpread*>(palloc(spread_bytes));
    memcpy(kept, spread, spread_bytes);
    MemoryContextSwitchTo(old);
    const Size bytes = MemoryContextMemAllocated(cxt, true);
    *slot = {sample_relid, n_strata, copy, kept, ++cache_clock, bytes, cxt};
    cached_bytes += bytes;
    trim_cache(slot);
    if (cached_bytes > cache_budget()) forget(*slot);  // alone larger than the budget
}

}  // namespace

// What one statement's spread pass holds (aqp_sample_measure_spreads): per
// stratum and measure the pass's moments and sum of |y|, the results the
// design keeps for the statement and the kept copies it reuses.
double aqp_sample_state_bytes(int n_strata, int n_measures) {
    const double n = n_strata > 0 ? n_strata : 1;
    return n * (n_measures + 1) * static_cast<double>(sizeof(approx::sample::Moments) + sizeof(double)) +
           n * n_measures * 2.0 * static_cast<double>(sizeof(approx::sample::StratumSpread));
}

const char* aqp_sample_state_problem(int n_strata, int n_measures) {
    if (n_measures == 0) return nullptr;
    const double kb = std::ceil(aqp_sample_state_bytes(n_strata, n_measures) / 1024);
    if (kb <= aqp_sample_max_state_kb) return nullptr;
    const int n = n_strata > 0 ? n_strata : 1;
    return psprintf("the spreads of %d measure%s over %d strat%s would need %.0f kB (approx_gpu.sample_max_state is %d "
                    "kB)",
                    n_measures, n_measures == 1 ? "" : "s", n, n == 1 ? "um" : "a", kb, aqp_sample_max_state_kb);
}

approx::sample::StratumSpread** aqp_sample_measure_spreads(Oid sample_relid, int n_strata, List* measures,
                                                          MemoryContext result_cxt) {
    // The callers check aqp_sample_state_problem first; whatever gets here
    // past what one allocation may hold is a clean 54000, never XX000.
    if (aqp_sample_state_bytes(n_strata, list_length(measures)) > static_cast<double>(MaxAllocSize))
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("aqp_sample_measure_spreads: the spreads of %d measures over %d strata exceed what one "
                               "allocation may hold",
                               list_length(measures), n_strata)));
    const int n_measures = list_length(measures);
    const int n = n_strata > 0 ? n_strata : 1;
    trim_cache(nullptr);  // a lowered approx_gpu.sample_spread_cache_size takes effect here
    // the measures this backend has read over this sample already, copied
    // now: opening the sample accepts invalidations, and remember() below
    // evicts, either of which may free a kept entry
    approx::sample::StratumSpread** kept = static_cast<approx::sample::StratumSpread**>(
        palloc0(sizeof(approx::sample::StratumSpread*) * static_cast<Size>(n_measures + 1)));
    bool all_kept = true;
    for (int j = 0; j < n_measures; ++j) {
        const Node* e = static_cast<const Node*>(list_nth(measures, j));
        const CachedSpread* hit = e != nullptr ? find_cached(sample_relid, n, e) : nullptr;
        if (hit != nullptr) {
            kept[j] = static_cast<approx::sample::StratumSpread*>(
                palloc(sizeof(approx::sample::StratumSpread) * static_cast<Size>(n)));
            memcpy(kept[j], hit->spread, sizeof(approx::sample::StratumSpread) * static_cast<Size>(n));
        }
        all_kept &= kept[j] != nullptr;
    }
    // the sample is opened only for measures not kept (the plan holds its lock already)
    Relation rel = all_kept ? nullptr : table_open(sample_relid, AccessShareLock);
    TupleDesc desc = rel != nullptr ? RelationGetDescr(rel) : nullptr;
    const AttrNumber stratum_att = desc != nullptr ? static_cast<AttrNumber>(desc->natts) : 0;  // approx_stratum is last
    // per measure: its program (n == 0: none), moments and sum of |y| per stratum
    Program* programs = static_cast<Program*>(palloc0(sizeof(Program) * static_cast<Size>(n_measures + 1)));
    approx::sample::Moments* m = static_cast<approx::sample::Moments*>(
        palloc(sizeof(approx::sample::Moments) * static_cast<Size>(n) * static_cast<Size>(n_measures + 1)));
    double* abs_sum = static_cast<double*>(palloc0(sizeof(double) * static_cast<Size>(n) * static_cast<Size>(n_measures + 1)));
    int longest = 1;
    bool any = false;
    for (int j = 0; j < n_measures; ++j) {
        const Node* e = static_cast<const Node*>(list_nth(measures, j));
        if (e == nullptr || kept[j] != nullptr || !compile(e, desc, &programs[j])) programs[j].n = 0;
        longest = std::max(longest, programs[j].n);
        any |= programs[j].n > 0;
        for (int s = 0; s < n; ++s) m[j * n + s] = approx::sample::Moments();
    }
    double* stack = static_cast<double*>(palloc(sizeof(double) * static_cast<Size>(longest)));
    if (any) {
        TableScanDesc scan = table_beginscan(rel, GetActiveSnapshot(), 0, nullptr);
        TupleTableSlot* slot = table_slot_create(rel, nullptr);
        while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
            CHECK_FOR_INTERRUPTS();
            slot_getallattrs(slot);
            if (slot->tts_isnull[stratum_att - 1]) continue;
            const int32 s = DatumGetInt32(slot->tts_values[stratum_att - 1]) - 1;
            if (s < 0 || s >= n_strata) continue;
            for (int j = 0; j < n_measures; ++j) {
                double v;
                if (programs[j].n == 0 || !evaluate(programs[j], slot, stack, &v)) continue;
                approx::sample::add(m[j * n + s], v);
                abs_sum[j * n + s] += std::fabs(v);
            }
        }
        ExecDropSingleTupleTableSlot(slot);
        table_endscan(scan);
    }
    if (rel != nullptr) table_close(rel, NoLock);
    // the results last in result_cxt: allocated once nothing can fail
    approx::sample::StratumSpread** out = static_cast<approx::sample::StratumSpread**>(
        MemoryContextAllocZero(result_cxt, sizeof(approx::sample::StratumSpread*) * static_cast<Size>(n_measures + 1)));
    for (int j = 0; j < n_measures; ++j) {
        if (kept[j] != nullptr) {
            out[j] = static_cast<approx::sample::StratumSpread*>(
                MemoryContextAlloc(result_cxt, sizeof(approx::sample::StratumSpread) * static_cast<Size>(n)));
            memcpy(out[j], kept[j], sizeof(approx::sample::StratumSpread) * static_cast<Size>(n));
            pfree(kept[j]);
        }
        if (programs[j].n == 0) continue;
        out[j] = static_cast<approx::sample::StratumSpread*>(
            MemoryContextAlloc(result_cxt, sizeof(approx::sample::StratumSpread) * static_cast<Size>(n)));
        for (int s = 0; s < n; ++s) out[j][s] = approx::sample::stratum_spread(m[j * n + s], abs_sum[j * n + s]);
        pfree(programs[j].code);
        remember(sample_relid, n, static_cast<const Node*>(list_nth(measures, j)), out[j]);
    }
    pfree(programs);
    pfree(kept);
    pfree(m);
    pfree(abs_sum);
    pfree(stack);
    return out;
}
