// SQL glue for top-k: the aggregates topk/bottomk (id, score, k) -> scored[],
// and the functions topk/bottomk(relation, id_column, score_column, k), which
// read the table through the relation reader, each participant keeping its k
// best pairs (ReadBound), and hand those to the selection engine (every pair
// under approx_gpu.device = gpu: the GPU's select).
// topk_nra(relation, id_column, score_columns, k, batch) is in topk_nra.cpp.
#include "runtime/runtime.h"
#include "runtime/aggregate_state.h"
#include "runtime/arguments.h"
#include "runtime/byte_codec.h"
#include "readers/relation_reader.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/memutils.h"
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

// Room for the answer of a selection of k among n pairs (ERROR 54000 when
// the scored[] array would pass 1 GB).
static void answer_buffers(const char* fn, int64 k, int64 n, int64** ids, double** scores) {
    int64 want = std::min<int64>(k, n);
    if (want > static_cast<int64>(MaxAllocSize / 64))  // each scored element takes about 48 bytes
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: an answer of %lld pairs would exceed 1 GB", fn, static_cast<long long>(want)),
                        errhint("Use a smaller k.")));
    *ids = static_cast<int64*>(palloc(sizeof(int64) * Max(want, 1)));
    *scores = static_cast<double*>(palloc(sizeof(double) * Max(want, 1)));
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

static int64 prune_limit(const TopkState* s) {
    return static_cast<int64>(topk::prune_limit(static_cast<size_t>(s->k)));
}

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
                                      static_cast<size_t>(other->n), order, reinterpret_cast<int64_t*>(s->ids + s->n),
                                      s->scores + s->n, appended);
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
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("unsupported topk aggregate state version")));
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
    int64* ids;
    double* scores;
    answer_buffers(fn, s->k, s->n, &ids, &scores);
    size_t got = 0;
    approx::Status st = run_engine(fn, s->skipped, 0, [&](const approx::ExecContext& ctx) {
        return topk::select(s->ids, s->scores, static_cast<size_t>(s->n), static_cast<size_t>(s->k), order, ctx,
                            reinterpret_cast<int64_t*>(ids), scores, got);
    });
    check_engine_result(st, fn);
    PG_RETURN_ARRAYTYPE_P(scored_array(fcinfo, ids, scores, static_cast<int64>(got)));
}

// ---- functions over a relation: topk/bottomk(relation, id_column, score_column, k) ---------

static Datum topk_relation(FunctionCallInfo fcinfo, Order order) {
    const char* fn = order_fn(order);
    const int32 k = PG_GETARG_INT32(3);
    if (k <= 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: k must be positive, not %d", fn, k)));
    static const ColumnKind kinds[2] = {ColumnKind::Integer, ColumnKind::Float};
    static const char* const args[2] = {"id_column", "score_column"};
    const char* cols[2] = {NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2))};
    // Each participant of the read keeps its k best rows (relation_reader.h,
    // ReadBound), unless approx_gpu.device = gpu asks for the GPU's select
    // over every row (then the columns are uploaded while they are read).
    const ReadBound bound = {k, order == Order::Asc};
    const bool gpu_forced = engine_settings().mode == approx::DeviceMode::Gpu;
    QueryColumns in = read_relation_columns(fn, "relation", PG_GETARG_OID(0), 2, cols, args, kinds, true, nullptr,
                                            true, gpu_forced ? nullptr : &bound);
    if (in.rows == 0) PG_RETURN_NULL();  // no rows: NULL, like the aggregate
    int64* ids;
    double* scores;
    answer_buffers(fn, k, in.rows, &ids, &scores);
    size_t got = 0;
    approx::Status st = run_engine(fn, in.rows_skipped, in.ms_read, [&](const approx::ExecContext& ctx) {
        approx::ExecContext with_staged = ctx;  // the columns the reader uploaded while reading
        with_staged.staged[0] = staged_columns(&in);
        return topk::select(in.ints[0], in.floats[1], static_cast<size_t>(in.rows), static_cast<size_t>(k), order,
                            with_staged, reinterpret_cast<int64_t*>(ids), scores, got);
    });
    const QueryColumns* inputs[1] = {&in};
    record_read(inputs, 1);
    if (in.rows_seen > 0) {  // a bounded read: the rows read, and the participants' best the engine selected from
        last_run_stats().rows = in.rows_seen;
        last_run_stats().add("rows_selected_from", static_cast<double>(in.rows));
    }
    release_staged(&in);
    check_engine_result(st, fn);
    PG_RETURN_ARRAYTYPE_P(scored_array(fcinfo, ids, scores, static_cast<int64>(got)));
}

APPROX_FUNCTION(approx_gpu_topk_relation) { return topk_relation(fcinfo, Order::Desc); }
APPROX_FUNCTION(approx_gpu_bottomk_relation) { return topk_relation(fcinfo, Order::Asc); }
