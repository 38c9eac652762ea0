// The passes of a stratified, census or partitioned-parent table synopsis
// build (relation_reader.h: strata_count, strata_sample; relation_scan.h
// describes the strata modes): one participant's keys, counts, census heaps
// and per-stratum samples, the workers' keys handed over in a DSA area, and
// the leader's merge. Plain C-style code, as in relation_reader.cpp.
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"
#include "synopsis/synopsis_codec.h"

extern "C" {
#include "access/tupmacs.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
}

#include <algorithm>

#include "core/hash_mix.hpp"

using namespace relscan;
namespace sample = approx::sample;

namespace {

// A column of a strata read, in the shared block.
struct StrataCol {
    NameData name;
    Oid type;
    uint8 role;
};

// A participant's slot: its rows, then (counting, workers) its keys in the
// DSA area, then the census (counting) or the per-stratum heaps (sampling).
struct StrataSlot {
    int64 rows;
    int64 nkeys;
    dsa_pointer keys;  // nkeys x (int64 count, uint32 len, len bytes)
    uint64 keys_bytes;
};

constexpr Size kMaxSlotBytes = Size(1) << 30;  // as sample_relation: past this, fewer workers

// Distinct binary keys: open addressing over entry indexes, the keys in an arena.
struct KeyTable {
    int64 n, cap, ecap;
    int64* slots;  // entry + 1; 0: empty
    uint64* hash;
    int64* count;
    int64* value;
    uint64* off;
    uint32* len;
    char* arena;
    uint64 used, acap;
};

template <class T>
T* grow(T* p, int64 n) {
    return static_cast<T*>(repalloc_huge(p, sizeof(T) * static_cast<Size>(n)));
}

void kt_init(KeyTable* t) {
    memset(t, 0, sizeof *t);
    t->cap = 256;
    t->ecap = 128;
    t->acap = 8192;
    t->slots = static_cast<int64*>(palloc0(sizeof(int64) * t->cap));
    t->hash = static_cast<uint64*>(palloc(sizeof(uint64) * t->ecap));
    t->count = static_cast<int64*>(palloc(sizeof(int64) * t->ecap));
    t->value = static_cast<int64*>(palloc(sizeof(int64) * t->ecap));
    t->off = static_cast<uint64*>(palloc(sizeof(uint64) * t->ecap));
    t->len = static_cast<uint32*>(palloc(sizeof(uint32) * t->ecap));
    t->arena = static_cast<char*>(palloc(t->acap));
}

int64 kt_find(const KeyTable* t, const char* key, uint32 len, uint64 h) {
    const int64 mask = t->cap - 1;
    for (int64 i = static_cast<int64>(h) & mask;; i = (i + 1) & mask) {
        const int64 e = t->slots[i] - 1;
        if (e < 0) return -1;
        if (t->hash[e] == h && t->len[e] == len && memcmp(t->arena + t->off[e], key, len) == 0) return e;
    }
}

void kt_place(KeyTable* t, int64 e) {
    const int64 mask = t->cap - 1;
    int64 i = static_cast<int64>(t->hash[e]) & mask;
    while (t->slots[i] != 0) i = (i + 1) & mask;
    t->slots[i] = e + 1;
}

// A new key (not in the table); its entry.
int64 kt_add(KeyTable* t, const char* key, uint32 len, uint64 h) {
    if (t->n == t->ecap) {
        t->ecap *= 2;
        t->hash = grow(t->hash, t->ecap);
        t->count = grow(t->count, t->ecap);
        t->value = grow(t->value, t->ecap);
        t->off = grow(t->off, t->ecap);
        t->len = grow(t->len, t->ecap);
    }
    if (t->used + len > t->acap) {
        while (t->used + len > t->acap) t->acap *= 2;
        t->arena = grow(t->arena, static_cast<int64>(t->acap));
    }
    if ((t->n + 1) * 2 > t->cap) {
        pfree(t->slots);
        t->cap *= 2;
        t->slots = static_cast<int64*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * t->cap));
        memset(t->slots, 0, sizeof(int64) * t->cap);
        for (int64 e = 0; e < t->n; ++e) kt_place(t, e);
    }
    const int64 e = t->n++;
    t->hash[e] = h;
    t->count[e] = 0;
    t->value[e] = -1;
    t->off[e] = t->used;
    t->len[e] = len;
    memcpy(t->arena + t->used, key, len);
    t->used += len;
    kt_place(t, e);
    return e;
}

