// SQL glue of KDE synopses: the kde_synopsis type (text JSON and binary
// forms), the aggregates kde_synopsis_agg / kde_merge_agg, kde_merge, the box
// estimates approx_count / approx_sum / approx_avg (+ _ci, _many),
// kde_density, kde_synopsis_info, and named synopses (approx_gpu.synopses).
// Numerics live in the engine (src/core/synopsis.hpp).
#include "runtime.h"

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

#include "core/synopsis.hpp"

namespace syn = approx::synopsis;
using syn::kMaxDim;

namespace {

constexpr int kNameMax = NAMEDATALEN - 1;
constexpr int32 kDefaultSampleSize = 10000;
const char* const kBandwidthNames[] = {"cdf", "plugin", "lscv", "scott"};
const char* const kSmoothingNames[] = {"auto", "always", "never"};
const char* const kModeNames[] = {"exact", "kde", "log_kde"};
// Fixed part of the stored form: header fields and per-column fields, format 2
// (format 1 lacks the joint CV errors in the header and the mode fields of
// each column).
constexpr Size kHeaderBytes1 = 4 + 4 + 8 * 4;
constexpr Size kColumnBytes1 = 7 * 8 + 1;
constexpr Size kHeaderBytes = kHeaderBytes1 + 2 * 8;
constexpr Size kColumnBytes = kColumnBytes1 + 1 + 3 * 8 + syn::kModes * 8 + 8;

// A synopsis value read into aligned memory (palloc'd, trivially destructible).
struct SynValue {
    syn::Synopsis s;
    double* sample;
    bool has_names;
    char names[kMaxDim][NAMEDATALEN];
};

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
    return VARHDRSZ + kHeaderBytes + v->s.d * kColumnBytes + names + static_cast<Size>(v->s.m) * v->s.d * 8;
}

// The stored (and binary send) form: version byte, explicit little-endian.
bytea* value_to_bytes(const SynValue* v) {
    const syn::Synopsis& s = v->s;
    ByteWriter w;
    byte_writer_init(&w);
    put_u8(&w, syn::kFormatVersion);
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
    }
    if (v->has_names)
        for (int j = 0; j < s.d; ++j) {
            int len = static_cast<int>(strlen(v->names[j]));
            put_u8(&w, static_cast<uint8>(len));
            appendBinaryStringInfo(&w.buf, v->names[j], len);
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
    if (version < syn::kFormatVersionMin || version > syn::kFormatVersion)
        raise_value(code, what, "unsupported version");
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

// ---- text form: JSON -------------------------------------------------------------------

void append_double(StringInfo out, double v) {
    char buf[DOUBLE_SHORTEST_DECIMAL_LEN];
    double_to_shortest_decimal_buf(v, buf);  // shortest exact round trip
    appendStringInfoString(out, buf);
}

char* value_to_text(const SynValue* v) {
    const syn::Synopsis& s = v->s;
    StringInfoData out;
    initStringInfo(&out);
    appendStringInfo(&out,
                     "{\"version\": %d, \"N\": " INT64_FORMAT ", \"m\": " INT64_FORMAT ", \"d\": %d, "
                     "\"sample_size\": " INT64_FORMAT ", \"skipped\": " INT64_FORMAT
                     ", \"bandwidth\": \"%s\", \"smoothing\": \"%s\", \"joint_cv_error\": [",
                     syn::kFormatVersion, s.n_rows, s.m, s.d, s.sample_size, s.skipped, syn::bandwidth_name(s.method),
                     syn::smoothing_name(s.smoothing));
    append_double(&out, s.joint_cv[0]);
    appendStringInfoString(&out, ", ");
    append_double(&out, s.joint_cv[1]);
    appendStringInfoString(&out, "], \"columns\": [");
    for (int j = 0; j < s.d; ++j) {
        const syn::Column& c = s.cols[j];
        appendStringInfoString(&out, j ? ", {\"name\": " : "{\"name\": ");
        if (v->has_names)
            escape_json(&out, v->names[j]);
        else
            appendStringInfoString(&out, "null");
        const double fields[] = {c.mean, c.sd, c.min, c.max, c.density_h, c.box_h, c.step,
                                 c.shift, c.log_h, c.interval_scale, c.cv_coverage};
        const char* keys[] = {"mean", "sd", "min", "max", "density_bandwidth", "box_bandwidth", "step",
                              "shift", "log_bandwidth", "interval_scale", "cv_coverage"};
        for (int f = 0; f < 11; ++f) {
            appendStringInfo(&out, ", \"%s\": ", keys[f]);
            append_double(&out, fields[f]);
        }
        appendStringInfo(&out, ", \"discrete\": %s, \"mode\": \"%s\", \"cv_error\": [", c.discrete ? "true" : "false",
                         syn::mode_name(c.mode));
        for (int k = 0; k < syn::kModes; ++k) {
            if (k) appendStringInfoString(&out, ", ");
            append_double(&out, c.cv_error[k]);
        }
        appendStringInfoString(&out, "]}");
    }
    appendStringInfoString(&out, "], \"sample\": [");
    for (int64 i = 0; i < s.m; ++i) {
        appendStringInfoString(&out, i ? ", [" : "[");
        for (int j = 0; j < s.d; ++j) {
            if (j) appendStringInfoString(&out, ", ");
            append_double(&out, v->sample[i * s.d + j]);
        }
        appendStringInfoChar(&out, ']');
    }
    appendStringInfoString(&out, "]}");
    return out.data;
}

[[noreturn]] void bad_text(const char* problem) {
    ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                    errmsg("invalid input syntax for type kde_synopsis: %s", problem)));
    pg_unreachable();
}

JsonbValue* json_key(JsonbContainer* c, const char* key) {
    JsonbValue* v = getKeyJsonValueFromContainer(c, key, static_cast<int>(strlen(key)), nullptr);
    if (v == nullptr) bad_text(psprintf("missing key \"%s\"", key));
    return v;
}

double json_double(const JsonbValue* v, const char* what) {
    if (v->type != jbvNumeric) bad_text(psprintf("%s must be a number", what));
    double x = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, NumericGetDatum(v->val.numeric)));
    if (!std::isfinite(x)) bad_text(psprintf("%s is out of range for float8", what));
    return x;
}

