// The relation reader (see relation_reader.h), the backend's side: it checks
// the columns and privileges, chooses the path (parallel scan, scan, or the
// query through SPI), lays out its DSM block (relation_scan.h describes the
// protocol; relation_parallel.cpp creates it with the parallel context),
// scans pages itself and appends the workers' chunks. Plain C-style code:
// waits and scans process interrupts and may longjmp, so nothing here has a
// destructor.
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"

extern "C" {
#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "optimizer/cost.h"
#include "optimizer/paths.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

using namespace relscan;

namespace {

constexpr int kLeaderSteps = 16;  // scan steps (pages) the leader takes between looks at the chunk pool

// ---- the leader ----------------------------------------------------------------------------

bool is_scannable_kind(char relkind) {
    return relkind == RELKIND_RELATION || relkind == RELKIND_MATVIEW || relkind == RELKIND_PARTITIONED_TABLE;
}

// The result being filled by the leader.
struct ReadResult {
    QueryColumns* out;
    const ColumnKind* kinds;
    const bool* nullable;
    int64 capacity;
    ColumnsView view;  // out's columns as raw 8-byte slots (derived in reserve_rows)
};

// Room for `need` rows; res->view follows the (possibly moved) columns.
void reserve_rows(ReadResult* res, int64 need) {
    QueryColumns* out = res->out;
    reserve_columns(out, res->kinds, res->nullable, CurrentMemoryContext, &res->capacity, need);
    for (int c = 0; c < out->ncols; ++c) {
        res->view.values[c] = res->kinds[c] == ColumnKind::Integer ? reinterpret_cast<char*>(out->ints[c])
                                                                   : reinterpret_cast<char*>(out->floats[c]);
        res->view.nulls[c] = out->nulls[c];
    }
}

// Appends FULL chunks to the result; returns how many were taken.
int drain_chunks(ReaderShared* sh, ReadResult* res) {
    int taken = 0;
    for (int i = 0; i < sh->nchunks; ++i) {
        SpinLockAcquire(&sh->mutex);
        bool full = header(sh, i)->state == kFull;
        SpinLockRelease(&sh->mutex);
        if (!full) continue;
        ChunkHeader* h = header(sh, i);
        QueryColumns* out = res->out;
        reserve_rows(res, out->rows + h->rows);
        ColumnsView src = chunk_view(sh, i);
        for (int c = 0; c < sh->ncols; ++c) {
            memcpy(res->view.values[c] + out->rows * 8, src.values[c], static_cast<Size>(h->rows) * 8);
            if (src.nulls[c]) memcpy(res->view.nulls[c] + out->rows, src.nulls[c], static_cast<Size>(h->rows));
            out->null_counts[c] += h->null_counts[c];
        }
        const int64 seen = sh->bound_k > 0 ? h->seen : h->rows;  // bounded: rows read, not kept
        out->rows += h->rows;
        out->rows_seen += sh->bound_k > 0 ? h->seen : 0;
        out->rows_skipped += h->skipped;
        out->worker_rows += seen + h->skipped;
        SpinLockAcquire(&sh->mutex);
        h->state = kFree;
        SpinLockRelease(&sh->mutex);
        ++taken;
    }
    if (taken > 0) ConditionVariableBroadcast(&sh->cv_free);
    return taken;
}

// The leader's own scans: relation by relation, kLeaderSteps pages at a time.
struct LeaderScan {
    ReaderShared* sh;
    Relation* rels;
    ParallelTableScanDesc* pscans;  // nullptr: serial scans
    Snapshot snapshot;
    int rel;  // current relation; nrels when done
    bool open;
    RelScan scan;
    BoundSlot* bound;  // bounded reads: the leader's best rows
};

// Scans up to kLeaderSteps pages into the result; false once every relation is done.
bool leader_step(LeaderScan* ls, ReadResult* res) {
    ReaderShared* sh = ls->sh;
    QueryColumns* out = res->out;
    for (int step = 0; step < kLeaderSteps; ++step) {
        if (ls->rel >= sh->nrels) return false;
        if (!ls->open) {
            relscan_begin(&ls->scan, sh, ls->rel, ls->rels[ls->rel], ls->pscans ? ls->pscans[ls->rel] : nullptr,
                          ls->snapshot, 0);
            ls->scan.bound = ls->bound;
            ls->open = true;
        }
        if (!ls->bound) reserve_rows(res, out->rows + kPageRows);
        if (!relscan_step(&ls->scan, res->view, &out->rows, &out->rows_skipped, out->null_counts)) {
            relscan_end(&ls->scan);
            ls->open = false;
            ++ls->rel;
        }
    }
    return ls->rel < sh->nrels;
}

// The SPI route: the query the caller would run.
QueryColumns read_through_query(const char* fn, const char* rel_arg, const char* relname, int ncols,
                                const char* const* column_names, const ColumnKind* kinds, bool allow_infinity,
                                const bool* nullable, const char* why) {
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfoString(&q, "SELECT ");
    for (int c = 0; c < ncols; ++c) appendStringInfo(&q, "%s%s", c ? ", " : "", quote_identifier(column_names[c]));
    appendStringInfo(&q, " FROM %s", relname);
    QueryColumns out = read_query_columns(fn, rel_arg, q.data, ncols, kinds, column_names, allow_infinity, nullable);
    out.read_path = why;
    return out;
}

// ---- resolve: the relation, its columns, the privileges and the path ------------------------

// What a read is of, and how it goes.
struct ReadTarget {
    Relation top;
    const char* relname;            // quoted, schema-qualified, for errors
    AttrNumber top_atts[kMaxCols];  // the columns in `top`
    Oid types[kMaxCols];            // their base types
    const char* via_query;          // non-null: run the query instead; why, for last_run()
    List* members;                  // otherwise: every relation with storage under `top`
};

// Opens the relation and checks it and its columns (in the order PostgreSQL
// reports errors: no type is told to a reader without the privilege), then
// chooses the path.
void resolve_read(const char* fn, const char* rel_arg, Oid relid, int ncols, const char* const* column_names,
                  const char* const* column_args, const ColumnKind* kinds, ReadTarget* t) {
    Relation top = try_relation_open(relid, AccessShareLock);
    if (top == nullptr)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("%s: %s: relation with OID %u does not exist", fn, rel_arg, relid)));
    const char relkind = top->rd_rel->relkind;
    const char* relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(top)),
                                                     RelationGetRelationName(top));
    t->top = top;
    t->relname = relname;
    if (!is_scannable_kind(relkind) && relkind != RELKIND_VIEW && relkind != RELKIND_FOREIGN_TABLE)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("%s: %s: %s is not a table, view or materialized view", fn, rel_arg, relname)));

    TupleDesc desc = RelationGetDescr(top);
    for (int c = 0; c < ncols; ++c) {
        AttrNumber a = get_attnum(relid, column_names[c]);
        if (a == InvalidAttrNumber || a < 0)
            ereport(ERROR,
                    (errcode(ERRCODE_UNDEFINED_COLUMN), errmsg("%s: %s: column \"%s\" of relation %s does not exist",
                                                               fn, column_args[c], column_names[c], relname)));
        t->top_atts[c] = a;
    }
    if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
        for (int c = 0; c < ncols; ++c)
            if (pg_attribute_aclcheck(relid, t->top_atts[c], GetUserId(), ACL_SELECT) != ACLCHECK_OK)
                ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                                errmsg("%s: permission denied for table %s", fn, relname),
                                errdetail("Reading column \"%s\" needs the SELECT privilege on it or on the table.",
                                          column_names[c])));
    for (int c = 0; c < ncols; ++c) {
        Oid declared = TupleDescAttr(desc, t->top_atts[c] - 1)->atttypid;
        t->types[c] = getBaseType(declared);
        if (!column_type_ok(kinds[c], t->types[c]))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: %s: column \"%s\" of relation %s must be %s, not %s", fn, column_args[c],
                                   column_names[c], relname, column_kind_types(kinds[c]), format_type_be(declared))));
    }

    // Rows the query would filter or that are not in a heap: run the query.
    t->via_query = nullptr;
    if (relkind == RELKIND_VIEW)
        t->via_query = "query (view)";
    else if (relkind == RELKIND_FOREIGN_TABLE)
        t->via_query = "query (foreign table)";
    else if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
        t->via_query = "query (row-level security)";
    if (relkind == RELKIND_MATVIEW && !RelationIsPopulated(top))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: materialized view %s has not been populated", fn, relname),
                        errhint("Use the REFRESH MATERIALIZED VIEW command.")));

    // Every relation with storage under `top` (itself, partitions, children).
    t->members = NIL;
    if (t->via_query != nullptr) return;
    List* all = (relkind == RELKIND_PARTITIONED_TABLE || top->rd_rel->relhassubclass)
                    ? find_all_inheritors(relid, AccessShareLock, nullptr)
                    : list_make1_oid(relid);
    ListCell* lc;
    foreach (lc, all) {
        Oid child = lfirst_oid(lc);
        char k = get_rel_relkind(child);
        if (k == RELKIND_PARTITIONED_TABLE) continue;
        if (k == RELKIND_FOREIGN_TABLE) {  // a foreign partition: only the query reads it
            t->via_query = "query (foreign partition)";
            break;
        }
        t->members = lappend_oid(t->members, child);
    }
}

