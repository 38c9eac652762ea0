// SQL glue for top-k: the aggregates topk/bottomk (id, score, k) -> scored[]
// and topk_nra(relation, id_column, score_columns, k, batch). Reads and checks
// arguments, calls approx::topk, builds results.
#include "runtime.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "tcop/pquery.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#include <algorithm>
#include <cmath>
#include <new>
#include <type_traits>

#include "core/topk.hpp"

namespace topk = approx::topk;
using topk::Order;

static const char* order_fn(Order o) { return o == Order::Desc ? "topk" : "bottomk"; }

// A scored[] array of n (id, score) pairs; the element type is the final
// function's declared result's element type.
static ArrayType* scored_array(FunctionCallInfo fcinfo, const int64* ids, const double* scores, int64 n) {
    Oid array_type = get_func_rettype(fcinfo->flinfo->fn_oid);
    Oid elem_type = get_element_type(array_type);
    if (!OidIsValid(elem_type))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("top-k result type must be an array of scored")));
    TupleDesc desc = lookup_rowtype_tupdesc_copy(elem_type, -1);
    if (desc->natts != 2)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("top-k result type must be scored(id, score)")));
    Datum* datums = static_cast<Datum*>(palloc(sizeof(Datum) * (n > 0 ? n : 1)));
    for (int64 i = 0; i < n; ++i) {
        Datum values[2] = {Int64GetDatum(ids[i]), Float8GetDatum(scores[i])};
        bool nulls[2] = {false, false};
        datums[i] = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    }
    int16 typlen;
    bool typbyval;
    char typalign;
    get_typlenbyvalalign(elem_type, &typlen, &typbyval, &typalign);
    return construct_array(datums, static_cast<int>(n), elem_type, typlen, typbyval, typalign);
}

// ---- aggregates: topk(id, score, k) and bottomk(id, score, k) ----------------------------

// The state: the pairs that can still reach the answer, in two columns. Once
// it holds more than max(4k, 65536) pairs it is cut back to the best k, and
// rows that do not beat the worst of those are dropped on arrival.
struct TopkState {
    uint8 order;  // Order
    bool has_k;
    int32 k;
    int64 skipped;  // rows with a NULL id or score
    topk::Threshold thr;
    int64 n;
    int64 capacity;
    int64* ids;
    double* scores;
};

static constexpr uint8 kTopkStateVersion = 1;

static int64 prune_limit(const TopkState* s) { return static_cast<int64>(topk::prune_limit(static_cast<size_t>(s->k))); }

static TopkState* new_topk_state(MemoryContext mcxt, Order order) {
    TopkState* s = static_cast<TopkState*>(MemoryContextAllocZero(mcxt, sizeof(TopkState)));
    s->order = static_cast<uint8>(order);
    return s;
}

