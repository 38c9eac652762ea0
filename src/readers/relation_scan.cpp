// One participant's scan of one relation, and the parallel workers' entry
// point (see relation_scan.h).
#include "readers/relation_scan.h"

extern "C" {
#include "access/heapam.h"
#include "access/parallel.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "pgstat.h"
#include "utils/date.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include <cmath>

#include "core/hash_mix.hpp"

namespace relscan {

ColumnsView chunk_view(const ReaderShared* sh, int i) {
    ColumnsView v;
    char* base = at<char>(sh, sh->off_data) + sh->chunk_bytes * i;
    for (int c = 0; c < sh->ncols; ++c) {
        v.values[c] = base + static_cast<Size>(c) * kChunkRows * 8;
        v.nulls[c] = sh->nullable[c] ? reinterpret_cast<bool*>(base + static_cast<Size>(sh->ncols) * kChunkRows * 8 +
                                                               static_cast<Size>(c) * kChunkRows)
                                     : nullptr;
    }
    return v;
}

namespace {

// Stores the needed attributes (values[c], isnull[c], in column order) as
// row `row` of `dst`; false (and the row counted in *skipped) when a
// non-nullable column is NULL.
bool store_row(const ReaderShared* sh, const Datum* values, const bool* isnull, const ColumnsView& dst, int64 row,
               int64* skipped, int64* null_counts) {
    const int ncols = sh->ncols;
    for (int c = 0; c < ncols; ++c)
        if (isnull[c] && !sh->nullable[c]) {
            ++*skipped;
            return false;
        }
    for (int c = 0; c < ncols; ++c) {
        char* p = dst.values[c] + row * 8;
        if (dst.nulls[c]) {
            dst.nulls[c][row] = isnull[c];
            if (isnull[c]) {
                ++null_counts[c];
                memset(p, 0, 8);
                continue;
            }
        }
        const Oid t = sh->types[c];
        if (sh->kinds[c] == static_cast<uint8>(ColumnKind::Integer)) {
            int64 v = integer_datum(values[c], t);
            memcpy(p, &v, 8);
        } else {
            double v = float_datum(values[c], t);
            if (std::isnan(v) || (!sh->allow_infinity && std::isinf(v)))
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("%s: column \"%s\" of relation %s contains %s", sh->fn, NameStr(sh->colnames[c]),
                                       sh->relname, std::isnan(v) ? "NaN" : "an infinite value")));
            memcpy(p, &v, 8);
        }
    }
    return true;
}

}  // namespace

// Sampling: 0 when a value of type t is finite, 1 for NaN, 2 for an infinity.
int non_finite(Datum d, Oid t) {
    switch (t) {
        case FLOAT8OID: {
            double v = DatumGetFloat8(d);
            return std::isnan(v) ? 1 : std::isinf(v) ? 2 : 0;
        }
        case FLOAT4OID: {
            float v = DatumGetFloat4(d);
            return std::isnan(v) ? 1 : std::isinf(v) ? 2 : 0;
        }
        case NUMERICOID: {
            Numeric n = DatumGetNumeric(d);  // detoasted in RelScan::tmp
            return numeric_is_nan(n) ? 1 : numeric_is_inf(n) ? 2 : 0;
        }
        case DATEOID: return DATE_NOT_FINITE(DatumGetDateADT(d)) ? 2 : 0;
        case TIMESTAMPOID:
        case TIMESTAMPTZOID: return TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)) ? 2 : 0;
        default: return 0;  // integers
    }
}

