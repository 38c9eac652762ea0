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
#include "core/synopsis_internal.hpp"
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
            if (j == k)
                sk = sj;
            else
                other *= p;
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
    // what the sample cannot see: the Wilson excess over the binomial variance
    // (widen_for_unseen), unless the box has no bound
    bool bounded = false;
    for (int j = 0; j < s.d; ++j) bounded |= lo[j] > -INFINITY || hi[j] < INFINITY;
    if (bounded && fpc > 0 && agg != Aggregate::Avg) {
        const double z2 = 1.96 * 1.96, kk = m * mc, p = (kk + z2) / (m + 2 * z2), q = mc;
        const double excess = N * N * fpc / m * std::max(0.0, p * (1 - p) - q * (1 - q));
        const double xbar = mc > 0 ? ms / mc : std::max(std::fabs(s.cols[k].min), std::fabs(s.cols[k].max));
        e.se = std::sqrt(e.se * e.se + excess * (agg == Aggregate::Sum ? xbar * xbar : 1));
    }
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
    EXPECT_NEAR(step, 0.01, 1e-12);                                     // 0.20, 0.23, ... are multiples of 0.01
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
    // bandwidths are the KDE engine's binned plug-in (linear in the sample),
    // within 1e-4 of the exact O(m^2) plug-in
    std::vector<double> col0(2000);
    for (int i = 0; i < 2000; ++i) col0[i] = b.sample[i * 3];
    double hb = 0, hd = 0, eb = 0, ed = 0;
    ASSERT_TRUE(kde::plugin_bandwidth_binned(col0.data(), 2000, kde::PluginTarget::Distribution, ctx, hb).ok());
    ASSERT_TRUE(kde::plugin_bandwidth_binned(col0.data(), 2000, kde::PluginTarget::Density, ctx, hd).ok());
    EXPECT_EQ(s.cols[0].box_h, hb);
    EXPECT_EQ(s.cols[0].density_h, hd);
    ASSERT_TRUE(kde::plugin_bandwidth(col0.data(), 2000, kde::PluginTarget::Distribution, ctx, eb).ok());
    ASSERT_TRUE(kde::plugin_bandwidth(col0.data(), 2000, kde::PluginTarget::Density, ctx, ed).ok());
    EXPECT_NEAR(hb / eb, 1, 1e-4);
    EXPECT_NEAR(hd / ed, 1, 1e-4);
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

// ---- column statistics stable far from 0 -------------------------------------

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
        rows.push_back(1e16 + (i % 7) * 2);                                    // the reproducer
        rows.push_back(1e15 + static_cast<double>(g() % 2147483648u) * 1e-9);  // 1e15 + random()
        rows.push_back(std::sin(i * 0.37) * 1e-300);                           // tiny
        rows.push_back(std::cos(i * 0.11) * 1e300);                            // huge
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
                // An AVG of values all equal in the box (se 0, or rounding residue
                // of about 1e-7) is widened by the column's range
                // (widen_for_unseen): checked in SynopsisIntervals.
                if (agg == Aggregate::Avg && r.se <= 1e-5 * (std::fabs(r.estimate) + 1)) continue;
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
            if (agg == Aggregate::Avg && r.se <= 1e-9 * (std::fabs(r.estimate) + 1)) continue;  // see above
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

// ---- format 3: NULLs, categorical columns, strata, support, allocation ------------------

namespace {

// A synopsis owning its sample and strata (pointers re-aimed by point()).
struct Owned {
    std::vector<double> sample;
    std::vector<Stratum> strata;
    Synopsis s;
    void point() {
        s.sample = sample.data();
        s.strata = strata.empty() ? nullptr : strata.data();
        s.n_strata = static_cast<int>(strata.size());
    }
};

Owned make_owned(std::vector<double> rows, int d, int64_t n_rows, Smoothing sm, std::vector<Stratum> strata = {},
                 std::vector<int> categorical = {}, Bandwidth bw = Bandwidth::Scott) {
    Owned o;
    o.sample = std::move(rows);
    o.strata = std::move(strata);
    o.s.d = d;
    o.s.m = static_cast<int64_t>(o.sample.size()) / d;
    o.s.n_rows = n_rows;
    o.s.sample_size = o.s.m;
    for (int j : categorical) o.s.cols[j].categorical = true;
    o.point();
    Status st = finalize(o.s, bw, sm, cpu_ctx());
    EXPECT_TRUE(st.ok()) << st.message;
    o.point();
    return o;
}

// d = 3: col 0 integers 0..9 (never NULL), col 1 normal with ~20% NULL,
// col 2 integers 0..4 with ~10% NULL.
std::vector<double> null_rows(size_t m, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::normal_distribution<double> n01;
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> r(m * 3);
    for (size_t i = 0; i < m; ++i) {
        r[i * 3] = static_cast<double>(g() % 10);
        r[i * 3 + 1] = u(g) < 0.2 ? NAN : n01(g) * 3 + 20;
        r[i * 3 + 2] = u(g) < 0.1 ? NAN : static_cast<double>(g() % 5);
    }
    return r;
}

BoxBatch batch_of(int64_t q, const std::vector<double>& lo, const std::vector<double>& hi, Aggregate agg, int k,
                  const std::vector<uint8_t>* nulls = nullptr, const std::vector<int32_t>* stratum = nullptr) {
    BoxBatch b;
    b.q = q;
    b.lo = lo.data();
    b.hi = hi.data();
    b.agg = agg;
    b.column = k;
    b.nulls = nulls ? nulls->data() : nullptr;
    b.stratum = stratum ? stratum->data() : nullptr;
    return b;
}

// Direct stratified reference from per-row c_i, s_i: strata given as
// (N_g, begin, end); COUNT / SUM / AVG as in estimate_from_pieces, computed
// with two-pass variances.
BoxEstimate stratified_reference(const std::vector<double>& c, const std::vector<double>& s,
                                 const std::vector<Stratum>& strata, Aggregate agg) {
    double C = 0, S = 0;
    for (const Stratum& st : strata) {
        double m = static_cast<double>(st.end - st.begin), N = static_cast<double>(st.n_rows);
        for (int64_t i = st.begin; i < st.end; ++i) C += N / m * c[i], S += N / m * s[i];
    }
    const double R = S / C;
    double vc = 0, vs = 0, vr = 0;
    for (const Stratum& st : strata) {
        double m = static_cast<double>(st.end - st.begin), N = static_cast<double>(st.n_rows);
        double fpc = m >= N ? 0 : (N - m) / (N - 1);
        double mc = 0, ms = 0, mr = 0;
        for (int64_t i = st.begin; i < st.end; ++i) mc += c[i] / m, ms += s[i] / m, mr += (s[i] - R * c[i]) / m;
        double qc = 0, qs = 0, qr = 0;
        for (int64_t i = st.begin; i < st.end; ++i) {
            qc += (c[i] - mc) * (c[i] - mc);
            qs += (s[i] - ms) * (s[i] - ms);
            double r = s[i] - R * c[i] - mr;
            qr += r * r;
        }
        double dof = m > 1 ? m - 1 : 1;
        vc += N * N * fpc * qc / dof / m;
        vs += N * N * fpc * qs / dof / m;
        vr += N * N * fpc * qr / dof / m;
    }
    BoxEstimate e;
    if (agg == Aggregate::Count) e.estimate = C, e.se = std::sqrt(vc);
    if (agg == Aggregate::Sum) e.estimate = S, e.se = std::sqrt(vs);
    if (agg == Aggregate::Avg) e.estimate = R, e.se = std::sqrt(vr) / C;
    return e;
}

// Exact-membership per-row terms of a box (every column exact), SQL NULL
// semantics written out: policy Any / NotNull / IsNull per column; for SUM /
// AVG of column k a NULL k leaves the row out.
void exact_terms(const Synopsis& s, const double* lo, const double* hi, const uint8_t* nulls, int k,
                 std::vector<double>& c, std::vector<double>& g) {
    c.assign(s.m, 0);
    g.assign(s.m, 0);
    for (int64_t i = 0; i < s.m; ++i) {
        bool in = true;
        for (int j = 0; j < s.d; ++j) {
            double x = s.sample[i * s.d + j];
            int p = nulls ? nulls[j] : 0;
            bool null = std::isnan(x);
            if (j == k && null)
                in = false;
            else if (p == 2)
                in = in && null;
            else if (null)
                in = in && p == 0;
            else
                in = in && x >= lo[j] && x <= hi[j];
        }
        c[i] = in ? 1 : 0;
        g[i] = in && k >= 0 ? s.sample[i * s.d + k] : 0;
    }
}

}  // namespace

