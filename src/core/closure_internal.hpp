// What the CPU (closure.cpp) and GPU (cuda/closure.cu) closure engines share:
// the result object behind transitive_closure(), the strongly-connected-
// component condensation (host) and small helpers. Not part of the API.
#pragma once

#include <cstdint>
#include <vector>

#include "closure.hpp"

namespace approx::closure {

// The closure kept for row-wise output. Rows of the bit matrix are indexed by
// component (Condensed) or by vertex (Blocked: components = vertices).
struct Result {
    virtual ~Result() = default;

    std::vector<int64_t> ids;         // V vertex ids, ascending (vertex index -> id)
    std::vector<int32_t> comp_start;  // C + 1 offsets into members
    std::vector<int32_t> members;     // V vertex indices grouped by component
    int64_t comps = 0;                // C: rows of the bit matrix, bits per row
    int64_t pairs = 0;                // the reachability count

    // Rows [first, first + count) of the closure bit matrix: p points at row
    // `first`, consecutive rows `stride` words apart; valid until the next call.
    virtual Status rows(int64_t first, int64_t count, const uint64_t*& p, int64_t& stride) = 0;
    // How many rows one rows() call should ask for.
    virtual int64_t rows_per_fetch() const = 0;

    // next_pairs() cursor: component, member of it, position in its targets.
    int64_t cur_comp = 0;
    size_t cur_member = 0;
    size_t cur_target = 0;
    bool have_targets = false;
    std::vector<int64_t> targets;  // ids reachable from cur_comp
    int64_t fetched_first = -1, fetched_count = 0;
    const uint64_t* fetched = nullptr;
    int64_t fetched_stride = 0;
};

// A Result over a host bit matrix (the CPU engine).
struct HostResult final : Result {
    std::vector<uint64_t> bits;  // comps rows of words_for(comps) words
    int64_t ld = 0;
    Status rows(int64_t first, int64_t, const uint64_t*& p, int64_t& stride) override {
        p = bits.data() + first * ld;
        stride = ld;
        return Status::Ok();
    }
    int64_t rows_per_fetch() const override { return comps > 0 ? comps : 1; }
};

// Edge list over vertex indices 0..V-1.
struct Mapped {
    std::vector<int64_t> ids;  // V ascending distinct ids
    std::vector<int32_t> u, v;
};

// The condensation of a graph: components in reverse topological order
// (every edge between components goes from a higher to a lower id; Tarjan's
// order), their members, which are cyclic, the DAG of distinct component
// edges (CSR) and its levels (0 = no successor; a component's level is one
// more than its successors' highest).
struct Dag {
    int64_t vertices = 0;
    int64_t comps = 0;
    std::vector<int32_t> comp;         // vertex -> component
    std::vector<int32_t> comp_start;   // C + 1
    std::vector<int32_t> members;      // grouped by component, ascending vertex index within one
    std::vector<uint8_t> cyclic;       // C
    std::vector<int64_t> off;          // C + 1
    std::vector<int32_t> succ;         // distinct successor components
    std::vector<int32_t> level_start;  // levels + 1 offsets into by_level
    std::vector<int32_t> by_level;     // components grouped by level
    bool trivial() const { return comps == vertices; }
};

// Largest vertex count the engines accept (indices are int32).
constexpr int64_t kMaxVertices = (int64_t(1) << 31) - 1;

Status check_vertices(int64_t vertices);
// Bytes of the closure bit matrix of `items` vertices or components (stored
// as `rows` rows of `words` 64-bit words), checked against opt.max_bytes
// (ProgramLimit naming both).
Status check_matrix_bytes(int64_t items, int64_t rows, int64_t words, bool condensed, const Options& opt);

Status map_ids_cpu(const int64_t* src, const int64_t* dst, size_t n, Mapped& out);
Status condense(int64_t vertices, const int32_t* u, const int32_t* v, size_t n_edges, const ExecContext& ctx, Dag& out);
// Identity grouping (each vertex its own component) for a Result.
void identity_groups(int64_t vertices, std::vector<int32_t>& comp_start, std::vector<int32_t>& members);

// Reachability count from a host bit matrix (rows of `ld` words), weighting
// each component by its size when `comp_start` is non-null.
Status count_matrix_pairs(const uint64_t* bits, int64_t rows, int64_t ld, const int32_t* comp_start,
                          const ExecContext& ctx, int64_t& pairs);

void add_stats(const ExecContext& ctx, int64_t vertices, int64_t comps, int64_t dag_edges, bool condensed,
               int64_t matrix_bytes);

#ifdef APPROX_WITH_CUDA
namespace gpu {
Status close_matrix(uint64_t* bits, int64_t n, int64_t ld, const ExecContext& ctx);
Status count_pairs(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
                   int64_t& pairs);
Status compute(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
               Result** out);
Status reachable(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source, const ExecContext& ctx,
                 int64_t* out, size_t cap, size_t& n);
}  // namespace gpu
#endif

// Through the GPU service (closure_served.cpp): statuses for service::try_run.
Status count_pairs_in_service(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt,
                              const ExecContext& ctx, int64_t& pairs);
Status reachable_in_service(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source,
                            const ExecContext& ctx, int64_t* out, size_t cap, size_t& n);
Status compute_in_service(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt,
                          const ExecContext& ctx, Result** out);

}  // namespace approx::closure
