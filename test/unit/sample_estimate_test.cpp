// The sample path's weighted aggregates (core/sample_estimate.hpp) against
// naive double-precision references written here, and a coverage simulation
// of their intervals over repeated stratified samples of generated
// populations (normal, lognormal sigma = 2, Pareto alpha = 1.5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/sample_estimate.hpp"

using namespace approx;
using namespace approx::sample;

namespace {

// Naive moments: two passes.
Moments naive_moments(const std::vector<double>& y) {
    Moments m;
    m.n = static_cast<double>(y.size());
    for (double v : y) m.mean += v;
    m.mean /= m.n;
    for (double v : y) {
        m.m2 += (v - m.mean) * (v - m.mean);
        m.m3 += (v - m.mean) * (v - m.mean) * (v - m.mean);
        m.m4 += (v - m.mean) * (v - m.mean) * (v - m.mean) * (v - m.mean);
    }
    return m;
}

Moments moments_of(const std::vector<double>& y) {
    Moments m;
    for (double v : y) add(m, v);
    return m;
}

// percentile_cont / percentile_disc of equally weighted values (PostgreSQL's definitions).
double naive_cont(std::vector<double> v, double f) {
    std::sort(v.begin(), v.end());
    double h = f * (v.size() - 1);
    size_t a = static_cast<size_t>(std::floor(h)), b = static_cast<size_t>(std::ceil(h));
    return a == b ? v[a] : v[a] + (v[b] - v[a]) * (h - a);
}
double naive_disc(std::vector<double> v, double f) {
    std::sort(v.begin(), v.end());
    long long r = static_cast<long long>(std::ceil(f * v.size()));
    return v[static_cast<size_t>(std::max(1LL, r) - 1)];
}

}  // namespace

TEST(SampleEstimate, MomentsMatchTwoPassAtAnOffset) {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> ln(0, 1);
    std::vector<double> a, b, all;
    for (int i = 0; i < 300; ++i) a.push_back(1e9 + ln(rng));
    for (int i = 0; i < 77; ++i) b.push_back(1e9 + 3 * ln(rng));
    all = a;
    all.insert(all.end(), b.begin(), b.end());
    Moments ma = moments_of(a), mb = moments_of(b);
    merge(ma, mb);
    Moments ref = naive_moments(all);
    EXPECT_EQ(ma.n, ref.n);
    EXPECT_NEAR(ma.mean, ref.mean, 1e-6);
    EXPECT_NEAR(ma.m2 / ref.m2, 1, 1e-6);
    EXPECT_NEAR(ma.m3 / ref.m3, 1, 1e-4);
    EXPECT_NEAR(ma.m4 / ref.m4, 1, 1e-4);
    EXPECT_NEAR(ma.sum / (ref.mean * ref.n), 1, 1e-12);
}

TEST(SampleEstimate, StudentTQuantiles) {
    // Tables of t_{0.975}(df).
    const double df[] = {1, 2, 3, 5, 10, 30, 100, 2.5};
    const double t[] = {12.706204736, 4.302652730, 3.182446305, 2.570581836, 2.228138852, 2.042272456, 1.983971519, 3.574654842};
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(student_t_quantile(0.975, df[i]), t[i], 2e-6 * t[i]) << df[i];
    EXPECT_NEAR(student_t_quantile(0.025, 7), -student_t_quantile(0.975, 7), 1e-12);
    EXPECT_NEAR(student_t_quantile(0.95, 1e9), 1.6448536269514722, 1e-9);
}

// One stratified design and a group, estimated and checked against the
// Horvitz-Thompson formulas computed here from the rows.
TEST(SampleEstimate, HorvitzThompsonMatchesNaive) {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> nd(50, 10);
    const Stratum design[3] = {{1000, 100}, {500, 20}, {40, 40}};
    std::vector<GroupPart> parts;
    double est_c = 0, est_s = 0, v_c = 0, v_s = 0;
    for (int s = 0; s < 3; ++s) {
        const double m = design[s].sampled, N = design[s].rows;
        std::vector<double> group, full;  // full: all m rows, zeros outside the group
        for (int i = 0; i < m; ++i) {
            bool in = i % 3 == 0;
            double y = nd(rng);
            if (in) group.push_back(y);
            full.push_back(in ? y : 0);
        }
        GroupPart p;
        p.stratum = s;
        p.m = moments_of(group);
        parts.push_back(p);
        double k = group.size(), sy = 0, ss = 0, sc = 0;
        for (double y : full) sy += y;
        for (double y : full) ss += (y - sy / m) * (y - sy / m);
        for (double y : full) sc += y != 0 ? 1 : 0;
        est_c += N / m * k;
        est_s += N / m * sy;
        double pc = k / m;
        v_c += N * N * (1 - m / N) * (pc * (1 - pc) * m / (m - 1)) / m;
        v_s += N * N * (1 - m / N) * (ss / (m - 1)) / m;
        (void)sc;
    }
    Options o;
    o.groups_within_strata = true;
    Estimate c, s, a;
    ASSERT_TRUE(estimate(Aggregate::Count, design, 3, parts.data(), 3, o, c).ok());
    ASSERT_TRUE(estimate(Aggregate::Sum, design, 3, parts.data(), 3, o, s).ok());
    ASSERT_TRUE(estimate(Aggregate::Avg, design, 3, parts.data(), 3, o, a).ok());
    EXPECT_NEAR(c.estimate, est_c, 1e-9 * est_c);
    EXPECT_NEAR(s.estimate, est_s, 1e-9 * est_s);
    EXPECT_NEAR(a.estimate, est_s / est_c, 1e-9);
    // The plug-in variance plus a Wilson allowance: at least the plug-in, not far above it here (k >= 7).
    EXPECT_GE(c.se * c.se, v_c * (1 - 1e-9));
    EXPECT_LE(c.se * c.se, v_c * 1.5);
    EXPECT_GE(s.se * s.se, v_s * (1 - 1e-9));
    EXPECT_LE(s.se * s.se, v_s * 1.5);
    EXPECT_FALSE(c.exact);
    EXPECT_LT(c.lower, c.estimate);
    EXPECT_GT(s.upper, s.estimate);
    EXPECT_GT(a.df, 1);
}