// An exact integer (from the numeric itself, not through float8: counts past
// 2^53 -- a merged N, skipped -- must read back exactly what was written).
int64 json_int(const JsonbValue* v, const char* what) {
    if (v->type != jbvNumeric) bad_text(psprintf("%s must be a number", what));
    const char* digits = numeric_normalize(v->val.numeric);
    const char* p = digits[0] == '-' ? digits + 1 : digits;
    if (*p == '\0' || strspn(p, "0123456789") != strlen(p)) bad_text(psprintf("%s must be an integer", what));
    errno = 0;
    char* end = nullptr;
    long long x = strtoll(digits, &end, 10);
    if (errno == ERANGE || *end != '\0') bad_text(psprintf("%s is out of range for bigint", what));
    return static_cast<int64>(x);
}

JsonbContainer* json_array(const JsonbValue* v, const char* what, uint32 size) {
    if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) ||
        JsonContainerIsScalar(v->val.binary.data))
        bad_text(psprintf("%s must be an array", what));
    if (JsonContainerSize(v->val.binary.data) != size)
        bad_text(psprintf("%s must have %u elements", what, size));
    return v->val.binary.data;
}

int json_choice(const JsonbValue* v, const char* what, const char* const* names, int n) {
    if (v->type != jbvString) bad_text(psprintf("%s must be a string", what));
    for (int i = 0; i < n; ++i)
        if (static_cast<int>(strlen(names[i])) == v->val.string.len &&
            strncmp(names[i], v->val.string.val, v->val.string.len) == 0)
            return i;
    bad_text(psprintf("unknown %s", what));
}

bool json_bool(const JsonbValue* v, const char* what) {
    if (v->type != jbvBool) bad_text(psprintf("%s must be true or false", what));
    return v->val.boolean;
}

SynValue* value_from_text(const char* text) {
    Jsonb* jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
    if (!JB_ROOT_IS_OBJECT(jb)) bad_text("not a JSON object");
    JsonbContainer* root = &jb->root;
    // Format 1 has 10 keys; format 2 adds joint_cv_error (and per column shift,
    // log_bandwidth, interval_scale, cv_coverage, mode, cv_error).
    const int64 version = json_int(json_key(root, "version"), "version");
    if (version < syn::kFormatVersionMin || version > syn::kFormatVersion) bad_text("unsupported version");
    if (JsonContainerSize(root) != (version == 1 ? 10u : 11u)) bad_text("unexpected keys");
    SynValue* v = new_value(CurrentMemoryContext);
    syn::Synopsis& s = v->s;
    s.n_rows = json_int(json_key(root, "N"), "N");
    s.m = json_int(json_key(root, "m"), "m");
    int64 d = json_int(json_key(root, "d"), "d");
    if (d < 1 || d > kMaxDim) bad_text("d must be between 1 and 32");
    s.d = static_cast<int>(d);
    s.sample_size = json_int(json_key(root, "sample_size"), "sample_size");
    s.skipped = json_int(json_key(root, "skipped"), "skipped");
    s.method = static_cast<syn::Bandwidth>(json_choice(json_key(root, "bandwidth"), "bandwidth", kBandwidthNames, 4));
    s.smoothing = static_cast<syn::Smoothing>(json_choice(json_key(root, "smoothing"), "smoothing", kSmoothingNames, 3));
    if (version >= 2) {
        JsonbContainer* jcv = json_array(json_key(root, "joint_cv_error"), "joint_cv_error", 2);
        for (int k = 0; k < 2; ++k) s.joint_cv[k] = json_double(getIthJsonbValueFromContainer(jcv, k), "joint_cv_error");
    }
    JsonbContainer* cols = json_array(json_key(root, "columns"), "columns", static_cast<uint32>(s.d));
    int named = 0;
    for (int j = 0; j < s.d; ++j) {
        JsonbValue* cv = getIthJsonbValueFromContainer(cols, j);
        if (cv->type != jbvBinary || !JsonContainerIsObject(cv->val.binary.data) ||
            JsonContainerSize(cv->val.binary.data) != (version == 1 ? 9u : 15u))
            bad_text(version == 1 ? "each column must be an object with 9 keys" : "each column must be an object with 15 keys");
        JsonbContainer* c = cv->val.binary.data;
        syn::Column& col = s.cols[j];
        col.mean = json_double(json_key(c, "mean"), "mean");
        col.sd = json_double(json_key(c, "sd"), "sd");
        col.min = json_double(json_key(c, "min"), "min");
        col.max = json_double(json_key(c, "max"), "max");
        col.density_h = json_double(json_key(c, "density_bandwidth"), "density_bandwidth");
        col.box_h = json_double(json_key(c, "box_bandwidth"), "box_bandwidth");
        col.step = json_double(json_key(c, "step"), "step");
        col.discrete = json_bool(json_key(c, "discrete"), "discrete");
        if (version == 1) {
            col.mode = col.discrete ? syn::Mode::Exact : syn::Mode::Kde;
        } else {
            col.mode = static_cast<syn::Mode>(json_choice(json_key(c, "mode"), "mode", kModeNames, syn::kModes));
            col.shift = json_double(json_key(c, "shift"), "shift");
            col.log_h = json_double(json_key(c, "log_bandwidth"), "log_bandwidth");
            col.interval_scale = json_double(json_key(c, "interval_scale"), "interval_scale");
            col.cv_coverage = json_double(json_key(c, "cv_coverage"), "cv_coverage");
            JsonbContainer* cve = json_array(json_key(c, "cv_error"), "cv_error", syn::kModes);
            for (int k = 0; k < syn::kModes; ++k)
                col.cv_error[k] = json_double(getIthJsonbValueFromContainer(cve, k), "cv_error");
        }
        JsonbValue* name = json_key(c, "name");
        if (name->type == jbvString) {
            if (name->val.string.len < 1 || name->val.string.len > kNameMax) bad_text("bad column name length");
            memcpy(v->names[j], name->val.string.val, name->val.string.len);
            v->names[j][name->val.string.len] = '\0';
            if (strlen(v->names[j]) != static_cast<size_t>(name->val.string.len)) bad_text("bad column name");
            ++named;
        } else if (name->type != jbvNull) {
            bad_text("name must be a string or null");
        }
    }
    if (named != 0 && named != s.d) bad_text("either every column has a name or none has");
    v->has_names = named == s.d;
    if (s.m < 1 || s.m > (1 << 30)) bad_text("m out of range");
    JsonbContainer* rows = json_array(json_key(root, "sample"), "sample", static_cast<uint32>(s.m));
    v->sample = static_cast<double*>(palloc_extended(static_cast<Size>(s.m) * s.d * sizeof(double), MCXT_ALLOC_HUGE));
    for (int64 i = 0; i < s.m; ++i) {
        JsonbValue* rv = getIthJsonbValueFromContainer(rows, static_cast<uint32>(i));
        JsonbContainer* row = json_array(rv, "each sample row", static_cast<uint32>(s.d));
        for (int j = 0; j < s.d; ++j) v->sample[i * s.d + j] = json_double(getIthJsonbValueFromContainer(row, j), "sample value");
    }
    s.sample = v->sample;
    validate_value(v, ERRCODE_INVALID_TEXT_REPRESENTATION, "input syntax for type kde_synopsis");
    return v;
}