// ---- plan: the members opened, the workers and the shared block ------------------------------

struct ReadPlan {
    int nrels;
    Relation* rels;     // the members, open (rels[i] == top for top itself)
    double tuples;      // the statistics' row count (0: none)
    Snapshot snapshot;  // the statement's
    ReaderShared* sh;
    ParallelContext* pcxt;          // nullptr: no workers
    ParallelTableScanDesc* pscans;  // nullptr: serial scans
};

// Opens the members, maps the columns by name (attnums differ between
// children), chooses the workers and lays out the shared block.
void plan_read(const char* fn, Oid relid, int ncols, const char* const* column_names, const ColumnKind* kinds,
               bool allow_infinity, const bool* nullable, const ReadBound* bound, const ReadTarget* t, ReadPlan* p) {
    const int nrels = list_length(t->members);
    Relation* rels = static_cast<Relation*>(palloc0(sizeof(Relation) * Max(nrels, 1)));
    AttrNumber* atts = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * Max(nrels, 1) * ncols));
    AttrNumber* maxatt = static_cast<AttrNumber*>(palloc0(sizeof(AttrNumber) * Max(nrels, 1)));
    BlockNumber pages = 0;
    double tuples = 0;
    bool any_temp = false;
    for (int r = 0; r < nrels; ++r) {
        Oid child = list_nth_oid(t->members, r);
        rels[r] = child == relid ? t->top : table_open(child, AccessShareLock);
        for (int c = 0; c < ncols; ++c) {
            AttrNumber a = child == relid ? t->top_atts[c] : get_attnum(child, column_names[c]);
            if (a <= 0)
                ereport(ERROR,
                        (errcode(ERRCODE_UNDEFINED_COLUMN), errmsg("%s: column \"%s\" is missing in %s", fn,
                                                                   column_names[c], RelationGetRelationName(rels[r]))));
            atts[r * ncols + c] = a;
            maxatt[r] = Max(maxatt[r], a);
        }
        pages += RelationGetNumberOfBlocks(rels[r]);
        if (rels[r]->rd_rel->reltuples > 0) tuples += rels[r]->rd_rel->reltuples;
        if (rels[r]->rd_rel->relpersistence == RELPERSISTENCE_TEMP) any_temp = true;
    }

    // Workers: none for temporary tables (only this backend can read them),
    // inside a parallel operation, or for small tables.
    const int nworkers = nrels > 0 ? choose_workers(t->top, pages, any_temp) : 0;

    // The shared block (the leader alone also uses it, from private memory).
    const int nchunks = nworkers > 0 ? nworkers * kChunksPerWorker : 0;
    Size chunk_bytes = static_cast<Size>(ncols) * kChunkRows * 9;
    ReaderLayout layout = reader_layout(nrels, ncols);
    Size off_headers = layout.end;
    Size off_data = MAXALIGN(off_headers + sizeof(ChunkHeader) * nchunks);
    Size shared_bytes = add_size(off_data, mul_size(chunk_bytes, nchunks));

    p->nrels = nrels;
    p->rels = rels;
    p->tuples = tuples;
    p->snapshot = GetActiveSnapshot();
    ReaderShared* sh = reader_shared_create(nworkers, rels, nrels, p->snapshot, shared_bytes, layout, &p->pcxt,
                                            &p->pscans);
    reader_shared_init(sh, layout, fn, t->relname, rels, nrels, ncols, column_names, t->types, atts, maxatt);
    sh->off_headers = off_headers;
    sh->off_data = off_data;
    sh->chunk_bytes = chunk_bytes;
    sh->nchunks = nchunks;
    sh->allow_infinity = allow_infinity;
    if (bound != nullptr && bound->k > 0 && bound->k <= kMaxBoundK && ncols == 2 && kinds[0] == ColumnKind::Integer &&
        kinds[1] == ColumnKind::Float && (nullable == nullptr || (!nullable[0] && !nullable[1]))) {
        sh->bound_k = bound->k;
        sh->bound_asc = bound->ascending;
    }
    for (int c = 0; c < ncols; ++c) {
        sh->kinds[c] = static_cast<uint8>(kinds[c]);
        sh->nullable[c] = nullable != nullptr && nullable[c];
    }
    memset(at<ChunkHeader>(sh, off_headers), 0, sizeof(ChunkHeader) * nchunks);
    p->sh = sh;
}

