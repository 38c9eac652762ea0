// Accuracy of KDE synopses (smoothing = auto, the guard) against the plain
// sample estimator (smoothing = never, the same sample) through the engine
// API, on the real data sets of the tests and on generated shapes that break
// fixed bandwidths. Per data set and selectivity band: median
// relative error of COUNT / SUM / AVG, coverage of the 95% intervals, and the
// guard's decision per column. Exact answers come from the whole table.
//
//   build/synopsis_accuracy_bench [m=10000] [boxes=200] [seeds=3] [sets=all]
// Real data: build/synopsis_data/{diamonds,movielens}.csv (written by
// test/bench/synopsis_data.sh); missing files are skipped. Generated data
// use fixed seeds printed with the results. Sampling seeds 1..seeds; box
// seeds fixed per data set and band.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/synopsis.hpp"

using namespace approx;
using namespace approx::synopsis;

namespace {

struct Table {
    std::string name, note;
    int d = 0;
    int agg = 0;               // 0-based SUM / AVG column
    std::vector<double> rows;  // N x d
    int64_t n() const { return static_cast<int64_t>(rows.size()) / d; }
};

bool read_csv(const std::string& path, int d, std::vector<double>& rows) {
    std::ifstream in(path);
    if (!in) return false;
    std::string line;
    while (std::getline(in, line)) {
        std::stringstream ss(line);
        std::string cell;
        int j = 0;
        while (std::getline(ss, cell, ',') && j < d) {
            rows.push_back(std::strtod(cell.c_str(), nullptr));
            ++j;
        }
        if (j != d) return false;
    }
    return !rows.empty();
}

// ---- generated shapes (fixed seeds) -------------------------------------------------------
constexpr int64_t kGenRows = 1000000;

Table lognormal_sizes(uint64_t seed) {
    // integer sizes round(exp(N(3, 1.6))) (many ties at small values, a tail of
    // 4+ orders of magnitude) x a small discrete count depending on the size
    Table t{"lognormal_int",
            "a = round(exp(N(3, 1.6))), b = Poisson(1 + log1p(a)/3) capped at 12; seed " + std::to_string(seed),
            2,
            0,
            {}};
    std::mt19937_64 g(seed);
    std::normal_distribution<double> z(0, 1);
    for (int64_t i = 0; i < kGenRows; ++i) {
        double a = std::round(std::exp(3 + 1.6 * z(g)));
        std::poisson_distribution<int> p(1 + std::log1p(a) / 3);
        t.rows.push_back(a);
        t.rows.push_back(std::min(12, p(g)));
    }
    return t;
}

Table pareto_sizes(uint64_t seed) {
    Table t{"pareto_int",
            "a = floor(10 U^(-1/1.1)) (Pareto, alpha 1.1), b = 1 + Binomial(4, 0.3 + 0.4 [a > 30]); seed " +
                std::to_string(seed),
            2,
            0,
            {}};
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t i = 0; i < kGenRows; ++i) {
        double a = std::floor(10 * std::pow(1 - u(g), -1 / 1.1));
        std::binomial_distribution<int> b(4, a > 30 ? 0.7 : 0.3);
        t.rows.push_back(a);
        t.rows.push_back(1 + b(g));
    }
    return t;
}

Table zero_inflated(uint64_t seed) {
    Table t{"zero_inflated",
            "a = 0 w.p. 0.45 else exp(N(2, 1)) (continuous), b = N(50, 10) + 5 [a > 0]; seed " + std::to_string(seed),
            2,
            0,
            {}};
    std::mt19937_64 g(seed);
    std::normal_distribution<double> z(0, 1);
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t i = 0; i < kGenRows; ++i) {
        double a = u(g) < 0.45 ? 0 : std::exp(2 + z(g));
        t.rows.push_back(a);
        t.rows.push_back(50 + 10 * z(g) + (a > 0 ? 5 : 0));
    }
    return t;
}

Table point_mass(uint64_t seed) {
    Table t{"point_mass_mix",
            "a = 100 w.p. 0.3 else N(100, 15), b = U(0, 10) continuous, agg b; seed " + std::to_string(seed),
            2,
            1,
            {}};
    std::mt19937_64 g(seed);
    std::normal_distribution<double> z(0, 1);
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t i = 0; i < kGenRows; ++i) {
        double a = u(g) < 0.3 ? 100 : 100 + 15 * z(g);
        t.rows.push_back(a);
        t.rows.push_back(10 * u(g) + a / 100);
    }
    return t;
}

