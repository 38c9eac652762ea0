// Reads named columns of a table straight into columnar buffers, with
// PostgreSQL's parallel machinery: the extension's own parallel workers
// (CreateParallelContext + a parallel table scan per heap) deform only the
// needed attributes and fill fixed-width column chunks in dynamic shared
// memory; the leader scans too and appends finished chunks to the result.
//
// Semantics are those of `SELECT col, ... FROM relation` run by the caller:
// the statement's snapshot; SELECT privilege on the table or on every column
// read (ERROR 42501 otherwise); partitioned tables and inheritance parents
// read every child, through the parent's privileges. Where a direct read
// would not be what that query returns -- row-level security applies to the
// caller, or the relation is a view or a foreign table -- the query itself
// runs through SPI (read_query_columns) instead.
//
// The readers folder:
//   query_reader.h / .cpp    inner queries through SPI into columns (read_query_columns)
//   relation_reader.h        this interface; relation_scan.h its internal half (DSM
//                            layout, chunk and sample protocols, page scans)
//   relation_reader.cpp      read_relation_columns: resolve, plan, run (the backend's side)
//   relation_parallel.cpp    the worker count, the parallel context, waiting for workers
//   relation_scan.cpp        one participant's page scans, the workers' entry point
//   relation_sample.cpp      sample_relation (table synopses)
//   relation_stage.cpp       uploads to the GPU while reading
//   readers.cpp              the readers' settings, record_read
//   index_reader.h / .cpp    (id, score) pairs in score order from a B-tree index
#pragma once

#include "readers/query_reader.h"

extern "C" {
#include "storage/itemptr.h"
#include "utils/relcache.h"
}

// Settings of the reader (approx_gpu.read_workers); called from _PG_init.
void readers_init(void);

// The `ncols` columns `column_names` of `relid` (the function's argument
// `rel_arg`; `column_args[c]` names the argument that gave column c) as
// QueryColumns, allocated in the current memory context, with the same rules
// as read_query_columns: kinds (Integer: int2/int4/int8 only, ERROR 42804
// otherwise; Float: float4/float8 or an integer type), NaN always an ERROR,
// ±Infinity unless allow_infinity; a NULL in a nullable column is recorded in
// nulls[c], a NULL elsewhere skips the row (counted).
// Runs ERRORs (never C++ exceptions) and must be called with no C++ object
// that owns resources alive: waiting for workers processes interrupts.
// stage_for_gpu: when the engine call will run on the GPU (approx_gpu.device,
// the table's size), the columns are also uploaded while they are read
// (out.staged; the upload overlaps the workers' reading): pass
// staged_columns(&out) in ExecContext::staged to the engine, and
// release_staged(&out) after it (an ERROR frees them with the memory context).
QueryColumns read_relation_columns(const char* fn, const char* rel_arg, Oid relid, int ncols,
                                   const char* const* column_names, const char* const* column_args,
                                   const ColumnKind* kinds, bool allow_infinity, const bool* nullable = nullptr,
                                   bool stage_for_gpu = false);

namespace approx::gpu {
struct StagedColumns;
}
const approx::gpu::StagedColumns* staged_columns(const QueryColumns* in);
void release_staged(const QueryColumns* in);

// last_run() after the engine call: how the input was read ("read": "parallel
// scan", "scan" or "query ..."), the workers that helped, rows per second.
void record_read(const QueryColumns* const* inputs, int n);

// A uniform sample of up to `sample_m` visible rows of table `rel` (open,
// privileges checked by the caller), read as read_relation_columns reads
// (parallel workers, the statement's snapshot): every row's `ncheck` columns
// `attnums` (types `types`, names `names`; numbers, numerics, dates,
// timestamps) must be finite (ERROR 22023 naming the column otherwise). The
// sample is the rows of smallest hash(seed, TID): with a fixed seed the same
// rows whatever the workers or the path. For table synopses; ERRORs only, no
// C++ object alive while it runs.
struct RelationSample {
    int64 rows;             // visible rows
    int64 m;                // rows sampled: min(rows, sample_m)
    ItemPointerData* tids;  // m TIDs, in TID order (fetch them with the same snapshot)
    double ms_read;
    const char* read_path;  // "parallel scan" or "scan"
    int read_workers;
    int64 worker_rows;  // rows the workers read
};
RelationSample sample_relation(const char* fn, Relation rel, int ncheck, const AttrNumber* attnums, const Oid* types,
                               const char* const* names, int64 sample_m, uint64 seed);