TEST(SynopsisNulls, FinalizeUsesNonNullValues) {
    Owned o = make_owned(null_rows(4000, 1), 3, 4000, Smoothing::Auto);
    const Synopsis& s = o.s;
    for (int j = 0; j < 3; ++j) {
        int64_t nulls = 0;
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        for (int64_t i = 0; i < s.m; ++i) {
            double v = s.sample[i * 3 + j];
            if (std::isnan(v)) {
                ++nulls;
                continue;
            }
            lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
        }
        EXPECT_EQ(s.cols[j].null_count, nulls) << j;
        EXPECT_EQ(s.cols[j].min, lo) << j;
        EXPECT_EQ(s.cols[j].max, hi) << j;
        EXPECT_NEAR(s.cols[j].mean, sum / static_cast<double>(s.m - nulls), 1e-12 * std::fabs(hi)) << j;
        EXPECT_GT(s.cols[j].box_h, 0);
        EXPECT_TRUE(std::isfinite(s.cols[j].sd));
    }
    EXPECT_GT(s.cols[1].null_count, 600);
    EXPECT_GT(s.cols[2].null_count, 250);
    EXPECT_EQ(s.cols[0].null_count, 0);
    EXPECT_EQ(s.cols[2].step, 1);  // integers, NULLs ignored
    EXPECT_TRUE(validate(s).ok()) << validate(s).message;
    // the guard ran on the non-NULL values: the continuous column is a candidate
    EXPECT_GE(s.cols[1].cv_error[1], 0);
    // every smoothing and bandwidth method builds with NULLs
    for (Smoothing sm : {Smoothing::Always, Smoothing::Never})
        for (Bandwidth bw : {Bandwidth::Cdf, Bandwidth::Plugin, Bandwidth::Lscv, Bandwidth::Scott}) {
            Owned p = make_owned(null_rows(600, 2), 3, 6000, sm, {}, {}, bw);
            EXPECT_TRUE(validate(p.s).ok()) << validate(p.s).message;
            EXPECT_EQ(p.s.cols[1].mode, sm == Smoothing::Always ? Mode::Kde : Mode::Exact);
        }
}

TEST(SynopsisNulls, CountWithNullsElsewhereIsTheExactCount) {
    // Every row sampled (m = N): a count over column 0 counts every row in the
    // range, whatever columns 1 and 2 hold; with m < N it is N / m times that.
    for (int64_t N : {int64_t{3000}, int64_t{90000}}) {
        for (Smoothing sm : {Smoothing::Never, Smoothing::Always}) {
            Owned o = make_owned(null_rows(3000, 3), 3, N, sm);
            std::vector<double> lo = {2, -INFINITY, -INFINITY}, hi = {6, INFINITY, INFINITY};
            if (sm == Smoothing::Always) {
                ASSERT_EQ(o.s.cols[1].mode, Mode::Kde);
                // integer column 0 smoothed: the box edges half-way between atoms keep the count close, not exact
                o.s.cols[0].mode = Mode::Exact;
                o.s.cols[0].discrete = true;
            }
            BoxEstimate e;
            ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Count, 0), cpu_ctx(), &e).ok());
            int64_t count = 0;
            for (int64_t i = 0; i < o.s.m; ++i) count += o.sample[i * 3] >= 2 && o.sample[i * 3] <= 6;
            EXPECT_NEAR(e.estimate, static_cast<double>(N) / 3000 * count, 1e-9 * N) << N;
            EXPECT_EQ(e.support, count);
            EXPECT_EQ(e.n_rows, static_cast<double>(N));
            if (N == 3000) {
                EXPECT_EQ(e.se, 0);
            }
        }
    }
}

TEST(SynopsisNulls, IsNullNotNullAndAny) {
    for (Smoothing sm : {Smoothing::Never, Smoothing::Always}) {
        Owned o = make_owned(null_rows(5000, 4), 3, 50000, sm);
        const Synopsis& s = o.s;
        // four boxes on column 1: Any with bounds, NotNull with bounds,
        // NotNull unbounded, IsNull (with bounds that IsNull ignores)
        const double a = 18, b = 23;
        std::vector<double> lo, hi;
        std::vector<uint8_t> nulls;
        const uint8_t pol[4] = {0, 1, 1, 2};
        for (int q = 0; q < 4; ++q) {
            lo.insert(lo.end(), {-INFINITY, q == 2 ? -INFINITY : a, -INFINITY});
            hi.insert(hi.end(), {INFINITY, q == 2 ? INFINITY : b, INFINITY});
            nulls.insert(nulls.end(), {0, pol[q], 0});
        }
        std::vector<BoxEstimate> e(4);
        ASSERT_TRUE(evaluate(s, batch_of(4, lo, hi, Aggregate::Count, 0, &nulls), cpu_ctx(), e.data()).ok());
        const double w = 50000.0 / 5000;
        const double n_null = static_cast<double>(s.cols[1].null_count);
        EXPECT_NEAR(e[3].estimate, w * n_null, 1e-9);  // IS NULL: exactly the NULL rows, smoothed or not
        EXPECT_EQ(e[3].support, s.cols[1].null_count);
        EXPECT_NEAR(e[2].estimate, w * (5000 - n_null), 1e-9);         // IS NOT NULL
        EXPECT_NEAR(e[0].estimate - e[1].estimate, w * n_null, 1e-8);  // Any = NotNull + the NULL rows
        if (sm == Smoothing::Never) {
            std::vector<double> c, g;
            exact_terms(s, &lo[3], &hi[3], &nulls[3], -1, c, g);
            double in = 0;
            for (double v : c) in += v;
            EXPECT_NEAR(e[1].estimate, w * in, 1e-9);
        }
        // the same boxes on the GPU code path's shared row terms: nullptr policies = Any everywhere
        BoxEstimate any;
        ASSERT_TRUE(evaluate(s, batch_of(1, lo, hi, Aggregate::Count, 0), cpu_ctx(), &any).ok());
        EXPECT_EQ(any.estimate, e[0].estimate);
        EXPECT_NEAR(any.se, e[0].se, 1e-12 * e[0].se);  // same terms; the variance sum may round differently
    }
}