static void set_k(TopkState* s, int32 k, const char* fn) {
    if (k <= 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: k must be positive, not %d", fn, k)));
    if (s->has_k && s->k != k)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: k must be the same on every row of a group (%d, then %d)", fn, s->k, k)));
    s->k = k;
    s->has_k = true;
}

// Cuts the state back to its best k pairs when it has grown past the limit.
static void maybe_prune(TopkState* s, const char* fn) {
    if (!s->has_k || s->n <= prune_limit(s)) return;
    size_t kept = 0;
    approx::Status st = topk::prune(s->ids, s->scores, static_cast<size_t>(s->n), static_cast<size_t>(s->k),
                                    static_cast<Order>(s->order), kept, s->thr);
    if (!st.ok()) check_engine_result(st, fn);
    s->n = static_cast<int64>(kept);
}

// Room for `more` further pairs.
static void reserve_pairs(TopkState* s, MemoryContext mcxt, int64 more) {
    if (s->n + more > s->capacity) {
        int64 cap = s->capacity > 0 ? s->capacity * 2 : 16;
        if (cap < s->n + more) cap = s->n + more;
        Size ib = static_cast<Size>(cap) * sizeof(int64), sb = static_cast<Size>(cap) * sizeof(double);
        s->ids = static_cast<int64*>(s->ids ? repalloc_huge(s->ids, ib) : MemoryContextAllocHuge(mcxt, ib));
        s->scores = static_cast<double*>(s->scores ? repalloc_huge(s->scores, sb) : MemoryContextAllocHuge(mcxt, sb));
        s->capacity = cap;
    }
}

static void append_pair(TopkState* s, MemoryContext mcxt, int64 id, double score) {
    reserve_pairs(s, mcxt, 1);
    s->ids[s->n] = id;
    s->scores[s->n] = score;
    ++s->n;
}

static Datum topk_transition(FunctionCallInfo fcinfo, Order order) {
    const char* fn = order_fn(order);
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    TopkState* s = PG_ARGISNULL(0) ? new_topk_state(mcxt, order) : reinterpret_cast<TopkState*>(PG_GETARG_POINTER(0));
    if (PG_ARGISNULL(3))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: k must not be NULL", fn)));
    set_k(s, PG_GETARG_INT32(3), fn);
    if (PG_ARGISNULL(1) || PG_ARGISNULL(2)) {
        ++s->skipped;
        PG_RETURN_POINTER(s);
    }
    int64 id = PG_GETARG_INT64(1);
    double score = PG_GETARG_FLOAT8(2);
    check_float_value(score, fn, "score", true);
    if (!topk::beats(score, id, order, s->thr)) PG_RETURN_POINTER(s);  // can never reach the answer
    append_pair(s, mcxt, id, score);
    maybe_prune(s, fn);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_topk_sfunc) { return topk_transition(fcinfo, Order::Desc); }
APPROX_FUNCTION(approx_gpu_bottomk_sfunc) { return topk_transition(fcinfo, Order::Asc); }

APPROX_FUNCTION(approx_gpu_topk_combine) {
    MemoryContext mcxt = aggregate_context(fcinfo, "topk combine");
    if (PG_ARGISNULL(1)) {
        if (PG_ARGISNULL(0)) PG_RETURN_NULL();
        PG_RETURN_POINTER(PG_GETARG_POINTER(0));
    }
    TopkState* other = reinterpret_cast<TopkState*>(PG_GETARG_POINTER(1));
    const Order order = static_cast<Order>(other->order);
    const char* fn = order_fn(order);
    TopkState* s = PG_ARGISNULL(0) ? new_topk_state(mcxt, order) : reinterpret_cast<TopkState*>(PG_GETARG_POINTER(0));
    if (s->order != other->order)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot combine topk and bottomk states", fn)));
    if (other->has_k) set_k(s, other->k, fn);
    s->skipped += other->skipped;
    // The better threshold; other's pairs that reach it are appended (see topk::combine).
    reserve_pairs(s, mcxt, other->n);
    size_t appended = 0;
    approx::Status st = topk::combine(s->thr, other->thr, reinterpret_cast<const int64_t*>(other->ids), other->scores,
                                      static_cast<size_t>(other->n), order,
                                      reinterpret_cast<int64_t*>(s->ids + s->n), s->scores + s->n, appended);
    if (!st.ok()) check_engine_result(st, fn);
    s->n += static_cast<int64>(appended);
    maybe_prune(s, fn);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_topk_serial) {
    TopkState* s = reinterpret_cast<TopkState*>(PG_GETARG_POINTER(0));
    const char* fn = order_fn(static_cast<Order>(s->order));
    if (s->n > static_cast<int64>((MaxAllocSize - 64) / 16))
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: aggregate state of %lld pairs would exceed 1 GB", fn, static_cast<long long>(s->n)),
                        errhint("Use a smaller k, or SET max_parallel_workers_per_gather = 0.")));
    ByteWriter w;
    byte_writer_init(&w);
    put_u8(&w, kTopkStateVersion);
    put_u8(&w, s->order);
    put_u8(&w, s->has_k ? 1 : 0);
    put_i32(&w, s->k);
    put_i64(&w, s->skipped);
    put_u8(&w, s->thr.valid ? 1 : 0);
    put_i64(&w, static_cast<int64>(s->thr.key));
    put_i64(&w, static_cast<int64>(s->thr.id));
    put_i64(&w, s->n);
    for (int64 i = 0; i < s->n; ++i) put_i64(&w, s->ids[i]);
    put_f64s(&w, s->scores, s->n);
    PG_RETURN_BYTEA_P(byte_writer_finish(&w));
}

