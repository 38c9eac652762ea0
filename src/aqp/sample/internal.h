// Declarations the sample path's files share (aqp/sample.h lists them);
// included only inside src/aqp/sample/.
#pragma once

#include "aqp/sample.h"

extern "C" {
#include "nodes/params.h"
#include "nodes/plannodes.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

// ---- the sample path's weighted aggregates (sample/design.cpp: the design stack,
// ---- the guard, the OIDs; sample/aggregates.cpp: the aggregates; the estimates
// ---- and intervals: src/core/sample_estimate.hpp) -----------------------------------------
// The sample path (src/aqp/sample/) plans the query again with the sampled
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

// ---- exact_pass.cpp: the star join once more over the whole table ---------------------------
enum { AQP_EXACT_PASS_OFF = 0, AQP_EXACT_PASS_ON = 1, AQP_EXACT_PASS_FORCE = 2 };
extern int aqp_exact_pass_mode;
void aqp_exact_pass_init(void);  // the setting
// Why the exact pass may not read `table` (nullptr: it may).
const char* aqp_exact_pass_refusal(Oid table);
// Around the plan's second run: the star-join node reads `table` for sample_relid.
void aqp_exact_pass_begin(Oid sample_relid, Oid table);
void aqp_exact_pass_end(void);
// The census design of that run (one stratum, weight 1), with the measures.
AqpSampleDesign aqp_exact_pass_design(Oid sample_relid, List* measures);
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
// (AqpSampleGroups: aqp.h, beside the missing-groups rule.)
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
// The pg_proc OID of the weighted form of `agg` (cached, reset on any pg_proc change).
Oid aqp_sample_aggregate(AqpAgg agg);

// What the node needs besides the two plans (custom_private, as plain nodes:
// aqp_sample_spec_form in sample/spec.cpp, plan kind AQP_PLAN_SAMPLE).
struct AqpSampleSpec {
    Oid relid;  // the synopsis, pinned again by this identity at execution
    Oid owner;
    const char* synopsis;
    TimestampTz built;
    Oid sample_relid;
    int64 sample_rows;
    // The aggregated top level's LIMIT / OFFSET expressions (constant-folded;
    // nullptr: none), taken off the sample plan so that the checks see every
    // group; the node evaluates them and applies them after the checks. Left
    // in the sample plan (nullptr here) only for WITH TIES or a subquery.
    Node* limit_count;
    Node* limit_offset;
    bool grouped;  // the aggregated level has GROUP BY (a group the sample missed is missing)
    bool groups_within_strata;  // GROUP BY includes every stratify column (AqpSampleDesign)
    bool role_dependent;  // planning only: a synopsis of some role was considered
    // SQL counting the groups the other tables allow (an upper bound), or
    // nullptr: some group key is not a dimension's (sample/domain.cpp).
    const char* domain_sql;
    // The SUM / AVG arguments whose spread the final functions borrow, over
    // the sample relation's columns (sample/measure.cpp); the weighted
    // aggregates name theirs by position (AqpSampleDesign::measures). Only
    // those the role the plan was made for (spread_role) may borrow: another
    // role running the plan borrows none (sample/rewrite.cpp).
    List* measures;
    Oid spread_role;
    // What the guard judges besides each interval (sample/judge.cpp).
    // The sample plan's output has hidden_columns more columns than the
    // query's, after them: rank_column (1-based, 0: none), the interval
    // (_ci) of the approximate aggregate the LIMIT ranks by, rank_desc its
    // direction; having_column (0: none), the HAVING moved out of the sample
    // plan (the node keeps the rows where it is true), having_checks its
    // `aggregate op constant` conjuncts, each a List (Integer column of the
    // aggregate's interval, Integer btree strategy of `interval op
    // threshold`, Const float8 threshold). unjudged: why the guard cannot
    // judge what the query does with an approximate value (nullptr: it can).
    int hidden_columns;
    int rank_column;
    bool rank_desc;
    int having_column;
    List* having_checks;
    const char* unjudged;
    // Why the sample plan has no Approx Star Join (src/starjoin/), when its
    // planning said (nullptr: nothing said); shown by EXPLAIN.
    const char* star_join;
};

// An aggregate argument as a measure over the sample relation's columns
// (sample/measure.cpp): a copy when it is numeric columns, constants,
// built-in + - * / and casts between numeric types, each Var replaced by
// map_var's answer; nullptr otherwise (or when map_var gives nullptr).
Node* aqp_sample_measure_copy(Node* e, Node* (*map_var)(const Var*, void*), void* arg);
// What qualifies, for the copy and for the pass that evaluates it
// (sample/measure.cpp): a built-in arithmetic operator over numeric types,
// its symbol ('\0': not one); a built-in cast from one numeric type to
// another; an integer type.
char aqp_sample_measure_operator(const OpExpr* op);
bool aqp_sample_measure_cast(const FuncExpr* f);
bool aqp_sample_integer_type(Oid type);
// One pass over the sample relation (sample/measure_spread.cpp): per
// measure (aqp_sample_measure_copy's copies over this relation's columns)
// and stratum (1..n_strata, its last column) the moments of the measure's
// finite values on every row, in result_cxt; entry j is nullptr when
// measure j is not one the pass can evaluate. Raises nothing the measures'
// arithmetic could (it runs in double precision).
namespace approx::synopsis {
struct Synopsis;
}
approx::sample::StratumSpread** aqp_sample_measure_spreads(Oid sample_relid, int n_strata, List* measures,
                                                          MemoryContext result_cxt);

// The guard's judgement of ranking and HAVING over approximate aggregates
// (sample/judge.cpp). At planning, after the weighted forms replaced the
// approx_* Aggrefs of q (the aggregated level of the statement copy): adds
// the hidden columns and fills the spec's judgement fields.
// At execution, with the guard set: nullptr when every row the node returns
// is the exact answer's within the intervals, else why not (the store is
// read and rewound).
void aqp_sample_judge_plan(Query* copy, Query* q, AqpSampleSpec* spec);
const char* aqp_sample_judge(const AqpSampleSpec* spec, Tuplestorestate* store, TupleTableSlot* slot, int64 offset,
                             int64 count);
// Whether a row of the sample plan's output passes the moved HAVING.
bool aqp_sample_having_passes(const AqpSampleSpec* spec, TupleTableSlot* slot);
// (aqp_sample_weighted_kind: aqp/sample.h)
// The bytes a statement's spread pass (sample/measure_spread.cpp) over
// n_strata strata holds for n_measures measures, and why that is past
// approx_gpu.sample_max_state (nullptr: within it): the planner takes the
// exact path with that reason, and a plan made under a larger setting falls
// back at execution.
double aqp_sample_state_bytes(int n_strata, int n_measures);
const char* aqp_sample_state_problem(int n_strata, int n_measures);
// approx_gpu.sample_max_state (kB, superuser): that budget;
// approx_gpu.sample_spread_cache_size (kB, superuser): the spreads a backend keeps.
extern int aqp_sample_max_state_kb;
extern int aqp_sample_spread_cache_kb;

// The rules that judge the sample plan's answer (sample/verdict.cpp),
// for the node: each gives why the exact plan must answer, or nullptr.
struct AqpSampleVerdict {
    const AqpSampleSpec* spec;
    const approx::synopsis::Synopsis* model;  // the pinned synopsis' model
    Tuplestorestate* store;                   // the sample plan's rows (before the node's LIMIT)
    TupleTableSlot* slot;                     // a slot for them
    ParamListInfo params;                     // the statement's, for the group bound
    double allowed;                           // the groups the other tables allow (-1: no bound)
    bool allowed_read;                        // allowed is counted (at most once per statement)
};
// The groups the other tables allow (aqp_sample_domain_groups), counted once.
double aqp_sample_groups_allowed(AqpSampleVerdict* v);
// Before the sample plan runs: under the guard a GROUP BY that may miss
// groups and has no group bound to prove otherwise.
const char* aqp_sample_groups_unbounded(AqpSampleVerdict* v);
// After it ran, with the LIMIT / OFFSET the node applies.
const char* aqp_sample_verdict(AqpSampleVerdict* v, int64 offset, int64 count);

// Runs aqp_sample_domain_sql's text (SPI, the statement's snapshot); -1: no answer.
double aqp_sample_domain_groups(const char* sql, ParamListInfo params);

// The sample plan's custom node (the star join's), if any: its name.
const char* aqp_sample_custom_node(Plan* p);
// The node's methods (from aqp_sample_init).
void aqp_sample_scan_register(void);
// The exact statement with an Approx Sample Scan on top that runs `sample`
// first; plan-cache dependencies merged.
PlannedStmt* aqp_sample_wrap(PlannedStmt* exact, PlannedStmt* sample, const AqpSampleSpec* spec, int cursor_options);
// The node's custom_private: the spec and the sample plan (sample/spec.cpp);
// the reader takes the nodes back (they are not copied).
List* aqp_sample_spec_form(const AqpSampleSpec* spec, PlannedStmt* sample);
void aqp_sample_spec_deform(List* priv, AqpSampleSpec* spec, PlannedStmt** sample);
