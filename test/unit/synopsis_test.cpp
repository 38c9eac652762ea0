// Synopsis engine against naive double-precision references written here:
// sampling (reservoir, hypergeometric, merge), the guard's column modes,
// building, box estimates and intervals, density; CPU = GPU when a GPU exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/gpu.hpp"
#include "core/kde.hpp"
#include "core/synopsis.hpp"
#include "core/synopsis_math.hpp"

using namespace approx;
using namespace approx::synopsis;

namespace {

ExecContext cpu_ctx(int threads = 2) {
    ExecContext ctx;
    ctx.mode = DeviceMode::Cpu;
    ctx.cpu_threads = threads;
    return ctx;
}

bool have_gpu() {
    char why[256];
    return gpu::available(why, sizeof why);
}

// A built synopsis owning its sample.
struct Built {
    std::vector<double> sample;
    Synopsis s;
};

Built build(std::vector<double> rows, int d, int64_t n_rows, Bandwidth b, Smoothing sm, const ExecContext& ctx) {
    Built out;
    out.sample = std::move(rows);
    out.s.d = d;
    out.s.m = static_cast<int64_t>(out.sample.size()) / d;
    out.s.n_rows = n_rows;
    out.s.sample_size = out.s.m;
    out.s.sample = out.sample.data();
    Status st = finalize(out.s, b, sm, ctx);
    EXPECT_TRUE(st.ok()) << st.message;
    out.s.sample = out.sample.data();
    return out;
}

// Mixed data: col 0 smooth normal, col 1 heaped at 0.5 (wide step), col 2 few values.
std::vector<double> mixed_rows(size_t m, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::normal_distribution<double> n01(0, 1);
    std::vector<double> r(m * 3);
    for (size_t i = 0; i < m; ++i) {
        r[i * 3] = n01(g) * 2 + 10;
        r[i * 3 + 1] = std::round((n01(g) * 3 + 50) / 5) * 5;  // multiples of 5
        r[i * 3 + 2] = static_cast<double>(g() % 7);
    }
    return r;
}

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double phi(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }

// A log-scale column by quadrature: the kernel is N(y, h^2) on t = log(x + c)
// (reflected at log(min + c) and log(max + c)); p its mass over the clipped
// box and s = integral of (e^t - c) K over it (Simpson, 4000 panels over
// +-12 h around each piece).
void log_column_reference(double x, double lo, double hi, const Column& col, double& p, double& s) {
    const double c = col.shift, h = col.log_h, L = std::log(col.min + c), U = std::log(col.max + c);
    const double tl = lo + c > 0 ? std::log(lo + c) : -INFINITY, th = hi + c > 0 ? std::log(hi + c) : -INFINITY;
    p = s = 0;
    if (tl <= L && th >= U) {
        p = 1;
        s = x;
        return;
    }
    const double l = std::max(tl, L), u = std::min(th, U);
    if (l > u) return;
    const double y0 = std::log(x + c);
    for (double y : {y0, 2 * L - y0, 2 * U - y0}) {
        p += Phi((u - y) / h) - Phi((l - y) / h);
        double a = std::max(l, y - 12 * h), b = std::min(u, y + 12 * h);
        if (a >= b) continue;
        const int n = 4000;
        double step = (b - a) / n, acc = 0;
        for (int k = 0; k <= n; ++k) {
            double t = a + k * step, f = (std::exp(t) - c) * phi((t - y) / h) / h;
            acc += f * (k == 0 || k == n ? 1 : k % 2 ? 4 : 2);
        }
        s += acc * step / 3;
    }
}

// Naive reference of one box: g_i then the textbook formulas.
BoxEstimate reference(const Synopsis& s, const double* lo, const double* hi, Aggregate agg, int k) {
    std::vector<double> c(s.m), g(s.m);
    for (int64_t i = 0; i < s.m; ++i) {
        double pc = 1, other = 1, sk = 0;
        for (int j = 0; j < s.d; ++j) {
            double x = s.sample[i * s.d + j], h = s.cols[j].box_h, p, sj;
            if (s.cols[j].discrete) {
                p = (x >= lo[j] && x <= hi[j]) ? 1 : 0;
                sj = x * p;
            } else if (s.cols[j].mode == Mode::LogKde) {
                log_column_reference(x, lo[j], hi[j], s.cols[j], p, sj);
            } else if (lo[j] <= s.cols[j].min && hi[j] >= s.cols[j].max) {
                p = 1;  // the box holds the sample's whole range
                sj = x;
            } else {
                // reflection at the sample's range: kernels at x, 2 min - x and 2 max - x over the clipped box
                double l = std::max(lo[j], s.cols[j].min), u = std::min(hi[j], s.cols[j].max);
                p = sj = 0;
                for (double y : {x, 2 * s.cols[j].min - x, 2 * s.cols[j].max - x}) {
                    if (l > u) break;
                    double a = (l - y) / h, b = (u - y) / h;
                    p += Phi(b) - Phi(a);
                    sj += y * (Phi(b) - Phi(a)) - h * (phi(b) - phi(a));
                }
            }
            pc *= p;
            if (j == k) sk = sj; else other *= p;
        }
        c[i] = pc;
        g[i] = sk * other;
    }
    double m = s.m, N = s.n_rows, fpc = s.m >= s.n_rows ? 0 : (N - m) / (N - 1);
    double mc = 0, ms = 0;
    for (int64_t i = 0; i < s.m; ++i) mc += c[i], ms += g[i];
    mc /= m;
    ms /= m;
    double vc = 0, vs = 0, vr = 0, r = ms / mc;
    for (int64_t i = 0; i < s.m; ++i) {
        vc += (c[i] - mc) * (c[i] - mc);
        vs += (g[i] - ms) * (g[i] - ms);
        vr += (g[i] - r * c[i]) * (g[i] - r * c[i]);
    }
    BoxEstimate e;
    if (agg == Aggregate::Count) e.estimate = N * mc, e.se = N * std::sqrt(fpc * vc / (m - 1) / m);
    if (agg == Aggregate::Sum) e.estimate = N * ms, e.se = N * std::sqrt(fpc * vs / (m - 1) / m);
    if (agg == Aggregate::Avg) e.estimate = r, e.se = std::sqrt(fpc * vr / (m - 1) / m) / mc;
    // the smoothing allowance of the smoothed columns the box constrains
    double extra = 0;
    for (int j = 0; j < s.d; ++j)
        if (!s.cols[j].discrete && !(lo[j] <= s.cols[j].min && hi[j] >= s.cols[j].max))
            extra += s.cols[j].interval_scale * s.cols[j].interval_scale - 1;
    e.se *= std::sqrt(1 + extra);
    return e;
}

// Puts column j of a built synopsis on the log scale (positive data) with a
// fixed shift and bandwidth and a widened interval, whatever the guard chose:
// the engines' log path is then exercised.
void force_log_column(Synopsis& s, int j, double shift, double log_h, double interval_scale) {
    Column& c = s.cols[j];
    c.mode = Mode::LogKde;
    c.discrete = false;
    c.shift = shift;
    c.log_h = log_h;
    c.interval_scale = interval_scale;
}

void random_boxes(const Synopsis& s, int64_t q, uint64_t seed, std::vector<double>& lo, std::vector<double>& hi) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(0, 1);
    lo.resize(q * s.d);
    hi.resize(q * s.d);
    for (int64_t b = 0; b < q; ++b)
        for (int j = 0; j < s.d; ++j) {
            const Column& c = s.cols[j];
            double x1 = c.min + (c.max - c.min) * u(g), x2 = c.min + (c.max - c.min) * u(g);
            lo[b * s.d + j] = std::min(x1, x2);
            hi[b * s.d + j] = std::max(x1, x2);
            if (u(g) < 0.2) lo[b * s.d + j] = -INFINITY;
            if (u(g) < 0.2) hi[b * s.d + j] = INFINITY;
        }
}

}  // namespace

