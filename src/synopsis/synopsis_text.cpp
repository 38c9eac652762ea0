// The text form of kde_synopsis: JSON, written with the shortest exact
// decimal of every double and read back through jsonb (one decoder per
// format version, checked by validate_value like the binary form).
#include "synopsis/synopsis.h"

extern "C" {
#include "common/shortest_dec.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
}

#include <cmath>

namespace synopsis_glue {

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
                     "{\"version\": %d, \"N\": " INT64_FORMAT ", \"m\": " INT64_FORMAT
                     ", \"d\": %d, "
                     "\"sample_size\": " INT64_FORMAT ", \"skipped\": " INT64_FORMAT
                     ", \"bandwidth\": \"%s\", \"smoothing\": \"%s\", \"joint_cv_error\": [",
                     kValueVersion, s.n_rows, s.m, s.d, s.sample_size, s.skipped, syn::bandwidth_name(s.method),
                     syn::smoothing_name(s.smoothing));
    append_double(&out, s.joint_cv[0]);
    appendStringInfoString(&out, ", ");
    append_double(&out, s.joint_cv[1]);
    appendStringInfoString(&out, "], \"strata\": [");
    for (int g = 0; g < s.n_strata; ++g)
        appendStringInfo(&out, "%s[" INT64_FORMAT ", " INT64_FORMAT ", " INT64_FORMAT "]", g ? ", " : "",
                         s.strata[g].n_rows, s.strata[g].begin, s.strata[g].end);
    appendStringInfoString(&out, "], \"columns\": [");
    for (int j = 0; j < s.d; ++j) {
        const syn::Column& c = s.cols[j];
        appendStringInfoString(&out, j ? ", {\"name\": " : "{\"name\": ");
        if (v->has_names)
            escape_json(&out, v->names[j]);
        else
            appendStringInfoString(&out, "null");
        const double fields[] = {c.mean,       c.sd,   c.min,   c.max,   c.density_h,
                                 c.box_h,      c.step, c.shift, c.log_h, c.interval_scale,
                                 c.cv_coverage};
        const char* keys[] = {"mean",          "sd",   "min",   "max",           "density_bandwidth",
                              "box_bandwidth", "step", "shift", "log_bandwidth", "interval_scale",
                              "cv_coverage"};
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
        appendStringInfo(&out,
                         "], \"categorical\": %s, \"null_count\": " INT64_FORMAT
                         ", \"encoding\": \"%s\", \"dictionary\": ",
                         c.categorical ? "true" : "false", c.null_count, kEncodingNames[v->encoding[j]]);
        if (v->encoding[j] != static_cast<uint8>(ValueEncoding::Dictionary)) {
            appendStringInfoString(&out, "null}");
            continue;
        }
        appendStringInfoChar(&out, '[');
        for (int k = 0; k < v->dict_size[j]; ++k) {
            if (k) appendStringInfoString(&out, ", ");
            escape_json(&out, v->dict[j][k]);
        }
        appendStringInfoString(&out, "]}");
    }
    appendStringInfoString(&out, "], \"sample\": [");
    for (int64 i = 0; i < s.m; ++i) {
        appendStringInfoString(&out, i ? ", [" : "[");
        for (int j = 0; j < s.d; ++j) {
            if (j) appendStringInfoString(&out, ", ");
            double x = v->sample[i * s.d + j];
            if (std::isnan(x))
                appendStringInfoString(&out, "null");  // NULL
            else
                append_double(&out, x);
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
    if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data) || JsonContainerIsScalar(v->val.binary.data))
        bad_text(psprintf("%s must be an array", what));
    if (JsonContainerSize(v->val.binary.data) != size) bad_text(psprintf("%s must have %u elements", what, size));
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
    if (version < syn::kFormatVersionMin || version > kValueVersion) bad_text("unsupported version");
    if (JsonContainerSize(root) != (version == 1 ? 10u : version == 2 ? 11u : 12u)) bad_text("unexpected keys");
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
    s.smoothing =
        static_cast<syn::Smoothing>(json_choice(json_key(root, "smoothing"), "smoothing", kSmoothingNames, 3));
    if (version >= 2) {
        JsonbContainer* jcv = json_array(json_key(root, "joint_cv_error"), "joint_cv_error", 2);
        for (int k = 0; k < 2; ++k)
            s.joint_cv[k] = json_double(getIthJsonbValueFromContainer(jcv, k), "joint_cv_error");
    }
    if (version >= 3) {
        JsonbValue* jst = json_key(root, "strata");
        if (jst->type != jbvBinary || !JsonContainerIsArray(jst->val.binary.data) ||
            JsonContainerIsScalar(jst->val.binary.data))
            bad_text("strata must be an array");
        uint32 n = JsonContainerSize(jst->val.binary.data);
        if (n > (1u << 30)) bad_text("too many strata");
        s.n_strata = static_cast<int>(n);
        if (n > 0) {
            v->strata = static_cast<syn::Stratum*>(palloc(sizeof(syn::Stratum) * n));
            for (uint32 g = 0; g < n; ++g) {
                JsonbContainer* e = json_array(getIthJsonbValueFromContainer(jst->val.binary.data, g), "each stratum",
                                               3);
                v->strata[g].n_rows = json_int(getIthJsonbValueFromContainer(e, 0), "stratum rows");
                v->strata[g].begin = json_int(getIthJsonbValueFromContainer(e, 1), "stratum begin");
                v->strata[g].end = json_int(getIthJsonbValueFromContainer(e, 2), "stratum end");
            }
            s.strata = v->strata;
        }
    }
    JsonbContainer* cols = json_array(json_key(root, "columns"), "columns", static_cast<uint32>(s.d));
    int named = 0;
    for (int j = 0; j < s.d; ++j) {
        JsonbValue* cv = getIthJsonbValueFromContainer(cols, j);
        if (cv->type != jbvBinary || !JsonContainerIsObject(cv->val.binary.data) ||
            JsonContainerSize(cv->val.binary.data) != (version == 1   ? 9u
                                                       : version == 2 ? 15u
                                                                      : 19u))
            bad_text(version == 1   ? "each column must be an object with 9 keys"
                     : version == 2 ? "each column must be an object with 15 keys"
                                    : "each column must be an object with 19 keys");
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
        if (version >= 3) {
            col.categorical = json_bool(json_key(c, "categorical"), "categorical");
            col.null_count = json_int(json_key(c, "null_count"), "null_count");
            v->encoding[j] = static_cast<uint8>(json_choice(json_key(c, "encoding"), "encoding", kEncodingNames, 5));
            JsonbValue* dv = json_key(c, "dictionary");
            if (dv->type != jbvNull) {
                if (dv->type != jbvBinary || !JsonContainerIsArray(dv->val.binary.data) ||
                    JsonContainerIsScalar(dv->val.binary.data))
                    bad_text("dictionary must be an array of strings or null");
                uint32 n = JsonContainerSize(dv->val.binary.data);
                if (n > (1u << 30)) bad_text("dictionary too large");
                v->dict_size[j] = static_cast<int32>(n);
                v->dict[j] = static_cast<char**>(palloc(sizeof(char*) * std::max<uint32>(1, n)));
                for (uint32 k = 0; k < n; ++k) {
                    JsonbValue* e = getIthJsonbValueFromContainer(dv->val.binary.data, k);
                    if (e->type != jbvString) bad_text("dictionary values must be strings");
                    v->dict[j][k] = pnstrdup(e->val.string.val, e->val.string.len);
                    if (strlen(v->dict[j][k]) != static_cast<size_t>(e->val.string.len))
                        bad_text("dictionary values must not contain NUL");
                }
            } else if (v->encoding[j] == static_cast<uint8>(ValueEncoding::Dictionary)) {
                bad_text("a dictionary column needs its dictionary");
            }
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
        for (int j = 0; j < s.d; ++j) {
            JsonbValue* x = getIthJsonbValueFromContainer(row, j);
            v->sample[i * s.d + j] = version >= 3 && x->type == jbvNull ? NAN : json_double(x, "sample value");
        }
    }
    s.sample = v->sample;
    validate_value(v, ERRCODE_INVALID_TEXT_REPRESENTATION, "input syntax for type kde_synopsis");
    return v;
}

}  // namespace synopsis_glue
