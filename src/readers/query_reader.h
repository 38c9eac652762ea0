// Reads the rows of an inner SQL query (pgRouting style: 'SELECT id, x, y FROM
// t WHERE ...') straight into columnar buffers: the query runs through SPI
// under the caller's privileges with a DestReceiver that appends each needed
// column to a growing array (no SPI_tuptable, no text conversion).
#pragma once

#include "runtime/runtime.h"

extern "C" {
#include "executor/tuptable.h"
}

// The one DestReceiver of inner queries: runs `query` (a single query that
// returns rows, a SELECT; ERROR otherwise) through SPI in the current user
// and security context and hands its rows to the sink: startup(ctx, desc)
// once, then row(ctx, slot) for each row. `fn` and `arg` name the function and
// the argument in errors. The query runs read-only (SPI's read_only: the
// calling statement's snapshot, no CommandCounterIncrement), so it also runs
// inside a parallel operation such as CREATE TABLE AS with a parallel plan,
// and a data-modifying query is refused.
struct RowSink {
    void (*startup)(void* ctx, TupleDesc desc);
    void (*row)(void* ctx, TupleTableSlot* slot);
    void* ctx;
};
void run_inner_query(const char* fn, const char* arg, const char* query, const RowSink& sink);

enum class ColumnKind {
    Integer,  // int2, int4 or int8 -> int64 (anything else: ERROR 42804, no rounding)
    Float,    // float8, float4, int2, int4 or int8 -> double
};

// The types a column of kind k accepts (t: a base type; domains read as
// theirs), their names for errors, and a value of such a type as int64 or
// double (shared with the relation reader).
bool column_type_ok(ColumnKind k, Oid t);
const char* column_kind_types(ColumnKind k);
int64 integer_datum(Datum d, Oid t);
double float_datum(Datum d, Oid t);

struct StagedInput;  // relation_reader.h: columns uploaded to the GPU while read

struct QueryColumns {
    int ncols;
    int64 rows;             // rows kept
    int64 rows_skipped;     // rows with a NULL in a needed (non-nullable) column
    int64* ints[8];         // ints[c] for Integer columns (nullptr otherwise)
    double* floats[8];      // floats[c] for Float columns
    bool* nulls[8];         // nulls[c][row] for nullable columns (nullptr otherwise or when no row came); value 0 there
    int64 null_counts[8];   // NULLs kept per nullable column
    double ms_read;         // time spent running the query and collecting rows
    const char* read_path;  // how the rows were read, for last_run(): "query", "parallel scan", ...
    int read_workers;       // parallel workers that read besides the backend
    int read_workers_planned;  // the workers asked for (approx_gpu.read_workers, relation_parallel.cpp)
    int64 worker_rows;      // rows (kept or skipped) those workers read
    int64 rows_seen;        // a bounded read (relation_reader.h, ReadBound): the rows offered to the
                            // participants' bounds, of which `rows` were kept; else 0
    int64 chunk_waits;      // times a worker waited for the backend to take its rows
    StagedInput* staged;    // non-null: the columns are on the GPU too (relation_reader.h)
};

// Room for `need` rows in out's columns (out->ncols of them; nulls[c] for
// nullable ones), growing every buffer to the next power-of-two multiple of
// 16384 rows past *capacity; huge allocations allowed, transparent huge pages
// requested for large ones. Shared by the query and relation readers.
void reserve_columns(QueryColumns* out, const ColumnKind* kinds, const bool* nullable, MemoryContext mcxt,
                     int64* capacity, int64 need);

// Runs `query` (must be a single SELECT returning exactly `ncols` columns of
// the given kinds) and returns its columns, allocated in the current memory
// context. `fn` and `arg` name the function and the argument in errors;
// `column_names` name each column in errors ("key", "value", ...).
// float values must be finite unless allow_infinity (NaN is always an error).
// nullable (optional, one flag per column): a NULL in a nullable column keeps
// the row and is recorded in nulls[c]; a NULL in any other column skips it.
QueryColumns read_query_columns(const char* fn, const char* arg, const char* query, int ncols, const ColumnKind* kinds,
                                const char* const* column_names, bool allow_infinity, const bool* nullable = nullptr);
