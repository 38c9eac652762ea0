// The sample path's design stack, its guard and the OIDs of the weighted
// aggregates (sample/internal.h, "the sample path's weighted aggregates"). The stack
// lives in TopMemoryContext: the sample plan's node pushes its design
// around the nested execution and pops it after; an error between the two
// leaves entries behind, which the (sub)transaction's abort removes
// (RegisterXactCallback / RegisterSubXactCallback, access/xact.h).
#include "aqp/sample/internal.h"

#include "core/sample_estimate.hpp"

#include <cmath>

extern "C" {
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "nodes/bitmapset.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

// ---- the design stack ---------------------------------------------------------------

struct DesignEntry {
    AqpSampleDesign design;  // arrays owned by the entry (TopMemoryContext)
    int nest_level;          // GetCurrentTransactionNestLevel() at the push
    // Per measure its spread per stratum (nullptr: none), read in one pass
    // over the sample at the first final function that asks.
    approx::sample::StratumSpread** spreads;  // TopMemoryContext, freed with the entry
    int n_spreads;
};
static DesignEntry* designs = nullptr;
static int n_designs = 0, designs_capacity = 0;

static char guard_reason[256];
static bool guard_tripped = false;

static void drop_top(void) {
    DesignEntry& e = designs[--n_designs];
    pfree(const_cast<double*>(e.design.rows));
    pfree(const_cast<double*>(e.design.sampled));
    if (e.spreads != nullptr) {
        for (int j = 0; j < e.n_spreads; ++j)
            if (e.spreads[j] != nullptr) pfree(e.spreads[j]);
        pfree(e.spreads);
    }
}

static void forget_designs(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PARALLEL_ABORT:
        case XACT_EVENT_PREPARE:
            while (n_designs > 0) drop_top();
            guard_tripped = false;
            break;
        default:
            break;
    }
}

// A subtransaction's abort (an exception block around a sample plan) drops
// what it pushed.
static void forget_sub_designs(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event != SUBXACT_EVENT_ABORT_SUB) return;
    const int level = GetCurrentTransactionNestLevel();
    while (n_designs > 0 && designs[n_designs - 1].nest_level >= level) drop_top();
}

void aqp_sample_design_push(const AqpSampleDesign* design) {
    static bool registered = false;
    if (!registered) {
        RegisterXactCallback(forget_designs, nullptr);
        RegisterSubXactCallback(forget_sub_designs, nullptr);
        registered = true;
    }
    if (design == nullptr || design->n_strata < 0 ||
        (design->n_strata > 0 && (design->rows == nullptr || design->sampled == nullptr)))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("sample plan: malformed sample design")));
    for (int s = 0; s < design->n_strata; ++s)
        if (!(design->rows[s] >= 0) || !(design->sampled[s] >= 0) || !std::isfinite(design->rows[s]) ||
            !std::isfinite(design->sampled[s]))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("sample plan: stratum %d of the sample design has bad counts", s + 1)));
    if (n_designs == designs_capacity) {
        int cap = designs_capacity > 0 ? designs_capacity * 2 : 4;
        Size bytes = sizeof(DesignEntry) * static_cast<Size>(cap);
        designs = static_cast<DesignEntry*>(designs ? repalloc(designs, bytes)
                                                    : MemoryContextAlloc(TopMemoryContext, bytes));
        designs_capacity = cap;
    }
    Size bytes = sizeof(double) * static_cast<Size>(design->n_strata > 0 ? design->n_strata : 1);
    double* rows = static_cast<double*>(MemoryContextAlloc(TopMemoryContext, bytes));
    double* sampled = static_cast<double*>(MemoryContextAlloc(TopMemoryContext, bytes));
    for (int s = 0; s < design->n_strata; ++s) {
        rows[s] = design->rows[s];
        sampled[s] = design->sampled[s];
    }
    DesignEntry& e = designs[n_designs++];
    e.design = {design->sample_relid, design->n_strata, rows, sampled, design->groups_within_strata, design->measures};
    e.nest_level = GetCurrentTransactionNestLevel();
    e.spreads = nullptr;
    e.n_spreads = 0;
}

