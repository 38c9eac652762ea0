// kde_synopsis values: the stored (binary) form, the type's I/O functions,
// kde_synopsis_info, and building a value from a sample (the JSON text form
// is in synopsis_text.cpp).
#include "synopsis/synopsis.h"
#include "runtime/arguments.h"
#include "runtime/byte_codec.h"
#include "runtime/jsonb_builder.h"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
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

const char* const kBandwidthNames[4] = {"cdf", "plugin", "lscv", "scott"};
const char* const kSmoothingNames[3] = {"auto", "always", "never"};
const char* const kModeNames[3] = {"exact", "kde", "log_kde"};
const char* const kEncodingNames[5] = {"number", "date", "timestamp", "timestamptz", "dictionary"};

namespace {
// Fixed part of the stored form: header fields and per-column fields, format 2
// (format 1 lacks the joint CV errors in the header and the mode fields of
// each column).
constexpr Size kHeaderBytes1 = 4 + 4 + 8 * 4;
constexpr Size kColumnBytes1 = 7 * 8 + 1;
constexpr Size kHeaderBytes2 = kHeaderBytes1 + 2 * 8;
constexpr Size kColumnBytes2 = kColumnBytes1 + 1 + 3 * 8 + syn::kModes * 8 + 8;
// Format 3: n_strata in the header; per column categorical, null_count,
// encoding, dictionary size (then the dictionaries and strata after the names).
constexpr Size kHeaderBytes = kHeaderBytes2 + 4;
constexpr Size kColumnBytes = kColumnBytes2 + 1 + 8 + 1 + 4;

}  // namespace

SynValue* new_value(MemoryContext mcxt) {
    SynValue* v = static_cast<SynValue*>(MemoryContextAllocZero(mcxt, sizeof(SynValue)));
    // The engine's defaults for what format 1 does not store (no evidence, unscaled intervals).
    v->s.joint_cv[0] = v->s.joint_cv[1] = -1;
    for (syn::Column& c : v->s.cols) c = syn::Column();
    return v;
}

[[noreturn]] void raise_value(int code, const char* what, const char* problem) {
    ereport(ERROR, (errcode(code), errmsg("invalid %s: %s", what, problem)));
    pg_unreachable();
}

// Engine validation plus the glue's own (names).
void validate_value(const SynValue* v, int code, const char* what) {
    const syn::Synopsis& s = v->s;
    // Format 3's own fields first: the engine's checks read the sample with
    // them (NaN = NULL, codes, strata).
    for (int j = 0; j < s.d; ++j) {
        if (v->encoding[j] > static_cast<uint8>(ValueEncoding::Dictionary))
            raise_value(code, what, "unknown value encoding");
        bool dictionary = v->encoding[j] == static_cast<uint8>(ValueEncoding::Dictionary);
        if (s.cols[j].categorical != dictionary)
            raise_value(code, what, "a column is categorical exactly when its encoding is a dictionary");
        if (v->dict_size[j] < 0 || (!dictionary && v->dict_size[j] != 0) || v->dict_size[j] > s.m)
            raise_value(code, what, "bad dictionary size");
        for (int k = 0; k < v->dict_size[j]; ++k) {
            const char* e = v->dict[j][k];
            if (!pg_verifymbstr(e, static_cast<int>(strlen(e)), true))
                raise_value(code, what, "dictionary value is not valid in the database encoding");
            if (k > 0 && strcmp(v->dict[j][k - 1], e) >= 0)
                raise_value(code, what, "dictionary values must be distinct and sorted");
        }
        int64 nulls = 0;
        for (int64 i = 0; i < s.m; ++i) {
            double x = v->sample[i * s.d + j];
            if (std::isnan(x)) {
                ++nulls;
                continue;
            }
            if (dictionary && !(x >= 0 && x < v->dict_size[j] && x == std::floor(x)))
                raise_value(code, what, "a dictionary column holds a value that is not a code of its dictionary");
        }
        if (nulls != s.cols[j].null_count) raise_value(code, what, "null_count does not match the sample");
    }
    if (s.n_strata < 0 || s.n_strata > s.m) raise_value(code, what, "bad number of strata");
    if (s.n_strata > 0) {
        int64 next = 0, rows = 0;
        for (int g = 0; g < s.n_strata; ++g) {
            const syn::Stratum& st = s.strata[g];
            if (st.begin != next || st.end <= st.begin || st.end - st.begin > st.n_rows ||
                pg_add_s64_overflow(rows, st.n_rows, &rows))
                raise_value(code, what, "strata must be contiguous, non-empty and no larger than their rows");
            next = st.end;
        }
        if (next != s.m || rows != s.n_rows) raise_value(code, what, "strata must cover the sample and the N rows");
    }
    approx::Status st = syn::validate(v->s);
    if (!st.ok()) raise_value(code, what, st.message);
    if (v->has_names)
        for (int j = 0; j < v->s.d; ++j) {
            size_t len = strlen(v->names[j]);
            if (len == 0 || len > static_cast<size_t>(kNameMax)) raise_value(code, what, "bad column name length");
            if (!pg_verifymbstr(v->names[j], static_cast<int>(len), true))
                raise_value(code, what, "column name is not valid in the database encoding");
        }
}

