// The take-all (census) stratum's row choice (core/sample_census.hpp) against a
// full sort, its independence of the reading order, and both estimators'
// treatment of a stratum kept whole (core/sample_estimate.hpp, the sample
// path; core/synopsis.hpp, the box path): weight 1, no variance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/sample_census.hpp"
#include "core/sample_estimate.hpp"
#include "core/exec.hpp"
#include "core/synopsis.hpp"

using namespace approx;
using namespace approx::sample;

namespace {

// The reference: every row ranked by (|value|, key), the t highest.
std::vector<int64_t> sorted_top(const std::vector<double>& v, const std::vector<uint64_t>& key, int64_t t) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i)
        if (!std::isnan(v[i])) idx.push_back(i);
    std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
        const double x = std::fabs(v[a]), y = std::fabs(v[b]);
        return x != y ? x > y : key[a] > key[b];
    });
    idx.resize(std::min<int64_t>(t, static_cast<int64_t>(idx.size())));
    std::sort(idx.begin(), idx.end());
    return idx;
}

std::vector<int64_t> sorted(std::vector<int64_t> r) {
    std::sort(r.begin(), r.end());
    return r;
}

}  // namespace

TEST(SampleCensus, SizeIsTheShareOfTheBudgetPerMeasure) {
    EXPECT_EQ(census_size(10000, 1), 1000);
    EXPECT_EQ(census_size(10000, 3), 333);  // floor: the census never exceeds its share
    EXPECT_EQ(census_size(10000, 0), 0);
    EXPECT_EQ(census_size(0, 2), 0);
    EXPECT_EQ(census_size(9, 1), 0);  // a tenth of 9 rows is no row
    EXPECT_EQ(census_size(10000, 1, 0.2), 2000);
}

TEST(SampleCensus, KeepsTheLargestMagnitudesWhateverTheOrder) {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> ln(0, 2);
    std::uniform_real_distribution<double> u(0, 1);
    const int64_t n = 20000, t = 137;
    std::vector<double> v(n);
    std::vector<uint64_t> key(n);
    for (int64_t i = 0; i < n; ++i) {
        v[i] = (u(rng) < 0.5 ? -1 : 1) * ln(rng);  // negative values rank by magnitude
        if (i % 97 == 0) v[i] = NAN;               // NULLs never enter
        if (i % 101 == 0) v[i] = 5000;             // ties at the top, broken by the key
        key[i] = census_key(static_cast<uint64_t>(i), 42);
    }
    const std::vector<int64_t> want = sorted_top(v, key, t);
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    for (int round = 0; round < 3; ++round) {
        CensusTop top(t);
        for (int64_t i : order) top.offer(v[i], key[i], i);
        EXPECT_EQ(top.size(), t);
        EXPECT_EQ(sorted(top.rows()), want) << "reading order " << round;
        EXPECT_EQ(top.threshold(), 5000.0);  // 198 rows hold 5000: the census is made of them alone
        // the caller-owned form (what glue keeps in palloc'd memory) keeps the same rows
        std::vector<CensusEntry> heap(t);
        int64_t used = 0;
        for (int64_t i : order) census_offer(heap.data(), used, t, v[i], key[i], i);
        std::vector<int64_t> kept;
        for (int64_t i = 0; i < used; ++i) kept.push_back(heap[i].row);
        EXPECT_EQ(sorted(kept), want);
        std::shuffle(order.begin(), order.end(), rng);
    }
}

