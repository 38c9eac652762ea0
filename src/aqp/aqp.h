// Approximate aggregates in plain SQL: the six approx_* aggregates, the
// planner hook that answers them from a table synopsis, and the CustomScan
// node ("Approx Synopsis Scan") that does it.
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
// _PG_init: settings, the hook, the CustomScan methods.
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
extern int aqp_box_memory_limit_kb;    // approx_gpu.box_memory_limit (superuser-only)
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

// ---- the sample path's weighted aggregates (sample/design.cpp: the design stack,
// ---- the guard, the OIDs; sample/aggregates.cpp: the aggregates; the estimates
// ---- and intervals: src/core/sample_estimate.hpp) -----------------------------------------
// The sample path (aqp_sample_*.cpp) plans the query again with the sampled
// table replaced by its sample relation and each approx_* Aggref by its
// weighted (Horvitz-Thompson) form, which also takes the row's stratum and
// the sample relation's OID (a Const):
//   approx_gpu_internal.sample_count(int4 stratum, oid sample)         COUNT(*); COUNT(expr) with
//                                                                       FILTER (WHERE expr IS NOT NULL)
//   approx_gpu_internal.sample_sum(float8 x, int4 stratum, oid sample, int4 measure)
//                                                                also sample_avg; measure: which of
//                                                                the design's measures x is (1-based;
//                                                                0: none), for its spread
//   approx_gpu_internal.sample_percentile_cont(float8 x, int4 stratum, oid sample, float8 fraction)
//                                                                also _disc (plain aggregates:
//                                                                the fraction is a direct argument;
//                                                                ORDER BY x DESC / USING > passes
//                                                                the stratum negated, -s: strata are
//                                                                >= 1, so no signature of its own;
//                                                                another USING operator: exact path)
// and each its _ci form (approx_estimate). Their final functions read the
// design of their sample: per stratum s = 1..n_strata the table's rows N_s
// and the sample's rows m_s (weights N_s / m_s, computed at query time).
struct AqpSampleDesign {
    Oid sample_relid;
    int n_strata;
    const double* rows;     // N_s, n_strata entries
    const double* sampled;  // m_s
    // Every group's rows lie in the strata where the sample saw the group
    // (e.g. GROUP BY includes the stratify columns or the partition key):
    // intervals then allow nothing for strata a group was not seen in;
    // otherwise each stratum not sampled whole may hold rows of any group
    // that the sample missed, and its intervals say so.
    bool groups_within_strata = false;
    // The sample plan's measures: the SUM / AVG arguments that are
    // arithmetic over the sample's columns (aqp_sample_measure_copy), owned
    // by the plan, valid while the design is pushed.
    List* measures = NIL;
};
// The sample plan's node pushes the design around its nested execution (a
// stack: nested sample plans); final functions find theirs by sample_relid
// (none: ERROR 55000, the aggregates are for sample plans only). Reset at
// transaction end; a subtransaction's abort drops what it pushed. Final
// functions must run in the backend that pushed (a Finalize Aggregate above
// Gather does; a single-copy Gather of debug_parallel_query would not).
// Transition functions need no design (parallel workers have none); a row's
// stratum outside 1..n_strata is ERROR 22023 at the final function.
void aqp_sample_design_push(const AqpSampleDesign* design);  // copied; ERROR 22023 if malformed
void aqp_sample_design_pop(void);
// The innermost pushed design of sample_relid, or nullptr.
const AqpSampleDesign* aqp_sample_design_find(Oid sample_relid);
// The spread of the design's measure number `measure` per stratum
// (core/sample_estimate.hpp: n_strata entries): at the first call, for all
// the design's measures, from what this backend kept or one pass over the
// sample (aqp_sample_measure_spreads); nullptr for measure 0, a measure the
// pass cannot evaluate, or no design. A measure outside the design's list
// is ERROR 22023 naming fn.
namespace approx::sample {
struct StratumSpread;
}
const approx::sample::StratumSpread* aqp_sample_design_spread(Oid sample_relid, int measure, const char* fn);
// The guard, read by the node after the nested run: with
// approx_gpu.max_relative_error set, a final function whose group's interval
// is too wide (or that the sample cannot estimate) records why; the node then
// runs the exact plan instead.
void aqp_sample_guard_reset(void);
void aqp_sample_guard_trip(const char* reason);  // the first reason is kept
const char* aqp_sample_guard_reason(void);        // nullptr: not tripped
// Each final function also reports its group's sample rows (agg: the
// AggState, aggno: the Aggref's; plain: an ungrouped Agg): consecutive
// reports of one Agg with rising aggno are one group, whose count is the
// most rows any of its aggregates saw. Groups resting on 1 and on 2 sample
// rows estimate how many groups the sample missed; a plain Agg's group is
// one execution of the aggregated level (a correlated subquery runs it once
// per outer row), empty when no sample row reached it. Reset with the guard.
struct AqpSampleGroups {
    int64 seen, once, twice;
};
struct AqpSampleExecutions {
    int64 total, empty;  // of ungrouped aggregated levels
};
void aqp_sample_guard_count_group(const void* agg, int aggno, bool plain, double sample_rows);
AqpSampleGroups aqp_sample_guard_groups(void);
AqpSampleExecutions aqp_sample_guard_executions(void);
// The strata (0-based) the final functions saw sample rows of.
void aqp_sample_guard_saw_stratum(int32 s);
bool aqp_sample_guard_stratum_seen(int32 s);
// The Aggref location that marks the sample plan's own unfiltered
// sample_count beside FILTERed aggregates (sample/rewrite.cpp): it
// reports its group's rows and strata, never trips the guard, and its
// column is junk.
constexpr int kAqpGroupRowsLocation = -2;
// The missing-groups rule over such counts (docs/aqp.md, "Missing groups"),
// for both paths: why the exact plan must answer, or nullptr. The caller
// checks approx_gpu.max_missing_groups < 1 and a sample smaller than the table.
const char* aqp_missing_groups_reason(AqpSampleGroups g, bool grouped);
// The pg_proc OID of the weighted form of `agg` (cached, reset on any pg_proc change).
Oid aqp_sample_aggregate(AqpAgg agg);

