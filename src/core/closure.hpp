// Transitive closure of a directed graph (plain C++ API; CPU engine in
// closure.cpp, GPU engine in cuda/closure.cu). The STAR machine and the three
// Warshall variants of the paper are in bitslice.hpp; Algorithm::Star runs
// WARSHALL-adapt on it, the others are the fast paths built on row bit
// matrices (64 vertices per word).
//
// Closure semantics: (u, v) is in the closure when there is a path of length
// >= 1 from u to v; so (v, v) only when v lies on a cycle (a self-loop counts).
//
// The graph arrives as an edge list of arbitrary int64 vertex ids. Engines map
// the ids to 0..V-1 (sort + unique: std::sort on the CPU, CUB radix sort on the
// GPU), then
//   - Blocked: close the V x V bit matrix by blocked Floyd-Warshall (k-tiles
//     of 256 vertices: the diagonal tile, its row and column panels, the rest;
//     on the GPU the tiles live in shared memory and registers);
//   - Condensed: contract strongly connected components first (Tarjan, on the
//     host), then close the component DAG: rows are filled sinks-first, one
//     topological level at a time (a row is the OR of its successors' rows);
//     on the GPU a dense component DAG goes through the blocked path instead.
//     The count and the pairs are expanded back through component sizes.
//   - Auto: Condensed (never slower in practice: it costs O(V + E) on top and
//     shrinks every cyclic part of the graph to one vertex).
//   - Star: the paper's STAR machine (bitslice.hpp): WARSHALL-adapt on the V x V
//     table, on the CPU or GPU machine by dispatch(). Same results, slower; a
//     reference and the paper's algorithm as a product choice.
// The bit matrix needs rows * words * 8 bytes (about C^2 / 8 for C vertices or
// components; the GPU pads C to a multiple of 256); past Options::max_bytes the
// call fails with ProgramLimit naming the bytes needed, before allocating.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec.hpp"

namespace approx::closure {

enum class Algorithm { Auto, Blocked, Condensed, Star };

// How the GPU engine closes a component DAG: by its cost estimate, level by
// level, or with the blocked closure (the last two for tests).
enum class DagClosure { Auto, Levels, Blocked };

struct Options {
    Algorithm algorithm = Algorithm::Auto;
    int64_t max_bytes = int64_t(4096) << 20;  // cap on the closure bit matrix
    DagClosure dag_closure = DagClosure::Auto;
};

constexpr int kTile = 256;  // k-tile of the blocked closure (vertices)

// ---- graph-level calls (the SQL functions) ------------------------------------------

// Number of pairs (u, v) with a path of length >= 1, without materialising them.
Status count_pairs(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
                   int64_t& pairs);

// The whole closure, kept by the engine for row-wise output (transitive_closure()).
// Create with compute(); read with next_pairs() until it returns n = 0; free
// with release() (noexcept; fine to call from a PostgreSQL memory-context
// callback during abort). *out is null on error.
struct Result;
Status compute(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
               Result** out);
int64_t result_pairs(const Result* r);
int64_t result_vertices(const Result* r);
// Fills up to cap pairs (source id, target id) into the caller's arrays, in
// groups of sources that share a strongly connected component.
Status next_pairs(Result* r, int64_t* src_out, int64_t* dst_out, size_t cap, size_t& n);
void release(Result* r) noexcept;

// Vertices reachable from `source` by a path of length >= 1 (breadth-first
// search), ascending ids, written to out (room for cap ids; the number of
// distinct vertices, at most 2 * n_edges, always fits). A source that is not
// a vertex of the graph reaches nothing.
Status reachable(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source, const ExecContext& ctx,
                 int64_t* out, size_t cap, size_t& n);

// ---- bit-matrix level (the blocked closure itself; benchmark and tests) ----------------

// Closes an n x n bit matrix in place: row i in bits[i * ld .. i * ld + ld)
// (64-bit words, bit j of row i = edge i -> j, ld >= words for n bits, bits
// past n zero). Blocked Floyd-Warshall; CPU or GPU by dispatch(). On the GPU,
// RunStats::ms_compute holds the device time of the closure kernels and
// ms_transfer the copies.
Status close_matrix(uint64_t* bits, int64_t n, int64_t ld, const ExecContext& ctx);

}  // namespace approx::closure
