// The paper's sequential baseline, for the closure benchmark and its unit
// test (not part of the library): textbook Warshall on an n x n byte matrix
// (a[i * n + j] != 0 for an edge), closed in place on one thread.
#pragma once

#include <cstdint>

#include "core/exec.hpp"

namespace approx::closure {

inline Status warshall_sequential(uint8_t* a, int64_t n, const ExecContext& ctx) {
    return guarded([&]() -> Status {
        for (int64_t k = 0; k < n; ++k) {
            if ((k & 63) == 0 && ctx.cancelled()) return cancelled_status();
            const uint8_t* rk = a + k * n;
            for (int64_t i = 0; i < n; ++i) {
                uint8_t* ri = a + i * n;
                if (ri[k])
                    for (int64_t j = 0; j < n; ++j) ri[j] |= rk[j];
            }
        }
        return Status::Ok();
    });
}

}  // namespace approx::closure
