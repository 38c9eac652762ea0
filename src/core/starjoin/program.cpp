// The star-join programs' validator and error messages (program.hpp).
//
// validate_program() interprets the program abstractly: the kinds on the
// stack at every instruction, merged at jump targets (forward jumps only, so
// one pass in code order sees every path into an instruction before it).
#include <vector>

#include "core/starjoin/interp.hpp"

namespace approx::starjoin {

Status eval_error_status(int32_t error) {
    switch (error) {
        case kEvalOk: return Status::Ok();
        case kSmallintOutOfRange: return Status::Error(StatusCode::OutOfRange, "smallint out of range");
        case kIntegerOutOfRange: return Status::Error(StatusCode::OutOfRange, "integer out of range");
        case kBigintOutOfRange: return Status::Error(StatusCode::OutOfRange, "bigint out of range");
        case kFloatOverflow: return Status::Error(StatusCode::OutOfRange, "value out of range: overflow");
        case kFloatUnderflow: return Status::Error(StatusCode::OutOfRange, "value out of range: underflow");
        case kDivisionByZero: return Status::Error(StatusCode::DivisionByZero, "division by zero");
        case kCodeOutOfRange:
            return Status::Error(StatusCode::InvalidArgument, "a dictionary code lies outside its lookup table");
        case kInfiniteDateYear:
            return Status::Error(StatusCode::Declined, "the year of an infinite date is not an integer");
        case kBadStratum:
            return Status::Error(StatusCode::InvalidArgument, "a stratum is NULL or outside [0, n_strata)");
        default: return Status::Error(StatusCode::Internal, "unknown evaluation error %d", static_cast<int>(error));
    }
}

namespace {

struct State {
    bool valid = false;
    int depth = 0;
    Kind k[kMaxStack] = {};
    bool same(const State& o) const {
        if (depth != o.depth) return false;
        for (int i = 0; i < depth; ++i)
            if (k[i] != o.k[i]) return false;
        return true;
    }
};

const char* kind_name(Kind k) { return k == Kind::Int ? "int" : (k == Kind::Float ? "float" : "bool"); }

}  // namespace

Status validate_program(const Instr* code, int32_t code_size, const int64_t* pool, int32_t pool_size,
                        ProgramRef ref, const ProgramScope& scope, Kind result, const char* what, bool* uses_dims) {
    if (uses_dims) *uses_dims = false;
    if (ref.length == 0) return Status::Ok();
    if (ref.first < 0 || ref.length < 0 || ref.length > kMaxProgram || ref.first > code_size - ref.length)
        return Status::Error(StatusCode::InvalidArgument, "%s: program [%d, +%d) outside the code (%d instructions)",
                             what, ref.first, ref.length, code_size);
    const Instr* p = code + ref.first;
    const int32_t n = ref.length;
    std::vector<State> at(static_cast<size_t>(n) + 1);
    State cur;
    cur.valid = true;
#define SJ_BAD(...) return Status::Error(StatusCode::InvalidArgument, __VA_ARGS__)
    auto merge = [&](int32_t target, const State& s) -> bool {
        State& t = at[static_cast<size_t>(target)];
        if (!t.valid) {
            t = s;
            return true;
        }
        return t.same(s);
    };
    for (int32_t pc = 0; pc <= n; ++pc) {
        State& here = at[static_cast<size_t>(pc)];
        if (cur.valid && here.valid && !here.same(cur))
            SJ_BAD("%s: instruction %d is reached with different stacks", what, pc);
        if (!cur.valid) cur = here;
        if (pc == n) break;
        if (!cur.valid) continue;  // unreachable code: never executed
        const Instr& in = p[pc];
        auto pop = [&](Kind want) -> bool {
            if (cur.depth < 1 || cur.k[cur.depth - 1] != want) return false;
            --cur.depth;
            return true;
        };
        auto push = [&](Kind k) -> bool {
            if (cur.depth >= kMaxStack) return false;
            cur.k[cur.depth++] = k;
            return true;
        };
        const bool num = in.kind == Kind::Int || in.kind == Kind::Float;
        const bool width_ok = in.width == 2 || in.width == 4 || in.width == 8;
        bool ok = static_cast<uint8_t>(in.kind) <= static_cast<uint8_t>(Kind::Bool);
        const int op = static_cast<int>(in.op);
        if (op >= static_cast<int>(Op::Count_)) SJ_BAD("%s: instruction %d has unknown op %d", what, pc, op);
        auto target_ok = [&]() { return in.a > pc && in.a <= n; };
        switch (in.op) {
            case Op::Col:
                if (in.a < 0 || in.a >= scope.n_columns)
                    SJ_BAD("%s: instruction %d reads column %d of %d", what, pc, in.a, scope.n_columns);
                ok = push(column_kind(scope.columns[in.a]));
                break;
            case Op::DimOut:
                if (!scope.dim_output_kinds || in.a < 0 || in.a >= scope.n_dims || in.b < 0 ||
                    in.b >= scope.dim_outputs[in.a])
                    SJ_BAD("%s: instruction %d reads dimension output (%d, %lld), which this program cannot see",
                           what, pc, in.a, static_cast<long long>(in.b));
                if (uses_dims) *uses_dims = true;
                ok = push(scope.dim_output_kinds[in.a][in.b]);
                break;
            case Op::ConstInt: ok = push(Kind::Int); break;
            case Op::ConstFloat: ok = push(Kind::Float); break;
            case Op::ConstBool: ok = (in.b == 0 || in.b == 1) && push(Kind::Bool); break;
            case Op::Null: ok = ok && push(in.kind); break;
            case Op::Add:
            case Op::Sub:
            case Op::Mul:
            case Op::Div:
            case Op::Mod:
                ok = num && (in.kind == Kind::Float ? in.op != Op::Mod : width_ok) && pop(in.kind) && pop(in.kind) &&
                     push(in.kind);
                break;
            case Op::Neg: ok = num && (in.kind == Kind::Float || width_ok) && pop(in.kind) && push(in.kind); break;
            case Op::IntToFloat: ok = pop(Kind::Int) && push(Kind::Float); break;
            case Op::FloatToInt: ok = width_ok && pop(Kind::Float) && push(Kind::Int); break;
            case Op::IntNarrow: ok = width_ok && pop(Kind::Int) && push(Kind::Int); break;
            case Op::Cmp:
                ok = ok && in.sub <= static_cast<uint8_t>(CmpOp::Ge) && pop(in.kind) && pop(in.kind) &&
                     push(Kind::Bool);
                break;
            case Op::Between: ok = num && pop(in.kind) && pop(in.kind) && pop(in.kind) && push(Kind::Bool); break;
            case Op::In:
                if (!num || in.sub > 1 || in.a < 0 || in.b < 0 || in.b > pool_size - static_cast<int64_t>(in.a))
                    SJ_BAD("%s: instruction %d: IN list [%d, +%lld) outside the constant pool (%d)", what, pc, in.a,
                           static_cast<long long>(in.b), pool_size);
                for (int64_t i = 1; i < in.b; ++i) {
                    int64_t x = pool[in.a + i - 1], y = pool[in.a + i];
                    bool sorted = in.kind == Kind::Int ? x <= y : float_cmp(bits_float(x), bits_float(y)) <= 0;
                    if (!sorted) SJ_BAD("%s: instruction %d: IN list not sorted ascending", what, pc);
                }
                ok = pop(in.kind) && push(Kind::Bool);
                break;
            case Op::And:
            case Op::Or: ok = pop(Kind::Bool) && pop(Kind::Bool) && push(Kind::Bool); break;
            case Op::Not: ok = pop(Kind::Bool) && push(Kind::Bool); break;
            case Op::IsNull:
            case Op::IsNotNull: ok = cur.depth >= 1 && (--cur.depth, push(Kind::Bool)); break;
            case Op::Jump:
                if (!target_ok()) SJ_BAD("%s: instruction %d jumps to %d (forward only, at most %d)", what, pc, in.a, n);
                if (!merge(in.a, cur)) SJ_BAD("%s: jump %d reaches %d with a different stack", what, pc, in.a);
                cur.valid = false;
                continue;
            case Op::JumpIfNotTrue:
            case Op::JumpIfFalseKeep:
            case Op::JumpIfTrueKeep:
                if (!target_ok()) SJ_BAD("%s: instruction %d jumps to %d (forward only, at most %d)", what, pc, in.a, n);
                if (in.op == Op::JumpIfNotTrue ? !pop(Kind::Bool) : (cur.depth < 1 || cur.k[cur.depth - 1] != Kind::Bool))
                    SJ_BAD("%s: instruction %d: a conditional jump needs a bool on the stack", what, pc);
                if (!merge(in.a, cur)) SJ_BAD("%s: jump %d reaches %d with a different stack", what, pc, in.a);
                break;
            case Op::DatePart:
                ok = in.sub <= static_cast<uint8_t>(DateField::Day) && pop(Kind::Int) && push(Kind::Int);
                break;
            case Op::Lookup: {
                int64_t entries = (in.sub & 1) ? 2 * in.b : in.b;
                if (!ok || in.sub > 1 || in.a < 0 || in.b < 0 || in.b > (int64_t(1) << 31) ||
                    entries > pool_size - static_cast<int64_t>(in.a))
                    SJ_BAD("%s: instruction %d: lookup table [%d, +%lld) outside the constant pool (%d)", what, pc,
                           in.a, static_cast<long long>(entries), pool_size);
                ok = pop(Kind::Int) && push(in.kind);
                break;
            }
            default: ok = false;
        }
        if (!ok)
            SJ_BAD("%s: instruction %d (op %d, kind %s): wrong operands, kind, width or stack depth (max %d)", what, pc,
                   op, kind_name(in.kind), kMaxStack);
    }
    if (!cur.valid || cur.depth != 1 || cur.k[0] != result)
        SJ_BAD("%s: the program must leave one %s value (it leaves %d values%s%s)", what, kind_name(result),
               cur.valid ? cur.depth : 0, cur.valid && cur.depth == 1 ? " of kind " : "",
               cur.valid && cur.depth == 1 ? kind_name(cur.k[0]) : "");
#undef SJ_BAD
    return Status::Ok();
}

}  // namespace approx::starjoin
