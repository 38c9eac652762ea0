// The star-join expression programs (core/starjoin/program.hpp): every op's
// PostgreSQL semantics through the one interpreter, and the validator.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/starjoin/interp.hpp"
#include "core/starjoin/program.hpp"
#include "starjoin_builder.hpp"

using namespace approx::starjoin;
using approx::StatusCode;

namespace {

using sjtest::I;

Instr CI(int64_t v) { return I(Op::ConstInt, Kind::Int, 0, v); }
Instr CF(double v) { return I(Op::ConstFloat, Kind::Float, 0, float_bits(v)); }
Instr CB(bool v) { return I(Op::ConstBool, Kind::Bool, 0, v ? 1 : 0); }
Instr NUL(Kind k) { return I(Op::Null, k); }
Instr Ar(Op op, Kind k = Kind::Int, uint8_t width = 8) { return I(op, k, 0, 0, 0, width); }
Instr Cmp(CmpOp c, Kind k = Kind::Int) { return I(Op::Cmp, k, 0, 0, static_cast<uint8_t>(c)); }

struct Outcome {
    approx::Status validation;
    int32_t error = kEvalOk;
    Val v{};
};

// Validates and evaluates code (result of kind `want`) on row `row` of cols.
Outcome run(const std::vector<Instr>& code, Kind want, const std::vector<int64_t>& pool = {},
            const std::vector<ColumnView>& cols = {}, int64_t row = 0) {
    Outcome o;
    std::vector<ColType> types;
    for (const ColumnView& c : cols) types.push_back(c.type);
    ProgramScope scope;
    scope.columns = types.data();
    scope.n_columns = static_cast<int32_t>(types.size());
    o.validation = validate_program(code.data(), static_cast<int32_t>(code.size()), pool.data(),
                                    static_cast<int32_t>(pool.size()), ProgramRef{0, static_cast<int32_t>(code.size())},
                                    scope, want, "test");
    if (!o.validation.ok()) return o;
    RowEnv env{cols.data(), row, nullptr};
    o.error = eval(code.data(), static_cast<int32_t>(code.size()), pool.data(), env, o.v);
    return o;
}

int64_t int_of(const std::vector<Instr>& code) {
    Outcome o = run(code, Kind::Int);
    EXPECT_TRUE(o.validation.ok()) << o.validation.message;
    EXPECT_EQ(o.error, kEvalOk);
    EXPECT_FALSE(o.v.null);
    return o.v.i;
}
double float_of(const std::vector<Instr>& code) {
    Outcome o = run(code, Kind::Float);
    EXPECT_TRUE(o.validation.ok()) << o.validation.message;
    EXPECT_EQ(o.error, kEvalOk);
    return o.v.f;
}
// -1: NULL, 0: false, 1: true
int bool_of(const std::vector<Instr>& code, const std::vector<int64_t>& pool = {}) {
    Outcome o = run(code, Kind::Bool, pool);
    EXPECT_TRUE(o.validation.ok()) << o.validation.message;
    EXPECT_EQ(o.error, kEvalOk);
    return o.v.null ? -1 : static_cast<int>(o.v.i);
}
int32_t error_of(const std::vector<Instr>& code, Kind want) {
    Outcome o = run(code, want);
    EXPECT_TRUE(o.validation.ok()) << o.validation.message;
    return o.error;
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

}  // namespace

TEST(StarJoinProgram, IntegerArithmeticAsPostgres) {
    EXPECT_EQ(int_of({CI(7), CI(-2), Ar(Op::Div)}), -3);  // truncates toward zero
    EXPECT_EQ(int_of({CI(-7), CI(2), Ar(Op::Mod)}), -1);
    EXPECT_EQ(int_of({CI(kMin), CI(-1), Ar(Op::Mod)}), 0);
    EXPECT_EQ(int_of({CI(3), CI(4), Ar(Op::Mul), CI(5), Ar(Op::Sub)}), 7);
    EXPECT_EQ(int_of({CI(5), Ar(Op::Neg)}), -5);
    EXPECT_EQ(error_of({CI(kMax), CI(1), Ar(Op::Add)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CI(kMin), CI(1), Ar(Op::Sub)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CI(int64_t(1) << 32), CI(int64_t(1) << 31), Ar(Op::Mul)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CI(kMin), CI(-1), Ar(Op::Mul)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CI(kMin), CI(-1), Ar(Op::Div)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CI(kMin), Ar(Op::Neg)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CI(2147483647), CI(1), Ar(Op::Add, Kind::Int, 4)}, Kind::Int), kIntegerOutOfRange);
    EXPECT_EQ(error_of({CI(-2147483648LL), CI(-1), Ar(Op::Div, Kind::Int, 4)}, Kind::Int), kIntegerOutOfRange);
    EXPECT_EQ(error_of({CI(200), CI(200), Ar(Op::Mul, Kind::Int, 2)}, Kind::Int), kSmallintOutOfRange);
    EXPECT_EQ(int_of({CI(2147483647), CI(1), Ar(Op::Add, Kind::Int, 8)}), 2147483648LL);
    EXPECT_EQ(error_of({CI(1), CI(0), Ar(Op::Div)}, Kind::Int), kDivisionByZero);
    EXPECT_EQ(error_of({CI(1), CI(0), Ar(Op::Mod)}, Kind::Int), kDivisionByZero);
    EXPECT_EQ(error_of({CI(2147483648LL), I(Op::IntNarrow, Kind::Int, 0, 0, 0, 4)}, Kind::Int), kIntegerOutOfRange);
    // NULL operands give NULL, even for / 0 (the functions are strict)
    Outcome o = run({NUL(Kind::Int), CI(0), Ar(Op::Div)}, Kind::Int);
    EXPECT_EQ(o.error, kEvalOk);
    EXPECT_TRUE(o.v.null);
}

TEST(StarJoinProgram, FloatArithmeticAsPostgres) {
    EXPECT_DOUBLE_EQ(float_of({CF(1), CF(4), Ar(Op::Div, Kind::Float)}), 0.25);
    EXPECT_EQ(error_of({CF(1), CF(0), Ar(Op::Div, Kind::Float)}, Kind::Float), kDivisionByZero);
    EXPECT_TRUE(std::isnan(float_of({CF(NAN), CF(0), Ar(Op::Div, Kind::Float)})));  // float8div: NaN / 0 = NaN
    EXPECT_EQ(error_of({CF(1e300), CF(1e300), Ar(Op::Mul, Kind::Float)}, Kind::Float), kFloatOverflow);
    EXPECT_EQ(error_of({CF(1e308), CF(1e308), Ar(Op::Add, Kind::Float)}, Kind::Float), kFloatOverflow);
    EXPECT_EQ(error_of({CF(1e-300), CF(1e-300), Ar(Op::Mul, Kind::Float)}, Kind::Float), kFloatUnderflow);
    EXPECT_TRUE(std::isinf(float_of({CF(INFINITY), CF(1), Ar(Op::Add, Kind::Float)})));  // inf in, inf out
    // casts: rint (half to even), ranges
    EXPECT_EQ(int_of({CF(2.5), I(Op::FloatToInt, Kind::Float, 0, 0, 0, 8)}), 2);
    EXPECT_EQ(int_of({CF(-3.5), I(Op::FloatToInt, Kind::Float, 0, 0, 0, 4)}), -4);
    EXPECT_EQ(error_of({CF(NAN), I(Op::FloatToInt, Kind::Float, 0, 0, 0, 8)}, Kind::Int), kBigintOutOfRange);
    EXPECT_EQ(error_of({CF(2147483647.5), I(Op::FloatToInt, Kind::Float, 0, 0, 0, 4)}, Kind::Int), kIntegerOutOfRange);
    EXPECT_EQ(error_of({CF(9223372036854775808.0), I(Op::FloatToInt, Kind::Float, 0, 0, 0, 8)}, Kind::Int),
              kBigintOutOfRange);
    EXPECT_EQ(int_of({CF(32767.4), I(Op::FloatToInt, Kind::Float, 0, 0, 0, 2)}), 32767);
    EXPECT_DOUBLE_EQ(float_of({CI(-3), I(Op::IntToFloat)}), -3.0);
}

TEST(StarJoinProgram, ComparisonsAndThreeValuedLogic) {
    EXPECT_EQ(bool_of({CI(1), CI(2), Cmp(CmpOp::Lt)}), 1);
    EXPECT_EQ(bool_of({CI(1), NUL(Kind::Int), Cmp(CmpOp::Eq)}), -1);
    EXPECT_EQ(bool_of({CF(NAN), CF(NAN), Cmp(CmpOp::Eq, Kind::Float)}), 1);  // float8eq: NaN = NaN
    EXPECT_EQ(bool_of({CF(NAN), CF(INFINITY), Cmp(CmpOp::Gt, Kind::Float)}), 1);
    const int T = 1, F = 0, N = -1;
    auto b = [](int x) { return x < 0 ? NUL(Kind::Bool) : CB(x != 0); };
    const int vals[3] = {T, F, N};
    for (int x : vals)
        for (int y : vals) {
            int want_and = (x == F || y == F) ? F : ((x == N || y == N) ? N : T);
            int want_or = (x == T || y == T) ? T : ((x == N || y == N) ? N : F);
            EXPECT_EQ(bool_of({b(x), b(y), I(Op::And, Kind::Bool)}), want_and) << x << " AND " << y;
            EXPECT_EQ(bool_of({b(x), b(y), I(Op::Or, Kind::Bool)}), want_or) << x << " OR " << y;
        }
    EXPECT_EQ(bool_of({NUL(Kind::Bool), I(Op::Not, Kind::Bool)}), N);
    EXPECT_EQ(bool_of({CB(true), I(Op::Not, Kind::Bool)}), F);
    EXPECT_EQ(bool_of({NUL(Kind::Float), I(Op::IsNull)}), T);
    EXPECT_EQ(bool_of({CI(0), I(Op::IsNotNull)}), T);
    // BETWEEN with a NULL bound: NULL unless the other bound already fails
    EXPECT_EQ(bool_of({CI(5), CI(1), CI(9), I(Op::Between)}), T);
    EXPECT_EQ(bool_of({CI(5), NUL(Kind::Int), CI(9), I(Op::Between)}), N);
    EXPECT_EQ(bool_of({CI(5), NUL(Kind::Int), CI(3), I(Op::Between)}), F);
}

TEST(StarJoinProgram, ShortCircuitSkipsWhatPostgresSkips) {
    // x <> 0 AND 10 / x > 1 with x = 0: FALSE, the division never runs
    std::vector<Instr> code = {CI(0), CI(0), Cmp(CmpOp::Ne), I(Op::JumpIfFalseKeep, Kind::Bool, 8),
                               CI(10), CI(0), Ar(Op::Div), CI(1)};
    code.push_back(Cmp(CmpOp::Gt));
    code.push_back(I(Op::And, Kind::Bool));
    code[3].a = 10;
    EXPECT_EQ(bool_of(code), 0);
    code[1] = CI(1);  // 0 <> 1: the division runs and raises
    EXPECT_EQ(error_of(code, Kind::Bool), kDivisionByZero);
}

TEST(StarJoinProgram, InListsAndCase) {
    std::vector<int64_t> pool = {-5, 3, 9, 100};
    EXPECT_EQ(bool_of({CI(9), I(Op::In, Kind::Int, 0, 4)}, pool), 1);
    EXPECT_EQ(bool_of({CI(4), I(Op::In, Kind::Int, 0, 4)}, pool), 0);
    EXPECT_EQ(bool_of({CI(4), I(Op::In, Kind::Int, 0, 4, 1)}, pool), -1);  // the list held a NULL
    EXPECT_EQ(bool_of({NUL(Kind::Int), I(Op::In, Kind::Int, 0, 4)}, pool), -1);
    EXPECT_EQ(bool_of({CI(100), I(Op::In, Kind::Int, 1, 3)}, pool), 1);
    std::vector<int64_t> fpool = {float_bits(-1.5), float_bits(2.0), float_bits(NAN)};
    EXPECT_EQ(bool_of({CF(NAN), I(Op::In, Kind::Float, 0, 3)}, fpool), 1);
    EXPECT_EQ(bool_of({CF(2.0), I(Op::In, Kind::Float, 0, 3)}, fpool), 1);
    // CASE WHEN c THEN 10 ELSE 20 END: c; JumpIfNotTrue 4; 10; Jump 5; 20
    for (int c = -1; c <= 1; ++c) {
        std::vector<Instr> code = {c < 0 ? NUL(Kind::Bool) : CB(c == 1), I(Op::JumpIfNotTrue, Kind::Bool, 4), CI(10),
                                   I(Op::Jump, Kind::Int, 5), CI(20)};
        EXPECT_EQ(int_of(code), c == 1 ? 10 : 20);
    }
}

TEST(StarJoinProgram, DatePartsAgainstKnownDates) {
    struct D {
        int y, m, d;
    } dates[] = {{2000, 1, 1}, {1992, 2, 29}, {1998, 12, 31}, {2024, 3, 1}, {1, 1, 1}, {0, 12, 31}, {-44, 3, 15}, {9999, 12, 31}};
    for (const D& x : dates) {
        int64_t days = date2j(x.y, x.m, x.d) - kPostgresEpochJdate;
        auto part = [&](DateField f) {
            return int_of({CI(days), I(Op::DatePart, Kind::Int, 0, 0, static_cast<uint8_t>(f))});
        };
        // PostgreSQL shows astronomical year 0 as 1 BC (-1), year -44 as 45 BC (-45)
        EXPECT_EQ(part(DateField::Year), x.y > 0 ? x.y : x.y - 1) << x.y;
        EXPECT_EQ(part(DateField::Month), x.m);
        EXPECT_EQ(part(DateField::Day), x.d);
    }
    EXPECT_EQ(date2j(2000, 1, 1) - kPostgresEpochJdate, 0);
    EXPECT_EQ(date2j(1992, 1, 1) - kPostgresEpochJdate, -2922);  // '1992-01-01'::date - '2000-01-01'
    // infinite dates: month NULL, year not representable
    Outcome o = run({CI(kDateNoEnd), I(Op::DatePart, Kind::Int, 0, 0, 1)}, Kind::Int);
    EXPECT_TRUE(o.v.null);
    EXPECT_EQ(error_of({CI(kDateNoBegin), I(Op::DatePart, Kind::Int, 0, 0, 0)}, Kind::Int), kInfiniteDateYear);
    EXPECT_EQ(eval_error_status(kInfiniteDateYear).code, StatusCode::Declined);
    EXPECT_EQ(eval_error_status(kDivisionByZero).code, StatusCode::DivisionByZero);
    EXPECT_EQ(eval_error_status(kIntegerOutOfRange).code, StatusCode::OutOfRange);
}

TEST(StarJoinProgram, ColumnsNullsAndCodeLookup) {
    std::vector<int16_t> a = {1, -2, 3};
    std::vector<int32_t> codes = {2, 0, 7};
    std::vector<float> f = {0.5f, 1.5f, 2.5f};
    uint8_t nulls = 0x2;  // row 1 NULL
    std::vector<ColumnView> cols = {{a.data(), &nulls, ColType::Int16}, {codes.data(), nullptr, ColType::Code},
                                    {f.data(), nullptr, ColType::Float32}};
    Outcome o = run({I(Op::Col, Kind::Int, 0)}, Kind::Int, {}, cols, 1);
    EXPECT_TRUE(o.v.null);
    o = run({I(Op::Col, Kind::Int, 0)}, Kind::Int, {}, cols, 2);
    EXPECT_EQ(o.v.i, 3);
    o = run({I(Op::Col, Kind::Int, 2)}, Kind::Float, {}, cols, 2);
    EXPECT_EQ(o.v.f, 2.5);
    // a bool table over 3 codes (LIKE 'PROMO%' evaluated on the dictionary), with NULL flags
    std::vector<int64_t> pool = {1, 0, 1, 0, 0, 1};
    o = run({I(Op::Col, Kind::Int, 1), I(Op::Lookup, Kind::Bool, 0, 3, 1)}, Kind::Bool, pool, cols, 0);
    EXPECT_TRUE(o.v.null);  // code 2: NULL entry
    o = run({I(Op::Col, Kind::Int, 1), I(Op::Lookup, Kind::Bool, 0, 3, 1)}, Kind::Bool, pool, cols, 1);
    EXPECT_EQ(o.v.i, 1);
    o = run({I(Op::Col, Kind::Int, 1), I(Op::Lookup, Kind::Bool, 0, 3, 1)}, Kind::Bool, pool, cols, 2);
    EXPECT_EQ(o.error, kCodeOutOfRange);
}

TEST(StarJoinProgram, MalformedProgramsRejected) {
    auto bad = [](const std::vector<Instr>& code, Kind want, const std::vector<int64_t>& pool = {}) {
        Outcome o = run(code, want, pool);
        EXPECT_EQ(o.validation.code, StatusCode::InvalidArgument) << o.validation.message;
    };
    bad({CI(1), CI(2)}, Kind::Int);                                // two values left
    bad({Ar(Op::Add)}, Kind::Int);                                 // stack underflow
    bad({CI(1), CF(2), Ar(Op::Add)}, Kind::Int);                   // mixed kinds
    bad({CI(1)}, Kind::Bool);                                      // wrong result kind
    bad({I(Op::Col, Kind::Int, 3)}, Kind::Int);                    // no such column
    bad({CF(1), CF(2), Ar(Op::Mod, Kind::Float)}, Kind::Float);    // float %
    bad({CI(1), CI(2), Ar(Op::Add, Kind::Int, 3)}, Kind::Int);     // bad width
    bad({CB(true), I(Op::JumpIfNotTrue, Kind::Bool, 0), CI(1)}, Kind::Int);  // backward jump
    bad({CB(true), I(Op::JumpIfNotTrue, Kind::Bool, 9), CI(1)}, Kind::Int);  // past the end
    bad({CB(true), I(Op::JumpIfNotTrue, Kind::Bool, 3), CI(1)}, Kind::Int);  // paths disagree
    bad({CI(1), I(Op::In, Kind::Int, 0, 5)}, Kind::Bool, {1, 2});            // list outside the pool
    bad({CI(1), I(Op::In, Kind::Int, 0, 2)}, Kind::Bool, {2, 1});            // not sorted
    bad({CI(1), I(Op::Lookup, Kind::Int, 1, 2, 1)}, Kind::Int, {0, 0, 0});   // table outside the pool
    bad({I(Op::DimOut, Kind::Int, 0, 0)}, Kind::Int);                        // no dimension outputs here
    bad({I(static_cast<Op>(200))}, Kind::Int);                               // unknown op
    std::vector<Instr> deep;
    for (int i = 0; i <= kMaxStack; ++i) deep.push_back(CI(i));
    for (int i = 0; i < kMaxStack; ++i) deep.push_back(Ar(Op::Add));
    bad(deep, Kind::Int);  // deeper than kMaxStack
    // outside the code array
    ProgramScope scope;
    Instr one = CI(1);
    EXPECT_EQ(validate_program(&one, 1, nullptr, 0, ProgramRef{0, 2}, scope, Kind::Int, "x").code,
              StatusCode::InvalidArgument);
    EXPECT_EQ(validate_program(&one, 1, nullptr, 0, ProgramRef{-1, 1}, scope, Kind::Int, "x").code,
              StatusCode::InvalidArgument);
}
