// SQL glue for topk_nra(relation, id_column, score_columns, k, batch): the
// top k objects by the sum of several score columns, read as sorted lists by
// the NRA engine of approx::topk. A list is read by a backward scan of a
// B-tree index on its column (index_reader.h; index-only when the index also
// holds the id column), else, when the column has no such index or row-level
// security applies, by an SPI cursor (ORDER BY col DESC: PostgreSQL sorts).
// One static function per phase: the arguments (nra_check_args), the
// relation (nra_resolve_relation), the columns' minimums (nra_read_minimums),
// the lists (nra_open_lists), the rounds (nra_rounds), the objects in no list
// (nra_add_unlisted_objects), the winners' scores (nra_rank_winners) and the
// result set (nra_emit).
#include "index_reader.h"
#include "runtime.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <cmath>
#include <new>
#include <type_traits>

#include "core/topk.hpp"

namespace topk = approx::topk;

namespace {

// Writes a cursor's (id int8, score float8) rows into the current list buffer.
struct ListReceiver {
    DestReceiver pub;  // must be first
    const char* column;
    int64* ids;
    double* scores;
    int64 n;
    int64 cap;
};

bool list_receive(TupleTableSlot* slot, DestReceiver* self) {
    ListReceiver* r = reinterpret_cast<ListReceiver*>(self);
    slot_getsomeattrs(slot, 2);
    if (r->n >= r->cap || slot->tts_isnull[0] || slot->tts_isnull[1])
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("topk_nra: unexpected row from column \"%s\"", r->column)));
    double v = DatumGetFloat8(slot->tts_values[1]);
    if (std::isnan(v) || std::isinf(v))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("topk_nra: column \"%s\" contains %s", r->column, std::isnan(v) ? "NaN" : "an infinite value"),
                        errdetail("Scores are summed; they must be finite.")));
    r->ids[r->n] = DatumGetInt64(slot->tts_values[0]);
    r->scores[r->n] = v;
    ++r->n;
    return true;
}

void list_startup(DestReceiver*, int, TupleDesc) {}
void list_shutdown(DestReceiver*) {}
void list_destroy(DestReceiver*) {}

// Frees the engine's memory when its memory context goes, on success or ERROR.
struct NraHolder {
    topk::Nra* nra;
};

void nra_cleanup(void* arg) {
    NraHolder* h = static_cast<NraHolder*>(arg);
    if (h->nra) topk::nra_destroy(h->nra);
    h->nra = nullptr;
}

bool is_int_type(Oid t) { return t == INT2OID || t == INT4OID || t == INT8OID; }
bool is_score_type(Oid t) { return is_int_type(t) || t == FLOAT4OID || t == FLOAT8OID; }

AttrNumber column_attnum(Oid relid, const char* relname, const char* column) {
    AttrNumber a = get_attnum(relid, column);
    if (a == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("topk_nra: column \"%s\" of relation \"%s\" does not exist", column, relname)));
    if (a < 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("topk_nra: system column \"%s\" cannot be used", column)));
    return a;
}

// A valid, non-partial unique index on exactly this column.
bool has_unique_index(Relation rel, AttrNumber attnum) {
    List* indexes = RelationGetIndexList(rel);
    ListCell* lc;
    bool found = false;
    foreach (lc, indexes) {
        Oid index_oid = lfirst_oid(lc);
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
        if (!HeapTupleIsValid(tup)) continue;
        Form_pg_index ix = reinterpret_cast<Form_pg_index>(GETSTRUCT(tup));
        if (ix->indisunique && ix->indisvalid && ix->indnkeyatts == 1 && ix->indkey.values[0] == attnum &&
            heap_attisnull(tup, Anum_pg_index_indpred, nullptr) && heap_attisnull(tup, Anum_pg_index_indexprs, nullptr))
            found = true;
        ReleaseSysCache(tup);
        if (found) break;
    }
    list_free(indexes);
    return found;
}