TEST(SynopsisSampling, RngIsReproducibleAndBounded) {
    Rng a, b;
    a.seed(42);
    b.seed(42);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next(), b.next());
    for (int i = 0; i < 10000; ++i) {
        ASSERT_LT(a.below(7), 7u);
        double u = a.uniform();
        ASSERT_TRUE(u >= 0 && u < 1);
    }
}

TEST(SynopsisSampling, ReservoirIsUniform) {
    const int N = 50, k = 10, trials = 20000;
    std::vector<int> hits(N);
    for (int t = 0; t < trials; ++t) {
        Reservoir r;
        reservoir_init(r, k, 1000 + t);
        std::vector<int> slots(k, -1);
        for (int row = 0; row < N; ++row) {
            int64_t slot = reservoir_slot(r);
            if (slot >= 0) slots[slot] = row;
        }
        ASSERT_EQ(r.size, k);
        ASSERT_EQ(r.seen, N);
        for (int v : slots) hits[v]++;
    }
    // each row in the sample with probability k/N = 0.2; sd of the count = sqrt(trials 0.2 0.8) = 57
    for (int row = 0; row < N; ++row) EXPECT_NEAR(hits[row], trials * 0.2, 5 * 57.0) << row;
}

TEST(SynopsisSampling, HypergeometricMatchesExactPmf) {
    const int64_t pop = 20, good = 7, draws = 8, trials = 200000;
    std::vector<double> freq(draws + 1);
    Rng rng;
    rng.seed(7);
    for (int t = 0; t < trials; ++t) freq[hypergeometric(rng, pop, good, draws)] += 1;
    auto choose = [](int n, int r) {
        if (r < 0 || r > n) return 0.0;
        double v = 1;
        for (int i = 1; i <= r; ++i) v = v * (n - r + i) / i;
        return v;
    };
    double chi2 = 0;
    for (int x = 0; x <= draws; ++x) {
        double p = choose(good, x) * choose(pop - good, draws - x) / choose(pop, draws);
        if (p == 0) {
            EXPECT_EQ(freq[x], 0) << x;
            continue;
        }
        chi2 += (freq[x] - trials * p) * (freq[x] - trials * p) / (trials * p);
    }
    EXPECT_LT(chi2, 30.0);  // 7 degrees of freedom: P(chi2 > 30) < 1e-4
    // degenerate cases
    EXPECT_EQ(hypergeometric(rng, 10, 10, 4), 4);
    EXPECT_EQ(hypergeometric(rng, 10, 0, 4), 0);
    EXPECT_EQ(hypergeometric(rng, 10, 3, 10), 3);
}

TEST(SynopsisSampling, MergeIsUniformOverTheUnion) {
    const int n1 = 30, n2 = 70, k = 10, trials = 20000;
    std::vector<int> hits(n1 + n2);
    for (int t = 0; t < trials; ++t) {
        std::vector<double> a, b;
        Reservoir ra, rb;
        reservoir_init(ra, k, 3 * t + 1);
        reservoir_init(rb, k, 3 * t + 2);
        a.resize(k);
        b.resize(k);
        for (int row = 0; row < n1; ++row) {
            int64_t slot = reservoir_slot(ra);
            if (slot >= 0) a[slot] = row;
        }
        for (int row = 0; row < n2; ++row) {
            int64_t slot = reservoir_slot(rb);
            if (slot >= 0) b[slot] = n1 + row;
        }
        std::vector<double> out(k);
        int64_t m = 0;
        Rng rng;
        rng.seed(3 * t + 3);
        ASSERT_TRUE(merge_samples(a.data(), k, n1, k, b.data(), k, n2, k, 1, rng, out.data(), m).ok());
        ASSERT_EQ(m, k);
        for (double v : out) hits[static_cast<int>(v)]++;
    }
    for (int row = 0; row < n1 + n2; ++row) EXPECT_NEAR(hits[row], trials * 0.1, 5 * 42.5) << row;
}

