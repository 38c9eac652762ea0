// The star-join engine's expression programs (issue 39, item 2): a compact
// postfix program, evaluated per row by ONE interpreter (interp.hpp) that the
// CPU engine (g++) and cuda/starjoin.cu (nvcc) both include, so both devices
// run the same code. Plain C++, no PostgreSQL.
//
// A program is a range of Instr (16 bytes, trivially copyable) inside the
// plan's code array, plus 8-byte constants in the plan's pool (IN lists and
// code-lookup tables). Values on the stack have a static kind -- Int (int64),
// Float (float64) or Bool -- and a NULL flag. The validator
// (validate_program) checks every program once before any row is read:
// instruction and kind checks, stack depth <= kMaxStack, jump targets
// (forward only, same stack depth on every path), column / dimension-output /
// pool bounds, sorted IN lists, and the kind of the program's result. A
// malformed program is InvalidArgument, never a stray read.
//
// How the glue compiles SQL (PostgreSQL semantics, which the interpreter keeps):
//   column                Col a = column index (fact program: the fact table's
//                         columns; dimension program: that dimension's columns)
//   dimension expression  DimOut a = dimension, b = output index (fact programs
//                         only: the value the joined dimension row's output
//                         program gave)
//   constants             ConstInt b, ConstFloat b = bits of the double
//                         (float_bits()), ConstBool b = 0 / 1, Null kind
//   x + y, x - y, x * y   Add / Sub / Mul, kind Int (width = the SQL type's
//                         bytes 2 / 4 / 8: overflow of that width raises 22003
//                         "smallint / integer / bigint out of range") or Float
//                         (overflow to inf raises 22003 "value out of range:
//                         overflow", a product / quotient of nonzero values
//                         that underflows to 0 "underflow", as float8mul)
//   x / y, x % y, -x      Div (Int: truncates toward zero; / 0 raises 22012;
//                         Float: / 0.0 raises 22012 unless x is NaN, as
//                         float8div), Mod (Int only; % 0 raises 22012;
//                         x % -1 = 0), Neg
//   casts                 IntToFloat; FloatToInt width (rint, half to even, as
//                         PostgreSQL; NaN or out of range: 22003); IntNarrow
//                         width (int8 -> int4 / int2: 22003 when out of range)
//   comparisons           Cmp sub = CmpOp, kind Int or Float (Float orders NaN
//                         above everything and NaN = NaN, as float8_cmp)
//   x BETWEEN lo AND hi   push x, lo, hi; Between kind (= x >= lo AND x <= hi)
//   x IN (constants)      In kind, a = pool offset, b = count; the list sorted
//                         ascending in the kind's order, no NULL in it; sub
//                         bit 0: the SQL list also held a NULL (no match -> NULL)
//   AND / OR / NOT        And / Or / Not (three-valued logic). PostgreSQL stops
//                         at the first FALSE (AND) / TRUE (OR): compile
//                         `a AND b` as  a; JumpIfFalseKeep L; b; And; L:  so
//                         that b is not evaluated (and cannot raise) where
//                         PostgreSQL does not evaluate it
//   IS [NOT] NULL         IsNull / IsNotNull (any kind)
//   CASE WHEN c THEN x ELSE y END
//                         c; JumpIfNotTrue L1; x; Jump L2; L1: y; L2:
//                         (targets are instruction indexes inside the program,
//                         forward only; a target may be the program's end)
//   date parts            DatePart sub = DateField of an Int date (int32 days
//                         since 2000-01-01, PostgreSQL's date): year (1 BC =
//                         -1), month, day; of an infinite date month / day are
//                         NULL and year is not representable (the run returns
//                         Declined: the caller runs its general plan)
//   code lookup           Lookup kind, a = pool offset, b = count: pushes
//                         pool[a + code] of an Int dictionary code (LIKE
//                         'PROMO%', text = / IN, evaluated by the glue over the
//                         dictionary); sub bit 0: b more entries follow, 1 =
//                         that entry is NULL; NULL code -> NULL; a code
//                         outside [0, b) is InvalidArgument
// A filter passes a row only on TRUE (NULL and FALSE reject it).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/status.hpp"

