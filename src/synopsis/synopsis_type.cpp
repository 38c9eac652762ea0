// kde_synopsis: the type's I/O functions, kde_synopsis_info, the argument
// helpers, and building a value from a sample (the stored form is in
// synopsis_value.cpp, the JSON text form in synopsis_text.cpp).
#include "synopsis/synopsis.h"
#include "runtime/arguments.h"
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