// Everything one topk_nra call reads and produces; palloc'd, so nothing with a
// destructor is alive when an ERROR leaves nra_run().
struct NraCall {
    const char* fn;  // (value-initialised with new (...) NraCall(): every field zero)
    int m;
    int32 k;
    int32 batch;
    int64 rows_hint;
    const char** col;   // the score columns as given
    const char** qcol;  // r."column" (qualified with the relation's alias, quoted)
    const char* qid;    // r."id column"
    const char* qrel;   // "schema"."relation"
    Oid relid;
    Oid* index_oid;     // per list: the B-tree index read backward, or InvalidOid (a cursor)
    AttrNumber id_att;
    AttrNumber* att;    // per list: the score column's attribute number
    MemoryContext work;
    NraHolder* holder;
    // between the phases of nra_run()
    double* mins;     // the columns' minimums (the missing-score bounds)
    Relation heap;          // open while index readers are
    Snapshot snapshot;      // registered while index readers are
    IndexReader** readers;  // per list: an index reader, or nullptr (a cursor)
    Portal* portals;        // per list: a cursor, or nullptr (an index reader)
    int8* read_kind;        // per list: 0 cursor, 1 index scan, 2 index-only scan
    int64 heap_fetches;     // by the index readers
    approx::ExecContext ctx;
    // results
    bool empty;  // no objects
    size_t n_out;
    int64_t* out_ids;
    double* out_totals;
    topk::NraInfo info;
    bool need_unlisted;
    int64 unlisted;
    int64 random_accesses;
    double ms_read;
};
static_assert(std::is_trivially_destructible<NraCall>::value, "an ERROR may leave nra_run() with it alive");

// The caller's call, not our internal query: an ERROR raised inside one of the
// internal queries (a privilege, a lock, a cast) is raised again as an ERROR
// of the function, with the same SQLSTATE, without the internal query text.
// Cancellation, shutdown and our own errors pass unchanged.
void nra_rethrow(const char* fn, MemoryContext mcxt) {
    MemoryContextSwitchTo(mcxt);
    ErrorData* e = CopyErrorData();
    const size_t fl = strlen(fn);
    bool own = e->message != nullptr && strncmp(e->message, fn, fl) == 0 && e->message[fl] == ':';
    int cls = ERRCODE_TO_CATEGORY(e->sqlerrcode);
    if (own || cls == ERRCODE_TO_CATEGORY(ERRCODE_QUERY_CANCELED) ||  // 57: cancel, shutdown
        cls == ERRCODE_TO_CATEGORY(ERRCODE_OUT_OF_MEMORY) ||          // 53: resources
        e->elevel > ERROR) {
        FlushErrorState();
        ReThrowError(e);
    }
    FlushErrorState();
    ereport(ERROR, (errcode(e->sqlerrcode), errmsg("%s: %s", fn, e->message ? e->message : "internal error"),
                    e->detail ? errdetail_internal("%s", e->detail) : 0, e->hint ? errhint("%s", e->hint) : 0));
}

// Values of one fetched row, a NULL score counting as the column's minimum; a
// NaN or infinite score is the same ERROR as in a list.
void row_scores(const NraCall* c, HeapTuple tup, TupleDesc desc, int first_att, const double* mins, double* out) {
    for (int j = 0; j < c->m; ++j) {
        bool isnull;
        Datum d = SPI_getbinval(tup, desc, first_att + j, &isnull);
        double v = isnull ? mins[j] : DatumGetFloat8(d);
        if (std::isnan(v) || std::isinf(v))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" contains %s", c->fn, c->col[j], std::isnan(v) ? "NaN" : "an infinite value"),
                            errdetail("Scores are summed; they must be finite.")));
        out[j] = v;
    }
}

