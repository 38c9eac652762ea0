// Approximate aggregates in plain SQL (issue 13): the six approx_* aggregates,
// the planner hook that answers them from a table synopsis, and the CustomScan
// node that does it. Three files share this header:
//   aqp_aggregates.cpp  the aggregates over rows, their planner support
//                       function (the library's load point during planning)
//                       and the settings approx_gpu.confidence / max_relative_error;
//   aqp_planner.cpp     create_upper_paths_hook: recognition, reasons, the path;
//   aqp_scan.cpp        the CustomScan: plan, executor, EXPLAIN.
#pragma once

#include "runtime/runtime.h"

extern "C" {
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "optimizer/planner.h"
}

// Settings (defined by aqp_init).
extern double aqp_confidence;          // approx_gpu.confidence, (0, 1)
extern double aqp_max_relative_error;  // approx_gpu.max_relative_error, 0 = off

// _PG_init: settings, the hook, the CustomScan methods.
void aqp_init(void);
void aqp_define_settings(void);  // aqp_aggregates.cpp
// The create_upper_paths_hook (aqp_planner.cpp) and the hook it chains to.
extern create_upper_paths_hook_type aqp_prev_upper_paths_hook;
void aqp_upper_paths(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel, RelOptInfo* output_rel,
                     void* extra);

// Which approx_* aggregate an Aggref calls.
enum AqpAggKind { AQP_COUNT = 0, AQP_SUM = 1, AQP_AVG = 2 };
struct AqpAgg {
    AqpAggKind kind;
    bool ci;  // the _ci form (returns approx_estimate)
};
// True when fnoid is one of the six aggregates of the extension (cached OIDs,
// reset on any pg_proc change).
bool aqp_lookup_aggregate(Oid fnoid, AqpAgg* out);

// ---- the plan's box specification (custom_private) ---------------------------------
// Everything in custom_private is a List of Integer / String / Const nodes so
// that copyObject (plan cache) and outfuncs keep it. Layout:
//   [0] Integer relid, [1] Integer owner, [2] String synopsis name,
//   [3] Const int8 built (TimestampTz),
//   [4] List of Integer: synopsis column of each group Var (the first
//       entries of custom_scan_tlist, in order),
//   [5] List of Integer triples (kind, ci, synopsis column or -1): one per
//       Aggref (the remaining custom_scan_tlist entries, in order),
//   [6] List of conditions, each a List of Integer
//       (synopsis column, AqpCondKind, btree strategy or 0, custom_exprs index or -1),
//   [7] Integer: 1 when the groups are the synopsis's strata.
enum AqpCondKind {
    AQP_COND_CMP = 0,      // col op expr: strategy 1..5 (BTLess..BTGreater) or AQP_STRATEGY_NE
    AQP_COND_IN = 1,       // col = ANY (array expr)
    AQP_COND_NOT_IN = 2,   // col <> ALL (array expr)
    AQP_COND_IS_NULL = 3,
    AQP_COND_NOT_NULL = 4,
};
constexpr int AQP_STRATEGY_NE = 6;  // ROWCOMPARE_NE: `<>` found as the negator of `=`

enum AqpPrivate {
    AQP_PRIV_RELID = 0,
    AQP_PRIV_OWNER,
    AQP_PRIV_NAME,
    AQP_PRIV_BUILT,
    AQP_PRIV_GROUPS,
    AQP_PRIV_AGGS,
    AQP_PRIV_CONDS,
    AQP_PRIV_STRATA,
    AQP_PRIV_COUNT
};

// The CustomPath / CustomScan methods (aqp_scan.cpp).
extern const CustomPathMethods aqp_path_methods;
void aqp_scan_register(void);

// The CustomPath's custom_private: the plan spec's slots [0..7] (the
// aggregate slot still NIL), then
//   [8] List of Integer: the table attnum of each synopsis column,
//   [9] List of the condition expressions (become custom_exprs),
//   [10] List of the group Vars (in the order of slot [4]).
enum AqpPathPrivate { AQP_PATH_ATTNUMS = AQP_PRIV_COUNT, AQP_PATH_EXPRS, AQP_PATH_GROUP_VARS };

// An aggregate's argument without the implicit casts to float8 the parser
// added (int2/4/8, float4, numeric -> float8): the Var, or nullptr.
Var* aqp_strip_to_var(Node* node);