Table weekly_dates(uint64_t seed) {
    Table t{
        "weekly_dates",
        "day = 0..1095 (3 years), weekday weights 1,1,1,1,1.3,0.4,0.2, a yearly bump; amount = exp(N(3, 1)); seed " +
            std::to_string(seed),
        2,
        1,
        {}};
    std::mt19937_64 g(seed);
    std::normal_distribution<double> z(0, 1);
    std::vector<double> w(1096);
    const double wd[7] = {1, 1, 1, 1, 1.3, 0.4, 0.2};
    for (int k = 0; k < 1096; ++k) w[k] = wd[k % 7] * (1 + 0.5 * std::sin(2 * M_PI * k / 365.25));
    std::discrete_distribution<int> day(w.begin(), w.end());
    for (int64_t i = 0; i < kGenRows; ++i) {
        t.rows.push_back(day(g));
        t.rows.push_back(std::exp(3 + z(g)));
    }
    return t;
}

Table smooth_mixture(uint64_t seed) {
    Table t{"smooth_mixture",
            "3-component Gaussian mixture in 3 columns (the tests' mixture); seed " + std::to_string(seed),
            3,
            2,
            {}};
    std::mt19937_64 g(seed);
    std::normal_distribution<double> z(0, 1);
    for (int64_t i = 0; i < kGenRows; ++i) {
        int k = static_cast<int>(g() % 3);
        double z1 = z(g), z2 = z(g), z3 = z(g);
        t.rows.push_back((k == 0 ? 0 : k == 1 ? 3 : -2) + z1 * (k == 0 ? 1 : k == 1 ? 0.7 : 1.5));
        t.rows.push_back((k == 0 ? 0 : k == 1 ? 2 : 4) + (0.6 * z1 + 0.8 * z2) * (k == 2 ? 2 : 1));
        t.rows.push_back(10 * (k + 1) + 3 * z3);
    }
    return t;
}

// ---- boxes ---------------------------------------------------------------------------------
struct Box {
    std::vector<double> lo, hi;
    double n = 0, s = 0, a = 0;
};

// Boxes with exact selectivity in [lo_sel, hi_sel]: each column constrained
// with probability p (the first always) to a window of a random width of its
// sorted values (edges at data values of a 40000-row pilot).
std::vector<Box> make_boxes(const Table& t, int count, double lo_sel, double hi_sel, double min_w, double max_w,
                            double p, uint64_t seed) {
    const int d = t.d;
    const int64_t n = t.n();
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<std::vector<double>> q(d);
    std::vector<double> pilot_rows;
    const int64_t pilot = std::min<int64_t>(n, 40000);
    for (int64_t i = 0; i < pilot; ++i) {
        int64_t r = static_cast<int64_t>(g() % n);
        for (int j = 0; j < d; ++j) {
            q[j].push_back(t.rows[r * d + j]);
            pilot_rows.push_back(t.rows[r * d + j]);
        }
    }
    for (int j = 0; j < d; ++j) std::sort(q[j].begin(), q[j].end());
    std::vector<Box> out;
    for (int tries = 0; static_cast<int>(out.size()) < count && tries < 2000 * count; ++tries) {
        Box b;
        b.lo.assign(d, -INFINITY);
        b.hi.assign(d, INFINITY);
        for (int j = 0; j < d; ++j) {
            if (j > 0 && u(g) >= p) continue;
            double w = min_w + u(g) * (max_w - min_w), x = u(g) * (1 - w);
            b.lo[j] = q[j][static_cast<size_t>(x * (pilot - 1))];
            b.hi[j] = q[j][static_cast<size_t>((x + w) * (pilot - 1))];
        }
        double pc = 0;
        for (int64_t i = 0; i < pilot; ++i) {
            bool in = true;
            for (int j = 0; j < d && in; ++j) in = pilot_rows[i * d + j] >= b.lo[j] && pilot_rows[i * d + j] <= b.hi[j];
            pc += in;
        }
        if (pc / pilot < lo_sel / 2 || pc / pilot > hi_sel * 1.5) continue;
        double cnt = 0, sum = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double* r = &t.rows[i * d];
            bool in = true;
            for (int j = 0; j < d && in; ++j) in = r[j] >= b.lo[j] && r[j] <= b.hi[j];
            if (in) {
                cnt += 1;
                sum += r[t.agg];
            }
        }
        double sel = cnt / n;
        if (sel < lo_sel || sel > hi_sel || sum == 0) continue;
        b.n = cnt;
        b.s = sum;
        b.a = sum / cnt;
        out.push_back(b);
    }
    return out;
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t k = v.size() / 2;
    return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