// When the sum of the columns' minimums overflows to -Infinity, an object
// NRA never reads may have a total that overflows (every total lies at or
// above that sum, and only there can one overflow unseen): PostgreSQL's
// ORDER BY a + b raises 22003 for such a row, so read every object once and
// do the same. Data whose minimums sum to a finite value never pays this.
void nra_check_all_sums(NraCall* c, const double* mins) {
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "SELECT %s::pg_catalog.int8", c->qid);
    for (int j = 0; j < c->m; ++j) appendStringInfo(&q, ", %s::pg_catalog.float8", c->qcol[j]);
    appendStringInfo(&q, " FROM %s AS r WHERE %s IS NOT NULL", c->qrel, c->qid);
    SPIPlanPtr plan = SPI_prepare_cursor(q.data, 0, nullptr, CURSOR_OPT_NO_SCROLL);
    if (plan == nullptr)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("%s: cannot read %s: %s", c->fn, c->qrel, SPI_result_code_string(SPI_result))));
    Portal portal = SPI_cursor_open(nullptr, plan, nullptr, nullptr, true);
    const int64 chunk = 4096;
    int64_t* ids = static_cast<int64_t*>(MemoryContextAllocHuge(c->work, sizeof(int64_t) * chunk));
    double* values = static_cast<double*>(MemoryContextAllocHuge(c->work, sizeof(double) * chunk * c->m));
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        SPI_cursor_fetch(portal, true, chunk);
        const int64 got = static_cast<int64>(SPI_processed);
        for (int64 i = 0; i < got; ++i) {
            HeapTuple tup = SPI_tuptable->vals[i];
            bool isnull;
            ids[i] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
            row_scores(c, tup, SPI_tuptable->tupdesc, 2, mins, values + i * c->m);
        }
        SPI_freetuptable(SPI_tuptable);
        approx::Status st = topk::check_sums(ids, values, static_cast<size_t>(got), c->m);
        if (!st.ok()) check_engine_result(st, c->fn);
        if (got < chunk) break;
    }
    SPI_cursor_close(portal);
    pfree(ids);
    pfree(values);
}

// The missing-score bound of every list: the column's minimum, into c->mins.
// false: the relation has no objects (an empty answer).
bool nra_read_minimums(NraCall* c) {
    const char* fn = c->fn;
    const int m = c->m;
    c->mins = static_cast<double*>(MemoryContextAlloc(c->work, sizeof(double) * m));
    double* mins = c->mins;
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfoString(&q, "SELECT ");
    for (int j = 0; j < m; ++j) appendStringInfo(&q, "%spg_catalog.min(%s)::pg_catalog.float8", j ? ", " : "", c->qcol[j]);
    appendStringInfo(&q, " FROM %s AS r WHERE %s IS NOT NULL", c->qrel, c->qid);
    if (SPI_execute(q.data, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read the columns' minimums", fn)));
    int missing_min = -1;
    for (int j = 0; j < m; ++j) {
        bool isnull;
        Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, j + 1, &isnull);
        if (isnull) {
            if (missing_min < 0) missing_min = j;
            mins[j] = 0;
            continue;
        }
        mins[j] = DatumGetFloat8(d);
        if (std::isnan(mins[j]) || std::isinf(mins[j]))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" contains %s", fn, c->col[j],
                                   std::isnan(mins[j]) ? "NaN" : "an infinite value"),
                            errdetail("Scores are summed; they must be finite.")));
    }
    if (missing_min < 0) return true;
    resetStringInfo(&q);
    appendStringInfo(&q, "SELECT 1 FROM %s AS r WHERE %s IS NOT NULL LIMIT 1", c->qrel, c->qid);
    if (SPI_execute(q.data, true, 1) != SPI_OK_SELECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read %s", fn, c->qrel)));
    if (SPI_processed > 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: score column \"%s\" has no non-NULL value", fn, c->col[missing_min]),
                        errdetail("A missing score counts as the column's minimum, which does not exist.")));
    return false;
}