TEST(SampleEstimate, ZeroWidthOnlyWhenWhole) {
    const Stratum whole[2] = {{10, 10}, {5, 5}};
    const Stratum part[2] = {{10, 10}, {50, 5}};
    GroupPart p[2];
    p[0].stratum = 0;
    p[1].stratum = 1;
    for (double y : {2.0, 2.0, 2.0}) add(p[0].m, y);
    for (double y : {2.0, 2.0}) add(p[1].m, y);
    Options o;
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        Estimate e;
        ASSERT_TRUE(estimate(agg, whole, 2, p, 2, o, e).ok());
        EXPECT_TRUE(e.exact);
        EXPECT_EQ(e.lower, e.upper);
        EXPECT_EQ(e.estimate, agg == Aggregate::Count ? 5 : agg == Aggregate::Sum ? 10 : 2);
        // every value equal, every sample row in the group, one stratum not whole: still a width
        ASSERT_TRUE(estimate(agg, part, 2, p, 2, o, e).ok());
        EXPECT_FALSE(e.exact);
        EXPECT_LT(e.lower, e.estimate) << static_cast<int>(agg);
        EXPECT_GT(e.upper, e.estimate) << static_cast<int>(agg);
        // the group seen in the whole stratum only: the other may hold unseen rows
        ASSERT_TRUE(estimate(agg, part, 2, p, 1, o, e).ok());
        EXPECT_FALSE(e.exact);
        EXPECT_GT(e.upper, e.estimate) << static_cast<int>(agg);
        // ... unless the groups lie within their strata
        Options within = o;
        within.groups_within_strata = true;
        ASSERT_TRUE(estimate(agg, part, 2, p, 1, within, e).ok());
        EXPECT_TRUE(e.exact);
    }
    // Values all 0 in a sample that is not whole: nothing bounds the SUM.
    GroupPart zero;
    zero.stratum = 1;
    for (int i = 0; i < 5; ++i) add(zero.m, 0.0);
    Estimate e;
    ASSERT_TRUE(estimate(Aggregate::Sum, part, 2, &zero, 1, o, e).ok());
    EXPECT_FALSE(e.estimable);
    EXPECT_TRUE(std::isinf(e.upper));
    // A stratum without sample rows may hold anything.
    const Stratum empty[2] = {{10, 10}, {50, 0}};
    ASSERT_TRUE(estimate(Aggregate::Count, empty, 2, p, 1, o, e).ok());
    EXPECT_FALSE(e.estimable);
    // No rows: COUNT 0 with an upper bound, SUM 0 and AVG NULL, both unbounded
    // (tests below); NULL only where every stratum was sampled whole.
    ASSERT_TRUE(estimate(Aggregate::Count, part, 2, nullptr, 0, o, e).ok());
    EXPECT_EQ(e.estimate, 0);
    EXPECT_GT(e.upper, 0);
    ASSERT_TRUE(estimate(Aggregate::Sum, whole, 2, nullptr, 0, o, e).ok());
    EXPECT_TRUE(e.null);
    EXPECT_TRUE(e.exact);
    // Bad stratum.
    GroupPart bad;
    bad.stratum = 2;
    add(bad.m, 1);
    EXPECT_EQ(estimate(Aggregate::Sum, part, 2, &bad, 1, o, e).code, StatusCode::InvalidArgument);
}

// ---- few rows, whole strata, outliers (issue 27, "honest intervals") ------------------

namespace {
// One stratum of N = 100,000 rows sampled at m = 1,000 (f = 1%).
const Stratum kOnePercent[1] = {{100000, 1000}};
GroupPart part_of_values(int32_t stratum, const std::vector<double>& y) {
    GroupPart p;
    p.stratum = stratum;
    for (double v : y) add(p.m, v);
    return p;
}
}  // namespace

