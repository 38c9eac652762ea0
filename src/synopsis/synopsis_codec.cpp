// SQL values <-> the numbers and dictionary codes of a table synopsis
// (synopsis_codec.h): every conversion in one place, both directions.
#include "synopsis/synopsis.h"

extern "C" {
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
}

#include <cmath>

namespace synopsis_glue {

// ---- which types, as what -------------------------------------------------------------

bool column_encoding(Oid type, ValueEncoding* out) {
    switch (type) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case FLOAT4OID:
        case FLOAT8OID:
        case NUMERICOID: *out = ValueEncoding::Number; return true;
        case DATEOID: *out = ValueEncoding::Date; return true;
        case TIMESTAMPOID: *out = ValueEncoding::Timestamp; return true;
        case TIMESTAMPTZOID: *out = ValueEncoding::TimestampTz; return true;
        case BOOLOID:
        case TEXTOID:
        case VARCHAROID:
        case BPCHAROID: *out = ValueEncoding::Dictionary; return true;
        default:
            if (type_is_enum(type)) {
                *out = ValueEncoding::Dictionary;
                return true;
            }
            return false;
    }
}

bool column_may_be_non_finite(Oid type) {
    switch (type) {
        case FLOAT4OID:
        case FLOAT8OID:
        case NUMERICOID:
        case DATEOID:
        case TIMESTAMPOID:
        case TIMESTAMPTZOID: return true;
        default: return false;
    }
}

const char* dictionary_equality_problem(Oid type, int32 typmod, Oid collation) {
    // texteq / bpchareq compare bytes only under a deterministic collation
    // (varlena.c, texteq; PostgreSQL 12's nondeterministic collations)
    if (OidIsValid(collation) && !get_collation_isdeterministic(collation)) return "nondeterministic collation";
    // bpchareq ignores trailing blanks (varchar.c, bpchareq); char(n) pads
    // every value to n characters, so there the strings are equal too
    if (type == BPCHAROID && typmod < 0) return "char without a length (trailing blanks do not count)";
    return nullptr;
}

// ---- build: values -> numbers and codes ------------------------------------------------

namespace {

[[noreturn]] void not_finite(const char* fn, const char* column, const char* table, bool nan) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("%s: column \"%s\" of table %s contains %s", fn, column, table, nan ? "NaN" : "an infinite value"),
             errhint("A synopsis needs finite values; NULL is fine.")));
    pg_unreachable();
}

int cmp_cstring(const void* a, const void* b) {
    return strcmp(*static_cast<char* const*>(a), *static_cast<char* const*>(b));
}

}  // namespace

double column_number(Datum value, Oid type, const char* fn, const char* column, const char* table) {
    double x = 0;
    switch (type) {
        case INT2OID: return DatumGetInt16(value);
        case INT4OID: return DatumGetInt32(value);
        case INT8OID: return static_cast<double>(DatumGetInt64(value));  // rounded beyond 2^53
        case FLOAT4OID: x = DatumGetFloat4(value); break;
        case FLOAT8OID: x = DatumGetFloat8(value); break;
        case NUMERICOID: {
            Numeric n = DatumGetNumeric(value);
            if (numeric_is_nan(n)) not_finite(fn, column, table, true);
            if (numeric_is_inf(n)) not_finite(fn, column, table, false);
            // numeric_float8 raises an ERROR for a value beyond float8's range
            x = DatumGetFloat8(DirectFunctionCall1(numeric_float8, value));
            break;
        }
        case DATEOID: {
            DateADT v = DatumGetDateADT(value);
            if (DATE_NOT_FINITE(v)) not_finite(fn, column, table, false);
            return static_cast<double>(v);
        }
        default: {  // timestamp, timestamptz
            Timestamp v = DatumGetTimestamp(value);
            if (TIMESTAMP_NOT_FINITE(v)) not_finite(fn, column, table, false);
            return static_cast<double>(v);
        }
    }
    if (!std::isfinite(x)) not_finite(fn, column, table, std::isnan(x));
    return x;
}

bool is_measure_type(Oid type) {
    return type == INT2OID || type == INT4OID || type == INT8OID || type == FLOAT4OID || type == FLOAT8OID ||
           type == NUMERICOID;
}

char* dictionary_string(Datum value, Oid out_fn) { return OidOutputFunctionCall(out_fn, value); }

