// Argument readers and float8 array results (arguments.h).
#include "runtime/arguments.h"

#include <cmath>

extern "C" {
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/expandeddatum.h"
}

void check_float_value(double v, const char* fn, const char* arg, bool allow_infinity) {
    if (std::isnan(v))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: %s contains NaN", fn, arg)));
    if (!allow_infinity && std::isinf(v))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: %s contains an infinite value", fn, arg)));
}

ArrayType* array_arg_flat(FunctionCallInfo fcinfo, int argno) {
    Datum d = PG_GETARG_DATUM(argno);
    if (VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(d))) {
        ExpandedArrayHeader* ea = reinterpret_cast<ExpandedArrayHeader*>(DatumGetEOHP(d));
        if (ea->ea_magic == EA_MAGIC && ea->fvalue != nullptr) return ea->fvalue;  // valid whenever set (array.h)
    }
    return DatumGetArrayTypeP(d);
}

static ArrayType* float8_array_checked(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg) {
    ArrayType* a = array_arg_flat(fcinfo, argno);
    if (ARR_ELEMTYPE(a) != FLOAT8OID)
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH), errmsg("%s: %s must be a float8 array", fn, arg)));
    return a;
}

FloatArray float_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, bool allow_infinity) {
    ArrayType* a = float8_array_checked(fcinfo, argno, fn, arg);
    if (ARR_NDIM(a) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: %s must be a one-dimensional array, not %d-dimensional", fn, arg, ARR_NDIM(a))));
    int total = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
    FloatArray out{static_cast<double*>(palloc(sizeof(double) * (total > 0 ? total : 1))), 0, 0};
    Float8Cursor elements(a);
    for (int i = 0; i < total; ++i) {
        double v;
        if (!elements.next(v)) {
            ++out.skipped;
            continue;
        }
        check_float_value(v, fn, arg, allow_infinity);
        out.data[out.n++] = v;
    }
    return out;
}

PointMatrix point_matrix_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, int max_d) {
    ArrayType* a = float8_array_checked(fcinfo, argno, fn, arg);
    int ndim = ARR_NDIM(a);
    if (ndim > 2)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: %s must be an n x d (two-dimensional) array, not %d-dimensional", fn, arg, ndim)));
    int rows = ndim == 0 ? 0 : ARR_DIMS(a)[0];
    int d = ndim == 2 ? ARR_DIMS(a)[1] : 1;
    if (d > max_d)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: %s has %d columns; at most %d are supported", fn, arg, d, max_d)));
    PointMatrix out{static_cast<double*>(palloc(sizeof(double) * (rows > 0 ? static_cast<size_t>(rows) * d : 1))), 0, d,
                    0};
    Float8Cursor elements(a);
    for (int r = 0; r < rows; ++r) {
        bool has_null = false;
        double* dst = out.data + out.n * d;
        for (int j = 0; j < d; ++j) {
            double v;
            if (!elements.next(v)) {
                has_null = true;
                continue;
            }
            check_float_value(v, fn, arg, false);
            dst[j] = v;
        }
        if (has_null)
            ++out.skipped;
        else
            ++out.n;
    }
    return out;
}

int choice_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, const char* const* choices,
               int n_choices) {
    char* s = text_to_cstring(PG_GETARG_TEXT_PP(argno));
    for (int i = 0; i < n_choices; ++i)
        if (pg_strcasecmp(s, choices[i]) == 0) return i;
    StringInfoData list;
    initStringInfo(&list);
    for (int i = 0; i < n_choices; ++i) appendStringInfo(&list, "%s%s", i ? ", " : "", choices[i]);
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: unknown %s \"%s\"", fn, arg, s),
                    errhint("Use one of: %s.", list.data)));
    return -1;
}

// ---- results -----------------------------------------------------------------------

ArrayType* float8_array(const double* values, int n) {
    return construct_array(const_cast<Datum*>(reinterpret_cast<const Datum*>(values)), n, FLOAT8OID, 8, FLOAT8PASSBYVAL,
                           TYPALIGN_DOUBLE);
}

ArrayType* float8_matrix(const double* values, int rows, int cols) {
    int dims[2] = {rows, cols};
    int lbs[2] = {1, 1};
    return construct_md_array(const_cast<Datum*>(reinterpret_cast<const Datum*>(values)), nullptr, 2, dims, lbs,
                              FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

static_assert(FLOAT8PASSBYVAL, "float8 arrays are built straight from double buffers");