// COUNT with x = 0 hits: [0, upper], upper a binomial bound (rule of three
// 3 N / m = 300, Clopper-Pearson 368), never the point 0.
TEST(SampleEstimate, CountOfNoHitIsABinomialBound) {
    Estimate e;
    ASSERT_TRUE(estimate(Aggregate::Count, kOnePercent, 1, nullptr, 0, Options(), e).ok());
    EXPECT_EQ(e.estimate, 0);
    EXPECT_EQ(e.lower, 0);
    EXPECT_GE(e.upper, 300);
    EXPECT_LE(e.upper, 500);
    EXPECT_FALSE(e.exact);
    // x = m: every sample row in the group, the stratum not whole: the lower
    // bound leaves room for the ~3 N / m rows the sample may have missed.
    GroupPart all = part_of_values(0, std::vector<double>(1000, 1.0));
    ASSERT_TRUE(estimate(Aggregate::Count, kOnePercent, 1, &all, 1, Options(), e).ok());
    EXPECT_EQ(e.estimate, 100000);
    EXPECT_LE(e.lower, 100000 - 300);
    EXPECT_GE(e.upper, e.estimate);
    // x = 1: the lower bound may reach 0, the upper is well above the estimate 100.
    GroupPart one = part_of_values(0, {1.0});
    ASSERT_TRUE(estimate(Aggregate::Count, kOnePercent, 1, &one, 1, Options(), e).ok());
    EXPECT_EQ(e.estimate, 100);
    EXPECT_GE(e.upper, 400);
}

// SUM / AVG from 0 or 1 values of a stratum not sampled whole: the sample
// cannot bound them; from 2 values: a finite interval of positive width.
TEST(SampleEstimate, FewValuesSaySo) {
    Estimate e;
    // 0 values: SUM 0 (the HT estimate of no sample row), AVG NULL; (-inf, inf).
    ASSERT_TRUE(estimate(Aggregate::Sum, kOnePercent, 1, nullptr, 0, Options(), e).ok());
    EXPECT_FALSE(e.null);
    EXPECT_EQ(e.estimate, 0);
    EXPECT_FALSE(e.estimable);
    EXPECT_EQ(e.lower, -INFINITY);
    EXPECT_EQ(e.upper, INFINITY);
    ASSERT_TRUE(estimate(Aggregate::Avg, kOnePercent, 1, nullptr, 0, Options(), e).ok());
    EXPECT_TRUE(e.null);
    EXPECT_FALSE(e.exact);
    EXPECT_FALSE(e.estimable);
    EXPECT_EQ(e.upper, INFINITY);
    // Rows of the group whose values are all NULL (a part of no value) in a
    // stratum not whole: unknown, also where the groups lie within their strata.
    GroupPart nulls;
    nulls.stratum = 0;
    Options within;
    within.groups_within_strata = true;
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        ASSERT_TRUE(estimate(agg, kOnePercent, 1, &nulls, 1, within, e).ok());
        EXPECT_FALSE(e.exact);
        EXPECT_FALSE(e.estimable);
    }
    // 1 value: the estimate is kept, the interval is (-inf, inf).
    GroupPart one = part_of_values(0, {7.0});
    ASSERT_TRUE(estimate(Aggregate::Sum, kOnePercent, 1, &one, 1, Options(), e).ok());
    EXPECT_EQ(e.estimate, 700);
    EXPECT_FALSE(e.estimable);
    EXPECT_EQ(e.lower, -INFINITY);
    ASSERT_TRUE(estimate(Aggregate::Avg, kOnePercent, 1, &one, 1, Options(), e).ok());
    EXPECT_EQ(e.estimate, 7);
    EXPECT_FALSE(e.estimable);
    // ... also beside many values of a whole stratum: the sampled stratum's share is unknown.
    const Stratum mixed[2] = {{50, 50}, {100000, 1000}};
    GroupPart parts[2] = {part_of_values(0, std::vector<double>(50, 3.0)), part_of_values(1, {7.0})};
    ASSERT_TRUE(estimate(Aggregate::Sum, mixed, 2, parts, 2, Options(), e).ok());
    EXPECT_FALSE(e.estimable);
    // 2 values: finite, lower < estimate < upper, for SUM and AVG.
    GroupPart two = part_of_values(0, {7.0, 9.0});
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        ASSERT_TRUE(estimate(agg, kOnePercent, 1, &two, 1, Options(), e).ok());
        EXPECT_TRUE(e.estimable);
        EXPECT_TRUE(std::isfinite(e.lower) && std::isfinite(e.upper));
        EXPECT_LT(e.lower, e.estimate);
        EXPECT_GT(e.upper, e.estimate);
        EXPECT_GT(e.df, 0);
    }
    // A whole stratum: exact, zero width, with 0, 1 or 2 values.
    const Stratum whole[1] = {{2, 2}};
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        ASSERT_TRUE(estimate(agg, whole, 1, &one, 1, Options(), e).ok());
        EXPECT_TRUE(e.exact);
        EXPECT_EQ(e.lower, e.upper);
        ASSERT_TRUE(estimate(agg, whole, 1, &two, 1, Options(), e).ok());
        EXPECT_TRUE(e.exact);
        EXPECT_EQ(e.lower, e.upper);
        ASSERT_TRUE(estimate(agg, whole, 1, nullptr, 0, Options(), e).ok());
        EXPECT_TRUE(e.exact);
        EXPECT_EQ(e.null, agg != Aggregate::Count);
    }
}