APPROX_FUNCTION(approx_gpu_topk_deserial) {
    MemoryContext mcxt = aggregate_context(fcinfo, "topk deserialize");
    ByteReader r;
    byte_reader_init(&r, PG_GETARG_BYTEA_PP(0), "topk aggregate state");
    if (get_u8(&r) != kTopkStateVersion)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("unsupported topk aggregate state version")));
    uint8 order = get_u8(&r);
    uint8 has_k = get_u8(&r);
    int32 k = get_i32(&r);
    int64 skipped = get_i64(&r);
    uint8 thr_valid = get_u8(&r);
    uint64 thr_key = static_cast<uint64>(get_i64(&r));
    uint64 thr_id = static_cast<uint64>(get_i64(&r));
    int64 n = get_i64(&r);
    // A valid threshold means the state holds at least k pairs at or before it.
    if (order > 1 || has_k > 1 || (has_k && k <= 0) || skipped < 0 || thr_valid > 1 || n < 0 ||
        n > (r.end - r.p) / 16 || (thr_valid && (!has_k || n < k)))
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid topk aggregate state")));
    TopkState* s = new_topk_state(mcxt, static_cast<Order>(order));
    s->has_k = has_k != 0;
    s->k = k;
    s->skipped = skipped;
    s->thr.valid = thr_valid != 0;
    s->thr.key = thr_key;
    s->thr.id = thr_id;
    if (n > 0) {
        s->ids = static_cast<int64*>(MemoryContextAllocHuge(mcxt, static_cast<Size>(n) * sizeof(int64)));
        s->scores = static_cast<double*>(MemoryContextAllocHuge(mcxt, static_cast<Size>(n) * sizeof(double)));
        s->capacity = n;
        for (int64 i = 0; i < n; ++i) s->ids[i] = get_i64(&r);
        get_f64s(&r, s->scores, n);
        for (int64 i = 0; i < n; ++i)
            if (std::isnan(s->scores[i]))
                ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                                errmsg("invalid topk aggregate state: NaN score")));
        s->n = n;
    }
    byte_reader_expect_end(&r);
    PG_RETURN_POINTER(s);
}

APPROX_FUNCTION(approx_gpu_topk_final) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    TopkState* s = reinterpret_cast<TopkState*>(PG_GETARG_POINTER(0));
    if (s->n == 0 || !s->has_k) PG_RETURN_NULL();  // no rows: NULL, like array_agg()
    const Order order = static_cast<Order>(s->order);
    const char* fn = order_fn(order);
    int64 want = std::min<int64>(s->k, s->n);
    if (want > static_cast<int64>(MaxAllocSize / 64))  // each scored element takes about 48 bytes
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: an answer of %lld pairs would exceed 1 GB", fn, static_cast<long long>(want)),
                        errhint("Use a smaller k.")));
    int64* ids = static_cast<int64*>(palloc(sizeof(int64) * want));
    double* scores = static_cast<double*>(palloc(sizeof(double) * want));
    size_t got = 0;
    approx::Status st = run_engine(fn, s->skipped, 0, [&](const approx::ExecContext& ctx) {
        return topk::select(s->ids, s->scores, static_cast<size_t>(s->n), static_cast<size_t>(s->k), order, ctx,
                            reinterpret_cast<int64_t*>(ids), scores, got);
    });
    check_engine_result(st, fn);
    PG_RETURN_ARRAYTYPE_P(scored_array(fcinfo, ids, scores, static_cast<int64>(got)));
}

