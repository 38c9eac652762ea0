// kde_synopsis_agg / kde_merge_agg (a reservoir state: transition, combine,
// serialize, final) and kde_merge.
#include "synopsis/synopsis.h"
#include "runtime/aggregate_state.h"
#include "runtime/arguments.h"
#include "runtime/byte_codec.h"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "tcop/dest.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
}

#include <cmath>

namespace synopsis_glue {

constexpr uint8 kStateVersion = 2;  // 2: the column encodings after the names (states never outlive a query)

SynAgg* new_state(MemoryContext mcxt) {
    SynAgg* st = static_cast<SynAgg*>(MemoryContextAllocZero(mcxt, sizeof(SynAgg)));
    return st;
}

void ensure_rows(SynAgg* st, MemoryContext mcxt, int64 rows) {
    if (rows <= st->rows_cap) return;
    int64 cap = st->rows_cap > 0 ? st->rows_cap : 64;
    while (cap < rows) cap *= 2;
    if (cap > st->res.capacity && st->res.capacity > 0) cap = std::max<int64>(st->res.capacity, rows);
    Size bytes = static_cast<Size>(cap) * st->d * sizeof(double);
    st->rows = static_cast<double*>(st->rows == nullptr ? MemoryContextAllocHuge(mcxt, bytes)
                                                        : repalloc_huge(st->rows, bytes));
    st->rows_cap = cap;
}

void set_params(SynAgg* st, int64 sample_size, int method, int smoothing, const char* fn) {
    if (st->params_set) {
        if (st->res.capacity != sample_size)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: sample_size must be the same on every row of a group", fn)));
        if (st->method != method)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: bandwidth must be the same on every row of a group", fn)));
        if (st->smoothing != smoothing)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: smoothing must be the same on every row of a group", fn)));
        return;
    }
    st->method = method;
    st->smoothing = smoothing;
    syn::reservoir_init(st->res, sample_size, sampling_seed());
    st->params_set = true;
}

void set_dim(SynAgg* st, int d, int64 sample_size, const char* fn) {
    if (st->d == d) return;
    if (st->d != 0)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: every x must have the same length (%d), got %d", fn, st->d, d)));
    check_size(sample_size, d, true, fn);
    st->d = d;
}

// Reads one row x (1-D float8 array, no per-row palloc). false: skip (NULL element).

namespace {
bool read_row(ArrayType* a, double* out, int& d, const char* fn) {
    if (ARR_ELEMTYPE(a) != FLOAT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("%s: x must be a float8 array", fn)));
    if (ARR_NDIM(a) != 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: x must be a one-dimensional array with 1 to %d elements", fn, kMaxDim)));
    int n = ARR_DIMS(a)[0];
    if (n < 1 || n > kMaxDim)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: x has %d elements; between 1 and %d are supported", fn, n, kMaxDim)));
    d = n;
    if (ARR_HASNULL(a)) return false;
    Float8Cursor elements(a);
    for (int j = 0; j < n; ++j) {
        double v = 0;
        elements.next(v);  // no NULLs here
        check_float_value(v, fn, "x", false);
        out[j] = v;
    }
    return true;
}

}  // namespace

void add_sample(SynAgg* st, MemoryContext mcxt, const double* row) {
    int64 slot = syn::reservoir_slot(st->res);
    if (slot < 0) return;
    ensure_rows(st, mcxt, slot + 1);
    memcpy(st->rows + slot * st->d, row, sizeof(double) * st->d);
}

// Merges a uniform sample (m rows of n, capacity k) into the state.
void merge_into(SynAgg* st, MemoryContext mcxt, const double* rows, int64 m, int64 n, int64 k, const char* fn) {
    if (n == 0) return;
    if (st->res.seen == 0) {
        st->res.capacity = std::min<int64>(st->res.capacity > 0 ? st->res.capacity : k, k);
        st->res.seen = n;
        st->res.size = m;
        ensure_rows(st, mcxt, m);
        memcpy(st->rows, rows, sizeof(double) * m * st->d);
        return;
    }
    int64 seen = add_count(st->res.seen, n, fn, "N");
    int64 target = syn::merged_size(st->res.capacity, st->res.seen, k, n);
    check_size(target, st->d, true, fn);
    double* out = static_cast<double*>(
        MemoryContextAllocHuge(mcxt, std::max<Size>(1, static_cast<Size>(target) * st->d * sizeof(double))));
    int64 written = 0;
    approx::Status status = syn::merge_samples(st->rows, st->res.size, st->res.seen, st->res.capacity, rows, m, n, k,
                                               st->d, st->res.rng, out, written);
    check_engine_result(status, fn);
    if (st->rows) pfree(st->rows);
    st->rows = out;
    st->rows_cap = target;
    st->res.capacity = std::min(st->res.capacity, k);
    st->res.seen = seen;
    st->res.size = written;
}

void merge_names(SynAgg* st, bool has_names, const char (*names)[NAMEDATALEN], bool first, const char* fn) {
    if (first) {
        st->has_names = has_names;
        if (has_names) memcpy(st->names, names, sizeof(st->names));
        return;
    }
    if (!has_names || !st->has_names) {
        st->has_names = false;
        return;
    }
    for (int j = 0; j < st->d; ++j)
        if (strcmp(st->names[j], names[j]) != 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column %d is \"%s\" in one synopsis and \"%s\" in another", fn, j + 1,
                                   st->names[j], names[j])));
}

