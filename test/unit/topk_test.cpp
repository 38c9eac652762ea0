// Unit tests of the top-k engine (src/core/topk.hpp): selection and pruning
// against a full sort written here (CPU, and the GPU when there is one), the
// NRA engine against a naive simulation of the exact stopping rule (same
// stopping round at batch granularity) and against the brute-force answer.
// Fixed seeds throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/gpu.hpp"
#include "core/topk.hpp"
#include "core/topk_radix.hpp"

using approx::Device;
using approx::DeviceMode;
using approx::ExecContext;
using approx::RunStats;
using approx::Status;
using approx::StatusCode;
namespace topk = approx::topk;
using topk::Order;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

bool have_gpu() {
    char why[256];
    return approx::gpu::available(why, sizeof why);
}

#define SKIP_WITHOUT_GPU()                                                                    \
    do {                                                                                      \
        if (!have_gpu()) {                                                                    \
            GTEST_SKIP() << "no GPU on this machine: the GPU engine is tested on the device"; \
        }                                                                                     \
    } while (0)

ExecContext cpu_ctx(int threads = 1) {
    ExecContext c;
    c.mode = DeviceMode::Cpu;
    c.cpu_threads = threads;
    return c;
}

ExecContext gpu_ctx() {
    ExecContext c;
    c.mode = DeviceMode::Gpu;
    c.cpu_threads = 2;
    return c;
}

// ---- selection --------------------------------------------------------------------

struct Pairs {
    std::vector<int64_t> ids;
    std::vector<double> scores;
};

enum class Dist { Uniform, FewValues, AllEqual, Special, Sorted, Negative };

// Special: many ties, negatives, ±Infinity, -0 and +0, NaN.
Pairs make_pairs(size_t n, Dist dist, uint64_t seed, bool dup_ids = false) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> U(0, 1);
    Pairs p;
    p.ids.resize(n);
    p.scores.resize(n);
    for (size_t i = 0; i < n; ++i) {
        p.ids[i] = dup_ids ? static_cast<int64_t>(rng() % (n / 3 + 1)) - static_cast<int64_t>(n / 6)
                           : static_cast<int64_t>(i) * 7 - static_cast<int64_t>(n) * 3;
        double s = 0;
        switch (dist) {
            case Dist::Uniform: s = U(rng); break;
            case Dist::FewValues: s = static_cast<double>(rng() % 5); break;
            case Dist::AllEqual: s = 2.5; break;
            case Dist::Sorted: s = static_cast<double>(i) / static_cast<double>(n); break;
            case Dist::Negative: s = -1e6 * U(rng) - 1; break;
            case Dist::Special: {
                static const double v[] = {kInf, -kInf, 0.0,   -0.0,    1.5,
                                           -1.5, 3,     1e300, -1e-300, std::numeric_limits<double>::quiet_NaN()};
                s = (rng() % 3 == 0) ? v[rng() % 10] : std::floor(U(rng) * 20) - 10;
                break;
            }
        }
        p.scores[i] = s;
    }
    // shuffle ids so that input position and id order differ
    if (!dup_ids) std::shuffle(p.ids.begin(), p.ids.end(), rng);
    return p;
}

// The reference order: a full stable sort by (score_key, id_key).
std::vector<size_t> naive_order(const Pairs& p, Order o) {
    std::vector<size_t> idx(p.ids.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        uint64_t ka = topk::score_key(p.scores[a], o), kb = topk::score_key(p.scores[b], o);
        if (ka != kb) return ka < kb;
        return topk::id_key(p.ids[a]) < topk::id_key(p.ids[b]);
    });
    return idx;
}

std::vector<size_t> naive_topk(const Pairs& p, size_t k, Order o) {
    std::vector<size_t> idx = naive_order(p, o);
    idx.resize(std::min(k, idx.size()));
    return idx;
}

// The result equals the reference's first k pair by pair (ids, and scores up
// to -0/+0 and NaN payloads, i.e. equal keys).
void expect_same(const Pairs& p, const std::vector<size_t>& order, size_t k, Order o, const std::vector<int64_t>& ids,
                 const std::vector<double>& scores, size_t n_out, const char* what) {
    size_t want = std::min(k, order.size());
    ASSERT_EQ(n_out, want) << what;
    for (size_t i = 0; i < want; ++i) {
        ASSERT_EQ(ids[i], p.ids[order[i]]) << what << " at rank " << i;
        ASSERT_EQ(topk::score_key(scores[i], o), topk::score_key(p.scores[order[i]], o)) << what << " at rank " << i;
    }
}

void check_select(const Pairs& p, const std::vector<size_t>& order, size_t k, Order o, const ExecContext& ctx,
                  const char* what) {
    size_t cap = std::max<size_t>(1, std::min(k, p.ids.size()));
    std::vector<int64_t> ids(cap);
    std::vector<double> scores(cap);
    size_t n_out = 12345;
    RunStats stats;
    ExecContext c = ctx;
    c.stats = &stats;
    Status st = topk::select(p.ids.data(), p.scores.data(), p.ids.size(), k, o, c, ids.data(), scores.data(), n_out);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message;
    expect_same(p, order, k, o, ids, scores, n_out, what);
    if (ctx.mode == DeviceMode::Gpu && !p.ids.empty() && k > 0) {
        EXPECT_EQ(stats.device, Device::Gpu) << what;
    }
}

const Dist kDists[] = {Dist::Uniform, Dist::FewValues, Dist::AllEqual, Dist::Special, Dist::Sorted, Dist::Negative};
const char* const kDistNames[] = {"uniform", "few-values", "all-equal", "special", "sorted", "negative"};

void select_suite(const ExecContext& ctx, const std::vector<size_t>& sizes) {
    uint64_t seed = 11;
    for (size_t n : sizes)
        for (int d = 0; d < 6; ++d)
            for (Order o : {Order::Desc, Order::Asc})
                for (bool dup : {false, true}) {
                    if (dup && n < 10) continue;
                    Pairs p = make_pairs(n, kDists[d], ++seed, dup);
                    std::vector<size_t> order = naive_order(p, o);
                    for (size_t k : {size_t(1), size_t(10), size_t(1000), n, n + 5}) {
                        char what[160];
                        std::snprintf(what, sizeof what, "n=%zu dist=%s order=%s k=%zu dup_ids=%d", n, kDistNames[d],
                                      o == Order::Desc ? "desc" : "asc", k, dup);
                        check_select(p, order, k, o, ctx, what);
                        if (::testing::Test::HasFatalFailure()) return;
                    }
                }
}