// Zero-inflated SUM: the zeros say nothing about the spread of the values
// that make the sum; one value other than 0 cannot bound it, two give a t of
// one degree of freedom however many zeros came with them.
TEST(SampleEstimate, ZerosAreNotInformativeRows) {
    std::vector<double> y(49, 0.0);
    y.push_back(5.0);
    GroupPart one = part_of_values(0, y);
    EXPECT_EQ(one.m.nonzero, 1);
    Estimate e;
    ASSERT_TRUE(estimate(Aggregate::Sum, kOnePercent, 1, &one, 1, Options(), e).ok());
    EXPECT_FALSE(e.estimable);
    EXPECT_EQ(e.estimate, 500);
    y[0] = 3.0;
    GroupPart two = part_of_values(0, y);
    ASSERT_TRUE(estimate(Aggregate::Sum, kOnePercent, 1, &two, 1, Options(), e).ok());
    EXPECT_TRUE(e.estimable);
    EXPECT_LT(e.df, 2.0);  // 1 from the values, a little more from the (known) allowance; 50 rows would give 49
    // merged states keep the count
    Moments a = part_of_values(0, {0.0, 2.0}).m, b = part_of_values(0, {0.0, 0.0, 4.0}).m;
    merge(a, b);
    EXPECT_EQ(a.nonzero, 2);
}

// One huge value among ordinary ones: the interval allows the sample to
// have drawn one copy of it too many or too few (its HT weight w y either way).
TEST(SampleEstimate, HugeOutlierWidensBothSides) {
    std::vector<double> y(999, 1.0);
    y.push_back(1e9);
    GroupPart p = part_of_values(0, y);
    const double w = 100, outlier = w * 1e9;
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        Estimate e;
        ASSERT_TRUE(estimate(agg, kOnePercent, 1, &p, 1, Options(), e).ok());
        ASSERT_TRUE(e.estimable);
        const double scale = agg == Aggregate::Sum ? outlier : outlier / 100000;  // AVG: over N rows
        EXPECT_GE(e.upper - e.estimate, scale) << static_cast<int>(agg);
        EXPECT_GE(e.estimate - e.lower, 0.5 * scale) << static_cast<int>(agg);
    }
}

// AVG of a small domain: the linearised variance times k / (k - 1) is the
// t interval of the group's own values (one stratum, f -> 0).
TEST(SampleEstimate, SmallDomainAverageIsTheTInterval) {
    const Stratum huge[1] = {{1e12, 1000}};
    const std::vector<double> y = {3.0, 5.0, 10.0};
    GroupPart p = part_of_values(0, y);
    Estimate e;
    ASSERT_TRUE(estimate(Aggregate::Avg, huge, 1, &p, 1, Options(), e).ok());
    Moments m = naive_moments(y);
    // s^2 / k of the group's values; m / (m - 1) from the stratum's own s^2
    EXPECT_NEAR(e.se, std::sqrt(m.m2 / (m.n - 1) / m.n * 1000.0 / 999.0), 1e-6 * e.se);
}

// No value seen: NULL, exact only where every stratum was sampled whole;
// otherwise unknown, (-inf, inf).
TEST(SampleEstimate, PercentileOfNoValue) {
    const Stratum whole[2] = {{6, 6}, {5, 5}};
    const Stratum partial[2] = {{6, 6}, {500, 5}};
    Estimate e;
    ASSERT_TRUE(percentile(Percentile::Cont, 0.5, whole, 2, nullptr, 0, Options(), e).ok());
    EXPECT_TRUE(e.null);
    EXPECT_TRUE(e.exact);
    ASSERT_TRUE(percentile(Percentile::Disc, 0.5, partial, 2, nullptr, 0, Options(), e).ok());
    EXPECT_TRUE(e.null);
    EXPECT_FALSE(e.exact);
    EXPECT_FALSE(e.estimable);
    EXPECT_TRUE(std::isinf(e.lower) && e.lower < 0);
    EXPECT_TRUE(std::isinf(e.upper) && e.upper > 0);
}

TEST(SampleEstimate, PercentilesOfWholeStrataArePostgres) {
    // ties, negatives, an odd count
    std::vector<double> v = {5, 1, 3, 3, 3, -2, 8, 8, 13, 0.5, 3};
    const Stratum design[2] = {{6, 6}, {5, 5}};
    for (double f : {0.0, 0.1, 0.25, 0.5, 0.63, 0.9, 1.0}) {
        for (Percentile kind : {Percentile::Cont, Percentile::Disc}) {
            std::vector<WeightedValue> rows;
            for (size_t i = 0; i < v.size(); ++i) rows.push_back({v[i], static_cast<int32_t>(i < 6 ? 0 : 1)});
            Estimate e;
            ASSERT_TRUE(percentile(kind, f, design, 2, rows.data(), rows.size(), Options(), e).ok());
            EXPECT_EQ(e.estimate, kind == Percentile::Cont ? naive_cont(v, f) : naive_disc(v, f)) << f;
            EXPECT_TRUE(e.exact);
            EXPECT_EQ(e.lower, e.upper);
        }
    }
}

