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

// ---- for the star-join glue (src/starjoin/): the sample plan answered by a CustomScan
// ---- that emits each group's partial weighted-aggregate states --------------------------
// The sample relation whose sample plan standard_planner is planning now
// (sample/planner.cpp); InvalidOid outside that call.
Oid aqp_sample_planning_relid(void);
// While it is planned: why the star-join path was not added (nullptr: it
// was); the Approx Sample Scan's EXPLAIN shows it (the first note is kept).
void aqp_sample_star_join_note(const char* note);
// At execution, what the star-join node did (1: the engine ran on the GPU,
// 0: on the CPU, -1: the engine declined and PostgreSQL's Partial Aggregate
// answered); the Approx Sample Scan's last_run() reports it as
// "star_join_device".
void aqp_sample_note_star_join_run(int device);
// Where it ran when the session's calls go to the GPU service (last_run()'s
// "star_join_service"): 0 in the backend (the service did not take it), 1 in
// the service with the sample's columns sent, 2 in the service from its
// resident copy of them (the backend read no row).
void aqp_sample_note_star_join_service(int how);
// How many of its tables the node took from the session's kept reads
// (starjoin/cache.cpp; last_run()'s "star_join_kept"), and how many it read.
void aqp_sample_note_star_join_reads(int kept, int read);
// Where its time went (last_run()'s "star_join_ms": the node's whole run --
// reads, lookups, the engine; through the GPU service also
// "star_join_service_ms", the round trip, and "star_join_engine_ms", the
// engine call in the service; a value < 0 is not reported).
void aqp_sample_note_star_join_ms(double node_ms, double round_trip_ms, double engine_ms);
// The exact pass (sample/exact_pass.cpp): while the Approx Sample Scan runs
// its plan once more over the synopsis' table, the table the star-join node
// reads instead of sample_relid (InvalidOid: none, the sample); whether
// approx_gpu.exact_pass = force (read the table now, else only when its
// columns are kept or resident). The node notes -1 (declined) when it
// cannot: the scan then runs PostgreSQL's exact plan.
Oid aqp_sample_exact_pass_table(Oid sample_relid);
bool aqp_sample_exact_pass_forced(void);
// Which approx_* aggregate a weighted Aggref stands for (false: none).
bool aqp_sample_weighted_kind(Oid fnoid, AqpAgg* out);
// The strata of the design pushed for sample_relid (the sample plan runs
// inside its Approx Sample Scan); -1: none pushed.
int aqp_sample_design_strata(Oid sample_relid);
// A group's partial state of sample_count / sample_sum / sample_avg as their
// serial function writes it (bytea): the sample, the measure argument (0 for
// COUNT) and per stratum (0-based, strictly increasing) the moments of the
// group's rows.
namespace approx::sample {
struct GroupPart;
}
bytea* aqp_sample_moment_state_bytes(Oid sample_relid, int measure, const approx::sample::GroupPart* parts,
                                     int n_parts);
