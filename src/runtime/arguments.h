// Reading the SQL arguments every feature takes -- float8 arrays, point
// matrices, a choice among names -- with the checks they share (NaN,
// ±Infinity, dimensions; ERRORs name the function and argument), and float8
// arrays back as results. Everything read is palloc'd.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
}

// float8 values of an array argument, NULL elements skipped (counted), checked
// for NaN (and ±Infinity unless allowed). palloc'd; 1-D (or empty) only.
struct FloatArray {
    double* data;
    int64 n;
    int64 skipped;
};
FloatArray float_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, bool allow_infinity);
// Argument argno as a flat array, to read only. PL/pgSQL keeps array
// variables in expanded form; one that still holds its flat copy is read
// through it instead of being flattened into a new one (a 10^4 x 2 float8
// array is 160 kB of fresh memory per call).
ArrayType* array_arg_flat(FunctionCallInfo fcinfo, int argno);

// An n x d point matrix: a 2-D array (one point per row) or a 1-D array (d = 1).
// Rows holding a NULL are skipped (counted). NaN / ±Infinity are errors.
struct PointMatrix {
    double* data;  // row-major n x d
    int64 n;
    int d;
    int64 skipped;
};
PointMatrix point_matrix_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, int max_d);

// One of `choices` (case-insensitive); ERROR 22023 listing them otherwise.
int choice_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, const char* const* choices,
               int n_choices);

// Walks the elements of a float8 array in storage order, the one reader of its
// NULL bitmap: next() reads the next element into v and returns true, or returns
// false (v untouched) when that element is NULL. NULLs take no space in the data
// area. Holds no resources, so it may be live across ereport. The caller checks
// the element type (FLOAT8OID) and reads at most ArrayGetNItems elements.
class Float8Cursor {
public:
    explicit Float8Cursor(ArrayType* a)
        : values_(reinterpret_cast<const double*>(ARR_DATA_PTR(a))), nulls_(ARR_NULLBITMAP(a)) {}
    bool next(double& v) {
        int64 i = index_++;
        if (nulls_ && !(nulls_[i / 8] & (1 << (i % 8)))) return false;
        v = *values_++;
        return true;
    }

private:
    const double* values_;
    const bits8* nulls_;
    int64 index_ = 0;
};

// Checks one float8 value (NaN / ±Infinity) the way the readers above do.
void check_float_value(double v, const char* fn, const char* arg, bool allow_infinity);

// ---- results --------------------------------------------------------------------
// A 1-D or 2-D float8 array.
ArrayType* float8_array(const double* values, int n);
ArrayType* float8_matrix(const double* values, int rows, int cols);
