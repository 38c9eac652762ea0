// SQL glue for moving-object grid indexes: mo_create, mo_load, mo_update,
// mo_delete, mo_range, mo_range_count, mo_info, mo_drop.
//
// Indexes belong to the backend that created them: a registry
// (moving_registry.cpp: name -> engine object) of plain structs in
// TopMemoryContext, each holding a pointer to the C++ index made with new. They are not transactional (ROLLBACK keeps
// every change) and are freed by mo_drop or when the backend exits (on_proc_exit). With the GPU service in use the
// index itself lives in the service and the pointer is its proxy (core/moving_served.cpp); the service frees it on
// mo_drop, or when the backend exits.
//
// A function that runs user SQL (mo_load's query) must not keep a registry
// entry across it: the query may drop the index (or drop and re-create it), so
// the entry is looked up again, and its serial compared, after the query.
//
// Memory: approx_gpu.moving_session_memory caps what all of a session's
// indexes hold together (host and device); before every engine call the index
// gets the budget the session's other indexes leave it.
#include "moving/moving.h"

#include "runtime/arguments.h"
#include "runtime/jsonb_builder.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/guc.h"
#include "utils/memutils.h"
}

#include <cmath>

#include "readers/query_reader.h"
#include "readers/relation_reader.h"

static int max_cells_setting = 1 << 22;
int moving_session_memory_kb = 1024 * 1024;  // 1 GB

void moving_init(void) {
    // Both protect the server: only a superuser (or a role granted SET) may raise them.
    DefineCustomIntVariable("approx_gpu.moving_max_cells",
                            "Most cells (cells_x * cells_y) a moving-object index may have.",
                            "Every cell costs memory on the index's device whether or not it holds objects.",
                            &max_cells_setting, 1 << 22, 1, 1 << 26, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.moving_session_memory",
                            "Most memory all moving-object indexes of one session may hold together (host and GPU).",
                            "Counts cells, buckets, the id table and batch scratch; mo_create or a batch that would "
                            "pass it is an error that changes nothing.",
                            &moving_session_memory_kb, 1024 * 1024, 1024, INT_MAX, PGC_SUSET, GUC_UNIT_KB, nullptr,
                            nullptr, nullptr);
}

// ---- arguments -------------------------------------------------------------------------

struct IdArray {
    const int64* data;
    int64 n;
};

// A 1-D bigint[] without NULL elements (read in place).
static IdArray id_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg) {
    ArrayType* a = array_arg_flat(fcinfo, argno);
    if (ARR_ELEMTYPE(a) != INT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("%s: %s must be a bigint array", fn, arg)));
    if (ARR_NDIM(a) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: %s must be a one-dimensional array, not %d-dimensional", fn, arg, ARR_NDIM(a))));
    if (array_contains_nulls(a))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: %s must not contain NULL", fn, arg)));
    IdArray out;
    out.n = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
    out.data = reinterpret_cast<const int64*>(ARR_DATA_PTR(a));
    return out;
}

// A 1-D float8[] without NULL elements; NaN is an error, and so is
// ±Infinity unless allowed.
static FloatArray coord_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg,
                                  bool allow_infinity) {
    FloatArray x = float_array_arg(fcinfo, argno, fn, arg, allow_infinity);
    if (x.skipped > 0)
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: %s must not contain NULL", fn, arg)));
    return x;
}

static double bound_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, bool allow_infinity) {
    double v = PG_GETARG_FLOAT8(argno);
    check_float_value(v, fn, arg, allow_infinity);
    return v;
}