// Upper bound of the stored size (names at their longest).
Size stored_bytes(int d, int64 m, bool names) {
    return kHeaderBytes + d * kColumnBytes + (names ? d * (1 + kNameMax) : 0) + static_cast<Size>(m) * d * 8;
}

Size value_bytes(const SynValue* v) {
    Size names = 0;
    if (v->has_names)
        for (int j = 0; j < v->s.d; ++j) names += 1 + strlen(v->names[j]);
    for (int j = 0; j < v->s.d; ++j)
        for (int k = 0; k < v->dict_size[j]; ++k) names += 4 + strlen(v->dict[j][k]);
    return VARHDRSZ + kHeaderBytes + v->s.d * kColumnBytes + names + v->s.n_strata * 24 +
           static_cast<Size>(v->s.m) * v->s.d * 8;
}

// The stored (and binary send) form: version byte, explicit little-endian.
bytea* value_to_bytes(const SynValue* v) {
    const syn::Synopsis& s = v->s;
    ByteWriter w;
    byte_writer_init(&w);
    put_u8(&w, kValueVersion);
    put_u8(&w, static_cast<uint8>(s.method));
    put_u8(&w, static_cast<uint8>(s.smoothing));
    put_u8(&w, v->has_names ? 1 : 0);
    put_i32(&w, s.d);
    put_i64(&w, s.n_rows);
    put_i64(&w, s.m);
    put_i64(&w, s.sample_size);
    put_i64(&w, s.skipped);
    put_f64(&w, s.joint_cv[0]);
    put_f64(&w, s.joint_cv[1]);
    put_i32(&w, s.n_strata);
    for (int j = 0; j < s.d; ++j) {
        const syn::Column& c = s.cols[j];
        put_f64(&w, c.mean);
        put_f64(&w, c.sd);
        put_f64(&w, c.min);
        put_f64(&w, c.max);
        put_f64(&w, c.density_h);
        put_f64(&w, c.box_h);
        put_f64(&w, c.step);
        put_u8(&w, c.discrete ? 1 : 0);
        put_u8(&w, static_cast<uint8>(c.mode));
        put_f64(&w, c.shift);
        put_f64(&w, c.log_h);
        put_f64(&w, c.interval_scale);
        for (double e : c.cv_error) put_f64(&w, e);
        put_f64(&w, c.cv_coverage);
        put_u8(&w, c.categorical ? 1 : 0);
        put_i64(&w, c.null_count);
        put_u8(&w, v->encoding[j]);
        put_i32(&w, v->dict_size[j]);
    }
    if (v->has_names)
        for (int j = 0; j < s.d; ++j) {
            int len = static_cast<int>(strlen(v->names[j]));
            put_u8(&w, static_cast<uint8>(len));
            appendBinaryStringInfo(&w.buf, v->names[j], len);
        }
    for (int j = 0; j < s.d; ++j)
        for (int k = 0; k < v->dict_size[j]; ++k) {
            int len = static_cast<int>(strlen(v->dict[j][k]));
            put_i32(&w, len);
            appendBinaryStringInfo(&w.buf, v->dict[j][k], len);
        }
    for (int g = 0; g < s.n_strata; ++g) {
        put_i64(&w, s.strata[g].n_rows);
        put_i64(&w, s.strata[g].begin);
        put_i64(&w, s.strata[g].end);
    }
    put_f64s(&w, v->sample, s.m * s.d);
    return byte_writer_finish(&w);
}

