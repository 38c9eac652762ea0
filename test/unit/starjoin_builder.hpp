// Builds star-join plans' programs by hand for the tests and the benchmark
// (test/unit/starjoin_test.hpp, starjoin_program_test.cpp,
// test/bench/starjoin_bench.cpp): one instruction, and a plan's code and pool.
#pragma once

#include <cstdint>
#include <vector>

#include "core/starjoin/program.hpp"
#include "core/starjoin/starjoin.hpp"

namespace sjtest {

using namespace approx::starjoin;

inline Instr I(Op op, Kind kind = Kind::Int, int32_t a = 0, int64_t b = 0, uint8_t sub = 0, uint8_t width = 8) {
    return Instr{op, kind, sub, width, a, b};
}

// Appends programs and pool entries to a plan.
struct Builder {
    Plan& plan;
    ProgramRef add(const std::vector<Instr>& code) {
        ProgramRef r{static_cast<int32_t>(plan.code.size()), static_cast<int32_t>(code.size())};
        plan.code.insert(plan.code.end(), code.begin(), code.end());
        return r;
    }
    int32_t pool(const std::vector<int64_t>& v) {
        int32_t at = static_cast<int32_t>(plan.pool.size());
        plan.pool.insert(plan.pool.end(), v.begin(), v.end());
        return at;
    }
};

}  // namespace sjtest