int64 kt_enter(KeyTable* t, const char* key, uint32 len) {
    const uint64 h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(key), static_cast<int>(len), 0);
    const int64 e = kt_find(t, key, len, h);
    return e >= 0 ? e : kt_add(t, key, len, h);
}

void key_room(char** buf, Size* cap, Size need) {
    if (need <= *cap) return;
    Size c = Max(*cap * 2, need);
    *buf = static_cast<char*>(*buf ? repalloc_huge(*buf, c) : MemoryContextAllocHuge(CurrentMemoryContext, c));
    *cap = c;
}

// The key: the leaf's index, then per stratify column a NULL flag and its
// bytes (fixed length: typlen bytes; varlena: uint32 length, then the
// detoasted data; cstring: its bytes and NUL).
uint32 build_key(int leaf, int nkeys, const int16* keycols, const int16* keylen, const bool* keybyval,
                 const Datum* values, const bool* isnull, char** buf, Size* cap) {
    Size at = 0;
    key_room(buf, cap, 64);
    int32 l = leaf;
    memcpy(*buf, &l, sizeof l);
    at = sizeof l;
    for (int k = 0; k < nkeys; ++k) {
        const int c = keycols[k];
        key_room(buf, cap, at + 1 + 8);
        if (isnull[c]) {
            (*buf)[at++] = 0;
            continue;
        }
        (*buf)[at++] = 1;
        const int16 typlen = keylen[k];
        if (typlen > 0 && keybyval[k]) {
            store_att_byval(*buf + at, values[c], typlen);
            at += typlen;
        } else if (typlen > 0) {
            key_room(buf, cap, at + typlen);
            memcpy(*buf + at, DatumGetPointer(values[c]), typlen);
            at += typlen;
        } else if (typlen == -1) {
            struct varlena* v = pg_detoast_datum_packed(reinterpret_cast<struct varlena*>(DatumGetPointer(values[c])));
            const uint32 n = VARSIZE_ANY_EXHDR(v);
            key_room(buf, cap, at + 4 + n);
            memcpy(*buf + at, &n, 4);
            memcpy(*buf + at + 4, VARDATA_ANY(v), n);
            at += 4 + n;
        } else {
            const char* s = DatumGetCString(values[c]);
            const Size n = strlen(s) + 1;
            key_room(buf, cap, at + n);
            memcpy(*buf + at, s, n);
            at += n;
        }
    }
    return static_cast<uint32>(at);
}

[[noreturn]] void unseen_stratum(const char* fn) {
    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: a row of a stratum the first pass did not see", fn)));
}

}  // namespace

// One participant's state.
struct relscan::StrataParticipant {
    const ReaderShared* sh;
    StrataSlot* slot;
    KeyTable keys;
    char* kbuf;
    Size kcap;
    const StrataCol* cols;
    const int16* keycols;
    const int16* keylen;
    const bool* keybyval;
    const int16* measurecols;
    sample::CensusSpread* spread;  // counting: nmeasures
    int64_t* heap_n;
    sample::CensusEntry* heap;  // nmeasures x census_room
    int64* size;                // sampling: nstrata, then the heaps
    uint64* pri;
    uint64* tid;
    const int64* alloc;
    const int64* begin;
    const uint64* census_ids;
};

