// The engines' execution context for unit tests that run the CPU engines.
#pragma once

#include "core/exec.hpp"

inline approx::ExecContext cpu_ctx() {
    approx::ExecContext ctx;
    ctx.mode = approx::DeviceMode::Cpu;
    ctx.cpu_threads = 2;
    return ctx;
}