char** dictionary_encode(char* const* strings, int64 m, double* sample, int d, int col, int32* size) {
    char** sorted = static_cast<char**>(palloc(sizeof(char*) * std::max<int64>(1, m)));
    int64 n = 0;
    for (int64 i = 0; i < m; ++i)
        if (strings[i]) sorted[n++] = strings[i];
    qsort(sorted, n, sizeof(char*), cmp_cstring);
    int64 k = 0;
    for (int64 i = 0; i < n; ++i)
        if (k == 0 || strcmp(sorted[k - 1], sorted[i]) != 0) sorted[k++] = sorted[i];
    for (int64 i = 0; i < m; ++i)
        sample[i * d + col] = strings[i] ? dictionary_code(sorted, static_cast<int>(k), strings[i]) : NAN;
    *size = static_cast<int32>(k);
    return sorted;
}

int dictionary_code(const char* const* dict, int size, const char* value) {
    int lo = 0, hi = size - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(dict[mid], value);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

}  // namespace synopsis_glue

using namespace synopsis_glue;

// ---- query: comparison values -> the column's numbers or codes ---------------------------

namespace {

constexpr const char* kUnsupportedValue = "comparison value of an unsupported type";

// A number-type comparison value as float8 (an out-of-range numeric is
// -/+infinity, which compares as the value would).
const char* number_value(Datum value, Oid type, double* out) {
    double v;
    switch (type) {
        case INT2OID: v = DatumGetInt16(value); break;
        case INT4OID: v = DatumGetInt32(value); break;
        case INT8OID: v = static_cast<double>(DatumGetInt64(value)); break;
        case FLOAT4OID: v = DatumGetFloat4(value); break;
        case FLOAT8OID: v = DatumGetFloat8(value); break;
        case NUMERICOID: v = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, value)); break;
        default: return kUnsupportedValue;
    }
    if (std::isnan(v)) return "NaN comparison value";
    *out = v;
    return nullptr;
}

}  // namespace

// A numeric column's value for the default census (synopsis_codec.h):
// number_value's conversion, anything not finite left out.
bool synopsis_glue::measure_number(Datum value, Oid type, double* out) {
    double x;
    if (number_value(value, type, &x) != nullptr || !std::isfinite(x)) return false;
    *out = x;
    return true;
}

namespace {

// A date or timestamp comparison value in days (a Date column) or
// microseconds (a Timestamp column): a date is its midnight, a timestamp a
// fraction of its day.
const char* date_or_timestamp_value(Datum value, Oid type, bool days, double* out) {
    if (type == DATEOID) {
        DateADT v = DatumGetDateADT(value);
        *out = DATE_IS_NOBEGIN(v) ? -INFINITY
               : DATE_IS_NOEND(v) ? INFINITY
                                  : (days ? v : static_cast<double>(v) * USECS_PER_DAY);
        return nullptr;
    }
    if (type == TIMESTAMPOID) {
        Timestamp v = DatumGetTimestamp(value);
        *out = TIMESTAMP_IS_NOBEGIN(v) ? -INFINITY
               : TIMESTAMP_IS_NOEND(v) ? INFINITY
                                       : (days ? static_cast<double>(v) / USECS_PER_DAY : static_cast<double>(v));
        return nullptr;
    }
    return kUnsupportedValue;
}

}  // namespace

const char* table_synopsis_encode(const TableSynopsis* ts, int col, Datum value, Oid type, double* out) {
    if (ts->encoding[col] == ValueEncoding::Dictionary) {
        Oid out_fn;
        bool varlena;
        getTypeOutputInfo(type, &out_fn, &varlena);
        *out = table_synopsis_code(ts, col, dictionary_string(value, out_fn));
        return nullptr;
    }
    return encoding_number(ts->encoding[col], value, type, out);
}

const char* encoding_number(ValueEncoding enc, Datum value, Oid type, double* out) {
    switch (enc) {
        case ValueEncoding::Dictionary: break;
        case ValueEncoding::Number: return number_value(value, type, out);
        case ValueEncoding::Date: return date_or_timestamp_value(value, type, true, out);
        case ValueEncoding::Timestamp: return date_or_timestamp_value(value, type, false, out);
        case ValueEncoding::TimestampTz:
            if (type == TIMESTAMPTZOID) {
                TimestampTz v = DatumGetTimestampTz(value);
                *out = TIMESTAMP_IS_NOBEGIN(v) ? -INFINITY : TIMESTAMP_IS_NOEND(v) ? INFINITY : static_cast<double>(v);
                return nullptr;
            }
            break;
    }
    return kUnsupportedValue;
}

