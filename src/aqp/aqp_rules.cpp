// Rules both paths apply to a statement (aqp.h): row-level security on the
// sampled table (a synopsis or a sample holds every row), whether a query
// level filters or limits its rows (the box path's shape; the sample path's
// guard over a level above the aggregates), and the missing-groups rule over
// the groups a sample saw (docs/aqp.md, "Missing groups").
#include "aqp/aqp.h"

#include "core/sample_estimate.hpp"

extern "C" {
#include "utils/rls.h"
}

bool aqp_row_security_applies(const RangeTblEntry* rte, bool* env_dependent) {
    *env_dependent = false;
    if (rte->securityQuals != NIL) return true;
    switch (check_enable_rls(rte->relid, rte->checkAsUser, true)) {
        case RLS_ENABLED: return true;
        case RLS_NONE_ENV: *env_dependent = true; return false;
        default: return false;
    }
}

// A level above the aggregated one that filters, limits or compares rows
// (the guard judges only the aggregated level's own LIMIT and HAVING).
static bool jointree_filters(Node* jt) {
    if (jt == nullptr) return false;
    if (IsA(jt, FromExpr)) {
        FromExpr* f = reinterpret_cast<FromExpr*>(jt);
        ListCell* lc;
        foreach (lc, f->fromlist)
            if (jointree_filters(static_cast<Node*>(lfirst(lc)))) return true;
        return f->quals != nullptr;
    }
    if (IsA(jt, JoinExpr)) {
        JoinExpr* j = reinterpret_cast<JoinExpr*>(jt);
        return j->quals != nullptr || jointree_filters(j->larg) || jointree_filters(j->rarg);
    }
    return false;
}
bool aqp_query_filters_rows(const Query* q) {
    return q->limitCount != nullptr || q->limitOffset != nullptr || q->havingQual != nullptr ||
           q->distinctClause != NIL || q->setOperations != nullptr ||
           jointree_filters(reinterpret_cast<Node*>(q->jointree));
}

// Chao1 (bias-corrected, Chao 1984/2005): f1 (f1 - 1) / (2 (f2 + 1)) groups unseen.
const char* aqp_missing_groups_reason(AqpSampleGroups g, bool grouped) {
    if (g.seen == 0)
        return grouped ? "no sample row reached a group (the sample cannot tell an empty answer from a missed one)"
                       : "no sample row reached the aggregates (the sample cannot tell zero from a few rows)";
    if (!grouped) return nullptr;
    double unseen = approx::sample::unseen_groups(g.once, g.twice);
    double share = unseen / (static_cast<double>(g.seen) + unseen);
    if (!(share > aqp_max_missing_groups)) return nullptr;
    return psprintf("the sample missed an estimated %.0f%% of the groups (%.0f%% of the answers rest on one sample row; "
                    "approx_gpu.max_missing_groups is %g)",
                    100 * share, 100.0 * static_cast<double>(g.once) / static_cast<double>(g.seen),
                    aqp_max_missing_groups);
}
