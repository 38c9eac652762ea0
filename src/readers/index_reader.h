// Reads (id, score) pairs in descending score order from a B-tree index whose
// first key is the score column: an index scan of our own (no plan, no SPI),
// index-only where the index also holds the id column, as PostgreSQL's
// nodeIndexonlyscan.c does. Rows with a NULL score or a NULL id are skipped.
//
// Plain C-style interface: the reader is palloc'd in the current memory
// context and holds nothing with a destructor. Its scan, index and
// visibility-map pin are released by the resource owner if an ERROR
// intervenes; index_reader_close() releases them on the normal path.
#pragma once

#include "runtime/runtime.h"

extern "C" {
#include "utils/relcache.h"
#include "utils/snapshot.h"
}

// A valid, ready, non-partial B-tree index on `heap` whose first key is the
// plain column score_att with its type's default ordering; one that also
// holds id_att (as a key or INCLUDE column) is preferred, and *holds_id says
// whether the returned one does. InvalidOid when none: the caller sorts.
Oid index_reader_find(Relation heap, AttrNumber score_att, AttrNumber id_att, bool* holds_id);

struct IndexReader;

// Starts a descending scan of index_oid (from index_reader_find) under
// `snapshot` (an MVCC snapshot that outlives the reader). The score and id
// columns must be smallint, integer, bigint (id) or those, real and double
// precision (score). `heap` stays open (by the caller) until the reader is closed.
IndexReader* index_reader_open(Relation heap, Oid index_oid, AttrNumber score_att, AttrNumber id_att,
                               Snapshot snapshot);

// Up to `cap` next pairs into ids/scores; fewer than `cap`: the index is exhausted.
int64 index_reader_read(IndexReader* r, int64* ids, double* scores, int64 cap);

// Whether the reader answers from index tuples (heap visited only for pages
// not all-visible), and how many heap fetches it made so far.
bool index_reader_index_only(const IndexReader* r);
int64 index_reader_heap_fetches(const IndexReader* r);

// Ends the scan and closes the index (the reader's memory stays with its context).
void index_reader_close(IndexReader* r);
