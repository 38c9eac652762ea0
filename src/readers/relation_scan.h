// The relation reader's shared pieces: the layout of its DSM block, the
// chunk protocol between the workers and the backend, and one participant's
// scan of one relation. Used by relation_reader.cpp (the backend) and
// relation_scan.cpp (the scans and the workers' entry point).
//
// Protocol. The leader puts one ReaderShared block in the parallel context's
// DSM: the column layout, one ParallelTableScanDesc per relation read, and a
// pool of chunks (4 per worker), each FREE, FILLING or FULL. A worker takes a
// FREE chunk, fills it from its share of the parallel scans, marks it FULL and
// wakes the leader (cv_full); with no FREE chunk it sleeps on cv_free. The
// leader copies FULL chunks into the result, frees them and wakes the workers;
// while no chunk is waiting it scans pages itself, straight into the result.
// Worker ERRORs reach the leader as ERRORs through the parallel context's
// error queues (CHECK_FOR_INTERRUPTS); a cancel of the leader aborts the
// transaction, which terminates the workers.
//
// Pages. A heap relation is read a page at a time, as heapgetpage() does:
// pin, share-lock, visibility per tuple (none on all-visible pages), then
// only the needed attributes are taken from each visible tuple in place
// (heap_getattr: fixed offsets while no NULL or varlena precedes them). Other
// table access methods, and SERIALIZABLE transactions (whose reads must take
// predicate locks tuple by tuple), go through the table AM's slots instead.
//
// Sampling (table synopses). With sample_m > 0 no chunks move: every
// participant (the leader is participant 0, worker w is w + 1) checks the
// listed columns of each visible row (finite values) and keeps, in its own
// SampleSlot, the sample_m rows of smallest priority = hash(seed, TID): a
// uniform sample without replacement that does not depend on who read which
// page, so the leader's merge of the slots is the same sample whatever the
// number of workers, the path or the order of the pages (fixed seed: the
// same synopsis). Only TIDs travel; the leader fetches the sampled rows.
//
// Strata (stratified, census and partitioned-parent table synopses,
// relation_strata.cpp). With strata_mode set no chunks move either: every
// participant gives each visible row a binary stratum key (the leaf's index,
// then each stratify column's NULL flag and bytes) in a table of its own. In
// the counting pass it counts rows per key, checks the listed columns and
// offers every census measure's value to its own heaps in the DSM (and,
// with strata_bottom, keeps the uniform sample's rows as sampling mode does); at the end
// a worker copies its keys and counts into a DSA allocation for the leader to
// merge. In the sampling pass every participant keeps, per stratum, the
// alloc rows of smallest hash(seed, leaf, TID) (bottom-k per stratum, merged
// by the leader as sampling mode merges one), census rows left out.
//
// Everything here is plain data and C-style functions: scans and waits
// process interrupts and may longjmp, so nothing may have a destructor.
#pragma once

#include "readers/query_reader.h"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "storage/bufmgr.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/shm_toc.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/rel.h"
#include "utils/snapshot.h"
}

#include "core/bottom_k.hpp"

namespace relscan {

constexpr int kMaxCols = 32;  // columns of one read (a synopsis has up to 32)
constexpr int kChunkRows = 16384;
constexpr int kChunksPerWorker = 4;
constexpr int kPageRows = MaxHeapTuplesPerPage;  // the most rows one scan step adds
constexpr uint64 kKeyShared = UINT64CONST(0xA99A000000000001);
constexpr uint64 kKeyScanBase = UINT64CONST(0xA99A000100000000);

enum ChunkState : uint32 { kFree = 0, kFilling = 1, kFull = 2 };

struct ChunkHeader {
    uint32 state;
    int32 rows;
    int64 skipped;
    int64 seen;  // bounded reads: the rows the worker offered to its bound (its first chunk)
    int64 null_counts[kMaxCols];
};

struct ReaderShared {
    char fn[64];
    char relname[2 * NAMEDATALEN + 2];
    NameData colnames[kMaxCols];
    int ncols;
    int nrels;
    int nchunks;
    bool allow_infinity;
    uint8 kinds[kMaxCols];
    bool nullable[kMaxCols];
    Oid types[kMaxCols];
    Size off_relids;   // Oid[nrels]
    Size off_attnums;  // AttrNumber[nrels * ncols]
    Size off_maxatt;   // AttrNumber[nrels]: highest attnum read, per relation
    Size off_headers;  // ChunkHeader[nchunks]
    Size off_data;     // nchunks chunks of chunk_bytes
    Size chunk_bytes;

