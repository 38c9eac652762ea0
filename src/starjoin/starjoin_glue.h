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
//   starjoin/dims.cpp      the join's shape: the fact, its dimensions, their keys
//   starjoin/compile.cpp   SQL expressions -> the engine's programs
//   starjoin/tables.cpp    the tables the programs read; a spec's whole plan
//   starjoin/read.cpp      the tables' columns at execution, text dictionaries, lookups
//   starjoin/cache.cpp     the backend's kept reads, while a table's version proves them
//   starjoin/exec.cpp      the CustomScan at execution
// Includes aqp/aqp.h and aqp/sample.h only from the sample path's room.
#pragma once

#include "aqp/aqp.h"
#include "aqp/sample.h"

#include "core/starjoin/starjoin.hpp"

extern "C" {
#include "nodes/pathnodes.h"
#include "utils/snapshot.h"
}

// approx_gpu.star_join: off, on (by cost), force (whenever the shape allows).
enum StarJoinMode { STAR_JOIN_OFF = 0, STAR_JOIN_ON = 1, STAR_JOIN_FORCE = 2 };
extern int starjoin_mode;

// The setting, the hook and the node's methods (from aqp_init).
void starjoin_init(void);
void starjoin_exec_register(void);
extern const CustomScanMethods starjoin_scan_methods;

// ---- compile.cpp, tables.cpp --------------------------------------------------------------------
// The tables a plan's programs read: table 0 the fact (the sample relation),
// table 1 + d the plan's dimension d; per table its range-table index and
// the columns in the order the programs first read them (attribute numbers
// and SQL types; a dimension's key is its column 0). A fact program reads a
// dimension's column through that dimension's output program `Col k`
// (DimOut); text columns are dictionary codes (ColType::Code), and a
// predicate over one text column is a Lookup whose table the node fills at
// execution (StarJoinLookup: by evaluating the expression with PostgreSQL's
// executor once per distinct value).
constexpr int kStarJoinMaxColumns = 64;
struct StarJoinTable {
    Index varno;
    Oid relid;
    int n_columns;
    AttrNumber attnos[kStarJoinMaxColumns];
    Oid types[kStarJoinMaxColumns];
    int n_outputs;  // dimensions: the output programs, each `Col output_columns[o]`
    int output_columns[approx::starjoin::kMaxDimOutputs];
};
struct StarJoinLookup {
    int table, column;  // the text column whose codes it maps
    Node* expr;         // the predicate (Bool) over that one column's Var
    Var* var;
    int32 instr;        // the Lookup instruction (index in plan->code) to patch
};
struct StarJoinCompiler {
    approx::starjoin::Plan* plan;  // code and pool are appended to
    int n_tables;                  // 1 + dimensions
    StarJoinTable tables[1 + approx::starjoin::kMaxDims];
    int current;                   // the table whose program is compiled
    List* lookups;                 // StarJoinLookup*, in emission order
    // Compiling a program the engine evaluates on other rows than
    // PostgreSQL's plan may (a dimension's filter: every dimension row; the
    // fact filter with join clauses: only rows that passed every join): no
    // operation that can raise.
    bool no_raise;
    const char* failed;            // why not (the first reason)
};
struct StarJoinSpec;
// The tables of spec (the fact, then its dimensions with their keys and
// foreign keys as the first columns); false and c->failed: a key type.
bool starjoin_compiler_init(StarJoinCompiler* c, approx::starjoin::Plan* plan, const StarJoinSpec* spec);
// The engine type of a column of SQL type `type`; false: none.
bool starjoin_column_type(Oid type, approx::starjoin::ColType* out);
// Column attno of table t (added when new); -1: too many columns or a type
// the engine does not read (c->failed says why).
int starjoin_column(StarJoinCompiler* c, int t, AttrNumber attno, Oid type);
// The table of range-table index varno; -1: none.
int starjoin_table_of(const StarJoinCompiler* c, Index varno);
// Compiles e into a program of table c->current of kind `want` (quals: a
// List AND-ed, Bool); false and c->failed when some part is outside what the
// engine evaluates.
bool starjoin_compile(StarJoinCompiler* c, Node* e, approx::starjoin::Kind want, approx::starjoin::ProgramRef* out);
bool starjoin_compile_quals(StarJoinCompiler* c, List* quals, approx::starjoin::ProgramRef* out);
// The fact filter (the fact's quals and the join clauses; no_raise when a
// clause reads a dimension).
bool starjoin_compile_fact_filter(StarJoinCompiler* c, List* quals, approx::starjoin::ProgramRef* out);
// The whole plan of spec (dimensions, fact filter, groups, measures, the
// stratum as the fact's last column); false and c->failed.
bool starjoin_compile_spec(StarJoinCompiler* c, const StarJoinSpec* spec, int n_strata);
// A GROUP BY expression that is a text column (the node outputs the
// dictionary's value of the code): its Var, else nullptr.
Var* starjoin_text_var(Node* e);

