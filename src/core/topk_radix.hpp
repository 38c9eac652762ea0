// The control logic of the GPU radix selection (cuda/topk.cu), kept in plain
// C++ so that the unit tests can drive exactly this logic with passes
// emulated on the CPU (any machine) -- the GPU engine only supplies the passes.
//
// Keys: the 128-bit composite (hi = score_key, lo = id_key); smaller ranks
// first; the k best are the k smallest keys.
//  - Fast path (n >= fast_min, k <= n/16): the r-th smallest of 4096 evenly
//    spaced score keys is a threshold t expected to pass about max(4k, 4 n/4096)
//    pairs; one pass writes every pair with hi <= t to buffer 0 (capacity cap).
//    When k <= passed <= cap, the answer lies in the buffer; otherwise fall back.
//  - Exact path: digits of 12 bits from the top of the key. Each level's
//    histogram (over the elements matching the prefix fixed so far) locates the
//    k-th's bucket b: elements below b are surely in (appended to the sure
//    buffer), above b out, in b undecided; the next level refines b. The pass
//    that splits a level also builds the next level's histogram, and
//    materialises bucket b once it fits in a buffer. A materialised set of at
//    most sort_max elements is sorted outright; after 128 bits the undecided
//    elements have equal keys and any of them will do.
//  - Every sure element ranks before every undecided one, so the answer is
//    sort(sure elements) followed by the best undecided ones.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "topk.hpp"

