// The rules that judge the sample plan's answer once it ran (sample/internal.h,
// AqpSampleVerdict), for the Approx Sample Scan (sample/scan.cpp): a
// group the sample missed (Chao1, the groups the other tables allow), an
// execution no sample row reached, a stratum with no sample row under the
// guard, and under the guard whatever the query does with the estimates
// (sample/judge.cpp). Each gives the reason the exact plan answers
// instead, or nullptr (docs/aqp.md, "Missing groups", "Error bounds").
#include "aqp/sample/internal.h"

#include "core/synopsis.hpp"

extern "C" {
#include "utils/tuplestore.h"
}

// The groups the other tables allow (aqp_sample_domain_groups), read at
// most once per run of the sample plan; -1: no bound.
double aqp_sample_groups_allowed(AqpSampleVerdict* v) {
    if (!v->allowed_read && v->spec->domain_sql != nullptr)
        v->allowed = aqp_sample_domain_groups(v->spec->domain_sql, v->params);
    else if (!v->allowed_read)
        v->allowed = -1;
    v->allowed_read = true;
    return v->allowed;
}

// A GROUP BY over a sample smaller than the table returns only the groups
// the sample saw; a missing group has no interval to warn of it. When the
// groups seen once and twice estimate (Chao1) that more than
// approx_gpu.max_missing_groups of the groups are missing, or no sample row
// reached any aggregate (grouped or not), the exact plan answers (docs/aqp.md,
// "Missing groups").
static const char* missing_groups(AqpSampleVerdict* v) {
    if (aqp_max_missing_groups >= 1 || v->model->m >= v->model->n_rows) return nullptr;
    const char* chao1 = aqp_missing_groups_reason(aqp_sample_guard_groups(), v->spec->grouped);
    if (chao1 != nullptr || !v->spec->grouped) return chao1;
    // Chao1 counts what the seen groups show; groups rare next to a
    // dominant one leave no singletons. When the keys are other tables'
    // columns, the groups those tables allow bound the answer from above
    // (the groups seen: the sample plan's rows, before the node's LIMIT).
    if (v->spec->domain_sql == nullptr) return nullptr;
    double seen = static_cast<double>(tuplestore_tuple_count(v->store));
    double allowed = aqp_sample_groups_allowed(v);
    if (!(allowed > 0) || !(seen < (1 - aqp_max_missing_groups) * allowed)) return nullptr;
    return psprintf("the sample saw %.0f of the up to %.0f groups the other tables allow (approx_gpu.max_missing_groups "
                    "is %g)",
                    seen, allowed, aqp_max_missing_groups);
}

// "No sample row reached the aggregates" holds per execution of an
// ungrouped aggregated level: a correlated subquery runs it once per outer
// row, and an execution no sample row reached answers 0 (or NULL) where the
// rows may hold a few. The nested plan runs them all, so one such execution
// sends the statement to the exact plan (as missing_groups does for one).
static const char* empty_executions(const AqpSampleVerdict* v) {
    if (aqp_max_missing_groups >= 1 || v->model->m >= v->model->n_rows) return nullptr;
    AqpSampleExecutions x = aqp_sample_guard_executions();
    if (x.empty == 0 || x.total < 2) return nullptr;  // one execution: missing_groups says it
    return psprintf("no sample row reached the aggregates in %lld of their %lld executions (the sample cannot tell "
                    "zero from a few rows)",
                    static_cast<long long>(x.empty), static_cast<long long>(x.total));
}

// Under the guard a GROUP BY over every stratify column skips the
// missing-groups fallback: a group's rows lie in its strata. A stratum with
// no sample row in the answer (the WHERE kept none) may still hold rows
// that pass, a group the answer lacks, unless the sample holds it whole.
static const char* unseen_strata(const AqpSampleVerdict* v) {
    const approx::synopsis::Synopsis& m = *v->model;
    if (!(aqp_max_relative_error > 0) || !v->spec->grouped || !v->spec->groups_within_strata || m.m >= m.n_rows)
        return nullptr;
    int unseen = 0;
    for (int g = 0; g < m.n_strata; ++g)
        unseen += m.strata[g].end - m.strata[g].begin < m.strata[g].n_rows && !aqp_sample_guard_stratum_seen(g);
    if (unseen == 0) return nullptr;
    return psprintf("%d %s not sampled whole %s no sample row in the answer: %s groups may be missing "
                    "(approx_gpu.max_relative_error is set)",
                    unseen, unseen == 1 ? "stratum" : "strata", unseen == 1 ? "has" : "have",
                    unseen == 1 ? "its" : "their");
}

// The guard promises every group within the bound: a group the sample
// never saw cannot be bounded, so a GROUP BY over a sample smaller than the
// table runs the exact plan unless the groups lie within the strata or the
// groups the other tables allow, read now, are all among those the sample
// saw (docs/aqp.md, "Error bounds"). Build-time keys would not do: an insert
// brings new ones.
static const char* kMayMissGroups = "GROUP BY over a sample that may miss groups (approx_gpu.max_relative_error is set)";
static bool guard_needs_groups(const AqpSampleVerdict* v) {
    return aqp_max_relative_error > 0 && v->spec->grouped && !v->spec->groups_within_strata &&
           v->model->m < v->model->n_rows;
}

// With the guard set, after the sample plan ran: every group seen, and
// what the query does with the approximate values judged
// (sample/judge.cpp); nullptr: the sample answers.
static const char* guard_judgement(AqpSampleVerdict* v, int64 offset, int64 count) {
    if (!(aqp_max_relative_error > 0)) return nullptr;
    if (guard_needs_groups(v)) {
        double allowed = aqp_sample_groups_allowed(v);
        double seen = static_cast<double>(tuplestore_tuple_count(v->store));
        if (!(allowed > 0)) return kMayMissGroups;
        if (seen < allowed)
            return psprintf("%s: the sample saw %.0f of the up to %.0f groups the other tables allow", kMayMissGroups,
                            seen, allowed);
    }
    return aqp_sample_judge(v->spec, v->store, v->slot, offset, count);
}

const char* aqp_sample_groups_unbounded(AqpSampleVerdict* v) {
    return guard_needs_groups(v) && v->spec->domain_sql == nullptr ? kMayMissGroups : nullptr;
}

const char* aqp_sample_verdict(AqpSampleVerdict* v, int64 offset, int64 count) {
    const char* why = empty_executions(v);
    if (why == nullptr) why = unseen_strata(v);
    if (why == nullptr) why = missing_groups(v);
    if (why == nullptr) why = guard_judgement(v, offset, count);
    return why;
}