TEST(SynopsisNulls, AllNullColumn) {
    std::vector<double> rows = null_rows(1000, 5);
    for (size_t i = 0; i < 1000; ++i) rows[i * 3 + 2] = NAN;
    for (Smoothing sm : {Smoothing::Auto, Smoothing::Always}) {
        Owned o = make_owned(rows, 3, 10000, sm);
        const Column& c = o.s.cols[2];
        EXPECT_EQ(c.null_count, 1000);
        EXPECT_EQ(c.mode, Mode::Exact);
        EXPECT_TRUE(c.discrete);
        EXPECT_EQ(c.mean, 0);
        EXPECT_EQ(c.sd, 0);
        EXPECT_EQ(c.min, 0);
        EXPECT_EQ(c.max, 0);
        EXPECT_GT(c.box_h, 0);
        EXPECT_GT(c.density_h, 0);
        EXPECT_TRUE(validate(o.s).ok()) << validate(o.s).message;
        std::vector<double> lo = {-INFINITY, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY},
                            hi = {INFINITY, INFINITY, 5, INFINITY, INFINITY, INFINITY};
        std::vector<uint8_t> nulls = {0, 0, 1, 0, 0, 2};
        std::vector<BoxEstimate> e(2);
        ASSERT_TRUE(evaluate(o.s, batch_of(2, lo, hi, Aggregate::Count, 0, &nulls), cpu_ctx(), e.data()).ok());
        EXPECT_EQ(e[0].estimate, 0);  // a comparison on an all-NULL column: nothing
        EXPECT_EQ(e[0].support, 0);
        EXPECT_DOUBLE_EQ(e[1].estimate, 10000);  // IS NULL: every row
        // AVG of the all-NULL column: no row has a value
        ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Avg, 2), cpu_ctx(), e.data()).ok());
        EXPECT_TRUE(std::isnan(e[0].estimate));
        ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Sum, 2), cpu_ctx(), e.data()).ok());
        EXPECT_EQ(e[0].estimate, 0);
    }
}

TEST(SynopsisNulls, SumAndAvgSkipNullsOfTheirColumn) {
    Owned o = make_owned(null_rows(4000, 6), 3, 400000, Smoothing::Never);
    const Synopsis& s = o.s;
    std::vector<double> lo, hi;
    std::vector<uint8_t> nulls;
    // box 0: col 0 in [1, 7]; box 1: and col 2 NOT NULL <= 3; box 2: col 2 IS NULL;
    // box 3: col 1 IS NULL (its own SUM column: nothing)
    lo = {1, -INFINITY, -INFINITY, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0, 0, 0};
    hi = {7, INFINITY, INFINITY, 7, INFINITY, 3, INFINITY, INFINITY, INFINITY, 9, 9, 9};
    nulls = {0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 2, 0};
    for (Aggregate agg : {Aggregate::Sum, Aggregate::Avg}) {
        std::vector<BoxEstimate> e(4);
        ASSERT_TRUE(evaluate(s, batch_of(4, lo, hi, agg, 1, &nulls), cpu_ctx(), e.data()).ok());
        for (int q = 0; q < 3; ++q) {
            std::vector<double> c, g;
            exact_terms(s, &lo[q * 3], &hi[q * 3], &nulls[q * 3], 1, c, g);
            BoxEstimate r = stratified_reference(c, g, {Stratum{400000, 0, 4000}}, agg);
            EXPECT_NEAR(e[q].estimate, r.estimate, 1e-10 * std::fabs(r.estimate)) << q;
            // the direct formula's se, plus (SUM) the Wilson excess of widen_for_unseen
            if (agg == Aggregate::Avg)
                EXPECT_NEAR(e[q].se, r.se, 1e-7 * r.se) << q;
            else
                EXPECT_GE(e[q].se, r.se * (1 - 1e-7)) << q;
            int64_t support = 0;
            for (double v : c) support += v > 0;
            EXPECT_EQ(e[q].support, support) << q;  // rows with a non-NULL x in the box
            // brute force: SUM over rows with x non-NULL, AVG = that / their count
            double sum = 0, n = 0;
            for (int64_t i = 0; i < s.m; ++i) {
                const double* row = &s.sample[i * 3];
                bool in = row[0] >= lo[q * 3] && row[0] <= hi[q * 3] && !std::isnan(row[1]);
                if (q == 1) in = in && !std::isnan(row[2]) && row[2] <= 3;
                if (q == 2) in = in && std::isnan(row[2]);
                if (in) sum += row[1], n += 1;
            }
            double want = agg == Aggregate::Sum ? sum * 100 : sum / n;
            EXPECT_NEAR(e[q].estimate, want, 1e-9 * std::fabs(want)) << q;
        }
        EXPECT_EQ(e[3].support, 0);
        if (agg == Aggregate::Sum) {
            EXPECT_EQ(e[3].estimate, 0);
        }
        if (agg == Aggregate::Avg) {
            EXPECT_TRUE(std::isnan(e[3].estimate));
        }
    }
}

TEST(SynopsisNulls, CategoricalColumnsStayExact) {
    // continuous values in column 0 that the guard would smooth, marked categorical
    std::mt19937_64 g(8);
    std::normal_distribution<double> n01;
    std::vector<double> rows(3000 * 2);
    for (size_t i = 0; i < 3000; ++i) rows[i * 2] = n01(g), rows[i * 2 + 1] = n01(g);
    for (Smoothing sm : {Smoothing::Auto, Smoothing::Always}) {
        Owned o = make_owned(rows, 2, 30000, sm, {}, {0});
        EXPECT_TRUE(o.s.cols[0].categorical);
        EXPECT_EQ(o.s.cols[0].mode, Mode::Exact);
        EXPECT_TRUE(o.s.cols[0].discrete);
        EXPECT_EQ(o.s.cols[0].cv_error[1], -1);  // never a guard candidate
        if (sm == Smoothing::Always) {
            EXPECT_EQ(o.s.cols[1].mode, Mode::Kde);
        }
        EXPECT_TRUE(validate(o.s).ok()) << validate(o.s).message;
        Synopsis bad = o.s;
        bad.cols[0].mode = Mode::Kde;
        bad.cols[0].discrete = false;
        EXPECT_EQ(validate(bad).code, StatusCode::InvalidArgument);
    }
}

