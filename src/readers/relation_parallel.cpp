// The relation reader's parallel machinery, shared by the column reader
// (relation_reader.cpp) and the sampler of table synopses
// (relation_sample.cpp): how many workers a read asks for
// (approx_gpu.read_workers), the parallel context with its shared block, and
// waiting for the workers (relation_scan.h describes the protocol).
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"

extern "C" {
#include "access/parallel.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "optimizer/cost.h"
#include "optimizer/paths.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/wait_event.h"
}

using namespace relscan;

// Workers for `pages` heap pages of `top`, unless approx_gpu.read_workers
// says otherwise: the table's parallel_workers option, else none under 8 x
// min_parallel_table_scan_size -- a worker costs a process start and this
// library's load (30-40 ms measured on 2 cores), which a table under about
// 64 MB does not repay -- and above it one worker for every 4 x
// min_parallel_table_scan_size (32 MB: 20-30 ms of reading for one worker),
// at least PostgreSQL's rule for a parallel sequential scan (one worker, one
// more for every tripling), capped by max_parallel_workers_per_gather: a
// worker here does no per-row executor work, so it repays its start on far
// less of the table than an executor worker, and the operators that read
// whole tables are bound by the read (issue 39: 4 workers by PostgreSQL's
// rule for 10^7 rows where 8 were allowed).
int relscan::choose_workers(Relation top, BlockNumber pages, bool any_temp) {
    // Only this backend can read temporary tables; no workers inside a
    // parallel operation.
    if (any_temp || !IsUnderPostmaster || IsInParallelMode()) return 0;
    // No more than max_parallel_workers could ever start: the shared block
    // is sized by the workers asked for.
    if (relscan::read_workers >= 0) return Min(relscan::read_workers, max_parallel_workers);
    int workers = -1;
    if (top->rd_rel->relkind == RELKIND_RELATION || top->rd_rel->relkind == RELKIND_MATVIEW)
        workers = RelationGetParallelWorkers(top, -1);
    if (workers < 0) {
        double threshold = 8.0 * Max(min_parallel_table_scan_size, 1);
        if (pages < threshold) return 0;
        const double per_worker = 4.0 * Max(min_parallel_table_scan_size, 1);
        workers = 1;
        while (pages >= threshold * 3 && workers < 1024) {
            ++workers;
            threshold *= 3;
        }
        workers = static_cast<int>(Max(static_cast<double>(workers), Min(pages / per_worker, 1024.0)));
    }
    return Min(Min(workers, max_parallel_workers_per_gather), max_parallel_workers);
}

// The chunk pool (relation_scan.h): a worker takes a FREE chunk (waiting on
// cv_free when none is), and marks a filled one FULL for the leader.
int relscan::acquire_chunk(ReaderShared* sh) {
    for (;;) {
        int got = -1;
        SpinLockAcquire(&sh->mutex);
        for (int i = 0; i < sh->nchunks; ++i)
            if (header(sh, i)->state == kFree) {
                header(sh, i)->state = kFilling;
                got = i;
                break;
            }
        SpinLockRelease(&sh->mutex);
        if (got >= 0) {
            ConditionVariableCancelSleep();
            ChunkHeader* h = header(sh, got);
            h->rows = 0;
            h->skipped = 0;
            h->seen = 0;
            memset(h->null_counts, 0, sizeof h->null_counts);
            return got;
        }
        SpinLockAcquire(&sh->mutex);
        ++sh->chunk_waits;
        SpinLockRelease(&sh->mutex);
        ConditionVariableSleep(&sh->cv_free, PG_WAIT_EXTENSION);
    }
}

void relscan::publish_chunk(ReaderShared* sh, int i) {
    SpinLockAcquire(&sh->mutex);
    header(sh, i)->state = kFull;
    SpinLockRelease(&sh->mutex);
    ConditionVariableBroadcast(&sh->cv_full);
}

ReaderLayout relscan::reader_layout(int nrels, int ncols) {
    ReaderLayout l;
    l.off_relids = MAXALIGN(sizeof(ReaderShared));
    l.off_attnums = MAXALIGN(l.off_relids + sizeof(Oid) * nrels);
    l.off_maxatt = MAXALIGN(l.off_attnums + sizeof(AttrNumber) * nrels * Max(ncols, 1));
    l.end = MAXALIGN(l.off_maxatt + sizeof(AttrNumber) * nrels);
    return l;
}