int table_synopsis_code(const TableSynopsis* ts, int col, const char* value) {
    return dictionary_code(ts->dict[col], ts->dict_size[col], value);
}

// Integers above 2^53 are not all float8s: neighbours share a number.
constexpr double kExactIntegers = 9007199254740992.0;  // 2^53

static bool integer_encoded(Oid column_type) {
    return column_type == INT8OID || column_type == NUMERICOID || column_type == TIMESTAMPOID ||
           column_type == TIMESTAMPTZOID;
}

const char* table_synopsis_inexact_value(const TableSynopsis* ts, int col, Datum value, Oid value_type, double v,
                                         bool equality) {
    Oid ct = ts->atttype[col];
    if (ts->encoding[col] == ValueEncoding::Dictionary || std::isinf(v)) return nullptr;
    // Against a float column SQL itself compares in float8 (the value is
    // cast), so the rounding is SQL's own.
    if (ct == FLOAT4OID || ct == FLOAT8OID || value_type == FLOAT4OID || value_type == FLOAT8OID) return nullptr;
    if (integer_encoded(ct) && std::fabs(v) >= kExactIntegers)
        return psprintf("comparison value beyond 2^53 on %s column (float8 would round it)", format_type_be(ct));
    if (value_type == NUMERICOID) {  // exact when float8 keeps its digits (float8_numeric gives 15)
        Datum back = DirectFunctionCall1(float8_numeric, Float8GetDatum(v));
        if (!DatumGetBool(DirectFunctionCall2(numeric_eq, value, back)))
            return "numeric comparison value with more than 15 significant digits";
    }
    if (ct == NUMERICOID && equality) return "equality on a numeric column (its values are kept as float8)";
    return nullptr;
}

const char* table_synopsis_inexact_key(const TableSynopsis* ts, int col, double v) {
    Oid ct = ts->atttype[col];
    if (std::isnan(v) || ts->encoding[col] == ValueEncoding::Dictionary) return nullptr;
    if (ct == NUMERICOID) return "GROUP BY a numeric column (its values are kept as float8)";
    if (integer_encoded(ct) && !(std::fabs(v) < kExactIntegers))
        return psprintf("GROUP BY key beyond 2^53 on %s column (float8 rounded it)", format_type_be(ct));
    return nullptr;
}

// ---- back to SQL ------------------------------------------------------------------------

// A key of an integer type: the callers refused keys beyond 2^53
// (table_synopsis_inexact_key), so a value out of range is a broken sample,
// never an out-of-range cast.
static int64 integer_key(double v, double lo, double hi) {
    if (!(v >= lo && v <= hi))
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("table_synopsis_datum: key %g out of range", v)));
    return static_cast<int64>(v);
}

Datum table_synopsis_datum(const TableSynopsis* ts, int col, double value, bool* isnull) {
    *isnull = std::isnan(value);
    if (*isnull) return (Datum)0;
    Oid type = ts->atttype[col];
    switch (ts->encoding[col]) {
        case ValueEncoding::Dictionary: {
            int code = static_cast<int>(integer_key(value, 0, ts->dict_size[col] - 1));
            Oid input, ioparam;
            getTypeInputInfo(type, &input, &ioparam);
            return OidInputFunctionCall(input, const_cast<char*>(ts->dict[col][code]), ioparam, -1);
        }
        case ValueEncoding::Date: return DateADTGetDatum(static_cast<DateADT>(integer_key(value, PG_INT32_MIN, PG_INT32_MAX)));
        case ValueEncoding::Timestamp:
        case ValueEncoding::TimestampTz: return Int64GetDatum(integer_key(value, -kExactIntegers, kExactIntegers));
        case ValueEncoding::Number: break;
    }
    switch (type) {
        case INT2OID: return Int16GetDatum(static_cast<int16>(integer_key(value, PG_INT16_MIN, PG_INT16_MAX)));
        case INT4OID: return Int32GetDatum(static_cast<int32>(integer_key(value, PG_INT32_MIN, PG_INT32_MAX)));
        case INT8OID: return Int64GetDatum(integer_key(value, -kExactIntegers, kExactIntegers));
        case FLOAT4OID: return Float4GetDatum(static_cast<float4>(value));
        case NUMERICOID: return DirectFunctionCall1(float8_numeric, Float8GetDatum(value));  // 15 significant digits
        default: return Float8GetDatum(value);
    }
}