TEST(SampleEstimate, WeightedPercentileIsTheExpandedOne) {
    // Integer weights N / m = 3 and 2: the same as the values repeated.
    const Stratum design[2] = {{12, 4}, {6, 3}};
    std::vector<double> a = {4, 9, 1, 7}, b = {2, 9, 5};
    std::vector<double> expanded;
    for (double x : a) expanded.insert(expanded.end(), 3, x);
    for (double x : b) expanded.insert(expanded.end(), 2, x);
    for (double f : {0.0, 0.2, 0.5, 0.77, 1.0}) {
        for (Percentile kind : {Percentile::Cont, Percentile::Disc}) {
            std::vector<WeightedValue> rows;
            for (double x : a) rows.push_back({x, 0});
            for (double x : b) rows.push_back({x, 1});
            Estimate e;
            ASSERT_TRUE(percentile(kind, f, design, 2, rows.data(), rows.size(), Options(), e).ok());
            EXPECT_NEAR(e.estimate, kind == Percentile::Cont ? naive_cont(expanded, f) : naive_disc(expanded, f),
                        1e-12)
                << f;
            EXPECT_FALSE(e.exact);
            EXPECT_LE(e.lower, e.estimate);
            EXPECT_GE(e.upper, e.estimate);
        }
    }
    Estimate e;
    std::vector<WeightedValue> one = {{1, 0}};
    EXPECT_EQ(percentile(Percentile::Cont, 1.5, design, 2, one.data(), 1, Options(), e).code, StatusCode::OutOfRange);
    EXPECT_TRUE(percentile(Percentile::Cont, 0.5, design, 2, one.data(), 0, Options(), e).ok());
    EXPECT_TRUE(e.null);
    // One row: the sample bounds neither side.
    ASSERT_TRUE(percentile(Percentile::Cont, 0.5, design, 2, one.data(), 1, Options(), e).ok());
    EXPECT_FALSE(e.estimable);
}

namespace {
// percentile_cont / _disc over ORDER BY x DESC (PostgreSQL reads the input in
// that order: largest first, NaN before every number), equally weighted.
std::vector<double> sorted_descending(std::vector<double> v) {
    std::sort(v.begin(), v.end(), [](double x, double y) { return std::isnan(x) ? !std::isnan(y) : (!std::isnan(y) && x > y); });
    return v;
}
double naive_cont_desc(std::vector<double> v, double f) {
    v = sorted_descending(v);
    double h = f * (v.size() - 1);
    size_t a = static_cast<size_t>(std::floor(h)), b = static_cast<size_t>(std::ceil(h));
    return a == b ? v[a] : v[a] + (v[b] - v[a]) * (h - a);
}
double naive_disc_desc(std::vector<double> v, double f) {
    v = sorted_descending(v);
    long long r = static_cast<long long>(std::ceil(f * v.size()));
    return v[static_cast<size_t>(std::max(1LL, r) - 1)];
}
bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
}  // namespace

TEST(SampleEstimate, DescendingPercentileIsTheReversedOrder) {
    Options desc;
    desc.descending = true;
    // The example: over 1..10, percentile_disc(0.1) ... DESC is 10
    // (ascending at 0.9 it is 9: f -> 1 - f is not the reversed order).
    {
        const Stratum one[1] = {{10, 10}};
        std::vector<WeightedValue> rows;
        for (int i = 1; i <= 10; ++i) rows.push_back({static_cast<double>(i), 0});
        Estimate e;
        ASSERT_TRUE(percentile(Percentile::Disc, 0.1, one, 1, rows.data(), rows.size(), desc, e).ok());
        EXPECT_EQ(e.estimate, 10);
        ASSERT_TRUE(percentile(Percentile::Cont, 0.1, one, 1, rows.data(), rows.size(), desc, e).ok());
        EXPECT_DOUBLE_EQ(e.estimate, 9.1);
    }
    // Whole strata (weight 1): PostgreSQL's DESC, ties, negatives, a NaN (first in DESC).
    for (bool with_nan : {false, true}) {
        std::vector<double> v = {5, 1, 3, 3, 3, -2, 8, 8, 13, 0.5, 3};
        if (with_nan) v.push_back(std::nan(""));
        const Stratum design[2] = {{6, 6}, {static_cast<double>(v.size() - 6), static_cast<double>(v.size() - 6)}};
        for (double f : {0.0, 0.05, 0.1, 0.25, 0.5, 0.63, 0.9, 1.0})
            for (Percentile kind : {Percentile::Cont, Percentile::Disc}) {
                std::vector<WeightedValue> rows;
                for (size_t i = 0; i < v.size(); ++i) rows.push_back({v[i], static_cast<int32_t>(i < 6 ? 0 : 1)});
                Estimate e;
                ASSERT_TRUE(percentile(kind, f, design, 2, rows.data(), rows.size(), desc, e).ok());
                double want = kind == Percentile::Cont ? naive_cont_desc(v, f) : naive_disc_desc(v, f);
                EXPECT_TRUE(same_value(e.estimate, want)) << f << " " << e.estimate << " " << want;
                EXPECT_TRUE(e.exact);
            }
    }
    // Integer weights 3 and 2: the expanded values in DESC order.
    {
        const Stratum design[2] = {{12, 4}, {6, 3}};
        std::vector<double> a = {4, 9, 1, 7}, b = {2, 9, 5};
        std::vector<double> expanded;
        for (double x : a) expanded.insert(expanded.end(), 3, x);
        for (double x : b) expanded.insert(expanded.end(), 2, x);
        for (double f : {0.0, 0.1, 0.2, 0.5, 0.77, 1.0})
            for (Percentile kind : {Percentile::Cont, Percentile::Disc}) {
                std::vector<WeightedValue> rows;
                for (double x : a) rows.push_back({x, 0});
                for (double x : b) rows.push_back({x, 1});
                Estimate e;
                ASSERT_TRUE(percentile(kind, f, design, 2, rows.data(), rows.size(), desc, e).ok());
                EXPECT_NEAR(e.estimate,
                            kind == Percentile::Cont ? naive_cont_desc(expanded, f) : naive_disc_desc(expanded, f),
                            1e-12)
                    << f;
                EXPECT_LE(e.lower, e.estimate);
                EXPECT_GE(e.upper, e.estimate);
            }
    }
    // Weights that are not whole numbers (7/3, 11/4, 1), ties across strata:
    // x DESC is -x ascending, negated, bound for bound (the lower bound of
    // DESC is minus the upper of -x ascending), whatever the interval.
    {
        const Stratum design[3] = {{14, 6}, {22, 8}, {5, 5}};
        std::mt19937_64 rng(37);
        std::uniform_int_distribution<int> value(0, 12), stratum(0, 2);
        std::vector<WeightedValue> base;
        for (int i = 0; i < 19; ++i) base.push_back({static_cast<double>(value(rng)) / 4, stratum(rng)});
        int checked_bounds = 0;
        for (double f : {0.0, 0.1, 0.3, 0.5, 0.8, 0.95, 1.0})
            for (Percentile kind : {Percentile::Cont, Percentile::Disc}) {
                std::vector<WeightedValue> d = base, neg = base;
                for (auto& r : neg) r.value = -r.value;
                Estimate ed, ea;
                ASSERT_TRUE(percentile(kind, f, design, 3, d.data(), d.size(), desc, ed).ok());
                ASSERT_TRUE(percentile(kind, f, design, 3, neg.data(), neg.size(), Options(), ea).ok());
                EXPECT_EQ(ed.estimate, -ea.estimate) << f;
                EXPECT_EQ(ed.lower, -ea.upper) << f;
                EXPECT_EQ(ed.upper, -ea.lower) << f;
                EXPECT_EQ(ed.estimable, ea.estimable);
                EXPECT_EQ(ed.se, ea.se);
                EXPECT_LE(ed.lower, ed.estimate);
                EXPECT_GE(ed.upper, ed.estimate);
                checked_bounds += std::isfinite(ed.lower) && std::isfinite(ed.upper) && ed.lower < ed.upper;
            }
        EXPECT_GT(checked_bounds, 4);  // the comparison saw real intervals, not only infinite ones
        // f = 0 DESC is the largest value seen: the population's largest is at
        // least that, so the lower bound is the estimate and the upper unbounded.
        std::vector<WeightedValue> d = base;
        Estimate e;
        ASSERT_TRUE(percentile(Percentile::Disc, 0.0, design, 3, d.data(), d.size(), desc, e).ok());
        EXPECT_EQ(e.lower, e.estimate);
        EXPECT_TRUE(std::isinf(e.upper) && e.upper > 0);
    }
}

