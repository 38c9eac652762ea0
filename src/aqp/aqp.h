// Approximate aggregates in plain SQL (DESIGN.md, "Approximate aggregates in
// plain SQL"): the six approx_* aggregates and the planner side that answers
// them from a table synopsis. This header is what src/aqp/ shares; each way to
// answer lives in a folder of its own behind one header:
//   aqp/box.h     the box path (src/aqp/box/): one box per group, answered by
//                 the synopsis engine in an "Approx Synopsis Scan";
//   aqp/sample.h  the sample path (src/aqp/sample/): the query planned again
//                 over the sample relation with weighted aggregates, run by an
//                 "Approx Sample Scan".
// A path's folder includes this header and its own, never the other path's;
// the files here (aqp.cpp, the settings; aqp_planner.cpp, the hook that
// chooses the path) include both.
#pragma once

#include "runtime/runtime.h"

extern "C" {
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "optimizer/planner.h"
}

// ---- node helpers shared by the planner files ---------------------------------------
// copyObject() is a typeof macro that C++ does not compile.
template <class T>
inline T* copy_node(T* node) {
    return static_cast<T*>(copyObjectImpl(node));
}
// expression_tree_walker / _mutator take bool (*)() / Node* (*)() in
// PostgreSQL 15 (nodeFuncs.h); the casts go through void (*)() to say it is deliberate.
using TreeWalker = bool (*)();
template <class Fn>
inline TreeWalker walker(Fn fn) {
    return reinterpret_cast<TreeWalker>(reinterpret_cast<void (*)()>(fn));
}
using TreeMutator = Node* (*)();
template <class Fn>
inline TreeMutator mutator(Fn fn) {
    return reinterpret_cast<TreeMutator>(reinterpret_cast<void (*)()>(fn));
}

// ---- in aqp.cpp ----------------------------------------------------------------------
// _PG_init: the settings, both paths' hooks and CustomScan methods.
void aqp_init(void);

// ---- in aqp_aggregates.cpp -------------------------------------------------------------
// The aggregates over rows, their planner support function (the library's
// load point during planning) and the settings below.
extern double aqp_confidence;          // approx_gpu.confidence, (0, 1)
extern double aqp_max_relative_error;  // approx_gpu.max_relative_error, 0 = off
// approx_gpu.max_missing_groups (default 0.05): the largest estimated share of
// groups a GROUP BY over a sample may miss before the exact plan answers
// (both paths; aqp_missing_groups_reason).
extern double aqp_max_missing_groups;
void aqp_define_settings(void);

// Which approx_* aggregate an Aggref calls. The box path answers COUNT(*),
// SUM and AVG; the sample path also COUNT(expr) and the percentiles.
enum AqpAggKind {
    AQP_COUNT = 0,            // approx_count(*)
    AQP_SUM = 1,
    AQP_AVG = 2,
    AQP_COUNT_VALUE = 3,      // approx_count(expr): rows where expr IS NOT NULL
    AQP_PERCENTILE_CONT = 4,  // approx_percentile_cont(f) WITHIN GROUP (ORDER BY x)
    AQP_PERCENTILE_DISC = 5,  // approx_percentile_disc(f) WITHIN GROUP (ORDER BY x)
};
struct AqpAgg {
    AqpAggKind kind;
    bool ci;  // the _ci form (returns approx_estimate)
};
// True when fnoid is one of the approx_* aggregates of the extension (the
// six of the box path, approx_count(expr) and the percentiles, each with its
// _ci form; cached OIDs, reset on any pg_proc change).
bool aqp_lookup_aggregate(Oid fnoid, AqpAgg* out);

// ---- in aqp_planner.cpp ----------------------------------------------------------------
// The planner_hook that chooses the path: it plans the statement exactly (the
// box path's create_upper_paths_hook adds its node there), keeps a plan the
// box path answers in, else asks the sample path; else the reason for last_run().
void aqp_planner_init(void);
// False while planning a statement the hook did not see: the library was
// loaded by that statement's planning (the aggregates' support function).
bool aqp_sample_path_considered(void);
// Has the hook planned any statement in this backend yet?
bool aqp_planner_hook_seen(void);

// ---- in aqp_first_statement.cpp ----------------------------------------------------------
// A session's first approx_* statement without preloading: the library is
// loaded while it is planned, past the planner hook. The support function
// notes that planning (root: the planner's, for the statement's place in its
// source text) before the hook has planned anything; an ExecutorStart hook
// plans the same statement again through the hook and starts that plan.
void aqp_note_unhooked_planning(PlannerInfo* root);
void aqp_first_statement_init(void);

// ---- in aqp_rules.cpp ------------------------------------------------------------------
// Rules both paths apply.
// Does row-level security apply to the table's range-table entry? A synopsis
// (box path) or sample (sample path) holds every row. By planning time the
// rewriter has put the policies of the role the entry is checked as (a view's
// owner for an owner-rights view, else the caller) into its securityQuals;
// judged for that role too (checkAsUser). *env_dependent: exempt only by the
// role or row_security (the plan depends on the role).
bool aqp_row_security_applies(const RangeTblEntry* rte, bool* env_dependent);
// Does this query level filter, limit or compare its rows (WHERE, JOIN ...
// ON, HAVING, LIMIT / OFFSET, DISTINCT, set operations)? A level above
// approx_* aggregates that does acts on estimates (sample/judge.cpp).
bool aqp_query_filters_rows(const Query* q);
// The groups a sample saw: how many, how many rest on one sample row, on two.
struct AqpSampleGroups {
    int64 seen, once, twice;
};
// The missing-groups rule over such counts (docs/aqp.md, "Missing groups"),
// for both paths: why the exact plan must answer, or nullptr. The caller
// checks approx_gpu.max_missing_groups < 1 and a sample smaller than the table.
const char* aqp_missing_groups_reason(AqpSampleGroups g, bool grouped);

// ---- in aqp_plan_spec.cpp ---------------------------------------------------------------
// What a path's CustomScan answers, written by the planner and read by the
// executor: path and plan carry it as plain nodes (Integer, Boolean, String,
// Const, List), never as a pointer, so that copyObject (the plan cache),
// outfuncs and EXPLAIN keep it. Every kind's private list starts with its
// kind and the synopsis' identity; the rest is the path's own (box/spec.cpp,
// sample/spec.cpp).
enum AqpPlanKind { AQP_PLAN_BOXES = 1, AQP_PLAN_SAMPLE = 2 };

// Reads the next node of such a list.
struct AqpNodeCursor {
    List* list;
    int next;
    Node* take() { return static_cast<Node*>(list_nth(list, next++)); }
    int take_int() { return intVal(take()); }
    bool take_bool() { return boolVal(take()); }
    List* take_list() { return castNode(List, take()); }
    int64 take_int8() { return DatumGetInt64(castNode(Const, take())->constvalue); }
};
Const* aqp_int8_const(int64 v);
// The synopsis' identity, by which the executor pins it again.
List* aqp_form_synopsis(Oid relid, Oid owner, const char* synopsis, TimestampTz built);
void aqp_deform_synopsis(List* l, Oid* relid, Oid* owner, const char** synopsis, TimestampTz* built);