struct Built {
    std::vector<double> sample;
    Synopsis s;
};

Built build(const Table& t, int64_t m, uint64_t seed, Smoothing sm, const ExecContext& ctx) {
    Built b;
    Reservoir r;
    reservoir_init(r, m, seed);
    const int d = t.d;
    for (int64_t i = 0; i < t.n(); ++i) {
        int64_t slot = reservoir_slot(r);
        if (slot < 0) continue;
        if (slot == static_cast<int64_t>(b.sample.size()) / d)
            b.sample.insert(b.sample.end(), &t.rows[i * d], &t.rows[i * d] + d);
        else
            std::copy(&t.rows[i * d], &t.rows[i * d] + d, &b.sample[slot * d]);
    }
    b.s.d = d;
    b.s.n_rows = t.n();
    b.s.m = r.size;
    b.s.sample_size = m;
    b.s.sample = b.sample.data();
    Status st = finalize(b.s, sm == Smoothing::Never ? Bandwidth::Scott : Bandwidth::Cdf, sm, ctx);
    if (!st.ok()) {
        std::fprintf(stderr, "finalize: %s\n", st.message);
        std::exit(1);
    }
    b.s.sample = b.sample.data();
    return b;
}

struct Metrics {
    double err[3] = {0, 0, 0};  // median relative error % COUNT, SUM, AVG
    double cover[3] = {0, 0, 0};
};

Metrics measure(const Synopsis& s, const std::vector<Box>& boxes, int agg_col, const ExecContext& ctx) {
    Metrics out;
    const int d = s.d;
    const int64_t q = static_cast<int64_t>(boxes.size());
    std::vector<double> lo(q * d), hi(q * d);
    for (int64_t b = 0; b < q; ++b)
        for (int j = 0; j < d; ++j) {
            lo[b * d + j] = boxes[b].lo[j];
            hi[b * d + j] = boxes[b].hi[j];
        }
    for (int a = 0; a < 3; ++a) {
        BoxBatch batch;
        batch.q = q;
        batch.lo = lo.data();
        batch.hi = hi.data();
        batch.agg = static_cast<Aggregate>(a);
        batch.column = agg_col;
        std::vector<BoxEstimate> e(q);
        Status st = evaluate(s, batch, ctx, e.data());
        if (!st.ok()) {
            std::fprintf(stderr, "evaluate: %s\n", st.message);
            std::exit(1);
        }
        std::vector<double> errs;
        double covered = 0;
        for (int64_t b = 0; b < q; ++b) {
            double truth = a == 0 ? boxes[b].n : a == 1 ? boxes[b].s : boxes[b].a;
            if (std::isnan(e[b].estimate)) {
                errs.push_back(100);
                continue;
            }
            errs.push_back(100 * std::fabs(e[b].estimate / truth - 1));
            double lower, upper;
            interval(s, batch.agg, e[b], 0.95, lower, upper);
            if (lower <= truth && truth <= upper) covered += 1;
        }
        out.err[a] = median(errs);
        out.cover[a] = q ? covered / q : NAN;
    }
    return out;
}