void aqp_sample_design_pop(void) {
    if (n_designs > 0) drop_top();
}

const AqpSampleDesign* aqp_sample_design_find(Oid sample_relid) {
    for (int i = n_designs - 1; i >= 0; --i)
        if (designs[i].design.sample_relid == sample_relid) return &designs[i].design;
    return nullptr;
}

int aqp_sample_design_strata(Oid sample_relid) {
    const AqpSampleDesign* d = aqp_sample_design_find(sample_relid);
    return d != nullptr ? d->n_strata : -1;
}

const approx::sample::StratumSpread* aqp_sample_design_spread(Oid sample_relid, int measure, const char* fn) {
    if (measure == 0) return nullptr;
    for (int i = n_designs - 1; i >= 0; --i) {
        DesignEntry& e = designs[i];
        if (e.design.sample_relid != sample_relid) continue;
        if (measure < 0 || measure > list_length(e.design.measures))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: argument measure %d is not a measure of the sample plan", fn, measure)));
        if (e.spreads == nullptr) {
            // Past approx_gpu.sample_max_state (a plan made under a larger
            // setting): no spreads, and the exact plan answers.
            const int n_measures = list_length(e.design.measures);
            const char* too_big = aqp_sample_state_problem(e.design.n_strata, n_measures);
            if (too_big != nullptr) {
                aqp_sample_guard_trip(too_big);
                e.spreads = static_cast<approx::sample::StratumSpread**>(MemoryContextAllocZero(
                    TopMemoryContext, sizeof(approx::sample::StratumSpread*) * static_cast<Size>(n_measures + 1)));
            } else {
                e.spreads = aqp_sample_measure_spreads(sample_relid, e.design.n_strata, e.design.measures,
                                                       TopMemoryContext);
            }
            e.n_spreads = n_measures;
        }
        return e.spreads[measure - 1];
    }
    return nullptr;
}

// How many sample rows the groups' answers rest on (sample/scan.cpp's
// missing-groups rule), each group counted once. The final functions of one
// group run one after another in aggregate order (nodeAgg.c,
// finalize_aggregates), so a call from the same Agg with a higher aggno is
// the same group as the call before; the group's count is the most rows any
// of its aggregates saw (a FILTER keeps rows from an aggregate, not from the
// group). Calls from a plain (ungrouped) Agg are executions of the
// aggregated level: a correlated subquery has one per outer row.
struct OpenGroup {
    const void* agg;  // the AggState (nullptr: not called as an aggregate)
    int aggno;
    double rows;
    bool plain;
    bool open;
};
static OpenGroup open_group;
static int64 groups_seen = 0, groups_once = 0, groups_twice = 0, executions = 0, empty_executions = 0;
static Bitmapset* strata_seen = nullptr;  // TopMemoryContext: 0-based strata some final function saw rows of

static void close_group(void) {
    if (!open_group.open) return;
    open_group.open = false;
    const double rows = open_group.rows;
    if (open_group.plain) {
        ++executions;
        empty_executions += !(rows > 0);
    }
    if (!(rows > 0)) return;
    ++groups_seen;
    groups_once += rows == 1;
    groups_twice += rows == 2;
}

void aqp_sample_guard_reset(void) {
    guard_tripped = false;
    open_group.open = false;
    groups_seen = groups_once = groups_twice = executions = empty_executions = 0;
    bms_free(strata_seen);
    strata_seen = nullptr;
}

void aqp_sample_guard_count_group(const void* agg, int aggno, bool plain, double sample_rows) {
    const bool same = open_group.open && agg != nullptr && agg == open_group.agg && aggno > open_group.aggno;
    if (!same) {
        close_group();
        open_group = {agg, aggno, 0, plain, true};
    }
    open_group.aggno = aggno;
    if (sample_rows > open_group.rows) open_group.rows = sample_rows;
}

void aqp_sample_guard_saw_stratum(int32 s) {
    if (s < 0 || bms_is_member(s, strata_seen)) return;
    MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
    strata_seen = bms_add_member(strata_seen, s);
    MemoryContextSwitchTo(old);
}

