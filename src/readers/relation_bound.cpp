// Bounded reads (relation_reader.h, ReadBound): every participant of a read
// keeps, in a BoundSlot, the k rows it read that rank first by topk.hpp's
// order, so only those travel to the backend: what PostgreSQL's parallel
// top-N heapsort does under a Gather Merge, without the executor per row.
// The union of the participants' k best holds the k best of the table, which
// the engine's select then picks as it would from every row (a row dropped
// here ranks after k rows kept by its participant, or equals one of them).
#include "readers/relation_scan.h"

#include "core/topk.hpp"

namespace topk = approx::topk;

namespace relscan {

namespace {

// (score key, id key) pairs: the smaller ranks first.
inline bool ranks_before(uint64 sa, uint64 ia, uint64 sb, uint64 ib) { return sa < sb || (sa == sb && ia < ib); }

}  // namespace

BoundSlot* bound_slot(const ReaderShared* sh) {
    BoundSlot* b = static_cast<BoundSlot*>(palloc0(sizeof(BoundSlot)));
    b->k = sh->bound_k;
    b->asc = sh->bound_asc;
    b->skey = static_cast<uint64*>(palloc(sizeof(uint64) * b->k));
    b->ikey = static_cast<uint64*>(palloc(sizeof(uint64) * b->k));
    b->score = static_cast<double*>(palloc(sizeof(double) * b->k));
    b->one.values[0] = reinterpret_cast<char*>(&b->scratch[0]);
    b->one.values[1] = reinterpret_cast<char*>(&b->scratch[1]);
    return b;
}

// A max-heap: the root ranks last of the kept rows.
void bound_offer(BoundSlot* b, int64 id, double score) {
    ++b->seen;
    const uint64 s = topk::score_key(score, b->asc ? topk::Order::Asc : topk::Order::Desc);
    const uint64 i = topk::id_key(id);
    int64 at;
    if (b->size < b->k) {  // sift up
        at = b->size++;
        while (at > 0) {
            int64 parent = (at - 1) / 2;
            if (!ranks_before(b->skey[parent], b->ikey[parent], s, i)) break;
            b->skey[at] = b->skey[parent];
            b->ikey[at] = b->ikey[parent];
            b->score[at] = b->score[parent];
            at = parent;
        }
    } else {
        if (!ranks_before(s, i, b->skey[0], b->ikey[0])) return;  // the common case once the heap is full
        at = 0;  // replace the root, sift down
        for (;;) {
            int64 child = 2 * at + 1;
            if (child >= b->k) break;
            if (child + 1 < b->k && ranks_before(b->skey[child], b->ikey[child], b->skey[child + 1], b->ikey[child + 1]))
                ++child;
            if (!ranks_before(s, i, b->skey[child], b->ikey[child])) break;
            b->skey[at] = b->skey[child];
            b->ikey[at] = b->ikey[child];
            b->score[at] = b->score[child];
            at = child;
        }
    }
    b->skey[at] = s;
    b->ikey[at] = i;
    b->score[at] = score;
}

void bound_take(const BoundSlot* b, const ColumnsView& dst, int64 at, int64 from, int64 n) {
    int64* ids = reinterpret_cast<int64*>(dst.values[0]) + at;
    double* scores = reinterpret_cast<double*>(dst.values[1]) + at;
    for (int64 r = 0; r < n; ++r) {
        ids[r] = static_cast<int64>(b->ikey[from + r] ^ UINT64CONST(0x8000000000000000));  // topk::id_key undone
        scores[r] = b->score[from + r];
    }
}

void bound_publish(ReaderShared* sh, const BoundSlot* b) {
    int64 from = 0;
    bool first = true;
    while (first || from < b->size) {  // the first chunk carries the counts, even with no row
        const int i = acquire_chunk(sh);
        ChunkHeader* h = header(sh, i);
        const int64 n = Min(static_cast<int64>(kChunkRows), b->size - from);
        bound_take(b, chunk_view(sh, i), 0, from, n);
        from += n;
        h->rows = static_cast<int32>(n);
        if (first) {
            h->seen = b->seen;
            h->skipped = b->skipped;
            first = false;
        }
        publish_chunk(sh, i);
    }
}

}  // namespace relscan
