// A session's first approx_* statement without preloading (docs/aqp.md,
// "Loading: nothing but CREATE EXTENSION"). The library is then loaded by the
// aggregates' planner support function while that statement is planned:
// after planner() has passed planner_hook by, so the statement is planned
// without the hook that chooses the path (the sample path is not tried). The
// support function notes that planning (aqp_note_unhooked_planning), and this
// ExecutorStart hook -- in place by the time the same statement's executor
// starts, since ExecutorStart() reads the hook when it is called -- plans the
// statement again from its own source text and parameters, now through the
// hook, and starts that plan instead: the first statement takes the path of
// every later one. Nothing of the first plan has run by then.
//
// It applies once per backend, to the statement the client sent (its source
// text is debug_query_string: not a statement a function runs), when that is
// a SELECT, EXPLAIN [ANALYZE] of a SELECT or CREATE TABLE AS SELECT, and the
// new plan returns the same columns. Anything else runs the plan it has (over
// the rows; last_run() says why). Plans the plan cache kept from that
// planning (a PL/pgSQL function's query, a prepared statement's generic
// plan) are marked for planning again at their next use.
#include "aqp/aqp.h"

extern "C" {
#include "access/parallel.h"
#include "access/tupdesc.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "tcop/tcopprot.h"
#include "utils/plancache.h"
#include "utils/snapmgr.h"
}

static ExecutorStart_hook_type prev_executor_start = nullptr;

// The planning the library was loaded in: the statement (its message's start
// and its place in the source text), until its executor starts.
static struct {
    bool noted;    // once per backend
    bool pending;  // not yet started
    bool reset_plan_cache;
    TimestampTz statement_start;
    int location, len;
} unhooked;

void aqp_note_unhooked_planning(PlannerInfo* root) {
    if (unhooked.noted || root == nullptr || aqp_planner_hook_seen()) return;
    while (root->parent_root != nullptr) root = root->parent_root;  // the statement's top level
    unhooked.noted = unhooked.pending = unhooked.reset_plan_cache = true;
    unhooked.statement_start = GetCurrentStatementStartTimestamp();
    unhooked.location = root->parse->stmt_location;
    unhooked.len = root->parse->stmt_len;
}

// The SELECT of a statement the client sent, when it is one this file plans
// again: SELECT (without INTO), EXPLAIN of one, CREATE TABLE AS one.
static Node* client_select(Node* stmt) {
    if (IsA(stmt, ExplainStmt)) stmt = castNode(ExplainStmt, stmt)->query;
    else if (IsA(stmt, CreateTableAsStmt)) {
        auto* ctas = castNode(CreateTableAsStmt, stmt);
        if (ctas->objtype != OBJECT_TABLE || ctas->is_select_into) return nullptr;
        stmt = ctas->query;
    }
    if (!IsA(stmt, SelectStmt) || castNode(SelectStmt, stmt)->intoClause != nullptr) return nullptr;
    return stmt;
}

// The statement of qd planned again through the planner hook, or nullptr.
static PlannedStmt* plan_again(QueryDesc* qd) {
    PlannedStmt* old = qd->plannedstmt;
    if (GetCurrentStatementStartTimestamp() != unhooked.statement_start) {
        unhooked.pending = false;  // that statement never started (e.g. its planning failed)
        return nullptr;
    }
    // A statement a function runs while the noted one is planned (e.g. the
    // synopsis cache's) has a source text of its own: wait for the noted one.
    if (debug_query_string == nullptr || qd->sourceText == nullptr || strcmp(qd->sourceText, debug_query_string) != 0 ||
        old->stmt_location != unhooked.location || old->stmt_len != unhooked.len)
        return nullptr;
    unhooked.pending = false;
    if (old->commandType != CMD_SELECT || old->utilityStmt != nullptr || !ActiveSnapshotSet() || IsInParallelMode())
        return nullptr;
    // The parameters as bound (extended protocol): a list of values whose
    // parser hook (makeParamList's) gives each $n the type parse analysis
    // resolved; none fetched on demand (a function's variables).
    ParamListInfo params = qd->params;
    if (params != nullptr && params->paramFetch != nullptr) return nullptr;
    // The statement in its source text: the only one, or the SELECT at its place.
    List* raws = pg_parse_query(qd->sourceText);
    Node* select = nullptr;
    if (list_length(raws) == 1) {
        select = client_select(linitial_node(RawStmt, raws)->stmt);
    } else {
        ListCell* lc;
        foreach (lc, raws) {
            RawStmt* r = lfirst_node(RawStmt, lc);
            if (r->stmt_location == old->stmt_location && r->stmt_len == old->stmt_len && IsA(r->stmt, SelectStmt))
                select = client_select(r->stmt);
        }
    }
    if (select == nullptr) return nullptr;
    RawStmt* raw = makeNode(RawStmt);
    raw->stmt = select;
    raw->stmt_location = old->stmt_location;
    raw->stmt_len = old->stmt_len;
    List* queries =
        params != nullptr && params->parserSetup != nullptr
            ? pg_analyze_and_rewrite_withcb(raw, qd->sourceText, params->parserSetup, params->parserSetupArg, qd->queryEnv)
            : pg_analyze_and_rewrite_fixedparams(raw, qd->sourceText, nullptr, 0, qd->queryEnv);
    if (list_length(queries) != 1) return nullptr;
    Query* q = linitial_node(Query, queries);
    if (q->commandType != CMD_SELECT || q->utilityStmt != nullptr) return nullptr;
    // A top-level statement, EXPLAIN's and CREATE TABLE AS's are planned with these options.
    PlannedStmt* again = pg_plan_query(q, qd->sourceText, CURSOR_OPT_PARALLEL_OK, params);
    if (!equalTupleDescs(ExecCleanTypeFromTL(old->planTree->targetlist),
                         ExecCleanTypeFromTL(again->planTree->targetlist)))
        return nullptr;
    return again;
}

static void aqp_executor_start(QueryDesc* qd, int eflags) {
    if (unhooked.reset_plan_cache) {
        // By now the plan cache holds what it kept of that planning (or it
        // marks it invalid as it keeps it: the source is invalid already).
        unhooked.reset_plan_cache = false;
        ResetPlanCache();
    }
    if (unhooked.pending) {
        PlannedStmt* again = plan_again(qd);
        if (again != nullptr) qd->plannedstmt = again;
    }
    if (prev_executor_start != nullptr)
        prev_executor_start(qd, eflags);
    else
        standard_ExecutorStart(qd, eflags);
}

void aqp_first_statement_init(void) {
    prev_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = aqp_executor_start;
}