// Adds synopsis v into the state (kde_merge_agg, kde_merge).
void absorb(SynAgg* st, MemoryContext mcxt, const SynValue* v, const char* fn) {
    // A stratified sample is not a uniform one, and two dictionaries code
    // values differently: neither merges by the reservoir rule.
    if (v->s.n_strata > 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s: merging stratified synopses is not supported", fn)));
    for (int j = 0; j < v->s.d; ++j)
        if (v->encoding[j] == static_cast<uint8>(ValueEncoding::Dictionary))
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("%s: merging synopses with dictionary-coded (categorical) columns is not supported", fn)));
    bool first = st->d == 0;
    if (!first && st->res.seen > 0 && memcmp(st->encoding, v->encoding, sizeof(uint8) * v->s.d) != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: the synopses encode their columns differently (numbers, dates, timestamps)", fn)));
    if (!first && st->d != v->s.d)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: the synopses have %d and %d columns", fn, st->d, v->s.d)));
    if (st->params_set &&
        (st->method != static_cast<int>(v->s.method) || st->smoothing != static_cast<int>(v->s.smoothing)))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: the synopses were built with different bandwidth or smoothing settings", fn)));
    if (!st->params_set) {
        st->method = static_cast<int>(v->s.method);
        st->smoothing = static_cast<int>(v->s.smoothing);
        syn::reservoir_init(st->res, v->s.sample_size, sampling_seed());
        st->res.seen = 0;
        st->params_set = true;
    }
    st->d = v->s.d;
    memcpy(st->encoding, v->encoding, sizeof(st->encoding));
    merge_names(st, v->has_names, v->names, first, fn);
    st->skipped = add_count(st->skipped, v->s.skipped, fn, "skipped");
    merge_into(st, mcxt, v->sample, v->s.m, v->s.n_rows, v->s.sample_size, fn);
}

Datum state_final(SynAgg* st, const char* fn) {
    if (st == nullptr || st->res.seen == 0) return (Datum)0;
    double* sample = static_cast<double*>(palloc_extended(static_cast<Size>(st->res.size) * st->d * sizeof(double),
                                                          MCXT_ALLOC_HUGE));
    memcpy(sample, st->rows, sizeof(double) * st->res.size * st->d);
    return finish_synopsis(st->d, st->res.seen, st->res.size, st->res.capacity, st->skipped, sample, st->method,
                           st->smoothing, st->has_names, st->names, fn, st->encoding);
}

}  // namespace synopsis_glue

using namespace synopsis_glue;