// The first `upto` attributes of a heap tuple (heap_deform_tuple,
// access/common/heaptuple.c, stopped there): one walk over the row where
// heap_getattr would walk it again for each column past a varlena or NULL.
static void deform_upto(HeapTuple tuple, TupleDesc desc, int upto, Datum* values, bool* isnull) {
    HeapTupleHeader tup = tuple->t_data;
    const bool hasnulls = HeapTupleHasNulls(tuple);
    const int natts = Min(static_cast<int>(HeapTupleHeaderGetNatts(tup)), upto);
    char* tp = reinterpret_cast<char*>(tup) + tup->t_hoff;
    const bits8* bp = tup->t_bits;
    uint32 off = 0;
    bool slow = false;
    int attnum = 0;
    for (; attnum < natts; ++attnum) {
        Form_pg_attribute thisatt = TupleDescAttr(desc, attnum);
        if (hasnulls && att_isnull(attnum, bp)) {
            values[attnum] = 0;
            isnull[attnum] = true;
            slow = true;
            continue;
        }
        isnull[attnum] = false;
        if (!slow && thisatt->attcacheoff >= 0) {
            off = thisatt->attcacheoff;
        } else if (thisatt->attlen == -1) {
            if (!slow && off == att_align_nominal(off, thisatt->attalign)) {
                thisatt->attcacheoff = off;
            } else {
                off = att_align_pointer(off, thisatt->attalign, -1, tp + off);
                slow = true;
            }
        } else {
            off = att_align_nominal(off, thisatt->attalign);
            if (!slow) thisatt->attcacheoff = off;
        }
        values[attnum] = fetchatt(thisatt, tp + off);
        off = att_addlength_pointer(off, thisatt->attlen, tp + off);
        if (thisatt->attlen <= 0) slow = true;
    }
    for (; attnum < upto; ++attnum) values[attnum] = getmissingattr(desc, attnum + 1, &isnull[attnum]);
}

namespace {

// A visible row for the sample: its columns checked, then kept when its
// priority is among the sample_m smallest this participant has seen (a
// max-heap on (priority, tid): the root is the first to go).
void sample_row(const ReaderShared* sh, SampleSlot* slot, const ItemPointerData* tid, const Datum* values,
                const bool* isnull) {
    for (int c = 0; c < sh->ncols; ++c) {
        if (isnull[c]) continue;
        int bad = non_finite(values[c], sh->types[c]);
        if (bad)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" of table %s contains %s", sh->fn, NameStr(sh->colnames[c]),
                                   sh->relname, bad == 1 ? "NaN" : "an infinite value"),
                            errhint("A synopsis needs finite values; NULL is fine.")));
    }
    ++slot->rows;
    const uint64 t = pack_tid(tid);
    const uint64 p = approx::mix64(sh->sample_seed ^ approx::mix64(t + 0x9e3779b97f4a7c15ULL));
    bottom_offer(sample_priorities(slot), sample_tids(sh, slot), &slot->size, sh->sample_m, p, t);
}

// Bounded reads: the row checked and converted as store_row stores it, then offered.
void bound_row(RelScan* rs, const Datum* values, const bool* isnull, int64* skipped) {
    BoundSlot* b = rs->bound;
    if (store_row(rs->sh, values, isnull, b->one, 0, skipped, nullptr)) {
        double score;
        memcpy(&score, &b->scratch[1], 8);
        bound_offer(b, b->scratch[0], score);
    }
}

}  // namespace

void relscan_begin(RelScan* rs, const ReaderShared* sh, int index, Relation rel, ParallelTableScanDesc pscan,
                   Snapshot snapshot, int participant) {
    memset(rs, 0, sizeof *rs);
    rs->sh = sh;
    if (sh->sample_m > 0) rs->sample = sample_slot(sh, participant);
    if (sh->sample_m > 0 || sh->strata_mode != 0)
        rs->tmp = AllocSetContextCreate(CurrentMemoryContext, "approx_gpu sample rows", ALLOCSET_SMALL_SIZES);
    rs->values = static_cast<Datum*>(palloc(sizeof(Datum) * Max(sh->ncols, 1)));
    rs->isnull = static_cast<bool*>(palloc(sizeof(bool) * Max(sh->ncols, 1)));
    if (sh->strata_mode != 0) {  // several columns a row: deformed once
        rs->row_values = static_cast<Datum*>(palloc(sizeof(Datum) * Max(max_attnum(sh, index), 1)));
        rs->row_isnull = static_cast<bool*>(palloc(sizeof(bool) * Max(max_attnum(sh, index), 1)));
    }
    rs->index = index;
    rs->rel = rel;
    rs->snapshot = snapshot;
    rs->direct = sh->direct && rel->rd_tableam == GetHeapamTableAmRoutine();
    if (rs->direct) {
        rs->pbscan = reinterpret_cast<ParallelBlockTableScanDesc>(pscan);
        rs->nblocks = rs->pbscan ? rs->pbscan->phs_nblocks : RelationGetNumberOfBlocks(rel);
        if (rs->nblocks > static_cast<BlockNumber>(NBuffers / 4)) rs->strategy = GetAccessStrategy(BAS_BULKREAD);
        if (rs->pbscan) table_block_parallelscan_startblock_init(rel, &rs->pbwork, rs->pbscan);
        pgstat_count_heap_scan(rel);
    } else {
        rs->scan = pscan ? table_beginscan_parallel(rel, pscan) : table_beginscan(rel, snapshot, 0, nullptr);
        rs->slot = table_slot_create(rel, nullptr);
    }
}