SynValue* value_from_bytes(const char* data, size_t len, int code, const char* what) {
    ByteReader r;
    byte_reader_init_raw(&r, data, len, what);
    SynValue* v = new_value(CurrentMemoryContext);
    syn::Synopsis& s = v->s;
    const int version = get_u8(&r);
    if (version < syn::kFormatVersionMin || version > kValueVersion) raise_value(code, what, "unsupported version");
    uint8 method = get_u8(&r), smoothing = get_u8(&r), flags = get_u8(&r);
    if (method > 3) raise_value(code, what, "unknown bandwidth method");
    if (smoothing > 2) raise_value(code, what, "unknown smoothing");
    if (flags > 1) raise_value(code, what, "unknown flags");
    s.method = static_cast<syn::Bandwidth>(method);
    s.smoothing = static_cast<syn::Smoothing>(smoothing);
    v->has_names = flags == 1;
    s.d = get_i32(&r);
    if (s.d < 1 || s.d > kMaxDim) raise_value(code, what, "d must be between 1 and 32");
    s.n_rows = get_i64(&r);
    s.m = get_i64(&r);
    s.sample_size = get_i64(&r);
    s.skipped = get_i64(&r);
    if (version >= 2) {
        s.joint_cv[0] = get_f64(&r);
        s.joint_cv[1] = get_f64(&r);
    }
    if (version >= 3) s.n_strata = get_i32(&r);
    if (s.n_strata < 0 || s.n_strata > (1 << 30)) raise_value(code, what, "bad number of strata");
    if (s.m < 1 || s.m > static_cast<int64>((r.end - r.p) / (8 * s.d)))
        raise_value(code, what, "sample length does not match the data");
    for (int j = 0; j < s.d; ++j) {
        syn::Column& c = s.cols[j];
        c.mean = get_f64(&r);
        c.sd = get_f64(&r);
        c.min = get_f64(&r);
        c.max = get_f64(&r);
        c.density_h = get_f64(&r);
        c.box_h = get_f64(&r);
        c.step = get_f64(&r);
        uint8 disc = get_u8(&r);
        if (disc > 1) raise_value(code, what, "bad discrete flag");
        c.discrete = disc == 1;
        if (version == 1) {  // format 1: a smoothed column is a raw-scale KDE, intervals unscaled
            c.mode = c.discrete ? syn::Mode::Exact : syn::Mode::Kde;
            continue;
        }
        uint8 mode = get_u8(&r);
        if (mode >= syn::kModes) raise_value(code, what, "unknown column mode");
        c.mode = static_cast<syn::Mode>(mode);
        c.shift = get_f64(&r);
        c.log_h = get_f64(&r);
        c.interval_scale = get_f64(&r);
        for (double& e : c.cv_error) e = get_f64(&r);
        c.cv_coverage = get_f64(&r);
        if (version == 2) continue;
        uint8 categorical = get_u8(&r);
        if (categorical > 1) raise_value(code, what, "bad categorical flag");
        c.categorical = categorical == 1;
        c.null_count = get_i64(&r);
        v->encoding[j] = get_u8(&r);
        v->dict_size[j] = get_i32(&r);
        if (v->dict_size[j] < 0 || v->dict_size[j] > s.m) raise_value(code, what, "bad dictionary size");
    }
    if (v->has_names)
        for (int j = 0; j < s.d; ++j) {
            int nlen = get_u8(&r);
            if (nlen < 1 || nlen > kNameMax || r.end - r.p < nlen) raise_value(code, what, "bad column name");
            memcpy(v->names[j], r.p, nlen);
            v->names[j][nlen] = '\0';
            if (strlen(v->names[j]) != static_cast<size_t>(nlen)) raise_value(code, what, "bad column name");
            r.p += nlen;
        }
    for (int j = 0; j < s.d; ++j) {
        if (v->dict_size[j] == 0) continue;
        if (v->dict_size[j] > (r.end - r.p) / 4) raise_value(code, what, "value is truncated");
        v->dict[j] = static_cast<char**>(palloc(sizeof(char*) * v->dict_size[j]));
        for (int k = 0; k < v->dict_size[j]; ++k) {
            int32 len = get_i32(&r);
            if (len < 0 || len > r.end - r.p) raise_value(code, what, "bad dictionary value");
            v->dict[j][k] = pnstrdup(r.p, len);
            if (strlen(v->dict[j][k]) != static_cast<size_t>(len)) raise_value(code, what, "bad dictionary value");
            r.p += len;
        }
    }
    if (s.n_strata > (r.end - r.p) / 24) raise_value(code, what, "value is truncated");
    if (s.n_strata > 0) {
        v->strata = static_cast<syn::Stratum*>(palloc(sizeof(syn::Stratum) * s.n_strata));
        for (int g = 0; g < s.n_strata; ++g) {
            v->strata[g].n_rows = get_i64(&r);
            v->strata[g].begin = get_i64(&r);
            v->strata[g].end = get_i64(&r);
        }
        s.strata = v->strata;
    }
    if (s.m > static_cast<int64>((r.end - r.p) / (8 * s.d))) raise_value(code, what, "value is truncated");
    v->sample = static_cast<double*>(palloc_extended(static_cast<Size>(s.m) * s.d * sizeof(double), MCXT_ALLOC_HUGE));
    get_f64s(&r, v->sample, s.m * s.d);
    byte_reader_expect_end(&r);
    s.sample = v->sample;
    validate_value(v, code, what);
    return v;
}

