// The sample path (DESIGN.md, "Approximate aggregates in plain SQL"): the
// query planned again over the sampled table's sample relation with each
// approx_* aggregate replaced by its weighted (Horvitz-Thompson) form, run
// nested by an "Approx Sample Scan" over the exact plan. The one header of
// src/aqp/sample/ for the rest of the code. Its files:
//   planner side   sample/planner.cpp (planning over the sample, its
//                  settings), sample/survey.cpp (the table and its synopsis),
//                  sample/rewrite.cpp (the copy over the sample),
//                  sample/domain.cpp (the groups the other tables allow);
//                  internal header sample/plan.h
//   the node       sample/scan.cpp, its spec as nodes: sample/spec.cpp; the
//                  rules that judge its answer (missing groups, empty
//                  executions, unseen strata): sample/verdict.cpp; what the
//                  guard judges beyond each interval (ranking under LIMIT,
//                  HAVING): sample/judge.cpp
//   the weighted   sample/aggregates.cpp (COUNT / SUM / AVG),
//   aggregates     sample/percentiles.cpp (internal header
//                  sample/aggregates.h), their design stack and guard:
//                  sample/design.cpp, the measures whose spread they borrow:
//                  sample/measure.cpp (the planner's copy over the sample),
//                  sample/measure_spread.cpp (the pass over the sample at
//                  execution, the spreads each backend keeps)
// Declarations they share: sample/internal.h (included only inside
// src/aqp/sample/).
#pragma once

#include "aqp/aqp.h"

extern "C" {
#include "nodes/params.h"
#include "nodes/plannodes.h"
}

// Its settings and the node's methods (from aqp_init).
void aqp_sample_init(void);
// Does the statement hold approx_* aggregates the sample path may answer (a
// cheap walk, before planning)?
bool aqp_sample_candidate(Query* parse);
// The sample path's answer to `copy` (the statement before planning): the
// exact statement with an Approx Sample Scan on top that runs the plan over
// the sample first, or nullptr and *reason (nullptr: no reason to report).
// Marks `exact` role-dependent when a synopsis of some role was considered.
PlannedStmt* aqp_sample_plan(PlannedStmt* exact, Query* copy, const char* query_string, int cursor_options,
                             ParamListInfo params, const char** reason);