    bool direct;  // heap relations are read page by page (see above)

    // Bounded reads (ReadBound, relation_bound.cpp): > 0: every participant
    // keeps its bound_k best rows and publishes only those, at its end.
    int64 bound_k;
    bool bound_asc;

    // Sampling mode (sample_m > 0): columns are only checked to be finite.
    int64 sample_m;
    uint64 sample_seed;
    int nslots;        // participants: the leader and the workers asked for
    Size off_samples;  // nslots slots of sample_bytes
    Size sample_bytes;

    // Strata modes (relation_strata.cpp): the columns' roles and key layout
    // (StrataCol[ncols] at off_cols, key and measure column indexes), the
    // participants' slots, the binary key -> stratum list of the sampling pass.
    int strata_mode;  // 0: none, 1: count, 2: sample
    Size off_cols;
    int nkeys;
    Size off_keycols;  // int16[nkeys]
    int nmeasures;
    Size off_measurecols;  // int16[nmeasures]
    bool census_on;        // measures are synopsis columns (NaN an ERROR) rather than candidates
    int64 census_room;
    int64 strata_bottom;  // counting: also keep the rows of smallest hash(seed, TID), this many
    Size off_strata;  // nslots slots of strata_slot_bytes
    Size strata_slot_bytes;
    dsa_handle area;  // where workers put their keys (counting)
    int64 nstrata;
    int64 capacity;       // sum of alloc
    Size off_alloc;       // int64[nstrata]; begin[nstrata] follows
    Size off_keylist;     // the sampling pass's key -> stratum list
    int64 nkeylist;
    Size off_census_ids;  // int64[ncensus], sorted
    int64 ncensus;

    slock_t mutex;  // chunk states, workers_done, chunk_waits
    int workers_done;
    int64 chunk_waits;          // times a worker found no FREE chunk
    ConditionVariable cv_full;  // a chunk became FULL or a worker finished: the leader waits on it
    ConditionVariable cv_free;  // a chunk became FREE: workers wait on it
};

template <class T>
inline T* at(const ReaderShared* sh, Size off) {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(const_cast<ReaderShared*>(sh)) + off);
}
inline const Oid* relids(const ReaderShared* sh) { return at<Oid>(sh, sh->off_relids); }
inline const AttrNumber* attnums(const ReaderShared* sh, int rel) {
    return at<AttrNumber>(sh, sh->off_attnums) + rel * sh->ncols;
}
inline AttrNumber max_attnum(const ReaderShared* sh, int rel) { return at<AttrNumber>(sh, sh->off_maxatt)[rel]; }
inline ChunkHeader* header(const ReaderShared* sh, int i) { return at<ChunkHeader>(sh, sh->off_headers) + i; }