// ---- functions -------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_mo_create) {
    const char* fn = "mo_create";
    const char* name = mo_name_arg(fcinfo, fn);
    mo::Grid g;
    g.xmin = bound_arg(fcinfo, 1, fn, "xmin", false);
    g.ymin = bound_arg(fcinfo, 2, fn, "ymin", false);
    g.xmax = bound_arg(fcinfo, 3, fn, "xmax", false);
    g.ymax = bound_arg(fcinfo, 4, fn, "ymax", false);
    g.cells_x = PG_GETARG_INT32(5);
    g.cells_y = PG_GETARG_INT32(6);
    if (mo_find_entry(name) != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                        errmsg("%s: a moving-object index named \"%s\" already exists in this session", fn, name),
                        errhint("Drop it first with mo_drop().")));
    approx::Status st = mo::check_grid(g, max_cells_setting);
    check_engine_result(st, fn);

    MoEntry* e = mo_new_entry(name);
    mo::Index* index = nullptr;
    int64 max_cells = max_cells_setting;
    mo::MemoryBudget budget;
    budget.limit = mo_session_limit_bytes();
    budget.others = mo_session_bytes();
    st = run_engine(fn, 0, 0,
                    [&](const approx::ExecContext& ctx) { return mo::create(g, max_cells, ctx, index, budget); });
    if (!st.ok()) pfree(e);
    check_engine_result(st, fn);
    mo_add_entry(e, index);
    PG_RETURN_VOID();
}

APPROX_FUNCTION(approx_gpu_mo_drop) {
    const char* fn = "mo_drop";
    MoEntry* e = mo_lookup(fcinfo, fn);
    // Frees an index the GPU service holds (first: an ERROR here leaves the
    // entry as it was). Its status does not matter: an index the service
    // could not free now (cancel, the service restarted) is freed when this
    // backend exits, or is gone already.
    mo::Index* index = e->index;
    (void)run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) { return index->close(ctx); });
    mo_remove_entry(e);
    PG_RETURN_VOID();
}

// mo_load(name, query) or mo_load(name, relation, id_column, x_column, y_column).
static Datum load_objects(FunctionCallInfo fcinfo, bool relation) {
    const char* fn = "mo_load";
    const uint64 serial = mo_lookup(fcinfo, fn)->serial;  // an unknown name fails before the query runs
    static const ColumnKind kinds[3] = {ColumnKind::Integer, ColumnKind::Float, ColumnKind::Float};
    static const char* const names[3] = {"id", "x", "y"};
    static const char* const args[3] = {"id_column", "x_column", "y_column"};
    QueryColumns cols;
    if (relation) {
        const char* colnames[3] = {NameStr(*PG_GETARG_NAME(2)), NameStr(*PG_GETARG_NAME(3)),
                                   NameStr(*PG_GETARG_NAME(4))};
        cols = read_relation_columns(fn, "relation", PG_GETARG_OID(1), 3, colnames, args, kinds, false);
    } else {
        char* query = text_to_cstring(PG_GETARG_TEXT_PP(1));
        cols = read_query_columns(fn, "query", query, 3, kinds, names, false);
    }
    // The query ran user SQL, which may have dropped (or dropped and
    // re-created) the index: look it up again.
    MoEntry* e = mo_find_entry(mo_name_arg(fcinfo, fn));
    if (e == nullptr || e->serial != serial)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("%s: moving-object index \"%s\" was dropped while its query ran", fn, mo_name_arg(fcinfo, fn)),
                 errdetail("Nothing was loaded.")));
    int64 applied = 0;
    mo::Index* index = mo_budgeted(e);
    approx::Status st = run_engine(fn, cols.rows_skipped, cols.ms_read, [&](const approx::ExecContext& ctx) {
        return index->update(cols.ints[0], cols.floats[1], cols.floats[2], static_cast<size_t>(cols.rows), ctx,
                             applied);
    });
    const QueryColumns* inputs[1] = {&cols};
    record_read(inputs, 1);
    check_engine_result(st, fn);
    PG_RETURN_INT64(applied);
}

APPROX_FUNCTION(approx_gpu_mo_load) { return load_objects(fcinfo, false); }
APPROX_FUNCTION(approx_gpu_mo_load_relation) { return load_objects(fcinfo, true); }

