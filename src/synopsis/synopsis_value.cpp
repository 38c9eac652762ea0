// kde_synopsis values in their stored (and binary send/recv) form: the
// layout's versions, encoding and decoding, and the validation every decoded
// or produced value passes (a trust boundary); the type's SQL functions are in
// synopsis_type.cpp.
#include "synopsis/synopsis.h"
#include "runtime/byte_codec.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
}

#include <cmath>

namespace synopsis_glue {

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

}  // namespace synopsis_glue
