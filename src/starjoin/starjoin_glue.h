// The star-join glue (issue 39, item 2): the sample path's plan over the
// sample relation (aqp/sample.h) gets, through a create_upper_paths_hook on
// UPPERREL_GROUP_AGG active only while that plan is planned, one more path
// (PG-Strom's GpuPreAgg model): an "Approx Star Join" CustomScan that emits
// per group the group keys and each weighted aggregate's PARTIAL state
// (serialized, as a parallel worker's Partial Aggregate would), under a
// Finalize Aggregate the planner builds as for parallel aggregation.
// Everything above (HAVING, ORDER BY, LIMIT, the Approx Sample Scan's
// verdicts) stays PostgreSQL's and the sample path's. The node runs the
// star-join engine (core/starjoin/starjoin.hpp) on the device the session's
// settings pick; where the engine declines, it returns the rows of its child,
// the CPU Partial Aggregate of the same target.
//   starjoin/path.cpp      the hook, the shape, the path, the plan node, the setting
//   starjoin/compile.cpp   SQL expressions -> the engine's programs
//   starjoin/exec.cpp      the CustomScan at execution
// Includes aqp/aqp.h and aqp/sample.h only from the sample path's room.
#pragma once

#include "aqp/aqp.h"
#include "aqp/sample.h"

#include "core/starjoin/starjoin.hpp"

// approx_gpu.star_join: off, on (by cost), force (whenever the shape allows).
enum StarJoinMode { STAR_JOIN_OFF = 0, STAR_JOIN_ON = 1, STAR_JOIN_FORCE = 2 };
extern int starjoin_mode;

// The setting, the hook and the node's methods (from aqp_init).
void starjoin_init(void);
void starjoin_exec_register(void);
extern const CustomScanMethods starjoin_scan_methods;

// ---- compile.cpp --------------------------------------------------------------------
// What a plan's fact programs read: the fact relation's range-table index
// (Vars of other relations are not compiled) and the columns in the order
// the programs first read them (attribute numbers and engine types).
constexpr int kStarJoinMaxColumns = 64;
struct StarJoinCompiler {
    approx::starjoin::Plan* plan;  // code and pool are appended to
    Index fact_varno;
    int n_columns;
    AttrNumber attnos[kStarJoinMaxColumns];
    Oid types[kStarJoinMaxColumns];
    const char* failed;  // why not (the first reason)
};
// The engine type of a column of SQL type `type`; false: none.
bool starjoin_column_type(Oid type, approx::starjoin::ColType* out);
// The fact column index of attribute attno (added when new); -1: too many
// columns or a type the engine does not read (c->failed says why).
int starjoin_column(StarJoinCompiler* c, AttrNumber attno, Oid type);
// Compiles e into a program of kind `want` (quals: a List AND-ed, Bool);
// false and c->failed when some part is outside what the engine evaluates.
bool starjoin_compile(StarJoinCompiler* c, Node* e, approx::starjoin::Kind want, approx::starjoin::ProgramRef* out);
bool starjoin_compile_quals(StarJoinCompiler* c, List* quals, approx::starjoin::ProgramRef* out);

// ---- served.cpp: the star join through the GPU service ----------------------------------
// The fact columns' reader (exec.cpp): the sample relation's columns the
// programs read, the stratum last, into *fact (palloc'd).
typedef void (*StarJoinReadFact)(void* arg, approx::starjoin::Table* fact);
// Runs plan in the GPU service when the session's calls go there (device gpu,
// or auto and the sample's rows), reading the fact columns with read() only
// when the service does not hold them resident. True: *status is the answer
// (*out filled when ok). False: run it in the backend with *ctx (the
// service's fallback rule may have changed it); in->fact is set when read.
bool starjoin_run_served(Oid sample_relid, const StarJoinCompiler* c, AttrNumber stratum_attno,
                         const approx::starjoin::Plan* plan, approx::starjoin::Inputs* in, StarJoinReadFact read,
                         void* arg, approx::ExecContext* ctx, approx::starjoin::Result* out, approx::Status* status);

// ---- the node's private list (path.cpp writes, exec.cpp reads) ------------------------
// Integer sample_relid, Integer fact_varno, Integer stratum attno,
// List quals (Expr over the fact, never seen by setrefs), List group
// expressions (the group parts, in output order), List measures (Expr; an
// Integer 0 for COUNT(*)), List measure numbers (per measure an Integer:
// the weighted aggregates' measure argument, 0 for COUNT), List outputs (per
// output column an Integer: k >= 0 group part k, -1 - m the partial state
// of measure m).
struct StarJoinSpec {
    Oid sample_relid;
    Index fact_varno;
    AttrNumber stratum_attno;
    List* quals;
    List* groups;
    List* measures;
    List* measure_numbers;
    List* outputs;
};
List* starjoin_spec_form(const StarJoinSpec* spec);
void starjoin_spec_deform(List* priv, StarJoinSpec* spec);