// ---- helpers for the functions -------------------------------------------------------------

void check_size(int64 sample_size, int d, bool names, const char* fn) {
    Size bytes = stored_bytes(d, sample_size, names);
    if (sample_size > static_cast<int64>(MaxAllocSize / 8) || bytes + VARHDRSZ >= MaxAllocSize)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: a sample of " INT64_FORMAT " rows of %d columns would exceed the 1 GB limit of a value",
                               fn, sample_size, d),
                        errhint("Use a smaller sample_size.")));
}

// Finishes a sample into a synopsis value (bandwidths on the engine; the
// only GPU work of the aggregates). sample is palloc'd, m x d.
Datum finish_synopsis(int d, int64 n_rows, int64 m, int64 sample_size, int64 skipped, double* sample, int method,
                      int smoothing, bool has_names, char (*names)[NAMEDATALEN], const char* fn) {
    SynValue* v = new_value(CurrentMemoryContext);
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
                        errmsg("%s: %s of the merged synopsis is out of range for bigint (" INT64_FORMAT " + " INT64_FORMAT
                               ")", fn, what, a, b)));
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

// ---- aggregate state: a reservoir plus the parameters ---------------------------------------

struct SynAgg {
    int32 d;            // 0 until the first row
    int32 method;       // Bandwidth
    int32 smoothing;    // Smoothing
    bool params_set;
    int64 skipped;
    syn::Reservoir res;  // capacity = sample_size, seen = N, size = m
    double* rows;        // res.size x d (room for rows_cap rows)
    int64 rows_cap;
    bool has_names;
    char names[kMaxDim][NAMEDATALEN];
};

constexpr uint8 kStateVersion = 1;

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
    double* out = static_cast<double*>(MemoryContextAllocHuge(mcxt, std::max<Size>(1, static_cast<Size>(target) * st->d * sizeof(double))));
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
    bool first = st->d == 0;
    if (!first && st->d != v->s.d)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: the synopses have %d and %d columns", fn, st->d, v->s.d)));
    if (st->params_set && (st->method != static_cast<int>(v->s.method) || st->smoothing != static_cast<int>(v->s.smoothing)))
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
    merge_names(st, v->has_names, v->names, first, fn);
    st->skipped = add_count(st->skipped, v->s.skipped, fn, "skipped");
    merge_into(st, mcxt, v->sample, v->s.m, v->s.n_rows, v->s.sample_size, fn);
}

Datum state_final(SynAgg* st, const char* fn) {
    if (st == nullptr || st->res.seen == 0) return (Datum)0;
    double* sample = static_cast<double*>(palloc_extended(static_cast<Size>(st->res.size) * st->d * sizeof(double), MCXT_ALLOC_HUGE));
    memcpy(sample, st->rows, sizeof(double) * st->res.size * st->d);
    return finish_synopsis(st->d, st->res.seen, st->res.size, st->res.capacity, st->skipped, sample, st->method,
                           st->smoothing, st->has_names, st->names, fn);
}

// ---- boxes ---------------------------------------------------------------------------------------

// Box bounds from a float8 array: NULL and +-Infinity = unbounded, NaN = error.
// rows = -1: a 1-D array of d values (one box); otherwise a q x d 2-D array.
double* bounds_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, int d, bool upper,
                   bool many, int64& q) {
    ArrayType* a = PG_GETARG_ARRAYTYPE_P(argno);
    if (ARR_ELEMTYPE(a) != FLOAT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("%s: %s must be a float8 array", fn, arg)));
    int ndim = ARR_NDIM(a);
    int total = ArrayGetNItems(ndim, ARR_DIMS(a));
    if (many) {
        if (ndim == 0) {
            q = 0;
        } else if (ndim == 2 && ARR_DIMS(a)[1] == d) {
            q = ARR_DIMS(a)[0];
        } else if (ndim == 2) {
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("%s: %s has %d columns; the synopsis has %d", fn, arg, ARR_DIMS(a)[1], d)));
        } else {
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("%s: %s must be a q x %d two-dimensional array (one box per row)", fn, arg, d)));
        }
    } else {
        if (ndim != 1 || total != d)
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("%s: %s must be a one-dimensional array of %d values (one per column), not %d", fn,
                                   arg, d, total)));
        q = 1;
    }
    double* out = static_cast<double*>(palloc_extended(sizeof(double) * std::max<int64>(1, q * d), MCXT_ALLOC_HUGE));
    Float8Cursor elements(a);
    for (int64 i = 0; i < q * d; ++i) {
        double v;
        if (!elements.next(v)) {
            out[i] = upper ? INFINITY : -INFINITY;
            continue;
        }
        check_float_value(v, fn, arg, true);
        out[i] = v;
    }
    return out;
}

int column_arg(FunctionCallInfo fcinfo, int argno, int d, const char* fn) {
    int32 col = PG_GETARG_INT32(argno);
    if (col < 1 || col > d)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: col must be between 1 and %d, not %d", fn, d, col)));
    return col - 1;
}

// Runs the engine over q boxes; out is palloc'd.
syn::BoxEstimate* run_boxes(const SynValue* v, int64 q, const double* lo, const double* hi, syn::Aggregate agg,
                            int column, const char* fn) {
    syn::BoxEstimate* out = static_cast<syn::BoxEstimate*>(
        palloc_extended(sizeof(syn::BoxEstimate) * std::max<int64>(1, q), MCXT_ALLOC_HUGE));
    syn::BoxBatch batch;
    batch.q = q;
    batch.lo = lo;
    batch.hi = hi;
    batch.agg = agg;
    batch.column = column;
    approx::Status st = run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) {
        return syn::evaluate(v->s, batch, ctx, out);
    });
    check_engine_result(st, fn);
    return out;
}

Datum estimate_datum(FunctionCallInfo fcinfo, const syn::BoxEstimate& e) {
    if (std::isnan(e.estimate)) PG_RETURN_NULL();
    PG_RETURN_FLOAT8(e.estimate);
}

