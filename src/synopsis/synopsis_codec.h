// The one mapping between SQL values and the numbers of a table synopsis'
// sample (NULL = NaN): which column types a synopsis accepts and as what
// ValueEncoding; at build, a value -> its number (checked finite) or its
// dictionary string, and the sampled strings -> the dictionary and codes; at
// query, a comparison value of any comparable type -> the column's number or
// code; and back, a number or code -> a Datum of the column's type (group
// keys out of the CustomScan). The build (synopsis_build.cpp), the box path
// (aqp/box/boxes.cpp) and the cache's callers use these; nothing else
// converts. test/sql/synopsis_codec.sql checks the round trip of every type.
//
// Numbers are float8: int8, timestamp and timestamptz values beyond 2^53 share
// a number with their neighbours, numeric values beyond 15 significant
// digits too. Where that would make a key or an equality inexact the query
// side says so (table_synopsis_inexact_value / _key) and the node falls back.
#pragma once

#include "runtime/runtime.h"

// How a column's SQL values become the doubles of the sample (NULL = NaN).
// Stored in synopsis values: the numbers never change.
enum class ValueEncoding : uint8 {
    Number = 0,       // int2, int4, int8, float4, float8, numeric: the value as float8
    Date = 1,         // date: days since 2000-01-01 (DateADT as float8)
    Timestamp = 2,    // timestamp: microseconds since 2000-01-01 00:00 (Timestamp as float8)
    TimestampTz = 3,  // timestamptz: microseconds since 2000-01-01 00:00 UTC
    Dictionary = 4,   // bool, text, varchar, bpchar, enum: code = index into the column's dictionary
};

struct TableSynopsis;  // synopsis_table.h

namespace synopsis_glue {

// ---- which types, as what -------------------------------------------------------------

// The encoding of a synopsis column of this type; false when a table synopsis
// does not accept the type.
bool column_encoding(Oid type, ValueEncoding* out);

// Whether values of an accepted column type can be NaN or infinite (float4,
// float8, numeric, date, timestamp, timestamptz), which the build rejects.
bool column_may_be_non_finite(Oid type);

// nullptr when equality of a dictionary column of this type (typmod) under
// this collation is the dictionary's, i.e. equality of the output strings;
// else why not (a nondeterministic collation; bpchar without a length, whose
// trailing blanks do not count). WHERE and GROUP BY both ask it.
const char* dictionary_equality_problem(Oid type, int32 typmod, Oid collation);

// ---- build: values -> numbers and codes ------------------------------------------------

// The number of a non-NULL value of a non-dictionary column of this type. NaN
// or an infinity is ERROR 22023 naming fn, the column and the table.
double column_number(Datum value, Oid type, const char* fn, const char* column, const char* table);

// A numeric column's value (int2, int4, int8, float4, float8, numeric) as
// float8 for the default census' choice of rows, which reads columns the
// synopsis does not hold: false (no ERROR) for NaN, an infinity or a numeric
// beyond float8's range, and for any other type.
bool measure_number(Datum value, Oid type, double* out);
bool is_measure_type(Oid type);

// The string a dictionary column keeps for a value: its type's output
// (out_fn from getTypeOutputInfo).
char* dictionary_string(Datum value, Oid out_fn);

// A column's dictionary from the strings of the m sampled rows (nullptr:
// NULL): the distinct strings sorted by strcmp (code k = the k-th), *size of
// them. Each row's code (NaN for NULL) goes to sample[i * d + col].
char** dictionary_encode(char* const* strings, int64 m, double* sample, int d, int col, int32* size);

// The code of value in a dictionary of size strings sorted by strcmp, -1
// when absent.
int dictionary_code(const char* const* dict, int size, const char* value);

}  // namespace synopsis_glue

// ---- query: comparison values -> the column's numbers or codes ---------------------------

// A comparison value of type `type` in column col's encoding: a number (an
// infinite date or timestamp is -/+infinity), or for a dictionary column the
// code of the value's output string, -1 when no sample row holds it. nullptr
// when it has one, else why not (the caller falls back to the exact plan).
const char* table_synopsis_encode(const TableSynopsis* ts, int col, Datum value, Oid type, double* out);

// The code of a value's output string in column col's dictionary, -1 when
// absent (no sample row holds it).
int table_synopsis_code(const TableSynopsis* ts, int col, const char* value);

// A comparison value in a non-dictionary encoding (as table_synopsis_encode).
const char* encoding_number(ValueEncoding enc, Datum value, Oid type, double* out);

// nullptr when comparing column col with value v (encoded, of SQL type
// value_type) decides as SQL does; else why not: v beyond 2^53 on an int8 or
// timestamp(tz) column, a numeric v that float8 rounds (more than 15
// significant digits) on a non-float column, any equality on a numeric
// column (its rows were rounded to float8 at build).
const char* table_synopsis_inexact_value(const TableSynopsis* ts, int col, Datum value, Oid value_type, double v,
                                         bool equality);

// nullptr when a group key v of column col comes back as the rows' value;
// else why not (numeric keys are rounded, int8 / timestamp beyond 2^53).
const char* table_synopsis_inexact_key(const TableSynopsis* ts, int col, double v);

// ---- back to SQL ------------------------------------------------------------------------

// A sample value of column col (a group key) as a Datum of the column's
// type, allocated in the current memory context; *isnull for NaN.
Datum table_synopsis_datum(const TableSynopsis* ts, int col, double value, bool* isnull);
