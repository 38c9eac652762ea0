// Declarations the box path's files share (aqp/box.h lists them); included
// only inside src/aqp/box/.
#pragma once

#include "aqp/box.h"

// ---- the plan specification (in box/spec.cpp) ---------------------------------------------
// What an "Approx Synopsis Scan" answers (plan kind AQP_PLAN_BOXES, aqp.h).

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
// nullptr and *shape filled in when the query has the shape (some synopsis
// may answer it), else the reason.
const char* aqp_recognise_query(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel, AqpQueryShape* shape);
bool aqp_is_number_type(Oid type);
// An aggregate's argument without the implicit casts to float8 the parser
// added (int2/4/8, float4, numeric -> float8): the Var, or nullptr.
Var* aqp_strip_to_var(Node* node);

// ---- in box/planner.cpp ----------------------------------------------------------------
// The create_upper_paths_hook (installed by aqp_box_init): the query's shape,
// the synopsis that answers it, the CustomPath over a fresh exact child; else
// the reason for last_run(). Its settings (defined in aqp_box_init):
// approx_gpu.box_path (default on): off sends the box path's queries to the sample path.
extern bool aqp_box_path_enabled;
// approx_gpu.box_path_max_groups (default 16): a GROUP BY with more groups in
// the sample goes to the sample path (a box per group costs a pass over the sample each).
extern int aqp_box_path_max_groups;
extern int aqp_box_memory_limit_kb;  // approx_gpu.box_memory_limit (superuser-only)
// Does the type of synopsis column j allow GROUP BY on it (dictionary columns,
// integers, dates)? Decided by type alone; the groups' boxes treat it as exact.
struct TableSynopsis;
bool aqp_group_column_ok(const TableSynopsis* ts, int j);

// ---- in box/scan.cpp -----------------------------------------------------------------
// The CustomPath's plan, the CustomScan's methods and EXPLAIN.
extern const CustomPathMethods aqp_path_methods;
void aqp_scan_register(void);

// ---- in box/scan_exec.cpp, box/boxes.cpp (box/scan_state.h) -----------------------------
// The executor: the boxes of the conditions and groups, the engine's
// estimates, the rows or the fallback to the exact child plan.