StrataParticipant* relscan::strata_participant(const ReaderShared* sh, int participant) {
    StrataParticipant* p = static_cast<StrataParticipant*>(palloc0(sizeof(StrataParticipant)));
    p->sh = sh;
    char* slot = at<char>(sh, sh->off_strata + sh->strata_slot_bytes * participant);
    p->slot = reinterpret_cast<StrataSlot*>(slot);
    p->cols = at<StrataCol>(sh, sh->off_cols);
    p->keycols = at<int16>(sh, sh->off_keycols);
    p->keylen = p->keycols + sh->nkeys;
    p->keybyval = reinterpret_cast<const bool*>(p->keylen + sh->nkeys);
    p->measurecols = at<int16>(sh, sh->off_measurecols);
    kt_init(&p->keys);
    char* body = slot + MAXALIGN(sizeof(StrataSlot));
    if (sh->strata_mode == 1) {
        p->spread = reinterpret_cast<sample::CensusSpread*>(body);
        p->heap_n = reinterpret_cast<int64_t*>(body + MAXALIGN(sizeof(sample::CensusSpread) * sh->nmeasures));
        p->heap = reinterpret_cast<sample::CensusEntry*>(reinterpret_cast<char*>(p->heap_n) +
                                                         MAXALIGN(sizeof(int64_t) * sh->nmeasures));
        return p;
    }
    p->size = reinterpret_cast<int64*>(body);
    p->pri = reinterpret_cast<uint64*>(body + MAXALIGN(sizeof(int64) * sh->nstrata));
    p->tid = p->pri + sh->capacity;
    p->alloc = at<int64>(sh, sh->off_alloc);
    p->begin = p->alloc + sh->nstrata;
    p->census_ids = at<uint64>(sh, sh->off_census_ids);
    // The counting pass's keys and their strata.
    const char* r = at<char>(sh, sh->off_keylist);
    for (int64 i = 0; i < sh->nkeylist; ++i) {
        int64 stratum;
        uint32 len;
        memcpy(&stratum, r, 8);
        memcpy(&len, r + 8, 4);
        p->keys.value[kt_enter(&p->keys, r + 12, len)] = stratum;
        r += 12 + len;
    }
    return p;
}

void relscan::strata_row(RelScan* rs, const ItemPointerData* tid) {
    StrataParticipant* p = rs->strata;
    const ReaderShared* sh = p->sh;
    const Datum* values = rs->values;
    const bool* isnull = rs->isnull;
    const uint64 id = leaf_row_id(rs->index, tid);
    if (sh->strata_mode == 2 && sh->ncensus > 0 && std::binary_search(p->census_ids, p->census_ids + sh->ncensus, id))
        return;  // a census row: kept whole, known by id
    if (sh->strata_mode == 1)
        for (int c = 0; c < sh->ncols; ++c) {
            if (isnull[c] || !(p->cols[c].role & kStrataCheck)) continue;
            int bad = non_finite(values[c], p->cols[c].type);
            if (bad)
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("%s: column \"%s\" of table %s contains %s", sh->fn, NameStr(p->cols[c].name),
                                       sh->relname, bad == 1 ? "NaN" : "an infinite value"),
                                errhint("A synopsis needs finite values; NULL is fine.")));
        }
    const uint32 len = build_key(rs->index, sh->nkeys, p->keycols, p->keylen, p->keybyval, values, isnull, &p->kbuf,
                                 &p->kcap);
    ++p->slot->rows;
    if (sh->strata_mode == 1) {
        ++p->keys.count[kt_enter(&p->keys, p->kbuf, len)];
        if (sh->nmeasures == 0) return;
        // Ties by a key of the row's id and its leaf: the same rows whatever the order.
        const uint64 key = sample::census_key(id, relids(sh)[rs->index]);
        for (int m = 0; m < sh->nmeasures; ++m) {
            const int c = p->measurecols[m];
            if (isnull[c]) continue;
            double v;
            if (sh->census_on)  // a synopsis column: NaN and infinities are an ERROR
                v = synopsis_glue::column_number(values[c], p->cols[c].type, sh->fn, NameStr(p->cols[c].name), sh->relname);
            else if (!synopsis_glue::measure_number(values[c], p->cols[c].type, &v))
                continue;  // not a synopsis column: a value no census can hold is left out
            sample::census_offer(p->heap + m * sh->census_room, p->heap_n[m], sh->census_room, v, key,
                                 static_cast<int64_t>(id));
            p->spread[m].add(v);
        }
        return;
    }
    const uint64 h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(p->kbuf), static_cast<int>(len), 0);
    const int64 e = kt_find(&p->keys, p->kbuf, len, h);
    if (e < 0 || p->keys.value[e] < 0) unseen_stratum(sh->fn);
    const int64 s = p->keys.value[e];
    if (p->alloc[s] == 0) return;
    // For leaf 0 the uniform sample's priority (relation_scan.cpp, sample_row).
    const uint64 pr = approx::mix64(sh->sample_seed ^ approx::mix64(id + 0x9e3779b97f4a7c15ULL));
    bottom_offer(p->pri + p->begin[s], p->tid + p->begin[s], &p->size[s], p->alloc[s], pr, id);
}