void relscan_end(RelScan* rs) {
    if (rs->tmp) MemoryContextDelete(rs->tmp);
    pfree(rs->values);
    pfree(rs->isnull);
    if (rs->row_values) {
        pfree(rs->row_values);
        pfree(rs->row_isnull);
    }
    if (rs->direct) {
        if (rs->strategy) FreeAccessStrategy(rs->strategy);
    } else {
        ExecDropSingleTupleTableSlot(rs->slot);
        table_endscan(rs->scan);
    }
}

// Appends the rows of the next page (or the next kPageRows tuples) to dst at
// *rows; false when the relation is done.
bool relscan_step(RelScan* rs, const ColumnsView& dst, int64* rows, int64* skipped, int64* null_counts) {
    const ReaderShared* sh = rs->sh;
    const AttrNumber* atts = attnums(sh, rs->index);
    const int ncols = sh->ncols;
    Datum* values = rs->values;
    bool* isnull = rs->isnull;
    if (!rs->direct) {
        const AttrNumber maxatt = max_attnum(sh, rs->index);
        for (int i = 0; i < kPageRows; ++i) {
            if (!table_scan_getnextslot(rs->scan, ForwardScanDirection, rs->slot)) return false;
            slot_getsomeattrs(rs->slot, maxatt);
            for (int c = 0; c < ncols; ++c) {
                values[c] = rs->slot->tts_values[atts[c] - 1];
                isnull[c] = rs->slot->tts_isnull[atts[c] - 1];
            }
            if (rs->strata) {
                MemoryContext old = MemoryContextSwitchTo(rs->tmp);
                strata_row(rs, &rs->slot->tts_tid);
                MemoryContextSwitchTo(old);
                MemoryContextReset(rs->tmp);
            } else if (rs->sample) {
                MemoryContext old = MemoryContextSwitchTo(rs->tmp);
                sample_row(sh, rs->sample, &rs->slot->tts_tid, values, isnull);
                MemoryContextSwitchTo(old);
                MemoryContextReset(rs->tmp);
            } else if (rs->bound) {
                bound_row(rs, values, isnull, skipped);
            } else if (store_row(sh, values, isnull, dst, *rows, skipped, null_counts)) {
                ++*rows;
            }
        }
        return true;
    }
    BlockNumber block;
    if (rs->pbscan) {
        block = table_block_parallelscan_nextpage(rs->rel, &rs->pbwork, rs->pbscan);
        if (block == InvalidBlockNumber) return false;
    } else {
        if (rs->next_block >= rs->nblocks) return false;
        block = rs->next_block++;
    }
    CHECK_FOR_INTERRUPTS();
    Relation rel = rs->rel;
    TupleDesc desc = RelationGetDescr(rel);
    Buffer buf = ReadBufferExtended(rel, MAIN_FORKNUM, block, RBM_NORMAL, rs->strategy);
    heap_page_prune_opt(rel, buf);
    LockBuffer(buf, BUFFER_LOCK_SHARE);
    Page page = BufferGetPage(buf);
    TestForOldSnapshot(rs->snapshot, rel, page);
    const bool all_visible = PageIsAllVisible(page) && !rs->snapshot->takenDuringRecovery;
    const OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
    HeapTupleData tuple;
    tuple.t_tableOid = RelationGetRelid(rel);
    MemoryContext old = rs->tmp ? MemoryContextSwitchTo(rs->tmp) : nullptr;
    for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off = OffsetNumberNext(off)) {
        ItemId item = PageGetItemId(page, off);
        if (!ItemIdIsNormal(item)) continue;
        tuple.t_data = reinterpret_cast<HeapTupleHeader>(PageGetItem(page, item));
        tuple.t_len = ItemIdGetLength(item);
        ItemPointerSet(&tuple.t_self, block, off);
        if (!all_visible && !HeapTupleSatisfiesVisibility(&tuple, rs->snapshot, buf)) continue;
        if (rs->row_values) {
            deform_upto(&tuple, desc, max_attnum(sh, rs->index), rs->row_values, rs->row_isnull);
            for (int c = 0; c < ncols; ++c) {
                values[c] = rs->row_values[atts[c] - 1];
                isnull[c] = rs->row_isnull[atts[c] - 1];
            }
        } else {
            for (int c = 0; c < ncols; ++c) values[c] = heap_getattr(&tuple, atts[c], desc, &isnull[c]);
        }
        if (rs->strata)
            strata_row(rs, &tuple.t_self);
        else if (rs->sample)
            sample_row(sh, rs->sample, &tuple.t_self, values, isnull);
        else if (rs->bound)
            bound_row(rs, values, isnull, skipped);
        else if (store_row(sh, values, isnull, dst, *rows, skipped, null_counts))
            ++*rows;
    }
    if (old) {
        MemoryContextSwitchTo(old);
        MemoryContextReset(rs->tmp);
    }
    LockBuffer(buf, BUFFER_LOCK_UNLOCK);
    ReleaseBuffer(buf);
    return true;
}

}  // namespace relscan

