// SQL glue for hashed joins: hash_join (every matching pair) and
// hash_join_count (the cardinality). Each reads two inner queries of (key,
// value) integer columns, or two tables' columns through the relation reader,
// calls approx::hashjoin and builds the result.
//
// NULLs follow JOIN ... USING (key): a NULL key never matches (the row is
// skipped and counted); a NULL value does not stop its row from joining and
// comes out as NULL. A side with NULL values goes to the engine without its
// values, so that the engine carries row indices, and the values (or NULLs)
// are looked up here.
#include "runtime/runtime.h"

#include "readers/query_reader.h"
#include "readers/relation_reader.h"

extern "C" {
#include "utils/tuplestore.h"
}

#include "core/hashjoin.hpp"

namespace hj = approx::hashjoin;

static const ColumnKind kKinds[2] = {ColumnKind::Integer, ColumnKind::Integer};
static const char* const kNames[2] = {"key", "value"};
static const bool kNullable[2] = {false, true};

// Both inputs, palloc'd columns (nothing here has a destructor).
struct JoinInputs {
    QueryColumns build;
    QueryColumns probe;
};

// How a call names its inputs.
enum class InputForm {
    Queries,       // (build_query text, probe_query text)
    Relations,     // (build, build_key_column, build_value_column, probe, probe_key_column, probe_value_column)
    RelationKeys,  // (build, build_key_column, probe, probe_key_column): keys only
};

static void read_inputs(FunctionCallInfo fcinfo, const char* fn, InputForm form, JoinInputs* in) {
    if (form == InputForm::Queries) {
        char* build_query = text_to_cstring(PG_GETARG_TEXT_PP(0));
        char* probe_query = text_to_cstring(PG_GETARG_TEXT_PP(1));
        in->build = read_query_columns(fn, "build_query", build_query, 2, kKinds, kNames, false, kNullable);
        in->probe = read_query_columns(fn, "probe_query", probe_query, 2, kKinds, kNames, false, kNullable);
        return;
    }
    // Relations: 3 arguments a side, or 2 when only the keys are read.
    const int per_side = form == InputForm::Relations ? 3 : 2;
    static const char* const kBuildArgs[2] = {"build_key_column", "build_value_column"};
    static const char* const kProbeArgs[2] = {"probe_key_column", "probe_value_column"};
    const char* build_cols[2];
    const char* probe_cols[2];
    for (int c = 0; c < per_side - 1; ++c) {
        build_cols[c] = NameStr(*PG_GETARG_NAME(1 + c));
        probe_cols[c] = NameStr(*PG_GETARG_NAME(per_side + 1 + c));
    }
    in->build = read_relation_columns(fn, "build", PG_GETARG_OID(0), per_side - 1, build_cols, kBuildArgs, kKinds,
                                      false, kNullable, true);
    in->probe = read_relation_columns(fn, "probe", PG_GETARG_OID(per_side), per_side - 1, probe_cols, kProbeArgs,
                                      kKinds, false, kNullable, true);
}

// A side whose values hold a NULL passes row indices instead (values = nullptr).
static bool values_by_row(const QueryColumns& q) { return q.null_counts[1] > 0; }

static hj::JoinSide join_side(const QueryColumns& q) {
    hj::JoinSide s;
    s.keys = q.ints[0];
    s.values = values_by_row(q) ? nullptr : q.ints[1];
    s.n = static_cast<size_t>(q.rows);
    return s;
}

// last_run(): what each side contributed.
static void record_sides(const JoinInputs* in) {
    approx::RunStats& s = last_run_stats();
    s.add("build_rows", static_cast<double>(in->build.rows));
    s.add("probe_rows", static_cast<double>(in->probe.rows));
    s.add("build_rows_skipped", static_cast<double>(in->build.rows_skipped));
    s.add("probe_rows_skipped", static_cast<double>(in->probe.rows_skipped));
    s.add("build_null_values", static_cast<double>(in->build.null_counts[1]));
    s.add("probe_null_values", static_cast<double>(in->probe.null_counts[1]));
}