TEST(SampleCensus, FewerRowsThanItsSizeKeepsThemAll) {
    CensusTop top(10);
    for (int64_t i = 0; i < 4; ++i) top.offer(static_cast<double>(i), census_key(i, 0), i);
    top.offer(NAN, census_key(9, 0), 9);
    EXPECT_EQ(sorted(top.rows()), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(top.threshold(), 0.0);
    CensusTop none(0);
    none.offer(1e300, 1, 0);
    EXPECT_EQ(none.size(), 0);
    EXPECT_TRUE(std::isinf(none.threshold()));
}

TEST(SampleCensus, KeysAreDistinctAndSalted) {
    std::vector<uint64_t> k;
    for (uint64_t i = 0; i < 10000; ++i) k.push_back(census_key(i, 1));
    std::sort(k.begin(), k.end());
    EXPECT_EQ(std::adjacent_find(k.begin(), k.end()), k.end());
    EXPECT_NE(census_key(5, 1), census_key(5, 2));
}

// The census stratum is a stratum "sampled whole" (rows = sampled): its rows
// add their sum exactly and nothing to the variance.
TEST(SampleCensus, AStratumKeptWholeAddsNoVariance) {
    std::mt19937_64 rng(3);
    std::normal_distribution<double> nd(100, 20);
    const Stratum design[2] = {{10000, 90}, {10, 10}};  // the rest (sampled), the census (whole)
    GroupPart rest{0, {}}, census{1, {}};
    for (int i = 0; i < 90; ++i) add(rest.m, nd(rng));
    double census_sum = 0;
    for (int i = 0; i < 10; ++i) {
        add(census.m, 1e8 * (i + 1));
        census_sum += 1e8 * (i + 1);
    }
    Options opt;
    opt.groups_within_strata = true;
    Estimate only_census, only_rest, both;
    ASSERT_TRUE(estimate(Aggregate::Sum, design, 2, &census, 1, opt, only_census).ok());
    EXPECT_TRUE(only_census.exact);
    EXPECT_EQ(only_census.lower, census_sum);
    EXPECT_EQ(only_census.upper, census_sum);
    const GroupPart parts[2] = {rest, census};
    ASSERT_TRUE(estimate(Aggregate::Sum, design, 2, &rest, 1, opt, only_rest).ok());
    ASSERT_TRUE(estimate(Aggregate::Sum, design, 2, parts, 2, opt, both).ok());
    EXPECT_NEAR(both.estimate, only_rest.estimate + census_sum, 1e-6 * census_sum);
    EXPECT_NEAR(both.se, only_rest.se, 1e-9 * only_rest.se);
    EXPECT_FALSE(both.exact);
}

// The reason for the census: a population whose sum is made by a few huge
// values. Over repeated 1% samples of one population, the interval of a
// sample with the census covers at least as often as without, and at least
// 0.9 of the time (without it, most samples hold none of the huge values).
TEST(SampleCensus, CoversASumMadeByAFewHugeValues) {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> nd(100, 20);
    const int64_t n = 100000, budget = 1000;
    std::vector<double> v(n);
    double truth = 0;
    for (int64_t i = 0; i < n; ++i) {
        v[i] = i % 20000 == 7 ? 1e8 : nd(rng);
        truth += v[i];
    }
    CensusTop top(census_size(budget, 1));
    for (int64_t i = 0; i < n; ++i) top.offer(v[i], census_key(static_cast<uint64_t>(i), 0), i);
    std::vector<char> in_census(n, 0);
    for (int64_t r : top.rows()) in_census[r] = 1;
    std::vector<int64_t> rest;
    GroupPart census{1, {}};
    for (int64_t i = 0; i < n; ++i)
        if (in_census[i])
            add(census.m, v[i]);
        else
            rest.push_back(i);
    const int reps = 200;
    int covered_census = 0, covered_plain = 0;
    std::vector<int64_t> all(n);
    for (int64_t i = 0; i < n; ++i) all[i] = i;
    for (int r = 0; r < reps; ++r) {
        // plain: budget rows of all; census: budget - t rows of the rest
        std::shuffle(all.begin(), all.end(), rng);
        std::shuffle(rest.begin(), rest.end(), rng);
        GroupPart plain{0, {}}, sampled{0, {}};
        for (int64_t i = 0; i < budget; ++i) add(plain.m, v[all[i]]);
        const int64_t m_rest = budget - top.size();
        for (int64_t i = 0; i < m_rest; ++i) add(sampled.m, v[rest[i]]);
        const Stratum plain_design[1] = {{double(n), double(budget)}};
        const Stratum census_design[2] = {{double(rest.size()), double(m_rest)}, {double(top.size()), double(top.size())}};
        const GroupPart parts[2] = {sampled, census};
        Estimate a, b;
        ASSERT_TRUE(estimate(Aggregate::Sum, plain_design, 1, &plain, 1, Options(), a).ok());
        ASSERT_TRUE(estimate(Aggregate::Sum, census_design, 2, parts, 2, Options(), b).ok());
        covered_plain += a.lower <= truth && truth <= a.upper;
        covered_census += b.lower <= truth && truth <= b.upper;
    }
    EXPECT_GE(covered_census, covered_plain);
    EXPECT_GE(covered_census, 0.9 * reps);
    EXPECT_LT(covered_plain, 0.9 * reps);  // the failure the census exists for
}

// The box path over the same sample (core/synopsis: KDE boxes with smoothing
// off) weighs a census stratum 1 and gives it no variance: the whole table's
// SUM is the sampled stratum's estimate plus the census rows' exact sum, with
// the sampled stratum's own standard error.
TEST(SampleCensus, BoxPathWeighsTheCensusStratumOne) {
    namespace syn = approx::synopsis;
    std::mt19937_64 rng(5);
    std::normal_distribution<double> nd(100, 20);
    const int64_t N = 100000, t = 100, m_rest = 900;
    std::vector<double> sample;
    double rest_sum = 0, census_sum = 0;
    for (int64_t i = 0; i < m_rest; ++i) {
        sample.push_back(nd(rng));
        rest_sum += sample.back();
    }
    for (int64_t i = 0; i < t; ++i) {
        sample.push_back(1e8 * static_cast<double>(i + 1));
        census_sum += sample.back();
    }
    std::vector<syn::Stratum> strata = {{N - t, 0, m_rest}, {t, m_rest, m_rest + t}};
    syn::Synopsis s;
    s.d = 1;
    s.m = m_rest + t;
    s.n_rows = N;
    s.sample_size = s.m;
    s.sample = sample.data();
    s.strata = strata.data();
    s.n_strata = 2;
    ExecContext ctx;
    ctx.mode = DeviceMode::Cpu;
    ctx.cpu_threads = 1;
    ASSERT_TRUE(syn::finalize(s, syn::Bandwidth::Scott, syn::Smoothing::Never, ctx).ok());
    ASSERT_TRUE(syn::validate(s).ok());
    // three boxes over every value: the table, the sampled stratum, the census
    const std::vector<double> lo(3, -INFINITY), hi(3, INFINITY);
    const std::vector<int32_t> which = {-1, 0, 1};
    syn::BoxBatch b;
    b.q = 3;
    b.lo = lo.data();
    b.hi = hi.data();
    b.agg = syn::Aggregate::Sum;
    b.column = 0;
    b.stratum = which.data();
    std::vector<syn::BoxEstimate> e(3);
    ASSERT_TRUE(syn::evaluate(s, b, ctx, e.data()).ok());
    const double rest_estimate = static_cast<double>(N - t) / m_rest * rest_sum;
    EXPECT_NEAR(e[2].estimate, census_sum, 1e-12 * census_sum);
    EXPECT_EQ(e[2].se, 0.0);
    EXPECT_NEAR(e[1].estimate, rest_estimate, 1e-12 * rest_estimate);
    EXPECT_NEAR(e[0].estimate, rest_estimate + census_sum, 1e-12 * census_sum);
    EXPECT_NEAR(e[0].se, e[1].se, 1e-9 * e[1].se);
    EXPECT_GT(e[1].se, 0.0);
}

// census_pays: the top 0.1% of a measure's rows against the break-even of a
// tenth of the budget. Light tails (normal, uniform, exponential: the top
// hold ~0.3-5% of the spread) decline; heavy tails and rare huge values take
// it; a constant or a census of no row never does.
TEST(SampleCensus, PaysForHeavyTailsOnly) {
    const int64_t n = 200000, t = n / 1000;
    auto pays = [&](auto draw) {
        std::mt19937_64 rng(5);
        CensusTop top(t);
        CensusSpread all;
        std::vector<CensusEntry> heap(t);
        int64_t used = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double y = draw(rng, i);
            all.add(y);
            census_offer(heap.data(), used, t, y, census_key(static_cast<uint64_t>(i), 0), i);
        }
        return census_pays(all, heap.data(), used);
    };
    std::normal_distribution<double> nd(100, 20);
    std::uniform_real_distribution<double> u(0, 1);
    std::exponential_distribution<double> ex(1);
    std::lognormal_distribution<double> ln(0, 2);
    EXPECT_FALSE(pays([&](std::mt19937_64& r, int64_t) { return nd(r); }));
    EXPECT_FALSE(pays([&](std::mt19937_64& r, int64_t) { return u(r); }));
    EXPECT_FALSE(pays([&](std::mt19937_64& r, int64_t) { return ex(r); }));
    EXPECT_FALSE(pays([&](std::mt19937_64&, int64_t) { return 42.0; }));
    EXPECT_FALSE(pays([&](std::mt19937_64& r, int64_t) { return 1e9 + nd(r); }));  // offset: no tail
    EXPECT_TRUE(pays([&](std::mt19937_64& r, int64_t) { return ln(r); }));
    EXPECT_TRUE(pays([&](std::mt19937_64& r, int64_t) { return std::pow(1 - u(r), -1 / 1.1); }));  // Pareto 1.1
    EXPECT_TRUE(pays([&](std::mt19937_64& r, int64_t i) { return i % 20000 == 7 ? 1e8 : nd(r); }));
    EXPECT_TRUE(pays([&](std::mt19937_64& r, int64_t) { return -ln(r); }));  // a tail of either sign
    CensusSpread s;
    for (double y : {1.0, 2.0, 3.0}) s.add(y);
    EXPECT_FALSE(census_pays(s, nullptr, 0));
    s.add(NAN);  // NULL: skipped
    EXPECT_EQ(s.n, 3);
}

// census_sort: the kept entries from the highest rank down (ties by key),
// so that a smaller census is a prefix of a larger one.
TEST(SampleCensus, SortPutsTheTopFirst) {
    std::mt19937_64 rng(9);
    std::lognormal_distribution<double> ln(0, 1);
    const int64_t n = 5000, t = 300;
    std::vector<double> v(n);
    std::vector<uint64_t> key(n);
    std::vector<CensusEntry> heap(t);
    int64_t used = 0;
    for (int64_t i = 0; i < n; ++i) {
        v[i] = i % 7 == 0 ? 3.0 : ln(rng);  // ties
        key[i] = census_key(static_cast<uint64_t>(i), 1);
        census_offer(heap.data(), used, t, v[i], key[i], i);
    }
    census_sort(heap.data(), used);
    for (int64_t k : {int64_t(1), int64_t(50), t}) {
        std::vector<int64_t> prefix;
        for (int64_t i = 0; i < k; ++i) prefix.push_back(heap[i].row);
        EXPECT_EQ(sorted(prefix), sorted_top(v, key, k)) << k;
    }
}