// ---- topk_nra(relation, id_column, score_columns, k, batch) ------------------------------

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
    MemoryContext work;
    NraHolder* holder;
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

// Reads the lists, runs NRA and ranks the winners (between SPI_connect and
// SPI_finish; every internal query names the relation r and qualifies every
// column, function, type and operator, so no column name can make it
// ambiguous or change what it does).
void nra_run(NraCall* c) {
    const char* fn = c->fn;
    const int m = c->m;
    const int32 k = c->k;
    const int32 batch = c->batch;
    MemoryContext work = c->work;
    int64* list_ids = static_cast<int64*>(MemoryContextAllocHuge(work, sizeof(int64) * static_cast<Size>(batch) * m));
    double* list_scores =
        static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * static_cast<Size>(batch) * m));
    double* mins = static_cast<double*>(MemoryContextAlloc(work, sizeof(double) * m));
    Portal* portals = static_cast<Portal*>(MemoryContextAllocZero(work, sizeof(Portal) * m));
    bool* exhausted = static_cast<bool*>(MemoryContextAllocZero(work, sizeof(bool) * m));
    topk::NraList* lists = static_cast<topk::NraList*>(MemoryContextAllocZero(work, sizeof(topk::NraList) * m));

    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: SPI_connect failed", fn)));

    // The missing-score bound of every list: the column's minimum.
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
    if (missing_min >= 0) {
        resetStringInfo(&q);
        appendStringInfo(&q, "SELECT 1 FROM %s AS r WHERE %s IS NOT NULL LIMIT 1", c->qrel, c->qid);
        if (SPI_execute(q.data, true, 1) != SPI_OK_SELECT)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read %s", fn, c->qrel)));
        if (SPI_processed > 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: score column \"%s\" has no non-NULL value", fn, c->col[missing_min]),
                            errdetail("A missing score counts as the column's minimum, which does not exist.")));
        SPI_finish();  // no objects: an empty answer
        c->empty = true;
        return;
    }
    if (std::isinf(topk::nra_sum(mins, m))) nra_check_all_sums(c, mins);

    // One cursor per list, in descending order (a B-tree index on the column,
    // scanned backward, gives the order without sorting).
    for (int j = 0; j < m; ++j) {
        resetStringInfo(&q);
        appendStringInfo(&q,
                         "SELECT %s::pg_catalog.int8, %s::pg_catalog.float8 FROM %s AS r "
                         "WHERE %s IS NOT NULL AND %s IS NOT NULL ORDER BY %s DESC",
                         c->qid, c->qcol[j], c->qrel, c->qcol[j], c->qid, c->qcol[j]);
        SPIPlanPtr plan = SPI_prepare_cursor(q.data, 0, nullptr, CURSOR_OPT_FAST_PLAN | CURSOR_OPT_NO_SCROLL);
        if (plan == nullptr)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                            errmsg("%s: cannot prepare the cursor of column \"%s\": %s", fn, c->col[j],
                                   SPI_result_code_string(SPI_result))));
        portals[j] = SPI_cursor_open(nullptr, plan, nullptr, nullptr, true);
    }

    approx::ExecContext ctx = exec_context(fn);
    topk::NraConfig cfg;
    cfg.m = m;
    cfg.k = k;
    cfg.min_score = mins;
    cfg.rows_hint = c->rows_hint;
    approx::Status st = topk::nra_create(cfg, ctx, c->holder->nra);
    if (!st.ok()) check_engine_result(st, fn);

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
            if (!exhausted[j]) {
                PortalRunFetch(portals[j], FETCH_FORWARD, batch, &recv->pub);
                if (recv->n < batch) exhausted[j] = true;
            }
            lists[j].ids = reinterpret_cast<const int64_t*>(recv->ids);
            lists[j].scores = recv->scores;
            lists[j].n = static_cast<size_t>(recv->n);
            lists[j].exhausted = exhausted[j];
        }
        c->ms_read += glue_clock_ms() - t0;
        st = topk::nra_round(c->holder->nra, lists, ctx, progress);
        if (!st.ok()) check_engine_result(st, fn);
        if (progress.done || progress.need_unlisted) break;
    }
    for (int j = 0; j < m; ++j) SPI_cursor_close(portals[j]);
    c->need_unlisted = progress.need_unlisted;

    // Every list exhausted and fewer than k objects above the minimum total:
    // objects in no list (all scores missing) tie at that total; the k with
    // the smallest ids are enough.
    if (progress.need_unlisted) {
        resetStringInfo(&q);
        appendStringInfo(&q, "SELECT %s::pg_catalog.int8 FROM %s AS r WHERE %s IS NOT NULL", c->qid, c->qrel, c->qid);
        for (int j = 0; j < m; ++j) appendStringInfo(&q, " AND %s IS NULL", c->qcol[j]);
        appendStringInfo(&q, " ORDER BY %s LIMIT %d", c->qid, k);
        double t0 = glue_clock_ms();
        if (SPI_execute(q.data, true, 0) != SPI_OK_SELECT)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read the objects without scores", fn)));
        c->unlisted = static_cast<int64>(SPI_processed);
        int64_t* ids = static_cast<int64_t*>(
            MemoryContextAllocHuge(work, sizeof(int64_t) * static_cast<Size>(c->unlisted > 0 ? c->unlisted : 1)));
        for (int64 i = 0; i < c->unlisted; ++i) {
            bool isnull;
            ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
        }
        c->ms_read += glue_clock_ms() - t0;
        st = topk::nra_add_unlisted(c->holder->nra, ids, static_cast<size_t>(c->unlisted), ctx);
        if (!st.ok()) check_engine_result(st, fn);
    }

    // The winners (known only by their bounds) and their scores: the only random access.
    // (Allocations from here on that must outlive SPI_finish() go to `work`:
    // after SPI_connect() the current context is SPI's, freed by SPI_finish().)
    int64_t* winners = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * static_cast<Size>(k)));
    size_t n_win = 0;
    st = topk::nra_winners(c->holder->nra, ctx, winners, static_cast<size_t>(k), n_win);
    if (!st.ok()) check_engine_result(st, fn);
    c->info = topk::nra_info(c->holder->nra);
    c->random_accesses = static_cast<int64>(n_win);

    resetStringInfo(&q);
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
        row_scores(c, tup, SPI_tuptable->tupdesc, 2, mins, values + i * m);  // a missing score counts as the minimum
    }
    c->ms_read += glue_clock_ms() - t_fetch;
    c->out_ids = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * n_alloc));
    c->out_totals = static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * n_alloc));
    c->n_out = 0;
    st = topk::rank_by_sum(win_ids, values, n_win, m, static_cast<size_t>(k), ctx, c->out_ids, c->out_totals, c->n_out);
    if (!st.ok()) check_engine_result(st, fn);
    SPI_finish();
}

}  // namespace

