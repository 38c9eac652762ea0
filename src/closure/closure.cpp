// SQL glue for the transitive closure: transitive_closure, reachability_count,
// reachable and their settings. Reads the edge query, calls approx::closure,
// streams the result into a tuplestore.
#include "closure/closure.h"

#include "service/service.h"

#include "runtime/runtime.h"
#include "readers/query_reader.h"
#include "readers/relation_reader.h"

extern "C" {
#include "utils/guc.h"
#include "utils/tuplestore.h"
}

#include "core/closure.hpp"

namespace cl = approx::closure;

// ---- settings ----------------------------------------------------------------------------

static int max_kb_setting = 4 * 1024 * 1024;  // 4 GB
static int algorithm_setting = static_cast<int>(cl::Algorithm::Auto);

static const struct config_enum_entry algorithm_options[] = {
    {"auto", static_cast<int>(cl::Algorithm::Auto), false},
    {"blocked", static_cast<int>(cl::Algorithm::Blocked), false},
    {"condensed", static_cast<int>(cl::Algorithm::Condensed), false},
    {"star", static_cast<int>(cl::Algorithm::Star), false},
    {nullptr, 0, false},
};

void closure_init(void) {
    DefineCustomIntVariable("approx_gpu.closure_max_memory",
                            "Largest closure bit matrix (host or GPU) a closure call may allocate.",
                            "The matrix needs about n^2 / 8 bytes for n vertices (n strongly connected components "
                            "when the graph is condensed); a call that needs more fails with SQLSTATE 54000.",
                            &max_kb_setting, 4 * 1024 * 1024, 1, INT_MAX, PGC_SUSET, GUC_UNIT_KB, nullptr, nullptr,
                            nullptr);
    DefineCustomEnumVariable("approx_gpu.closure_algorithm",
                             "How closures are computed: auto, blocked, condensed or star.",
                             "blocked closes the vertex bit matrix by blocked Floyd-Warshall; condensed (and auto) "
                             "contracts strongly connected components first and closes their DAG; star runs the "
                             "paper's WARSHALL-adapt on the STAR bit-slice machine (slower, same result).",
                             &algorithm_setting, static_cast<int>(cl::Algorithm::Auto), algorithm_options, PGC_USERSET,
                             0, nullptr, nullptr, nullptr);
}

static cl::Options closure_options() {
    cl::Options opt;
    opt.algorithm = static_cast<cl::Algorithm>(algorithm_setting);
    opt.max_bytes = static_cast<int64_t>(max_kb_setting) * 1024;
    return opt;
}

// ---- input -------------------------------------------------------------------------------

struct EdgeInput {
    const int64_t* src;
    const int64_t* dst;
    int64 n;
    int64 skipped;
    double ms_read;
    QueryColumns columns;
    int next_arg;  // the first argument after the edges
};

// The edges: `edges_query` (argument 0), or the table `edges` with its
// src_column and dst_column (arguments 0-2, read by the relation reader).
// Two integer columns; rows with a NULL endpoint skipped (and counted).
static EdgeInput read_edges(FunctionCallInfo fcinfo, const char* fn, bool relation) {
    static const ColumnKind kinds[2] = {ColumnKind::Integer, ColumnKind::Integer};
    static const char* const names[2] = {"src", "dst"};
    static const char* const args[2] = {"src_column", "dst_column"};
    QueryColumns c;
    if (relation) {
        const char* cols[2] = {NameStr(*PG_GETARG_NAME(1)), NameStr(*PG_GETARG_NAME(2))};
        c = read_relation_columns(fn, "edges", PG_GETARG_OID(0), 2, cols, args, kinds, false);
    } else {
        char* query = text_to_cstring(PG_GETARG_TEXT_PP(0));
        c = read_query_columns(fn, "edges_query", query, 2, kinds, names, false);
    }
    EdgeInput e = {c.ints[0], c.ints[1], c.rows, c.rows_skipped, c.ms_read, c, relation ? 3 : 1};
    if (e.n == 0) e.src = e.dst = nullptr;
    return e;
}

static void record_edges_read(const EdgeInput& e) {
    const QueryColumns* inputs[1] = {&e.columns};
    record_read(inputs, 1);
}

// ---- results -------------------------------------------------------------------------------

// The engine's closure outlives one engine call (pairs are pulled chunk by
// chunk); a reset callback on the per-query context frees it when an ERROR
// (or a cancel) leaves the function early.
struct ResultHolder {
    cl::Result* result;
    MemoryContextCallback callback;
};