ReaderShared* relscan::reader_shared_create(int nworkers, Relation* rels, int nrels, Snapshot snapshot,
                                            Size shared_bytes, const ReaderLayout& layout, ParallelContext** pcxt,
                                            ParallelTableScanDesc** pscans) {
    *pcxt = nullptr;
    *pscans = nullptr;
    if (nworkers == 0) {
        ReaderShared* sh = static_cast<ReaderShared*>(palloc(shared_bytes));
        memset(sh, 0, layout.end);
        return sh;
    }
    EnterParallelMode();
    ParallelContext* p = CreateParallelContext("approx_gpu", "approx_gpu_relation_reader_worker", nworkers);
    shm_toc_estimate_chunk(&p->estimator, shared_bytes);
    for (int r = 0; r < nrels; ++r)
        shm_toc_estimate_chunk(&p->estimator, table_parallelscan_estimate(rels[r], snapshot));
    shm_toc_estimate_keys(&p->estimator, 1 + nrels);
    InitializeParallelDSM(p);
    ReaderShared* sh = static_cast<ReaderShared*>(shm_toc_allocate(p->toc, shared_bytes));
    memset(sh, 0, layout.end);
    shm_toc_insert(p->toc, kKeyShared, sh);
    ParallelTableScanDesc* scans = static_cast<ParallelTableScanDesc*>(palloc(sizeof(ParallelTableScanDesc) * nrels));
    for (int r = 0; r < nrels; ++r) {
        scans[r] = static_cast<ParallelTableScanDesc>(shm_toc_allocate(p->toc,
                                                                       table_parallelscan_estimate(rels[r], snapshot)));
        table_parallelscan_initialize(rels[r], scans[r], snapshot);
        shm_toc_insert(p->toc, kKeyScanBase + r, scans[r]);
    }
    *pcxt = p;
    *pscans = scans;
    return sh;
}

void relscan::reader_shared_init(ReaderShared* sh, const ReaderLayout& layout, const char* fn, const char* relname,
                                 Relation* rels, int nrels, int ncols, const char* const* colnames, const Oid* types,
                                 const AttrNumber* atts, const AttrNumber* maxatt) {
    sh->off_relids = layout.off_relids;
    sh->off_attnums = layout.off_attnums;
    sh->off_maxatt = layout.off_maxatt;
    strlcpy(sh->fn, fn, sizeof sh->fn);
    strlcpy(sh->relname, relname, sizeof sh->relname);
    for (int c = 0; c < ncols; ++c) {
        namestrcpy(&sh->colnames[c], colnames[c]);
        sh->types[c] = types[c];
    }
    sh->ncols = ncols;
    sh->nrels = nrels;
    sh->direct = !IsolationIsSerializable();
    for (int r = 0; r < nrels; ++r) at<Oid>(sh, sh->off_relids)[r] = RelationGetRelid(rels[r]);
    memcpy(at<AttrNumber>(sh, sh->off_attnums), atts, sizeof(AttrNumber) * nrels * ncols);
    memcpy(at<AttrNumber>(sh, sh->off_maxatt), maxatt, sizeof(AttrNumber) * nrels);
    SpinLockInit(&sh->mutex);
    ConditionVariableInit(&sh->cv_full);
    ConditionVariableInit(&sh->cv_free);
}

bool relscan::reader_wait_workers(ReaderShared* sh, ParallelContext* pcxt, int launched, const char* fn,
                                  const char* relname) {
    SpinLockAcquire(&sh->mutex);
    bool all_done = sh->workers_done == launched;
    SpinLockRelease(&sh->mutex);
    if (all_done) return true;
    // A worker that stopped without finishing failed: its ERROR (or
    // "failed to initialize") comes out of WaitForParallelWorkersToFinish.
    if (ConditionVariableTimedSleep(&sh->cv_full, 100, PG_WAIT_EXTENSION)) {
        for (int w = 0; w < launched; ++w) {
            pid_t pid;
            if (GetBackgroundWorkerPid(pcxt->worker[w].bgwhandle, &pid) == BGWH_STOPPED) {
                SpinLockAcquire(&sh->mutex);
                all_done = sh->workers_done == launched;
                SpinLockRelease(&sh->mutex);
                if (all_done) break;
                ConditionVariableCancelSleep();
                WaitForParallelWorkersToFinish(pcxt);
                SpinLockAcquire(&sh->mutex);
                all_done = sh->workers_done == launched;
                SpinLockRelease(&sh->mutex);
                if (!all_done)
                    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                                    errmsg("%s: a parallel worker reading %s exited before it finished", fn, relname)));
                break;
            }
        }
    }
    return false;
}

void relscan::reader_shared_destroy(ParallelContext* pcxt) {
    ConditionVariableCancelSleep();
    if (pcxt == nullptr) return;
    WaitForParallelWorkersToFinish(pcxt);
    DestroyParallelContext(pcxt);
    ExitParallelMode();
}
