// The planner hook that chooses the path of a statement with approx_*
// aggregates (aqp.h): a planner_hook that plans the statement exactly first,
// from the untouched Query (the box path's create_upper_paths_hook,
// box/planner.cpp, adds its node there), keeps that plan when the box path
// answers in it (the fast path), and otherwise asks the sample path
// (aqp_sample_plan, sample/planner.cpp) for the same statement over the
// sample; when neither answers, the reasons of both go to last_run(). The
// copy the sample path plans is taken before planning (standard_planner
// scribbles on its input), only of SELECTs that mention an approx_* aggregate.
#include "aqp/aqp.h"
#include "aqp/box.h"
#include "aqp/sample.h"

extern "C" {
#include "access/parallel.h"
#include "access/xact.h"
#include "optimizer/planner.h"
}

static planner_hook_type prev_planner_hook = nullptr;

// A plan (or its subplans) in which the box path answers: keep it (the fast path).
static bool has_box_node(Plan* p) {
    if (p == nullptr) return false;
    if (IsA(p, CustomScan) && aqp_is_box_scan(reinterpret_cast<CustomScan*>(p))) return true;
    return has_box_node(p->lefttree) || has_box_node(p->righttree);
}

// Planning under this hook (0: the library was loaded by this very
// planning, through the aggregates' support function, after planner()
// had passed the hook by).
static int hook_depth = 0;
bool aqp_sample_path_considered(void) { return hook_depth > 0; }
// Has the hook planned anything in this backend (aqp_first_statement.cpp)?
static bool hook_seen = false;
bool aqp_planner_hook_seen(void) { return hook_seen; }

static PlannedStmt* aqp_planner(Query* parse, const char* query_string, int cursor_options, ParamListInfo params) {
    hook_seen = true;
    // Only SELECTs that mention an approx_* aggregate are copied (cheap walk).
    bool consider = parse->commandType == CMD_SELECT && parse->utilityStmt == nullptr && !IsInParallelMode() &&
                    IsTransactionState();
    Query* copy = nullptr;
    if (consider && aqp_sample_candidate(parse)) copy = copy_node(parse);
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
    const char* reason = nullptr;
    PlannedStmt* sample = aqp_sample_plan(exact, copy, query_string, cursor_options, params, &reason);
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
    return sample;
}

void aqp_planner_init(void) {
    prev_planner_hook = planner_hook;
    planner_hook = aqp_planner;
}