TEST(TopkKeys, OrderLikePostgres) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // ascending order under Asc: -inf < -1 < -0 = +0 < 1e-300 < 1 < +inf < NaN
    const double asc[] = {-kInf, -1.0, 0.0, 1e-300, 1.0, kInf, nan};
    for (size_t i = 0; i + 1 < sizeof asc / sizeof asc[0]; ++i) {
        EXPECT_LT(topk::score_key(asc[i], Order::Asc), topk::score_key(asc[i + 1], Order::Asc)) << i;
        EXPECT_GT(topk::score_key(asc[i], Order::Desc), topk::score_key(asc[i + 1], Order::Desc)) << i;
    }
    EXPECT_EQ(topk::score_key(-0.0, Order::Asc), topk::score_key(0.0, Order::Asc));
    EXPECT_EQ(topk::score_key(-nan, Order::Desc), topk::score_key(nan, Order::Desc));
    EXPECT_LT(topk::id_key(-5), topk::id_key(3));
    EXPECT_LT(topk::id_key(std::numeric_limits<int64_t>::min()), topk::id_key(std::numeric_limits<int64_t>::max()));
    topk::Threshold t;
    EXPECT_TRUE(topk::beats(1.0, 1, Order::Desc, t));
    t.valid = true;
    t.key = topk::score_key(2.0, Order::Desc);
    t.id = topk::id_key(10);
    EXPECT_TRUE(topk::beats(3.0, 100, Order::Desc, t));
    EXPECT_TRUE(topk::beats(2.0, 9, Order::Desc, t));
    EXPECT_FALSE(topk::beats(2.0, 10, Order::Desc, t));
    EXPECT_FALSE(topk::beats(2.0, 11, Order::Desc, t));
    EXPECT_FALSE(topk::beats(1.0, 0, Order::Desc, t));
}

TEST(TopkSelect, CpuMatchesFullSort) { select_suite(cpu_ctx(1), {0, 1, 2, 3, 100, 2000}); }

TEST(TopkSelect, CpuThreadsMatchFullSort) { select_suite(cpu_ctx(3), {140001}); }

TEST(TopkSelect, ZeroK) {
    Pairs p = make_pairs(100, Dist::Uniform, 5);
    int64_t id = 0;
    double s = 0;
    size_t n_out = 99;
    ASSERT_TRUE(topk::select(p.ids.data(), p.scores.data(), 100, 0, Order::Desc, cpu_ctx(), &id, &s, n_out).ok());
    EXPECT_EQ(n_out, 0u);
}

TEST(TopkSelect, CancelledCpu) {
    Pairs p = make_pairs(300000, Dist::Uniform, 6);
    ExecContext c = cpu_ctx(2);
    c.cancel = [] { return true; };
    std::vector<int64_t> ids(10);
    std::vector<double> s(10);
    size_t n_out = 0;
    Status st = topk::select(p.ids.data(), p.scores.data(), p.ids.size(), 10, Order::Desc, c, ids.data(), s.data(),
                             n_out);
    EXPECT_EQ(st.code, StatusCode::Cancelled);
}

TEST(TopkPrune, KeepsTheBestAndTheThreshold) {
    for (int d = 0; d < 6; ++d)
        for (Order o : {Order::Desc, Order::Asc})
            for (size_t k : {size_t(1), size_t(7), size_t(500), size_t(5000)}) {
                Pairs p = make_pairs(3000, kDists[d], 100 + d, d % 2 == 1);
                Pairs q = p;
                size_t kept = 0;
                topk::Threshold thr;
                ASSERT_TRUE(topk::prune(q.ids.data(), q.scores.data(), q.ids.size(), k, o, kept, thr).ok());
                ASSERT_EQ(kept, std::min<size_t>(k, 3000));
                EXPECT_EQ(thr.valid, k < 3000);
                q.ids.resize(kept);
                q.scores.resize(kept);
                // the kept pairs are exactly the best k
                std::vector<size_t> ref = naive_topk(p, k, o);
                std::vector<int64_t> out(kept);
                std::vector<double> outs(kept);
                size_t n_out = 0;
                ASSERT_TRUE(topk::select_cpu(q.ids.data(), q.scores.data(), kept, k, o, cpu_ctx(), out.data(),
                                             outs.data(), n_out)
                                .ok());
                ASSERT_EQ(n_out, ref.size());
                for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(out[i], p.ids[ref[i]]) << "d=" << d << " k=" << k;
                if (thr.valid) {
                    size_t last = ref.back();
                    EXPECT_EQ(thr.key, topk::score_key(p.scores[last], o));
                    EXPECT_EQ(thr.id, topk::id_key(p.ids[last]));
                    // nothing outside the kept set beats the threshold
                    std::vector<size_t> all = naive_topk(p, p.ids.size(), o);
                    for (size_t i = k; i < all.size(); ++i)
                        ASSERT_FALSE(topk::beats(p.scores[all[i]], p.ids[all[i]], o, thr));
                }
            }
}

// ---- aggregate states: rows, pruning and combine (the SQL aggregate's logic) ----------

// A model of one aggregate state of src/topk.cpp on the engine's pieces: a row
// is kept when it beats() the threshold, the state is cut back to its best k
// once it holds more than `limit` pairs, and states merge with combine().
struct ModelState {
    std::vector<int64_t> ids;
    std::vector<double> scores;
    topk::Threshold thr;
};

void model_prune(ModelState& s, size_t k, Order o, size_t limit) {
    if (s.ids.size() <= limit) return;
    size_t kept = 0;
    ASSERT_TRUE(topk::prune(s.ids.data(), s.scores.data(), s.ids.size(), k, o, kept, s.thr).ok());
    s.ids.resize(kept);
    s.scores.resize(kept);
}

void model_add(ModelState& s, int64_t id, double score, size_t k, Order o, size_t limit) {
    if (!topk::beats(score, id, o, s.thr)) return;
    s.ids.push_back(id);
    s.scores.push_back(score);
    model_prune(s, k, o, limit);
}

void model_combine(ModelState& s, const ModelState& other, size_t k, Order o, size_t limit) {
    size_t n0 = s.ids.size();
    s.ids.resize(n0 + other.ids.size());
    s.scores.resize(n0 + other.ids.size());
    size_t appended = 12345;
    ASSERT_TRUE(topk::combine(s.thr, other.thr, other.ids.data(), other.scores.data(), other.ids.size(), o,
                              s.ids.data() + n0, s.scores.data() + n0, appended)
                    .ok());
    ASSERT_LE(appended, other.ids.size());
    s.ids.resize(n0 + appended);
    s.scores.resize(n0 + appended);
    model_prune(s, k, o, limit);
}

// The answer of a state (the final function's selection).
void expect_state_answer(const ModelState& s, const Pairs& all, size_t k, Order o, const char* what) {
    std::vector<size_t> order = naive_order(all, o);
    size_t cap = std::max<size_t>(1, std::min(k, s.ids.size()));
    std::vector<int64_t> ids(cap);
    std::vector<double> scores(cap);
    size_t n_out = 0;
    ASSERT_TRUE(topk::select_cpu(s.ids.data(), s.scores.data(), s.ids.size(), k, o, cpu_ctx(), ids.data(),
                                 scores.data(), n_out)
                    .ok());
    expect_same(all, order, k, o, ids, scores, n_out, what);
}