// One reader per list, in descending order: an index reader where the column
// has a usable B-tree index (found by nra_resolve_relation), else a cursor
// (PostgreSQL picks the plan; without an index it sorts the whole column).
// The index readers see the rows the cursors would: the active snapshot.
void nra_open_lists(NraCall* c) {
    c->portals = static_cast<Portal*>(MemoryContextAllocZero(c->work, sizeof(Portal) * c->m));
    c->readers = static_cast<IndexReader**>(MemoryContextAllocZero(c->work, sizeof(IndexReader*) * c->m));
    c->read_kind = static_cast<int8*>(MemoryContextAllocZero(c->work, sizeof(int8) * c->m));
    StringInfoData q;
    initStringInfo(&q);
    for (int j = 0; j < c->m; ++j) {
        if (OidIsValid(c->index_oid[j])) {
            if (c->heap == nullptr) {
                c->heap = relation_open(c->relid, AccessShareLock);
                c->snapshot = RegisterSnapshot(GetActiveSnapshot());
            }
            c->readers[j] = index_reader_open(c->heap, c->index_oid[j], c->att[j], c->id_att, c->snapshot);
            c->read_kind[j] = index_reader_index_only(c->readers[j]) ? 2 : 1;
            continue;
        }
        resetStringInfo(&q);
        appendStringInfo(&q,
                         "SELECT %s::pg_catalog.int8, %s::pg_catalog.float8 FROM %s AS r "
                         "WHERE %s IS NOT NULL AND %s IS NOT NULL ORDER BY %s DESC",
                         c->qid, c->qcol[j], c->qrel, c->qcol[j], c->qid, c->qcol[j]);
        SPIPlanPtr plan = SPI_prepare_cursor(q.data, 0, nullptr, CURSOR_OPT_FAST_PLAN | CURSOR_OPT_NO_SCROLL);
        if (plan == nullptr)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                            errmsg("%s: cannot prepare the cursor of column \"%s\": %s", c->fn, c->col[j],
                                   SPI_result_code_string(SPI_result))));
        c->portals[j] = SPI_cursor_open(nullptr, plan, nullptr, nullptr, true);
    }
}

// Reads up to `batch` entries of index list j into ids/scores: the number read.
int64 nra_read_index_list(NraCall* c, int j, int64* ids, double* scores) {
    const int64 n = index_reader_read(c->readers[j], ids, scores, c->batch);
    for (int64 i = 0; i < n; ++i)
        if (std::isnan(scores[i]) || std::isinf(scores[i]))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" contains %s", c->fn, c->col[j],
                                   std::isnan(scores[i]) ? "NaN" : "an infinite value"),
                            errdetail("Scores are summed; they must be finite.")));
    return n;
}

// Ends the index readers and the cursors (an ERROR leaves the scans, the
// relation and the snapshot to the resource owner's cleanup at abort).
void nra_close_lists(NraCall* c) {
    for (int j = 0; j < c->m; ++j) {
        if (c->readers[j] != nullptr) {
            c->heap_fetches += index_reader_heap_fetches(c->readers[j]);
            index_reader_close(c->readers[j]);
            c->readers[j] = nullptr;
        }
        if (c->portals[j] != nullptr) SPI_cursor_close(c->portals[j]);
        c->portals[j] = nullptr;
    }
    if (c->snapshot != nullptr) UnregisterSnapshot(c->snapshot);
    c->snapshot = nullptr;
    if (c->heap != nullptr) relation_close(c->heap, NoLock);
    c->heap = nullptr;
}

