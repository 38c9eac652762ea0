// Inner queries into columnar buffers (see query_reader.h).
#include "readers/query_reader.h"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "utils/plancache.h"
#include "tcop/dest.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
}

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>

namespace {

// A DestReceiver forwarding to a RowSink.
struct SinkReceiver {
    DestReceiver pub;  // must be first: the executor sees a DestReceiver*
    RowSink sink;
};

void sink_startup(DestReceiver* self, int, TupleDesc desc) {
    SinkReceiver* r = reinterpret_cast<SinkReceiver*>(self);
    if (r->sink.startup) r->sink.startup(r->sink.ctx, desc);
}

bool sink_slot(TupleTableSlot* slot, DestReceiver* self) {
    SinkReceiver* r = reinterpret_cast<SinkReceiver*>(self);
    r->sink.row(r->sink.ctx, slot);
    return true;
}

void sink_shutdown(DestReceiver*) {}
void sink_destroy(DestReceiver*) {}

struct ColumnarReceiver {
    const char* fn;
    const char* arg;
    int ncols;
    const ColumnKind* kinds;
    const char* const* names;
    bool allow_infinity;
    const bool* nullable;  // per column, or nullptr
    MemoryContext mcxt;    // where the columns live (the caller's context)
    Oid types[8];
    int64 capacity;
    QueryColumns* out;
};

void receiver_startup(void* self, TupleDesc desc) {
    ColumnarReceiver* r = static_cast<ColumnarReceiver*>(self);
    if (desc->natts != r->ncols)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("%s: %s must return %d columns, not %d", r->fn, r->arg, r->ncols, desc->natts)));
    for (int c = 0; c < r->ncols; ++c) {
        Oid declared = TupleDescAttr(desc, c)->atttypid;
        Oid t = getBaseType(declared);  // a domain reads as its base type
        if (!column_type_ok(r->kinds[c], t))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: column %d (%s) of %s must be %s, not %s", r->fn, c + 1, r->names[c], r->arg,
                                   column_kind_types(r->kinds[c]), format_type_be(declared))));
        r->types[c] = t;
    }
}

void receiver_slot(void* self, TupleTableSlot* slot) {
    ColumnarReceiver* r = static_cast<ColumnarReceiver*>(self);
    slot_getsomeattrs(slot, r->ncols);
    for (int c = 0; c < r->ncols; ++c)
        if (slot->tts_isnull[c] && !(r->nullable && r->nullable[c])) {
            ++r->out->rows_skipped;
            return;
        }
    if (r->out->rows == r->capacity)
        reserve_columns(r->out, r->kinds, r->nullable, r->mcxt, &r->capacity, r->out->rows + 1);
    int64 row = r->out->rows;
    for (int c = 0; c < r->ncols; ++c) {
        if (r->out->nulls[c]) {
            bool isnull = slot->tts_isnull[c];
            r->out->nulls[c][row] = isnull;
            if (isnull) {
                ++r->out->null_counts[c];
                if (r->kinds[c] == ColumnKind::Integer)
                    r->out->ints[c][row] = 0;
                else
                    r->out->floats[c][row] = 0;
                continue;
            }
        }
        Datum d = slot->tts_values[c];
        if (r->kinds[c] == ColumnKind::Integer) {
            r->out->ints[c][row] = integer_datum(d, r->types[c]);
        } else {
            double v = float_datum(d, r->types[c]);
            if (std::isnan(v) || (!r->allow_infinity && std::isinf(v)))
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("%s: column %d (%s) of %s contains %s", r->fn, c + 1, r->names[c], r->arg,
                                       std::isnan(v) ? "NaN" : "an infinite value")));
            r->out->floats[c][row] = v;
        }
    }
    r->out->rows = row + 1;
}

}  // namespace

static void* grow_column(MemoryContext mcxt, void* old, Size bytes) {
    void* p = old ? repalloc_huge(old, bytes) : MemoryContextAllocHuge(mcxt, bytes);
#ifdef MADV_HUGEPAGE
    // Columns of millions of rows are written once, front to back: with 4 kB
    // pages their page faults cost as much as the reading (measured: 39,000
    // faults per 10^7-row call). Transparent huge pages where the kernel
    // offers them on request; a refusal changes nothing.
    if (bytes >= (Size)4 * 1024 * 1024) {
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1);
        uintptr_t end = ((uintptr_t)p + bytes) & ~(page - 1);
        if (end > begin) (void)madvise((void*)begin, end - begin, MADV_HUGEPAGE);
    }
#endif
    return p;
}