// ---- coverage simulation ------------------------------------------------------------

namespace {

enum class Shape { Normal, Lognormal, Pareto };
const char* shape_name(Shape s) { return s == Shape::Normal ? "normal" : s == Shape::Lognormal ? "lognormal(2)" : "pareto(1.5)"; }

struct Population {
    std::vector<double> value;
    std::vector<int> group;   // -1: no group of interest
    std::vector<int> stratum;
};

constexpr int kStrata = 4;
constexpr int kGroups = 4;
const double kGroupShare[kGroups] = {0.5, 0.15, 0.04, 0.012};
const int kStratumRows[kStrata] = {12000, 8000, 5000, 3000};
const int kStratumSample[kStrata] = {500, 350, 250, 250};

Population make_population(Shape shape, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> nd(0, 1);
    Population p;
    for (int s = 0; s < kStrata; ++s)
        for (int i = 0; i < kStratumRows[s]; ++i) {
            double x;
            switch (shape) {
                case Shape::Normal: x = 100 + 20 * nd(rng) + 10 * s; break;
                case Shape::Lognormal: x = std::exp(2 * nd(rng)) * (1 + s); break;
                default: x = std::pow(1 - u(rng), -1 / 1.5) * (1 + s); break;
            }
            double r = u(rng), c = 0;
            int g = -1;
            for (int k = 0; k < kGroups; ++k) {
                c += kGroupShare[k];
                if (r < c) {
                    g = k;
                    break;
                }
            }
            p.value.push_back(x);
            p.group.push_back(g);
            p.stratum.push_back(s);
        }
    return p;
}

struct Tally {
    long hits = 0, total = 0;
    void add(bool h) {
        hits += h;
        ++total;
    }
    double rate() const { return total ? static_cast<double>(hits) / total : 0; }
};

}  // namespace