void relscan::strata_publish(const ReaderShared* sh, StrataParticipant* p) {
    if (sh->strata_mode != 1) return;
    const KeyTable& t = p->keys;
    uint64 bytes = 0;
    for (int64 e = 0; e < t.n; ++e) bytes += 12 + t.len[e];
    dsa_area* area = dsa_attach(sh->area);
    dsa_pointer dp = dsa_allocate_extended(area, Max(bytes, 1), DSA_ALLOC_HUGE);
    char* w = static_cast<char*>(dsa_get_address(area, dp));
    for (int64 e = 0; e < t.n; ++e) {
        memcpy(w, &t.count[e], 8);
        memcpy(w + 8, &t.len[e], 4);
        memcpy(w + 12, t.arena + t.off[e], t.len[e]);
        w += 12 + t.len[e];
    }
    p->slot->keys = dp;
    p->slot->keys_bytes = bytes;
    p->slot->nkeys = t.n;
    dsa_detach(area);
}

namespace {

// The leader: the shared block for `extra` bytes of the mode's own and
// nslots participant slots of slot_bytes, the workers launched, its own
// scans, the wait. Returns the block (the caller ends it).
struct StrataRun {
    ReaderShared* sh;
    ParallelContext* pcxt;
    dsa_area* area;
    int launched;
    StrataParticipant* leader;
    double t0;
};

StrataRun strata_begin(const StrataRead* r, int mode, Size slot_bytes, Size extra, int64 nstrata, int64 capacity,
                       int64 nkeylist, int64 ncensus) {
    StrataRun run;
    memset(&run, 0, sizeof run);
    run.t0 = glue_clock_ms();
    BlockNumber pages = 0;
    bool any_temp = false;
    for (int l = 0; l < r->nrels; ++l) {
        pages += RelationGetNumberOfBlocks(r->rels[l]);
        any_temp |= r->rels[l]->rd_rel->relpersistence == RELPERSISTENCE_TEMP;
    }
    slot_bytes = MAXALIGN(slot_bytes);
    if (slot_bytes > kMaxSlotBytes)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: the strata of %s need more than 1 GB while they are drawn", r->fn, r->relname),
                        errhint("Use a smaller sample_size.")));
    int nworkers = choose_workers(r->top, pages, any_temp);
    while (nworkers > 0 && slot_bytes * (nworkers + 1) > kMaxSlotBytes) --nworkers;
    const int nslots = nworkers + 1;
    AttrNumber* maxatt = static_cast<AttrNumber*>(palloc0(sizeof(AttrNumber) * r->nrels));
    for (int l = 0; l < r->nrels; ++l)
        for (int c = 0; c < r->ncols; ++c) maxatt[l] = Max(maxatt[l], r->attnums[l * r->ncols + c]);
    ReaderLayout layout = reader_layout(r->nrels, r->ncols);
    const Size off_cols = layout.end;
    const Size off_keycols = MAXALIGN(off_cols + sizeof(StrataCol) * r->ncols);
    const Size off_measurecols = MAXALIGN(off_keycols + (2 * sizeof(int16) + sizeof(bool)) * r->nkeys);
    const Size off_alloc = MAXALIGN(off_measurecols + sizeof(int16) * r->nmeasures);
    const Size off_census_ids = MAXALIGN(off_alloc + sizeof(int64) * 2 * nstrata);
    const Size off_keylist = MAXALIGN(off_census_ids + sizeof(uint64) * ncensus);
    const Size off_strata = MAXALIGN(off_keylist + extra);
    const Size shared_bytes = add_size(off_strata, mul_size(slot_bytes, nslots));
    ParallelTableScanDesc* pscans;
    Snapshot snapshot = GetActiveSnapshot();
    // The leader alone: the block in private memory (huge: the strata's own parts).
    ReaderShared* sh;
    if (nworkers == 0) {
        sh = static_cast<ReaderShared*>(MemoryContextAllocHuge(CurrentMemoryContext, shared_bytes));
        memset(sh, 0, layout.end);
        run.pcxt = nullptr;
        pscans = nullptr;
    } else {
        sh = reader_shared_create(nworkers, r->rels, r->nrels, snapshot, shared_bytes, layout, &run.pcxt, &pscans);
    }
    reader_shared_init(sh, layout, r->fn, r->relname, r->rels, r->nrels, 0, nullptr, nullptr, r->attnums, maxatt);
    sh->ncols = r->ncols;
    memcpy(at<AttrNumber>(sh, sh->off_attnums), r->attnums, sizeof(AttrNumber) * r->nrels * r->ncols);
    sh->strata_mode = mode;
    sh->off_cols = off_cols;
    StrataCol* cols = at<StrataCol>(sh, off_cols);
    for (int c = 0; c < r->ncols; ++c) {
        namestrcpy(&cols[c].name, r->names[c]);
        cols[c].type = r->types[c];
        cols[c].role = r->roles[c];
    }
    sh->nkeys = r->nkeys;
    sh->off_keycols = off_keycols;
    int16* kc = at<int16>(sh, off_keycols);
    memcpy(kc, r->keycols, sizeof(int16) * r->nkeys);
    memcpy(kc + r->nkeys, r->keylen, sizeof(int16) * r->nkeys);
    memcpy(kc + 2 * r->nkeys, r->keybyval, sizeof(bool) * r->nkeys);
    sh->nmeasures = mode == 1 ? r->nmeasures : 0;
    sh->off_measurecols = off_measurecols;
    memcpy(at<int16>(sh, off_measurecols), r->measurecols, sizeof(int16) * r->nmeasures);
    sh->census_on = r->census_on;
    sh->census_room = r->census_room;
    sh->nstrata = nstrata;
    sh->capacity = capacity;
    sh->off_alloc = off_alloc;
    sh->off_census_ids = off_census_ids;
    sh->ncensus = ncensus;
    sh->off_keylist = off_keylist;
    sh->nkeylist = nkeylist;
    sh->off_strata = off_strata;
    sh->strata_slot_bytes = slot_bytes;
    sh->nslots = nslots;
    for (int p = 0; p < nslots; ++p) memset(at<char>(sh, off_strata + slot_bytes * p), 0, slot_bytes);
    if (run.pcxt != nullptr && mode == 1) {
        run.area = dsa_create(LWTRANCHE_PARALLEL_QUERY_DSA);
        sh->area = dsa_get_handle(run.area);
    }
    run.sh = sh;
    // (the caller fills its parts of the block, then strata_scan runs it)
    (void)pscans;
    return run;
}

