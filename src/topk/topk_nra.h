// topk_nra's call state, shared by its phases (topk_nra.cpp) and by the
// relation and its sorted lists (topk_nra_lists.cpp): plain palloc'd data,
// so that nothing with a destructor is alive when an ERROR leaves the call.
#pragma once

#include "readers/index_reader.h"
#include "runtime/runtime.h"

extern "C" {
#include "utils/portal.h"
#include "utils/snapshot.h"
}

#include <type_traits>

#include "core/topk.hpp"

namespace topk = approx::topk;

// Frees the engine's memory when its memory context goes, on success or ERROR.
struct NraHolder {
    topk::Nra* nra;
};

struct ListReceiver;  // topk_nra_lists.cpp

// Everything one topk_nra call reads and produces; palloc'd, so nothing with a
// destructor is alive when an ERROR leaves nra_run().
struct NraCall {
    const char* fn;  // (value-initialised with new (...) NraCall(): every field zero)
    int m;
    int32 k;
    int32 batch;
    int64 rows_hint;
    const char** col;   // the score columns as given
    const char** qcol;  // r."column" (qualified with the relation's alias, quoted)
    const char* qid;    // r."id column"
    const char* qrel;   // "schema"."relation"
    Oid relid;
    Oid* index_oid;  // per list: the B-tree index read backward, or InvalidOid (a cursor)
    AttrNumber id_att;
    AttrNumber* att;  // per list: the score column's attribute number
    MemoryContext work;
    NraHolder* holder;
    // between the phases of nra_run()
    double* mins;           // the columns' minimums (the missing-score bounds)
    Relation heap;          // open while index readers are
    Snapshot snapshot;      // registered while index readers are
    IndexReader** readers;  // per list: an index reader, or nullptr (a cursor)
    Portal* portals;        // per list: a cursor, or nullptr (an index reader)
    ListReceiver* recv;     // the cursors' DestReceiver
    int8* read_kind;        // per list: 0 cursor, 1 index scan, 2 index-only scan
    int64 heap_fetches;     // by the index readers
    approx::ExecContext ctx;
    // results
    bool empty;  // no objects
    size_t n_out;
    int64_t* out_ids;
    double* out_totals;
    topk::NraInfo info;
    bool need_unlisted;
    int64 unlisted;
    int64 random_accesses;
    double ms_read;
};
static_assert(std::is_trivially_destructible<NraCall>::value, "an ERROR may leave nra_run() with it alive");

// The relation, its columns, the unique index on id_column and the index of
// each list (topk_nra_lists.cpp).
void nra_resolve_relation(Oid relid, const char* id_column, NraCall* c);
// Opens one reader per list (an index reader, else a cursor), reads up to
// c->batch entries of list j (the number read; scores checked finite), and
// ends them all.
void nra_open_lists(NraCall* c);
int64 nra_read_list(NraCall* c, int j, int64* ids, double* scores);
void nra_close_lists(NraCall* c);