TEST(SynopsisSampling, MergeSizes) {
    EXPECT_EQ(merged_size(100, 3, 100, 4), 7);     // small inputs: all rows
    EXPECT_EQ(merged_size(100, 80, 50, 400), 50);  // the smaller sample size
    std::vector<double> a = {1, 2, 3}, b = {4, 5, 6, 7};
    std::vector<double> out(7);
    int64_t m = 0;
    Rng rng;
    rng.seed(1);
    ASSERT_TRUE(merge_samples(a.data(), 3, 3, 100, b.data(), 4, 4, 100, 1, rng, out.data(), m).ok());
    ASSERT_EQ(m, 7);
    std::sort(out.begin(), out.end());
    EXPECT_EQ(out, (std::vector<double>{1, 2, 3, 4, 5, 6, 7}));
    // inconsistent sizes are refused
    EXPECT_FALSE(merge_samples(a.data(), 3, 10, 100, b.data(), 4, 4, 100, 1, rng, out.data(), m).ok());
}

TEST(SynopsisBuild, FindStep) {
    std::vector<double> carats;
    for (int i = 20; i < 300; i += 3) carats.push_back(i / 100.0);
    double step = 0;
    ASSERT_TRUE(find_step(carats.data(), carats.size(), 0.005, step));
    EXPECT_NEAR(step, 0.01, 1e-12);  // 0.20, 0.23, ... are multiples of 0.01
    ASSERT_FALSE(find_step(carats.data(), carats.size(), 0.02, step));  // the step is below h/2
    std::vector<double> thirds = {0.3, 0.6, 1.5, 3.0};
    ASSERT_TRUE(find_step(thirds.data(), thirds.size(), 0.1, step));
    EXPECT_NEAR(step, 0.3, 1e-12);
    std::vector<double> mixed = {0.3, 0.5, 1.1, 2.5};
    ASSERT_TRUE(find_step(mixed.data(), mixed.size(), 0, step));
    EXPECT_NEAR(step, 0.1, 1e-12);
    std::vector<double> prices = {326, 1e6 + 3, 4021, 18823};
    ASSERT_TRUE(find_step(prices.data(), prices.size(), 0.5, step));
    EXPECT_EQ(step, 1);
    std::vector<double> smooth;
    std::mt19937_64 g(5);
    std::normal_distribution<double> n01;
    for (int i = 0; i < 500; ++i) smooth.push_back(n01(g));
    EXPECT_FALSE(find_step(smooth.data(), smooth.size(), 0, step));
}

