// The box path (DESIGN.md, "Approximate aggregates in plain SQL"): a
// single-table grouped query whose WHERE is an AND of column-vs-value
// comparisons, answered from a table synopsis by an "Approx Synopsis Scan",
// one box per group present in the sample, every box in one engine call per
// aggregate kind; the exact aggregation plan is its child, for the fallback.
// The one header of src/aqp/box/ for the rest of the code. Its files:
//   box/planner.cpp      the create_upper_paths_hook: the query's shape, the
//                        synopsis that answers it, the CustomPath; its settings
//   box/query_shape.cpp  recognition of the query shape it answers
//   box/spec.cpp         its plan spec as nodes (AqpPlanSpec)
//   box/scan.cpp         the CustomScan's plan, methods and EXPLAIN
//   box/scan_exec.cpp    its executor; box/boxes.cpp the conditions and groups as boxes
// Declarations they share: box/internal.h, box/scan_state.h (included only
// inside src/aqp/box/).
#pragma once

#include "aqp/aqp.h"

// Its settings, the create_upper_paths_hook and the CustomScan methods (from aqp_init).
void aqp_box_init(void);
// Is this CustomScan the box path's node?
bool aqp_is_box_scan(const CustomScan* cs);
// Why the box path did not answer the statement being planned (nullptr:
// it did not look); the sample path's own reason is added to it.
extern const char* aqp_box_path_reason;