APPROX_FUNCTION(approx_gpu_mo_update) {
    const char* fn = "mo_update";
    double t0 = glue_clock_ms();
    MoEntry* e = mo_lookup(fcinfo, fn);
    IdArray ids = id_array_arg(fcinfo, 1, fn, "ids");
    FloatArray xs = coord_array_arg(fcinfo, 2, fn, "xs", false);
    FloatArray ys = coord_array_arg(fcinfo, 3, fn, "ys", false);
    if (ids.n != xs.n || ids.n != ys.n)
        ereport(ERROR,
                (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                 errmsg("%s: ids, xs and ys must have the same length (got %lld, %lld and %lld)", fn,
                        static_cast<long long>(ids.n), static_cast<long long>(xs.n), static_cast<long long>(ys.n))));
    int64 applied = 0;
    mo::Index* index = mo_budgeted(e);
    approx::Status st = run_engine(fn, 0, glue_clock_ms() - t0, [&](const approx::ExecContext& ctx) {
        return index->update(ids.data, xs.data, ys.data, static_cast<size_t>(ids.n), ctx, applied);
    });
    check_engine_result(st, fn);
    PG_RETURN_INT64(applied);
}

APPROX_FUNCTION(approx_gpu_mo_delete) {
    const char* fn = "mo_delete";
    double t0 = glue_clock_ms();
    MoEntry* e = mo_lookup(fcinfo, fn);
    IdArray ids = id_array_arg(fcinfo, 1, fn, "ids");
    int64 removed = 0;
    mo::Index* index = mo_budgeted(e);
    approx::Status st = run_engine(fn, 0, glue_clock_ms() - t0, [&](const approx::ExecContext& ctx) {
        return index->remove(ids.data, static_cast<size_t>(ids.n), ctx, removed);
    });
    check_engine_result(st, fn);
    PG_RETURN_INT64(removed);
}

struct RangeResult {
    int64* ids;
    int64 n;
};

APPROX_FUNCTION(approx_gpu_mo_range) {
    const char* fn = "mo_range";
    FuncCallContext* funcctx;
    if (SRF_IS_FIRSTCALL()) {
        funcctx = SRF_FIRSTCALL_INIT();
        MoEntry* e = mo_lookup(fcinfo, fn);
        mo::Rect q;
        q.xmin = bound_arg(fcinfo, 1, fn, "xmin", true);
        q.ymin = bound_arg(fcinfo, 2, fn, "ymin", true);
        q.xmax = bound_arg(fcinfo, 3, fn, "xmax", true);
        q.ymax = bound_arg(fcinfo, 4, fn, "ymax", true);
        mo::Index* index = mo_budgeted(e);
        // Count first, then fill a buffer of that size (the index does not
        // change in between: it belongs to this backend).
        size_t found = 0;
        approx::Status st = run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) {
            return index->range_ids(q, ctx, nullptr, 0, found);
        });
        check_engine_result(st, fn);
        RangeResult* r =
            static_cast<RangeResult*>(MemoryContextAllocZero(funcctx->multi_call_memory_ctx, sizeof(RangeResult)));
        r->ids = static_cast<int64*>(MemoryContextAllocHuge(funcctx->multi_call_memory_ctx,
                                                            sizeof(int64) * (found > 0 ? found : 1)));
        size_t filled = 0;
        st = run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) {
            return index->range_ids(q, ctx, r->ids, found, filled);
        });
        check_engine_result(st, fn);
        if (filled != found)
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                            errmsg("%s: the index reported %zu objects, then %zu", fn, found, filled)));
        r->n = static_cast<int64>(found);
        funcctx->user_fctx = r;
    }
    funcctx = SRF_PERCALL_SETUP();
    RangeResult* r = static_cast<RangeResult*>(funcctx->user_fctx);
    if (static_cast<int64>(funcctx->call_cntr) < r->n) {
        Datum id = Int64GetDatum(r->ids[funcctx->call_cntr]);  // before SRF_RETURN_NEXT advances call_cntr
        SRF_RETURN_NEXT(funcctx, id);
    }
    SRF_RETURN_DONE(funcctx);
}