Datum one_box(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    SynValue* v = synopsis_arg(fcinfo, 0);
    int base = agg == syn::Aggregate::Count ? 1 : 2;
    int column = agg == syn::Aggregate::Count ? 0 : column_arg(fcinfo, 1, v->s.d, fn);
    int64 q;
    double* lo = bounds_arg(fcinfo, base, fn, "lo", v->s.d, false, false, q);
    double* hi = bounds_arg(fcinfo, base + 1, fn, "hi", v->s.d, true, false, q);
    syn::BoxEstimate* e = run_boxes(v, 1, lo, hi, agg, column, fn);
    return estimate_datum(fcinfo, e[0]);
}

Datum one_box_ci(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    SynValue* v = synopsis_arg(fcinfo, 0);
    int base = agg == syn::Aggregate::Count ? 1 : 2;
    int column = agg == syn::Aggregate::Count ? 0 : column_arg(fcinfo, 1, v->s.d, fn);
    int64 q;
    double* lo = bounds_arg(fcinfo, base, fn, "lo", v->s.d, false, false, q);
    double* hi = bounds_arg(fcinfo, base + 1, fn, "hi", v->s.d, true, false, q);
    double confidence = PG_GETARG_FLOAT8(base + 2);
    if (!(confidence > 0 && confidence < 1))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: confidence must be between 0 and 1 (exclusive), not %g", fn, confidence)));
    syn::BoxEstimate* e = run_boxes(v, 1, lo, hi, agg, column, fn);
    TupleDesc desc;
    if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s: result type must be approx_estimate", fn)));
    desc = BlessTupleDesc(desc);
    Datum values[3];
    bool nulls[3] = {false, false, false};
    if (std::isnan(e[0].estimate)) {
        nulls[0] = nulls[1] = nulls[2] = true;
    } else {
        double lower, upper;
        syn::interval(v->s, agg, e[0], confidence, lower, upper);
        values[0] = Float8GetDatum(e[0].estimate);
        values[1] = Float8GetDatum(lower);
        values[2] = Float8GetDatum(upper);
    }
    return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

Datum many_boxes(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    SynValue* v = synopsis_arg(fcinfo, 0);
    int base = agg == syn::Aggregate::Count ? 1 : 2;
    int column = agg == syn::Aggregate::Count ? 0 : column_arg(fcinfo, 1, v->s.d, fn);
    int64 q_lo, q_hi;
    double* lo = bounds_arg(fcinfo, base, fn, "lo", v->s.d, false, true, q_lo);
    double* hi = bounds_arg(fcinfo, base + 1, fn, "hi", v->s.d, true, true, q_hi);
    if (q_lo != q_hi)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: lo has " INT64_FORMAT " boxes and hi " INT64_FORMAT, fn, q_lo, q_hi)));
    if (q_lo == 0) PG_RETURN_ARRAYTYPE_P(construct_empty_array(FLOAT8OID));
    syn::BoxEstimate* e = run_boxes(v, q_lo, lo, hi, agg, column, fn);
    Datum* values = static_cast<Datum*>(palloc(sizeof(Datum) * q_lo));
    bool* nulls = static_cast<bool*>(palloc(sizeof(bool) * q_lo));
    for (int64 i = 0; i < q_lo; ++i) {
        nulls[i] = std::isnan(e[i].estimate);
        values[i] = Float8GetDatum(nulls[i] ? 0 : e[i].estimate);
    }
    int dims[1] = {static_cast<int>(q_lo)};
    int lbs[1] = {1};
    PG_RETURN_ARRAYTYPE_P(construct_md_array(values, nulls, 1, dims, lbs, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

// ---- named synopses -------------------------------------------------------------------------------

// Reads the rows of a query straight into a reservoir (DestReceiver), the
// query's columns becoming the dimensions by name.
struct SampleReceiver {
    DestReceiver pub;  // first: the executor sees a DestReceiver*
    const char* fn;
    SynAgg* st;
    MemoryContext mcxt;
    Oid types[kMaxDim];
    double progress_s;
    double last_progress;
    int64 rows_read;
};

double float_of(Datum d, Oid t) {
    switch (t) {
        case FLOAT8OID: return DatumGetFloat8(d);
        case FLOAT4OID: return DatumGetFloat4(d);
        case INT8OID: return static_cast<double>(DatumGetInt64(d));
        case INT4OID: return DatumGetInt32(d);
        case INT2OID: return DatumGetInt16(d);
        default: return DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
    }
}

void sample_startup(DestReceiver* self, int, TupleDesc desc) {
    SampleReceiver* r = reinterpret_cast<SampleReceiver*>(self);
    if (desc->natts < 1 || desc->natts > kMaxDim)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: query must return between 1 and %d columns, not %d", r->fn, kMaxDim, desc->natts)));
    SynAgg* st = r->st;
    for (int j = 0; j < desc->natts; ++j) {
        Form_pg_attribute att = TupleDescAttr(desc, j);
        Oid t = att->atttypid;
        if (t != FLOAT8OID && t != FLOAT4OID && t != INT2OID && t != INT4OID && t != INT8OID && t != NUMERICOID)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: column \"%s\" of query must be float8, float4, int2, int4, int8 or numeric, not %s",
                                   r->fn, NameStr(att->attname), format_type_be(t))));
        r->types[j] = t;
        for (int i = 0; i < j; ++i)
            if (strcmp(st->names[i], NameStr(att->attname)) == 0)
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
                                errmsg("%s: query returns two columns named \"%s\"", r->fn, NameStr(att->attname))));
        strlcpy(st->names[j], NameStr(att->attname), NAMEDATALEN);
    }
    st->has_names = true;
    set_dim(st, desc->natts, st->res.capacity, r->fn);
}

bool sample_slot(TupleTableSlot* slot, DestReceiver* self) {
    SampleReceiver* r = reinterpret_cast<SampleReceiver*>(self);
    SynAgg* st = r->st;
    slot_getsomeattrs(slot, st->d);
    double row[kMaxDim];
    for (int j = 0; j < st->d; ++j) {
        if (slot->tts_isnull[j]) {
            ++st->skipped;
            return true;
        }
        row[j] = float_of(slot->tts_values[j], r->types[j]);
        if (!std::isfinite(row[j]))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" of query contains %s", r->fn, st->names[j],
                                   std::isnan(row[j]) ? "NaN" : "an infinite value")));
    }
    add_sample(st, r->mcxt, row);
    if (r->progress_s > 0 && (++r->rows_read & 4095) == 0) {
        double now = glue_clock_ms();
        if (now - r->last_progress >= r->progress_s * 1000) {
            r->last_progress = now;
            ereport(NOTICE, (errmsg("%s: " INT64_FORMAT " rows read, " INT64_FORMAT " sampled", r->fn, st->res.seen,
                                    st->res.size)));
        }
    }
    return true;
}