TEST(SynopsisBuild, DiscreteColumnsAndBandwidths) {
    ExecContext ctx = cpu_ctx();
    Built b = build(mixed_rows(2000, 11), 3, 2000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    const Synopsis& s = b.s;
    EXPECT_FALSE(s.cols[0].discrete);
    EXPECT_TRUE(s.cols[1].discrete);  // multiples of 5, h well below 10
    EXPECT_NEAR(s.cols[1].step, 5, 1e-9);
    EXPECT_TRUE(s.cols[2].discrete);  // 7 distinct values
    // bandwidths are the KDE engine's
    std::vector<double> col0(2000);
    for (int i = 0; i < 2000; ++i) col0[i] = b.sample[i * 3];
    double hb = 0, hd = 0;
    ASSERT_TRUE(kde::plugin_bandwidth(col0.data(), 2000, kde::PluginTarget::Distribution, ctx, hb).ok());
    ASSERT_TRUE(kde::plugin_bandwidth(col0.data(), 2000, kde::PluginTarget::Density, ctx, hd).ok());
    EXPECT_EQ(s.cols[0].box_h, hb);
    EXPECT_EQ(s.cols[0].density_h, hd);
    // statistics
    double mean = 0;
    for (double v : col0) mean += v;
    EXPECT_NEAR(s.cols[0].mean, mean / 2000, 1e-12);
    EXPECT_EQ(s.cols[0].min, *std::min_element(col0.begin(), col0.end()));

    Built never = build(mixed_rows(2000, 11), 3, 2000, Bandwidth::Scott, Smoothing::Never, ctx);
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(never.s.cols[j].discrete);
    Built always = build(mixed_rows(2000, 11), 3, 2000, Bandwidth::Scott, Smoothing::Always, ctx);
    for (int j = 0; j < 3; ++j) EXPECT_FALSE(always.s.cols[j].discrete);
    double hs = 0;
    ASSERT_TRUE(kde::bandwidth(col0.data(), 2000, kde::Method::Scott, ctx, hs).ok());
    EXPECT_EQ(always.s.cols[0].box_h, hs);
}

TEST(SynopsisBuild, RepeatedValuesAreAtoms) {
    // Integer ids from 500 values in 4000 rows (each repeated 8 times on
    // average): step 1 is far below h / 2 and there are more than 64 distinct
    // values, but the column is a set of atoms, and the guard's
    // cross-validation keeps it exact. Integers from 10^5 values (almost all
    // distinct) are smoothed.
    ExecContext ctx = cpu_ctx();
    std::mt19937_64 g(5);
    std::vector<double> rows(4000 * 2);
    for (size_t i = 0; i < 4000; ++i) {
        rows[i * 2] = static_cast<double>(g() % 500);
        rows[i * 2 + 1] = static_cast<double>(g() % 100000);
    }
    Built b = build(rows, 2, 4000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    EXPECT_TRUE(b.s.cols[0].discrete);
    EXPECT_LT(b.s.cols[0].step * 2, b.s.cols[0].box_h);  // not by the step rule
    EXPECT_FALSE(b.s.cols[1].discrete);
    Built always = build(rows, 2, 4000, Bandwidth::Cdf, Smoothing::Always, ctx);
    EXPECT_FALSE(always.s.cols[0].discrete);
}

TEST(SynopsisBuild, ConstantColumnsAndTinySamples) {
    ExecContext ctx = cpu_ctx();
    Built one = build({5.0, -2.0}, 2, 1, Bandwidth::Cdf, Smoothing::Always, ctx);
    EXPECT_TRUE(one.s.cols[0].discrete);
    EXPECT_GT(one.s.cols[0].box_h, 0);
    EXPECT_TRUE(validate(one.s).ok());
    std::vector<double> rows;
    for (int i = 0; i < 300; ++i) rows.push_back(3.0), rows.push_back(i * 0.731);
    Built c = build(rows, 2, 300, Bandwidth::Plugin, Smoothing::Auto, ctx);
    EXPECT_TRUE(c.s.cols[0].discrete);
    EXPECT_FALSE(c.s.cols[1].discrete);
    EXPECT_EQ(c.s.cols[0].sd, 0);
    // infinite data is refused (NaN is NULL: see SynopsisNulls)
    Synopsis bad;
    std::vector<double> nan_rows = {1, INFINITY, 2, 3};
    bad.d = 2;
    bad.m = 2;
    bad.n_rows = 2;
    bad.sample_size = 2;
    bad.sample = nan_rows.data();
    EXPECT_EQ(finalize(bad, Bandwidth::Scott, Smoothing::Auto, ctx).code, StatusCode::DataException);
    bad.d = 0;
    EXPECT_EQ(finalize(bad, Bandwidth::Scott, Smoothing::Auto, ctx).code, StatusCode::InvalidArgument);
}

TEST(SynopsisBuild, Validate) {
    ExecContext ctx = cpu_ctx();
    Built b = build(mixed_rows(200, 3), 3, 1000, Bandwidth::Scott, Smoothing::Auto, ctx);
    b.s.sample_size = 200;
    EXPECT_TRUE(validate(b.s).ok());
    Synopsis t = b.s;
    t.m = 150;
    EXPECT_FALSE(validate(t).ok());
    t = b.s;
    t.cols[1].box_h = 0;
    EXPECT_FALSE(validate(t).ok());
    t = b.s;
    t.cols[0].max = t.cols[0].min;
    EXPECT_FALSE(validate(t).ok());
    t = b.s;
    t.d = 40;
    EXPECT_FALSE(validate(t).ok());
    t = b.s;
    t.cols[2].mean = INFINITY;
    EXPECT_FALSE(validate(t).ok());
    t = b.s;
    t.n_rows = 100;  // m > N
    EXPECT_FALSE(validate(t).ok());
}

// ---- issue #11 row 11: column statistics stable far from 0 -------------------

// Shifted long-double reference of the sample's mean and sd (n - 1).
void ref_stats(const std::vector<double>& rows, int d, int j, long double& mean, long double& sd) {
    const size_t m = rows.size() / d;
    const long double k = rows[j];
    long double s = 0, ss = 0;
    for (size_t i = 0; i < m; ++i) s += rows[i * d + j] - k;
    const long double md = s / m;
    for (size_t i = 0; i < m; ++i) {
        long double c = rows[i * d + j] - k - md;
        ss += c * c;
    }
    mean = k + md;
    sd = std::sqrt(ss / (m - 1));
}

// 0.1.0's formula (naive sum, two-pass), as a synopsis it stored holds.
void legacy_stats(const std::vector<double>& rows, int d, int j, double& mean, double& sd) {
    const size_t m = rows.size() / d;
    double sum = 0, ss = 0;
    for (size_t i = 0; i < m; ++i) sum += rows[i * d + j];
    mean = sum / m;
    for (size_t i = 0; i < m; ++i) ss += (rows[i * d + j] - mean) * (rows[i * d + j] - mean);
    sd = std::sqrt(ss / (m - 1));
}

TEST(SynopsisBuild, StatisticsMatchLongDoubleReference) {
    ExecContext ctx = cpu_ctx();
    std::mt19937_64 g(3);
    std::vector<double> rows;
    for (int i = 1; i <= 5000; ++i) {
        rows.push_back(1e16 + (i % 7) * 2);                                      // the reproducer
        rows.push_back(1e15 + static_cast<double>(g() % 2147483648u) * 1e-9);  // 1e15 + random()
        rows.push_back(std::sin(i * 0.37) * 1e-300);                             // tiny
        rows.push_back(std::cos(i * 0.11) * 1e300);                              // huge
    }
    Built b = build(rows, 4, 5000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    for (int j = 0; j < 4; ++j) {
        long double mean, sd;
        ref_stats(rows, 4, j, mean, sd);
        const double scale = std::max(std::fabs(b.s.cols[j].min), std::fabs(b.s.cols[j].max));
        EXPECT_LE(std::fabs(b.s.cols[j].mean - static_cast<double>(mean)), 4e-16 * scale) << "column " << j;
        EXPECT_LT(std::fabs(b.s.cols[j].sd / static_cast<double>(sd) - 1), 1e-12)
            << "column " << j << ": sd " << b.s.cols[j].sd << " reference " << static_cast<double>(sd);
        EXPECT_GT(b.s.cols[j].box_h, 0);
    }
    double lmean, lsd;
    legacy_stats(rows, 4, 0, lmean, lsd);
    EXPECT_GT(std::fabs(lsd / b.s.cols[0].sd - 1), 0.05) << "0.1.0's formula is far off here: " << lsd;
    EXPECT_TRUE(validate(b.s).ok());
}

TEST(SynopsisBuild, ValidateAcceptsStableAndLegacyStatistics) {
    ExecContext ctx = cpu_ctx();
    std::vector<double> rows;
    for (int i = 1; i <= 4000; ++i) rows.push_back(1e16 + (i % 7) * 2);
    Built b = build(rows, 1, 4000, Bandwidth::Scott, Smoothing::Auto, ctx);
    ASSERT_TRUE(validate(b.s).ok());
    double lmean, lsd;
    legacy_stats(rows, 1, 0, lmean, lsd);
    ASSERT_GT(std::fabs(lsd / b.s.cols[0].sd - 1), 1e-3) << "the legacy sd must differ for this test to mean anything";
    Synopsis t = b.s;  // as 0.1.0 stored it
    t.cols[0].mean = lmean;
    t.cols[0].sd = lsd;
    EXPECT_TRUE(validate(t).ok());
    t.cols[0].sd = 0.5 * (lsd + b.s.cols[0].sd);  // neither
    EXPECT_FALSE(validate(t).ok());
    t = b.s;
    t.cols[0].sd *= 1 + 1e-6;
    EXPECT_FALSE(validate(t).ok());
    // ordinary data: both formulas agree to rounding, so old synopses validate
    Built o = build(mixed_rows(300, 5), 3, 300, Bandwidth::Scott, Smoothing::Auto, ctx);
    for (int j = 0; j < 3; ++j) {
        legacy_stats(o.sample, 3, j, lmean, lsd);
        EXPECT_LT(std::fabs(lsd / o.s.cols[j].sd - 1), 1e-12);
    }
    // values near DBL_MAX: the sd overflows and the build says so
    Synopsis h;
    std::vector<double> huge = {-1.7e308, 1.7e308};
    h.d = 1;
    h.m = 2;
    h.n_rows = 2;
    h.sample_size = 2;
    h.sample = huge.data();
    Status st = finalize(h, Bandwidth::Scott, Smoothing::Auto, ctx);
    EXPECT_EQ(st.code, StatusCode::OutOfRange) << st.message;
    EXPECT_NE(std::string(st.message).find("standard deviation"), std::string::npos) << st.message;
}

TEST(SynopsisBoxes, MatchNaiveReference) {
    ExecContext ctx = cpu_ctx(3);
    Built b = build(mixed_rows(3000, 21), 3, 1000000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    std::vector<double> lo, hi;
    random_boxes(b.s, 60, 99, lo, hi);
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        for (int k : {0, 1}) {
            if (agg == Aggregate::Count && k == 1) continue;
            BoxBatch batch{60, lo.data(), hi.data(), agg, k};
            std::vector<BoxEstimate> est(60);
            ASSERT_TRUE(evaluate(b.s, batch, ctx, est.data()).ok());
            for (int q = 0; q < 60; ++q) {
                BoxEstimate r = reference(b.s, &lo[q * 3], &hi[q * 3], agg, k);
                if (std::isnan(r.estimate)) {
                    EXPECT_TRUE(std::isnan(est[q].estimate));
                    continue;
                }
                EXPECT_NEAR(est[q].estimate, r.estimate, 1e-10 * std::fabs(r.estimate) + 1e-12 * 1e6) << q;
                // The AVG residual sum of squares cancels when s_i = R c_i: about 1e-8 of the value.
                EXPECT_NEAR(est[q].se, r.se, 1e-6 * std::fabs(r.se) + 1e-8 * std::fabs(r.estimate) + 1e-9) << q;
            }
        }
    }
}

TEST(SynopsisBoxes, LogScaleColumnMatchesQuadrature) {
    // Column 0 (N(10, 2), positive) smoothed on log(x + 0.5) with h = 0.03 and
    // an interval allowance of 1.3; the rest as the guard chose. Estimates and
    // standard errors against the quadrature reference (SUM of column 0: the
    // log-normal partial expectation).
    ExecContext ctx = cpu_ctx(2);
    Built b = build(mixed_rows(2000, 23), 3, 1000000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    ASSERT_GT(b.s.cols[0].min, 0);
    force_log_column(b.s, 0, 0.5, 0.03, 1.3);
    ASSERT_TRUE(validate(b.s).ok());
    std::vector<double> lo, hi;
    random_boxes(b.s, 40, 77, lo, hi);
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        BoxBatch batch{40, lo.data(), hi.data(), agg, 0};
        std::vector<BoxEstimate> est(40);
        ASSERT_TRUE(evaluate(b.s, batch, ctx, est.data()).ok());
        for (int q = 0; q < 40; ++q) {
            BoxEstimate r = reference(b.s, &lo[q * 3], &hi[q * 3], agg, 0);
            if (std::isnan(r.estimate)) {
                EXPECT_TRUE(std::isnan(est[q].estimate));
                continue;
            }
            EXPECT_NEAR(est[q].estimate, r.estimate, 1e-8 * std::fabs(r.estimate) + 1e-12 * 1e6) << q;
            EXPECT_NEAR(est[q].se, r.se, 1e-6 * std::fabs(r.se) + 1e-8 * std::fabs(r.estimate) + 1e-9) << q;
        }
    }
}

TEST(SynopsisBuild, GuardKeepsAtomsExactAndSmoothsAContinuum) {
    // Not tuned thresholds but evidence: integer log-normal sizes (many ties
    // at small values, a tail of 4 orders of magnitude) stay exact, a smooth
    // normal mixture is smoothed; the evidence is recorded.
    ExecContext ctx = cpu_ctx(2);
    std::mt19937_64 g(8);
    std::normal_distribution<double> z(0, 1);
    std::vector<double> rows(4000 * 2);
    for (size_t i = 0; i < 4000; ++i) {
        rows[i * 2] = std::round(std::exp(3 + 1.6 * z(g)));
        rows[i * 2 + 1] = (g() % 2 ? 0 : 4) + z(g);
    }
    Built b = build(rows, 2, 100000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    EXPECT_EQ(b.s.cols[0].mode, Mode::Exact);
    EXPECT_NE(b.s.cols[1].mode, Mode::Exact);
    for (int j = 0; j < 2; ++j) {
        EXPECT_GE(b.s.cols[j].cv_error[0], 0);
        EXPECT_GE(b.s.cols[j].cv_error[1], 0);
        EXPECT_GE(b.s.cols[j].interval_scale, 1);
    }
    EXPECT_LT(b.s.cols[1].cv_error[1], b.s.cols[1].cv_error[0]);
    EXPECT_GE(b.s.cols[1].cv_coverage, 0.9);
    // smoothing = never and always keep their meaning
    Built never = build(rows, 2, 100000, Bandwidth::Cdf, Smoothing::Never, ctx);
    Built always = build(rows, 2, 100000, Bandwidth::Cdf, Smoothing::Always, ctx);
    for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(never.s.cols[j].mode, Mode::Exact);
        EXPECT_EQ(always.s.cols[j].mode, Mode::Kde);
        EXPECT_EQ(always.s.cols[j].cv_error[0], -1);
    }
}

TEST(SynopsisBoxes, SpecialBoxes) {
    ExecContext ctx = cpu_ctx();
    Built b = build(mixed_rows(1000, 5), 3, 5000, Bandwidth::Scott, Smoothing::Auto, ctx);
    const double inf = INFINITY;
    // unbounded box: every kernel mass is 1, so COUNT = N and SUM = N mean exactly
    std::vector<double> lo = {-inf, -inf, -inf}, hi = {inf, inf, inf};
    BoxEstimate e;
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Count, 0}, ctx, &e).ok());
    EXPECT_EQ(e.estimate, 5000);
    EXPECT_EQ(e.se, 0);
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Avg, 0}, ctx, &e).ok());
    EXPECT_NEAR(e.estimate, b.s.cols[0].mean, 1e-12 * std::fabs(b.s.cols[0].mean));
    // an empty box (lo > hi): COUNT = SUM = 0, AVG undefined
    lo[1] = 10;
    hi[1] = 5;
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Count, 0}, ctx, &e).ok());
    EXPECT_TRUE(e.empty);
    EXPECT_EQ(e.estimate, 0);
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Sum, 0}, ctx, &e).ok());
    EXPECT_EQ(e.estimate, 0);
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Avg, 0}, ctx, &e).ok());
    EXPECT_TRUE(std::isnan(e.estimate));
    // a box containing no sample row of a discrete column: AVG undefined, COUNT 0
    lo = {-inf, -inf, 100};
    hi = {inf, inf, 200};
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Avg, 0}, ctx, &e).ok());
    EXPECT_TRUE(std::isnan(e.estimate));
    // bad column
    EXPECT_EQ(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Sum, 3}, ctx, &e).code, StatusCode::InvalidArgument);
}