using namespace relscan;

void approx_gpu_relation_reader_worker(dsm_segment* seg, shm_toc* toc) {
    ReaderShared* sh = static_cast<ReaderShared*>(shm_toc_lookup(toc, kKeyShared, false));
    // The leader's active snapshot, restored by ParallelWorkerMain: the
    // snapshot the parallel scans were set up with.
    Snapshot snapshot = GetActiveSnapshot();
    int chunk = -1;
    ColumnsView view;
    memset(&view, 0, sizeof view);
    StrataParticipant* strata = sh->strata_mode ? strata_participant(sh, ParallelWorkerNumber + 1) : nullptr;
    BoundSlot* bound = sh->bound_k > 0 ? bound_slot(sh) : nullptr;
    for (int r = 0; r < sh->nrels; ++r) {
        Relation rel = table_open(relids(sh)[r], AccessShareLock);
        RelScan rs;
        relscan_begin(&rs, sh, r, rel, static_cast<ParallelTableScanDesc>(shm_toc_lookup(toc, kKeyScanBase + r, false)),
                      snapshot, ParallelWorkerNumber + 1);
        rs.strata = strata;
        rs.bound = bound;
        while (rs.sample || rs.strata || rs.bound) {  // sampling, bounded reads: no chunks
            int64 none = 0;
            if (!relscan_step(&rs, view, &none, bound ? &bound->skipped : &none, nullptr)) break;
        }
        for (; !rs.sample && !rs.strata && !rs.bound;) {
            if (chunk < 0) {
                chunk = acquire_chunk(sh);
                view = chunk_view(sh, chunk);
            }
            ChunkHeader* h = header(sh, chunk);
            int64 rows = h->rows;
            bool more = relscan_step(&rs, view, &rows, &h->skipped, h->null_counts);
            h->rows = static_cast<int32>(rows);
            if (h->rows > kChunkRows - kPageRows) {
                publish_chunk(sh, chunk);
                chunk = -1;
            }
            if (!more) break;
        }
        relscan_end(&rs);
        table_close(rel, AccessShareLock);
    }
    if (chunk >= 0) publish_chunk(sh, chunk);
    if (strata) strata_publish(sh, strata);
    if (bound) bound_publish(sh, bound);
    SpinLockAcquire(&sh->mutex);
    ++sh->workers_done;
    SpinLockRelease(&sh->mutex);
    ConditionVariableBroadcast(&sh->cv_full);
}
