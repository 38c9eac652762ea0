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
static constexpr int64 kPruneFloor = 65536;

static int64 prune_limit(const TopkState* s) { return std::max<int64>(4 * static_cast<int64>(s->k), kPruneFloor); }

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
    if (!st.ok()) raise_if_error(st, fn);
    s->n = static_cast<int64>(kept);
}

static void append_pair(TopkState* s, MemoryContext mcxt, int64 id, double score) {
    if (s->n == s->capacity) {
        int64 cap = s->capacity > 0 ? s->capacity * 2 : 16;
        Size ib = static_cast<Size>(cap) * sizeof(int64), sb = static_cast<Size>(cap) * sizeof(double);
        s->ids = static_cast<int64*>(s->ids ? repalloc_huge(s->ids, ib) : MemoryContextAllocHuge(mcxt, ib));
        s->scores = static_cast<double*>(s->scores ? repalloc_huge(s->scores, sb) : MemoryContextAllocHuge(mcxt, sb));
        s->capacity = cap;
    }
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
    // The better threshold stays valid: its k pairs are in the merged buffer.
    if (other->thr.valid && (!s->thr.valid || other->thr.key < s->thr.key ||
                             (other->thr.key == s->thr.key && other->thr.id < s->thr.id)))
        s->thr = other->thr;
    for (int64 i = 0; i < other->n; ++i) {
        if (!topk::beats(other->scores[i], other->ids[i], order, s->thr)) continue;
        append_pair(s, mcxt, other->ids[i], other->scores[i]);
    }
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
    if (order > 1 || has_k > 1 || (has_k && k <= 0) || skipped < 0 || thr_valid > 1 || n < 0 ||
        n > (r.end - r.p) / 16)
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
    raise_if_error(st, fn);
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
    Relation rel = relation_open(relid, AccessShareLock);
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
        qcol[j] = quote_identifier(col[j]);
    }
    if (!has_unique_index(rel, id_att))
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("%s: id_column \"%s\" of relation \"%s\" has no unique index", fn, id_column, relname),
                        errhint("NRA needs each object once per list: CREATE UNIQUE INDEX ON %s (%s).", qrel,
                                quote_identifier(id_column))));
    int64 rows_hint = rel->rd_rel->reltuples > 0 ? static_cast<int64>(rel->rd_rel->reltuples) : 0;
    relation_close(rel, NoLock);
    const char* qid = quote_identifier(id_column);

    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    InitMaterializedSRF(fcinfo, 0);

    // Everything the engine holds is freed with this context (on ERROR too).
    MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "topk_nra", ALLOCSET_DEFAULT_SIZES);
    NraHolder* holder = static_cast<NraHolder*>(MemoryContextAllocZero(work, sizeof(NraHolder)));
    MemoryContextCallback* cb = static_cast<MemoryContextCallback*>(MemoryContextAllocZero(work, sizeof(MemoryContextCallback)));
    cb->func = nra_cleanup;
    cb->arg = holder;
    MemoryContextRegisterResetCallback(work, cb);
    MemoryContext caller = MemoryContextSwitchTo(work);

    int64* list_ids = static_cast<int64*>(MemoryContextAllocHuge(work, sizeof(int64) * static_cast<Size>(batch) * m));
    double* list_scores =
        static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * static_cast<Size>(batch) * m));
    double* mins = static_cast<double*>(palloc(sizeof(double) * m));
    Portal* portals = static_cast<Portal*>(palloc0(sizeof(Portal) * m));
    bool* exhausted = static_cast<bool*>(palloc0(sizeof(bool) * m));
    topk::NraList* lists = static_cast<topk::NraList*>(palloc0(sizeof(topk::NraList) * m));
    double ms_read = 0;

    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: SPI_connect failed", fn)));

    // The missing-score bound of every list: the column's minimum.
    StringInfoData q;
    initStringInfo(&q);
    appendStringInfoString(&q, "SELECT ");
    for (int j = 0; j < m; ++j) appendStringInfo(&q, "%smin(%s)::float8", j ? ", " : "", qcol[j]);
    appendStringInfo(&q, " FROM %s WHERE %s IS NOT NULL", qrel, qid);
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
                            errmsg("%s: column \"%s\" contains %s", fn, col[j],
                                   std::isnan(mins[j]) ? "NaN" : "an infinite value"),
                            errdetail("Scores are summed; they must be finite.")));
    }
    if (missing_min >= 0) {
        resetStringInfo(&q);
        appendStringInfo(&q, "SELECT 1 FROM %s WHERE %s IS NOT NULL LIMIT 1", qrel, qid);
        if (SPI_execute(q.data, true, 1) != SPI_OK_SELECT)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read %s", fn, qrel)));
        if (SPI_processed > 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: score column \"%s\" has no non-NULL value", fn, col[missing_min]),
                            errdetail("A missing score counts as the column's minimum, which does not exist.")));
        SPI_finish();  // no objects: an empty answer
        MemoryContextSwitchTo(caller);
        MemoryContextDelete(work);
        return static_cast<Datum>(0);
    }

    // One cursor per list, in descending order (a B-tree index on the column,
    // scanned backward, gives the order without sorting).
    for (int j = 0; j < m; ++j) {
        resetStringInfo(&q);
        appendStringInfo(&q, "SELECT %s::int8, %s::float8 FROM %s WHERE %s IS NOT NULL AND %s IS NOT NULL ORDER BY %s DESC",
                         qid, qcol[j], qrel, qcol[j], qid, qcol[j]);
        SPIPlanPtr plan = SPI_prepare_cursor(q.data, 0, nullptr, CURSOR_OPT_FAST_PLAN | CURSOR_OPT_NO_SCROLL);
        if (plan == nullptr)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                            errmsg("%s: cannot prepare the cursor of column \"%s\": %s", fn, col[j],
                                   SPI_result_code_string(SPI_result))));
        portals[j] = SPI_cursor_open(nullptr, plan, nullptr, nullptr, true);
    }

    approx::ExecContext ctx = exec_context(fn);
    topk::NraConfig cfg;
    cfg.m = m;
    cfg.k = k;
    cfg.min_score = mins;
    cfg.rows_hint = rows_hint;
    approx::Status st = topk::nra_create(cfg, ctx, holder->nra);
    if (!st.ok()) raise_if_error(st, fn);

    ListReceiver* recv = static_cast<ListReceiver*>(palloc0(sizeof(ListReceiver)));
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
            recv->column = col[j];
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
        ms_read += glue_clock_ms() - t0;
        st = topk::nra_round(holder->nra, lists, ctx, progress);
        if (!st.ok()) raise_if_error(st, fn);
        if (progress.done || progress.need_unlisted) break;
    }
    for (int j = 0; j < m; ++j) SPI_cursor_close(portals[j]);

    // Every list exhausted and fewer than k objects above the minimum total:
    // objects in no list (all scores missing) tie at that total; the k with
    // the smallest ids are enough.
    int64 unlisted = 0;
    if (progress.need_unlisted) {
        resetStringInfo(&q);
        appendStringInfo(&q, "SELECT %s::int8 FROM %s WHERE %s IS NOT NULL", qid, qrel, qid);
        for (int j = 0; j < m; ++j) appendStringInfo(&q, " AND %s IS NULL", qcol[j]);
        appendStringInfo(&q, " ORDER BY %s LIMIT %d", qid, k);
        double t0 = glue_clock_ms();
        if (SPI_execute(q.data, true, 0) != SPI_OK_SELECT)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot read the objects without scores", fn)));
        unlisted = static_cast<int64>(SPI_processed);
        int64_t* ids =
            static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * static_cast<Size>(unlisted > 0 ? unlisted : 1)));
        for (int64 i = 0; i < unlisted; ++i) {
            bool isnull;
            ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
        }
        ms_read += glue_clock_ms() - t0;
        st = topk::nra_add_unlisted(holder->nra, ids, static_cast<size_t>(unlisted), ctx);
        if (!st.ok()) raise_if_error(st, fn);
    }

    // The winners (known only by their bounds) and their scores: the only random access.
    // (Allocations from here on that must outlive SPI_finish() go to `work`:
    // after SPI_connect() the current context is SPI's, freed by SPI_finish().)
    int64_t* winners = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * static_cast<Size>(k)));
    size_t n_win = 0;
    st = topk::nra_winners(holder->nra, ctx, winners, static_cast<size_t>(k), n_win);
    if (!st.ok()) raise_if_error(st, fn);
    topk::NraInfo info = topk::nra_info(holder->nra);

    resetStringInfo(&q);
    appendStringInfo(&q, "SELECT %s::int8", qid);
    for (int j = 0; j < m; ++j) appendStringInfo(&q, ", %s::float8", qcol[j]);
    appendStringInfo(&q, " FROM %s WHERE %s = ANY($1)", qrel, qid);
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
        for (int j = 0; j < m; ++j) {
            Datum d = SPI_getbinval(tup, SPI_tuptable->tupdesc, j + 2, &isnull);
            values[i * m + j] = isnull ? mins[j] : DatumGetFloat8(d);  // a missing score counts as the minimum
        }
    }
    ms_read += glue_clock_ms() - t_fetch;
    int64_t* out_ids = static_cast<int64_t*>(MemoryContextAllocHuge(work, sizeof(int64_t) * n_alloc));
    double* out_totals = static_cast<double*>(MemoryContextAllocHuge(work, sizeof(double) * n_alloc));
    size_t n_out = 0;
    st = topk::rank_by_sum(win_ids, values, n_win, m, static_cast<size_t>(k), ctx, out_ids, out_totals, n_out);
    if (!st.ok()) raise_if_error(st, fn);
    SPI_finish();

    // Results and statistics (the engine is freed with its context).
    MemoryContextSwitchTo(caller);
    for (size_t i = 0; i < n_out; ++i) {
        Datum values2[2] = {Int64GetDatum(out_ids[i]), Float8GetDatum(out_totals[i])};
        bool nulls2[2] = {false, false};
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values2, nulls2);
    }
    approx::RunStats& stats = last_run_stats();
    stats.ms_read = ms_read;
    stats.add("rounds", static_cast<double>(info.rounds));
    stats.add("random_accesses", static_cast<double>(n_win));
    stats.add("candidates", static_cast<double>(info.candidates));
    if (progress.need_unlisted) stats.add("unlisted_rows", static_cast<double>(unlisted));
    for (int j = 0; j < m; ++j) {
        char key[32];
        snprintf(key, sizeof key, "depth_%d", j + 1);
        stats.add(key, static_cast<double>(info.depth[j]));
    }
    MemoryContextDelete(work);
    raise_if_error(approx::Status::Ok(), fn);  // the fallback NOTICE, if any
    return static_cast<Datum>(0);
}