void sample_shutdown(DestReceiver*) {}
void sample_destroy(DestReceiver*) {}

double progress_interval_s(void) {
    const char* s = GetConfigOption("approx_gpu.progress_interval", true, false);
    return s ? strtod(s, nullptr) : 0;
}

// The caller's effective search_path, fixed for a stored query: the schemas
// current_schemas(true) reports (implicit pg_catalog included) as a quoted
// list, temporary schemas left out (they belong to one session) and pg_temp
// last, so that nobody's temporary objects come before the owner's.
char* captured_search_path(void) {
    List* path = fetch_search_path(true);
    StringInfoData out;
    initStringInfo(&out);
    ListCell* lc;
    foreach (lc, path) {
        Oid nsp = lfirst_oid(lc);
        if (isAnyTempNamespace(nsp)) continue;
        char* nspname = get_namespace_name(nsp);
        if (nspname != nullptr) appendStringInfo(&out, "%s, ", quote_identifier(nspname));
    }
    appendStringInfoString(&out, "pg_temp");
    list_free(path);
    return out.data;
}

bool role_exists(Oid role) {
    return SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role));
}

// Runs query as `owner` in a security-restricted operation (as REFRESH
// MATERIALIZED VIEW does) with search_path = search_path (the path stored
// with it: the query's names resolve the same whoever runs it) and builds the
// synopsis of its rows.
Datum build_named(const char* query, Oid owner, const char* search_path, int32 sample_size, int method, int smoothing,
                  const char* fn) {
    if (!role_exists(owner))  // never run a query as a dropped role's OID
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the owner of the synopsis no longer exists", fn)));
    SynAgg* st = new_state(CurrentMemoryContext);
    st->method = method;
    st->smoothing = smoothing;
    syn::reservoir_init(st->res, sample_size, random_seed_for_call());
    st->params_set = true;

    SampleReceiver* r = static_cast<SampleReceiver*>(palloc0(sizeof(SampleReceiver)));
    r->pub.receiveSlot = sample_slot;
    r->pub.rStartup = sample_startup;
    r->pub.rShutdown = sample_shutdown;
    r->pub.rDestroy = sample_destroy;
    r->pub.mydest = DestNone;
    r->fn = fn;
    r->st = st;
    r->mcxt = CurrentMemoryContext;
    r->progress_s = progress_interval_s();
    r->last_progress = glue_clock_ms();

    Oid save_userid;
    int save_sec;
    GetUserIdAndSecContext(&save_userid, &save_sec);
    SetUserIdAndSecContext(owner, save_sec | SECURITY_RESTRICTED_OPERATION);
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    double t0 = glue_clock_ms();
    if (SPI_connect() != SPI_OK_CONNECT)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: SPI_connect failed", fn)));
    SPIPlanPtr plan = SPI_prepare(query, 0, nullptr);
    if (plan == nullptr)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("%s: cannot prepare query: %s", fn, SPI_result_code_string(SPI_result))));
    if (!SPI_is_cursor_plan(plan))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: query must be a single query that returns rows (a SELECT)", fn)));
    SPIExecuteOptions options;
    memset(&options, 0, sizeof options);
    options.read_only = true;
    options.dest = &r->pub;
    int rc = SPI_execute_plan_extended(plan, &options);
    if (rc < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: query could not be run: %s", fn, SPI_result_code_string(rc))));
    SPI_finish();
    AtEOXact_GUC(true, nest);
    SetUserIdAndSecContext(save_userid, save_sec);
    double ms_read = glue_clock_ms() - t0;
    if (r->progress_s > 0)
        ereport(NOTICE, (errmsg("%s: " INT64_FORMAT " rows read, " INT64_FORMAT " skipped; computing bandwidths", fn,
                                st->res.seen, st->skipped)));
    if (st->res.seen == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: query returned no rows without NULLs; a synopsis needs at least one", fn)));
    Datum result = state_final(st, fn);
    last_run_stats().ms_read = ms_read;
    return result;
}

Oid synopses_relid(void) {
    Oid nsp = get_namespace_oid("approx_gpu", false);
    Oid relid = get_relname_relid("synopses", nsp);
    if (!OidIsValid(relid))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table approx_gpu.synopses does not exist")));
    return relid;
}

Oid synopses_owner(void) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(synopses_relid()));
    if (!HeapTupleIsValid(tup)) elog(ERROR, "cache lookup failed for approx_gpu.synopses");
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return owner;
}

// Runs one fixed statement on approx_gpu.synopses as the table's owner with
// search_path = pg_catalog, pg_temp (what a SECURITY DEFINER function with a
// fixed search_path does; the caller itself cannot write the table).
// Returns SPI_processed; the first row's columns (if any) go to values/nulls.
int64 as_table_owner(const char* sql, int nargs, Oid* types, Datum* args, const char* arg_nulls, Datum* values,
                     bool* nulls, int ncols, bool read_only = false) {
    Oid save_userid;
    int save_sec;
    GetUserIdAndSecContext(&save_userid, &save_sec);
    Oid owner = synopses_owner();
    SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                            false);
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    int rc = SPI_execute_with_args(sql, nargs, types, args, arg_nulls, read_only, 0);
    if (rc < 0) elog(ERROR, "statement on approx_gpu.synopses failed: %s", SPI_result_code_string(rc));
    int64 processed = static_cast<int64>(SPI_processed);
    if (processed > 0 && SPI_tuptable != nullptr && ncols > 0) {
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        for (int c = 0; c < ncols; ++c) {
            bool isnull;
            Datum d = SPI_getbinval(tup, desc, c + 1, &isnull);
            nulls[c] = isnull;
            if (!isnull) {
                Form_pg_attribute att = TupleDescAttr(desc, c);
                MemoryContext old = MemoryContextSwitchTo(caller);
                values[c] = datumCopy(d, att->attbyval, att->attlen);
                MemoryContextSwitchTo(old);
            }
        }
    }
    SPI_finish();
    AtEOXact_GUC(true, nest);
    SetUserIdAndSecContext(save_userid, save_sec);
    return processed;
}