TEST(SampleEstimate, IntervalCoverageOverRepeatedSamples) {
    const int reps = 400;
    Stratum design[kStrata];
    for (int s = 0; s < kStrata; ++s) design[s] = {static_cast<double>(kStratumRows[s]), static_cast<double>(kStratumSample[s])};
    Tally overall[4];
    for (Shape shape : {Shape::Normal, Shape::Lognormal, Shape::Pareto}) {
        Population pop = make_population(shape, 1000 + static_cast<int>(shape));
        // Truth per group: count, sum, avg, median (percentile_cont 0.5).
        double truth[kGroups][4];
        for (int g = 0; g < kGroups; ++g) {
            std::vector<double> vals;
            for (size_t i = 0; i < pop.value.size(); ++i)
                if (pop.group[i] == g) vals.push_back(pop.value[i]);
            double sum = 0;
            for (double v : vals) sum += v;
            truth[g][0] = vals.size();
            truth[g][1] = sum;
            truth[g][2] = sum / vals.size();
            truth[g][3] = naive_cont(vals, 0.5);
        }
        Tally tally[4][kGroups];
        std::mt19937_64 rng(42 + static_cast<int>(shape));
        std::vector<std::vector<int>> rows_of(kStrata);
        for (size_t i = 0; i < pop.value.size(); ++i) rows_of[pop.stratum[i]].push_back(static_cast<int>(i));
        for (int r = 0; r < reps; ++r) {
            GroupPart parts[kGroups][kStrata];
            std::vector<WeightedValue> values[kGroups];
            for (int s = 0; s < kStrata; ++s) {
                std::vector<int>& idx = rows_of[s];
                for (int g = 0; g < kGroups; ++g) parts[g][s].stratum = s;
                for (int i = 0; i < kStratumSample[s]; ++i) {  // partial Fisher-Yates: a sample without replacement
                    std::uniform_int_distribution<size_t> pick(i, idx.size() - 1);
                    std::swap(idx[i], idx[pick(rng)]);
                    const int row = idx[i], g = pop.group[row];
                    if (g < 0) continue;
                    add(parts[g][s].m, pop.value[row]);
                    values[g].push_back({pop.value[row], s});
                }
            }
            for (int g = 0; g < kGroups; ++g) {
                std::vector<GroupPart> seen;
                for (int s = 0; s < kStrata; ++s)
                    if (parts[g][s].m.n > 0) seen.push_back(parts[g][s]);
                Estimate e[4];
                ASSERT_TRUE(estimate(Aggregate::Count, design, kStrata, seen.data(), seen.size(), Options(), e[0]).ok());
                ASSERT_TRUE(estimate(Aggregate::Sum, design, kStrata, seen.data(), seen.size(), Options(), e[1]).ok());
                ASSERT_TRUE(estimate(Aggregate::Avg, design, kStrata, seen.data(), seen.size(), Options(), e[2]).ok());
                ASSERT_TRUE(percentile(Percentile::Cont, 0.5, design, kStrata, values[g].data(), values[g].size(),
                                       Options(), e[3])
                                .ok());
                for (int a = 0; a < 4; ++a) {
                    if (e[a].null) {  // a group the sample missed: its SUM / AVG / median are not answered
                        tally[a][g].add(false);
                        continue;
                    }
                    ASSERT_LE(e[a].lower, e[a].estimate);
                    ASSERT_GE(e[a].upper, e[a].estimate);
                    ASSERT_LT(e[a].lower, e[a].upper);  // never a point: no stratum is whole
                    tally[a][g].add(e[a].lower <= truth[g][a] && truth[g][a] <= e[a].upper);
                }
            }
        }
        const char* names[4] = {"COUNT", "SUM", "AVG", "median"};
        for (int a = 0; a < 4; ++a) {
            std::printf("[ coverage ] %-13s %-6s", shape_name(shape), names[a]);
            for (int g = 0; g < kGroups; ++g) {
                std::printf("  share %.3f: %.3f", kGroupShare[g], tally[a][g].rate());
                overall[a].hits += tally[a][g].hits;
                overall[a].total += tally[a][g].total;
            }
            std::printf("\n");
        }
    }
    const char* names[4] = {"COUNT", "SUM", "AVG", "median"};
    for (int a = 0; a < 4; ++a) {
        std::printf("[ coverage ] all populations and groups, %-6s: %.3f (%ld intervals, 95%% target)\n", names[a],
                    overall[a].rate(), overall[a].total);
        EXPECT_GE(overall[a].rate(), 0.88) << names[a];
    }
}

// Chao1: no singletons, nothing estimated missing; groups seen once mostly
// (tiny groups under a small sample) estimate most groups missing; groups
// seen many times (large groups) estimate almost none.
TEST(SampleUnseenGroups, Chao1FromSingletonsAndDoubletons) {
    EXPECT_EQ(unseen_groups(0, 0), 0.0);
    EXPECT_EQ(unseen_groups(1, 0), 0.0);
    EXPECT_DOUBLE_EQ(unseen_groups(10, 0), 45.0);
    EXPECT_DOUBLE_EQ(unseen_groups(10, 4), 9.0);
    std::mt19937_64 rng(7);
    std::bernoulli_distribution take(0.1);
    for (int rows_per_group : {4, 50}) {
        int64_t seen = 0, once = 0, twice = 0;
        for (int g = 0; g < 2000; ++g) {
            int k = 0;
            for (int r = 0; r < rows_per_group; ++r) k += take(rng);
            seen += k > 0;
            once += k == 1;
            twice += k == 2;
        }
        double unseen = unseen_groups(once, twice);
        double share = unseen / (static_cast<double>(seen) + unseen);
        double truth = 1.0 - static_cast<double>(seen) / 2000.0;
        if (rows_per_group == 4) {
            EXPECT_GT(share, 0.5) << "truth " << truth;
        } else {
            EXPECT_LT(share, 0.05) << "truth " << truth;
        }
    }
}

// A group's part in stratum 0, and a stratum's spread.
static GroupPart part_in_stratum0(std::initializer_list<double> values) {
    GroupPart p;
    p.stratum = 0;
    p.m = moments_of(values);
    return p;
}
static StratumSpread spread_of(double n, double variance, double mean_abs, double skewness = 0) {
    StratumSpread s;
    s.n = n;
    s.variance = variance;
    s.mean_abs = mean_abs;
    s.skewness = skewness;
    return s;
}