APPROX_FUNCTION(approx_gpu_topk_nra) {
    const char* fn = "topk_nra";
    Oid relid = PG_GETARG_OID(0);
    const char* id_column = NameStr(*PG_GETARG_NAME(1));
    ArrayType* columns = PG_GETARG_ARRAYTYPE_P(2);
    int32 k = PG_GETARG_INT32(3);
    int32 batch = PG_GETARG_INT32(4);
    if (k <= 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: k must be positive, not %d", fn, k)));
    if (batch <= 0 || batch > 1000000)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: batch must be between 1 and 1000000, not %d", fn, batch)));
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

    // The relation, its columns and the unique index on id_column.
    // A regclass argument can hold any OID (0::oid::regclass): open by try.
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
    const char** col = static_cast<const char**>(palloc(sizeof(char*) * m));
    const char** qcol = static_cast<const char**>(palloc(sizeof(char*) * m));
    for (int j = 0; j < m; ++j) {
        col[j] = pstrdup(NameStr(*DatumGetName(elems[j])));
        AttrNumber a = column_attnum(relid, relname, col[j]);
        Oid t = get_atttype(relid, a);
        if (!is_score_type(t))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: score column \"%s\" must be double precision, real, smallint, integer or "
                                   "bigint, not %s",
                                   fn, col[j], format_type_be(t))));
        qcol[j] = psprintf("r.%s", quote_identifier(col[j]));
    }
    if (!has_unique_index(rel, id_att))
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("%s: id_column \"%s\" of relation \"%s\" has no unique index", fn, id_column, relname),
                        errhint("NRA needs each object once per list: CREATE UNIQUE INDEX ON %s (%s).", qrel,
                                quote_identifier(id_column))));
    int64 rows_hint = rel->rd_rel->reltuples > 0 ? static_cast<int64>(rel->rd_rel->reltuples) : 0;
    relation_close(rel, NoLock);

    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    InitMaterializedSRF(fcinfo, 0);

    // Everything the engine holds is freed with this context (on ERROR too).
    MemoryContext caller = CurrentMemoryContext;
    MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "topk_nra", ALLOCSET_DEFAULT_SIZES);
    NraHolder* holder = static_cast<NraHolder*>(MemoryContextAllocZero(work, sizeof(NraHolder)));
    MemoryContextCallback* cb = static_cast<MemoryContextCallback*>(MemoryContextAllocZero(work, sizeof(MemoryContextCallback)));
    cb->func = nra_cleanup;
    cb->arg = holder;
    MemoryContextRegisterResetCallback(work, cb);

    NraCall* c = new (MemoryContextAllocZero(work, sizeof(NraCall))) NraCall();  // trivially destructible
    c->fn = fn;
    c->m = m;
    c->k = k;
    c->batch = batch;
    c->rows_hint = rows_hint;
    c->col = col;
    c->qcol = qcol;
    c->qid = psprintf("r.%s", quote_identifier(id_column));
    c->qrel = qrel;
    c->work = work;
    c->holder = holder;
    MemoryContextSwitchTo(work);
    PG_TRY();
    {
        nra_run(c);
    }
    PG_CATCH();
    {
        nra_rethrow(fn, caller);
    }
    PG_END_TRY();

    // Results and statistics (the engine is freed with its context).
    MemoryContextSwitchTo(caller);
    if (c->empty) {
        MemoryContextDelete(work);
        return static_cast<Datum>(0);
    }
    for (size_t i = 0; i < c->n_out; ++i) {
        Datum values2[2] = {Int64GetDatum(c->out_ids[i]), Float8GetDatum(c->out_totals[i])};
        bool nulls2[2] = {false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values2, nulls2);
    }
    approx::RunStats& stats = last_run_stats();
    stats.ms_read = c->ms_read;
    stats.add("rounds", static_cast<double>(c->info.rounds));
    stats.add("random_accesses", static_cast<double>(c->random_accesses));
    stats.add("candidates", static_cast<double>(c->info.candidates));
    if (c->need_unlisted) stats.add("unlisted_rows", static_cast<double>(c->unlisted));
    for (int j = 0; j < m; ++j) {
        char key[32];
        snprintf(key, sizeof key, "depth_%d", j + 1);
        stats.add(key, static_cast<double>(c->info.depth[j]));
    }
    MemoryContextDelete(work);
    check_engine_result(approx::Status::Ok(), fn);  // the fallback NOTICE, if any
    return static_cast<Datum>(0);
}