// One participant's sample: the `size` (<= sample_m) rows of smallest
// (priority, tid) among the `rows` visible rows it read, as a max-heap, then
// priority[sample_m] and tid[sample_m] (ItemPointer packed: block << 16 | offset).
struct SampleSlot {
    int64 rows;
    int64 size;
};
inline SampleSlot* sample_slot(const ReaderShared* sh, int participant) {
    return at<SampleSlot>(sh, sh->off_samples + sh->sample_bytes * participant);
}
inline uint64* sample_priorities(SampleSlot* s) { return reinterpret_cast<uint64*>(s + 1); }
inline uint64* sample_tids(const ReaderShared* sh, SampleSlot* s) { return sample_priorities(s) + sh->sample_m; }
inline Size sample_slot_bytes(int64 m) { return MAXALIGN(sizeof(SampleSlot) + static_cast<Size>(m) * 16); }
inline uint64 pack_tid(const ItemPointerData* tid) {
    return (static_cast<uint64>(ItemPointerGetBlockNumberNoCheck(tid)) << 16) | ItemPointerGetOffsetNumberNoCheck(tid);
}
inline void unpack_tid(uint64 packed, ItemPointerData* tid) {
    ItemPointerSet(tid, static_cast<BlockNumber>(packed >> 16), static_cast<OffsetNumber>(packed & 0xFFFF));
}

// Columns being written: 8-byte values (int64 or double by kind), NULL flags
// for nullable columns. A chunk or the leader's result.
struct ColumnsView {
    char* values[kMaxCols];
    bool* nulls[kMaxCols];
};
ColumnsView chunk_view(const ReaderShared* sh, int i);

// One participant's scan of one relation: a heap read page by page, or the
// table AM's slots. step() appends at most kPageRows rows.
struct RelScan {
    const ReaderShared* sh;
    int index;  // which relation of sh
    Relation rel;
    bool direct;
    Snapshot snapshot;
    // direct
    ParallelBlockTableScanDesc pbscan;  // nullptr: serial
    ParallelBlockTableScanWorkerData pbwork;
    BufferAccessStrategy strategy;
    BlockNumber next_block;
    BlockNumber nblocks;
    // slots
    TableScanDesc scan;
    TupleTableSlot* slot;
    // sampling: this participant's slot; a context reset after each page
    // (numeric values are detoasted to be checked)
    SampleSlot* sample;
    MemoryContext tmp;
    struct StrataParticipant* strata;  // strata modes: the participant's state (across relations)
    struct BoundSlot* bound;           // bounded reads: the participant's best rows (across relations)
    Datum* values;                     // a row's columns (ncols)
    bool* isnull;
    Datum* row_values;  // strata modes: the row's first max_attnum attributes
    bool* row_isnull;
};

// Starts a scan of relation `index` of sh (pscan: its parallel scan, or
// nullptr for a scan of the whole relation by this participant alone) for
// participant `participant` (0: the leader).
void relscan_begin(RelScan* rs, const ReaderShared* sh, int index, Relation rel, ParallelTableScanDesc pscan,
                   Snapshot snapshot, int participant);
// Appends the rows of the next page (or the next kPageRows tuples) to dst at
// *rows (room for kPageRows more); false when the relation is done.
bool relscan_step(RelScan* rs, const ColumnsView& dst, int64* rows, int64* skipped, int64* null_counts);
void relscan_end(RelScan* rs);

// Sampling: 0 when a value of type t is finite, 1 for NaN, 2 for an infinity.
int non_finite(Datum d, Oid t);
// Bottom-k samples by (priority, row id): core/bottom_k.hpp.
using approx::bottom_offer;
using approx::bottom_add;
using approx::bottom_cut;
using approx::Ranked;
// A row's identity across the leaves: its relation's index, then its TID.
inline uint64 leaf_row_id(int index, const ItemPointerData* tid) {
    return (static_cast<uint64>(index) << 48) | pack_tid(tid);
}

// Strata modes (relation_strata.cpp): a participant's state, created before
// its first relation (participant 0 is the leader), one row, and the end of
// the participant's reading (a worker publishes its keys).
StrataParticipant* strata_participant(const ReaderShared* sh, int participant);
void strata_row(RelScan* rs, const ItemPointerData* tid);
void strata_publish(const ReaderShared* sh, StrataParticipant* p);