static approx::Status run_join_engine(const char* fn, const JoinInputs* in, double ms_read, hj::JoinSink sink,
                                      void* user, int64* matches) {
    hj::JoinSide build = join_side(in->build), probe = join_side(in->probe);
    int64 skipped = in->build.rows_skipped + in->probe.rows_skipped;
    hj::JoinInfo info;
    approx::Status st = run_engine(fn, skipped, ms_read, [&](const approx::ExecContext& ctx) {
        approx::ExecContext c = ctx;  // the columns the reader uploaded while reading
        c.staged[0] = staged_columns(&in->build);
        c.staged[1] = staged_columns(&in->probe);
        return sink ? hj::join(build, probe, sink, user, c, info) : hj::join_count(build, probe, c, info);
    });
    *matches = info.matches;
    record_sides(in);
    const QueryColumns* sides[2] = {&in->build, &in->probe};
    record_read(sides, 2);
    release_staged(&in->build);
    release_staged(&in->probe);
    return st;
}

static Datum join_count(FunctionCallInfo fcinfo, InputForm form) {
    const char* fn = "hash_join_count";
    double t0 = glue_clock_ms();
    JoinInputs* in = static_cast<JoinInputs*>(palloc0(sizeof(JoinInputs)));
    read_inputs(fcinfo, fn, form, in);
    int64 matches = 0;
    approx::Status st = run_join_engine(fn, in, glue_clock_ms() - t0, nullptr, nullptr, &matches);
    check_engine_result(st, fn);
    PG_RETURN_INT64(matches);
}

APPROX_FUNCTION(approx_gpu_hash_join_count) { return join_count(fcinfo, InputForm::Queries); }
APPROX_FUNCTION(approx_gpu_hash_join_count_relations) { return join_count(fcinfo, InputForm::RelationKeys); }

// ---- hash_join: rows into the tuplestore of a materialize-mode SRF ---------------------

struct SinkState {
    Tuplestorestate* store;
    TupleDesc desc;
    const JoinInputs* in;
    bool build_by_row;
    bool probe_by_row;
    MemoryContext error_mcxt;
    ErrorData* error;  // an ERROR raised while storing rows, rethrown after the engine returned
};

static inline void output_value(const QueryColumns& q, bool by_row, int64 v, Datum* d, bool* isnull) {
    if (by_row && q.nulls[1][v]) {
        *d = (Datum)0;
        *isnull = true;
        return;
    }
    *d = Int64GetDatum(by_row ? q.ints[1][v] : v);
    *isnull = false;
}

// Called by the engine on this (the backend's) thread. An ERROR must not
// longjmp through the engine's C++ frames: it is caught here, kept, and the
// engine is told to stop; the caller rethrows it once the engine is gone.
static bool tuplestore_sink(void* user, const int64_t* keys, const int64_t* build_values, const int64_t* probe_values,
                            size_t count) {
    SinkState* s = static_cast<SinkState*>(user);
    MemoryContext old = CurrentMemoryContext;
    volatile bool ok = true;
    PG_TRY();
    {
        Datum values[3];
        bool nulls[3];
        for (size_t i = 0; i < count; ++i) {
            values[0] = Int64GetDatum(keys[i]);
            nulls[0] = false;
            output_value(s->in->build, s->build_by_row, build_values[i], &values[1], &nulls[1]);
            output_value(s->in->probe, s->probe_by_row, probe_values[i], &values[2], &nulls[2]);
            tuplestore_putvalues(s->store, s->desc, values, nulls);
        }
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(s->error_mcxt);
        s->error = CopyErrorData();
        FlushErrorState();
        MemoryContextSwitchTo(old);
        ok = false;
    }
    PG_END_TRY();
    return ok;
}

static Datum join_rows(FunctionCallInfo fcinfo, InputForm form) {
    const char* fn = "hash_join";
    double t0 = glue_clock_ms();
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    JoinInputs* in = static_cast<JoinInputs*>(palloc0(sizeof(JoinInputs)));
    read_inputs(fcinfo, fn, form, in);

    SinkState* sink = static_cast<SinkState*>(palloc0(sizeof(SinkState)));
    sink->store = rsinfo->setResult;
    sink->desc = rsinfo->setDesc;
    sink->in = in;
    sink->build_by_row = values_by_row(in->build);
    sink->probe_by_row = values_by_row(in->probe);
    sink->error_mcxt = CurrentMemoryContext;
    int64 matches = 0;
    approx::Status st = run_join_engine(fn, in, glue_clock_ms() - t0, tuplestore_sink, sink, &matches);
    if (sink->error != nullptr) ReThrowError(sink->error);
    check_engine_result(st, fn);
    return (Datum)0;
}

APPROX_FUNCTION(approx_gpu_hash_join) { return join_rows(fcinfo, InputForm::Queries); }
APPROX_FUNCTION(approx_gpu_hash_join_relations) { return join_rows(fcinfo, InputForm::Relations); }