// ---- aggregates ---------------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_kde_synopsis_sfunc) {
    const char* fn = "kde_synopsis_agg";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    SynAgg* st = PG_ARGISNULL(0) ? new_state(mcxt) : reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(0));
    int nargs = PG_NARGS();
    static const char* const kParamNames[] = {"sample_size", "bandwidth", "smoothing"};
    for (int a = 2; a < nargs && a < 5; ++a)
        if (PG_ARGISNULL(a))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("%s: %s must not be NULL", fn, kParamNames[a - 2])));
    int32 k = nargs > 2 ? sample_size_arg(fcinfo, 2, fn) : kDefaultSampleSize;
    int method = nargs > 3 ? bandwidth_arg(fcinfo, 3, fn) : 0;
    int smoothing = nargs > 4 ? smoothing_arg(fcinfo, 4, fn) : 0;
    set_params(st, k, method, smoothing, fn);
    if (PG_ARGISNULL(1)) {
        ++st->skipped;
        PG_RETURN_POINTER(st);
    }
    double row[kMaxDim];
    int d = 0;
    bool ok = read_row(PG_GETARG_ARRAYTYPE_P(1), row, d, fn);
    set_dim(st, d, k, fn);
    if (!ok) {
        ++st->skipped;
        PG_RETURN_POINTER(st);
    }
    add_sample(st, mcxt, row);
    PG_RETURN_POINTER(st);
}