namespace approx::starjoin {

constexpr int kMaxStack = 16;           // values on the stack at most
constexpr int32_t kMaxProgram = 4096;   // instructions per program
constexpr int kMaxDims = 8;             // dimensions per plan
constexpr int kMaxDimOutputs = 8;       // output programs per dimension
constexpr int kMaxGroupParts = 8;       // GROUP BY expressions
constexpr int kMaxMeasures = 16;        // aggregate measures

enum class Kind : uint8_t { Int = 0, Float = 1, Bool = 2 };

// Column types at their own width. Date: int32 days since 2000-01-01
// (PostgreSQL's DateADT); Code: an int32 dictionary code; Bool: one byte 0 / 1.
enum class ColType : uint8_t { Int16 = 0, Int32, Int64, Float32, Float64, Date, Code, Bool };

enum class Op : uint8_t {
    Col = 0, DimOut, ConstInt, ConstFloat, ConstBool, Null,
    Add, Sub, Mul, Div, Mod, Neg,
    IntToFloat, FloatToInt, IntNarrow,
    Cmp, Between, In, And, Or, Not, IsNull, IsNotNull,
    Jump, JumpIfNotTrue, JumpIfFalseKeep, JumpIfTrueKeep,
    DatePart, Lookup,
    Count_  // number of ops (not an op)
};

enum class CmpOp : uint8_t { Eq = 0, Ne, Lt, Le, Gt, Ge };
enum class DateField : uint8_t { Year = 0, Month, Day };

// One instruction. Fields by op (see above): kind = the operands' kind (Null,
// Lookup: the pushed kind); sub = CmpOp / DateField / flags; width = 2, 4 or
// 8 for Int arithmetic, FloatToInt and IntNarrow; a = column / dimension /
// jump target / pool offset; b = output index / constant / pool count.
struct Instr {
    Op op = Op::ConstBool;
    Kind kind = Kind::Int;
    uint8_t sub = 0;
    uint8_t width = 8;
    int32_t a = 0;
    int64_t b = 0;
};
static_assert(sizeof(Instr) == 16, "an instruction is 16 bytes");

// A program: code[first, first + length) of the plan's code array; length 0
// is "none" (a filter that passes every row; a measure that is COUNT(*)).
struct ProgramRef {
    int32_t first = 0;
    int32_t length = 0;
};

inline int64_t float_bits(double f) {
    int64_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}
inline double bits_float(int64_t b) {
    double f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

// Errors a row's evaluation records (the row loop keeps the first, by row
// order); eval_error_status() turns one into the run's Status.
enum EvalError : int32_t {
    kEvalOk = 0,
    kSmallintOutOfRange,   // 22003
    kIntegerOutOfRange,    // 22003
    kBigintOutOfRange,     // 22003
    kFloatOverflow,        // 22003 value out of range: overflow
    kFloatUnderflow,       // 22003 value out of range: underflow
    kDivisionByZero,       // 22012
    kCodeOutOfRange,       // InvalidArgument: a dictionary code outside its table
    kInfiniteDateYear,     // Declined: year of an infinite date
    kBadStratum,           // InvalidArgument: a stratum outside [0, n_strata) or NULL
    kEvalErrorCount
};
Status eval_error_status(int32_t error);

// What a program may read, for the validator.
struct ProgramScope {
    const ColType* columns = nullptr;  // the table's column types
    int32_t n_columns = 0;
    // Fact programs: per dimension, the kinds of its outputs (DimOut); null
    // for dimension programs (no DimOut allowed).
    const Kind* const* dim_output_kinds = nullptr;
    const int32_t* dim_outputs = nullptr;
    int32_t n_dims = 0;
};

// Validates code[ref.first, +ref.length) against the scope and the pool;
// the program must leave exactly one value of kind `result` (length 0: always
// valid). uses_dims (optional): whether the program reads DimOut. `what`
// names the program in messages ("fact filter", ...).
Status validate_program(const Instr* code, int32_t code_size, const int64_t* pool, int32_t pool_size,
                        ProgramRef ref, const ProgramScope& scope, Kind result, const char* what,
                        bool* uses_dims = nullptr);

// Value kind of a column type.
inline Kind column_kind(ColType t) {
    return t == ColType::Float32 || t == ColType::Float64 ? Kind::Float : (t == ColType::Bool ? Kind::Bool : Kind::Int);
}
// Bytes per value of a column type.
inline int column_width(ColType t) {
    switch (t) {
        case ColType::Int16: return 2;
        case ColType::Int64:
        case ColType::Float64: return 8;
        case ColType::Bool: return 1;
        default: return 4;
    }
}

}  // namespace approx::starjoin
