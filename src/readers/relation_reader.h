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
//   relation_strata.cpp      strata_count / strata_sample (stratified, census and
//                            partitioned-parent table synopses: two passes)
//   relation_stage.cpp       uploads to the GPU while reading
//   readers.cpp              the readers' settings, record_read
//   index_reader.h / .cpp    (id, score) pairs in score order from a B-tree index
#pragma once

#include "core/sample_census.hpp"
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
//
// bound (optional; top-k): the read is of two columns, an Integer id and a
// Float score, neither nullable, and every participant (the backend and each
// worker) keeps only the k rows it read that rank first by (score DESC, id
// ASC), or (score ASC, id ASC) when ascending -- topk::select's order -- so
// the result holds at most (workers + 1) * k rows, among them the k best of
// the table; rows_seen counts the rows offered (every row is still checked:
// NULLs skipped and counted, NaN an ERROR). Ignored (a full read) when the
// query reads the relation (views, row-level security) or k > kMaxBoundK.
struct ReadBound {
    int64 k;
    bool ascending;
};
constexpr int64 kMaxBoundK = 262144;  // 6 MB of kept rows per participant
QueryColumns read_relation_columns(const char* fn, const char* rel_arg, Oid relid, int ncols,
                                   const char* const* column_names, const char* const* column_args,
                                   const ColumnKind* kinds, bool allow_infinity, const bool* nullable = nullptr,
                                   bool stage_for_gpu = false, const ReadBound* bound = nullptr);

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

// The two passes of a stratified, census or partitioned-parent table synopsis
// build (relation_strata.cpp), read as sample_relation reads (parallel
// workers and the leader, the statement's snapshot). The relations are the
// synopsis' leaves (`rels`, one for a plain table; a leaf's index is part of
// its rows' keys and ids); `attnums` gives each leaf's column of each of the
// ncols columns read. A column's roles: checked finite (ERROR 22023 naming it,
// as sample_relation), a stratify column (keycols, in order: the key is the
// leaf's index, then each one's NULL flag and bytes; keylen / keybyval their
// types' typlen and typbyval), a census measure (measurecols). ERRORs only,
// no C++ object alive while it runs.
constexpr uint8 kStrataCheck = 1;
struct StrataRead {
    const char* fn;
    const char* relname;
    Relation top;
    int nrels;
    Relation* rels;
    int ncols;
    const AttrNumber* attnums;  // nrels * ncols
    const Oid* types;
    const char* const* names;
    const uint8* roles;
    int nkeys;
    const int16* keycols;
    const int16* keylen;
    const bool* keybyval;
    // census: each measure's `room` rows of largest |value| (ties by
    // census_key(row id, leaf OID)) and its spread; census_on: the values are
    // synopsis columns (column_number: not finite is an ERROR), else
    // candidates (measure_number: such values are left out). nmeasures 0: none.
    int nmeasures;
    const int16* measurecols;
    bool census_on;
    int64 census_room;
    // counting: also the `bottom` rows of smallest hash(seed, leaf, TID) of
    // all (sample_relation's sample for one leaf), seed `seed`; 0: none
    int64 bottom;
    uint64 seed;
};
// How a pass was read (last_run()).
struct StrataReadStats {
    double ms_read;
    const char* read_path;  // "parallel scan" or "scan"
    int read_workers;
    int64 worker_rows;
};
// The counting pass: every distinct key with its rows, every measure's heap
// (census_room entries at most, unsorted) and spread.
struct StrataCounts {
    int64 rows;
    int64 nkeys;
    const char** key;  // key[i]: len[i] bytes
    uint32* len;
    int64* count;
    approx::sample::CensusEntry** heap;
    int64_t* heap_n;
    approx::sample::CensusSpread* spread;
    StrataReadStats stats;
    void* table;  // the keys' index (strata_find_key)
    uint64* bottom_ids;  // r->bottom: min(rows, bottom) row ids, smallest (hash, id) first
    int64 nbottom;
};
StrataCounts strata_count(const StrataRead* r);
// The index of a key in c->key (-1: none).
int64 strata_find_key(const StrataCounts* c, const char* key, uint32 len);
// The sampling pass: `stratum[i]` (-1: none) of each key of the counting
// pass, the alloc rows of smallest hash(seed, leaf, TID) of each of the
// nstrata strata, rows whose id is in census_ids (sorted) left out. ids
// holds stratum s's size[s] <= alloc[s] row ids at begin[s] = the sum of the
// allocs before s, in id order.
struct StrataSample {
    uint64* ids;
    int64* begin;
    int64* size;
    StrataReadStats stats;
};
StrataSample strata_sample(const StrataRead* r, const StrataCounts* keys, const int64* stratum, int64 nstrata,
                           const int64* alloc, const uint64* census_ids, int64 ncensus, uint64 seed);
// A row's binary key (values and isnull in the read's column order) into
// *buf (palloc'd, grown as needed; *cap its size); its length.
uint32 strata_row_key(const StrataRead* r, int leaf, const Datum* values, const bool* isnull, char** buf, Size* cap);
// The stratify values of a key (varlena values palloc'd).
void strata_key_values(const StrataRead* r, const char* key, uint32 len, int* leaf, Datum* values, bool* isnull);
// A row id's leaf and TID.
inline int strata_id_leaf(uint64 id) { return static_cast<int>(id >> 48); }
inline void strata_id_tid(uint64 id, ItemPointerData* tid) {
    ItemPointerSet(tid, static_cast<BlockNumber>((id >> 16) & 0xFFFFFFFF), static_cast<OffsetNumber>(id & 0xFFFF));
}
