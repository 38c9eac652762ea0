// The sample path's planner side: a planner_hook that, for a SELECT whose
// approx_* aggregates the box path did not answer, plans the same query
// again with the sampled table replaced by its sample relation and each
// approx_* Aggref by its weighted form (aqp.h), and returns the exact plan
// under an "Approx Sample Scan" that runs the sample plan first
// (sample/scan.cpp).
//
// Files: the survey and the choice of the table (sample/survey.cpp), the
// rewrite of the copy (sample/rewrite.cpp), this hook. The exact plan
// comes first, from the untouched Query (standard_planner scribbles on its
// input, so the copy is taken before). The copy is planned separately by
// standard_planner into its own PlannedStmt (no merging of range tables,
// PARAM_EXEC or subplan ids), kept in the node's custom_private and run
// nested by the executor.
#include "aqp/sample/plan.h"

extern "C" {
#include "access/xact.h"
#include "optimizer/planner.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
}

bool aqp_box_path_enabled = true;
int aqp_box_path_max_groups = 16;
double aqp_max_missing_groups = 0.05;
const char* aqp_box_path_reason = nullptr;
static planner_hook_type prev_planner_hook = nullptr;

// A plan (or its subplans) in which the box path answers: keep it (the fast path).
static bool has_box_node(Plan* p) {
    if (p == nullptr) return false;
    if (IsA(p, CustomScan) && aqp_is_box_scan(reinterpret_cast<CustomScan*>(p))) return true;
    return has_box_node(p->lefttree) || has_box_node(p->righttree);
}

// The sample path's plan for `copy` (the unplanned query), or nullptr and *reason.
static PlannedStmt* plan_over_sample(Query* copy, const char* query_string, int cursor_options, ParamListInfo params,
                                     AqpSampleSpec* spec, const char** reason) {
    AqpSampleChoice choice;
    if (!aqp_sample_choose(copy, &choice, spec, reason)) return nullptr;
    if (!aqp_sample_rewrite(copy, &choice, spec, reason)) return nullptr;
    // Serial: the nested plan runs inside the outer statement's executor.
    return standard_planner(copy, query_string, cursor_options & ~CURSOR_OPT_PARALLEL_OK, params);
}

// ---- the hook ----------------------------------------------------------------------------

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
    if (e == nullptr) return call.result;
    if (e->sqlerrcode == ERRCODE_QUERY_CANCELED || e->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN ||
        e->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
        ReThrowError(e);
    *reason = psprintf("planning over the sample failed: %s", e->message);
    return nullptr;
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
        AqpSurvey s = aqp_sample_survey(parse);
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

    // Read before planning the copy: nested planning there (the synopsis
    // cache's SPI) resets it.
    const char* box_reason = aqp_box_path_reason;
    AqpSampleSpec spec;
    memset(&spec, 0, sizeof spec);
    const char* reason = nullptr;
    PlannedStmt* sample = try_plan_over_sample(copy, query_string, cursor_options, params, &spec, &reason);
    if (spec.role_dependent) exact->dependsOnRole = true;
    if (sample == nullptr) {
        // Both reasons: the box path's names what its shape lacks, the
        // sample path's what the whole statement does.
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
    DefineCustomRealVariable("approx_gpu.max_missing_groups",
                             "Largest estimated share of groups a GROUP BY over a sample may miss; more runs the "
                             "exact plan.",
                             "Estimated from the groups the sample saw once and twice (Chao1). 1: never fall back "
                             "for missing groups.",
                             &aqp_max_missing_groups, 0.05, 0.0, 1.0, PGC_USERSET, 0, nullptr, nullptr, nullptr);
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
    aqp_sample_scan_register();
    prev_planner_hook = planner_hook;
    planner_hook = aqp_planner;
}
