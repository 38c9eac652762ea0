// SQL glue for topk_nra(relation, id_column, score_columns, k, batch): the
// top k objects by the sum of several score columns, read as sorted lists by
// the NRA engine of approx::topk. The relation and its lists (index scans of
// our own, else cursors) are in topk_nra_lists.cpp; here, one static
// function per phase: the arguments (nra_check_args), the columns' minimums
// (nra_read_minimums), the rounds (nra_rounds), the objects in no list
// (nra_add_unlisted_objects), the winners' scores (nra_rank_winners) and the
// result set (nra_emit).
#include "topk/topk_nra.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/memutils.h"
}

#include <cmath>
#include <new>

namespace {

void nra_cleanup(void* arg) {
    NraHolder* h = static_cast<NraHolder*>(arg);
    if (h->nra) topk::nra_destroy(h->nra);
    h->nra = nullptr;
}

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
                            errmsg("%s: column \"%s\" contains %s", c->fn, c->col[j],
                                   std::isnan(v) ? "NaN" : "an infinite value"),
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
    for (int j = 0; j < m; ++j)
        appendStringInfo(&q, "%spg_catalog.min(%s)::pg_catalog.float8", j ? ", " : "", c->qcol[j]);
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

    topk::NraProgress progress;
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        double t0 = glue_clock_ms();
        for (int j = 0; j < m; ++j) {
            int64* ids = list_ids + static_cast<int64>(j) * batch;
            double* scores = list_scores + static_cast<int64>(j) * batch;
            int64 n = 0;
            if (!exhausted[j]) {
                n = nra_read_list(c, j, ids, scores);
                if (n < batch) exhausted[j] = true;
            }
            lists[j].ids = reinterpret_cast<const int64_t*>(ids);
            lists[j].scores = scores;
            lists[j].n = static_cast<size_t>(n);
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
    Datum winners_datum[1] = {PointerGetDatum(construct_array(
        reinterpret_cast<Datum*>(winners), static_cast<int>(n_win), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE))};
    Oid arg_types[1] = {INT8ARRAYOID};
    double t_fetch = glue_clock_ms();
    if (SPI_execute_with_args(q.data, 1, arg_types, winners_datum, nullptr, true, 0) != SPI_OK_SELECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot fetch the winners' scores", fn)));
    if (SPI_processed != n_win)
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: found %llu of the %zu winners", fn,
                                                         static_cast<unsigned long long>(SPI_processed), n_win)));
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
            ereport(ERROR,
                    (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: score_columns must not contain NULL", fn)));
    c->m = m;
    const char** col = static_cast<const char**>(palloc(sizeof(char*) * m));
    for (int j = 0; j < m; ++j) col[j] = pstrdup(NameStr(*DatumGetName(elems[j])));
    c->col = col;
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
    MemoryContextCallback* cb =
        static_cast<MemoryContextCallback*>(MemoryContextAllocZero(work, sizeof(MemoryContextCallback)));
    cb->func = nra_cleanup;
    cb->arg = holder;
    MemoryContextRegisterResetCallback(work, cb);

    NraCall* c = new (MemoryContextAllocZero(work, sizeof(NraCall))) NraCall(args);
    c->work = work;
    c->holder = holder;
    MemoryContextSwitchTo(work);
    PG_TRY();
    { nra_run(c); }
    PG_CATCH();
    { nra_rethrow(args.fn, caller); }
    PG_END_TRY();

    // Results and statistics (the engine is freed with its context).
    MemoryContextSwitchTo(caller);
    const bool empty = c->empty;
    if (!empty) nra_emit(fcinfo, c);
    MemoryContextDelete(work);
    if (!empty) check_engine_result(approx::Status::Ok(), args.fn);  // the fallback NOTICE, if any
    return static_cast<Datum>(0);
}