// ---- dims.cpp: the join's shape at planning ------------------------------------------
// input_rel: the sample relation alone or joined by inner joins to plain
// tables, each by one equality fact.fk = dim.key on a unique key. Fills
// spec->fact_varno and spec->dims, and *quals with the fact's quals and the
// join clauses other than the keys' (compiled into the fact filter);
// otherwise a reason.
const char* starjoin_recognise_join(PlannerInfo* root, RelOptInfo* input_rel, Oid sample, StarJoinSpec* spec,
                                    List** quals);

// ---- read.cpp: the tables at execution ------------------------------------------------
// A text column's dictionary: its distinct values (text Datums) by code.
struct StarJoinDictionary {
    int32 n;
    Datum* values;
};
// Reads table t's columns (plus, extra_attno > 0, that int4 column 1-based
// -> 0-based: the stratum; extra_attno < 0, a column of zeros: the exact
// pass's one stratum) under the snapshot: values at the engine type's
// width, NULL bitmaps where a NULL was seen, text as codes with their
// dictionaries (dicts[k], nullptr for other columns).
void starjoin_read_table(const StarJoinTable& t, Snapshot snapshot, AttrNumber extra_attno,
                         approx::starjoin::Column* cols, int64* rows, StarJoinDictionary** dicts);
// Appends each lookup's table (the predicate evaluated by PostgreSQL once per
// dictionary value) to the pool and points its instruction at it; false: a
// predicate not NULL of a NULL value (the engine cannot take it).
bool starjoin_fill_lookups(StarJoinCompiler* c, StarJoinDictionary** const* dicts);
// Whether t reads a text column (dictionary codes: the backend needs the dictionary).
bool starjoin_table_has_text(const StarJoinTable& t);

// ---- cache.cpp: the backend's kept reads -------------------------------------------------------
// approx_gpu.star_join_cache_size: MB of read tables a backend keeps.
extern int starjoin_cache_size_mb;
// The key of t's read: a hash of the table's version (readers/
// relation_version.h) and the columns read; 0 when no version proves the
// rows. *kept (may be null): whether this session keeps a read under it.
// Reads nothing; the same key within one statement names the same rows.
uint64 starjoin_table_key(const StarJoinTable& t, AttrNumber extra_attno, bool* kept);
// starjoin_read_table() through the backend's cache, t's key from
// starjoin_table_key: the kept read under that key, pinned until query_cxt
// goes; else a read (kept when key != 0 and it fits). True: the kept read
// was used (no row read).
bool starjoin_read_table_cached(const StarJoinTable& t, uint64 key, Snapshot snapshot, AttrNumber extra_attno,
                                MemoryContext query_cxt, approx::starjoin::Column* cols, int64* rows,
                                StarJoinDictionary** dicts);

// ---- served.cpp: the star join through the GPU service ----------------------------------
// The fact columns' reader (exec.cpp): the sample relation's columns the
// programs read, the stratum last, into *fact (palloc'd).
typedef void (*StarJoinReadFact)(void* arg, approx::starjoin::Table* fact);
// Runs plan in the GPU service when the session's calls go there (device gpu,
// or auto and the sample's rows), reading the fact columns with read() only
// when the service does not hold them resident. True: *status is the answer
// (*out filled when ok). False: run it in the backend with *ctx (the
// service's fallback rule may have changed it); in->fact is set when read.
// The dimensions (in->dims, read) stay resident in the service too when
// every one has a version (dim_keys[d] != 0, cache.cpp).
// The fact's columns stay resident under `key`, its version's
// (starjoin_table_key; 0: sent every time).
bool starjoin_run_served(const StarJoinTable* fact, uint64 key, const approx::starjoin::Plan* plan,
                         approx::starjoin::Inputs* in, const uint64* dim_keys, StarJoinReadFact read, void* arg,
                         approx::ExecContext* ctx, approx::starjoin::Result* out, approx::Status* status);

// ---- the node's private list (path.cpp writes, exec.cpp reads) ------------------------
// Integer sample_relid, Integer fact_varno, Integer stratum attno,
// List dims (per dimension a List: Integer varno, Integer relid, the fact's
// foreign-key Var, the dimension's key Var, List quals over the dimension),
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
    List* dims;
    List* quals;
    List* groups;
    List* measures;
    List* measure_numbers;
    List* outputs;
};
List* starjoin_spec_form(const StarJoinSpec* spec);
void starjoin_spec_deform(List* priv, StarJoinSpec* spec);
