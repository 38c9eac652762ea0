// Top-k engine (plain C++ API; CPU engine in topk.cpp, GPU engine in
// cuda/topk.cu).
//
// 1. Selection: the k best (id, score) pairs under the order (score DESC, id
//    ASC) [Order::Desc, SQL topk] or (score ASC, id ASC) [Order::Asc, SQL
//    bottomk] -- exactly what ORDER BY ... LIMIT k returns: -0 equals +0,
//    ±Infinity sort as ORDER BY sorts them, NaN (rejected by the glue) sorts
//    above +Infinity like PostgreSQL's float8 comparison. Ties at the k-th
//    place are broken by the smaller id, exactly.
//    GPU: radix select on an order-preserving 128-bit key (score key, id key)
//    with CUB primitives (a sampled threshold and one filtering pass in the
//    common case; histogram passes over 12-bit digits otherwise). CPU: chunked
//    partial selection (buffer + nth_element) on parallel_for, then a merge.
//
// 2. NRA (no random access) top-k over m sorted lists L_1..L_m of (id, score):
//    objects ranked by the sum, taken left to right over the lists, of their
//    scores, a missing score counting as the list's minimum. The caller feeds
//    `batch` entries of every list per round (the paper's STRIDE); the engine
//    keeps candidates with lower bound W (unseen scores at the minimum) and
//    upper bound B (unseen scores at the list's current bound), and stops when
//    the k-th lower bound W_k exceeds the threshold T (the sum of the lists'
//    bounds) and every other candidate c has B_c < W_k, or B_c = W_k with c
//    fully known and a larger id than the k-th. Candidate bookkeeping runs on
//    the GPU (a device hash table, CUB selection per round) or the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exec.hpp"

#if defined(__CUDACC__)
#define APPROX_TOPK_HD __host__ __device__ __forceinline__
#else
#define APPROX_TOPK_HD inline
#endif

