// The star-join engine (issue 39, item 2): one fused pass over a fact table
// (a sample) joined to dimension tables by equality on a unique key, with
// filters, GROUP BY and per (group, stratum, measure) the moments that
// core/sample_estimate.hpp turns into estimates and intervals. CPU engine
// (starjoin_cpu.cpp) and GPU engine (cuda/starjoin.cu) behind one call,
// run(). Plain C++, no PostgreSQL: the glue compiles SQL expressions into
// program.hpp's programs and maps the Status to ereport.
//
// What run() computes, in SQL terms:
//   SELECT g_1, ..., g_p, stratum, moments(v_1), ..., moments(v_m), count(*)
//   FROM fact f JOIN d_1 ON f.fk_1 = d_1.key AND filter_1(d_1) ... JOIN d_k ...
//   WHERE fact_filter(f, d_*) GROUP BY g_1, ..., g_p, stratum
// 1. Dimension key maps, per query: each dimension row evaluates its filter
//    (an error there is the run's error, as a scan's qual) and, if it passes,
//    its output programs (group-key codes, values an aggregate reads); an
//    output's error is kept with the row and raised only when a fact row that
//    passes every join and filter uses that row. Keys must be unique (a
//    repeat is InvalidArgument; NULL keys join nothing). key -> row is a dense
//    array over [min, max] when max - min < 4 x rows + 1024 (Crystal's
//    perfect hash), else a hash table (the GPU: hashjoin_table.cuh).
// 2. The fact pass: per fact row, the fact filter (before the probes when it
//    reads no dimension output, else after), then per dimension the foreign
//    key probes its map (NULL, a miss or a filtered-out row reject the row:
//    inner joins). A row that passes gets its group key (the tuple of the
//    group programs' values, NULL a value of its own), its stratum (a fact
//    column, int32 in [0, n_strata); none: one stratum) and per measure a
//    value (NULL: skipped for that measure).
// 3. Groups are numbered by their key packed in mixed radix over each part's
//    [min, max] among the passing rows (+1 for NULL): a dense array of
//    groups when that product is at most 4 x passing rows + 1024 and fits the
//    budget, else the distinct keys found by sorting (the GPU: a hash table
//    from packed key to group). Either way groups come out in ascending key
//    order, part by part, NULL after every value.
// 4. Moments in two passes (n, sum, nonzero; then central sums about
//    mean = sum / n), so they equal sample::add() one value at a time up to
//    rounding (1e-12 relative on benign data).
// Errors: a program's runtime error (program.hpp's EvalError) is the first
// one in fact-row order (dimension rows for the dimension filters), on both
// engines: OutOfRange (22003), DivisionByZero (22012), InvalidArgument (bad
// dictionary code or stratum). The state over the budget, and values the
// engine cannot represent, return Declined (not an error: run the general
// plan). A malformed plan is InvalidArgument before any row is read.
#pragma once

#include <cstdint>
#include <vector>

#include "core/exec.hpp"
#include "core/sample_estimate.hpp"
#include "core/starjoin/program.hpp"

namespace approx::starjoin {

struct DimensionPlan {
    int32_t key_column = 0;   // the dimension's key column (an Int column: unique values)
    int32_t fact_column = 0;  // the fact's foreign key column (an Int column)
    ProgramRef filter;        // Bool over the dimension's columns; none: every row passes
    int32_t n_outputs = 0;
    Kind output_kinds[kMaxDimOutputs] = {};  // each output program's result kind
    ProgramRef outputs[kMaxDimOutputs];      // over the dimension's columns; fact programs read them (DimOut)
};

// The fixed part of a plan: trivially copyable (serialize() writes it as it is).
struct PlanShape {
    ProgramRef fact_filter;  // Bool over the fact row (columns and DimOut); none: every row passes
    int32_t n_dims = 0;
    DimensionPlan dims[kMaxDims];
    int32_t n_group_parts = 0;
    ProgramRef group_parts[kMaxGroupParts];  // Int programs over the fact row (GROUP BY expressions)
    int32_t n_measures = 0;
    ProgramRef measures[kMaxMeasures];  // Float programs over the fact row; length 0: COUNT(*) (1 per row)
    int32_t stratum_column = -1;        // fact column (Int32 or Code) holding the stratum; -1: one stratum
    int32_t n_strata = 1;
    // Bytes the (group x stratum x measure) state may take; more: Declined.
    int64_t state_budget = int64_t(256) << 20;
};

// A plan: the shape plus the code and the constant pool its ProgramRefs index.
struct Plan : PlanShape {
    std::vector<Instr> code;
    std::vector<int64_t> pool;
};

// The plan as bytes (the GPU service's request) and back; deserialize checks
// sizes only (run() validates the programs).
void serialize(const Plan& plan, std::vector<uint8_t>& out);
Status deserialize(const uint8_t* bytes, size_t n, Plan& plan);

// One column: host values (rows x the type's width) and/or a device copy
// (the GPU engine reads `device` instead of uploading `data`; the CPU engine
// needs `data`). NULL bitmaps: bit r % 8 of byte r / 8 set = row r is NULL;
// null pointer: no NULLs.
struct Column {
    ColType type = ColType::Int64;
    const void* data = nullptr;
    const uint8_t* nulls = nullptr;
    const void* device = nullptr;
    const uint8_t* device_nulls = nullptr;
};

struct Table {
    const Column* columns = nullptr;
    int32_t n_columns = 0;
    int64_t rows = 0;
};

struct Inputs {
    Table fact;
    Table dims[kMaxDims];  // dims[d] is the table of plan.dims[d]
};

// What a dimension's key map held.
struct DimensionInfo {
    int64_t rows = 0;     // dimension rows
    int64_t passing = 0;  // rows whose filter passed (the bound on the groups a dimension allows)
    bool dense = false;   // key map: dense array (else hash table)
    int64_t key_min = 0, key_max = 0;
};

struct Result {
    int32_t n_parts = 0, n_strata = 0, n_measures = 0;
    int64_t groups = 0;                   // groups with at least one joined row
    std::vector<int64_t> keys;            // groups x n_parts, ascending (see 3. above)
    std::vector<uint8_t> key_nulls;       // groups x n_parts: 1 = that part is NULL
    std::vector<int64_t> rows;            // groups x n_strata: joined fact rows
    std::vector<sample::Moments> moments; // (group x n_strata + stratum) x n_measures + measure
    int64_t joined_rows = 0;              // fact rows that passed everything
    bool dense_groups = false;            // groups numbered by a dense array (else sorted distinct keys)
    DimensionInfo dims[kMaxDims];

    const sample::Moments& at(int64_t g, int32_t s, int32_t m) const {
        return moments[static_cast<size_t>((g * n_strata + s) * n_measures + m)];
    }
};

// Validates the plan against the inputs, then runs it on the device ctx
// picks (dispatch(); the GPU engine runs on the calling thread's stream with
// the runtime's device buffers, checks cancellation between passes, and under
// `auto` a GPU out-of-memory reruns on the CPU). ctx.stats gets the op
// "starjoin" and the timings.
Status run(const Plan& plan, const Inputs& in, const ExecContext& ctx, Result& out);

}  // namespace approx::starjoin
