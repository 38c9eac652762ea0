// Pieces the CPU and GPU STAR machines share: argument checks (host) and the
// word arithmetic of TRIM / REP (host and device).
#pragma once

#include <cstdint>

#include "bitslice.hpp"

#if defined(__CUDACC__)
#define APPROX_HD __host__ __device__
#else
#define APPROX_HD
#endif

namespace approx::bitslice::detail {

Status check_bit(Slice x, int64_t i, const char* op);
Status check_same(Slice a, Slice b, const char* op);
Status check_trim(int64_t i, int64_t j, Slice w, Slice out);
Status check_rep(int64_t i, int64_t j, Slice v, Slice w);
Status check_col(const Table& t, int64_t j, Slice x, const char* op);
Status check_row(const Table& t, int64_t i, Slice w, const char* op);
Status check_where(const Table& t, Slice w, Slice x);
Status check_size(int64_t rows, int64_t cols);

// The 64 bits of the word array w[0..nw) starting at bit position pos
// (pos may be negative down to -63: the missing low bits read as 0; bits past
// the end read as 0).
APPROX_HD inline uint64_t bits_at(const uint64_t* w, int64_t nw, int64_t pos) {
    if (pos < 0) {
        if (pos <= -64) return 0;
        uint64_t first = nw > 0 ? w[0] : 0;
        return first << (-pos);
    }
    int64_t q = pos >> 6;
    int r = static_cast<int>(pos & 63);
    uint64_t lo = q < nw ? w[q] : 0;
    if (r == 0) return lo;
    uint64_t hi = q + 1 < nw ? w[q + 1] : 0;
    return (lo >> r) | (hi << (64 - r));
}

// Word o of w after REP(i, j, v, w): bits [i, j] of w come from v[0 ..].
APPROX_HD inline uint64_t rep_word(uint64_t old, int64_t o, int64_t i, int64_t j, const uint64_t* v, int64_t vnw) {
    int64_t base = o * 64;
    int64_t lo = i > base ? i : base;
    int64_t hi = j < base + 63 ? j : base + 63;
    if (lo > hi) return old;
    int a = static_cast<int>(lo - base), b = static_cast<int>(hi - base);
    uint64_t mask = (b == 63 ? ~0ULL : ((1ULL << (b + 1)) - 1)) & ~((1ULL << a) - 1);
    uint64_t src = bits_at(v, vnw, base - i);
    return (old & ~mask) | (src & mask);
}

}  // namespace approx::bitslice::detail
