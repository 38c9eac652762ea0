// Descending (id, score) reads from a B-tree index: see index_reader.h.
#include "readers/index_reader.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/rel.h"
}

#include <type_traits>

struct IndexReader {
    Relation heap;
    Relation index;
    IndexScanDesc scan;
    ScanDirection dir;  // backward, or forward on a DESC index
    Snapshot snapshot;
    bool index_only;               // id and score from the index tuple when the page is all-visible
    AttrNumber id_pos;             // index_only: the id's 0-based position in the index tuple
    AttrNumber score_att, id_att;  // heap attributes (the heap-fetch path)
    Oid score_type, id_type;
    Buffer vmbuffer;
    TupleTableSlot* slot;  // heap tuples (index_fetch_heap / index_getnext_slot)
    Datum* values;         // index_only: one deformed index tuple
    bool* isnull;
    bool done;
    int64 heap_fetches;
};
static_assert(std::is_trivially_destructible<IndexReader>::value, "palloc'd; an ERROR may leave it behind");

namespace {

double score_value(Datum d, Oid type) {
    switch (type) {
        case INT2OID: return static_cast<double>(DatumGetInt16(d));
        case INT4OID: return static_cast<double>(DatumGetInt32(d));
        case INT8OID: return static_cast<double>(DatumGetInt64(d));  // as int8::float8 rounds
        case FLOAT4OID: return static_cast<double>(DatumGetFloat4(d));
        default: return DatumGetFloat8(d);
    }
}

int64 id_value(Datum d, Oid type) {
    switch (type) {
        case INT2OID: return DatumGetInt16(d);
        case INT4OID: return DatumGetInt32(d);
        default: return DatumGetInt64(d);
    }
}

// The position (0-based) of heap attribute att among the index's columns, -1 if absent.
int index_position(Relation index, AttrNumber att) {
    for (int i = 0; i < index->rd_index->indnatts; ++i)
        if (index->rd_index->indkey.values[i] == att) return i;
    return -1;
}

}  // namespace

Oid index_reader_find(Relation heap, AttrNumber score_att, AttrNumber id_att, bool* holds_id) {
    const Oid score_type = TupleDescAttr(RelationGetDescr(heap), score_att - 1)->atttypid;
    const Oid default_class = GetDefaultOpClass(score_type, BTREE_AM_OID);
    const Oid default_family = OidIsValid(default_class) ? get_opclass_family(default_class) : InvalidOid;
    Oid found = InvalidOid;
    *holds_id = false;
    if (!OidIsValid(default_family)) return found;
    List* indexes = RelationGetIndexList(heap);
    ListCell* lc;
    foreach (lc, indexes) {
        // Locked like the planner's look at a table's indexes (kept to the transaction's end).
        Relation index = index_open(lfirst_oid(lc), AccessShareLock);
        Form_pg_index ix = index->rd_index;
        // The default family's order is the order of ORDER BY col DESC; another
        // family (a custom opclass) may order differently.
        const bool usable = index->rd_rel->relam == BTREE_AM_OID && ix->indisvalid && ix->indisready && ix->indislive &&
                            ix->indkey.values[0] == score_att && index->rd_opfamily[0] == default_family &&
                            heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, nullptr);
        const bool with_id = usable && index_position(index, id_att) >= 0;
        if (usable && (!OidIsValid(found) || (with_id && !*holds_id))) {
            found = RelationGetRelid(index);
            *holds_id = with_id;
        }
        index_close(index, NoLock);
        if (*holds_id) break;
    }
    list_free(indexes);
    return found;
}