Oid synopsis_type_oid(void) {
    return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("kde_synopsis"),
                           ObjectIdGetDatum(get_namespace_oid("approx_gpu", false)));
}

void check_name(text* name, const char* fn) {
    int len = VARSIZE_ANY_EXHDR(name);
    if (len < 1 || len > 200)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: name must have between 1 and 200 characters", fn)));
}

Datum info_jsonb(const SynValue* v);

// 0.2.0 added synopses.search_path and the key (owner, name). A database
// whose extension objects are still 0.1.0 (this library, before ALTER
// EXTENSION UPDATE) reads and drops its synopses but builds none: a query
// without a pinned search_path is never run.
bool table_is_current(void) {
    return get_attnum(synopses_relid(), "search_path") != InvalidAttrNumber;
}

void require_current_table(const char* fn) {
    if (!table_is_current())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the extension's objects in this database are older than its library", fn),
                        errhint("Run ALTER EXTENSION approx_gpu UPDATE.")));
}

// DROP ROLE refuses a role that owns synopses: each owner holds SELECT on
// approx_gpu.synopses (adding nothing to PUBLIC's SELECT), a privilege that
// PostgreSQL records in pg_shdepend, so DROP ROLE reports "privileges for
// table approx_gpu.synopses" until the role's last synopsis is dropped (or
// DROP OWNED revokes it: then the rows are orphans, never run nor read).
// Granted with a role's first synopsis (and at a refresh, for rows kept from
// 0.1.0), revoked with its last, under a self-conflicting lock (SHARE UPDATE
// EXCLUSIVE: readers and writers of rows are not blocked) so that concurrent
// creates and drops agree. The table's owner already holds every privilege
// and is left alone.
void owner_grant(Oid owner, bool grant) {
    if (owner == synopses_owner() || !role_exists(owner)) return;
    as_table_owner("LOCK TABLE approx_gpu.synopses IN SHARE UPDATE EXCLUSIVE MODE", 0, nullptr, nullptr, nullptr,
                   nullptr, nullptr, 0);
    Oid types[1] = {OIDOID};
    Datum args[1] = {ObjectIdGetDatum(owner)};
    bool has = as_table_owner("SELECT 1 FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a "
                              "WHERE c.oid OPERATOR(pg_catalog.=) 'approx_gpu.synopses'::pg_catalog.regclass "
                              "AND a.grantee OPERATOR(pg_catalog.=) $1 AND a.privilege_type OPERATOR(pg_catalog.=) 'SELECT'",
                              1, types, args, nullptr, nullptr, nullptr, 0) > 0;
    if (!grant && as_table_owner("SELECT 1 FROM approx_gpu.synopses WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                                 1, types, args, nullptr, nullptr, nullptr, 0) > 0)
        return;  // it still owns synopses
    if (has == grant) return;
    const char* role = quote_identifier(GetUserNameFromId(owner, false));
    as_table_owner(grant ? psprintf("GRANT SELECT ON approx_gpu.synopses TO %s", role)
                         : psprintf("REVOKE SELECT ON approx_gpu.synopses FROM %s", role),
                   0, nullptr, nullptr, nullptr, nullptr, nullptr, 0);
}

// A stored named synopsis.
struct NamedRow {
    Oid owner;
    text* query;
    char* search_path;  // nullptr: unknown (a row stored by 0.1.0)
    bytea* synopsis;    // when asked for
    char* ctid;         // the row version read (refresh updates exactly it)
};

// Finds the synopsis `name` among the rows the caller may see -- its own and
// those of roles whose privileges it has (the table's row-level security
// policy) -- its own first. A row the caller may not see gives exactly the
// error of a missing one. A visible row of a dropped role (only a superuser
// sees those) may only be dropped (drop = true). lock: FOR UPDATE.
NamedRow resolve_named(text* name, const char* fn, bool lock, bool want_synopsis, bool drop) {
    Oid caller = GetUserId();
    Oid types[2] = {TEXTOID, OIDOID};
    Datum args[2] = {PointerGetDatum(name), ObjectIdGetDatum(caller)};
    Datum values[5];
    bool nulls[5];
    const char* sql = psprintf(
        "SELECT owner::pg_catalog.oid, query, %s, %s, ctid::pg_catalog.text FROM approx_gpu.synopses "
        "WHERE name OPERATOR(pg_catalog.=) $1 AND pg_catalog.pg_has_role($2, owner::pg_catalog.oid, 'USAGE') "
        "ORDER BY owner::pg_catalog.oid OPERATOR(pg_catalog.<>) $2 LIMIT 2%s",
        table_is_current() ? "search_path" : "NULL::pg_catalog.text",
        want_synopsis ? "synopsis" : "NULL::approx_gpu.kde_synopsis", lock ? " FOR UPDATE" : "");
    int64 n = as_table_owner(sql, 2, types, args, nullptr, values, nulls, 5, !lock);
    if (n == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("%s: synopsis \"%s\" does not exist", fn, text_to_cstring(name)),
                        errhint("Named synopses are visible to their owner (and roles with the owner's privileges).")));
    NamedRow row;
    row.owner = DatumGetObjectId(values[0]);
    if (row.owner != caller && n > 1)
        ereport(ERROR, (errcode(ERRCODE_AMBIGUOUS_ALIAS),
                        errmsg("%s: synopsis name \"%s\" is ambiguous", fn, text_to_cstring(name)),
                        errdetail("Several roles whose privileges you have own a synopsis of this name, and you own none."),
                        errhint("SET ROLE to the owner of the one you mean.")));
    if (!drop && !role_exists(row.owner))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the owner of synopsis \"%s\" no longer exists", fn, text_to_cstring(name)),
                        errhint("Its rows are never used again; a superuser can remove it with drop_synopsis.")));
    row.query = DatumGetTextPP(values[1]);
    row.search_path = nulls[2] ? nullptr : TextDatumGetCString(values[2]);
    row.synopsis = want_synopsis ? DatumGetByteaPP(values[3]) : nullptr;
    row.ctid = TextDatumGetCString(values[4]);
    return row;
}

// A named synopsis as the caller sees it.
SynValue* named_value(text* name, const char* fn) {
    return stored_value(resolve_named(name, fn, false, true, false).synopsis);
}

