// The sample path's planner side: for a SELECT whose approx_* aggregates
// the box path did not answer, the planner hook (aqp_planner.cpp) asks
// aqp_sample_plan to plan the same query again with the sampled table
// replaced by its sample relation and each approx_* Aggref by its weighted
// form (sample/internal.h), and gets the exact plan back under an "Approx
// Sample Scan" that runs the sample plan first (sample/scan.cpp).
//
// Files: the survey and the choice of the table (sample/survey.cpp), the
// rewrite of the copy (sample/rewrite.cpp), this file (the planning and the
// path's settings). The exact plan comes first, from the untouched Query
// (standard_planner scribbles on its input, so the hook takes the copy
// before). The copy is planned separately by standard_planner into its own
// PlannedStmt (no merging of range tables, PARAM_EXEC or subplan ids), kept
// in the node's custom_private and run nested by the executor.
#include "aqp/sample/plan.h"

extern "C" {
#include "jit/jit.h"
#include "access/xact.h"
#include "optimizer/planner.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
}

// The sample relation being planned over (aqp_sample_planning_relid) and
// the star-join glue's note meanwhile.
static Oid planning_relid = InvalidOid;
static const char* star_join_note = nullptr;
Oid aqp_sample_planning_relid(void) { return planning_relid; }
void aqp_sample_star_join_note(const char* note) {
    if (OidIsValid(planning_relid) && star_join_note == nullptr && note != nullptr) star_join_note = pstrdup(note);
}

// The sample path's plan for `copy` (the unplanned query), or nullptr and *reason.
static PlannedStmt* plan_over_sample(Query* copy, const char* query_string, int cursor_options, ParamListInfo params,
                                     AqpSampleSpec* spec, const char** reason) {
    AqpSampleChoice choice;
    if (!aqp_sample_choose(copy, &choice, spec, reason)) return nullptr;
    if (!aqp_sample_rewrite(copy, &choice, spec, reason)) return nullptr;
    // Serial: the nested plan runs inside the outer statement's executor.
    planning_relid = spec->sample_relid;
    star_join_note = nullptr;
    PlannedStmt* p = standard_planner(copy, query_string, cursor_options & ~CURSOR_OPT_PARALLEL_OK, params);
    spec->star_join = star_join_note;
    // A star join does the plan's work in its engine; what PostgreSQL's
    // executor has left (finalizing the groups) is small, and JIT compiling
    // it -- which the sample's row count alone would trigger -- would cost
    // more than the whole query.
    if (aqp_sample_custom_node(p->planTree) != nullptr) p->jitFlags = PGJIT_NONE;
    planning_relid = InvalidOid;
    return p;
}

// ---- planning over the sample ----------------------------------------------------------------

ErrorData* aqp_sample_in_subtransaction(void (*fn)(void*), void* arg) {
    MemoryContext cxt = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    ErrorData* volatile error = nullptr;  // set in PG_CATCH, read after the longjmp
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(cxt);
    PG_TRY();
    {
        fn(arg);
        ReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(cxt);
        error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    }
    PG_END_TRY();
    return error;
}

// Plans the copy inside a subtransaction: an unexpected error there means
// the exact path, not a failed query (a cancel still cancels).
struct PlanOverSample {
    Query* copy;
    const char* query_string;
    int cursor_options;
    ParamListInfo params;
    AqpSampleSpec* spec;
    const char** reason;
    PlannedStmt* result;
};
static PlannedStmt* try_plan_over_sample(Query* copy, const char* query_string, int cursor_options,
                                         ParamListInfo params, AqpSampleSpec* spec, const char** reason) {
    PlanOverSample call{copy, query_string, cursor_options, params, spec, reason, nullptr};
    ErrorData* e = aqp_sample_in_subtransaction(
        [](void* arg) {
            PlanOverSample* c = static_cast<PlanOverSample*>(arg);
            c->result = plan_over_sample(c->copy, c->query_string, c->cursor_options, c->params, c->spec, c->reason);
        },
        &call);
    planning_relid = InvalidOid;  // also after an error
    if (e == nullptr) return call.result;
    if (e->sqlerrcode == ERRCODE_QUERY_CANCELED || e->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN ||
        e->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
        ReThrowError(e);
    *reason = psprintf("planning over the sample failed: %s", e->message);
    return nullptr;
}

bool aqp_sample_candidate(Query* parse) {
    AqpSurvey s = aqp_sample_survey(parse);
    return s.agg_levels != NIL || s.outer_approx;
}

PlannedStmt* aqp_sample_plan(PlannedStmt* exact, Query* copy, const char* query_string, int cursor_options,
                             ParamListInfo params, const char** reason) {
    AqpSampleSpec spec;
    memset(&spec, 0, sizeof spec);
    PlannedStmt* sample = try_plan_over_sample(copy, query_string, cursor_options, params, &spec, reason);
    if (spec.role_dependent) exact->dependsOnRole = true;
    if (sample == nullptr) return nullptr;
    return aqp_sample_wrap(exact, sample, &spec, cursor_options);
}

void aqp_sample_init(void) {
    // Limits that protect the server from an unprivileged role's query
    // (issue 37 item 10): superuser-only.
    DefineCustomIntVariable("approx_gpu.sample_max_state",
                            "Most memory the sample path's spread pass may hold for one statement; more takes the "
                            "exact path.",
                            "The pass holds per stratum of the synopsis and SUM / AVG measure about 128 bytes "
                            "(60,000 strata and 400 measures: 3 GB).",
                            &aqp_sample_max_state_kb, 65536, 64, static_cast<int>(MaxAllocSize / 1024), PGC_SUSET,
                            GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.sample_spread_cache_size",
                            "Most memory a backend keeps for the spreads of measures over samples, for later "
                            "statements.",
                            "The least recently used go first; a spread larger than this is not kept.",
                            &aqp_sample_spread_cache_kb, 16384, 0, MAX_KILOBYTES, PGC_SUSET, GUC_UNIT_KB, nullptr,
                            nullptr, nullptr);
    aqp_exact_pass_init();
    aqp_sample_scan_register();
}
