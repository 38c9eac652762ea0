// The sample path (DESIGN.md "Approximate aggregates in plain SQL"): the
// query planned again over the sampled table's sample relation with the
// weighted aggregates (aqp.h), run nested by an "Approx Sample Scan" over
// the exact plan. Planner side: sample/planner.cpp (the hook),
// sample/survey.cpp (the table and its synopsis), sample/rewrite.cpp
// (the copy over the sample), internal header sample/plan.h; the node:
// sample/scan.cpp, the rules that judge its answer (missing groups,
// empty executions, unseen strata): sample/verdict.cpp, its spec as nodes in
// aqp_plan_spec.cpp (beside the box path's); the weighted
// aggregates: sample/aggregates.cpp, their design stack and guard:
// sample/design.cpp, the measures whose spread they borrow:
// sample/measure.cpp; what the guard judges beyond each interval
// (ranking under LIMIT, HAVING): sample/judge.cpp.
#pragma once

#include "aqp/aqp.h"

extern "C" {
#include "nodes/params.h"
#include "nodes/plannodes.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

// What the node needs besides the two plans (custom_private, as plain nodes:
// aqp_sample_spec_form in aqp_plan_spec.cpp, plan kind AQP_PLAN_SAMPLE).
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
};

// An aggregate argument as a measure over the sample relation's columns
// (sample/measure.cpp): a copy when it is numeric columns, constants,
// built-in + - * / and casts between numeric types, each Var replaced by
// map_var's answer; nullptr otherwise (or when map_var gives nullptr).
Node* aqp_sample_measure_copy(Node* e, Node* (*map_var)(const Var*, void*), void* arg);
// One pass over the sample relation: per measure (aqp_sample_measure_copy's
// copies over this relation's columns) and stratum (1..n_strata, its last
// column) the moments of the measure's finite values on every row, in
// result_cxt; entry j is nullptr when measure j is not one the pass can
// evaluate. Raises nothing the measures' arithmetic could (it runs in
// double precision).
namespace approx::sample {
struct StratumSpread;
}
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
// Which approx_* aggregate a weighted Aggref stands for (false: none).
bool aqp_sample_weighted_kind(Oid fnoid, AqpAgg* out);
// The bytes a statement's spread pass over n_strata strata holds for
// n_measures measures, and why that is past approx_gpu.sample_max_state
// (nullptr: within it): the planner takes the exact path with that reason,
// and a plan made under a larger setting falls back at execution.
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

// approx_gpu.box_path (default on): off sends the box path's queries to the sample path.
extern bool aqp_box_path_enabled;
// approx_gpu.box_path_max_groups (default 16): a GROUP BY with more groups in
// the sample goes to the sample path (a box per group costs a pass over the sample each).
extern int aqp_box_path_max_groups;

// Why the box path did not answer the statement being planned (nullptr:
// it did not look); the sample path's own reason is added to it.
extern const char* aqp_box_path_reason;

// Settings, the planner hook, the node's methods (from aqp_init).
void aqp_sample_init(void);
void aqp_sample_scan_register(void);
// False while planning a statement the hook did not see: the library was
// loaded by that statement's planning (the aggregates' support function).
bool aqp_sample_path_considered(void);
// Is this CustomScan the box path's node?
bool aqp_is_box_scan(const CustomScan* cs);
// The exact statement with an Approx Sample Scan on top that runs `sample`
// first; plan-cache dependencies merged.
PlannedStmt* aqp_sample_wrap(PlannedStmt* exact, PlannedStmt* sample, const AqpSampleSpec* spec, int cursor_options);
// The node's custom_private: the spec and the sample plan (aqp_plan_spec.cpp);
// the reader takes the nodes back (they are not copied).
List* aqp_sample_spec_form(const AqpSampleSpec* spec, PlannedStmt* sample);
void aqp_sample_spec_deform(List* priv, AqpSampleSpec* spec, PlannedStmt** sample);
