// Aggregate support helpers (aggregate_state.h).
#include "runtime/aggregate_state.h"

extern "C" {
#include "nodes/primnodes.h"
#include "utils/lsyscache.h"
}

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* fn) {
    MemoryContext mcxt;
    if (!AggCheckCallContext(fcinfo, &mcxt))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s called in non-aggregate context", fn)));
    return mcxt;
}

const char* calling_aggregate_name(FunctionCallInfo fcinfo, const char* fallback) {
    Aggref* aggref = AggGetAggref(fcinfo);
    if (aggref == nullptr) return fallback;
    char* name = get_func_name(aggref->aggfnoid);
    return name != nullptr ? name : fallback;
}

void double_column_init(DoubleColumn* c) {
    c->data = nullptr;
    c->n = 0;
    c->capacity = 0;
}

void double_column_append(DoubleColumn* c, MemoryContext mcxt, const double* values, int64 count) {
    if (count <= 0) return;
    if (c->n + count > c->capacity) {
        int64 cap = c->capacity > 0 ? c->capacity : 1024;
        while (cap < c->n + count) cap *= 2;
        Size bytes = static_cast<Size>(cap) * sizeof(double);
        c->data = static_cast<double*>(c->data == nullptr ? MemoryContextAllocHuge(mcxt, bytes)
                                                          : repalloc_huge(c->data, bytes));
        c->capacity = cap;
    }
    memcpy(c->data + c->n, values, sizeof(double) * count);
    c->n += count;
}