int column_by_name(const SynValue* v, const char* name, int len, const char* fn) {
    for (int j = 0; j < v->s.d; ++j)
        if (static_cast<int>(strlen(v->names[j])) == len && strncmp(v->names[j], name, len) == 0) return j;
    StringInfoData cols;
    initStringInfo(&cols);
    for (int j = 0; j < v->s.d; ++j) appendStringInfo(&cols, "%s%s", j ? ", " : "", v->names[j]);
    ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                    errmsg("%s: synopsis has no column \"%.*s\"", fn, len, name),
                    errhint("Its columns are: %s.", cols.data)));
    return -1;
}

double predicate_bound(const JsonbValue* v, bool upper, const char* key, const char* fn) {
    if (v->type == jbvNull) return upper ? INFINITY : -INFINITY;
    if (v->type != jbvNumeric)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: predicate bounds of \"%s\" must be numbers or null", fn, key)));
    double x = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, NumericGetDatum(v->val.numeric)));
    if (std::isnan(x))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: predicate bound of \"%s\" is NaN", fn, key)));
    return x;  // +-Infinity (a bound beyond float8) = unbounded
}

// predicate: {"col": [lo, hi], "col2": [null, hi], "col3": value} -> one box.
void predicate_box(const SynValue* v, Jsonb* pred, double* lo, double* hi, const char* fn) {
    for (int j = 0; j < v->s.d; ++j) lo[j] = -INFINITY, hi[j] = INFINITY;
    if (!JB_ROOT_IS_OBJECT(pred))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: predicate must be a JSON object of column: [lo, hi]", fn)));
    JsonbIterator* it = JsonbIteratorInit(&pred->root);
    JsonbValue k, val;
    JsonbIteratorToken tok;
    while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE) {
        if (tok != WJB_KEY) continue;
        char* key = pnstrdup(k.val.string.val, k.val.string.len);
        int j = column_by_name(v, k.val.string.val, k.val.string.len, fn);
        tok = JsonbIteratorNext(&it, &val, true);
        if (val.type == jbvNumeric) {
            lo[j] = hi[j] = predicate_bound(&val, false, key, fn);
            continue;
        }
        if (val.type != jbvBinary || !JsonContainerIsArray(val.val.binary.data) ||
            JsonContainerSize(val.val.binary.data) != 2)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: predicate of \"%s\" must be [lo, hi] (null = unbounded) or a number", fn, key)));
        lo[j] = predicate_bound(getIthJsonbValueFromContainer(val.val.binary.data, 0), false, key, fn);
        hi[j] = predicate_bound(getIthJsonbValueFromContainer(val.val.binary.data, 1), true, key, fn);
    }
}

Datum named_estimate(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    text* name = PG_GETARG_TEXT_PP(0);
    SynValue* v = named_value(name, fn);
    int column = 0;
    int pred_arg = 1;
    if (agg != syn::Aggregate::Count) {
        text* col = PG_GETARG_TEXT_PP(1);
        column = column_by_name(v, VARDATA_ANY(col), VARSIZE_ANY_EXHDR(col), fn);
        pred_arg = 2;
    }
    double* lo = static_cast<double*>(palloc(sizeof(double) * v->s.d));
    double* hi = static_cast<double*>(palloc(sizeof(double) * v->s.d));
    predicate_box(v, PG_GETARG_JSONB_P(pred_arg), lo, hi, fn);
    syn::BoxEstimate* e = run_boxes(v, 1, lo, hi, agg, column, fn);
    return estimate_datum(fcinfo, e[0]);
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

}  // namespace

// ---- type I/O ------------------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_kde_synopsis_in) {
    SynValue* v = value_from_text(PG_GETARG_CSTRING(0));
    PG_RETURN_BYTEA_P(value_to_bytes(v));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_out) {
    PG_RETURN_CSTRING(value_to_text(synopsis_arg(fcinfo, 0)));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_recv) {
    StringInfo buf = reinterpret_cast<StringInfo>(PG_GETARG_POINTER(0));
    SynValue* v = value_from_bytes(buf->data + buf->cursor, buf->len - buf->cursor, ERRCODE_INVALID_BINARY_REPRESENTATION,
                                   "external binary kde_synopsis");
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
            ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                            errmsg("kde_synopsis_agg: every x must have the same length (%d), got %d", st->d, other->d)));
        bool first = st->d == 0;
        st->d = other->d;
        if (first || st->res.seen == 0)
            merge_names(st, other->has_names, other->names, true, fn);
        else if (other->res.seen > 0)
            merge_names(st, other->has_names, other->names, false, fn);
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
    put_f64s(&w, st->rows, st->res.size * st->d);
    PG_RETURN_BYTEA_P(byte_writer_finish(&w));
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_deserial) {
    MemoryContext mcxt = aggregate_context(fcinfo, "kde synopsis deserialize");
    const char* what = "kde_synopsis_agg state";
    ByteReader r;
    byte_reader_init(&r, PG_GETARG_BYTEA_PP(0), what);
    auto bad = [&]() {
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid %s", what)));
    };
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

APPROX_FUNCTION(approx_gpu_approx_count) { return one_box(fcinfo, syn::Aggregate::Count, "approx_count"); }
APPROX_FUNCTION(approx_gpu_approx_sum) { return one_box(fcinfo, syn::Aggregate::Sum, "approx_sum"); }
APPROX_FUNCTION(approx_gpu_approx_avg) { return one_box(fcinfo, syn::Aggregate::Avg, "approx_avg"); }
APPROX_FUNCTION(approx_gpu_approx_count_ci) { return one_box_ci(fcinfo, syn::Aggregate::Count, "approx_count_ci"); }
APPROX_FUNCTION(approx_gpu_approx_sum_ci) { return one_box_ci(fcinfo, syn::Aggregate::Sum, "approx_sum_ci"); }
APPROX_FUNCTION(approx_gpu_approx_avg_ci) { return one_box_ci(fcinfo, syn::Aggregate::Avg, "approx_avg_ci"); }
APPROX_FUNCTION(approx_gpu_approx_count_many) { return many_boxes(fcinfo, syn::Aggregate::Count, "approx_count_many"); }
APPROX_FUNCTION(approx_gpu_approx_sum_many) { return many_boxes(fcinfo, syn::Aggregate::Sum, "approx_sum_many"); }
APPROX_FUNCTION(approx_gpu_approx_avg_many) { return many_boxes(fcinfo, syn::Aggregate::Avg, "approx_avg_many"); }

APPROX_FUNCTION(approx_gpu_kde_density) {
    const char* fn = "kde_density";
    SynValue* v = synopsis_arg(fcinfo, 0);
    FloatArray x = float_array_arg(fcinfo, 1, fn, "x", false);
    if (x.skipped > 0) PG_RETURN_NULL();
    if (x.n != v->s.d)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: x has " INT64_FORMAT " values; the synopsis has %d columns", fn, x.n, v->s.d)));
    double f = 0;
    approx::Status st = run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) {
        return syn::density(v->s, x.data, ctx, f);
    });
    check_engine_result(st, fn);
    PG_RETURN_FLOAT8(f);
}