std::string decisions(const Synopsis& s) {
    std::string out;
    char buf[160];
    for (int j = 0; j < s.d; ++j) {
        const Column& c = s.cols[j];
        std::snprintf(buf, sizeof buf, "%s%s(cv %.3g/%.3g/%.3g x%.2f)", j ? " " : "", mode_name(c.mode), c.cv_error[0],
                      c.cv_error[1], c.cv_error[2], c.interval_scale);
        out += buf;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t m = argc > 1 ? std::atoll(argv[1]) : 10000;
    const int n_boxes = argc > 2 ? std::atoi(argv[2]) : 200;
    const int seeds = argc > 3 ? std::atoi(argv[3]) : 3;
    const std::string sets = argc > 4 ? argv[4] : "all";
    ExecContext ctx;
    ctx.mode = DeviceMode::Cpu;
    ctx.cpu_threads = 2;
    auto wanted = [&](const std::string& name) {
        return sets == "all" || ("," + sets + ",").find("," + name + ",") != std::string::npos;
    };

    std::vector<Table> tables;
    if (wanted("diamonds")) {
        Table t{"diamonds", "ggplot2 diamonds: carat, depth, table, price; SUM/AVG of price", 4, 3, {}};
        if (read_csv("build/synopsis_data/diamonds.csv", 4, t.rows)) tables.push_back(std::move(t));
    }
    if (wanted("movielens")) {
        Table t{"movielens", "dslabs movielens: year, rating, timestamp, userId; SUM/AVG of rating", 4, 1, {}};
        if (read_csv("build/synopsis_data/movielens.csv", 4, t.rows)) tables.push_back(std::move(t));
    }
    if (wanted("lognormal_int")) tables.push_back(lognormal_sizes(101));
    if (wanted("pareto_int")) tables.push_back(pareto_sizes(202));
    if (wanted("zero_inflated")) tables.push_back(zero_inflated(303));
    if (wanted("point_mass_mix")) tables.push_back(point_mass(404));
    if (wanted("weekly_dates")) tables.push_back(weekly_dates(505));
    if (wanted("smooth_mixture")) tables.push_back(smooth_mixture(606));

    struct Band {
        const char* name;
        double lo, hi;
    };
    const Band bands[] = {{"0.1-1%", 0.001, 0.01}, {"1-10%", 0.01, 0.1}, {"10-50%", 0.1, 0.5}, {">=1%", 0.01, 1.0}};
    std::printf(
        "m = %lld, %d boxes per band, sampling seeds 1..%d; median relative error %% (KDE auto / plain), "
        "coverage of 95%% intervals (KDE auto; plain)\n",
        static_cast<long long>(m), n_boxes, seeds);
    std::printf("%-15s %-7s %5s | %13s %13s %13s | %17s %17s %17s\n", "data set", "band", "boxes", "COUNT kde/pl",
                "SUM kde/pl", "AVG kde/pl", "cov COUNT kde/pl", "cov SUM kde/pl", "cov AVG kde/pl");
    for (const Table& t : tables) {
        std::printf("# %s (N = %lld): %s\n", t.name.c_str(), static_cast<long long>(t.n()), t.note.c_str());
        std::vector<Built> kde, plain;
        for (int sd = 1; sd <= seeds; ++sd) {
            kde.push_back(build(t, m, static_cast<uint64_t>(sd), Smoothing::Auto, ctx));
            plain.push_back(build(t, m, static_cast<uint64_t>(sd), Smoothing::Never, ctx));
            kde.back().s.sample = kde.back().sample.data();
            plain.back().s.sample = plain.back().sample.data();
            std::printf("#   seed %d guard: %s; joint cv exact/chosen %.3g/%.3g\n", sd, decisions(kde.back().s).c_str(),
                        kde.back().s.joint_cv[0], kde.back().s.joint_cv[1]);
        }
        int bi = 0;
        for (const Band& band : bands) {
            // Narrow bands need narrow windows.
            double min_w = band.hi <= 0.01 ? 0.02 : band.hi <= 0.1 ? 0.05 : 0.2;
            double max_w = band.hi <= 0.01 ? 0.3 : band.hi <= 0.1 ? 0.6 : 0.9;
            std::vector<Box> boxes = make_boxes(t, n_boxes, band.lo, band.hi, min_w, max_w, 0.6, 1000 + 17 * bi++);
            if (boxes.empty()) {
                std::printf("%-15s %-7s %5d | no boxes\n", t.name.c_str(), band.name, 0);
                continue;
            }
            Metrics k, p;
            for (int sd = 0; sd < seeds; ++sd) {
                Metrics a = measure(kde[sd].s, boxes, t.agg, ctx), b = measure(plain[sd].s, boxes, t.agg, ctx);
                for (int x = 0; x < 3; ++x) {
                    k.err[x] += a.err[x] / seeds;
                    p.err[x] += b.err[x] / seeds;
                    k.cover[x] += a.cover[x] / seeds;
                    p.cover[x] += b.cover[x] / seeds;
                }
            }
            std::printf("%-15s %-7s %5zu | %6.2f/%6.2f %6.2f/%6.2f %6.2f/%6.2f | %8.3f/%8.3f %8.3f/%8.3f %8.3f/%8.3f\n",
                        t.name.c_str(), band.name, boxes.size(), k.err[0], p.err[0], k.err[1], p.err[1], k.err[2],
                        p.err[2], k.cover[0], p.cover[0], k.cover[1], p.cover[1], k.cover[2], p.cover[2]);
            std::fflush(stdout);
        }
    }
    return 0;
}