// The states of `parts` contiguous blocks of p (as a parallel scan hands out
// blocks), each fed row by row.
std::vector<ModelState> model_parts(const Pairs& p, size_t parts, size_t k, Order o, size_t limit) {
    std::vector<ModelState> st(parts);
    size_t n = p.ids.size(), chunk = (n + parts - 1) / parts;
    for (size_t i = 0; i < n; ++i) model_add(st[i / chunk], p.ids[i], p.scores[i], k, o, limit);
    return st;
}

TEST(TopkCombine, ThresholdPairSurvives) {
    // A parallel worker's state that read the best rows pruned: its threshold
    // pair is the k-th of the answer; combined into a fresh state (the
    // leader's first combine) it must stay.
    for (Order o : {Order::Desc, Order::Asc}) {
        Pairs p;
        for (int64_t i = 1; i <= 20; ++i) {
            p.ids.push_back(i);
            p.scores.push_back(o == Order::Desc ? 100.0 - static_cast<double>(i) : static_cast<double>(i));
        }
        ModelState a;
        for (size_t i = 0; i < p.ids.size(); ++i) model_add(a, p.ids[i], p.scores[i], 5, o, 8);
        ASSERT_TRUE(a.thr.valid);
        ModelState fresh;
        model_combine(fresh, a, 5, o, 8);
        EXPECT_EQ(fresh.ids.size(), a.ids.size()) << "every pair at or before the threshold stays";
        expect_state_answer(fresh, p, 5, o, "fresh state + pruned state");
        if (::testing::Test::HasFatalFailure()) return;
        // and into a state with a worse threshold of its own
        ModelState worse;
        for (int64_t i = 1; i <= 12; ++i) model_add(worse, 1000 + i, o == Order::Desc ? -1.0 * i : 1000.0 + i, 5, o, 6);
        ASSERT_TRUE(worse.thr.valid);
        Pairs both = p;
        for (int64_t i = 1; i <= 12; ++i) {
            both.ids.push_back(1000 + i);
            both.scores.push_back(o == Order::Desc ? -1.0 * i : 1000.0 + i);
        }
        ModelState w = worse;
        model_combine(w, a, 5, o, 6);
        expect_state_answer(w, both, 5, o, "worse state + pruned state");
        ModelState b = a;
        model_combine(b, worse, 5, o, 6);
        expect_state_answer(b, both, 5, o, "pruned state + worse state");
    }
}

TEST(TopkCombine, TiesAndDuplicatesAtTheThreshold) {
    for (Order o : {Order::Desc, Order::Asc}) {
        // every row the same pair (id 1, score 1): k copies survive any split
        Pairs same;
        same.ids.assign(300, 1);
        same.scores.assign(300, 1.0);
        // every score tied: the k smallest ids
        Pairs tied;
        for (int64_t i = 1; i <= 300; ++i) {
            tied.ids.push_back(i);
            tied.scores.push_back(1.0);
        }
        for (const Pairs* p : {&same, &tied})
            for (size_t parts : {size_t(2), size_t(3), size_t(7)})
                for (size_t k : {size_t(1), size_t(3), size_t(10)}) {
                    std::vector<ModelState> st = model_parts(*p, parts, k, o, 2 * k);
                    ModelState merged;  // a fresh state, then every part
                    for (const ModelState& s : st) model_combine(merged, s, k, o, 2 * k);
                    char what[120];
                    std::snprintf(what, sizeof what, "%s parts=%zu k=%zu", p == &same ? "same pair" : "tied scores",
                                  parts, k);
                    expect_state_answer(merged, *p, k, o, what);
                    if (::testing::Test::HasFatalFailure()) return;
                }
    }
}

TEST(TopkCombine, PrunedStatesEqualFullSort) {
    // Every distribution (ties, duplicate ids, ±Infinity, -0), blocks of the
    // input in states that prune at a small limit and at the aggregate's own
    // prune_limit(k); merged left to right into a fresh state and as a tree.
    uint64_t seed = 500;
    for (int d = 0; d < 6; ++d)
        for (Order o : {Order::Desc, Order::Asc})
            for (bool dup : {false, true}) {
                Pairs p = make_pairs(20000, kDists[d], ++seed, dup);
                for (size_t i = 0; i < p.scores.size(); ++i)
                    if (std::isnan(p.scores[i])) p.scores[i] = 7.0;  // the aggregate rejects NaN
                for (size_t k : {size_t(1), size_t(5), size_t(64), size_t(3000)})
                    for (size_t limit : {k < 100 ? k : 2 * k, 4 * k + 3})
                        for (size_t parts : {size_t(2), size_t(3), size_t(5)}) {
                            std::vector<ModelState> st = model_parts(p, parts, k, o, limit);
                            char what[160];
                            std::snprintf(what, sizeof what, "dist=%s order=%s dup=%d k=%zu limit=%zu parts=%zu",
                                          kDistNames[d], o == Order::Desc ? "desc" : "asc", dup, k, limit, parts);
                            ModelState left;
                            for (const ModelState& s : st) model_combine(left, s, k, o, limit);
                            expect_state_answer(left, p, k, o, what);
                            if (::testing::Test::HasFatalFailure()) return;
                            // a tree: (s0 + s1) + (s2 + ...), each side into a state of its own
                            ModelState a = st[0], b = st[parts - 1];
                            model_combine(a, st[1], k, o, limit);
                            for (size_t i = 2; i + 1 < parts; ++i) model_combine(b, st[i], k, o, limit);
                            if (parts > 2) model_combine(a, b, k, o, limit);
                            expect_state_answer(a, p, k, o, what);
                            if (::testing::Test::HasFatalFailure()) return;
                        }
            }
    // the aggregate's own limit: states of 100000 rows that prune
    Pairs p = make_pairs(300000, Dist::Sorted, 77, false);
    for (Order o : {Order::Desc, Order::Asc}) {
        const size_t k = 5;
        std::vector<ModelState> st = model_parts(p, 3, k, o, topk::prune_limit(k));
        for (const ModelState& s : st) ASSERT_TRUE(s.thr.valid) << "each state pruned";
        ModelState merged;
        for (const ModelState& s : st) model_combine(merged, s, k, o, topk::prune_limit(k));
        expect_state_answer(merged, p, k, o, "sorted input, prune_limit");
    }
}

TEST(TopkCombine, Reaches) {
    topk::Threshold t;
    EXPECT_TRUE(topk::reaches(-kInf, 5, Order::Desc, t));  // no threshold: every pair
    t.valid = true;
    t.key = topk::score_key(2.0, Order::Desc);
    t.id = topk::id_key(10);
    EXPECT_TRUE(topk::reaches(2.0, 10, Order::Desc, t));  // the threshold pair itself
    EXPECT_FALSE(topk::beats(2.0, 10, Order::Desc, t));
    EXPECT_TRUE(topk::reaches(2.0, 9, Order::Desc, t));
    EXPECT_FALSE(topk::reaches(2.0, 11, Order::Desc, t));
    EXPECT_TRUE(topk::reaches(3.0, 11, Order::Desc, t));
    EXPECT_FALSE(topk::reaches(1.0, -5, Order::Desc, t));
    topk::Threshold u = t;
    u.key = topk::score_key(3.0, Order::Desc);
    EXPECT_EQ(topk::better_threshold(t, u).key, u.key);
    EXPECT_EQ(topk::better_threshold(u, t).key, u.key);
    EXPECT_EQ(topk::better_threshold(topk::Threshold(), t).key, t.key);
    EXPECT_EQ(topk::prune_limit(5), 65536u);
    EXPECT_EQ(topk::prune_limit(100000), 400000u);
}