namespace approx::topk {

enum class Order { Desc, Asc };  // Desc: (score DESC, id ASC); Asc: (score ASC, id ASC)

// Order-preserving keys: a smaller (score_key, id_key) pair ranks first.
APPROX_TOPK_HD uint64_t score_key(double score, Order order) {
    if (score == 0.0) score = 0.0;  // -0 ranks as +0 (float8 comparison)
    uint64_t bits;
    std::memcpy(&bits, &score, sizeof bits);
    if (score != score) bits = 0x7ff8000000000000ULL;  // every NaN: one NaN above +Infinity
    const uint64_t sign = 0x8000000000000000ULL;
    uint64_t key = (bits & sign) ? ~bits : (bits | sign);  // ascending key = ascending score
    return order == Order::Asc ? key : ~key;
}

APPROX_TOPK_HD uint64_t id_key(int64_t id) { return static_cast<uint64_t>(id) ^ 0x8000000000000000ULL; }

// The worst pair an aggregate state keeps once it holds k pairs: rows that do
// not beat it can never enter the answer and are dropped on arrival.
struct Threshold {
    bool valid = false;
    uint64_t key = 0;  // score_key of the worst kept pair
    uint64_t id = 0;   // id_key of the worst kept pair
};

// True when (score, id) ranks strictly before the threshold (or there is none).
inline bool beats(double score, int64_t id, Order order, const Threshold& t) {
    if (!t.valid) return true;
    uint64_t k = score_key(score, order);
    return k < t.key || (k == t.key && id_key(id) < t.id);
}

// True when (score, id) ranks at or before the threshold (or there is none):
// such a pair may be one of the k best of a merged state. A pair equal to the
// threshold pair (the threshold pair itself, a tie, a duplicate) is kept.
inline bool reaches(double score, int64_t id, Order order, const Threshold& t) {
    if (!t.valid) return true;
    uint64_t k = score_key(score, order);
    return k < t.key || (k == t.key && id_key(id) <= t.id);
}

// The threshold of two merged states: the better (stricter) of the two.
inline Threshold better_threshold(const Threshold& a, const Threshold& b) {
    if (!a.valid) return b;
    if (!b.valid) return a;
    return (b.key < a.key || (b.key == a.key && b.id < a.id)) ? b : a;
}

// An aggregate state holding more than this many pairs is cut back to its best k.
inline size_t prune_limit(size_t k) { return 4 * k > 65536 ? 4 * k : 65536; }

// Aggregate states. A state is a buffer of pairs and a threshold with two
// invariants: every pair the state has seen but not kept ranks at or after the
// threshold, and once the threshold is valid the buffer holds at least k pairs
// that rank at or before it. Then the best k of the buffer are the best k of
// every row the state has seen (a dropped pair can only tie a kept one).
//  - a row arrives: keep it when it beats() the threshold (an equal row may be
//    dropped: k kept pairs already rank at or before it);
//  - prune(): cut back to the best k, the threshold becomes the worst of them;
//  - combine(): merge another state into this one, below.
//
// combine: the merged threshold is the better of the two. The state whose
// threshold that is keeps all its pairs (its k pairs at or before it stay);
// the other state's pairs that rank strictly after it are dropped, those that
// reach() it are kept. Appends the kept pairs of `other` to out_ids/out_scores
// (room for other_n), sets thr (this state's threshold) to the merged one and
// appended to their count.
Status combine(Threshold& thr, const Threshold& other_thr, const int64_t* other_ids, const double* other_scores,
               size_t other_n, Order order, int64_t* out_ids, double* out_scores, size_t& appended) noexcept;

// The best min(k, n) pairs of (ids[i], scores[i]), best first, into
// out_ids/out_scores (room for min(k, n)); out_n = min(k, n). CPU or GPU by
// dispatch(). k = 0 or n = 0 gives out_n = 0.
Status select(const int64_t* ids, const double* scores, size_t n, size_t k, Order order, const ExecContext& ctx,
              int64_t* out_ids, double* out_scores, size_t& out_n) noexcept;

// The same selection on the CPU engine only (ctx.cpu_threads threads).
Status select_cpu(const int64_t* ids, const double* scores, size_t n, size_t k, Order order, const ExecContext& ctx,
                  int64_t* out_ids, double* out_scores, size_t& out_n) noexcept;

// In-place pruning for aggregate states (CPU, the calling thread only): when
// n > k, moves the best k pairs to [0, k) (in no particular order), sets
// kept = k and thr to the worst of them; otherwise kept = n, thr unchanged.
Status prune(int64_t* ids, double* scores, size_t n, size_t k, Order order, size_t& kept, Threshold& thr) noexcept;

// ---- NRA ------------------------------------------------------------------------

constexpr int kMaxNraLists = 32;

struct NraConfig {
    int m = 0;                          // lists, 1..kMaxNraLists
    int64_t k = 0;                      // answer size, >= 1
    const double* min_score = nullptr;  // m finite values: each list's minimum (the missing-score bound)
    int64_t rows_hint = 0;              // expected objects (device choice under `auto`)
};

// One round's entries of one list, in the list's order (scores non-increasing,
// finite, >= the list's minimum; an id at most once per list). exhausted: the
// list has no entries after these (a fetch returned fewer than asked).
struct NraList {
    const int64_t* ids = nullptr;
    const double* scores = nullptr;
    size_t n = 0;
    bool exhausted = false;
};

struct NraProgress {
    bool done = false;           // the stopping rule holds: nra_winners() is the answer
    bool need_unlisted = false;  // every list is exhausted but fewer than k objects beat the
                                 // minimum total: feed the objects that are in no list
                                 // (nra_add_unlisted), then nra_winners() is the answer
};

struct Nra;  // opaque; owns host or device memory until nra_destroy()

Status nra_create(const NraConfig& config, const ExecContext& ctx, Nra*& out) noexcept;
// One round: lists[0..m). A list already exhausted is passed with n = 0.
Status nra_round(Nra* nra, const NraList* lists, const ExecContext& ctx, NraProgress& progress) noexcept;
// Objects that appear in no list (all their scores missing: total = the sum of
// the minimums), at least the k with the smallest ids. Only after need_unlisted.
Status nra_add_unlisted(Nra* nra, const int64_t* ids, size_t n, const ExecContext& ctx) noexcept;
// The answer's ids, best first by (lower bound DESC, id ASC); n = min(k, candidates).
Status nra_winners(Nra* nra, const ExecContext& ctx, int64_t* ids, size_t cap, size_t& n) noexcept;
void nra_destroy(Nra* nra) noexcept;

struct NraInfo {
    Device device = Device::Cpu;
    int64_t rounds = 0;
    int64_t candidates = 0;  // objects ever tracked
    int64_t depth[kMaxNraLists] = {0};
    bool phase2 = false;  // the k-th lower bound passed the threshold (new objects ignored)
};
NraInfo nra_info(const Nra* nra) noexcept;

// Left-to-right sum of m values (the NRA total; the bounds use the same order).
// Rounding is monotone, so the sum is monotone in every value: bounds on the
// values give bounds on the sum, and the sum of the lists' minimums bounds
// every object's total from below. A sum of finite values may overflow to
// ±Infinity: totals are checked (rank_by_sum), bounds may be infinite.
APPROX_TOPK_HD double nra_sum(const double* v, int m) {
    if (m <= 0) return 0.0;
    double s = v[0];
    for (int j = 1; j < m; ++j) s += v[j];
    return s;
}

// Ranks objects by the left-to-right sum of their m values (row-major n x m):
// the best min(k, n) by (total DESC, id ASC), totals into out_totals (CPU).
// A total that overflows to ±Infinity (the values are finite) is an error,
// StatusCode::OutOfRange naming the object's id, as PostgreSQL's float8
// addition raises 22003.
Status rank_by_sum(const int64_t* ids, const double* values, size_t n, int m, size_t k, const ExecContext& ctx,
                   int64_t* out_ids, double* out_totals, size_t& out_n) noexcept;

// The first object among n (row-major n x m finite values) whose total
// overflows: OutOfRange naming its id; Ok when none does.
Status check_sums(const int64_t* ids, const double* values, size_t n, int m) noexcept;

}  // namespace approx::topk
