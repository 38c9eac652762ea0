// The one interpreter of the star-join programs (program.hpp), written once
// as inline functions that g++ (the CPU engine) and nvcc (cuda/starjoin.cu,
// as __host__ __device__) both compile. It trusts a validated program:
// validate_program() has checked kinds, stack depth, jumps and bounds.
// PostgreSQL's semantics throughout (int4pl / int8mul overflow checks,
// int4div, float8div / float8mul, dtoi8, float8_cmp, date2j / j2date).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/starjoin/program.hpp"

#ifdef __CUDACC__
#define SJ_HD __host__ __device__ __forceinline__
#else
#define SJ_HD inline
#endif

namespace approx::starjoin {

// One value on the stack: int64 (Int and Bool 0 / 1) or float64, and NULL.
struct Val {
    union {
        int64_t i;
        double f;
    };
    int32_t null;
};

// A column as the interpreter reads it (host or device memory): values at
// their type's width; nulls, when not null, a bitmap of the rows (bit r % 8 of
// byte r / 8 set: row r is NULL).
struct ColumnView {
    const void* data = nullptr;
    const uint8_t* nulls = nullptr;
    ColType type = ColType::Int64;
};

// What a row's program reads: the table's columns at `row`, and per
// dimension the outputs of the joined dimension row (fact programs).
struct RowEnv {
    const ColumnView* cols;
    int64_t row;
    const Val* const* dim_vals;
};

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int32_t kPostgresEpochJdate = 2451545;  // date2j(2000, 1, 1)
constexpr int32_t kDateNoBegin = std::numeric_limits<int32_t>::min();
constexpr int32_t kDateNoEnd = std::numeric_limits<int32_t>::max();

SJ_HD bool is_nan(double x) { return x != x; }
SJ_HD bool is_inf(double x) {
    return x == std::numeric_limits<double>::infinity() || x == -std::numeric_limits<double>::infinity();
}

SJ_HD int32_t int_range_error(int width) {
    return width == 2 ? kSmallintOutOfRange : (width == 4 ? kIntegerOutOfRange : kBigintOutOfRange);
}
SJ_HD bool fits_width(int64_t v, int width) {
    return width == 2 ? (v >= -32768 && v <= 32767) : (width == 4 ? (v >= -2147483648LL && v <= 2147483647LL) : true);
}

// a op b on int64 with overflow detection (int8pl, int8mi, int8mul).
SJ_HD bool add_overflows(int64_t a, int64_t b, int64_t& r) {
    if ((b > 0 && a > kInt64Max - b) || (b < 0 && a < kInt64Min - b)) return true;
    r = a + b;
    return false;
}
SJ_HD bool sub_overflows(int64_t a, int64_t b, int64_t& r) {
    if ((b < 0 && a > kInt64Max + b) || (b > 0 && a < kInt64Min + b)) return true;
    r = a - b;
    return false;
}
SJ_HD bool mul_overflows(int64_t a, int64_t b, int64_t& r) {
    if (a == 0 || b == 0) {
        r = 0;
        return false;
    }
    if (a == -1) {
        if (b == kInt64Min) return true;
        r = -b;
        return false;
    }
    if (b == -1) {
        if (a == kInt64Min) return true;
        r = -a;
        return false;
    }
    int64_t p = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    if (p / a != b) return true;
    r = p;
    return false;
}

// float8_cmp_internal: NaN equals NaN and sorts above every other value.
SJ_HD int float_cmp(double a, double b) {
    if (is_nan(a)) return is_nan(b) ? 0 : 1;
    if (is_nan(b)) return -1;
    return a > b ? 1 : (a < b ? -1 : 0);
}
SJ_HD int int_cmp(int64_t a, int64_t b) { return a > b ? 1 : (a < b ? -1 : 0); }

SJ_HD bool cmp_holds(int c, uint8_t op) {
    switch (static_cast<CmpOp>(op)) {
        case CmpOp::Eq: return c == 0;
        case CmpOp::Ne: return c != 0;
        case CmpOp::Lt: return c < 0;
        case CmpOp::Le: return c <= 0;
        case CmpOp::Gt: return c > 0;
        default: return c >= 0;
    }
}

// PostgreSQL's j2date (src/backend/utils/adt/datetime.c).
SJ_HD void j2date(int jd, int& year, int& month, int& day) {
    unsigned int julian = static_cast<unsigned int>(jd);
    julian += 32044;
    unsigned int quad = julian / 146097;
    unsigned int extra = (julian - quad * 146097) * 4 + 3;
    julian += 60 + quad * 3 + extra / 146097;
    quad = julian / 1461;
    julian -= quad * 1461;
    int y = static_cast<int>(julian * 4 / 1461);
    julian = ((y != 0) ? ((julian + 305) % 365) : ((julian + 306) % 366)) + 123;
    y += static_cast<int>(quad * 4);
    year = y - 4800;
    quad = julian * 2141 / 65536;
    day = static_cast<int>(julian - 7834 * quad / 256);
    month = static_cast<int>((quad + 10) % 12 + 1);
}

// PostgreSQL's date2j; the glue's date constants: date2j(y, m, d) - kPostgresEpochJdate.
SJ_HD int date2j(int year, int month, int day) {
    if (month > 2) {
        month += 1;
        year += 4800;
    } else {
        month += 13;
        year += 4799;
    }
    int century = year / 100;
    int julian = year * 365 - 32167;
    julian += year / 4 - century + century / 4;
    julian += 7834 * month / 256 + day;
    return julian;
}

SJ_HD Val load_column(const ColumnView& c, int64_t r) {
    Val v;
    v.i = 0;
    v.null = c.nulls != nullptr && ((c.nulls[r >> 3] >> (r & 7)) & 1);
    if (v.null) return v;
    switch (c.type) {
        case ColType::Int16: v.i = static_cast<const int16_t*>(c.data)[r]; break;
        case ColType::Int64: v.i = static_cast<const int64_t*>(c.data)[r]; break;
        case ColType::Float32: v.f = static_cast<const float*>(c.data)[r]; break;
        case ColType::Float64: v.f = static_cast<const double*>(c.data)[r]; break;
        case ColType::Bool: v.i = static_cast<const uint8_t*>(c.data)[r] != 0; break;
        default: v.i = static_cast<const int32_t*>(c.data)[r]; break;  // Int32, Date, Code
    }
    return v;
}

SJ_HD int32_t int_arith(Op op, int width, int64_t a, int64_t b, int64_t& r) {
    bool over = false;
    switch (op) {
        case Op::Add: over = add_overflows(a, b, r); break;
        case Op::Sub: over = sub_overflows(a, b, r); break;
        case Op::Mul: over = mul_overflows(a, b, r); break;
        case Op::Div:
            if (b == 0) return kDivisionByZero;
            if (b == -1) {
                over = a == kInt64Min;
                r = over ? 0 : -a;
            } else {
                r = a / b;  // C++ truncates toward zero, as PostgreSQL
            }
            break;
        default:  // Mod
            if (b == 0) return kDivisionByZero;
            r = b == -1 ? 0 : a % b;
            break;
    }
    if (over || !fits_width(r, width)) return int_range_error(width);
    return kEvalOk;
}

SJ_HD int32_t float_arith(Op op, double a, double b, double& r) {
    switch (op) {
        case Op::Add:
            r = a + b;
            if (is_inf(r) && !is_inf(a) && !is_inf(b)) return kFloatOverflow;
            return kEvalOk;
        case Op::Sub:
            r = a - b;
            if (is_inf(r) && !is_inf(a) && !is_inf(b)) return kFloatOverflow;
            return kEvalOk;
        case Op::Mul:
            r = a * b;
            if (is_inf(r) && !is_inf(a) && !is_inf(b)) return kFloatOverflow;
            if (r == 0.0 && a != 0.0 && b != 0.0) return kFloatUnderflow;
            return kEvalOk;
        default:  // Div
            if (b == 0.0 && !is_nan(a)) return kDivisionByZero;
            r = a / b;
            if (is_inf(r) && !is_inf(a)) return kFloatOverflow;
            if (r == 0.0 && a != 0.0 && !is_inf(b)) return kFloatUnderflow;
            return kEvalOk;
    }
}

// dtoi2 / dtoi4 / dtoi8: round half to even, then the width's range.
SJ_HD int32_t float_to_int(double x, int width, int64_t& r) {
    double v = ::rint(x);
    double lim = width == 2 ? 32768.0 : (width == 4 ? 2147483648.0 : 9223372036854775808.0);
    if (is_nan(v) || !(v >= -lim && v < lim)) return int_range_error(width);
    r = static_cast<int64_t>(v);
    return kEvalOk;
}

// Three-valued AND / OR of two Bool values.
SJ_HD Val and3(Val a, Val b) {
    Val r;
    bool a_false = !a.null && a.i == 0, b_false = !b.null && b.i == 0;
    r.i = 0;
    r.null = (a_false || b_false) ? 0 : (a.null || b.null);
    if (!a_false && !b_false && !r.null) r.i = 1;
    return r;
}
SJ_HD Val or3(Val a, Val b) {
    Val r;
    bool a_true = !a.null && a.i != 0, b_true = !b.null && b.i != 0;
    r.i = (a_true || b_true) ? 1 : 0;
    r.null = (a_true || b_true) ? 0 : (a.null || b.null);
    return r;
}

SJ_HD int compare_vals(Kind k, Val a, Val b) { return k == Kind::Float ? float_cmp(a.f, b.f) : int_cmp(a.i, b.i); }

// Evaluates a validated program for one row; returns kEvalOk or an EvalError.
SJ_HD int32_t eval(const Instr* code, int32_t n, const int64_t* pool, const RowEnv& env, Val& out) {
    Val st[kMaxStack];
    int sp = 0;
    for (int32_t pc = 0; pc < n; ++pc) {
        const Instr in = code[pc];
        switch (in.op) {
            case Op::Col: st[sp++] = load_column(env.cols[in.a], env.row); break;
            case Op::DimOut: st[sp++] = env.dim_vals[in.a][in.b]; break;
            case Op::ConstInt:
            case Op::ConstFloat:
            case Op::ConstBool:
                st[sp].i = in.b;
                st[sp++].null = 0;
                break;
            case Op::Null:
                st[sp].i = 0;
                st[sp++].null = 1;
                break;
            case Op::Add:
            case Op::Sub:
            case Op::Mul:
            case Op::Div:
            case Op::Mod: {
                Val& a = st[sp - 2];
                const Val b = st[--sp];
                if (a.null || b.null) {
                    a.null = 1;
                    break;
                }
                int32_t e = in.kind == Kind::Int ? int_arith(in.op, in.width, a.i, b.i, a.i)
                                                 : float_arith(in.op, a.f, b.f, a.f);
                if (e != kEvalOk) return e;
                break;
            }
            case Op::Neg: {
                Val& a = st[sp - 1];
                if (a.null) break;
                if (in.kind == Kind::Float) {
                    a.f = -a.f;
                } else {
                    if (a.i == kInt64Min || !fits_width(-a.i, in.width)) return int_range_error(in.width);
                    a.i = -a.i;
                }
                break;
            }
            case Op::IntToFloat:
                if (!st[sp - 1].null) st[sp - 1].f = static_cast<double>(st[sp - 1].i);
                break;
            case Op::FloatToInt:
                if (!st[sp - 1].null) {
                    int32_t e = float_to_int(st[sp - 1].f, in.width, st[sp - 1].i);
                    if (e != kEvalOk) return e;
                }
                break;
            case Op::IntNarrow:
                if (!st[sp - 1].null && !fits_width(st[sp - 1].i, in.width)) return int_range_error(in.width);
                break;
            case Op::Cmp: {
                Val& a = st[sp - 2];
                const Val b = st[--sp];
                if (a.null || b.null) {
                    a.null = 1;
                    a.i = 0;
                    break;
                }
                a.i = cmp_holds(compare_vals(in.kind, a, b), in.sub) ? 1 : 0;
                break;
            }
            case Op::Between: {
                const Val hi = st[--sp];
                const Val lo = st[--sp];
                Val& x = st[sp - 1];
                Val ge, le;
                ge.null = x.null || lo.null;
                ge.i = ge.null ? 0 : compare_vals(in.kind, x, lo) >= 0;
                le.null = x.null || hi.null;
                le.i = le.null ? 0 : compare_vals(in.kind, x, hi) <= 0;
                x = and3(ge, le);
                break;
            }
            case Op::In: {
                Val& x = st[sp - 1];
                if (x.null) break;
                int64_t lo = 0, hi = in.b;  // first entry >= x
                while (lo < hi) {
                    int64_t mid = lo + (hi - lo) / 2;
                    Val m;
                    m.i = pool[in.a + mid];
                    if (compare_vals(in.kind, m, x) < 0)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                Val m;
                m.i = lo < in.b ? pool[in.a + lo] : 0;
                bool found = lo < in.b && compare_vals(in.kind, m, x) == 0;
                x.i = found ? 1 : 0;
                x.null = (!found && (in.sub & 1)) ? 1 : 0;
                break;
            }
            case Op::And:
                st[sp - 2] = and3(st[sp - 2], st[sp - 1]);
                --sp;
                break;
            case Op::Or:
                st[sp - 2] = or3(st[sp - 2], st[sp - 1]);
                --sp;
                break;
            case Op::Not:
                if (!st[sp - 1].null) st[sp - 1].i = st[sp - 1].i ? 0 : 1;
                break;
            case Op::IsNull:
            case Op::IsNotNull: {
                bool is = st[sp - 1].null != 0;
                st[sp - 1].i = (in.op == Op::IsNull) == is ? 1 : 0;
                st[sp - 1].null = 0;
                break;
            }
            case Op::Jump: pc = in.a - 1; break;
            case Op::JumpIfNotTrue: {
                const Val c = st[--sp];
                if (c.null || c.i == 0) pc = in.a - 1;
                break;
            }
            case Op::JumpIfFalseKeep:
                if (!st[sp - 1].null && st[sp - 1].i == 0) pc = in.a - 1;
                break;
            case Op::JumpIfTrueKeep:
                if (!st[sp - 1].null && st[sp - 1].i != 0) pc = in.a - 1;
                break;
            case Op::DatePart: {
                Val& x = st[sp - 1];
                if (x.null) break;
                if (x.i <= kDateNoBegin || x.i >= kDateNoEnd) {
                    if (in.sub == static_cast<uint8_t>(DateField::Year)) return kInfiniteDateYear;
                    x.null = 1;
                    break;
                }
                int y, m, d;
                j2date(static_cast<int>(x.i) + kPostgresEpochJdate, y, m, d);
                if (in.sub == static_cast<uint8_t>(DateField::Year))
                    x.i = y > 0 ? y : y - 1;  // there is no year 0: 1 BC is -1
                else
                    x.i = in.sub == static_cast<uint8_t>(DateField::Month) ? m : d;
                break;
            }
            default: {  // Lookup
                Val& x = st[sp - 1];
                if (x.null) break;
                if (x.i < 0 || x.i >= in.b) return kCodeOutOfRange;
                int64_t code = x.i;
                x.i = pool[in.a + code];
                x.null = (in.sub & 1) ? (pool[in.a + in.b + code] != 0) : 0;
                break;
            }
        }
    }
    out = st[0];
    return kEvalOk;
}

// A filter's verdict: passes only on TRUE. An empty program passes.
SJ_HD int32_t eval_filter(const Instr* code, int32_t n, const int64_t* pool, const RowEnv& env, bool& pass) {
    if (n == 0) {
        pass = true;
        return kEvalOk;
    }
    Val v;
    int32_t e = eval(code, n, pool, env, v);
    pass = e == kEvalOk && !v.null && v.i != 0;
    return e;
}

}  // namespace approx::starjoin