TEST(TopkSelect, RankBySumOverflow) {
    // Sums of finite values past the float8 range are errors naming the id
    // (the smallest such id), as PostgreSQL's float8 + raises 22003.
    std::vector<int64_t> ids = {7, 2, 4};
    std::vector<double> v = {1, 1, 1e308, 1e308, -1e308, -1e308};
    std::vector<int64_t> out(3);
    std::vector<double> tot(3);
    size_t n = 0;
    Status st = topk::rank_by_sum(ids.data(), v.data(), 3, 2, 3, cpu_ctx(), out.data(), tot.data(), n);
    ASSERT_EQ(st.code, StatusCode::OutOfRange);
    EXPECT_STREQ(st.message, "sum of scores of id 2 is out of range for double precision");
    st = topk::check_sums(ids.data(), v.data(), 3, 2);
    ASSERT_EQ(st.code, StatusCode::OutOfRange);
    // near the edge but inside: no error; a large sum that cancels is fine
    std::vector<double> w = {1e308, 7e307, -1e308, 1e308, 1e308, -1e308};
    EXPECT_TRUE(topk::rank_by_sum(ids.data(), w.data(), 3, 2, 3, cpu_ctx(), out.data(), tot.data(), n).ok());
    EXPECT_TRUE(topk::check_sums(ids.data(), w.data(), 3, 2).ok());
    // left to right, as SQL's a + b + c: (1e308 + 1e308) - 1e308 overflows
    std::vector<int64_t> one = {9};
    std::vector<double> x = {1e308, 1e308, -1e308};
    st = topk::rank_by_sum(one.data(), x.data(), 1, 3, 1, cpu_ctx(), out.data(), tot.data(), n);
    EXPECT_EQ(st.code, StatusCode::OutOfRange);
    std::vector<double> y = {1e308, -1e308, 1e308};
    EXPECT_TRUE(topk::rank_by_sum(one.data(), y.data(), 1, 3, 1, cpu_ctx(), out.data(), tot.data(), n).ok());
}

TEST(TopkSelect, RankBySum) {
    // totals left to right: (0.1 + 0.2) + 0.3 differs from 0.1 + (0.2 + 0.3)
    std::vector<int64_t> ids = {5, 3, 9, 1};
    std::vector<double> v = {0.1, 0.2, 0.3, 1, 1, 1, 0.3, 0.2, 0.1, 1.5, 1.5, 0};
    std::vector<int64_t> out(4);
    std::vector<double> tot(4);
    size_t n = 0;
    ASSERT_TRUE(topk::rank_by_sum(ids.data(), v.data(), 4, 3, 10, cpu_ctx(), out.data(), tot.data(), n).ok());
    ASSERT_EQ(n, 4u);
    EXPECT_EQ(out[0], 1);  // 3.0, id 1 before id 3
    EXPECT_EQ(out[1], 3);
    EXPECT_EQ(tot[2], (0.1 + 0.2) + 0.3);
    EXPECT_EQ(tot[3], (0.3 + 0.2) + 0.1);
}

// ---- the GPU selection's control logic, with its passes emulated on the CPU ----------

namespace radix = approx::topk::radix;

// Runs radix::select_k (the exact code the GPU engine runs) with every pass
// done by plain loops over the same radix::classify. Materialised buffers are
// shuffled (the GPU fills them in no particular order) and capacities are
// enforced as on the device.
class EmuSelect {
public:
    EmuSelect(const Pairs& p, Order o, uint64_t seed) : p_(p), o_(o), rng_(seed) {}

    bool cancelled() { return false; }
    Status reserve_sure(size_t k) {
        sure_cap_ = k;
        sure_.clear();
        sure_count_ = 0;
        return Status::Ok();
    }
    Status reserve_buf(int b, size_t cap) {
        cap_[b] = std::max(cap_[b], cap);
        return Status::Ok();
    }
    Status zero_hist() {
        hist_.assign(radix::kBins, 0);
        return Status::Ok();
    }
    Status pass(const radix::SrcDesc& d, const radix::PassParams& pp, int mat_buf) {
        ++passes;
        if (!d.full && pp.mat_cap > 0 && d.buf == mat_buf)
            return Status::Error(StatusCode::Internal, "pass reads and writes buffer %d", mat_buf);
        if (pp.mat_cap > 0 && cap_[mat_buf] < pp.mat_cap)
            return Status::Error(StatusCode::Internal, "buffer %d too small", mat_buf);
        if (!d.full && d.n > buf_[d.buf].size()) return Status::Error(StatusCode::Internal, "reads past the buffer");
        std::vector<Elem> mat;
        unsigned long long mat_count = 0;
        for (size_t i = 0; i < d.n; ++i) {
            Elem e = d.full ? Elem{topk::score_key(p_.scores[i], o_), 0, i} : buf_[d.buf][i];
            bool have_lo = !d.full;
            uint64_t lo = e.lo;
            uint32_t digit = 0;
            int state = radix::classify(
                e.hi,
                [&] {
                    ++lo_loads;
                    return topk::id_key(p_.ids[e.idx]);
                },
                lo, have_lo, pp, digit);
            if (state == radix::kIn && pp.hist_w > 0) {
                if (digit >= (1u << pp.hist_w)) return Status::Error(StatusCode::Internal, "digit out of range");
                ++hist_[digit];
            }
            if (state == radix::kOut) continue;
            if (!have_lo) lo = topk::id_key(p_.ids[e.idx]);
            e.lo = lo;
            if (state == radix::kSure) {
                if (sure_count_++ < sure_cap_) sure_.push_back(e);
            } else if (pp.mat_cap > 0) {
                if (mat_count++ < pp.mat_cap) mat.push_back(e);
            }
        }
        if (pp.mat_cap > 0) {
            std::shuffle(mat.begin(), mat.end(), rng_);
            buf_[mat_buf] = std::move(mat);
        }
        return Status::Ok();
    }
    Status read_hist(const unsigned long long*& h) {
        h = hist_.data();
        return Status::Ok();
    }
    Status sort_buf(int b, size_t n) {
        if (n > buf_[b].size()) return Status::Error(StatusCode::Internal, "sort past the buffer");
        sorted_.assign(buf_[b].begin(), buf_[b].begin() + static_cast<std::ptrdiff_t>(n));
        std::sort(sorted_.begin(), sorted_.end(), less);
        return Status::Ok();
    }
    Status sample_threshold(size_t n, size_t r) {
        std::vector<uint64_t> keys(radix::kSamples);
        for (size_t j = 0; j < keys.size(); ++j) keys[j] = topk::score_key(p_.scores[(j * n) / radix::kSamples], o_);
        std::sort(keys.begin(), keys.end());
        t_ = keys[r - 1];
        return Status::Ok();
    }
    Status fast_filter(size_t n, size_t cap, unsigned long long& passed) {
        ++fast_passes;
        std::vector<Elem> mat;
        passed = 0;
        for (size_t i = 0; i < n; ++i) {
            uint64_t hi = topk::score_key(p_.scores[i], o_);
            if (hi > t_) continue;
            if (passed++ < cap) mat.push_back(Elem{hi, topk::id_key(p_.ids[i]), i});
        }
        std::shuffle(mat.begin(), mat.end(), rng_);
        buf_[0] = std::move(mat);
        return Status::Ok();
    }
    Status finish(size_t c_sure, radix::Tail tail, size_t tail_n) {
        if (sure_count_ != c_sure)
            return Status::Error(StatusCode::Internal, "wrote %zu sure pairs, expected %zu", sure_count_, c_sure);
        std::sort(sure_.begin(), sure_.end(), less);
        out.clear();
        for (const Elem& e : sure_) out.push_back(e.idx);
        const std::vector<Elem>& t = tail == radix::Tail::Sorted ? sorted_
                                     : tail == radix::Tail::Buf0 ? buf_[0]
                                                                 : buf_[1];
        if (tail_n > 0 && (tail == radix::Tail::None || tail_n > t.size()))
            return Status::Error(StatusCode::Internal, "bad tail");
        for (size_t i = 0; i < tail_n; ++i) out.push_back(t[i].idx);
        return Status::Ok();
    }