// Creates the engine, then reads `batch` entries of every list per round
// until the engine stops (or asks for the objects in no list); closes the lists.
void nra_rounds(NraCall* c) {
    const int m = c->m;
    const int32 batch = c->batch;
    MemoryContext work = c->work;
    int64* list_ids = static_cast<int64*>(MemoryContextAllocHuge(work, sizeof(int64) * static_cast<Size>(batch) * m));
    double* list_scores =
        static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * static_cast<Size>(batch) * m));
    bool* exhausted = static_cast<bool*>(MemoryContextAllocZero(work, sizeof(bool) * m));
    topk::NraList* lists = static_cast<topk::NraList*>(MemoryContextAllocZero(work, sizeof(topk::NraList) * m));

    topk::NraConfig cfg;
    cfg.m = m;
    cfg.k = c->k;
    cfg.min_score = c->mins;
    cfg.rows_hint = c->rows_hint;
    approx::Status st = topk::nra_create(cfg, c->ctx, c->holder->nra);
    if (!st.ok()) check_engine_result(st, c->fn);

    ListReceiver* recv = static_cast<ListReceiver*>(MemoryContextAllocZero(work, sizeof(ListReceiver)));
    recv->pub.receiveSlot = list_receive;
    recv->pub.rStartup = list_startup;
    recv->pub.rShutdown = list_shutdown;
    recv->pub.rDestroy = list_destroy;
    recv->pub.mydest = DestNone;
    topk::NraProgress progress;
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        double t0 = glue_clock_ms();
        for (int j = 0; j < m; ++j) {
            recv->column = c->col[j];
            recv->ids = list_ids + static_cast<int64>(j) * batch;
            recv->scores = list_scores + static_cast<int64>(j) * batch;
            recv->n = 0;
            recv->cap = batch;
            if (!exhausted[j] && c->readers[j] != nullptr) {
                recv->n = nra_read_index_list(c, j, recv->ids, recv->scores);
                if (recv->n < batch) exhausted[j] = true;
            } else if (!exhausted[j]) {
                PortalRunFetch(c->portals[j], FETCH_FORWARD, batch, &recv->pub);
                if (recv->n < batch) exhausted[j] = true;
            }
            lists[j].ids = reinterpret_cast<const int64_t*>(recv->ids);
            lists[j].scores = recv->scores;
            lists[j].n = static_cast<size_t>(recv->n);
            lists[j].exhausted = exhausted[j];
        }
        c->ms_read += glue_clock_ms() - t0;
        st = topk::nra_round(c->holder->nra, lists, c->ctx, progress);
        if (!st.ok()) check_engine_result(st, c->fn);
        if (progress.done || progress.need_unlisted) break;
    }
    nra_close_lists(c);
    c->need_unlisted = progress.need_unlisted;
}

// Every list exhausted and fewer than k objects above the minimum total:
// objects in no list (all scores missing) tie at that total; the k with the
// smallest ids are enough.
void nra_add_unlisted_objects(NraCall* c) {
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "SELECT %s::pg_catalog.int8 FROM %s AS r WHERE %s IS NOT NULL", c->qid, c->qrel, c->qid);
    for (int j = 0; j < c->m; ++j) appendStringInfo(&q, " AND %s IS NULL", c->qcol[j]);
    appendStringInfo(&q, " ORDER BY %s LIMIT %d", c->qid, c->k);
    double t0 = glue_clock_ms();
    if (SPI_execute(q.data, true, 0) != SPI_OK_SELECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read the objects without scores", c->fn)));
    c->unlisted = static_cast<int64>(SPI_processed);
    int64_t* ids = static_cast<int64_t*>(
        MemoryContextAllocHuge(c->work, sizeof(int64_t) * static_cast<Size>(c->unlisted > 0 ? c->unlisted : 1)));
    for (int64 i = 0; i < c->unlisted; ++i) {
        bool isnull;
        ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
    }
    c->ms_read += glue_clock_ms() - t0;
    approx::Status st = topk::nra_add_unlisted(c->holder->nra, ids, static_cast<size_t>(c->unlisted), c->ctx);
    if (!st.ok()) check_engine_result(st, c->fn);
}