TEST(SynopsisBuild, ValidateNullsAndStrata) {
    // 3 strata of 10 rows each (N_g 10, 40, 100), col 0 the stratum, col 1 values with a NULL
    std::vector<double> rows;
    for (int g = 0; g < 3; ++g)
        for (int i = 0; i < 10; ++i) rows.push_back(g), rows.push_back(i == 3 ? NAN : g * 10 + i * 0.7);
    Owned o = make_owned(rows, 2, 150, Smoothing::Never, {{10, 0, 10}, {40, 10, 20}, {100, 20, 30}});
    o.s.sample_size = 12;  // a congressional sample holds more than sample_size rows
    ASSERT_TRUE(validate(o.s).ok()) << validate(o.s).message;
    EXPECT_EQ(o.s.cols[1].null_count, 3);
    auto broken = [&](auto edit) {
        Owned b = o;
        b.point();
        edit(b);
        return validate(b.s).code == StatusCode::InvalidArgument;
    };
    EXPECT_TRUE(broken([](Owned& b) { b.strata[0].begin = 1; }));
    EXPECT_TRUE(broken([](Owned& b) { b.strata[1].begin = 11; }));   // a gap
    EXPECT_TRUE(broken([](Owned& b) { b.strata[0].end = 11; }));     // overlap
    EXPECT_TRUE(broken([](Owned& b) { b.strata[2].end = 29; }));     // does not end at m
    EXPECT_TRUE(broken([](Owned& b) { b.strata[2].n_rows = 99; }));  // rows do not add up to N
    EXPECT_TRUE(broken([](Owned& b) {
        b.strata[0].n_rows = 9;
        b.strata[2].n_rows = 101;
    }));  // m_g > N_g
    EXPECT_TRUE(broken([](Owned& b) {
        b.strata[1].end = 10;
        b.strata[2].begin = 10;
    }));  // empty stratum
    EXPECT_TRUE(broken([](Owned& b) { b.s.strata = nullptr; }));
    EXPECT_TRUE(broken([](Owned& b) { b.s.n_strata = -1; }));
    EXPECT_TRUE(broken([](Owned& b) { b.s.n_rows = 29; }));         // m > N
    EXPECT_TRUE(broken([](Owned& b) { b.sample[3] = INFINITY; }));  // inf is not NULL
    EXPECT_TRUE(broken([](Owned& b) { b.sample[3] = -INFINITY; }));
    EXPECT_TRUE(broken([](Owned& b) { b.s.cols[1].null_count = 2; }));  // NULL count must match
    EXPECT_TRUE(broken([](Owned& b) { b.sample[5] = NAN; }));           // a NULL more than counted
    EXPECT_TRUE(broken([](Owned& b) { b.s.cols[1].min = 0.5; }));       // statistics of the non-NULL values
    // unstratified: m = min(sample_size, N) still holds
    EXPECT_TRUE(broken([](Owned& b) {
        b.strata.clear();
        b.point();
    }));
    EXPECT_FALSE(broken([](Owned& b) {
        b.strata.clear();
        b.point();
        b.s.sample_size = 30;
    }));
}

TEST(SynopsisStrata, FullySampledStrataGiveExactAnswers) {
    // 20 strata, every row of each in the sample: every estimate is the exact answer, se 0
    std::mt19937_64 g(9);
    std::normal_distribution<double> n01;
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> rows;
    std::vector<Stratum> strata;
    for (int k = 0; k < 20; ++k) {
        int rows_k = 1 + static_cast<int>(g() % 40);
        strata.push_back({rows_k, static_cast<int64_t>(rows.size() / 2),
                          static_cast<int64_t>(rows.size() / 2) + rows_k});
        for (int i = 0; i < rows_k; ++i) rows.push_back(k), rows.push_back(u(g) < 0.1 ? NAN : n01(g) + k);
    }
    const int64_t N = static_cast<int64_t>(rows.size() / 2);
    Owned o = make_owned(rows, 2, N, Smoothing::Never, strata);
    ASSERT_TRUE(validate(o.s).ok()) << validate(o.s).message;
    // box 0 over every stratum, boxes 1..20 one stratum each; all with col 1 in [k - 0.5, k + 1]
    std::vector<double> lo, hi;
    std::vector<int32_t> which;
    for (int q = 0; q <= 20; ++q) {
        lo.insert(lo.end(), {-INFINITY, 2.5});
        hi.insert(hi.end(), {INFINITY, 12});
        which.push_back(q - 1);
    }
    std::vector<uint8_t> nulls(21 * 2, 0);
    for (int q = 0; q <= 20; ++q) nulls[q * 2 + 1] = 1;
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        std::vector<BoxEstimate> e(21);
        ASSERT_TRUE(evaluate(o.s, batch_of(21, lo, hi, agg, 1, &nulls, &which), cpu_ctx(), e.data()).ok());
        for (int q = 0; q <= 20; ++q) {
            double count = 0, sum = 0;
            for (int64_t i = 0; i < N; ++i) {
                double key = rows[i * 2], v = rows[i * 2 + 1];
                if ((q == 0 || key == q - 1) && !std::isnan(v) && v >= 2.5 && v <= 12) count += 1, sum += v;
            }
            double want = agg == Aggregate::Count ? count : agg == Aggregate::Sum ? sum : sum / count;
            if (count == 0 && agg == Aggregate::Avg) {
                EXPECT_TRUE(std::isnan(e[q].estimate)) << q;
                continue;
            }
            EXPECT_NEAR(e[q].estimate, want, 1e-12 * std::fabs(want) + 1e-12) << q;
            EXPECT_NEAR(e[q].se, 0, 1e-9) << q;
            EXPECT_EQ(e[q].support, static_cast<int64_t>(count)) << q;
            EXPECT_EQ(e[q].n_rows, q == 0 ? static_cast<double>(N) : static_cast<double>(strata[q - 1].n_rows)) << q;
            if (agg == Aggregate::Count) {
                double lower, upper;
                interval(o.s, agg, e[q], 0.95, lower, upper);
                EXPECT_LE(upper, e[q].n_rows);
            }
        }
    }
}

namespace {

// 200 strata of 2..30 sample rows out of N_g = 5..2000 rows; col 0 the
// stratum code, col 1 normal with NULLs, col 2 exponential.
Owned weighted_strata(int groups, uint64_t seed, Smoothing sm) {
    std::mt19937_64 g(seed);
    std::normal_distribution<double> n01;
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> rows;
    std::vector<Stratum> strata;
    int64_t N = 0;
    for (int k = 0; k < groups; ++k) {
        int64_t n_k = 5 + static_cast<int64_t>(g() % 2000);
        int64_t m_k = std::min<int64_t>(n_k, 2 + static_cast<int64_t>(g() % 29));
        int64_t begin = static_cast<int64_t>(rows.size() / 3);
        strata.push_back({n_k, begin, begin + m_k});
        N += n_k;
        for (int64_t i = 0; i < m_k; ++i)
            rows.insert(rows.end(), {static_cast<double>(k), u(g) < 0.15 ? NAN : n01(g) * 2 + 5, -std::log(1 - u(g))});
    }
    return make_owned(rows, 3, N, sm, strata, {0});
}

}  // namespace