static void release_holder(void* arg) {
    ResultHolder* h = static_cast<ResultHolder*>(arg);
    cl::release(h->result);  // noexcept; frees host and device memory
    h->result = nullptr;
}

static constexpr size_t kChunk = 65536;

static Datum closure_pairs(FunctionCallInfo fcinfo, bool relation) {
    const char* fn = "transitive_closure";
    EdgeInput e = read_edges(fcinfo, fn, relation);
    cl::Options opt = closure_options();
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);

    ResultHolder* h = static_cast<ResultHolder*>(MemoryContextAllocZero(rsinfo->econtext->ecxt_per_query_memory,
                                                                        sizeof(ResultHolder)));
    h->callback.func = release_holder;
    h->callback.arg = h;
    MemoryContextRegisterResetCallback(rsinfo->econtext->ecxt_per_query_memory, &h->callback);

    gpu_service_register_session();  // the result may stay in the GPU service; freed there if this backend exits
    approx::Status st = run_engine(fn, e.skipped, e.ms_read, [&](const approx::ExecContext& ctx) {
        return cl::compute(e.src, e.dst, static_cast<size_t>(e.n), opt, ctx, &h->result);
    });
    record_edges_read(e);
    check_engine_result(st, fn);

    int64* src = static_cast<int64*>(palloc(kChunk * sizeof(int64)));
    int64* dst = static_cast<int64*>(palloc(kChunk * sizeof(int64)));
    Datum values[2];
    bool nulls[2] = {false, false};
    for (;;) {
        size_t n = 0;
        st = cl::next_pairs(h->result, src, dst, kChunk, n);
        if (!st.ok()) {
            release_holder(h);
            check_engine_result(st, fn);
        }
        if (n == 0) break;
        for (size_t i = 0; i < n; ++i) {
            values[0] = Int64GetDatum(src[i]);
            values[1] = Int64GetDatum(dst[i]);
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
        CHECK_FOR_INTERRUPTS();
    }
    release_holder(h);
    return (Datum)0;
}

static Datum closure_count(FunctionCallInfo fcinfo, bool relation) {
    const char* fn = "reachability_count";
    EdgeInput e = read_edges(fcinfo, fn, relation);
    cl::Options opt = closure_options();
    int64_t pairs = 0;
    approx::Status st = run_engine(fn, e.skipped, e.ms_read, [&](const approx::ExecContext& ctx) {
        return cl::count_pairs(e.src, e.dst, static_cast<size_t>(e.n), opt, ctx, pairs);
    });
    record_edges_read(e);
    check_engine_result(st, fn);
    PG_RETURN_INT64(pairs);
}

static Datum closure_reachable(FunctionCallInfo fcinfo, bool relation) {
    const char* fn = "reachable";
    EdgeInput e = read_edges(fcinfo, fn, relation);
    int64 source = PG_GETARG_INT64(e.next_arg);
    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);  // a scalar result: the executor's descriptor
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    // at most 2 n distinct vertices
    size_t cap = static_cast<size_t>(2 * e.n + 1);
    int64* out = static_cast<int64*>(MemoryContextAllocHuge(CurrentMemoryContext, cap * sizeof(int64)));
    size_t n = 0;
    approx::Status st = run_engine(fn, e.skipped, e.ms_read, [&](const approx::ExecContext& ctx) {
        return cl::reachable(e.src, e.dst, static_cast<size_t>(e.n), source, ctx, out, cap, n);
    });
    record_edges_read(e);
    check_engine_result(st, fn);
    Datum value;
    bool null = false;
    for (size_t i = 0; i < n; ++i) {
        value = Int64GetDatum(out[i]);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &null);
    }
    return (Datum)0;
}

APPROX_FUNCTION(approx_gpu_transitive_closure) { return closure_pairs(fcinfo, false); }
APPROX_FUNCTION(approx_gpu_transitive_closure_relation) { return closure_pairs(fcinfo, true); }
APPROX_FUNCTION(approx_gpu_reachability_count) { return closure_count(fcinfo, false); }
APPROX_FUNCTION(approx_gpu_reachability_count_relation) { return closure_count(fcinfo, true); }
APPROX_FUNCTION(approx_gpu_reachable) { return closure_reachable(fcinfo, false); }
APPROX_FUNCTION(approx_gpu_reachable_relation) { return closure_reachable(fcinfo, true); }
