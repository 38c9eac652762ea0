// Status: the value every engine call returns instead of throwing.
//
// Trivially destructible on purpose (a fixed char buffer, no std::string), so
// the glue may keep one alive while it calls ereport, which longjmps and would
// skip destructors.
// Engine code (src/core, cuda) never includes PostgreSQL headers; test/run
// checks that with grep.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace approx {

enum class StatusCode {
    Ok = 0,
    InvalidArgument,  // 22023 invalid_parameter_value
    DataException,    // 22000 data_exception (NaN, constant data, ...)
    OutOfRange,       // 22003 numeric_value_out_of_range
    ProgramLimit,     // 54000 program_limit_exceeded (value would pass 1 GB, d too large)
    OutOfMemory,      // 53200 out_of_memory (host)
    GpuOutOfMemory,   // 53200, but `auto` may retry on the CPU
    NoGpu,            // 55000 object_not_in_prerequisite_state
    Cancelled,        // 57014 query_canceled (the glue lets CHECK_FOR_INTERRUPTS raise it)
    GpuError,         // XX000 internal_error from the CUDA runtime
    Internal,         // XX000 internal_error
    ServiceBusy,      // 53200: the GPU service's queue timed out (`auto` runs on the CPU)
    ServiceDown,      // 58000 system_error: the GPU service exited (`auto` runs on the CPU)
    NotServed,        // not an error: the call does not fit the service; run it in the backend
    DivisionByZero,   // 22012 division_by_zero
    Declined,         // not an error: the engine cannot answer this input (a state budget, a value it
                      // cannot represent); the caller runs its general plan (e.g. PostgreSQL's)
};

struct Status {
    StatusCode code = StatusCode::Ok;
    char message[320] = {0};

    bool ok() const { return code == StatusCode::Ok; }

    static Status Ok() { return Status(); }

    static Status Error(StatusCode code, const char* fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
    {
        Status s;
        s.code = code;
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(s.message, sizeof s.message, fmt, ap);
        va_end(ap);
        return s;
    }
};

// Return early from the enclosing function when a Status-returning call fails.
#define APPROX_TRY(expr)                   \
    do {                                   \
        ::approx::Status st_try_ = (expr); \
        if (!st_try_.ok()) return st_try_; \
    } while (0)

}  // namespace approx