void reserve_columns(QueryColumns* out, const ColumnKind* kinds, const bool* nullable, MemoryContext mcxt,
                     int64* capacity, int64 need) {
    if (need <= *capacity) return;
    int64 cap = *capacity > 0 ? *capacity : 16384;
    while (cap < need) cap *= 2;
    for (int c = 0; c < out->ncols; ++c) {
        Size bytes = static_cast<Size>(cap) * 8;
        if (kinds[c] == ColumnKind::Integer)
            out->ints[c] = static_cast<int64*>(grow_column(mcxt, out->ints[c], bytes));
        else
            out->floats[c] = static_cast<double*>(grow_column(mcxt, out->floats[c], bytes));
        if (nullable && nullable[c])
            out->nulls[c] = static_cast<bool*>(grow_column(mcxt, out->nulls[c], static_cast<Size>(cap)));
    }
    *capacity = cap;
}

const char* column_kind_types(ColumnKind k) {
    return k == ColumnKind::Integer ? "int2, int4 or int8" : "float8, float4, int2, int4 or int8";
}

bool column_type_ok(ColumnKind k, Oid t) {
    if (t == INT2OID || t == INT4OID || t == INT8OID) return true;
    return k == ColumnKind::Float && (t == FLOAT8OID || t == FLOAT4OID);
}

int64 integer_datum(Datum d, Oid t) {
    if (t == INT8OID) return DatumGetInt64(d);
    if (t == INT4OID) return DatumGetInt32(d);
    return DatumGetInt16(d);
}

double float_datum(Datum d, Oid t) {
    if (t == FLOAT8OID) return DatumGetFloat8(d);
    if (t == FLOAT4OID) return DatumGetFloat4(d);
    return static_cast<double>(integer_datum(d, t));
}

void run_inner_query(const char* fn, const char* arg, const char* query, const RowSink& sink) {
    SinkReceiver* r = static_cast<SinkReceiver*>(palloc0(sizeof(SinkReceiver)));
    r->pub.receiveSlot = sink_slot;
    r->pub.rStartup = sink_startup;
    r->pub.rShutdown = sink_shutdown;
    r->pub.rDestroy = sink_destroy;
    r->pub.mydest = DestNone;
    r->sink = sink;
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: SPI_connect failed", fn)));
    // Parallel plans where PostgreSQL allows them: the query runs to
    // completion into the receiver, as a top-level SELECT would.
    SPIPlanPtr plan = SPI_prepare_cursor(query, 0, nullptr, CURSOR_OPT_PARALLEL_OK);
    if (plan == nullptr)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("%s: cannot prepare %s: %s", fn, arg, SPI_result_code_string(SPI_result))));
    if (!SPI_is_cursor_plan(plan))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: %s must be a single query that returns rows (a SELECT)", fn, arg)));
    // Read-only SPI refuses a writing query with a confusing message ("SELECT
    // is not allowed in a non-volatile function"): say it of the argument.
    ListCell* lc;
    foreach (lc, SPI_plan_get_plan_sources(plan)) {
        CachedPlanSource* ps = static_cast<CachedPlanSource*>(lfirst(lc));
        ListCell* qc;
        foreach (qc, ps->query_list) {
            Query* q = lfirst_node(Query, qc);
            if (q->commandType != CMD_SELECT || q->hasModifyingCTE || q->rowMarks != NIL)
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("%s: %s must only read rows (no data-modifying WITH, no FOR UPDATE / SHARE)",
                                       fn, arg)));
        }
    }
    SPIExecuteOptions options;
    memset(&options, 0, sizeof options);
    options.read_only = true;
    options.allow_nonatomic = false;
    options.dest = &r->pub;
    int rc = SPI_execute_plan_extended(plan, &options);
    if (rc < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: %s could not be run: %s", fn, arg, SPI_result_code_string(rc))));
    SPI_finish();
    pfree(r);
}

QueryColumns read_query_columns(const char* fn, const char* arg, const char* query, int ncols, const ColumnKind* kinds,
                                const char* const* column_names, bool allow_infinity, const bool* nullable) {
    Assert(ncols > 0 && ncols <= 8);
    double t0 = glue_clock_ms();
    QueryColumns out;
    memset(&out, 0, sizeof out);
    out.ncols = ncols;

    ColumnarReceiver* r = static_cast<ColumnarReceiver*>(palloc0(sizeof(ColumnarReceiver)));
    r->fn = fn;
    r->arg = arg;
    r->ncols = ncols;
    r->kinds = kinds;
    r->names = column_names;
    r->allow_infinity = allow_infinity;
    r->nullable = nullable;
    r->mcxt = CurrentMemoryContext;
    r->out = &out;
    RowSink sink = {receiver_startup, receiver_slot, r};
    run_inner_query(fn, arg, query, sink);
    out.ms_read = glue_clock_ms() - t0;
    out.read_path = "query";
    return out;
}
