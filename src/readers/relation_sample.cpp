// The sampler of table synopses (relation_reader.h: sample_relation): the
// relation reader's scans in sampling mode (relation_scan.h), the leader
// scanning its share of the pages too, then merging the participants'
// bottom-m samples. Plain C-style code, as in relation_reader.cpp.
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"

extern "C" {
#include "access/htup_details.h"  // MaxHeapTuplesPerPage
#include "miscadmin.h"
#include "optimizer/paths.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
}

#include <algorithm>

using namespace relscan;

namespace {

// DSM for the participants' samples (16 bytes a sampled row each): past
// this, fewer workers.
constexpr Size kMaxSampleBytes = Size(1) << 30;

}  // namespace

RelationSample sample_relation(const char* fn, Relation rel, int ncheck, const AttrNumber* attnums, const Oid* types,
                               const char* const* names, int64 sample_m, uint64 seed) {
    Assert(ncheck >= 0 && ncheck <= kMaxCols && sample_m > 0);
    double t0 = glue_clock_ms();
    const char* relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
                                                     RelationGetRelationName(rel));
    // No snapshot sees more rows than the pages hold: a sample_size far above
    // the table's size must not size the participants' buffers.
    const BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
    sample_m = std::min<int64>(sample_m, std::max<int64>(1, static_cast<int64>(nblocks) * MaxHeapTuplesPerPage));
    const Size slot_bytes = sample_slot_bytes(sample_m);
    if (slot_bytes > kMaxSampleBytes)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: a sample of " INT64_FORMAT " rows of %s needs more than 1 GB while it is drawn", fn,
                               sample_m, relname),
                        errhint("Use a smaller sample_size.")));
    int nworkers = choose_workers(rel, nblocks, rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP);
    while (nworkers > 0 && slot_bytes * (nworkers + 1) > kMaxSampleBytes) --nworkers;
    const int nslots = nworkers + 1;

    AttrNumber maxatt = 0;
    for (int c = 0; c < ncheck; ++c) maxatt = Max(maxatt, attnums[c]);
    ReaderLayout layout = reader_layout(1, ncheck);
    Size off_samples = layout.end;
    Size shared_bytes = add_size(off_samples, mul_size(slot_bytes, nslots));

    ParallelContext* pcxt;
    ParallelTableScanDesc* pscans;
    Snapshot snapshot = GetActiveSnapshot();
    ReaderShared* sh = reader_shared_create(nworkers, &rel, 1, snapshot, shared_bytes, layout, &pcxt, &pscans);
    reader_shared_init(sh, layout, fn, relname, &rel, 1, ncheck, names, types, attnums, &maxatt);
    sh->off_samples = off_samples;
    sh->sample_bytes = slot_bytes;
    sh->sample_m = sample_m;
    sh->sample_seed = seed;
    sh->nslots = nslots;
    for (int p = 0; p < nslots; ++p) memset(sample_slot(sh, p), 0, sizeof(SampleSlot));

    int launched = 0;
    if (pcxt != nullptr) {
        LaunchParallelWorkers(pcxt);
        launched = pcxt->nworkers_launched;
    }
    // The leader's share (all of it when no worker started).
    RelScan rs;
    relscan_begin(&rs, sh, 0, rel, pscans ? pscans[0] : nullptr, snapshot, 0);
    ColumnsView none_view;
    memset(&none_view, 0, sizeof none_view);
    int64 none = 0;
    while (relscan_step(&rs, none_view, &none, &none, nullptr)) CHECK_FOR_INTERRUPTS();
    relscan_end(&rs);
    while (launched > 0 && !reader_wait_workers(sh, pcxt, launched, fn, relname)) CHECK_FOR_INTERRUPTS();

    // Merge: the sample_m smallest (priority, tid) of all participants.
    RelationSample out;
    memset(&out, 0, sizeof out);
    int64 total = 0;
    for (int p = 0; p < nslots; ++p) {
        total += sample_slot(sh, p)->size;
        out.rows += sample_slot(sh, p)->rows;
        if (p > 0) out.worker_rows += sample_slot(sh, p)->rows;
    }
    Ranked* all = static_cast<Ranked*>(MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Ranked) * Max(total, 1)));
    int64 n = 0;
    for (int p = 0; p < nslots; ++p) {
        SampleSlot* s = sample_slot(sh, p);
        const uint64* pri = sample_priorities(s);
        const uint64* tid = sample_tids(sh, s);
        for (int64 i = 0; i < s->size; ++i) all[n++] = Ranked{pri[i], tid[i]};
    }
    reader_shared_destroy(pcxt);  // sh is gone from here on
    out.m = bottom_cut(all, n, sample_m);
    std::sort(all, all + out.m, [](const Ranked& a, const Ranked& b) { return a.id < b.id; });
    out.tids = static_cast<ItemPointerData*>(MemoryContextAllocHuge(CurrentMemoryContext,
                                                                    sizeof(ItemPointerData) * Max(out.m, 1)));
    for (int64 i = 0; i < out.m; ++i) unpack_tid(all[i].id, &out.tids[i]);
    pfree(all);
    out.ms_read = glue_clock_ms() - t0;
    out.read_path = launched > 0 ? "parallel scan" : "scan";
    out.read_workers = launched;
    return out;
}