APPROX_FUNCTION(approx_gpu_kde_synopsis_info) { return info_jsonb(synopsis_arg(fcinfo, 0)); }

// ---- named synopses ---------------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_create_synopsis) {
    const char* fn = "create_synopsis";
    for (int a = 0; a < 5; ++a)
        if (PG_ARGISNULL(a))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: arguments must not be NULL", fn)));
    text* name = PG_GETARG_TEXT_PP(0);
    check_name(name, fn);
    char* query = text_to_cstring(PG_GETARG_TEXT_PP(1));
    int32 k = sample_size_arg(fcinfo, 2, fn);
    int method = bandwidth_arg(fcinfo, 3, fn);
    int smoothing = smoothing_arg(fcinfo, 4, fn);
    require_current_table(fn);
    Oid owner = GetUserId();
    // Names are per owner: only the caller's own rows can conflict.
    Oid types[5] = {TEXTOID, OIDOID, TEXTOID, InvalidOid, TEXTOID};
    Datum args[5] = {PointerGetDatum(name), ObjectIdGetDatum(owner), 0, 0, 0};
    auto taken = [&]() {
        ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                        errmsg("%s: a synopsis named \"%s\" already exists", fn, text_to_cstring(name))));
    };
    // Refuse a taken name before the (long) build ...
    if (as_table_owner("SELECT 1 FROM approx_gpu.synopses WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 "
                       "AND name OPERATOR(pg_catalog.=) $1",
                       2, types, args, nullptr, nullptr, nullptr, 0, true) > 0)
        taken();
    // ... and run the query, now and on every refresh, with the caller's
    // effective search_path of this moment.
    char* path = captured_search_path();
    Datum syn_datum = build_named(query, owner, path, k, method, smoothing, fn);
    types[3] = synopsis_type_oid();
    args[2] = PointerGetDatum(PG_GETARG_TEXT_PP(1));
    args[3] = syn_datum;
    args[4] = CStringGetTextDatum(path);
    // ... and again at the insert: a concurrent create of the same name (or
    // one run by the query itself) commits first; the key then holds.
    if (as_table_owner("INSERT INTO approx_gpu.synopses (name, owner, query, synopsis, created, search_path) "
                       "VALUES ($1, $2::pg_catalog.regrole, $3, $4, pg_catalog.now(), $5) "
                       "ON CONFLICT (owner, name) DO NOTHING",
                       5, types, args, nullptr, nullptr, nullptr, 0) == 0)
        taken();
    owner_grant(owner, true);
    return info_jsonb(stored_value(DatumGetByteaPP(syn_datum)));
}

APPROX_FUNCTION(approx_gpu_refresh_synopsis) {
    const char* fn = "refresh_synopsis";
    text* name = PG_GETARG_TEXT_PP(0);
    require_current_table(fn);
    NamedRow row = resolve_named(name, fn, true, true, false);
    char* path = row.search_path;
    if (path == nullptr) {
        // Stored by 0.1.0, which kept no search_path: guessing one could
        // resolve the query's names to other roles' objects. The owner itself
        // (nobody else) refreshes it once with its own effective path.
        if (GetUserId() != row.owner)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("%s: synopsis \"%s\" was stored without its search_path; only its owner can refresh it",
                                   fn, text_to_cstring(name)),
                            errhint("Refresh it once as its owner (SET ROLE); the owner's search_path is then kept.")));
        path = captured_search_path();
    }
    // The old value's settings drive the rebuild.
    SynValue* old = stored_value(row.synopsis);
    int64 k = old->s.sample_size;
    Datum syn_datum = build_named(text_to_cstring(row.query), row.owner, path,
                                  static_cast<int32>(std::min<int64>(k, INT32_MAX)), static_cast<int>(old->s.method),
                                  static_cast<int>(old->s.smoothing), fn);
    // The stored query ran user SQL: it may have dropped or re-created this
    // synopsis. Update exactly the row version read before it, or nothing.
    Oid types[5] = {synopsis_type_oid(), TEXTOID, OIDOID, TEXTOID, TEXTOID};
    Datum args[5] = {syn_datum, PointerGetDatum(name), ObjectIdGetDatum(row.owner), CStringGetTextDatum(path),
                     CStringGetTextDatum(row.ctid)};
    int64 updated = as_table_owner(
        "UPDATE approx_gpu.synopses SET synopsis = $1, created = pg_catalog.now(), search_path = $4 "
        "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $3 AND name OPERATOR(pg_catalog.=) $2 "
        "AND ctid OPERATOR(pg_catalog.=) $5::pg_catalog.tid",
        5, types, args, nullptr, nullptr, nullptr, 0);
    if (updated != 1)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: synopsis \"%s\" was dropped or replaced while its query ran", fn,
                               text_to_cstring(name))));
    owner_grant(row.owner, true);  // a row kept from 0.1.0 gets it here
    return info_jsonb(stored_value(DatumGetByteaPP(syn_datum)));
}

APPROX_FUNCTION(approx_gpu_drop_synopsis) {
    const char* fn = "drop_synopsis";
    text* name = PG_GETARG_TEXT_PP(0);
    NamedRow row = resolve_named(name, fn, true, false, true);
    Oid types[2] = {TEXTOID, OIDOID};
    Datum args[2] = {PointerGetDatum(name), ObjectIdGetDatum(row.owner)};
    as_table_owner("DELETE FROM approx_gpu.synopses WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 "
                   "AND name OPERATOR(pg_catalog.=) $1",
                   2, types, args, nullptr, nullptr, nullptr, 0);
    owner_grant(row.owner, false);
    PG_RETURN_VOID();
}

APPROX_FUNCTION(approx_gpu_approx_count_named) { return named_estimate(fcinfo, syn::Aggregate::Count, "approx_count"); }
APPROX_FUNCTION(approx_gpu_approx_sum_named) { return named_estimate(fcinfo, syn::Aggregate::Sum, "approx_sum"); }
APPROX_FUNCTION(approx_gpu_approx_avg_named) { return named_estimate(fcinfo, syn::Aggregate::Avg, "approx_avg"); }