// Bounded reads (relation_bound.cpp): a participant's bound_k best rows of
// (id, score) as a max-heap on (score key, id key) -- topk.hpp's order, the
// root the first to go -- with the scores as read (-0 stays -0).
struct BoundSlot {
    int64 k;
    int64 size;
    int64 seen;     // rows offered
    int64 skipped;  // a worker's rows skipped (NULLs)
    bool asc;
    uint64* skey;
    uint64* ikey;
    double* score;
    int64 scratch[2];  // one row, converted and checked by the column reader's rules
    ColumnsView one;   // views scratch
};
BoundSlot* bound_slot(const ReaderShared* sh);
void bound_offer(BoundSlot* b, int64 id, double score);
// Rows [from, from + n) of the slot (in heap order) into dst at row `at`.
void bound_take(const BoundSlot* b, const ColumnsView& dst, int64 at, int64 from, int64 n);
// A worker's end: its rows, and its seen and skipped counts, in chunks.
void bound_publish(ReaderShared* sh, const BoundSlot* b);

// The chunk pool (relation_scan.cpp): a FREE chunk, taken (FILLING; waits
// for one), and a filled chunk marked FULL for the leader.
int acquire_chunk(ReaderShared* sh);
void publish_chunk(ReaderShared* sh, int i);

// ---- the leader's side, shared by the column reader and the sampler ----

// Workers for `pages` heap pages of `top` (approx_gpu.read_workers, else the
// table's parallel_workers, else PostgreSQL's rule; see relation_parallel.cpp),
// at most max_parallel_workers; none for temporary tables (any_temp), outside
// the postmaster or inside a parallel operation.
int choose_workers(Relation top, BlockNumber pages, bool any_temp);

// Where the common arrays of the shared block go (relids, attnums, maxatt);
// `end`: where the mode's own parts may start.
struct ReaderLayout {
    Size off_relids, off_attnums, off_maxatt, end;
};
ReaderLayout reader_layout(int nrels, int ncols);

// The shared block of `shared_bytes`, its first layout.end bytes zeroed: in
// a new parallel context for `nworkers` workers with one parallel table scan
// per relation (*pcxt, *pscans), or in private memory when nworkers = 0
// (*pcxt = nullptr, *pscans = nullptr). Then the common fields, as
// reader_shared_init fills them; the mode's own fields stay the caller's.
ReaderShared* reader_shared_create(int nworkers, Relation* rels, int nrels, Snapshot snapshot, Size shared_bytes,
                                   const ReaderLayout& layout, ParallelContext** pcxt, ParallelTableScanDesc** pscans);
void reader_shared_init(ReaderShared* sh, const ReaderLayout& layout, const char* fn, const char* relname,
                        Relation* rels, int nrels, int ncols, const char* const* colnames, const Oid* types,
                        const AttrNumber* atts, const AttrNumber* maxatt);
// Waits up to 100 ms for cv_full; raises the ERROR of a worker that stopped
// before finishing. true when all `launched` workers are done.
bool reader_wait_workers(ReaderShared* sh, ParallelContext* pcxt, int launched, const char* fn, const char* relname);
// Ends the parallel context (waits for the workers, leaves parallel mode).
void reader_shared_destroy(ParallelContext* pcxt);

// GPU staging of the result (relation_stage.cpp): nullptr when the engine
// will not run on the GPU or staging cannot start. stage_tail hands rows
// [queued, rows) of view to the GPU once 64K are waiting (all of them when
// final); stage_done hands the rest, waits and binds the final arrays (false:
// not staged after all).
extern bool upload_while_reading;  // approx_gpu.upload_while_reading
extern int read_workers;           // approx_gpu.read_workers (readers.cpp), -1 = auto
StagedInput* stage_start(int ncols, int64 expected_rows);
void stage_tail(StagedInput* s, const ColumnsView& view, int64 rows, bool final);
bool stage_done(StagedInput* s, const ColumnsView& view, int64 rows);
double stage_ms(const StagedInput* s);
double stage_wait_ms(const StagedInput* s);

}  // namespace relscan

// The parallel workers' entry point (looked up by name in this library).
extern "C" PGDLLEXPORT void approx_gpu_relation_reader_worker(dsm_segment* seg, shm_toc* toc);