TEST(SynopsisStrata, EstimatesAndVariancesMatchTheDirectFormulas) {
    Owned o = weighted_strata(200, 10, Smoothing::Never);
    ASSERT_TRUE(validate(o.s).ok()) << validate(o.s).message;
    std::vector<double> lo = {-INFINITY, 4, 0.2, 10, 3, -INFINITY, 17, -INFINITY, -INFINITY},
                        hi = {INFINITY, 8, 2, 60, INFINITY, 1, 17, INFINITY, INFINITY};
    std::vector<uint8_t> nulls = {0, 1, 0, 0, 0, 0, 0, 2, 0};
    std::vector<int32_t> which = {-1, -1, 17};
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg})
        for (int threads : {1, 4}) {
            std::vector<BoxEstimate> e(3);
            ASSERT_TRUE(evaluate(o.s, batch_of(3, lo, hi, agg, 2, &nulls, &which), cpu_ctx(threads), e.data()).ok());
            for (int q = 0; q < 3; ++q) {
                std::vector<double> c, g;
                exact_terms(o.s, &lo[q * 3], &hi[q * 3], &nulls[q * 3], agg == Aggregate::Count ? -1 : 2, c, g);
                std::vector<Stratum> over = o.strata;
                if (which[q] >= 0) over = {o.strata[which[q]]};
                BoxEstimate r = stratified_reference(c, g, over, agg);
                if (std::isnan(r.estimate)) {
                    EXPECT_TRUE(std::isnan(e[q].estimate)) << q;
                    continue;
                }
                EXPECT_NEAR(e[q].estimate, r.estimate, 1e-11 * std::fabs(r.estimate)) << q;
                // the direct formulas' se, or more where a stratum's floor for
                // what its sample cannot see binds (widen_for_unseen)
                EXPECT_GE(e[q].se, r.se * (1 - 1e-8)) << q;
                double pop = 0;
                for (const Stratum& st : over) pop += static_cast<double>(st.n_rows);
                EXPECT_EQ(e[q].n_rows, pop);
            }
        }
}

TEST(SynopsisStrata, SmoothedColumnsAndThreadsAgree) {
    Owned o = weighted_strata(300, 11, Smoothing::Always);
    ASSERT_EQ(o.s.cols[0].mode, Mode::Exact);  // categorical
    ASSERT_EQ(o.s.cols[2].mode, Mode::Kde);
    std::vector<double> lo, hi;
    random_boxes(o.s, 40, 5, lo, hi);
    std::vector<int32_t> which(40);
    for (int q = 0; q < 40; ++q) which[q] = q % 3 == 0 ? -1 : q * 7 % 300;
    std::vector<uint8_t> nulls(40 * 3, 1);
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        std::vector<BoxEstimate> one(40), many(40);
        ASSERT_TRUE(evaluate(o.s, batch_of(40, lo, hi, agg, 2, &nulls, &which), cpu_ctx(1), one.data()).ok());
        ASSERT_TRUE(evaluate(o.s, batch_of(40, lo, hi, agg, 2, &nulls, &which), cpu_ctx(8), many.data()).ok());
        for (int q = 0; q < 40; ++q) {
            if (std::isnan(one[q].estimate)) {
                EXPECT_TRUE(std::isnan(many[q].estimate));
                continue;
            }
            EXPECT_NEAR(one[q].estimate, many[q].estimate, 1e-11 * std::fabs(one[q].estimate) + 1e-9);
            EXPECT_EQ(one[q].support, many[q].support);
        }
    }
}

TEST(SynopsisStrata, OneStratumEqualsUnstratified) {
    // a single stratum of every row and stratum 0 of an unstratified synopsis
    // give the unstratified results; NULL policies of Any equal no policies
    Built b = build(mixed_rows(5000, 12), 3, 1000000, Bandwidth::Cdf, Smoothing::Auto, cpu_ctx());
    std::vector<double> lo, hi;
    random_boxes(b.s, 30, 6, lo, hi);
    std::vector<uint8_t> any(30 * 3, 0);
    std::vector<int32_t> zero(30, 0), all(30, -1);
    Synopsis one = b.s;
    Stratum whole{1000000, 0, 5000};
    one.n_strata = 1;
    one.strata = &whole;
    one.sample_size = 5000;
    ASSERT_TRUE(validate(one).ok()) << validate(one).message;
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        std::vector<BoxEstimate> plain(30), e1(30), e2(30), e3(30);
        ASSERT_TRUE(evaluate(b.s, batch_of(30, lo, hi, agg, 1), cpu_ctx(), plain.data()).ok());
        ASSERT_TRUE(evaluate(b.s, batch_of(30, lo, hi, agg, 1, &any, &zero), cpu_ctx(), e1.data()).ok());
        ASSERT_TRUE(evaluate(one, batch_of(30, lo, hi, agg, 1, nullptr, &all), cpu_ctx(), e2.data()).ok());
        ASSERT_TRUE(evaluate(one, batch_of(30, lo, hi, agg, 1, &any, &zero), cpu_ctx(), e3.data()).ok());
        for (int q = 0; q < 30; ++q)
            for (const auto* e : {&e1, &e2, &e3}) {
                if (std::isnan(plain[q].estimate)) {
                    EXPECT_TRUE(std::isnan((*e)[q].estimate));
                    continue;
                }
                EXPECT_EQ((*e)[q].estimate, plain[q].estimate) << q;
                EXPECT_EQ((*e)[q].se, plain[q].se) << q;
                EXPECT_EQ((*e)[q].support, plain[q].support) << q;
                EXPECT_EQ((*e)[q].n_rows, 1e6);
            }
    }
    // and estimate_from_sums is the one-piece formula
    BoxSums sums;
    ASSERT_TRUE(box_sums_cpu(b.s, batch_of(1, lo, hi, Aggregate::Count, 0), cpu_ctx(), &sums).ok());
    BoxEstimate e, direct = estimate_from_sums(b.s, Aggregate::Count, sums);
    ASSERT_TRUE(evaluate(b.s, batch_of(1, lo, hi, Aggregate::Count, 0), cpu_ctx(), &e).ok());
    EXPECT_EQ(direct.estimate, e.estimate);
    EXPECT_EQ(direct.support, e.support);
}

TEST(SynopsisStrata, BadArguments) {
    Owned o = weighted_strata(10, 13, Smoothing::Never);
    std::vector<double> lo(3, -INFINITY), hi(3, INFINITY);
    std::vector<int32_t> which = {10};
    std::vector<uint8_t> nulls = {0, 3, 0};
    BoxEstimate e;
    EXPECT_EQ(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Count, 0, nullptr, &which), cpu_ctx(), &e).code,
              StatusCode::InvalidArgument);
    which[0] = -2;
    EXPECT_EQ(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Count, 0, nullptr, &which), cpu_ctx(), &e).code,
              StatusCode::InvalidArgument);
    EXPECT_EQ(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Count, 0, &nulls), cpu_ctx(), &e).code,
              StatusCode::InvalidArgument);
    // unstratified: stratum 0 and -1 only
    Built b = build(mixed_rows(100, 1), 3, 1000, Bandwidth::Scott, Smoothing::Never, cpu_ctx());
    which[0] = 1;
    EXPECT_EQ(evaluate(b.s, batch_of(1, lo, hi, Aggregate::Count, 0, nullptr, &which), cpu_ctx(), &e).code,
              StatusCode::InvalidArgument);
    // the whole table's count interval is clipped to [0, N]; a stratum's to [0, N_g]
    which[0] = 4;
    ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Count, 0, nullptr, &which), cpu_ctx(), &e).ok());
    double lower, upper;
    interval(o.s, Aggregate::Count, e, 0.95, lower, upper);
    EXPECT_LE(upper, static_cast<double>(o.strata[4].n_rows));
    BoxEstimate legacy = e;
    legacy.n_rows = 0;  // not filled: the synopsis's N
    legacy.estimate = 1e12;
    interval(o.s, Aggregate::Count, legacy, 0.95, lower, upper);
    EXPECT_EQ(upper, static_cast<double>(o.s.n_rows));
}