bool aqp_sample_guard_stratum_seen(int32 s) { return bms_is_member(s, strata_seen); }

AqpSampleGroups aqp_sample_guard_groups(void) {
    close_group();
    return {groups_seen, groups_once, groups_twice};
}

AqpSampleExecutions aqp_sample_guard_executions(void) {
    close_group();
    return {executions, empty_executions};
}

void aqp_sample_guard_trip(const char* reason) {
    if (guard_tripped) return;
    strlcpy(guard_reason, reason ? reason : "the sample cannot answer", sizeof guard_reason);
    guard_tripped = true;
}

const char* aqp_sample_guard_reason(void) { return guard_tripped ? guard_reason : nullptr; }

// ---- the weighted aggregates' OIDs ------------------------------------------------------

struct WeightedName {
    const char* name;
    int nargs;
    Oid args[4];
};
// Indexed by kind (AQP_COUNT .. AQP_PERCENTILE_DISC) and ci.
static const WeightedName kWeighted[6][2] = {
    {{"sample_count", 2, {INT4OID, OIDOID}}, {"sample_count_ci", 2, {INT4OID, OIDOID}}},
    {{"sample_sum", 4, {FLOAT8OID, INT4OID, OIDOID, INT4OID}}, {"sample_sum_ci", 4, {FLOAT8OID, INT4OID, OIDOID, INT4OID}}},
    {{"sample_avg", 4, {FLOAT8OID, INT4OID, OIDOID, INT4OID}}, {"sample_avg_ci", 4, {FLOAT8OID, INT4OID, OIDOID, INT4OID}}},
    {{"sample_count", 2, {INT4OID, OIDOID}}, {"sample_count_ci", 2, {INT4OID, OIDOID}}},  // + FILTER (x IS NOT NULL)
    {{"sample_percentile_cont", 4, {FLOAT8OID, INT4OID, OIDOID, FLOAT8OID}},
     {"sample_percentile_cont_ci", 4, {FLOAT8OID, INT4OID, OIDOID, FLOAT8OID}}},
    {{"sample_percentile_disc", 4, {FLOAT8OID, INT4OID, OIDOID, FLOAT8OID}},
     {"sample_percentile_disc_ci", 4, {FLOAT8OID, INT4OID, OIDOID, FLOAT8OID}}},
};
static Oid weighted_oids[6][2];
static bool weighted_valid = false;

static void forget_weighted(Datum, int, uint32) { weighted_valid = false; }

Oid aqp_sample_aggregate(AqpAgg agg) {
    static bool registered = false;
    if (!registered) {
        CacheRegisterSyscacheCallback(PROCOID, forget_weighted, 0);
        registered = true;
    }
    if (static_cast<int>(agg.kind) < 0 || static_cast<int>(agg.kind) > AQP_PERCENTILE_DISC) return InvalidOid;
    if (!weighted_valid) {
        // The weighted aggregates are internal objects (sql/ext/25_aqp.sql).
        Oid nsp = approx_gpu_internal_schema_oid(true);
        for (int k = 0; k < 6; ++k)
            for (int c = 0; c < 2; ++c) {
                const WeightedName& w = kWeighted[k][c];
                weighted_oids[k][c] =
                    OidIsValid(nsp) ? GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(w.name),
                                                      PointerGetDatum(buildoidvector(w.args, w.nargs)),
                                                      ObjectIdGetDatum(nsp))
                                    : InvalidOid;
            }
        weighted_valid = true;
    }
    return weighted_oids[agg.kind][agg.ci ? 1 : 0];
}

bool aqp_sample_weighted_kind(Oid fnoid, AqpAgg* out) {
    if (!OidIsValid(fnoid) || !OidIsValid(aqp_sample_aggregate({AQP_COUNT, false}))) return false;
    for (int k = 0; k < 6; ++k)
        for (int c = 0; c < 2; ++c)
            if (weighted_oids[k][c] == fnoid && k != AQP_COUNT_VALUE) {  // its OIDs are COUNT's
                *out = {static_cast<AqpAggKind>(k), c == 1};
                return true;
            }
    return false;
}