TEST(SynopsisBoxes, HardEdgeLosesNoMass) {
    // Exponential data: density 1 at its hard edge 0. Without the reflection at
    // the sample's range, the natural box [0, t] loses the kernel mass that
    // falls below 0, about 0.4 h N rows (for these data -16% of the box at
    // t = 0.05, -3% at t = 0.3); with it the box counts like the sample, and a
    // bound at or below the sample's minimum equals an unbounded one.
    ExecContext ctx = cpu_ctx();
    std::mt19937_64 gen(17);
    std::exponential_distribution<double> ex(1.0);
    std::vector<double> rows(20000);
    for (double& v : rows) v = ex(gen);
    Built b = build(rows, 1, 20000, Bandwidth::Cdf, Smoothing::Auto, ctx);
    ASSERT_FALSE(b.s.cols[0].discrete);
    for (double t : {0.05, 0.3}) {
        double exact = 0;
        for (double v : rows) exact += v <= t;
        double lo = 0, hi = t, ulo = -INFINITY;
        BoxEstimate e, u;
        ASSERT_TRUE(evaluate(b.s, {1, &lo, &hi, Aggregate::Count, 0}, ctx, &e).ok());
        ASSERT_TRUE(evaluate(b.s, {1, &ulo, &hi, Aggregate::Count, 0}, ctx, &u).ok());
        EXPECT_EQ(e.estimate, u.estimate);
        EXPECT_NEAR(e.estimate, exact, 0.015 * exact) << "t = " << t;
    }
    // a box holding the whole sample range counts every row in full
    BoxEstimate e;
    double all_lo = b.s.cols[0].min, all_hi = 1e9;
    ASSERT_TRUE(evaluate(b.s, {1, &all_lo, &all_hi, Aggregate::Count, 0}, ctx, &e).ok());
    EXPECT_EQ(e.estimate, 20000);
    // and a box beyond the sample's range holds nothing (as in the sample)
    double out_lo = b.s.cols[0].max + 1, out_hi = out_lo + 5;
    ASSERT_TRUE(evaluate(b.s, {1, &out_lo, &out_hi, Aggregate::Count, 0}, ctx, &e).ok());
    EXPECT_EQ(e.estimate, 0);
}

