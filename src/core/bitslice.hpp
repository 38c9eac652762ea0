// The STAR machine: an abstract SIMD associative processor with vertical
// (bit-slice) processing (Nepomniaschaya), on the CPU and on the GPU behind one
// API. Plain C++ (no PostgreSQL, no CUDA headers); the CPU machine lives in
// bitslice.cpp, the GPU machine in cuda/bitslice.cu.
//
// Data types:
//   slice  a bit column of n bits, stored in words_for(n) 64-bit words
//          (bit i in word i / 64 at position i % 64; bits past n are always 0)
//   word   a bit row; stored exactly like a slice (a Slice of `cols` bits)
//   table  a binary matrix of `rows` x `cols` bits stored as `cols` slices of
//          `rows` bits each (column j = slice j, `ld` words apart)
// A Slice / Table is a non-owning view into memory the Machine that made it
// owns (host memory for the CPU machine, device memory for the GPU machine);
// views die with their machine.
//
// Operations (in place, as in STAR: Z = X; Z.AND(Y)):
//   SET(X) CLR(X)                 all components 1 / 0
//   AND OR XOR (Z, Y), NOT(Z)     bitwise, Z op= Y
//   Y(i)                          read component i (get), and write it (put)
//   FND(X)                        index of the first (lowest) 1, -1 if none
//   STEP(X)                       FND, then clear that 1
//   SOME(X)                       whether X has a 1
//   NUMB(X)                       number of 1s
//   FRST(X)                       keep only the first 1
//   TRIM(i, j, w) -> v            v = w[i..j] (a word of j - i + 1 bits)
//   REP(i, j, v, w)               w[i..j] = v[0..j-i]
//   COL(j, T) / ROW(i, T)         read column j (a slice) / row i (a word)
//   set_col / set_row             write them
//   or_cols_where(T, w, x)        every column j with w(j) = 1 gets COL(j) OR x,
//                                 all in one step (WARSHALL-adapt's launch)
// Every operation returns a Status (bad indices, length mismatches, device
// errors); none throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "exec.hpp"

namespace approx::bitslice {

inline int64_t words_for(int64_t bits) { return (bits + 63) / 64; }

// Mask of the valid bits of the last word of an n-bit slice (all ones when n % 64 == 0).
inline uint64_t tail_mask(int64_t bits) {
    int r = static_cast<int>(bits % 64);
    return r == 0 ? ~0ULL : ((1ULL << r) - 1);
}

struct Slice {
    uint64_t* w = nullptr;
    int64_t n = 0;  // bits
    int64_t words() const { return words_for(n); }
};

struct Table {
    uint64_t* w = nullptr;
    int64_t rows = 0;  // bits per column
    int64_t cols = 0;  // number of columns (slices)
    int64_t ld = 0;    // words between consecutive columns (= words_for(rows))
    Slice col(int64_t j) const { return Slice{w + j * ld, rows}; }
};

class Machine {
public:
    virtual ~Machine() = default;
    virtual Device device() const = 0;

    // ---- storage (zero-initialised; owned by the machine) ----
    virtual Status new_slice(int64_t n, Slice& out) = 0;
    virtual Status new_table(int64_t rows, int64_t cols, Table& out) = 0;
    // Host <-> machine copies of a whole slice or table (host arrays of
    // x.words() words / ld * cols words, column after column).
    virtual Status load(Slice x, const uint64_t* host) = 0;
    virtual Status store(Slice x, uint64_t* host) = 0;
    virtual Status load_table(const Table& t, const uint64_t* host) = 0;
    virtual Status store_table(const Table& t, uint64_t* host) = 0;
    // Wait for queued work (GPU); a no-op on the CPU.
    virtual Status sync() = 0;

    // ---- slice operations ----
    virtual Status set(Slice x) = 0;
    virtual Status clr(Slice x) = 0;
    virtual Status copy(Slice z, Slice x) = 0;  // Z := X
    virtual Status and_(Slice z, Slice y) = 0;  // Z := Z AND Y
    virtual Status or_(Slice z, Slice y) = 0;
    virtual Status xor_(Slice z, Slice y) = 0;
    virtual Status not_(Slice z) = 0;
    virtual Status get(Slice x, int64_t i, bool& bit) = 0;  // Y(i)
    virtual Status put(Slice x, int64_t i, bool bit) = 0;
    virtual Status fnd(Slice x, int64_t& i) = 0;   // -1 when X has no 1
    virtual Status step(Slice x, int64_t& i) = 0;  // -1 when X has no 1
    virtual Status some(Slice x, bool& any) = 0;
    virtual Status numb(Slice x, int64_t& count) = 0;
    virtual Status frst(Slice x) = 0;

    // ---- word operations ----
    virtual Status trim(int64_t i, int64_t j, Slice w, Slice out) = 0;  // out.n must be j - i + 1
    virtual Status rep(int64_t i, int64_t j, Slice v, Slice w) = 0;     // v.n must be >= j - i + 1

    // ---- table operations ----
    virtual Status col(const Table& t, int64_t j, Slice out) = 0;  // out.n = t.rows
    virtual Status set_col(const Table& t, int64_t j, Slice x) = 0;
    virtual Status row(const Table& t, int64_t i, Slice out) = 0;  // out.n = t.cols
    virtual Status set_row(const Table& t, int64_t i, Slice w) = 0;
    virtual Status or_cols_where(const Table& t, Slice w,
                                 Slice x) = 0;  // w.n = t.cols, x.n = t.rows; x must not alias T
};

// A STAR machine on `device`. The GPU machine needs a usable GPU (NoGpu
// otherwise; GpuOutOfMemory when an allocation fails or passes
// ctx.gpu_memory_limit). ctx must outlive the machine.
Status make_machine(Device device, const ExecContext& ctx, std::unique_ptr<Machine>& out);
Status make_cpu_machine(const ExecContext& ctx, std::unique_ptr<Machine>& out);
#ifdef APPROX_WITH_CUDA
Status make_gpu_machine(const ExecContext& ctx, std::unique_ptr<Machine>& out);
#endif

// ---- Warshall's transitive closure written with STAR operations ----------------
// T is the adjacency matrix as a table: T(i, j) = 1 for an edge i -> j, so
// column j holds the predecessors of j. On return T(i, j) = 1 iff there is a
// path of length >= 1 from i to j. T must be square.
//   warshall_rows   WARSHALL (listing 1): for each k, every row i with
//                   T(i, k) = 1 (found by STEP over COL(k)) gets ROW(i) OR ROW(k)
//   warshall_cols   WARSHALL-C (listing 2): for each k, every column j with
//                   T(k, j) = 1 (STEP over ROW(k)) gets COL(j) OR COL(k)
//   warshall_adapt  WARSHALL-adapt (listing 4): for each k, all those columns
//                   in one step (or_cols_where)
// The cancel callback is polled every k.
Status warshall_rows(Machine& m, const Table& t, const ExecContext& ctx);
Status warshall_cols(Machine& m, const Table& t, const ExecContext& ctx);
Status warshall_adapt(Machine& m, const Table& t, const ExecContext& ctx);

}  // namespace approx::bitslice