// ---- run: the scans, the workers' chunks appended, the end -----------------------------------

// Launches the workers, scans beside them and appends their chunks until every
// relation is read, then ends the parallel context and closes the relations.
QueryColumns run_read(const char* fn, int ncols, const ColumnKind* kinds, const bool* nullable, bool stage_for_gpu,
                      const ReadTarget* t, const ReadPlan* p) {
    ReaderShared* sh = p->sh;
    int launched = 0;
    if (p->pcxt != nullptr) {
        LaunchParallelWorkers(p->pcxt);
        launched = p->pcxt->nworkers_launched;
    }

    QueryColumns out;
    memset(&out, 0, sizeof out);
    out.ncols = ncols;
    ReadResult res;
    memset(&res, 0, sizeof res);
    res.out = &out;
    res.kinds = kinds;
    res.nullable = nullable;
    // Bounded: each participant's k rows; else the rows the statistics expect.
    const bool bounded = sh->bound_k > 0;
    reserve_rows(&res, bounded ? sh->bound_k * (launched + 1)
                               : static_cast<int64>(Min(p->tuples * 1.05 + kPageRows, 1e9)));
    // Uploads that overlap the reading (room for the rows the statistics
    // expect and some more; past that the engine uploads as before).
    StagedInput* staged = stage_for_gpu && !bounded && p->tuples > 0
                              ? stage_start(ncols, static_cast<int64>(Min(p->tuples * 1.05 + 16 * kChunkRows, 1e9)))
                              : nullptr;

    LeaderScan ls;
    memset(&ls, 0, sizeof ls);
    ls.sh = sh;
    ls.rels = p->rels;
    ls.pscans = p->pscans;
    ls.snapshot = p->snapshot;
    ls.bound = bounded ? bound_slot(sh) : nullptr;
    bool leader_done = false;
    for (;;) {
        if (launched > 0 && drain_chunks(sh, &res) > 0) {
            stage_tail(staged, res.view, out.rows, false);
            continue;
        }
        if (!leader_done) {
            leader_done = !leader_step(&ls, &res);
            stage_tail(staged, res.view, out.rows, false);
            CHECK_FOR_INTERRUPTS();
            continue;
        }
        if (launched == 0) break;
        if (reader_wait_workers(sh, p->pcxt, launched, fn, t->relname)) {
            drain_chunks(sh, &res);  // what the last worker published before finishing
            break;
        }
    }
    if (ls.bound) {  // the leader's own best rows
        reserve_rows(&res, out.rows + ls.bound->size);
        bound_take(ls.bound, res.view, out.rows, 0, ls.bound->size);
        out.rows += ls.bound->size;
        out.rows_seen += ls.bound->seen;
    }
    out.chunk_waits = sh->chunk_waits;  // sh lives in the DSM segment destroyed below
    reader_shared_destroy(p->pcxt);
    for (int r = 0; r < p->nrels; ++r)
        if (p->rels[r] != t->top) table_close(p->rels[r], NoLock);
    relation_close(t->top, NoLock);
    if (out.rows == 0)
        for (int c = 0; c < ncols; ++c) out.nulls[c] = nullptr;  // as read_query_columns: no row, no flags
    if (stage_done(staged, res.view, out.rows)) out.staged = staged;
    out.read_path = launched > 0 ? "parallel scan" : "scan";
    out.read_workers = launched;
    out.read_workers_planned = p->pcxt != nullptr ? p->pcxt->nworkers : 0;
    return out;
}

}  // namespace

QueryColumns read_relation_columns(const char* fn, const char* rel_arg, Oid relid, int ncols,
                                   const char* const* column_names, const char* const* column_args,
                                   const ColumnKind* kinds, bool allow_infinity, const bool* nullable,
                                   bool stage_for_gpu, const ReadBound* bound) {
    Assert(ncols > 0 && ncols <= kMaxCols);
    double t0 = glue_clock_ms();
    ReadTarget target;
    resolve_read(fn, rel_arg, relid, ncols, column_names, column_args, kinds, &target);
    QueryColumns out;
    if (target.via_query != nullptr) {
        out = read_through_query(fn, rel_arg, target.relname, ncols, column_names, kinds, allow_infinity, nullable,
                                 target.via_query);
        relation_close(target.top, NoLock);
    } else {
        ReadPlan plan;
        plan_read(fn, relid, ncols, column_names, kinds, allow_infinity, nullable, bound, &target, &plan);
        out = run_read(fn, ncols, kinds, nullable, stage_for_gpu, &target, &plan);
    }
    out.ms_read = glue_clock_ms() - t0;
    return out;
}