TEST(SynopsisBoxes, NeverSmoothingIsThePlainSampleEstimator) {
    ExecContext ctx = cpu_ctx();
    Built b = build(mixed_rows(1000, 8), 3, 123456, Bandwidth::Scott, Smoothing::Never, ctx);
    std::vector<double> lo = {9, 40, 1}, hi = {11.5, 60, 4};
    int in = 0;
    double sum = 0;
    for (int i = 0; i < 1000; ++i) {
        const double* r = &b.sample[i * 3];
        bool inside = true;
        for (int j = 0; j < 3; ++j) inside = inside && r[j] >= lo[j] && r[j] <= hi[j];
        if (inside) in++, sum += r[0];
    }
    BoxEstimate e;
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Count, 0}, ctx, &e).ok());
    EXPECT_NEAR(e.estimate, 123456.0 * in / 1000, 1e-9);
    ASSERT_TRUE(evaluate(b.s, {1, lo.data(), hi.data(), Aggregate::Avg, 0}, ctx, &e).ok());
    EXPECT_NEAR(e.estimate, sum / in, 1e-12);
}

TEST(SynopsisBoxes, TailsDoNotCancel) {
    // Phi(31) - Phi(30) computed as 1 - 1 would be 0; the erfc form keeps it.
    double p = math::normal_mass(30, 31);
    double mills = phi(30) / 30 * (1 - 1.0 / 900 + 3.0 / 810000);  // Q(30), asymptotic
    EXPECT_NEAR(p / mills, 1, 1e-6);
    EXPECT_NEAR(math::normal_mass(-31, -30) / mills, 1, 1e-6);
    EXPECT_EQ(math::normal_mass(-INFINITY, INFINITY), 1.0);
    EXPECT_NEAR(math::normal_mass(-1, 2), Phi(2) - Phi(-1), 1e-15);
}