// A stored kde_synopsis (argument, table row or freshly built value).
SynValue* stored_value(const bytea* b) {
    return value_from_bytes(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), ERRCODE_DATA_CORRUPTED, "kde_synopsis value");
}

SynValue* synopsis_arg(FunctionCallInfo fcinfo, int argno) {
    return stored_value(PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(argno)));
}

// ---- helpers for the functions -------------------------------------------------------------

void check_size(int64 sample_size, int d, bool names, const char* fn) {
    Size bytes = stored_bytes(d, sample_size, names);
    if (sample_size > static_cast<int64>(MaxAllocSize / 8) || bytes + VARHDRSZ >= MaxAllocSize)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("%s: a sample of " INT64_FORMAT " rows of %d columns would exceed the 1 GB limit of a value",
                        fn, sample_size, d),
                 errhint("Use a smaller sample_size.")));
}

// Finishes a sample into a synopsis value (bandwidths on the engine; the
// only GPU work of the aggregates). sample is palloc'd, m x d.
Datum finish_synopsis(int d, int64 n_rows, int64 m, int64 sample_size, int64 skipped, double* sample, int method,
                      int smoothing, bool has_names, char (*names)[NAMEDATALEN], const char* fn,
                      const uint8* encoding) {
    SynValue* v = new_value(CurrentMemoryContext);
    if (encoding) memcpy(v->encoding, encoding, sizeof(v->encoding));
    for (int j = 0; j < d; ++j)
        for (int64 i = 0; i < m; ++i)
            if (std::isnan(sample[i * d + j])) ++v->s.cols[j].null_count;
    v->s.d = d;
    v->s.n_rows = n_rows;
    v->s.m = m;
    v->s.sample_size = sample_size;
    v->s.skipped = skipped;
    v->s.sample = sample;
    v->sample = sample;
    v->has_names = has_names;
    if (has_names) memcpy(v->names, names, sizeof(v->names));
    approx::Status st = run_engine(fn, skipped, 0, [&](const approx::ExecContext& ctx) {
        ctx.stats->add("sample_rows", static_cast<double>(m));
        return syn::finalize(v->s, static_cast<syn::Bandwidth>(method), static_cast<syn::Smoothing>(smoothing), ctx);
    });
    check_engine_result(st, fn);
    // A produced value passes the same validation as an input (a value that
    // could not be read back must never be returned or stored).
    validate_value(v, ERRCODE_INTERNAL_ERROR, psprintf("%s result", fn));
    PG_RETURN_BYTEA_P(value_to_bytes(v));
}

// a + b for the counts of merged synopses and states (N, skipped): ERROR
// 22003 naming the function instead of a wrapped, unreadable value.
int64 add_count(int64 a, int64 b, const char* fn, const char* what) {
    int64 sum;
    if (pg_add_s64_overflow(a, b, &sum))
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("%s: %s of the merged synopsis is out of range for bigint (" INT64_FORMAT
                               " + " INT64_FORMAT ")",
                               fn, what, a, b)));
    return sum;
}

int bandwidth_arg(FunctionCallInfo fcinfo, int argno, const char* fn) {
    return choice_arg(fcinfo, argno, fn, "bandwidth", kBandwidthNames, lengthof(kBandwidthNames));
}

int smoothing_arg(FunctionCallInfo fcinfo, int argno, const char* fn) {
    return choice_arg(fcinfo, argno, fn, "smoothing", kSmoothingNames, lengthof(kSmoothingNames));
}

int32 sample_size_arg(FunctionCallInfo fcinfo, int argno, const char* fn) {
    int32 k = PG_GETARG_INT32(argno);
    if (k < 2)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: sample_size must be at least 2, not %d", fn, k)));
    return k;
}

uint64 sampling_seed(void) {
    uint64 seed = random_seed_for_call();
    // Parallel workers sample different rows; give each its own stream.
    if (ParallelWorkerNumber >= 0) seed ^= 0x9e3779b97f4a7c15ULL * static_cast<uint64>(ParallelWorkerNumber + 1);
    return seed;
}