IndexReader* index_reader_open(Relation heap, Oid index_oid, AttrNumber score_att, AttrNumber id_att,
                               Snapshot snapshot) {
    IndexReader* r = static_cast<IndexReader*>(palloc0(sizeof(IndexReader)));
    r->heap = heap;
    r->index = index_open(index_oid, AccessShareLock);
    r->snapshot = snapshot;
    r->score_att = score_att;
    r->id_att = id_att;
    TupleDesc hd = RelationGetDescr(heap);
    r->score_type = TupleDescAttr(hd, score_att - 1)->atttypid;
    r->id_type = TupleDescAttr(hd, id_att - 1)->atttypid;
    const int id_pos = index_position(r->index, id_att);
    r->index_only = id_pos >= 0;
    r->id_pos = static_cast<AttrNumber>(id_pos);
    r->vmbuffer = InvalidBuffer;
    r->slot = table_slot_create(heap, nullptr);
    // A DESC first key stores the largest first: read it forward.
    r->dir = (r->index->rd_indoption[0] & INDOPTION_DESC) ? ForwardScanDirection : BackwardScanDirection;

    // score IS NOT NULL, as nodeIndexscan builds it for that qual: the scan
    // starts past the NULLs instead of reading them.
    ScanKeyData key;
    ScanKeyEntryInitialize(&key, SK_ISNULL | SK_SEARCHNOTNULL, 1, InvalidStrategy, InvalidOid, InvalidOid, InvalidOid,
                           static_cast<Datum>(0));
    r->scan = index_beginscan(heap, r->index, snapshot, 1, 0);
    if (r->index_only) {
        r->scan->xs_want_itup = true;
        const int natts = RelationGetDescr(r->index)->natts;
        r->values = static_cast<Datum*>(palloc(sizeof(Datum) * natts));
        r->isnull = static_cast<bool*>(palloc(sizeof(bool) * natts));
    }
    index_rescan(r->scan, &key, 1, nullptr, 0);
    return r;
}

int64 index_reader_read(IndexReader* r, int64* ids, double* scores, int64 cap) {
    int64 n = 0;
    CHECK_FOR_INTERRUPTS();
    while (n < cap && !r->done) {
        bool id_null, score_null;
        Datum id, score;
        if (r->index_only) {
            // nodeIndexonlyscan.c's loop: the heap is visited only when the
            // page is not all-visible, to learn whether the entry's tuple is
            // visible to us; the values come from the index tuple either way
            // (an indexed column's value is the same in every tuple of a HOT chain).
            ItemPointer tid = index_getnext_tid(r->scan, r->dir);
            if (tid == nullptr) {
                r->done = true;
                break;
            }
            const BlockNumber block = ItemPointerGetBlockNumber(tid);
            if (!VM_ALL_VISIBLE(r->heap, block, &r->vmbuffer)) {
                ++r->heap_fetches;
                if (!index_fetch_heap(r->scan, r->slot)) continue;  // no version visible to us
                ExecClearTuple(r->slot);
                if (r->scan->xs_heap_continue)
                    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                                    errmsg("index_reader: non-MVCC snapshots are not supported")));
            } else {
                PredicateLockPage(r->heap, block, r->snapshot);  // what the heap visit would have taken
            }
            index_deform_tuple(r->scan->xs_itup, r->scan->xs_itupdesc, r->values, r->isnull);
            score = r->values[0];
            score_null = r->isnull[0];
            id = r->values[r->id_pos];
            id_null = r->isnull[r->id_pos];
        } else {
            if (!index_getnext_slot(r->scan, r->dir, r->slot)) {
                r->done = true;
                break;
            }
            ++r->heap_fetches;
            score = slot_getattr(r->slot, r->score_att, &score_null);
            id = slot_getattr(r->slot, r->id_att, &id_null);
        }
        if (id_null || score_null) continue;  // no object / no score in this list
        ids[n] = id_value(id, r->id_type);
        scores[n] = score_value(score, r->score_type);
        ++n;
    }
    return n;
}

bool index_reader_index_only(const IndexReader* r) { return r->index_only; }

int64 index_reader_heap_fetches(const IndexReader* r) { return r->heap_fetches; }

void index_reader_close(IndexReader* r) {
    if (r->scan != nullptr) index_endscan(r->scan);
    r->scan = nullptr;
    if (r->vmbuffer != InvalidBuffer) ReleaseBuffer(r->vmbuffer);
    r->vmbuffer = InvalidBuffer;
    if (r->slot != nullptr) ExecDropSingleTupleTableSlot(r->slot);
    r->slot = nullptr;
    if (r->index != nullptr) index_close(r->index, NoLock);
    r->index = nullptr;
}