APPROX_FUNCTION(approx_gpu_mo_range_count) {
    const char* fn = "mo_range_count";
    double t0 = glue_clock_ms();
    MoEntry* e = mo_lookup(fcinfo, fn);
    FloatArray a[4] = {coord_array_arg(fcinfo, 1, fn, "xmin", true), coord_array_arg(fcinfo, 2, fn, "ymin", true),
                       coord_array_arg(fcinfo, 3, fn, "xmax", true), coord_array_arg(fcinfo, 4, fn, "ymax", true)};
    int64 n = a[0].n;
    if (a[1].n != n || a[2].n != n || a[3].n != n)
        ereport(ERROR,
                (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                 errmsg("%s: xmin, ymin, xmax and ymax must have the same length (got %lld, %lld, %lld and %lld)", fn,
                        static_cast<long long>(a[0].n), static_cast<long long>(a[1].n), static_cast<long long>(a[2].n),
                        static_cast<long long>(a[3].n))));
    mo::Rect* qs = static_cast<mo::Rect*>(palloc(sizeof(mo::Rect) * (n > 0 ? n : 1)));
    for (int64 i = 0; i < n; ++i) qs[i] = mo::Rect{a[0].data[i], a[1].data[i], a[2].data[i], a[3].data[i]};
    int64* counts = static_cast<int64*>(palloc(sizeof(int64) * (n > 0 ? n : 1)));
    mo::Index* index = mo_budgeted(e);
    approx::Status st = run_engine(fn, 0, glue_clock_ms() - t0, [&](const approx::ExecContext& ctx) {
        return index->range_count(qs, static_cast<size_t>(n), ctx, counts);
    });
    check_engine_result(st, fn);
    static_assert(FLOAT8PASSBYVAL, "bigint arrays are built straight from int64 buffers");
    ArrayType* out = construct_array(reinterpret_cast<Datum*>(counts), static_cast<int>(n), INT8OID, 8, true,
                                     TYPALIGN_DOUBLE);
    PG_RETURN_ARRAYTYPE_P(out);
}

static void add_batch(JsonbBuilder& j, const char* key, const mo::BatchStats& b, bool query) {
    if (b.op[0] == '\0') {
        j.add_null(key);
        return;
    }
    j.begin_object(key);
    j.add_string("op", b.op);
    j.add_int("entries", b.entries);
    if (query) {
        j.add_int("candidate_cells", b.candidate_cells);
        j.add_int("checked_objects", b.checked_objects);
        j.add_int("results", b.results);
    } else {
        j.add_int("distinct", b.distinct);
        j.add_int("inserted", b.inserted);
        j.add_int("moved", b.moved);
        j.add_int("in_place", b.in_place);
        j.add_int("deleted", b.deleted);
    }
    j.add_number("ms_stage", b.ms_stage);
    j.add_number("ms_apply", b.ms_apply);
    j.add_number("ms_transfer", b.ms_transfer);
    j.add_number("ms_total", b.ms_total);
    j.end_object();
}

APPROX_FUNCTION(approx_gpu_mo_info) {
    const char* fn = "mo_info";
    MoEntry* e = mo_lookup(fcinfo, fn);
    mo::Info* info = static_cast<mo::Info*>(palloc0(sizeof(mo::Info)));  // trivially destructible
    e->index->info(*info);
    JsonbBuilder j;
    j.begin_object();
    j.add_string("name", e->name);
    j.add_string("device", approx::device_name(info->device));
    j.add_bool("gpu_service", info->in_service);
    j.add_int("objects", info->objects);
    j.add_int("cells", info->cells);
    j.add_int("cells_x", info->grid.cells_x);
    j.add_int("cells_y", info->grid.cells_y);
    j.begin_object("extent");
    j.add_number("xmin", info->grid.xmin);
    j.add_number("ymin", info->grid.ymin);
    j.add_number("xmax", info->grid.xmax);
    j.add_number("ymax", info->grid.ymax);
    j.end_object();
    j.add_int("bucket_slots", info->bucket_slots);
    j.add_int("buckets", info->buckets_used);
    j.add_int("bucket_capacity", info->bucket_capacity);
    j.add_int("hash_capacity", info->hash_capacity);
    j.add_int("device_bytes", info->device_bytes);
    j.add_int("host_bytes", info->host_bytes);
    j.add_int("bytes", e->index->bytes());
    j.add_int("session_bytes", mo_session_bytes());
    j.add_int("session_memory_limit", mo_session_limit_bytes());
    add_batch(j, "last_update", info->last_update, false);
    add_batch(j, "last_query", info->last_query, true);
    j.end_object();
    PG_RETURN_JSONB_P(j.finish());
}