Datum info_jsonb(const SynValue* v) {
    const syn::Synopsis& s = v->s;
    JsonbBuilder j;
    j.begin_object();
    j.add_int("N", s.n_rows);
    j.add_int("m", s.m);
    j.add_int("d", s.d);
    j.add_int("sample_size", s.sample_size);
    j.add_int("skipped", s.skipped);
    j.add_string("bandwidth", syn::bandwidth_name(s.method));
    j.add_string("smoothing", syn::smoothing_name(s.smoothing));
    j.add_int("bytes", static_cast<int64>(value_bytes(v)));
    j.add_int("strata", s.n_strata);
    j.begin_array("discrete_columns");
    for (int c = 0; c < s.d; ++c)
        if (s.cols[c].discrete) j.add_int(nullptr, c + 1);
    j.end_array();
    // The guard's joint check: CV error on multi-column boxes, all exact vs the chosen modes.
    j.begin_object("joint_cv_error");
    if (s.joint_cv[0] >= 0) {
        j.add_number("exact", s.joint_cv[0]);
        j.add_number("chosen", s.joint_cv[1]);
    } else {
        j.add_null("exact");
        j.add_null("chosen");
    }
    j.end_object();
    j.begin_array("columns");
    for (int c = 0; c < s.d; ++c) {
        const syn::Column& col = s.cols[c];
        j.begin_object();
        j.add_int("column", c + 1);
        if (v->has_names)
            j.add_string("name", v->names[c]);
        else
            j.add_null("name");
        j.add_number("density_bandwidth", col.density_h);
        j.add_number("box_bandwidth", col.box_h);
        j.add_bool("discrete", col.discrete);
        j.add_string("mode", syn::mode_name(col.mode));
        if (col.mode == syn::Mode::LogKde) {
            j.add_number("shift", col.shift);
            j.add_number("log_bandwidth", col.log_h);
        }
        j.add_number("interval_scale", col.interval_scale);
        j.add_string("encoding", kEncodingNames[v->encoding[c]]);
        j.add_bool("categorical", col.categorical);
        j.add_int("null_count", col.null_count);
        if (v->encoding[c] == static_cast<uint8>(ValueEncoding::Dictionary))
            j.add_int("dictionary_size", v->dict_size[c]);
        // The guard's evidence (smoothing = auto): cross-validated root mean
        // squared relative COUNT error of each candidate mode (null: not a
        // candidate or not run) and the chosen mode's CV interval coverage.
        j.begin_object("cv_error");
        for (int k = 0; k < syn::kModes; ++k) {
            if (col.cv_error[k] >= 0)
                j.add_number(kModeNames[k], col.cv_error[k]);
            else
                j.add_null(kModeNames[k]);
        }
        j.end_object();
        if (col.cv_coverage >= 0)
            j.add_number("cv_coverage", col.cv_coverage);
        else
            j.add_null("cv_coverage");
        j.add_number("step", col.step);
        j.add_number("mean", col.mean);
        j.add_number("sd", col.sd);
        j.add_number("min", col.min);
        j.add_number("max", col.max);
        j.end_object();
    }
    j.end_array();
    j.end_object();
    return JsonbPGetDatum(j.finish());
}

}  // namespace synopsis_glue

using namespace synopsis_glue;

// ---- type I/O ------------------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_kde_synopsis_in) {
    SynValue* v = value_from_text(PG_GETARG_CSTRING(0));
    PG_RETURN_BYTEA_P(value_to_bytes(v));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_out) { PG_RETURN_CSTRING(value_to_text(synopsis_arg(fcinfo, 0))); }

APPROX_FUNCTION(approx_gpu_kde_synopsis_recv) {
    StringInfo buf = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    SynValue* v = value_from_bytes(buf->data + buf->cursor, buf->len - buf->cursor,
                                   ERRCODE_INVALID_BINARY_REPRESENTATION, "external binary kde_synopsis");
    buf->cursor = buf->len;
    PG_RETURN_BYTEA_P(value_to_bytes(v));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_send) {
    // The stored form is the binary form: version byte, explicit little-endian.
    bytea* b = PG_DETOAST_DATUM_COPY(PG_GETARG_DATUM(0));
    PG_RETURN_BYTEA_P(b);
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_from_bytea) {
    bytea* b = PG_GETARG_BYTEA_PP(0);
    SynValue* v = value_from_bytes(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), ERRCODE_INVALID_BINARY_REPRESENTATION,
                                   "external binary kde_synopsis");
    PG_RETURN_BYTEA_P(value_to_bytes(v));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_info) { return info_jsonb(synopsis_arg(fcinfo, 0)); }
