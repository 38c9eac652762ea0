// What the aggregates' support functions (transition, combine, final) share:
// the aggregate's memory context, the name of the aggregate they run for, and
// a growable float8 column for states that buffer their input.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
}

// The aggregate memory context, or an ERROR if called outside an aggregate.
MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* fn);

// The SQL name of the aggregate a support function (transition, combine,
// final) runs for, so that a function shared by several aggregates reports
// errors as the one the user called; `fallback` outside an aggregate call.
const char* calling_aggregate_name(FunctionCallInfo fcinfo, const char* fallback);

// A growable float8 column in one MemoryContext (no per-row palloc; huge
// allocations past 1 GB).
struct DoubleColumn {
    double* data;
    int64 n;
    int64 capacity;
};
void double_column_init(DoubleColumn* c);
void double_column_append(DoubleColumn* c, MemoryContext mcxt, const double* values, int64 count);