// The winners (known only by their bounds) and their scores: the only random
// access. Ranks them by their totals into c->out_ids / c->out_totals.
// (Allocations that must outlive SPI_finish() go to `work`: after
// SPI_connect() the current context is SPI's, freed by SPI_finish().)
void nra_rank_winners(NraCall* c) {
    const char* fn = c->fn;
    const int m = c->m;
    const int32 k = c->k;
    MemoryContext work = c->work;
    int64_t* winners = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * static_cast<Size>(k)));
    size_t n_win = 0;
    approx::Status st = topk::nra_winners(c->holder->nra, c->ctx, winners, static_cast<size_t>(k), n_win);
    if (!st.ok()) check_engine_result(st, fn);
    c->info = topk::nra_info(c->holder->nra);
    c->random_accesses = static_cast<int64>(n_win);

    StringInfoData q;
    initStringInfo(&q);
    appendStringInfo(&q, "SELECT %s::pg_catalog.int8", c->qid);
    for (int j = 0; j < m; ++j) appendStringInfo(&q, ", %s::pg_catalog.float8", c->qcol[j]);
    appendStringInfo(&q, " FROM %s AS r WHERE %s OPERATOR(pg_catalog.=) ANY ($1)", c->qrel, c->qid);
    Datum winners_datum[1] = {PointerGetDatum(construct_array(reinterpret_cast<Datum*>(winners), static_cast<int>(n_win),
                                                              INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE))};
    Oid arg_types[1] = {INT8ARRAYOID};
    double t_fetch = glue_clock_ms();
    if (SPI_execute_with_args(q.data, 1, arg_types, winners_datum, nullptr, true, 0) != SPI_OK_SELECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot fetch the winners' scores", fn)));
    if (SPI_processed != n_win)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("%s: found %llu of the %zu winners", fn, static_cast<unsigned long long>(SPI_processed),
                               n_win)));
    const Size n_alloc = n_win > 0 ? n_win : 1;
    int64_t* win_ids = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * n_alloc));
    double* values = static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * n_alloc * m));
    for (size_t i = 0; i < n_win; ++i) {
        HeapTuple tup = SPI_tuptable->vals[i];
        bool isnull;
        win_ids[i] = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
        row_scores(c, tup, SPI_tuptable->tupdesc, 2, c->mins, values + i * m);  // a missing score counts as the minimum
    }
    c->ms_read += glue_clock_ms() - t_fetch;
    c->out_ids = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * n_alloc));
    c->out_totals = static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * n_alloc));
    c->n_out = 0;
    st = topk::rank_by_sum(win_ids, values, n_win, m, static_cast<size_t>(k), c->ctx, c->out_ids, c->out_totals,
                           c->n_out);
    if (!st.ok()) check_engine_result(st, fn);
}

// Reads the lists, runs NRA and ranks the winners (between SPI_connect and
// SPI_finish; every internal query names the relation r and qualifies every
// column, function, type and operator, so no column name can make it
// ambiguous or change what it does).
void nra_run(NraCall* c) {
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: SPI_connect failed", c->fn)));
    if (!nra_read_minimums(c)) {
        SPI_finish();  // no objects: an empty answer
        c->empty = true;
        return;
    }
    if (std::isinf(topk::nra_sum(c->mins, c->m))) nra_check_all_sums(c, c->mins);
    nra_open_lists(c);
    c->ctx = exec_context(c->fn);
    nra_rounds(c);
    if (c->need_unlisted) nra_add_unlisted_objects(c);
    nra_rank_winners(c);
    SPI_finish();
}