    std::vector<uint64_t> out;
    int passes = 0, fast_passes = 0;
    size_t lo_loads = 0;

private:
    struct Elem {
        uint64_t hi, lo, idx;
    };
    static bool less(const Elem& a, const Elem& b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }

    const Pairs& p_;
    Order o_;
    std::mt19937_64 rng_;
    std::vector<Elem> buf_[2], sure_, sorted_;
    size_t cap_[2] = {0, 0};
    size_t sure_cap_ = 0, sure_count_ = 0;
    std::vector<unsigned long long> hist_;
    uint64_t t_ = 0;
};

void check_emulated(EmuSelect& emu, const Pairs& p, const std::vector<size_t>& order, size_t k, Order o,
                    const radix::Limits& lim, const char* what) {
    Status st = radix::select_k(emu, p.ids.size(), k, lim);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message;
    ASSERT_EQ(emu.out.size(), k) << what;
    for (size_t i = 0; i < k; ++i) {
        ASSERT_EQ(p.ids[emu.out[i]], p.ids[order[i]]) << what << " at rank " << i;
        ASSERT_EQ(topk::score_key(p.scores[emu.out[i]], o), topk::score_key(p.scores[order[i]], o))
            << what << " at rank " << i;
    }
}

TEST(TopkRadix, DigitHelpers) {
    // set_digit places each digit where digit_of reads it, including across the halves
    std::mt19937_64 rng(5);
    for (int rep = 0; rep < 200; ++rep) {
        uint64_t hi = rng(), lo = rng(), phi = 0, plo = 0;
        for (int p = 0; p < 128; p += radix::digit_width(p)) {
            int w = radix::digit_width(p);
            uint32_t d = radix::digit_of(hi, lo, p, w);
            ASSERT_LT(d, 1u << w);
            ASSERT_TRUE(radix::prefix_hi_ok(hi, p, phi) && radix::prefix_lo_ok(lo, p, plo)) << p;
            radix::set_digit(phi, plo, p, w, d);
            ASSERT_TRUE(radix::prefix_hi_ok(hi, p + w, phi) && radix::prefix_lo_ok(lo, p + w, plo)) << p;
            ASSERT_FALSE(radix::prefix_hi_ok(hi ^ 1, 128, phi) && radix::prefix_lo_ok(lo, 128, plo));
        }
        EXPECT_EQ(phi, hi);
        EXPECT_EQ(plo, lo);
    }
}

TEST(TopkRadix, EmulatedPassesSmallLimits) {
    // tiny limits: every level, materialisation, re-materialisation, the 128-bit
    // end and the sampled threshold are exercised on small inputs
    radix::Limits lim;
    lim.sort_max = 50;
    lim.mat_cap = 700;
    lim.fast_min = 3000;
    uint64_t seed = 300;
    for (size_t n : {size_t(1), size_t(2), size_t(17), size_t(2000), size_t(5000), size_t(20000)})
        for (int d = 0; d < 6; ++d)
            for (Order o : {Order::Desc, Order::Asc})
                for (bool dup : {false, true}) {
                    if (dup && n < 10) continue;
                    Pairs p = make_pairs(n, kDists[d], ++seed, dup);
                    std::vector<size_t> order = naive_order(p, o);
                    for (size_t k : {size_t(1), size_t(10), size_t(100), n / 3, n}) {
                        if (k == 0 || k > n) continue;
                        char what[160];
                        std::snprintf(what, sizeof what, "n=%zu dist=%s order=%s k=%zu dup_ids=%d", n, kDistNames[d],
                                      o == Order::Desc ? "desc" : "asc", k, dup);
                        EmuSelect emu(p, o, 99 + k);
                        check_emulated(emu, p, order, k, o, lim, what);
                        if (HasFatalFailure()) return;
                    }
                }
}

TEST(TopkRadix, EmulatedPassesIdenticalKeys) {
    // more identical (score, id) pairs at the k-th place than can be sorted:
    // the selection runs through all 128 bits and takes any of them
    radix::Limits lim;
    lim.sort_max = 50;
    lim.mat_cap = 700;
    lim.fast_min = 3000;
    for (size_t n : {size_t(500), size_t(2000), size_t(6000)})
        for (Order o : {Order::Desc, Order::Asc}) {
            Pairs p = make_pairs(n, Dist::Uniform, n);
            for (size_t i = 0; i < n; ++i)
                if (i % 20 != 0) {
                    p.ids[i] = -7;
                    p.scores[i] = 0.5;
                }
            std::vector<size_t> order = naive_order(p, o);
            for (size_t k : {size_t(1), size_t(10), size_t(30), size_t(300), n - 1}) {
                char what[96];
                std::snprintf(what, sizeof what, "identical n=%zu k=%zu", n, k);
                EmuSelect emu(p, o, 3);
                check_emulated(emu, p, order, k, o, lim, what);
                if (HasFatalFailure()) return;
            }
        }
}