// Launches the workers, scans the leader's share of every leaf, waits.
void strata_scan(const StrataRead* r, StrataRun* run) {
    ReaderShared* sh = run->sh;
    if (run->pcxt != nullptr) {
        LaunchParallelWorkers(run->pcxt);
        run->launched = run->pcxt->nworkers_launched;
    }
    run->leader = strata_participant(sh, 0);
    Snapshot snapshot = GetActiveSnapshot();
    ColumnsView none_view;
    memset(&none_view, 0, sizeof none_view);
    for (int l = 0; l < r->nrels; ++l) {
        ParallelTableScanDesc pscan =
            run->pcxt ? static_cast<ParallelTableScanDesc>(shm_toc_lookup(run->pcxt->toc, kKeyScanBase + l, false))
                      : nullptr;
        RelScan rs;
        relscan_begin(&rs, sh, l, r->rels[l], pscan, snapshot, 0);
        rs.strata = run->leader;
        int64 none = 0;
        while (relscan_step(&rs, none_view, &none, &none, nullptr)) CHECK_FOR_INTERRUPTS();
        relscan_end(&rs);
    }
    while (run->launched > 0 && !reader_wait_workers(sh, run->pcxt, run->launched, r->fn, r->relname))
        CHECK_FOR_INTERRUPTS();
}

StrataReadStats strata_stats(const StrataRun* run) {
    StrataReadStats s;
    s.ms_read = glue_clock_ms() - run->t0;
    s.read_path = run->launched > 0 ? "parallel scan" : "scan";
    s.read_workers = run->launched;
    s.worker_rows = 0;
    for (int p = 1; p < run->sh->nslots; ++p)
        s.worker_rows += at<StrataSlot>(run->sh, run->sh->off_strata + run->sh->strata_slot_bytes * p)->rows;
    return s;
}

}  // namespace