// The scalar arguments and the score column names (into c->k, c->batch,
// c->m and c->col).
void nra_check_args(FunctionCallInfo fcinfo, NraCall* c) {
    const char* fn = c->fn;
    ArrayType* columns = PG_GETARG_ARRAYTYPE_P(2);
    c->k = PG_GETARG_INT32(3);
    c->batch = PG_GETARG_INT32(4);
    if (c->k <= 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: k must be positive, not %d", fn, c->k)));
    if (c->batch <= 0 || c->batch > 1000000)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: batch must be between 1 and 1000000, not %d", fn, c->batch)));
    if (ARR_NDIM(columns) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: score_columns must be a one-dimensional array", fn)));
    Datum* elems;
    bool* elem_nulls;
    int m;
    deconstruct_array(columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &elem_nulls, &m);
    if (m == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: score_columns must not be empty", fn)));
    if (m > topk::kMaxNraLists)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: at most %d score columns are supported, not %d", fn, topk::kMaxNraLists, m)));
    for (int j = 0; j < m; ++j)
        if (elem_nulls[j])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("%s: score_columns must not contain NULL", fn)));
    c->m = m;
    const char** col = static_cast<const char**>(palloc(sizeof(char*) * m));
    for (int j = 0; j < m; ++j) col[j] = pstrdup(NameStr(*DatumGetName(elems[j])));
    c->col = col;
}

// Whether the lists may be read by index scans of our own: a plain table (or
// materialized view) without inheritance children (the cursors read those
// too), no row-level security for the caller (an index read would bypass
// the policies) and SELECT on the id column and every score column (else the
// cursors raise the error the caller should see).
bool nra_may_read_indexes(Relation rel, AttrNumber id_att, const AttrNumber* att, int m) {
    const char kind = rel->rd_rel->relkind;
    if (kind != RELKIND_RELATION && kind != RELKIND_MATVIEW) return false;
    const Oid relid = RelationGetRelid(rel);
    // relhassubclass stays set after the last child is dropped: ask pg_inherits.
    if (rel->rd_rel->relhassubclass && find_inheritance_children(relid, NoLock) != NIL) return false;
    if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED) return false;
    const Oid user = GetUserId();
    if (pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK) return true;
    if (pg_attribute_aclcheck(relid, id_att, user, ACL_SELECT) != ACLCHECK_OK) return false;
    for (int j = 0; j < m; ++j)
        if (pg_attribute_aclcheck(relid, att[j], user, ACL_SELECT) != ACLCHECK_OK) return false;
    return true;
}

// The relation, its columns, the unique index on id_column and the index of
// each list (into c->qrel, c->qid, c->qcol, c->rows_hint, c->relid,
// c->id_att, c->att and c->index_oid). A regclass argument can hold any OID
// (0::oid::regclass): open by try.
void nra_resolve_relation(Oid relid, const char* id_column, NraCall* c) {
    const char* fn = c->fn;
    Relation rel = try_relation_open(relid, AccessShareLock);
    if (rel == NULL)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("%s: relation with OID %u does not exist", fn, relid)));
    const char* relname = RelationGetRelationName(rel);
    char* qrel = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), relname);
    AttrNumber id_att = column_attnum(relid, relname, id_column);
    Oid id_type = get_atttype(relid, id_att);
    if (!is_int_type(id_type))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("%s: id_column \"%s\" must be smallint, integer or bigint, not %s", fn, id_column,
                               format_type_be(id_type))));
    const char** qcol = static_cast<const char**>(palloc(sizeof(char*) * c->m));
    AttrNumber* att = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * c->m));
    for (int j = 0; j < c->m; ++j) {
        AttrNumber a = column_attnum(relid, relname, c->col[j]);
        att[j] = a;
        Oid t = get_atttype(relid, a);
        if (!is_score_type(t))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: score column \"%s\" must be double precision, real, smallint, integer or "
                                   "bigint, not %s",
                                   fn, c->col[j], format_type_be(t))));
        qcol[j] = psprintf("r.%s", quote_identifier(c->col[j]));
    }
    if (!has_unique_index(rel, id_att))
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("%s: id_column \"%s\" of relation \"%s\" has no unique index", fn, id_column, relname),
                        errhint("NRA needs each object once per list: CREATE UNIQUE INDEX ON %s (%s).", qrel,
                                quote_identifier(id_column))));
    c->rows_hint = rel->rd_rel->reltuples > 0 ? static_cast<int64>(rel->rd_rel->reltuples) : 0;
    c->index_oid = static_cast<Oid*>(palloc0(sizeof(Oid) * c->m));
    if (nra_may_read_indexes(rel, id_att, att, c->m)) {
        for (int j = 0; j < c->m; ++j) {
            bool holds_id;
            c->index_oid[j] = index_reader_find(rel, att[j], id_att, &holds_id);
        }
    }
    relation_close(rel, NoLock);
    c->relid = relid;
    c->id_att = id_att;
    c->att = att;
    c->qrel = qrel;
    c->qcol = qcol;
}