TEST(TopkRadix, EmulatedPassesDefaultLimits) {
    // the device's limits on 1.2M pairs: the sampled fast path (one pass over
    // the input, ids read only for the few that pass) and its fall-back
    const size_t n = 1200000;
    radix::Limits lim;
    for (int d : {0, 1, 5}) {
        Pairs p = make_pairs(n, kDists[d], 700 + d, false);
        std::vector<size_t> order = naive_order(p, Order::Desc);
        for (size_t k : {size_t(10), size_t(1000)}) {
            EmuSelect emu(p, Order::Desc, 1);
            check_emulated(emu, p, order, k, Order::Desc, lim, kDistNames[d]);
            if (HasFatalFailure()) return;
            EXPECT_EQ(emu.fast_passes, 1) << kDistNames[d];
            if (d != 1) {  // continuous scores: the fast path suffices, no full pass of the exact path
                EXPECT_EQ(emu.passes, 0) << kDistNames[d] << " k=" << k;
                EXPECT_EQ(emu.lo_loads, 0u) << kDistNames[d];
            } else {  // five values: too many pass the threshold; the exact path runs over the input
                EXPECT_GE(emu.passes, 2) << "few-values k=" << k;
            }
        }
    }
}

TEST(TopkGpu, SelectMatchesFullSort) {
    SKIP_WITHOUT_GPU();
    select_suite(gpu_ctx(), {1, 2, 3, 100, 2000, 70000, 600000});
}

// Sizes that take the sampled fast path (n >= 2^20) and the exact path's
// deeper levels (ties over every score bit and into the ids).
TEST(TopkGpu, LargeInputsBothPaths) {
    SKIP_WITHOUT_GPU();
    const size_t n = (size_t(1) << 21) + 37;
    uint64_t seed = 900;
    for (int d = 0; d < 6; ++d)
        for (Order o : {Order::Desc, Order::Asc}) {
            Pairs p = make_pairs(n, kDists[d], ++seed, d == 2);
            std::vector<size_t> order = naive_order(p, o);
            for (size_t k : {size_t(1), size_t(100), size_t(1000), size_t(70000), n / 2}) {
                char what[160];
                std::snprintf(what, sizeof what, "n=%zu dist=%s order=%s k=%zu", n, kDistNames[d],
                              o == Order::Desc ? "desc" : "asc", k);
                check_select(p, order, k, o, gpu_ctx(), what);
                if (HasFatalFailure()) return;
            }
        }
}

TEST(TopkGpu, TiesBeyondTheMaterialiseLimit) {
    SKIP_WITHOUT_GPU();
    // 5M pairs, 3 score values: the k-th's bucket holds ~1.7M ties, resolved by id digits
    Pairs p = make_pairs(5000000, Dist::FewValues, 77);
    for (size_t i = 0; i < p.scores.size(); ++i) p.scores[i] = static_cast<double>(i % 3);
    std::vector<size_t> order = naive_order(p, Order::Desc);
    for (size_t k : {size_t(10), size_t(2000000), size_t(4000000)}) {
        check_select(p, order, k, Order::Desc, gpu_ctx(), "ties");
        if (HasFatalFailure()) return;
    }
}

TEST(TopkGpu, AutoFallsBackOnMemoryLimit) {
    SKIP_WITHOUT_GPU();
    Pairs p = make_pairs(50000, Dist::Uniform, 3);
    ExecContext c;
    c.mode = DeviceMode::Auto;
    c.gpu_min_rows = 0;
    c.gpu_memory_limit = 1024;  // far too little
    RunStats stats;
    c.stats = &stats;
    std::vector<int64_t> ids(10);
    std::vector<double> s(10);
    size_t n_out = 0;
    ASSERT_TRUE(topk::select(p.ids.data(), p.scores.data(), p.ids.size(), 10, Order::Desc, c, ids.data(), s.data(),
                             n_out)
                    .ok());
    EXPECT_EQ(stats.device, Device::Cpu);
    EXPECT_NE(stats.notice[0], '\0');
    expect_same(p, naive_order(p, Order::Desc), 10, Order::Desc, ids, s, n_out, "fallback");
    c.mode = DeviceMode::Gpu;
    Status st = topk::select(p.ids.data(), p.scores.data(), p.ids.size(), 10, Order::Desc, c, ids.data(), s.data(),
                             n_out);
    EXPECT_EQ(st.code, StatusCode::GpuOutOfMemory);
}

// ---- NRA ----------------------------------------------------------------------------

struct NraData {
    int m = 0;
    std::vector<int64_t> obj_ids;                                // every object (some in no list)
    std::vector<std::vector<double>> value;                      // [object][list]
    std::vector<std::vector<char>> has;                          // [object][list]
    std::vector<std::vector<std::pair<int64_t, double>>> lists;  // sorted by score DESC (ties shuffled)
    std::vector<double> min;
};

enum class NraDist { Uniform, Correlated, Anti, Zipf, Coarse };

NraData make_nra(size_t n_obj, int m, NraDist dist, double present, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> U(0, 1);
    NraData d;
    d.m = m;
    d.obj_ids.resize(n_obj);
    d.value.assign(n_obj, std::vector<double>(m, 0));
    d.has.assign(n_obj, std::vector<char>(m, 0));
    for (size_t i = 0; i < n_obj; ++i) d.obj_ids[i] = static_cast<int64_t>(i * 3 + 1) - static_cast<int64_t>(n_obj);
    std::shuffle(d.obj_ids.begin(), d.obj_ids.end(), rng);
    for (size_t i = 0; i < n_obj; ++i) {
        double base = U(rng);
        for (int j = 0; j < m; ++j) {
            double v = 0;
            switch (dist) {
                case NraDist::Uniform: v = U(rng); break;
                case NraDist::Correlated: v = base + 0.05 * U(rng); break;
                case NraDist::Anti: v = (j % 2 == 0 ? base : 1 - base) + 0.02 * U(rng); break;
                case NraDist::Zipf: v = std::floor(20.0 / (1 + std::floor(1.0 / (U(rng) + 1e-3)))); break;
                case NraDist::Coarse: v = static_cast<double>(rng() % 4) - 1.5; break;
            }
            d.value[i][j] = v;
            d.has[i][j] = U(rng) < present;
        }
    }
    d.lists.resize(m);
    d.min.assign(m, 0);
    for (int j = 0; j < m; ++j) {
        for (size_t i = 0; i < n_obj; ++i)
            if (d.has[i][j]) d.lists[j].push_back({d.obj_ids[i], d.value[i][j]});
        std::shuffle(d.lists[j].begin(), d.lists[j].end(), rng);  // ties in random order
        std::stable_sort(d.lists[j].begin(), d.lists[j].end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        double mn = kInf;
        for (auto& e : d.lists[j]) mn = std::min(mn, e.second);
        d.min[j] = d.lists[j].empty() ? 0.0 : mn;
    }
    return d;
}

double total_of(const NraData& d, size_t i) {
    double v[topk::kMaxNraLists];
    for (int j = 0; j < d.m; ++j) v[j] = d.has[i][j] ? d.value[i][j] : d.min[j];
    return topk::nra_sum(v, d.m);
}

// The exact answer: (total DESC, id ASC), first k.
std::vector<int64_t> brute_force(const NraData& d, size_t k) {
    std::vector<size_t> idx(d.obj_ids.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        double ta = total_of(d, a), tb = total_of(d, b);
        return ta > tb || (ta == tb && d.obj_ids[a] < d.obj_ids[b]);
    });
    std::vector<int64_t> out;
    for (size_t i = 0; i < std::min(k, idx.size()); ++i) out.push_back(d.obj_ids[idx[i]]);
    return out;
}