StrataCounts strata_count(const StrataRead* r) {
    const int64 room = r->nmeasures > 0 ? r->census_room : 0;
    const Size slot_bytes = MAXALIGN(sizeof(StrataSlot)) + MAXALIGN(sizeof(sample::CensusSpread) * r->nmeasures) +
                            MAXALIGN(sizeof(int64_t) * r->nmeasures) +
                            sizeof(sample::CensusEntry) * static_cast<Size>(room) * r->nmeasures;
    StrataRun run = strata_begin(r, 1, slot_bytes, 0, 0, 0, 0, 0);
    ReaderShared* sh = run.sh;
    sh->census_room = room;
    strata_scan(r, &run);
    StrataCounts out;
    memset(&out, 0, sizeof out);
    out.stats = strata_stats(&run);
    // The workers' keys into the leader's table, their census heaps into the leader's.
    StrataParticipant* lead = run.leader;
    KeyTable* t = &lead->keys;
    out.rows = lead->slot->rows;
    out.heap = static_cast<sample::CensusEntry**>(palloc0(sizeof(void*) * Max(r->nmeasures, 1)));
    out.heap_n = static_cast<int64_t*>(palloc0(sizeof(int64_t) * Max(r->nmeasures, 1)));
    out.spread = static_cast<sample::CensusSpread*>(palloc0(sizeof(sample::CensusSpread) * Max(r->nmeasures, 1)));
    for (int m = 0; m < r->nmeasures; ++m) {
        out.heap[m] = static_cast<sample::CensusEntry*>(
            MemoryContextAllocHuge(CurrentMemoryContext, sizeof(sample::CensusEntry) * Max(room, 1)));
        out.spread[m] = lead->spread[m];
        out.heap_n[m] = lead->heap_n[m];
        memcpy(out.heap[m], lead->heap + m * room, sizeof(sample::CensusEntry) * lead->heap_n[m]);
    }
    for (int p = 1; p < sh->nslots; ++p) {
        StrataParticipant* w = strata_participant(sh, p);  // its slot's views (an empty key table)
        out.rows += w->slot->rows;
        if (w->slot->nkeys > 0) {
            const char* rd = static_cast<const char*>(dsa_get_address(run.area, w->slot->keys));
            for (int64 i = 0; i < w->slot->nkeys; ++i) {
                int64 count;
                uint32 len;
                memcpy(&count, rd, 8);
                memcpy(&len, rd + 8, 4);
                t->count[kt_enter(t, rd + 12, len)] += count;
                rd += 12 + len;
            }
        }
        for (int m = 0; m < r->nmeasures; ++m) {
            // Welford's merge (Chan, Golub & LeVeque 1979)
            sample::CensusSpread& a = out.spread[m];
            const sample::CensusSpread& b = w->spread[m];
            if (b.n > 0) {
                const double n = a.n + b.n, delta = b.mean - a.mean;
                a.m2 += b.m2 + delta * delta * a.n * b.n / n;
                a.mean += delta * b.n / n;
                a.n = n;
            }
            const sample::CensusEntry* h = w->heap + m * room;
            for (int64 i = 0; i < w->heap_n[m]; ++i)
                sample::census_offer(out.heap[m], out.heap_n[m], room, h[i].value, h[i].key, h[i].row);
        }
    }
    if (run.area) dsa_detach(run.area);
    reader_shared_destroy(run.pcxt);
    out.nkeys = t->n;
    out.key = static_cast<const char**>(palloc(sizeof(char*) * Max(t->n, 1)));
    out.len = t->len;
    out.count = t->count;
    for (int64 e = 0; e < t->n; ++e) out.key[e] = t->arena + t->off[e];
    out.table = t;
    out.stats.ms_read = glue_clock_ms() - run.t0;
    return out;
}