APPROX_FUNCTION(approx_gpu_kde_merge_sfunc) {
    const char* fn = "kde_merge_agg";
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    SynAgg* st = PG_ARGISNULL(0) ? new_state(mcxt) : reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(0));
    if (PG_ARGISNULL(1)) PG_RETURN_POINTER(st);
    SynValue* v = synopsis_arg(fcinfo, 1);
    absorb(st, mcxt, v, fn);
    pfree(v->sample);
    pfree(v);
    PG_RETURN_POINTER(st);
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_combine) {
    // shared by kde_synopsis_agg and kde_merge_agg: speak of the one called
    const char* fn = calling_aggregate_name(fcinfo, "kde_synopsis_agg");
    MemoryContext mcxt = aggregate_context(fcinfo, fn);
    if (PG_ARGISNULL(1)) {
        if (PG_ARGISNULL(0)) PG_RETURN_NULL();
        PG_RETURN_POINTER(PG_GETARG_POINTER(0));
    }
    SynAgg* other = reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(1));
    SynAgg* st = PG_ARGISNULL(0) ? new_state(mcxt) : reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(0));
    if (!other->params_set) PG_RETURN_POINTER(st);
    if (!st->params_set) {
        st->method = other->method;
        st->smoothing = other->smoothing;
        st->res.rng = other->res.rng;
        st->res.capacity = other->res.capacity;
        st->params_set = true;
    } else if (st->method != other->method || st->smoothing != other->smoothing) {
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("kde_synopsis_agg: bandwidth and smoothing must be the same on every row of a group")));
    }
    if (other->d != 0) {
        if (st->d != 0 && st->d != other->d)
            ereport(ERROR,
                    (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                     errmsg("kde_synopsis_agg: every x must have the same length (%d), got %d", st->d, other->d)));
        bool first = st->d == 0;
        st->d = other->d;
        if (first || st->res.seen == 0) {
            merge_names(st, other->has_names, other->names, true, fn);
            memcpy(st->encoding, other->encoding, sizeof(st->encoding));
        } else if (other->res.seen > 0) {
            merge_names(st, other->has_names, other->names, false, fn);
            if (memcmp(st->encoding, other->encoding, sizeof(st->encoding)) != 0)
                ereport(ERROR,
                        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                         errmsg("%s: the synopses encode their columns differently (numbers, dates, timestamps)", fn)));
        }
    }
    st->skipped = add_count(st->skipped, other->skipped, fn, "skipped");
    if (other->res.seen > 0)
        merge_into(st, mcxt, other->rows, other->res.size, other->res.seen, other->res.capacity, fn);
    PG_RETURN_POINTER(st);
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_serial) {
    SynAgg* st = reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(0));
    ByteWriter w;
    byte_writer_init(&w);
    put_u8(&w, kStateVersion);
    put_i32(&w, st->d);
    put_i32(&w, st->method);
    put_i32(&w, st->smoothing);
    put_u8(&w, st->params_set ? 1 : 0);
    put_i64(&w, st->skipped);
    put_i64(&w, st->res.capacity);
    put_i64(&w, st->res.seen);
    put_i64(&w, st->res.size);
    for (uint64 word : st->res.rng.s) put_i64(&w, static_cast<int64>(word));
    put_u8(&w, st->has_names ? 1 : 0);
    if (st->has_names)
        for (int j = 0; j < st->d; ++j) {
            int len = static_cast<int>(strlen(st->names[j]));
            put_u8(&w, static_cast<uint8>(len));
            appendBinaryStringInfo(&w.buf, st->names[j], len);
        }
    for (int j = 0; j < st->d; ++j) put_u8(&w, st->encoding[j]);
    put_f64s(&w, st->rows, st->res.size * st->d);
    PG_RETURN_BYTEA_P(byte_writer_finish(&w));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_deserial) {
    MemoryContext mcxt = aggregate_context(fcinfo, "kde synopsis deserialize");
    const char* what = "kde_synopsis_agg state";
    ByteReader r;
    byte_reader_init(&r, PG_GETARG_BYTEA_PP(0), what);
    auto bad = [&]() { ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid %s", what))); };
    if (get_u8(&r) != kStateVersion) bad();
    SynAgg* st = new_state(mcxt);
    st->d = get_i32(&r);
    st->method = get_i32(&r);
    st->smoothing = get_i32(&r);
    uint8 ps = get_u8(&r);
    st->params_set = ps == 1;
    st->skipped = get_i64(&r);
    st->res.capacity = get_i64(&r);
    st->res.seen = get_i64(&r);
    st->res.size = get_i64(&r);
    for (uint64& word : st->res.rng.s) word = static_cast<uint64>(get_i64(&r));
    uint8 hn = get_u8(&r);
    st->has_names = hn == 1;
    if (ps > 1 || hn > 1 || st->d < 0 || st->d > kMaxDim || st->method < 0 || st->method > 3 || st->smoothing < 0 ||
        st->smoothing > 2 || st->skipped < 0 || st->res.capacity < 0 || st->res.seen < 0 || st->res.size < 0 ||
        st->res.size != std::min(st->res.capacity, st->res.seen) || (st->res.size > 0 && st->d == 0))
        bad();
    if (st->has_names)
        for (int j = 0; j < st->d; ++j) {
            int len = get_u8(&r);
            if (len < 1 || len > kNameMax || r.end - r.p < len) bad();
            memcpy(st->names[j], r.p, len);
            st->names[j][len] = '\0';
            r.p += len;
        }
    for (int j = 0; j < st->d; ++j) {
        st->encoding[j] = get_u8(&r);
        if (st->encoding[j] >= static_cast<uint8>(ValueEncoding::Dictionary)) bad();
    }
    if (st->d > 0 && st->res.size > (r.end - r.p) / (8 * st->d)) bad();
    if (st->res.size > 0) {
        ensure_rows(st, mcxt, st->res.size);
        get_f64s(&r, st->rows, st->res.size * st->d);
    }
    byte_reader_expect_end(&r);
    PG_RETURN_POINTER(st);
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_final) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    SynAgg* st = reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(0));
    if (st->res.seen == 0) PG_RETURN_NULL();  // no rows: NULL, like avg()
    return state_final(st, "kde_synopsis_agg");
}

APPROX_FUNCTION(approx_gpu_kde_merge_final) {
    if (PG_ARGISNULL(0)) PG_RETURN_NULL();
    SynAgg* st = reinterpret_cast<SynAgg*>(PG_GETARG_POINTER(0));
    if (st->res.seen == 0) PG_RETURN_NULL();
    return state_final(st, "kde_merge_agg");
}

// ---- functions on values --------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_kde_merge) {
    const char* fn = "kde_merge";
    SynValue* a = synopsis_arg(fcinfo, 0);
    SynValue* b = synopsis_arg(fcinfo, 1);
    SynAgg* st = new_state(CurrentMemoryContext);
    absorb(st, CurrentMemoryContext, a, fn);
    absorb(st, CurrentMemoryContext, b, fn);
    return state_final(st, fn);
}