struct NraRun {
    int64_t rounds = 0;
    bool need_unlisted = false;
};

// The rule of the issue, evaluated from scratch after every round: the lists
// are read `batch` entries at a time; a list is exhausted once a read returns
// fewer than asked.
NraRun naive_nra(const NraData& d, size_t k, size_t batch) {
    const int m = d.m;
    for (int64_t r = 1;; ++r) {
        std::vector<size_t> depth(m);
        std::vector<char> ex(m);
        double bound[topk::kMaxNraLists];
        std::map<int64_t, std::pair<uint32_t, std::vector<double>>> cand;  // id -> (seen, scores)
        for (int j = 0; j < m; ++j) {
            size_t len = d.lists[j].size();
            depth[j] = std::min<size_t>(static_cast<size_t>(r) * batch, len);
            ex[j] = len < static_cast<size_t>(r) * batch;
            bound[j] = ex[j] ? d.min[j] : (depth[j] > 0 ? d.lists[j][depth[j] - 1].second : kInf);
            for (size_t e = 0; e < depth[j]; ++e) {
                auto& c = cand[d.lists[j][e].first];
                if (c.second.empty()) c.second.assign(m, 0);
                c.first |= 1u << j;
                c.second[j] = d.lists[j][e].second;
            }
        }
        bool all_ex = std::all_of(ex.begin(), ex.end(), [](char x) { return x != 0; });
        struct C {
            int64_t id;
            double w, b;
            bool exact;
        };
        std::vector<C> cs;
        for (auto& [id, c] : cand) {
            double wv[topk::kMaxNraLists], bv[topk::kMaxNraLists];
            bool exact = true;
            for (int j = 0; j < m; ++j) {
                bool s = c.first >> j & 1u;
                wv[j] = s ? c.second[j] : d.min[j];
                bv[j] = s ? c.second[j] : bound[j];
                if (!s && !ex[j]) exact = false;
            }
            cs.push_back({id, topk::nra_sum(wv, m), topk::nra_sum(bv, m), exact});
        }
        std::sort(cs.begin(), cs.end(),
                  [](const C& a, const C& b) { return a.w > b.w || (a.w == b.w && a.id < b.id); });
        if (cs.size() < k) {
            if (all_ex) return {r, true};
            continue;
        }
        double wk = cs[k - 1].w;
        int64_t idk = cs[k - 1].id;
        double t = topk::nra_sum(bound, m);
        if (!(wk > t)) {
            if (all_ex) return {r, true};
            continue;
        }
        bool ok = true;
        for (size_t i = k; i < cs.size() && ok; ++i)
            ok = cs[i].b < wk || (cs[i].b == wk && cs[i].exact && cs[i].id > idk);
        if (ok) return {r, false};
        if (r > 100000) return {-1, false};
    }
}

struct EngineRun {
    NraRun run;
    std::vector<int64_t> winners;
    topk::NraInfo info;
};

// Drives the engine the way the glue does.
EngineRun engine_nra(const NraData& d, size_t k, size_t batch, const ExecContext& ctx) {
    EngineRun out;
    topk::NraConfig cfg;
    cfg.m = d.m;
    cfg.k = static_cast<int64_t>(k);
    cfg.min_score = d.min.data();
    cfg.rows_hint = static_cast<int64_t>(d.obj_ids.size());
    topk::Nra* nra = nullptr;
    Status st = topk::nra_create(cfg, ctx, nra);
    EXPECT_TRUE(st.ok()) << st.message;
    if (!st.ok()) return out;
    std::vector<size_t> depth(d.m, 0);
    std::vector<char> ex(d.m, 0);
    std::vector<std::vector<int64_t>> ids(d.m);
    std::vector<std::vector<double>> sc(d.m);
    std::vector<topk::NraList> lists(d.m);
    topk::NraProgress pr;
    for (;;) {
        for (int j = 0; j < d.m; ++j) {
            ids[j].clear();
            sc[j].clear();
            if (!ex[j]) {
                size_t take = std::min(batch, d.lists[j].size() - depth[j]);
                for (size_t e = 0; e < take; ++e) {
                    ids[j].push_back(d.lists[j][depth[j] + e].first);
                    sc[j].push_back(d.lists[j][depth[j] + e].second);
                }
                depth[j] += take;
                if (take < batch) ex[j] = 1;
            }
            lists[j].ids = ids[j].data();
            lists[j].scores = sc[j].data();
            lists[j].n = ids[j].size();
            lists[j].exhausted = ex[j] != 0;
        }
        st = topk::nra_round(nra, lists.data(), ctx, pr);
        EXPECT_TRUE(st.ok()) << st.message;
        if (!st.ok()) break;
        if (pr.done || pr.need_unlisted) break;
    }
    out.run.need_unlisted = pr.need_unlisted;
    if (st.ok() && pr.need_unlisted) {
        std::vector<int64_t> unlisted;
        for (size_t i = 0; i < d.obj_ids.size(); ++i)
            if (std::none_of(d.has[i].begin(), d.has[i].end(), [](char c) { return c != 0; }))
                unlisted.push_back(d.obj_ids[i]);
        std::sort(unlisted.begin(), unlisted.end());
        if (unlisted.size() > k) unlisted.resize(k);
        st = topk::nra_add_unlisted(nra, unlisted.data(), unlisted.size(), ctx);
        EXPECT_TRUE(st.ok()) << st.message;
    }
    out.info = topk::nra_info(nra);
    out.run.rounds = out.info.rounds;
    out.winners.assign(k, 0);
    size_t n = 0;
    if (st.ok()) {
        st = topk::nra_winners(nra, ctx, out.winners.data(), k, n);
        EXPECT_TRUE(st.ok()) << st.message;
    }
    out.winners.resize(n);
    topk::nra_destroy(nra);
    return out;
}

// The winners, re-ranked by their exact totals (what the glue does after its
// final fetch), equal the brute-force answer.
void expect_answer(const NraData& d, size_t k, const std::vector<int64_t>& winners, const char* what) {
    std::map<int64_t, size_t> pos;
    for (size_t i = 0; i < d.obj_ids.size(); ++i) pos[d.obj_ids[i]] = i;
    std::vector<double> vals;
    for (int64_t id : winners) {
        size_t i = pos.at(id);
        for (int j = 0; j < d.m; ++j) vals.push_back(d.has[i][j] ? d.value[i][j] : d.min[j]);
    }
    std::vector<int64_t> ranked(winners.size() + 1);
    std::vector<double> totals(winners.size() + 1);
    size_t n = 0;
    ASSERT_TRUE(topk::rank_by_sum(winners.data(), vals.data(), winners.size(), d.m, k, cpu_ctx(), ranked.data(),
                                  totals.data(), n)
                    .ok());
    ranked.resize(n);
    EXPECT_EQ(ranked, brute_force(d, k)) << what;
}

