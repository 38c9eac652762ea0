// The leader of a stratified, census or partitioned-parent table synopsis
// build's passes (relation_reader.h: strata_count, strata_sample): the shared
// block, the workers launched beside its own scans of every leaf, and the
// merge of the participants' keys, counts and census heaps (counting) or
// per-stratum samples (sampling). Plain C-style code, as in
// relation_reader.cpp.
#include "readers/relation_strata.h"

extern "C" {
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
}

#include <algorithm>

using namespace relscan;
namespace sample = approx::sample;

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
    const Size slot_bytes = MAXALIGN(sizeof(StrataSlot)) + count_layout(r->nmeasures, room, r->bottom).end;
    StrataRun run = strata_begin(r, 1, slot_bytes, 0, 0, 0, 0, 0);
    ReaderShared* sh = run.sh;
    sh->census_room = room;
    sh->strata_bottom = r->bottom;
    sh->sample_seed = r->seed;
    strata_scan(r, &run);
    StrataCounts out;
    memset(&out, 0, sizeof out);
    out.stats = strata_stats(&run);
    // The workers' keys into the leader's table, their census heaps into the leader's.
    StrataParticipant* lead = run.leader;
    KeyTable* t = &lead->keys;
    StrataParticipant** parts = static_cast<StrataParticipant**>(palloc(sizeof(void*) * sh->nslots));
    parts[0] = lead;
    for (int p = 1; p < sh->nslots; ++p) parts[p] = strata_participant(sh, p);  // its slot's views (an empty key table)
    // The census heaps and the bottom rows: every participant's offers
    // appended and cut back to the best (sample::census_merge_*, bottom_add:
    // linear, not a heap offer at a time), as sample_relation merges its.
    out.heap = static_cast<sample::CensusEntry**>(palloc0(sizeof(void*) * Max(r->nmeasures, 1)));
    out.heap_n = static_cast<int64_t*>(palloc0(sizeof(int64_t) * Max(r->nmeasures, 1)));
    out.spread = static_cast<sample::CensusSpread*>(palloc0(sizeof(sample::CensusSpread) * Max(r->nmeasures, 1)));
    for (int m = 0; m < r->nmeasures; ++m) {
        int64 offered = 0;
        for (int p = 0; p < sh->nslots; ++p) offered += parts[p]->heap_n[m];
        const int64 cap = Min(offered, 2 * room);
        out.heap[m] = static_cast<sample::CensusEntry*>(
            MemoryContextAllocHuge(CurrentMemoryContext, sizeof(sample::CensusEntry) * Max(cap, 1)));
        int64 n = 0;
        for (int p = 0; p < sh->nslots; ++p) {
            const sample::CensusEntry* h = parts[p]->heap + m * room;
            for (int64 i = 0; i < parts[p]->heap_n[m]; ++i) n = sample::census_merge_add(out.heap[m], n, room, cap, h[i]);
        }
        out.heap_n[m] = sample::census_merge_end(out.heap[m], n, room);
        out.spread[m] = lead->spread[m];
    }
    Ranked* bottom = nullptr;
    int64 nbottom = 0;
    if (r->bottom > 0) {
        int64 offered = 0;
        for (int p = 0; p < sh->nslots; ++p) offered += *parts[p]->bsize;
        const int64 cap = Min(offered, 2 * r->bottom);
        bottom = static_cast<Ranked*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Ranked) * Max(cap, 1)));
        for (int p = 0; p < sh->nslots; ++p)
            nbottom = bottom_add(bottom, nbottom, r->bottom, cap, parts[p]->bpri, parts[p]->btid, *parts[p]->bsize);
    }
    out.rows = lead->slot->rows;
    for (int p = 1; p < sh->nslots; ++p) {
        StrataParticipant* w = parts[p];
        out.rows += w->slot->rows;
        if (w->slot->nkeys > 0) {
            const char* rd = static_cast<const char*>(dsa_get_address(run.area, w->slot->keys));
            for (int64 i = 0; i < w->slot->nkeys; ++i) {
                int64 count;
                uint32 len;
                memcpy(&count, rd, 8);
                memcpy(&len, rd + 8, 4);
                const int64 e = kt_enter(t, rd + 12, len);  // (it may move the arrays)
                t->count[e] += count;
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
        }
    }
    if (r->bottom > 0) {  // smallest (priority, id) first
        nbottom = bottom_cut(bottom, nbottom, r->bottom);
        std::sort(bottom, bottom + nbottom, approx::ranked_before);
        out.bottom_ids = static_cast<uint64*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * Max(nbottom, 1)));
        for (int64 i = 0; i < nbottom; ++i) out.bottom_ids[i] = bottom[i].id;
        out.nbottom = nbottom;
        pfree(bottom);
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
    // (bottom_add / bottom_cut over every participant's offers: linear.)
    int64 most = 0;
    for (int64 s = 0; s < nstrata; ++s) {
        int64 offered = 0;
        for (int p = 0; p < sh->nslots; ++p) offered += parts[p]->size[s];
        most = Max(most, Min(offered, 2 * alloc[s]));
    }
    Ranked* buf = static_cast<Ranked*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Ranked) * Max(most, 1)));
    int64 b = 0;
    for (int64 s = 0; s < nstrata; ++s) {
        out.begin[s] = b;
        int64 offered = 0, n = 0;
        for (int p = 0; p < sh->nslots; ++p) offered += parts[p]->size[s];
        const int64 cap = Min(offered, 2 * alloc[s]);
        for (int p = 0; p < sh->nslots; ++p)
            n = bottom_add(buf, n, alloc[s], cap, parts[p]->pri + b, parts[p]->tid + b, parts[p]->size[s]);
        n = bottom_cut(buf, n, alloc[s]);
        for (int64 i = 0; i < n; ++i) out.ids[b + i] = buf[i].id;
        std::sort(out.ids + b, out.ids + b + n);
        out.size[s] = n;
        b += alloc[s];
    }
    pfree(buf);
    reader_shared_destroy(run.pcxt);
    out.stats.ms_read = glue_clock_ms() - run.t0;
    return out;
}

int64 strata_find_key(const StrataCounts* c, const char* key, uint32 len) {
    const uint64 h = key_hash64(key, len);
    return kt_find(static_cast<const KeyTable*>(c->table), key, len, h);
}

