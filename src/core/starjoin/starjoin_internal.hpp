// Internals of the star-join engine shared by the CPU engine
// (starjoin_cpu.cpp) and the GPU engine (cuda/starjoin.cu): the per-row
// logic (join, filter, group key, stratum, measure), written once as
// __host__ __device__ functions over a FactView of host or device pointers,
// the group layout (mixed radix), the budget, and the engines' entry points.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/starjoin/interp.hpp"
#include "core/starjoin/starjoin.hpp"

namespace approx::starjoin {

// Per dimension row, status: kFiltered (the filter rejected it), kEvalOk, or
// the EvalError its outputs raised (kept until a joined fact row uses it).
constexpr int32_t kFiltered = -1;

// Everything a fact row's evaluation reads (trivially copyable: a kernel
// parameter on the GPU). Pointers are host or device memory.
struct FactView {
    const Instr* code = nullptr;
    const int64_t* pool = nullptr;
    const ColumnView* cols = nullptr;  // the fact's columns
    ProgramRef filter;
    bool filter_first = true;  // the filter reads no dimension output: run it before the probes
    int32_t n_dims = 0;
    int32_t fk_col[kMaxDims] = {};
    const int32_t* dim_status[kMaxDims] = {};  // per dimension row
    const Val* dim_vals[kMaxDims] = {};        // per dimension row, n_out values
    int32_t dim_nout[kMaxDims] = {};
    int32_t n_parts = 0;
    ProgramRef parts[kMaxGroupParts];
    int32_t n_measures = 0;
    ProgramRef measures[kMaxMeasures];
    int32_t stratum_col = -1;
    int32_t n_strata = 1;
};

// Groups numbered by their key in mixed radix: part p's digit is v - min[p]
// (NULL: span[p] - 1, the last digit), part 0 most significant.
struct GroupLayout {
    int32_t n_parts = 0;
    int64_t min[kMaxGroupParts] = {};
    uint64_t span[kMaxGroupParts] = {};
    uint64_t mult[kMaxGroupParts] = {};
    uint8_t has_null[kMaxGroupParts] = {};
    uint64_t product = 1;  // number of possible keys
    bool dense = true;
};

// Min / max / NULL seen of a group part over the joined rows.
struct PartDomain {
    int64_t min = kInt64Max, max = kInt64Min;
    int32_t has_null = 0;
};

// The row's join: its dimension rows' outputs in dv (a probe gives the
// dimension row of a key, or -1). pass = false: rejected. Returns an EvalError.
template <class Probe>
SJ_HD int32_t join_row(const FactView& v, int64_t r, const Probe& probe, const Val** dv, bool& pass) {
    RowEnv env{v.cols, r, dv};
    pass = false;
    if (v.filter_first) {
        bool f;
        int32_t e = eval_filter(v.code + v.filter.first, v.filter.length, v.pool, env, f);
        if (e != kEvalOk || !f) return e;
    }
    for (int32_t d = 0; d < v.n_dims; ++d) {
        Val k = load_column(v.cols[v.fk_col[d]], r);
        if (k.null) return kEvalOk;
        int64_t row = probe(d, k.i);
        if (row < 0) return kEvalOk;
        int32_t st = v.dim_status[d][row];
        if (st == kFiltered) return kEvalOk;
        if (st != kEvalOk) return st;
        dv[d] = v.dim_vals[d] + row * v.dim_nout[d];
    }
    if (!v.filter_first) {
        bool f;
        int32_t e = eval_filter(v.code + v.filter.first, v.filter.length, v.pool, env, f);
        if (e != kEvalOk || !f) return e;
    }
    pass = true;
    return kEvalOk;
}

// The joined row's group parts (Int values) and stratum.
SJ_HD int32_t row_parts(const FactView& v, int64_t r, const Val** dv, Val* parts, int32_t& stratum) {
    RowEnv env{v.cols, r, dv};
    for (int32_t p = 0; p < v.n_parts; ++p) {
        int32_t e = eval(v.code + v.parts[p].first, v.parts[p].length, v.pool, env, parts[p]);
        if (e != kEvalOk) return e;
    }
    stratum = 0;
    if (v.stratum_col >= 0) {
        Val s = load_column(v.cols[v.stratum_col], r);
        if (s.null || s.i < 0 || s.i >= v.n_strata) return kBadStratum;
        stratum = static_cast<int32_t>(s.i);
    }
    return kEvalOk;
}

SJ_HD uint64_t pack_key(const GroupLayout& g, const Val* parts) {
    uint64_t k = 0;
    for (int32_t p = 0; p < g.n_parts; ++p) {
        uint64_t digit = parts[p].null ? g.span[p] - 1 : static_cast<uint64_t>(parts[p].i) - static_cast<uint64_t>(g.min[p]);
        k += digit * g.mult[p];
    }
    return k;
}

// A grouped row's (group, stratum) cell, k its group's index, and its
// dimension rows' outputs in dv (the moments passes re-join the row).
template <class Probe>
SJ_HD uint64_t grouped_cell(const FactView& v, int64_t r, const Probe& probe, uint64_t k, const Val** dv) {
    Val parts[kMaxGroupParts];
    bool ok;
    int32_t s = 0;
    join_row(v, r, probe, dv, ok);
    row_parts(v, r, dv, parts, s);
    return k * static_cast<uint64_t>(v.n_strata) + static_cast<uint64_t>(s);
}

// Measure m of a joined row (COUNT(*): 1).
SJ_HD int32_t measure_value(const FactView& v, int32_t m, int64_t r, const Val** dv, Val& out) {
    if (v.measures[m].length == 0) {
        out.f = 1.0;
        out.null = 0;
        return kEvalOk;
    }
    RowEnv env{v.cols, r, dv};
    return eval(v.code + v.measures[m].first, v.measures[m].length, v.pool, env, out);
}

// First error in row order: (row << 8) | code, the smallest wins.
SJ_HD uint64_t error_word(int64_t row, int32_t code) {
    return (static_cast<uint64_t>(row) << 8) | static_cast<uint64_t>(code);
}
constexpr uint64_t kNoError = ~uint64_t(0);
Status error_word_status(uint64_t word, const char* where);

// Per (group, stratum, measure) accumulator of the two passes.
struct Acc {
    double n, sum, nonzero, m2, m3, m4;
};

// What validation found out about the plan.
struct Prepared {
    bool filter_first = true;
    std::vector<uint8_t> fact_used;              // fact columns some program (or the join) reads
    std::vector<std::vector<uint8_t>> dim_used;  // per dimension, its columns read
};

// The FactView of a plan over the fact's columns `cols`, with the plan's
// code and pool at `code` and `pool` (host or device copies); dim(d, status,
// vals) gives dimension d's per-row status and outputs.
template <class DimRows>
void fill_fact_view(const Plan& plan, const Prepared& prep, const Instr* code, const int64_t* pool,
                    const ColumnView* cols, DimRows dim, FactView& v) {
    v.code = code;
    v.pool = pool;
    v.cols = cols;
    v.filter = plan.fact_filter;
    v.filter_first = prep.filter_first;
    v.n_dims = plan.n_dims;
    for (int32_t d = 0; d < plan.n_dims; ++d) {
        v.fk_col[d] = plan.dims[d].fact_column;
        dim(d, v.dim_status[d], v.dim_vals[d]);
        v.dim_nout[d] = plan.dims[d].n_outputs;
    }
    v.n_parts = plan.n_group_parts;
    std::copy(plan.group_parts, plan.group_parts + kMaxGroupParts, v.parts);
    v.n_measures = plan.n_measures;
    std::copy(plan.measures, plan.measures + kMaxMeasures, v.measures);
    v.stratum_col = plan.stratum_column;
    v.n_strata = plan.n_strata;
}

// Checks the plan against the inputs (programs, columns, key kinds, strata,
// row counts); host_data: every used column must have host data (the CPU).
Status prepare(const Plan& plan, const Inputs& in, bool host_data, Prepared& out);

// The dense / sorted-keys choice from the parts' domains over `joined` rows;
// Declined when the key space passes 2^62.
Status choose_layout(const PlanShape& plan, const PartDomain* dom, int64_t joined, GroupLayout& g);

// Bytes of the state for `groups` groups; Declined when over plan.state_budget.
Status check_budget(const PlanShape& plan, uint64_t groups, const char* what);
inline uint64_t state_bytes(const PlanShape& plan, uint64_t groups) {
    return groups * static_cast<uint64_t>(plan.n_strata) *
           (static_cast<uint64_t>(plan.n_measures) * sizeof(Acc) + sizeof(int64_t));
}

// Whether a dimension's key range gets a dense map.
inline bool dense_keys(int64_t min, int64_t max, int64_t rows) {
    if (max < min) return true;
    uint64_t range = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
    return range < static_cast<uint64_t>(4 * rows + 1024);
}

// Fills the result's groups from packed keys (ascending) and the state (rows
// and accumulators of those groups, group-major).
void fill_result(const PlanShape& plan, const GroupLayout& g, const std::vector<uint64_t>& packed,
                 const std::vector<int64_t>& rows, const std::vector<Acc>& acc, Result& out);

// Keeps the groups (of `groups`, state group-major: rows groups x strata, acc
// groups x strata x measures) that hold a joined row and fills the result;
// keys: each group's packed key (null: the group's index is its key, dense).
void finish_groups(const PlanShape& plan, const GroupLayout& g, const uint64_t* keys, uint64_t groups,
                   const std::vector<int64_t>& rows, const std::vector<Acc>& acc, Result& out);

Status cpu_run(const Plan& plan, const Inputs& in, const Prepared& prep, const ExecContext& ctx, Result& out);
#ifdef APPROX_WITH_CUDA
Status gpu_run(const Plan& plan, const Inputs& in, const Prepared& prep, const ExecContext& ctx, Result& out);
#endif

}  // namespace approx::starjoin