// SUM and AVG of `g` with and without `spread`: the same interval.
static void expect_spread_unused(const Stratum* design, const GroupPart& g, const StratumSpread& spread) {
    Options own, with;
    with.spread = &spread;
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        Estimate a, b;
        ASSERT_TRUE(estimate(agg, design, 1, &g, 1, own, a).ok());
        ASSERT_TRUE(estimate(agg, design, 1, &g, 1, with, b).ok());
        EXPECT_DOUBLE_EQ(a.lower, b.lower);
        EXPECT_DOUBLE_EQ(a.upper, b.upper);
    }
}

// The stratum's spread (Options::spread): a group of a few alike values in a
// stratum whose sample is far more spread gets a wider SUM / AVG interval
// that holds the one from its own values; COUNT, the estimates, a spread that
// knows no more values than the group, and a group already more spread than
// the floor are unchanged.
TEST(SampleEstimate, StratumSpreadOnlyWidens) {
    const Stratum design[1] = {{10000, 100}};
    GroupPart part;
    part.stratum = 0;
    part.m = moments_of({1.0, 1.2, 0.9, 1.1, 1.0});
    StratumSpread heavy;  // CV^2 = 400 / 5^2 = 16 over 100 values
    heavy.n = 100;
    heavy.variance = 400;
    heavy.mean_abs = 5;
    Options own, borrowed;
    borrowed.spread = &heavy;
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        Estimate a, b;
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, own, a).ok());
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, borrowed, b).ok());
        EXPECT_DOUBLE_EQ(a.estimate, b.estimate);
        EXPECT_LE(b.lower, a.lower);
        EXPECT_GE(b.upper, a.upper);
        if (agg == Aggregate::Count) {
            EXPECT_DOUBLE_EQ(a.lower, b.lower);
            EXPECT_DOUBLE_EQ(a.upper, b.upper);
        } else {
            // AVG: the group's own s^2 is ~0.013, the floor 16 * ~1.06 (~36x
            // the se); SUM's spread is mostly whether a row is the group's,
            // which the floor leaves alone
            EXPECT_GT(b.upper - b.lower, (agg == Aggregate::Avg ? 10 : 2) * (a.upper - a.lower))
                << static_cast<int>(agg);
        }
    }
    auto unchanged = [&](const GroupPart& g, const StratumSpread& spread) { expect_spread_unused(design, g, spread); };
    // no more values than the group's: nothing to borrow
    StratumSpread few = heavy;
    few.n = 5;
    unchanged(part, few);
    // a group more spread than the stratum's relative spread: its own interval
    unchanged(part_in_stratum0({1.0, 50.0, 0.5, 120.0, 3.0}), spread_of(100, 0.01, 1));
}

// The stratum's skewness is borrowed with its spread: a right-skewed
// stratum moves a group's upper bound up and leaves its lower bound where
// the group's own interval has it (the hull); a left-skewed one the
// reverse; the estimate never moves.
TEST(SampleEstimate, StratumSkewnessMovesTheTailSide) {
    const Stratum design[1] = {{10000, 100}};
    const GroupPart part = part_in_stratum0({1.0, 1.2, 0.9, 1.1, 1.0});
    const StratumSpread symmetric = spread_of(100, 400, 5), right = spread_of(100, 400, 5, 8),
                        left = spread_of(100, 400, 5, -8);
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        Options o0, o_right, o_left;
        o0.spread = &symmetric;
        o_right.spread = &right;
        o_left.spread = &left;
        Estimate own, s, r, l;
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, Options(), own).ok());
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, o0, s).ok());
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, o_right, r).ok());
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, o_left, l).ok());
        EXPECT_DOUBLE_EQ(r.estimate, s.estimate);
        EXPECT_DOUBLE_EQ(l.estimate, s.estimate);
        EXPECT_GT(r.upper - r.estimate, 1.5 * (s.upper - s.estimate)) << static_cast<int>(agg);
        EXPECT_GT(r.skew, 0);
        EXPECT_LE(r.lower, own.lower);
        EXPECT_GT(l.estimate - l.lower, 1.5 * (s.estimate - s.lower)) << static_cast<int>(agg);
        EXPECT_LT(l.skew, 0);
        EXPECT_GE(l.upper, own.upper);
    }
    // a group more skewed than its stratum keeps its own third moment
    // (and no spread to borrow either)
    expect_spread_unused(design, part_in_stratum0({1.0, 1.0, 1.0, 1.0, 30.0}), spread_of(100, 1e-6, 5, 0.1));
}

// A whole stratum (census) has no variance to borrow: exact stays exact.
TEST(SampleEstimate, StratumSpreadLeavesWholeStrataExact) {
    const Stratum design[1] = {{5, 5}};
    GroupPart part;
    part.stratum = 0;
    part.m = moments_of({1.0, 2.0, 1000.0});
    StratumSpread heavy;
    heavy.n = 5;
    heavy.variance = 1e6;
    heavy.mean_abs = 200;
    Options o;
    o.spread = &heavy;
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        Estimate e;
        ASSERT_TRUE(estimate(agg, design, 1, &part, 1, o, e).ok());
        EXPECT_TRUE(e.exact);
        EXPECT_DOUBLE_EQ(e.lower, e.upper);
    }
}