// ---- the plan specification (in aqp_plan_spec.cpp) --------------------------------------
// What an "Approx Synopsis Scan" answers: written by the planner, read by the
// executor. Path and plan carry it as plain nodes (Integer, Boolean, String,
// Const, List), never as a pointer, so that copyObject (the plan cache),
// outfuncs and EXPLAIN keep it.

// How the node answers: the box path (this node, AqpPlanSpec), or the sample
// path (a separately planned statement over the sample: the "Approx Sample
// Scan", whose spec is AqpSampleSpec, sample/internal.h); each kind has its own
// branch in the writer and reader, and the two share the synopsis' identity.
enum AqpPlanKind { AQP_PLAN_BOXES = 1, AQP_PLAN_SAMPLE = 2 };

// A box condition's form.
enum AqpCondKind {
    AQP_COND_CMP = 0,     // col op value: strategy 1..5 (BTLess..BTGreater) or AQP_STRATEGY_NE
    AQP_COND_IN = 1,      // col = ANY (array value)
    AQP_COND_NOT_IN = 2,  // col <> ALL (array value)
    AQP_COND_IS_NULL = 3,
    AQP_COND_NOT_NULL = 4,
};
constexpr int AQP_STRATEGY_NE = 6;  // ROWCOMPARE_NE: `<>` found as the negator of `=`

// One WHERE clause over a synopsis column.
struct AqpBoxCondition {
    int col;  // synopsis column
    AqpCondKind kind;
    int strategy;  // btree strategy (CMP; IN: equality; NOT_IN: AQP_STRATEGY_NE), else 0
    int value;     // index of the compared value in AqpPlanSpec::values, -1 for NULL tests
};

// One approx_* aggregate the node returns.
struct AqpAggregateSpec {
    AqpAggKind kind;
    bool ci;  // the _ci form
    int col;  // synopsis column of the argument, -1 for approx_count(*)
};

// The box path: one box per group and condition interval, answered by the
// synopsis engine.
struct AqpBoxSpec {
    int n_cols;
    AttrNumber* attnums;  // the table's attnum of each synopsis column
    int n_groups;
    int* group_cols;         // synopsis column of each group column, in
                             // custom_scan_tlist order (its first entries)
    bool groups_are_strata;  // the group columns are the synopsis's stratify columns
    int n_aggs;
    AqpAggregateSpec* aggs;  // custom_scan_tlist's remaining entries, in order;
                             // none on the path (the plan's target list gives them)
    int n_conds;
    AqpBoxCondition* conds;  // the WHERE clauses, all ANDed
};