TEST(SynopsisSupport, CountsRowsWithPositiveWeight) {
    Built b = build(mixed_rows(6000, 14), 3, 1e6, Bandwidth::Scott, Smoothing::Always, cpu_ctx());
    std::vector<double> lo, hi;
    random_boxes(b.s, 9, 8, lo, hi);
    for (int threads : {1, 8}) {  // one task per box, and chunks of rows
        std::vector<BoxEstimate> e(9);
        ASSERT_TRUE(evaluate(b.s, batch_of(9, lo, hi, Aggregate::Count, 0), cpu_ctx(threads), e.data()).ok());
        for (int q = 0; q < 9; ++q) {
            int64_t positive = 0, inside = 0;
            for (int64_t i = 0; i < b.s.m; ++i) {
                double c, s;
                math::row_terms(&b.sample[i * 3], &lo[q * 3], &hi[q * 3], column_params(b.s), 3, -1, c, s);
                positive += c > 0;
                bool in = true;
                for (int j = 0; j < 3; ++j)
                    in = in && b.sample[i * 3 + j] >= lo[q * 3 + j] && b.sample[i * 3 + j] <= hi[q * 3 + j];
                inside += in;
            }
            EXPECT_EQ(e[q].support, positive) << q;
            EXPECT_GE(e[q].support, inside) << q;  // kernels reach past the box: at least the rows inside
        }
    }
    // an empty box has no support
    std::swap(lo[0], hi[0]);
    BoxEstimate e;
    ASSERT_TRUE(evaluate(b.s, batch_of(1, lo, hi, Aggregate::Count, 0), cpu_ctx(), &e).ok());
    EXPECT_TRUE(e.empty);
    EXPECT_EQ(e.support, 0);
}

TEST(SynopsisSampling, CongressionalAllocation) {
    auto alloc = [](std::vector<int64_t> rows, int64_t size, int64_t floor, std::vector<int64_t>& m) {
        m.assign(rows.size(), -1);
        return congressional_allocation(rows.data(), static_cast<int64_t>(rows.size()), size, floor, m.data());
    };
    std::vector<int64_t> m;
    // small groups whole, rare groups at their floor, the rest in proportion
    ASSERT_TRUE(alloc({10, 50, 1000, 100000}, 2000, 100, m).ok());
    EXPECT_EQ(m[0], 10);
    EXPECT_EQ(m[1], 50);
    EXPECT_EQ(m[0] + m[1] + m[2] + m[3], 2000);
    EXPECT_EQ(m[2], 100);  // its share 1000 * 1840 / 100000 < 100
    EXPECT_EQ(m[3], 1840);
    // one big group: the others keep the floor, the big one the rest
    ASSERT_TRUE(alloc({100000, 200, 300}, 1000, 100, m).ok());
    EXPECT_EQ(m, (std::vector<int64_t>{800, 100, 100}));
    // equal groups: equal shares
    ASSERT_TRUE(alloc({1000, 1000, 1000, 1000}, 1000, 100, m).ok());
    EXPECT_EQ(m, (std::vector<int64_t>{250, 250, 250, 250}));
    // proportional above the floors, rounded to the exact total
    ASSERT_TRUE(alloc({3000, 7000, 20000, 70000, 5}, 1001, 50, m).ok());
    int64_t total = 0;
    for (int64_t v : m) total += v;
    EXPECT_EQ(total, 1001);
    EXPECT_EQ(m[4], 5);
    EXPECT_EQ(m[0], 50);                                           // 3000 * lambda < 50
    const double lambda = static_cast<double>(1001 - 55) / 97000;  // groups 1..3 proportional
    for (int g = 1; g <= 3; ++g)
        EXPECT_LE(std::fabs(m[g] - lambda * static_cast<double>(std::vector<int64_t>{3000, 7000, 20000, 70000}[g])),
                  1.0)
            << g;
    // the floors alone exceed sample_size: every group keeps its floor
    std::vector<int64_t> many(50, 1000);
    many[7] = 30;
    ASSERT_TRUE(alloc(many, 1000, 100, m).ok());
    total = 0;
    for (int g = 0; g < 50; ++g) {
        EXPECT_EQ(m[g], g == 7 ? 30 : 100);
        total += m[g];
    }
    EXPECT_EQ(total, 4930);
    // fewer rows than sample_size: everything
    ASSERT_TRUE(alloc({5, 17, 300}, 1000, 100, m).ok());
    EXPECT_EQ(m, (std::vector<int64_t>{5, 17, 300}));
    // random cases: invariants
    std::mt19937_64 g(15);
    for (int t = 0; t < 200; ++t) {
        std::vector<int64_t> rows(1 + g() % 30);
        for (auto& r : rows) r = 1 + static_cast<int64_t>(g() % (g() % 2 ? 100000 : 300));
        int64_t size = 1 + static_cast<int64_t>(g() % 20000), floor = 1 + static_cast<int64_t>(g() % 200);
        ASSERT_TRUE(alloc(rows, size, floor, m).ok());
        int64_t sum = 0, floors = 0, all = 0;
        for (size_t k = 0; k < rows.size(); ++k) {
            EXPECT_GE(m[k], std::min(rows[k], floor));
            EXPECT_LE(m[k], rows[k]);
            sum += m[k];
            floors += std::min(rows[k], floor);
            all += rows[k];
        }
        EXPECT_EQ(sum, all <= size ? all : std::max(floors, size)) << t;
    }
    // invalid arguments
    std::vector<int64_t> out(3);
    std::vector<int64_t> good = {10, 20, 30}, zero_row = {10, 0, 30};
    EXPECT_EQ(congressional_allocation(good.data(), 0, 100, 10, out.data()).code, StatusCode::InvalidArgument);
    EXPECT_EQ(congressional_allocation(zero_row.data(), 3, 100, 10, out.data()).code, StatusCode::InvalidArgument);
    EXPECT_EQ(congressional_allocation(good.data(), 3, 0, 10, out.data()).code, StatusCode::InvalidArgument);
    EXPECT_EQ(congressional_allocation(good.data(), 3, 100, 0, out.data()).code, StatusCode::InvalidArgument);
    EXPECT_EQ(congressional_allocation(nullptr, 3, 100, 10, out.data()).code, StatusCode::InvalidArgument);
    EXPECT_EQ(congressional_allocation(good.data(), 3, 100, 10, nullptr).code, StatusCode::InvalidArgument);
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
    for (int i = 0; i < 9; ++i)
        EXPECT_NEAR(eg[i].estimate, ec[i].estimate, 1e-9 * std::fabs(ec[i].estimate) + 1e-12 * 5000);
}