namespace approx::topk::radix {

constexpr int kDigitBits = 12;
constexpr int kBins = 1 << kDigitBits;
constexpr int kSamples = 4096;

struct Limits {
    size_t sort_max = size_t(1) << 19;  // candidate sets up to this size are sorted outright
    size_t mat_cap = size_t(1) << 22;   // candidate sets up to this size are materialised
    size_t fast_min = size_t(1) << 20;  // inputs from this size try the sampled threshold
};

// w bits (1..12) of the 128-bit key hi:lo, starting `pos` bits below its top.
APPROX_TOPK_HD uint32_t digit_of(uint64_t hi, uint64_t lo, int pos, int w) {
    uint64_t top;
    if (pos == 0)
        top = hi;
    else if (pos < 64)
        top = (hi << pos) | (lo >> (64 - pos));
    else
        top = lo << (pos - 64);
    return static_cast<uint32_t>(top >> (64 - w));
}

// The top p bits of the key equal those of the prefix phi:plo.
APPROX_TOPK_HD bool prefix_hi_ok(uint64_t hi, int p, uint64_t phi) {
    if (p == 0) return true;
    int ph = p < 64 ? p : 64;
    return ((hi ^ phi) >> (64 - ph)) == 0;
}

APPROX_TOPK_HD bool prefix_lo_ok(uint64_t lo, int p, uint64_t plo) {
    if (p <= 64) return true;
    return ((lo ^ plo) >> (128 - p)) == 0;
}

// Writes digit b (width w) at `pos` bits below the top into the prefix.
inline void set_digit(uint64_t& phi, uint64_t& plo, int pos, int w, uint32_t b) {
    int sh = 128 - pos - w;  // the digit's lowest bit, counted from the key's lowest bit
    if (sh >= 64) {
        phi |= static_cast<uint64_t>(b) << (sh - 64);
    } else if (sh + w <= 64) {
        plo |= static_cast<uint64_t>(b) << sh;
    } else {  // straddles the two halves
        plo |= static_cast<uint64_t>(b) << sh;
        phi |= static_cast<uint64_t>(b) >> (64 - sh);
    }
}

inline int digit_width(int p) { return std::min(kDigitBits, 128 - p); }

// What one pass does with an element: elements whose top p bits equal the
// prefix take part; with a split (split_w > 0) the digit at p decides:
// below split_b -> sure, equal -> in (sure with in_to_sure), above -> out.
// "In" elements feed the histogram of the digit after the split (hist_w > 0)
// and are materialised when mat_cap > 0.
struct PassParams {
    int p = 0;
    uint64_t phi = 0, plo = 0;
    int split_w = 0;
    uint32_t split_b = 0;
    int in_to_sure = 0;
    int hist_w = 0;
    unsigned long long mat_cap = 0;
};

enum : int { kOut = 0, kIn = 1, kSure = 2 };

// Classifies one element with score key hi; get_lo() loads its id key, only
// when a decision needs it (lo/have_lo keep it for the caller).
template <class GetLo>
APPROX_TOPK_HD int classify(uint64_t hi, GetLo&& get_lo, uint64_t& lo, bool& have_lo, const PassParams& pp,
                            uint32_t& hist_digit) {
    if (!prefix_hi_ok(hi, pp.p, pp.phi)) return kOut;
    if (pp.p > 64) {
        if (!have_lo) {
            lo = get_lo();
            have_lo = true;
        }
        if (!prefix_lo_ok(lo, pp.p, pp.plo)) return kOut;
    }
    int pos = pp.p;
    int state = kIn;
    if (pp.split_w > 0) {
        if (!have_lo && pos + pp.split_w > 64) {
            lo = get_lo();
            have_lo = true;
        }
        uint32_t d = digit_of(hi, lo, pos, pp.split_w);
        state = d < pp.split_b ? kSure : (d == pp.split_b ? kIn : kOut);
        pos += pp.split_w;
    }
    if (state == kIn && pp.in_to_sure) state = kSure;
    if (state == kIn && pp.hist_w > 0) {
        if (!have_lo && pos + pp.hist_w > 64) {
            lo = get_lo();
            have_lo = true;
        }
        hist_digit = digit_of(hi, lo, pos, pp.hist_w);
    }
    return state;
}

// Where a pass reads: the input (n pairs) or materialised buffer `buf` (n elements).
struct SrcDesc {
    bool full;
    int buf;
    size_t n;
};

// Where the answer's undecided part comes from.
enum class Tail { None, Sorted, Buf0, Buf1 };

// The exact path over source d; the backend B supplies:
//   bool cancelled();
//   Status reserve_sure(size_t k);           // room for k sure elements, sure count = 0
//   Status reserve_buf(int buf, size_t cap); // room for cap elements in buffer buf
//   Status zero_hist();
//   Status pass(const SrcDesc&, const PassParams&, int mat_buf);  // mat_buf's count zeroed when pp.mat_cap > 0
//   Status read_hist(const unsigned long long*& h);                // kBins counts of the last histogram
//   Status sort_buf(int buf, size_t n);     // sorts buffer buf's first n into the Sorted area
//   Status finish(size_t c_sure, Tail tail, size_t tail_n);  // answer = sort(sure) ++ tail[0..tail_n)
template <class B>
Status exact_select(B& b, SrcDesc d, size_t k, const Limits& lim) {
    APPROX_TRY(b.reserve_sure(k));
    size_t c_sure = 0;
    int p = 0;
    uint64_t phi = 0, plo = 0;
    size_t kk = k;          // still to choose among the undecided elements
    size_t c_in = d.n;      // undecided elements (matching the prefix)
    bool all_match = true;  // every element of the source is undecided
    bool have_hist = false;
    if (d.full && d.n <= lim.sort_max) {  // small input: materialise it and sort
        APPROX_TRY(b.reserve_buf(0, d.n));
        PassParams pp;
        pp.mat_cap = d.n;
        APPROX_TRY(b.pass(d, pp, 0));
        d = SrcDesc{false, 0, d.n};
    }
    for (;;) {
        if (b.cancelled()) return cancelled_status();
        if (!d.full && all_match && c_in <= lim.sort_max) {
            APPROX_TRY(b.sort_buf(d.buf, c_in));
            return b.finish(c_sure, Tail::Sorted, kk);
        }
        PassParams base;
        base.p = p;
        base.phi = phi;
        base.plo = plo;
        if (p == 128) {  // the undecided elements all have the same key: any kk of them
            if (!d.full && all_match) return b.finish(c_sure, d.buf == 0 ? Tail::Buf0 : Tail::Buf1, kk);
            int other = d.full ? 0 : 1 - d.buf;
            APPROX_TRY(b.reserve_buf(other, kk));
            PassParams pp = base;
            pp.mat_cap = kk;
            APPROX_TRY(b.pass(d, pp, other));
            return b.finish(c_sure, other == 0 ? Tail::Buf0 : Tail::Buf1, kk);
        }
        const int w = digit_width(p);
        if (!have_hist) {
            APPROX_TRY(b.zero_hist());
            PassParams pp = base;
            pp.hist_w = w;
            APPROX_TRY(b.pass(d, pp, 0));
        }
        const unsigned long long* h = nullptr;
        APPROX_TRY(b.read_hist(h));
        size_t c_lt = 0;
        uint32_t bucket = 0;
        const uint32_t nb = 1u << w;
        for (; bucket < nb; ++bucket) {
            if (c_lt + h[bucket] >= kk) break;
            c_lt += static_cast<size_t>(h[bucket]);
        }
        if (bucket == nb) return Status::Error(StatusCode::Internal, "top-k selection lost count of its candidates");
        const size_t c_b = static_cast<size_t>(h[bucket]);
        const bool in_to_sure = (kk - c_lt == c_b);  // the whole bucket is needed
        const bool mat = !in_to_sure && c_b <= lim.mat_cap && (d.full || !all_match || c_b < c_in);
        const int new_p = p + w;
        const bool next_all_match = mat || (all_match && c_b == c_in);
        const bool next_full = mat ? false : d.full;
        const bool will_sort = next_all_match && !next_full && c_b <= lim.sort_max;
        const bool hist_next = !in_to_sure && new_p < 128 && !will_sort;
        const int other = d.full ? 0 : 1 - d.buf;
        if (c_lt > 0 || in_to_sure || mat || hist_next) {
            PassParams pp = base;
            pp.split_w = w;
            pp.split_b = bucket;
            pp.in_to_sure = in_to_sure ? 1 : 0;
            pp.hist_w = hist_next ? digit_width(new_p) : 0;
            if (hist_next) APPROX_TRY(b.zero_hist());
            if (mat) {
                APPROX_TRY(b.reserve_buf(other, c_b));
                pp.mat_cap = c_b;
            }
            APPROX_TRY(b.pass(d, pp, mat ? other : 0));
        }
        c_sure += c_lt + (in_to_sure ? c_b : 0);
        set_digit(phi, plo, p, w, bucket);
        p = new_p;
        kk -= c_lt;
        if (in_to_sure) return b.finish(c_sure, Tail::None, 0);
        if (mat) d = SrcDesc{false, other, c_b};
        c_in = c_b;
        all_match = next_all_match;
        have_hist = hist_next;
    }
}

// The whole selection (0 < k <= n). Besides the exact path's needs, B supplies
//   Status sample_threshold(size_t n, size_t r);  // t = r-th smallest of kSamples keys at j*n/kSamples
//   Status fast_filter(size_t n, size_t cap, unsigned long long& passed);  // hi <= t into buffer 0
template <class B>
Status select_k(B& b, size_t n, size_t k, const Limits& lim = Limits()) {
    if (k == 0 || k > n) return Status::Error(StatusCode::Internal, "select_k needs 0 < k <= n");
    if (n >= lim.fast_min && n >= static_cast<size_t>(kSamples) && k <= n / 16) {
        size_t r = std::max<size_t>(4, (4 * k * kSamples + n - 1) / n);
        if (r <= static_cast<size_t>(kSamples) / 4) {
            size_t cap = std::min(n, 4 * r * (n / kSamples) + 65536);
            APPROX_TRY(b.reserve_buf(0, cap));
            APPROX_TRY(b.sample_threshold(n, r));
            unsigned long long passed = 0;
            APPROX_TRY(b.fast_filter(n, cap, passed));
            if (passed >= k && passed <= cap)
                return exact_select(b, SrcDesc{false, 0, static_cast<size_t>(passed)}, k, lim);
        }
    }
    return exact_select(b, SrcDesc{true, 0, n}, k, lim);
}

}  // namespace approx::topk::radix