TEST(SynopsisBoxes, ThreadsAndChunkingAgree) {
    Built b = build(mixed_rows(9000, 4), 3, 1e7, Bandwidth::Scott, Smoothing::Always, cpu_ctx());
    std::vector<double> lo, hi;
    random_boxes(b.s, 3, 17, lo, hi);
    std::vector<BoxEstimate> one(3), many(3);
    ASSERT_TRUE(evaluate(b.s, {3, lo.data(), hi.data(), Aggregate::Sum, 2}, cpu_ctx(1), one.data()).ok());
    ASSERT_TRUE(evaluate(b.s, {3, lo.data(), hi.data(), Aggregate::Sum, 2}, cpu_ctx(8), many.data()).ok());
    for (int q = 0; q < 3; ++q) {
        EXPECT_NEAR(one[q].estimate, many[q].estimate, 1e-11 * std::fabs(one[q].estimate) + 1e-12 * 1e7);
        EXPECT_NEAR(one[q].se, many[q].se, 1e-8 * std::fabs(one[q].se) + 1e-9);
    }
}

TEST(SynopsisBoxes, IntervalsAndQuantile) {
    EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-14);
    EXPECT_NEAR(normal_quantile(0.5), 0, 1e-15);
    EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-12);
    EXPECT_NEAR(normal_quantile(0.995), 2.5758293035489, 1e-12);
    Synopsis s;
    s.n_rows = 1000;
    BoxEstimate e;
    e.estimate = 10;
    e.se = 10;
    double lo, hi;
    interval(s, Aggregate::Count, e, 0.95, lo, hi);
    EXPECT_EQ(lo, 0);  // COUNT clipped at 0
    EXPECT_NEAR(hi, 10 + 1.959963984540054 * 10, 1e-12);
    interval(s, Aggregate::Sum, e, 0.95, lo, hi);
    EXPECT_LT(lo, 0);
}

TEST(SynopsisBoxes, CoverageOfThePlainEstimator) {
    // 95% intervals of the plain sample estimator on a known population.
    const int N = 50000, m = 2000;
    std::vector<double> pop = mixed_rows(N, 77);
    Reservoir r;
    reservoir_init(r, m, 5);
    std::vector<double> sample(m * 3);
    for (int i = 0; i < N; ++i) {
        int64_t slot = reservoir_slot(r);
        if (slot >= 0) std::copy(&pop[i * 3], &pop[i * 3] + 3, &sample[slot * 3]);
    }
    Built b = build(sample, 3, N, Bandwidth::Scott, Smoothing::Never, cpu_ctx());
    std::vector<double> lo, hi;
    random_boxes(b.s, 200, 3, lo, hi);
    std::vector<BoxEstimate> est(200);
    ASSERT_TRUE(evaluate(b.s, {200, lo.data(), hi.data(), Aggregate::Count, 0}, cpu_ctx(), est.data()).ok());
    int covered = 0, used = 0;
    for (int q = 0; q < 200; ++q) {
        int exact = 0;
        for (int i = 0; i < N; ++i) {
            bool in = true;
            for (int j = 0; j < 3; ++j) in = in && pop[i * 3 + j] >= lo[q * 3 + j] && pop[i * 3 + j] <= hi[q * 3 + j];
            exact += in;
        }
        if (exact < N / 100) continue;  // selectivity >= 1%
        double l, h;
        interval(b.s, Aggregate::Count, est[q], 0.95, l, h);
        used++;
        covered += (exact >= l && exact <= h);
    }
    ASSERT_GT(used, 30);
    EXPECT_GE(covered, 0.88 * used);
}