TEST(SynopsisGpu, PiecesNullsAndStrataMatchCpu) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU usable: CPU = GPU is checked on the GPU machine";
    ExecContext cpu = cpu_ctx(4);
    ExecContext gpu;
    gpu.mode = DeviceMode::Gpu;
    auto compare = [&](const Synopsis& s, const BoxBatch& batch, const char* what) {
        std::vector<BoxEstimate> ec(batch.q), eg(batch.q);
        ASSERT_TRUE(evaluate(s, batch, cpu, ec.data()).ok());
        Status st = evaluate(s, batch, gpu, eg.data());
        ASSERT_TRUE(st.ok()) << st.message;
        for (int64_t i = 0; i < batch.q; ++i) {
            ASSERT_EQ(eg[i].support, ec[i].support) << what << " box " << i;
            ASSERT_EQ(eg[i].n_rows, ec[i].n_rows) << what << " box " << i;
            ASSERT_EQ(eg[i].empty, ec[i].empty);
            if (std::isnan(ec[i].estimate)) {
                ASSERT_TRUE(std::isnan(eg[i].estimate)) << what << " box " << i;
                continue;
            }
            const double scale = batch.agg == Aggregate::Avg ? 1e-12 : 1e-12 * ec[i].n_rows;
            ASSERT_NEAR(eg[i].estimate, ec[i].estimate, 1e-9 * std::fabs(ec[i].estimate) + scale)
                << what << " box " << i;
            ASSERT_NEAR(eg[i].se, ec[i].se, 1e-6 * (std::fabs(ec[i].se) + std::fabs(ec[i].estimate)) + scale)
                << what << " box " << i;
        }
    };
    // GROUP BY over 1,000 strata: one box per stratum (few rows each), plus
    // boxes over every stratum
    Owned strat = weighted_strata(1000, 16, Smoothing::Always);
    {
        const Synopsis& s = strat.s;
        const int64_t q = 1003;
        std::vector<double> lo, hi;
        random_boxes(s, q, 17, lo, hi);
        std::vector<int32_t> which(q);
        std::vector<uint8_t> nulls(q * 3);
        for (int64_t b = 0; b < q; ++b) {
            which[b] = b < 1000 ? static_cast<int32_t>(b) : -1;
            lo[b * 3] = -INFINITY, hi[b * 3] = INFINITY;
            nulls[b * 3 + 1] = static_cast<uint8_t>(b % 3);
            nulls[b * 3 + 2] = static_cast<uint8_t>(b % 2);
        }
        std::swap(lo[5 * 3 + 2], hi[5 * 3 + 2]);  // one empty box
        for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg})
            for (int k : {1, 2}) compare(s, batch_of(q, lo, hi, agg, k, &nulls, &which), "strata");
    }
    // few boxes over many rows with NULLs (pieces cut into many tasks), unstratified
    Owned big = make_owned(null_rows(300000, 18), 3, 30000000, Smoothing::Always);
    {
        std::vector<double> lo, hi;
        random_boxes(big.s, 5, 19, lo, hi);
        std::vector<uint8_t> nulls = {0, 1, 2, 0, 0, 0, 1, 1, 1, 0, 2, 0, 1, 0, 0};
        for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
            compare(big.s, batch_of(5, lo, hi, agg, 1, &nulls), "big");
            compare(big.s, batch_of(5, lo, hi, agg, 2), "big, no policies");
        }
    }
    // the engines alone on hand-made pieces (one piece of 300,000 rows, small ones, one of one row)
    {
        std::vector<double> lo, hi;
        random_boxes(big.s, 3, 20, lo, hi);
        std::vector<Piece> pieces = {{0, 0, 300000, -1}, {1, 5, 17, -1}, {1, 17, 18, -1}, {2, 1000, 99000, -1}};
        BoxBatch batch = batch_of(3, lo, hi, Aggregate::Sum, 1);
        std::vector<BoxSums> sc(4), sg(4);
        ASSERT_TRUE(piece_sums_cpu(big.s, batch, pieces.data(), 4, cpu, sc.data()).ok());
        Status st = APPROX_GPU(piece_sums_gpu(big.s, batch, pieces.data(), 4, gpu, sg.data()))();
        ASSERT_TRUE(st.ok()) << st.message;
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(sg[i].support, sc[i].support) << i;
            EXPECT_NEAR(sg[i].c0, sc[i].c0, 1e-12 * (1 + std::fabs(sc[i].c0))) << i;
            EXPECT_NEAR(sg[i].s0, sc[i].s0, 1e-12 * (1 + std::fabs(sc[i].s0))) << i;
            const double n = static_cast<double>(pieces[i].end - pieces[i].begin);
            EXPECT_NEAR(sg[i].sc, sc[i].sc, 1e-9 * n) << i;
            EXPECT_NEAR(sg[i].ss, sc[i].ss, 1e-9 * n * 30) << i;
            EXPECT_NEAR(sg[i].sss, sc[i].sss, 1e-9 * std::fabs(sc[i].sss) + 1e-9 * n) << i;
        }
    }
}

// ---- intervals: what the sample cannot see (issue 26, items 19-21) ----------------------------

namespace {

// Two strata of d = 2 rows (col 0 the stratum code, col 1 values):
// stratum 0 holds all of its `whole` rows, stratum 1 `m1` sample rows of n1.
Owned two_strata(int64_t whole, int64_t m1, int64_t n1, Smoothing sm, double (*value)(std::mt19937_64&, int64_t)) {
    std::mt19937_64 g(21);
    std::vector<double> rows;
    for (int64_t i = 0; i < whole; ++i) rows.insert(rows.end(), {0.0, value(g, i)});
    for (int64_t i = 0; i < m1; ++i) rows.insert(rows.end(), {1.0, value(g, i)});
    std::vector<Stratum> strata = {{whole, 0, whole}, {n1, whole, whole + m1}};
    return make_owned(rows, 2, whole + n1, sm, strata, {0});
}

double uniform_value(std::mt19937_64& g, int64_t) { return std::uniform_real_distribution<double>(0, 100)(g); }
double zero_value(std::mt19937_64&, int64_t) { return 0.0; }

}  // namespace

TEST(SynopsisIntervals, NoSampleRowGivesAnUpperBound) {
    // 200 of 20,000 rows, values in [0, 100): a box beyond them holds no sample row
    std::mt19937_64 g(5);
    std::vector<double> rows;
    for (int i = 0; i < 200; ++i) rows.insert(rows.end(), {uniform_value(g, i), uniform_value(g, i)});
    for (int64_t N : {20000, 200}) {  // sampled, then the whole table
        Owned o = make_owned(rows, 2, N, Smoothing::Never);
        std::vector<double> lo = {200, -INFINITY}, hi = {300, INFINITY};
        BoxEstimate c, s, a;
        ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Count, 0), cpu_ctx(), &c).ok());
        ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Sum, 1), cpu_ctx(), &s).ok());
        ASSERT_TRUE(evaluate(o.s, batch_of(1, lo, hi, Aggregate::Avg, 1), cpu_ctx(), &a).ok());
        EXPECT_EQ(c.support, 0);
        double lower, upper;
        interval(o.s, Aggregate::Count, c, 0.95, lower, upper);
        EXPECT_EQ(c.estimate, 0);
        EXPECT_EQ(lower, 0);
        if (N == 200) {  // every row sampled: exactly none
            EXPECT_EQ(upper, 0);
        } else {  // Wilson's zero-success bound, N z^2 / (m + z^2), about 3.8 N / m
            const double z2 = 1.96 * 1.96, fpc = (N - 200.0) / (N - 1.0), p = z2 / (200 + 2 * z2);
            EXPECT_NEAR(upper, 1.96 * N * std::sqrt(fpc * p * (1 - p) / 200), 1e-6 * N);
            EXPECT_GT(upper, 3.0 * N / 200);
        }
        interval(o.s, Aggregate::Sum, s, 0.95, lower, upper);
        EXPECT_EQ(s.estimate, 0);
        EXPECT_EQ(lower, 0);  // a non-negative column
        if (N == 200)
            EXPECT_EQ(upper, 0);
        else
            EXPECT_GT(upper, 0);
        EXPECT_TRUE(std::isnan(a.estimate));
    }
}