// The ranked objects into the result set, the statistics into last_run().
void nra_emit(FunctionCallInfo fcinfo, const NraCall* c) {
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (size_t i = 0; i < c->n_out; ++i) {
        Datum values[2] = {Int64GetDatum(c->out_ids[i]), Float8GetDatum(c->out_totals[i])};
        bool nulls[2] = {false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    approx::RunStats& stats = last_run_stats();
    stats.ms_read = c->ms_read;
    stats.add("rounds", static_cast<double>(c->info.rounds));
    stats.add("random_accesses", static_cast<double>(c->random_accesses));
    stats.add("candidates", static_cast<double>(c->info.candidates));
    if (c->need_unlisted) stats.add("unlisted_rows", static_cast<double>(c->unlisted));
    for (int j = 0; j < c->m; ++j) {
        char key[32];
        snprintf(key, sizeof key, "depth_%d", j + 1);
        stats.add(key, static_cast<double>(c->info.depth[j]));
    }
    // How each list was read: read_<j> is 2 for an index-only scan, 1 for an
    // index scan (a heap fetch per entry), 0 for a cursor (an SPI query).
    int by_index = 0;
    for (int j = 0; j < c->m; ++j) {
        char key[32];
        snprintf(key, sizeof key, "read_%d", j + 1);
        stats.add(key, static_cast<double>(c->read_kind[j]));
        by_index += c->read_kind[j] > 0;
    }
    if (by_index > 0) stats.add("heap_fetches", static_cast<double>(c->heap_fetches));
    last_run_set_read(by_index == c->m ? "index scans" : by_index == 0 ? "queries" : "index scans and queries");
}

}  // namespace

APPROX_FUNCTION(approx_gpu_topk_nra) {
    NraCall args = NraCall();  // trivially destructible; copied into `work` below
    args.fn = "topk_nra";
    nra_check_args(fcinfo, &args);
    const char* id_column = NameStr(*PG_GETARG_NAME(1));
    nra_resolve_relation(PG_GETARG_OID(0), id_column, &args);
    args.qid = psprintf("r.%s", quote_identifier(id_column));

    InitMaterializedSRF(fcinfo, 0);

    // Everything the engine holds is freed with this context (on ERROR too).
    MemoryContext caller = CurrentMemoryContext;
    MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "topk_nra", ALLOCSET_DEFAULT_SIZES);
    NraHolder* holder = static_cast<NraHolder*>(MemoryContextAllocZero(work, sizeof(NraHolder)));
    MemoryContextCallback* cb = static_cast<MemoryContextCallback*>(MemoryContextAllocZero(work, sizeof(MemoryContextCallback)));
    cb->func = nra_cleanup;
    cb->arg = holder;
    MemoryContextRegisterResetCallback(work, cb);

    NraCall* c = new (MemoryContextAllocZero(work, sizeof(NraCall))) NraCall(args);
    c->work = work;
    c->holder = holder;
    MemoryContextSwitchTo(work);
    PG_TRY();
    {
        nra_run(c);
    }
    PG_CATCH();
    {
        nra_rethrow(args.fn, caller);
    }
    PG_END_TRY();

    // Results and statistics (the engine is freed with its context).
    MemoryContextSwitchTo(caller);
    const bool empty = c->empty;
    if (!empty) nra_emit(fcinfo, c);
    MemoryContextDelete(work);
    if (!empty) check_engine_result(approx::Status::Ok(), args.fn);  // the fallback NOTICE, if any
    return static_cast<Datum>(0);
}