TEST(SynopsisDensity, MatchesNaiveAndIntegratesToOne) {
    ExecContext ctx = cpu_ctx();
    std::vector<double> rows;
    std::mt19937_64 g(1);
    std::normal_distribution<double> n01;
    for (int i = 0; i < 500; ++i) rows.push_back(n01(g));
    Built b = build(rows, 1, 500, Bandwidth::Plugin, Smoothing::Auto, ctx);
    double integral = 0, step = 0.01;
    for (double x = -8; x < 8; x += step) {
        double f;
        ASSERT_TRUE(density(b.s, &x, ctx, f).ok());
        integral += f * step;
    }
    EXPECT_NEAR(integral, 1, 1e-6);
    double x = 0.3, f, ref = 0, h = b.s.cols[0].density_h;
    for (double v : rows) ref += phi((x - v) / h) / h;
    ASSERT_TRUE(density(b.s, &x, ctx, f).ok());
    EXPECT_NEAR(f, ref / 500, 1e-14);
}

TEST(SynopsisBoxes, CancelStopsTheCpuEngine) {
    Built b = build(mixed_rows(5000, 4), 3, 5000, Bandwidth::Scott, Smoothing::Always, cpu_ctx());
    std::vector<double> lo, hi;
    random_boxes(b.s, 100, 1, lo, hi);
    ExecContext ctx = cpu_ctx();
    ctx.cancel = [] { return true; };
    std::vector<BoxEstimate> est(100);
    EXPECT_EQ(evaluate(b.s, {100, lo.data(), hi.data(), Aggregate::Count, 0}, ctx, est.data()).code,
              StatusCode::Cancelled);
}

// ---- GPU = CPU ------------------------------------------------------------------------

TEST(SynopsisGpu, BatchedBoxesMatchCpu) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU usable: CPU = GPU is checked on the GPU machine";
    ExecContext cpu = cpu_ctx(4);
    ExecContext gpu;
    gpu.mode = DeviceMode::Gpu;
    const double N = 1e7;
    Built built = build(mixed_rows(10000, 31), 3, static_cast<int64_t>(N), Bandwidth::Cdf, Smoothing::Auto, cpu);
    Built logged = built;
    logged.s.sample = logged.sample.data();
    force_log_column(logged.s, 0, 0.5, 0.03, 1.3);  // the log-scale path (t = log(x + shift), its SUM moment)
    for (const Built* which : {&built, &logged})
    for (int64_t q : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{40003}}) {
        const Built& b = *which;
        std::vector<double> lo, hi;
        random_boxes(b.s, q, 100 + q, lo, hi);
        if (q > 1) std::swap(lo[3], hi[3]);  // one empty box
        for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
            std::vector<BoxEstimate> ec(q), eg(q);
            ASSERT_TRUE(evaluate(b.s, {q, lo.data(), hi.data(), agg, 0}, cpu, ec.data()).ok());
            Status st = evaluate(b.s, {q, lo.data(), hi.data(), agg, 0}, gpu, eg.data());
            ASSERT_TRUE(st.ok()) << st.message;
            for (int64_t i = 0; i < q; ++i) {
                if (std::isnan(ec[i].estimate)) {
                    ASSERT_TRUE(std::isnan(eg[i].estimate)) << i;
                    continue;
                }
                double tol = agg == Aggregate::Avg ? 1e-9 * std::fabs(ec[i].estimate) + 1e-12
                                                   : 1e-9 * std::fabs(ec[i].estimate) + 1e-12 * N;
                ASSERT_NEAR(eg[i].estimate, ec[i].estimate, tol) << "q=" << q << " box " << i;
                // A standard error is the square root of a difference of sums: where the
                // true value is 0, rounding leaves sqrt(eps)-sized noise, which the AVG
                // (ratio) form divides by the box's mean count. Only the estimates carry
                // the 1e-9 contract; standard errors agree to 1e-6 of the estimate.
                double se_tol = agg == Aggregate::Avg ? 1e-6 * (std::fabs(ec[i].se) + std::fabs(ec[i].estimate))
                                                      : 1e-6 * std::fabs(ec[i].se) + 1e-9 * N;
                ASSERT_NEAR(eg[i].se, ec[i].se, se_tol) << "q=" << q << " box " << i;
                ASSERT_EQ(eg[i].empty, ec[i].empty);
            }
        }
    }
}

TEST(SynopsisGpu, EdgeShapes) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU usable: CPU = GPU is checked on the GPU machine";
    ExecContext cpu = cpu_ctx(2);
    ExecContext gpu;
    gpu.mode = DeviceMode::Gpu;
    // m = 1, d = 1; and d = 32 with a sample that is not a multiple of any tile
    Built one = build({4.0}, 1, 1, Bandwidth::Scott, Smoothing::Auto, cpu);
    double lo = 3, hi = 5;
    BoxEstimate c, g;
    ASSERT_TRUE(evaluate(one.s, {1, &lo, &hi, Aggregate::Count, 0}, cpu, &c).ok());
    ASSERT_TRUE(evaluate(one.s, {1, &lo, &hi, Aggregate::Count, 0}, gpu, &g).ok());
    EXPECT_EQ(c.estimate, g.estimate);
    std::mt19937_64 gen(3);
    std::normal_distribution<double> n01;
    std::vector<double> rows(1237 * 32);
    for (double& v : rows) v = n01(gen);
    Built wide = build(rows, 32, 5000, Bandwidth::Scott, Smoothing::Always, cpu);
    std::vector<double> blo, bhi;
    random_boxes(wide.s, 9, 4, blo, bhi);
    std::vector<BoxEstimate> ec(9), eg(9);
    ASSERT_TRUE(evaluate(wide.s, {9, blo.data(), bhi.data(), Aggregate::Sum, 31}, cpu, ec.data()).ok());
    ASSERT_TRUE(evaluate(wide.s, {9, blo.data(), bhi.data(), Aggregate::Sum, 31}, gpu, eg.data()).ok());
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(eg[i].estimate, ec[i].estimate, 1e-9 * std::fabs(ec[i].estimate) + 1e-12 * 5000);
}