const NraDist kNraDists[] = {NraDist::Uniform, NraDist::Correlated, NraDist::Anti, NraDist::Zipf, NraDist::Coarse};
const char* const kNraNames[] = {"uniform", "correlated", "anti", "zipf", "coarse"};

void nra_suite(const ExecContext& ctx) {
    uint64_t seed = 500;
    struct Case {
        size_t n;
        int m;
        size_t k, batch;
        double present;
    };
    const Case cases[] = {
        {400, 2, 5, 7, 1.0},    {400, 3, 10, 1, 0.9},     {600, 4, 20, 16, 0.8}, {300, 1, 7, 5, 1.0},
        {250, 4, 300, 32, 0.7}, {500, 3, 1, 64, 1.0},     {800, 4, 50, 25, 0.5}, {200, 5, 12, 3, 0.95},
        {150, 2, 149, 10, 0.6}, {3000, 4, 100, 128, 1.0},
    };
    for (const Case& c : cases)
        for (int dd = 0; dd < 5; ++dd) {
            NraData d = make_nra(c.n, c.m, kNraDists[dd], c.present, ++seed);
            char what[200];
            std::snprintf(what, sizeof what, "n=%zu m=%d k=%zu batch=%zu present=%.2f dist=%s", c.n, c.m, c.k, c.batch,
                          c.present, kNraNames[dd]);
            NraRun ref = naive_nra(d, c.k, c.batch);
            ASSERT_GT(ref.rounds, 0) << what;
            EngineRun got = engine_nra(d, c.k, c.batch, ctx);
            if (::testing::Test::HasFailure()) return;
            EXPECT_EQ(got.run.rounds, ref.rounds) << what;
            EXPECT_EQ(got.run.need_unlisted, ref.need_unlisted) << what;
            for (int j = 0; j < d.m; ++j)
                EXPECT_EQ(static_cast<size_t>(got.info.depth[j]),
                          std::min(d.lists[j].size(), static_cast<size_t>(ref.rounds) * c.batch))
                    << what << " list " << j;
            expect_answer(d, c.k, got.winners, what);
            if (ctx.mode == DeviceMode::Gpu) {
                EXPECT_EQ(got.info.device, Device::Gpu) << what;
            }
            if (::testing::Test::HasFailure()) return;
        }
}

TEST(TopkNra, CpuStopsWhereTheNaiveRuleStops) { nra_suite(cpu_ctx()); }

TEST(TopkNra, GpuStopsWhereTheNaiveRuleStops) {
    SKIP_WITHOUT_GPU();
    nra_suite(gpu_ctx());
}

TEST(TopkNra, GpuEqualsCpuOnThePaperSetup) {
    SKIP_WITHOUT_GPU();
    // 4 independent uniform lists, k = 100: depth about (24k/N)^(1/4) of each list
    NraData d = make_nra(200000, 4, NraDist::Uniform, 1.0, 42);
    EngineRun c = engine_nra(d, 100, 1024, cpu_ctx());
    EngineRun g = engine_nra(d, 100, 1024, gpu_ctx());
    EXPECT_EQ(c.run.rounds, g.run.rounds);
    EXPECT_EQ(c.winners, g.winners);
    expect_answer(d, 100, g.winners, "paper setup");
    double frac = static_cast<double>(g.info.depth[0]) / 200000.0;
    double expect = std::pow(24.0 * 100 / 200000.0, 0.25);
    EXPECT_NEAR(frac, expect, 0.25 * expect);
}

TEST(TopkNra, GpuMemoryLimitContinuesOnCpu) {
    SKIP_WITHOUT_GPU();
    NraData d = make_nra(20000, 3, NraDist::Uniform, 0.9, 43);
    ExecContext c;
    c.mode = DeviceMode::Auto;
    c.gpu_min_rows = 0;
    c.gpu_memory_limit = 256 * 1024;  // enough to start, not for the candidates
    RunStats stats;
    c.stats = &stats;
    EngineRun got = engine_nra(d, 50, 256, c);
    EngineRun ref = engine_nra(d, 50, 256, cpu_ctx());
    EXPECT_EQ(got.run.rounds, ref.run.rounds);
    EXPECT_EQ(got.winners, ref.winners);
    EXPECT_EQ(got.info.device, Device::Cpu);
    EXPECT_NE(stats.notice[0], '\0');
}

TEST(TopkNra, PaperSetupDepthCpu) {
    // N = 20000, 4 uniform lists, k = 100: (24k/N)^(1/4) = 0.59 of each list
    NraData d = make_nra(20000, 4, NraDist::Uniform, 1.0, 44);
    EngineRun got = engine_nra(d, 100, 256, cpu_ctx());
    NraRun ref = naive_nra(d, 100, 256);
    EXPECT_EQ(got.run.rounds, ref.rounds);
    expect_answer(d, 100, got.winners, "paper setup, CPU");
    double frac = static_cast<double>(got.info.depth[0]) / 20000.0;
    EXPECT_GT(frac, 0.4);
    EXPECT_LT(frac, 0.8);
    EXPECT_TRUE(got.info.phase2);
}

TEST(TopkNra, RejectsBadInput) {
    double mins[2] = {0, 0};
    topk::NraConfig cfg;
    cfg.m = 2;
    cfg.k = 3;
    cfg.min_score = mins;
    topk::Nra* nra = nullptr;
    ASSERT_TRUE(topk::nra_create(cfg, cpu_ctx(), nra).ok());
    int64_t ids[3] = {1, 2, 3};
    double up[3] = {0.1, 0.5, 0.2};
    double ok[3] = {0.5, 0.4, 0.4};
    topk::NraList l[2];
    l[0] = {ids, up, 3, false};
    l[1] = {ids, ok, 3, false};
    topk::NraProgress pr;
    Status st = topk::nra_round(nra, l, cpu_ctx(), pr);
    EXPECT_EQ(st.code, StatusCode::InvalidArgument);  // not descending
    topk::nra_destroy(nra);

    ASSERT_TRUE(topk::nra_create(cfg, cpu_ctx(), nra).ok());
    int64_t dup[3] = {1, 2, 1};
    l[0] = {dup, ok, 3, false};
    l[1] = {ids, ok, 3, false};
    st = topk::nra_round(nra, l, cpu_ctx(), pr);
    EXPECT_EQ(st.code, StatusCode::InvalidArgument);  // an id twice in one list
    topk::nra_destroy(nra);

    double nan_min[2] = {0, std::numeric_limits<double>::quiet_NaN()};
    cfg.min_score = nan_min;
    EXPECT_EQ(topk::nra_create(cfg, cpu_ctx(), nra).code, StatusCode::InvalidArgument);
    cfg.min_score = mins;
    cfg.m = 33;
    EXPECT_EQ(topk::nra_create(cfg, cpu_ctx(), nra).code, StatusCode::ProgramLimit);
    cfg.m = 2;
    cfg.k = 0;
    EXPECT_EQ(topk::nra_create(cfg, cpu_ctx(), nra).code, StatusCode::InvalidArgument);
}

}  // namespace