TEST(SynopsisIntervals, AllInTheBoxIsNotZeroWidthUnlessWhollySampled) {
    // stratum 1: 100 sample rows of 1,000, every value 0; the box value = 0 holds them all
    Owned o = two_strata(50, 100, 1000, Smoothing::Never, zero_value);
    std::vector<double> lo = {1, 0, 0, 0}, hi = {1, 0, 0, 0};
    std::vector<int32_t> which = {1, 0};
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg}) {
        std::vector<BoxEstimate> e(2);
        ASSERT_TRUE(evaluate(o.s, batch_of(2, lo, hi, agg, 1, nullptr, &which), cpu_ctx(), e.data()).ok());
        double lower, upper;
        interval(o.s, agg, e[0], 0.95, lower, upper);
        if (agg == Aggregate::Count) {
            EXPECT_EQ(e[0].estimate, 1000);
            EXPECT_LT(lower, 990);  // rows of another value may hide among the 900 unseen
            EXPECT_EQ(upper, 1000);
        }
        interval(o.s, agg, e[1], 0.95, lower, upper);  // the wholly sampled stratum: exact
        EXPECT_EQ(lower, upper) << static_cast<int>(agg);
    }
}

TEST(SynopsisIntervals, WhollySampledStrataAreExactOnSmoothedColumns) {
    Owned o = two_strata(80, 300, 30000, Smoothing::Always, uniform_value);
    ASSERT_EQ(o.s.cols[1].mode, Mode::Kde);
    std::vector<double> lo, hi;
    std::vector<int32_t> which;
    for (double t : {10.0, 33.3, 50.0, 99.0, 150.0}) {
        lo.insert(lo.end(), {-INFINITY, -INFINITY});
        hi.insert(hi.end(), {INFINITY, t});
        which.push_back(0);
    }
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum}) {
        std::vector<BoxEstimate> e(5);
        ASSERT_TRUE(evaluate(o.s, batch_of(5, lo, hi, agg, 1, nullptr, &which), cpu_ctx(), e.data()).ok());
        for (int q = 0; q < 5; ++q) {
            double count = 0, sum = 0;
            for (int64_t i = 0; i < 80; ++i)
                if (o.sample[i * 2 + 1] <= hi[q * 2 + 1]) count += 1, sum += o.sample[i * 2 + 1];
            EXPECT_NEAR(e[q].estimate, agg == Aggregate::Count ? count : sum, 1e-9 * (sum + 1)) << q;
            EXPECT_EQ(e[q].se, 0) << q;
            EXPECT_EQ(e[q].support, static_cast<int64_t>(count)) << q;
        }
    }
    // a box beyond every value: no phantom mass in the wholly sampled stratum
    std::vector<double> lo1 = {-INFINITY, 100.5}, hi1 = {INFINITY, INFINITY};
    std::vector<int32_t> w0 = {0};
    BoxEstimate e;
    ASSERT_TRUE(evaluate(o.s, batch_of(1, lo1, hi1, Aggregate::Count, 0, nullptr, &w0), cpu_ctx(), &e).ok());
    EXPECT_EQ(e.estimate, 0);
    EXPECT_EQ(e.support, 0);
}

TEST(SynopsisIntervals, SumAndAvgStayInTheColumnsRange) {
    Owned o = weighted_strata(200, 12, Smoothing::Never);  // col 2 exponential (>= 0)
    std::vector<double> lo, hi;
    std::mt19937_64 g(3);
    std::uniform_real_distribution<double> u(0, 1);
    const int q = 300;
    for (int b = 0; b < q; ++b) {
        double a = -std::log(1 - u(g)), w = 0.05 * u(g);
        lo.insert(lo.end(), {-INFINITY, -INFINITY, a});
        hi.insert(hi.end(), {INFINITY, INFINITY, a + w});
    }
    std::vector<BoxEstimate> s(q), a(q);
    ASSERT_TRUE(evaluate(o.s, batch_of(q, lo, hi, Aggregate::Sum, 2), cpu_ctx(), s.data()).ok());
    ASSERT_TRUE(evaluate(o.s, batch_of(q, lo, hi, Aggregate::Avg, 2), cpu_ctx(), a.data()).ok());
    for (int b = 0; b < q; ++b) {
        double lower, upper;
        interval(o.s, Aggregate::Sum, s[b], 0.95, lower, upper);
        EXPECT_GE(lower, 0) << b;
        EXPECT_LE(lower, s[b].estimate) << b;
        EXPECT_GE(upper, s[b].estimate) << b;
        if (std::isnan(a[b].estimate)) continue;
        interval(o.s, Aggregate::Avg, a[b], 0.95, lower, upper);
        EXPECT_GE(lower, o.s.cols[2].min) << b;
        EXPECT_LE(upper, o.s.cols[2].max) << b;
    }
}

// The CPU engine alone: the same boxes with 1 and 4 threads give the same
// estimates and finite standard errors (the CPU = GPU tests above run only on
// the GPU machine; this one runs in CI too).
TEST(SynopsisCpu, StrataWithNullsSameAcrossThreads) {
    ExecContext one = cpu_ctx(1), four = cpu_ctx(4);
    Owned strat = weighted_strata(1000, 16, Smoothing::Always);
    const Synopsis& s = strat.s;
    const int64_t q = 1003;
    std::vector<double> lo, hi;
    random_boxes(s, q, 17, lo, hi);
    std::vector<int32_t> which(q);
    std::vector<uint8_t> nulls(q * 3);
    for (int64_t b = 0; b < q; ++b) {
        which[b] = b < 1000 ? static_cast<int32_t>(b) : -1;
        lo[b * 3] = -INFINITY, hi[b * 3] = INFINITY;
        nulls[b * 3 + 1] = static_cast<uint8_t>(b % 3);
        nulls[b * 3 + 2] = static_cast<uint8_t>(b % 2);
    }
    for (Aggregate agg : {Aggregate::Count, Aggregate::Sum, Aggregate::Avg})
        for (int k : {1, 2}) {
            BoxBatch batch = batch_of(q, lo, hi, agg, k, &nulls, &which);
            std::vector<BoxEstimate> e1(q), e4(q);
            ASSERT_TRUE(evaluate(s, batch, one, e1.data()).ok());
            ASSERT_TRUE(evaluate(s, batch, four, e4.data()).ok());
            for (int64_t i = 0; i < q; ++i) {
                if (std::isnan(e1[i].estimate)) continue;
                ASSERT_TRUE(std::isfinite(e1[i].se)) << "box " << i << " agg " << static_cast<int>(agg) << " se " << e1[i].se;
                ASSERT_LT(std::fabs(e1[i].se), 1e12) << "box " << i << " agg " << static_cast<int>(agg) << " k " << k;
                ASSERT_NEAR(e4[i].se, e1[i].se, 1e-6 * (std::fabs(e1[i].se) + std::fabs(e1[i].estimate)) + 1e-9)
                    << "box " << i << " agg " << static_cast<int>(agg) << " k " << k;
            }
        }
}