StrataSample strata_sample(const StrataRead* r, const StrataCounts* keys, const int64* stratum, int64 nstrata,
                           const int64* alloc, const uint64* census_ids, int64 ncensus, uint64 seed) {
    int64 capacity = 0;
    Size list_bytes = 0;
    for (int64 s = 0; s < nstrata; ++s) capacity += alloc[s];
    for (int64 i = 0; i < keys->nkeys; ++i) list_bytes += 12 + keys->len[i];
    const Size slot_bytes = MAXALIGN(sizeof(StrataSlot)) + MAXALIGN(sizeof(int64) * nstrata) +
                            sizeof(uint64) * 2 * static_cast<Size>(capacity);
    StrataRun run = strata_begin(r, 2, slot_bytes, list_bytes, nstrata, capacity, keys->nkeys, ncensus);
    ReaderShared* sh = run.sh;
    sh->sample_seed = seed;
    int64* a = at<int64>(sh, sh->off_alloc);
    for (int64 s = 0, b = 0; s < nstrata; ++s) {
        a[s] = alloc[s];
        a[nstrata + s] = b;
        b += alloc[s];
    }
    memcpy(at<uint64>(sh, sh->off_census_ids), census_ids, sizeof(uint64) * ncensus);
    char* w = at<char>(sh, sh->off_keylist);
    for (int64 i = 0; i < keys->nkeys; ++i) {
        memcpy(w, &stratum[i], 8);
        memcpy(w + 8, &keys->len[i], 4);
        memcpy(w + 12, keys->key[i], keys->len[i]);
        w += 12 + keys->len[i];
    }
    strata_scan(r, &run);
    StrataSample out;
    memset(&out, 0, sizeof out);
    out.stats = strata_stats(&run);
    out.ids = static_cast<uint64*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * Max(capacity, 1)));
    out.begin = static_cast<int64*>(palloc(sizeof(int64) * Max(nstrata, 1)));
    out.size = static_cast<int64*>(palloc0(sizeof(int64) * Max(nstrata, 1)));
    // Per stratum: the alloc smallest (priority, id) of every participant's heap, then in id order.
    StrataParticipant** parts = static_cast<StrataParticipant**>(palloc(sizeof(void*) * sh->nslots));
    parts[0] = run.leader;
    for (int p = 1; p < sh->nslots; ++p) {
        parts[p] = static_cast<StrataParticipant*>(palloc0(sizeof(StrataParticipant)));
        char* slot = at<char>(sh, sh->off_strata + sh->strata_slot_bytes * p);
        char* body = slot + MAXALIGN(sizeof(StrataSlot));
        parts[p]->size = reinterpret_cast<int64*>(body);
        parts[p]->pri = reinterpret_cast<uint64*>(body + MAXALIGN(sizeof(int64) * nstrata));
        parts[p]->tid = parts[p]->pri + capacity;
    }
    uint64* mp = static_cast<uint64*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * Max(capacity, 1)));
    int64 b = 0;
    for (int64 s = 0; s < nstrata; ++s) {
        out.begin[s] = b;
        int64 n = 0;
        for (int p = 0; p < sh->nslots; ++p)
            for (int64 i = 0; i < parts[p]->size[s]; ++i)
                bottom_offer(mp + b, out.ids + b, &n, alloc[s], parts[p]->pri[b + i], parts[p]->tid[b + i]);
        std::sort(out.ids + b, out.ids + b + n);
        out.size[s] = n;
        b += alloc[s];
    }
    reader_shared_destroy(run.pcxt);
    out.stats.ms_read = glue_clock_ms() - run.t0;
    return out;
}

int64 strata_find_key(const StrataCounts* c, const char* key, uint32 len) {
    const uint64 h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(key), static_cast<int>(len), 0);
    return kt_find(static_cast<const KeyTable*>(c->table), key, len, h);
}

uint32 strata_row_key(const StrataRead* r, int leaf, const Datum* values, const bool* isnull, char** buf, Size* cap) {
    return build_key(leaf, r->nkeys, r->keycols, r->keylen, r->keybyval, values, isnull, buf, cap);
}

void strata_key_values(const StrataRead* r, const char* key, uint32 len, int* leaf, Datum* values, bool* isnull) {
    int32 l;
    memcpy(&l, key, sizeof l);
    *leaf = l;
    const char* p = key + sizeof l;
    for (int k = 0; k < r->nkeys; ++k) {
        isnull[k] = *p++ == 0;
        values[k] = 0;
        if (isnull[k]) continue;
        const int16 typlen = r->keylen[k];
        if (typlen > 0 && r->keybyval[k]) {
            union {
                int64 i8;
                char b[8];
            } u;
            memcpy(u.b, p, typlen);
            values[k] = fetch_att(u.b, true, typlen);
            p += typlen;
        } else if (typlen > 0) {
            char* v = static_cast<char*>(palloc(typlen));
            memcpy(v, p, typlen);
            values[k] = PointerGetDatum(v);
            p += typlen;
        } else if (typlen == -1) {
            uint32 n;
            memcpy(&n, p, 4);
            struct varlena* v = static_cast<struct varlena*>(palloc(VARHDRSZ + n));
            SET_VARSIZE(v, VARHDRSZ + n);
            memcpy(VARDATA(v), p + 4, n);
            values[k] = PointerGetDatum(v);
            p += 4 + n;
        } else {
            values[k] = CStringGetDatum(pstrdup(p));
            p += strlen(p) + 1;
        }
    }
    Assert(p == key + len);
}