struct AqpPlanSpec {
    AqpPlanKind kind;
    // The synopsis, pinned again by this identity at executor start.
    Oid relid;
    Oid owner;
    const char* synopsis;
    TimestampTz built;
    AqpBoxSpec boxes;  // AQP_PLAN_BOXES
    // Expressions evaluated at executor start (comparison values: Consts,
    // Params, stable expressions): the plan's custom_exprs, which setrefs fixes.
    List* values;
};

// The spec as nodes: the returned List is the plan's custom_private, *values
// its custom_exprs; the reader takes both back (they are not copied).
List* aqp_plan_spec_form(const AqpPlanSpec* spec, List** values);
AqpPlanSpec* aqp_plan_spec_deform(List* priv, List* values);

// A CustomPath has no custom_exprs: its custom_private holds the spec's two
// lists, and the group columns' Vars that become custom_scan_tlist's first entries.
enum AqpPathSlot { AQP_PATH_SPEC = 0, AQP_PATH_VALUES, AQP_PATH_GROUP_VARS };

// ---- in box/query_shape.cpp ----------------------------------------------------------
// Recognition of the query the box path answers, or why not.

// One WHERE clause as a condition on a column of the table.
struct AqpQueryCondition {
    AttrNumber attno;
    AqpCondKind kind;
    int strategy;    // as AqpBoxCondition::strategy
    Node* expr;      // the value (CMP), the array (IN / NOT_IN), nullptr (NULL tests)
    Oid value_type;  // the value's type (the array's element type)
    Oid collation;   // the comparison's collation
};

// A recognised single-table grouped query:
//   SELECT [group cols,] approx_*(...) FROM t WHERE <AND of col op value>
//   [GROUP BY plain columns] [HAVING ...]
struct AqpQueryShape {
    Index rti;  // t's range table index
    Oid relid;
    List* conds;         // AqpQueryCondition*, one per WHERE clause
    List* group_vars;    // Var*, in GROUP BY order
    List* agg_attnos;    // int: columns under approx_sum / approx_avg
    const char* reason;  // why not (set while recognising)
};

// Does the expression call an approx_* aggregate? (Otherwise the hook stays silent.)
bool aqp_mentions_approx(Node* node);
// Does this query level filter, limit or compare its rows (WHERE, JOIN ...
// ON, HAVING, LIMIT / OFFSET, DISTINCT, set operations)? A level above
// approx_* aggregates that does acts on estimates (sample/judge.cpp).
bool aqp_query_filters_rows(const Query* q);
// nullptr and *shape filled in when the query has the shape (some synopsis
// may answer it), else the reason.
const char* aqp_recognise_query(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel, AqpQueryShape* shape);
bool aqp_is_number_type(Oid type);
// An aggregate's argument without the implicit casts to float8 the parser
// added (int2/4/8, float4, numeric -> float8): the Var, or nullptr.
Var* aqp_strip_to_var(Node* node);

// ---- in box/planner.cpp ----------------------------------------------------------------
// The create_upper_paths_hook: the query's shape, the synopsis that answers it,
// the CustomPath over a fresh exact child; else the reason for last_run().
extern create_upper_paths_hook_type aqp_prev_upper_paths_hook;
// Does the type of synopsis column j allow GROUP BY on it (dictionary columns,
// integers, dates)? Decided by type alone; the groups' boxes treat it as exact.
struct TableSynopsis;
bool aqp_group_column_ok(const TableSynopsis* ts, int j);
// Does row-level security apply to the table's range-table entry? A synopsis
// (box path) or sample (sample path) holds every row. By planning time the
// rewriter has put the policies of the role the entry is checked as (a view's
// owner for an owner-rights view, else the caller) into its securityQuals;
// judged for that role too (checkAsUser). *env_dependent: exempt only by the
// role or row_security (the plan depends on the role).
bool aqp_row_security_applies(const RangeTblEntry* rte, bool* env_dependent);
void aqp_upper_paths(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel, RelOptInfo* output_rel,
                     void* extra);

// ---- in box/scan.cpp -----------------------------------------------------------------
// The CustomPath's plan, the CustomScan's methods and EXPLAIN.
extern const CustomPathMethods aqp_path_methods;
void aqp_scan_register(void);

// ---- in box/scan_exec.cpp, box/boxes.cpp (box/scan_state.h) -----------------------------
// The executor: the boxes of the conditions and groups, the engine's
// estimates, the rows or the fallback to the exact child plan.
