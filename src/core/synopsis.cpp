// KDE synopses: sampling, building (statistics, bandwidths, discrete
// columns), validation and the CPU box engine. See synopsis.hpp; evaluate()'s
// request to the GPU service is in synopsis_served.cpp.
#include "synopsis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "kde.hpp"
#include "moments.hpp"
#include "parallel.hpp"
#include "service.hpp"
#include "synopsis_internal.hpp"
#include "synopsis_math.hpp"
#include "synopsis_served.hpp"

namespace approx::synopsis {

namespace {

constexpr int kLscvGrid = 150;
constexpr size_t kLscvRows = 10000;  // LSCV of a build: at most this many rows (then rescaled)
constexpr double kCategoricalBandwidth = 0.5;  // half the distance of two dictionary codes (never used to smooth)
constexpr uint64_t kGuardSeed =
    0x6a09e667f3bcc909ULL;                       // the guard's folds and boxes: a synopsis is a function of its sample
constexpr int64_t kCpuRowsPerTask = 2048;        // sample rows per task when boxes are few
constexpr int64_t kCpuSingleThreadWork = 20000;  // box x row evaluations below which one thread runs

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

double column_value_tolerance(double x, double delta) { return 1e-9 * std::max(std::fabs(x), delta); }

bool all_multiples(const std::vector<double>& distinct, double delta) {
    for (double x : distinct) {
        double r = std::nearbyint(x / delta);
        if (std::fabs(x - delta * r) > column_value_tolerance(x, delta)) return false;
    }
    return true;
}

// Sorted distinct values of a column.
std::vector<double> distinct_sorted(const double* values, size_t n) {
    std::vector<double> v(values, values + n);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

// Greatest common step of two positive values by Euclid's algorithm on
// doubles, remainders within tol of 0 or of the divisor counted as 0.
double float_gcd(double a, double b, double tol) {
    if (a < b) std::swap(a, b);
    while (b > tol) {
        double r = std::fmod(a, b);
        if (r > b - tol) r = 0;
        a = b;
        b = r;
    }
    return a;
}

bool step_of_distinct(const std::vector<double>& distinct, double min_step, double& step) {
    step = 0;
    if (distinct.size() < 2) return false;
    const double scale = std::max(std::fabs(distinct.front()), std::fabs(distinct.back()));
    const double tol = 1e-9 * scale;
    double g = 0;
    for (double x : distinct) {
        double ax = std::fabs(x);
        if (ax <= tol) continue;  // 0 is a multiple of every step
        g = g == 0 ? ax : float_gcd(g, ax, tol);
        if (g < min_step || g <= tol) return false;
    }
    if (!(g > 0) || g < min_step || !all_multiples(distinct, g)) return false;
    step = g;
    return true;
}

// The plug-in bandwidths of a build come from binned pair sums
// (kde::plugin_bandwidth_binned: O(m) + O(bins), within 1e-4 of the exact
// O(m^2) sums), on every value: a build costs what it reads.
Status kde_column_bandwidths(const double* x, size_t m, Bandwidth method, const ExecContext& ctx, double& density_h,
                             double& box_h) {
    switch (method) {
        case Bandwidth::Cdf:
            APPROX_TRY(kde::plugin_bandwidth_binned(x, m, kde::PluginTarget::Distribution, ctx, box_h));
            APPROX_TRY(kde::plugin_bandwidth_binned(x, m, kde::PluginTarget::Density, ctx, density_h));
            return Status::Ok();
        case Bandwidth::Plugin:
            APPROX_TRY(kde::plugin_bandwidth_binned(x, m, kde::PluginTarget::Density, ctx, density_h));
            box_h = density_h;
            return Status::Ok();
        case Bandwidth::Scott:
            APPROX_TRY(kde::bandwidth(x, m, kde::Method::Scott, ctx, density_h));
            box_h = density_h;
            return Status::Ok();
        case Bandwidth::Lscv: break;  // joint, handled by the caller
    }
    return Status::Error(StatusCode::Internal, "unexpected bandwidth method");
}

bool valid_positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

const char* bandwidth_name(Bandwidth b) {
    switch (b) {
        case Bandwidth::Cdf: return "cdf";
        case Bandwidth::Plugin: return "plugin";
        case Bandwidth::Lscv: return "lscv";
        case Bandwidth::Scott: return "scott";
    }
    return "?";
}

const char* mode_name(Mode m) {
    switch (m) {
        case Mode::Exact: return "exact";
        case Mode::Kde: return "kde";
        case Mode::LogKde: return "log_kde";
    }
    return "?";
}

const char* smoothing_name(Smoothing s) {
    switch (s) {
        case Smoothing::Auto: return "auto";
        case Smoothing::Always: return "always";
        case Smoothing::Never: return "never";
    }
    return "?";
}

// ---- random numbers and sampling ------------------------------------------------------

void Rng::seed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s) w = splitmix64(x);
    if ((s[0] | s[1] | s[2] | s[3]) == 0) s[0] = 1;
}

uint64_t Rng::next() {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t bound) {
    // Lemire's multiply-shift with rejection: exactly uniform.
    unsigned __int128 prod = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(prod);
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            prod = static_cast<unsigned __int128>(next()) * bound;
            low = static_cast<uint64_t>(prod);
        }
    }
    return static_cast<uint64_t>(prod >> 64);
}

void reservoir_init(Reservoir& r, int64_t capacity, uint64_t seed) {
    r = Reservoir();
    r.capacity = capacity;
    r.rng.seed(seed);
}

int64_t reservoir_slot(Reservoir& r) {
    int64_t row = r.seen++;
    if (r.size < r.capacity) return r.size++;
    // Algorithm R: row number `row` replaces a uniform slot with probability k / (row + 1).
    uint64_t j = r.rng.below(static_cast<uint64_t>(row) + 1);
    return j < static_cast<uint64_t>(r.capacity) ? static_cast<int64_t>(j) : -1;
}

int64_t hypergeometric(Rng& rng, int64_t population, int64_t successes, int64_t draws) {
    int64_t found = 0;
    int64_t left = population, good = successes;
    for (int64_t i = 0; i < draws && good > 0; ++i) {
        if (good == left) return found + (draws - i);  // only successes remain
        if (static_cast<int64_t>(rng.below(static_cast<uint64_t>(left))) < good) {
            ++found;
            --good;
        }
        --left;
    }
    return found;
}

int64_t merged_size(int64_t k1, int64_t n1, int64_t k2, int64_t n2) { return std::min(std::min(k1, k2), n1 + n2); }

Status merge_samples(const double* a, int64_t m1, int64_t n1, int64_t k1, const double* b, int64_t m2, int64_t n2,
                     int64_t k2, int d, Rng& rng, double* out, int64_t& m_out) {
    return guarded([&]() -> Status {
        if (d < 1 || m1 < 0 || m2 < 0 || n1 < m1 || n2 < m2 || m1 != std::min(k1, n1) || m2 != std::min(k2, n2))
            return Status::Error(StatusCode::InvalidArgument, "inconsistent sample sizes to merge");
        int64_t target = merged_size(k1, n1, k2, n2);
        int64_t from_a = hypergeometric(rng, n1 + n2, n1, target);
        int64_t from_b = target - from_a;
        if (from_a > m1 || from_b > m2)
            return Status::Error(StatusCode::Internal, "merge draws %lld + %lld rows from samples of %lld and %lld",
                                 static_cast<long long>(from_a), static_cast<long long>(from_b),
                                 static_cast<long long>(m1), static_cast<long long>(m2));
        int64_t written = 0;
        auto take = [&](const double* src, int64_t m, int64_t count) {
            // Partial Fisher-Yates: `count` distinct rows, uniformly.
            std::vector<int64_t> idx(static_cast<size_t>(m));
            std::iota(idx.begin(), idx.end(), int64_t{0});
            for (int64_t i = 0; i < count; ++i) {
                int64_t j = i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(m - i)));
                std::swap(idx[i], idx[j]);
                std::copy(src + idx[i] * d, src + idx[i] * d + d, out + written * d);
                ++written;
            }
        };
        take(a, m1, from_a);
        take(b, m2, from_b);
        m_out = written;
        return Status::Ok();
    });
}

Status congressional_allocation(const int64_t* group_rows, int64_t groups, int64_t sample_size, int64_t floor,
                                int64_t* m_out) {
    // Every group keeps f_g = min(rows_g, floor); above that, the groups share
    // sample_size in proportion to their sizes: m_g = min(rows_g, max(f_g,
    // lambda rows_g)) with the one lambda in [0, 1) that makes the total
    // sample_size (the total is piecewise linear and nondecreasing in lambda),
    // then rounded to integers by largest remainders so that the total is
    // exactly sample_size. The floors alone at or above sample_size: m_g = f_g;
    // every row within sample_size: m_g = rows_g.
    if (group_rows == nullptr || m_out == nullptr || groups < 1)
        return Status::Error(StatusCode::InvalidArgument, "congressional allocation needs at least one group");
    if (sample_size < 1) return Status::Error(StatusCode::InvalidArgument, "sample size must be positive");
    if (floor < 1) return Status::Error(StatusCode::InvalidArgument, "the floor must be at least 1");
    return guarded([&]() -> Status {
        int64_t floors = 0, rows = 0;
        for (int64_t g = 0; g < groups; ++g) {
            if (group_rows[g] < 1)
                return Status::Error(StatusCode::InvalidArgument, "group %lld has %lld rows", static_cast<long long>(g),
                                     static_cast<long long>(group_rows[g]));
            const int64_t f = std::min(group_rows[g], floor);
            floors = floors > INT64_MAX - f ? INT64_MAX : floors + f;
            rows = rows > INT64_MAX - group_rows[g] ? INT64_MAX : rows + group_rows[g];
        }
        if (floors >= sample_size || rows <= sample_size) {
            for (int64_t g = 0; g < groups; ++g)
                m_out[g] = rows <= sample_size ? group_rows[g] : std::min(group_rows[g], floor);
            return Status::Ok();
        }
        // lambda: groups sorted by t_g = f_g / rows_g, where their allocation
        // leaves the floor; total(lambda) = sum_{t_g > lambda} f_g + lambda
        // sum_{t_g <= lambda} rows_g (lambda < 1: no group reaches its rows).
        std::vector<int64_t> order(static_cast<size_t>(groups));
        std::iota(order.begin(), order.end(), int64_t{0});
        auto t_of = [&](int64_t g) {
            return static_cast<double>(std::min(group_rows[g], floor)) / static_cast<double>(group_rows[g]);
        };
        std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t_of(a) < t_of(b); });
        const double target = static_cast<double>(sample_size);
        double fixed = static_cast<double>(floors), prop = 0, lambda = 0;
        for (int64_t i = 0; i < groups; ++i) {
            const int64_t g = order[i];
            // groups order[0..i-1] proportional: lambda solving fixed + lambda prop = target
            // is valid when it does not pass the next breakpoint t_g.
            if (prop > 0) {
                lambda = (target - fixed) / prop;
                if (lambda <= t_of(g)) break;
            }
            fixed -= static_cast<double>(std::min(group_rows[g], floor));
            prop += static_cast<double>(group_rows[g]);
            lambda = (target - fixed) / prop;
        }
        lambda = std::min(lambda, 1.0);
        std::vector<double> frac(static_cast<size_t>(groups));
        int64_t total = 0;
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t f = std::min(group_rows[g], floor);
            const double x = std::max(static_cast<double>(f), lambda * static_cast<double>(group_rows[g]));
            int64_t v = static_cast<int64_t>(std::floor(x));
            v = std::max(f, std::min(group_rows[g], v));
            frac[g] = x - static_cast<double>(v);
            m_out[g] = v;
            total += v;
        }
        // Largest remainders first (ties: the lower group), within [f_g, rows_g].
        std::vector<int64_t> by_frac(order);
        std::sort(by_frac.begin(), by_frac.end(),
                  [&](int64_t a, int64_t b) { return frac[a] != frac[b] ? frac[a] > frac[b] : a < b; });
        for (int pass = 0; pass < 2 && total != sample_size; ++pass)
            for (int64_t i = 0; i < groups && total != sample_size; ++i) {
                if (total < sample_size) {
                    const int64_t g = by_frac[i];
                    if (m_out[g] < group_rows[g]) ++m_out[g], ++total;
                } else {
                    const int64_t g = by_frac[groups - 1 - i];
                    if (m_out[g] > std::min(group_rows[g], floor)) --m_out[g], --total;
                }
            }
        return Status::Ok();
    });
}

// ---- building ----------------------------------------------------------------------------

bool find_step(const double* values, size_t n, double min_step, double& step) {
    return step_of_distinct(distinct_sorted(values, n), min_step, step);
}

Status finalize(Synopsis& s, Bandwidth method, Smoothing smoothing, const ExecContext& outer) {
    // The KDE engine runs once or twice per column and would overwrite the
    // caller's statistics each time: it reports into a scratch record, and the
    // build reports itself (N rows, total time, the bandwidths' device).
    RunStats kde_stats;
    ExecContext ctx = outer;
    ctx.stats = &kde_stats;
    Stopwatch sw;
    double ms_transfer = 0;
    auto account = [&]() {
        ms_transfer += kde_stats.ms_transfer;
        kde_stats.ms_transfer = kde_stats.ms_compute = 0;
    };
    Status result = guarded([&]() -> Status {
        if (s.d < 1 || s.d > kMaxDim)
            return Status::Error(StatusCode::InvalidArgument, "d must be between 1 and %d, not %d", kMaxDim, s.d);
        if (s.m < 1 || s.sample == nullptr) return Status::Error(StatusCode::InvalidArgument, "empty sample");
        const size_t m = static_cast<size_t>(s.m);
        const int d = s.d;
        s.method = method;
        s.smoothing = smoothing;
        s.joint_cv[0] = s.joint_cv[1] = -1;  // the guard fills them (Auto)
        // columns: every row (NaN = NULL), for the guard; values: each
        // column's non-NULL values, for the statistics and bandwidths.
        std::vector<std::vector<double>> columns(d, std::vector<double>(m));
        for (size_t i = 0; i < m; ++i)
            for (int j = 0; j < d; ++j) {
                double v = s.sample[i * d + j];
                if (std::isinf(v))
                    return Status::Error(StatusCode::DataException, "sample column %d holds an infinite value", j + 1);
                columns[j][i] = v;
            }
        std::vector<std::vector<double>> values(d);
        std::vector<char> constant(d), exact(d);
        std::vector<size_t> n_distinct(d);
        std::vector<std::vector<double>> distinct(d);
        // The columns are independent (statistics, distinct values, then
        // bandwidths): one thread each, up to cpu_threads; the first failing
        // column (in column order) is the error.
        ExecContext col_ctx = ctx;
        col_ctx.cpu_threads = std::max(1, ctx.cpu_threads / d);
        ExecContext per_column = ctx;
        per_column.cpu_threads = std::min(std::max(1, ctx.cpu_threads), d);
        std::vector<Status> column_status(static_cast<size_t>(d));
        auto first_failure = [&]() -> Status {
            for (const Status& st : column_status)
                if (!st.ok()) return st;
            return Status::Ok();
        };
        APPROX_TRY(parallel_for(per_column, static_cast<size_t>(d), [&](size_t jj, size_t) -> Status {
            const int j = static_cast<int>(jj);
            column_status[j] = [&]() -> Status {
                Column& c = s.cols[j];
                const bool categorical = c.categorical;
                c = Column();
                c.categorical = categorical;
                std::vector<double>& x = values[j];
                for (double v : columns[j])
                    if (!std::isnan(v)) x.push_back(v);
                c.null_count = static_cast<int64_t>(m - x.size());
                if (x.empty()) {  // every value NULL: exact, statistics 0
                    constant[j] = exact[j] = true;
                    c.density_h = c.box_h = 1e-9;
                    return Status::Ok();
                }
                c.min = c.max = x[0];
                for (double v : x) {
                    c.min = std::min(c.min, v);
                    c.max = std::max(c.max, v);
                }
                const stats::ColumnMoments mom = stats::column_moments(x.data(), x.size());
                c.mean = mom.mean_units();
                c.sd = mom.sd_units();
                if (!std::isfinite(c.sd))
                    return Status::Error(StatusCode::OutOfRange,
                                         "sample column %d: the standard deviation overflows double precision "
                                         "(values from %.17g to %.17g)",
                                         j + 1, c.min, c.max);
                distinct[j] = distinct_sorted(x.data(), x.size());
                n_distinct[j] = distinct[j].size();
                constant[j] = n_distinct[j] < 2;
                exact[j] = constant[j] || categorical;
                if (constant[j]) {
                    c.density_h = c.box_h = 1e-9 * std::max(1.0, std::fabs(c.min));
                } else if (categorical) {
                    c.density_h = c.box_h = kCategoricalBandwidth;  // never smoothed: a formality
                }
                return Status::Ok();
            }();
            return Status::Ok();
        }));
        APPROX_TRY(first_failure());
        if (ctx.cancelled()) return cancelled_status();
        // Bandwidths of the non-constant columns.
        if (method == Bandwidth::Lscv) {
            std::vector<int> cols;
            for (int j = 0; j < d; ++j)
                if (!exact[j]) cols.push_back(j);
            if (!cols.empty()) {
                const int dd = static_cast<int>(cols.size());
                // LSCV is joint: the rows with every one of these columns non-NULL.
                std::vector<double> x;
                x.reserve(m * dd);
                size_t complete = 0;
                for (size_t i = 0; i < m; ++i) {
                    bool whole = true;
                    for (int t = 0; t < dd; ++t) whole = whole && !std::isnan(columns[cols[t]][i]);
                    if (!whole) continue;
                    for (int t = 0; t < dd; ++t) x.push_back(columns[cols[t]][i]);
                    ++complete;
                }
                if (complete < 2)
                    return Status::Error(StatusCode::DataException,
                                         "lscv needs at least two sample rows without NULLs in the smoothed columns");
                // LSCV's pair sums are O(rows^2) per grid point: past
                // kLscvRows it runs on a systematic subsample and h is
                // rescaled by its rate, (rows / complete)^(1 / (dd + 4)).
                double rescale = 1;
                if (complete > kLscvRows) {
                    std::vector<double> sub(kLscvRows * dd);
                    for (size_t i = 0; i < kLscvRows; ++i) {
                        const size_t row = (i * complete) / kLscvRows;
                        std::copy(&x[row * dd], &x[row * dd] + dd, &sub[i * dd]);
                    }
                    x.swap(sub);
                    rescale = std::pow(static_cast<double>(kLscvRows) / static_cast<double>(complete), 1.0 / (dd + 4));
                    complete = kLscvRows;
                }
                kde::LscvResult r;
                APPROX_TRY(kde::lscv(x.data(), complete, dd, kLscvGrid, kde::Covariance::Diagonal, ctx, r));
                account();
                for (int j : cols) s.cols[j].density_h = s.cols[j].box_h = r.h * rescale * s.cols[j].sd;
            }
        } else {
            // Binned plug-ins and rules of thumb: CPU work, column by column
            // in parallel, each reporting into a record of its own.
            std::vector<RunStats> col_stats(static_cast<size_t>(d));
            APPROX_TRY(parallel_for(per_column, static_cast<size_t>(d), [&](size_t j, size_t) -> Status {
                column_status[j] = Status::Ok();
                if (exact[j]) return Status::Ok();
                ExecContext one = col_ctx;
                one.stats = &col_stats[j];
                column_status[j] = kde_column_bandwidths(values[j].data(), values[j].size(), method, one,
                                                         s.cols[j].density_h, s.cols[j].box_h);
                return Status::Ok();
            }));
            APPROX_TRY(first_failure());
            for (const RunStats& st : col_stats) {
                kde_stats.ms_transfer += st.ms_transfer;
                if (st.device == Device::Gpu) kde_stats.device = Device::Gpu;
                kde_stats.cpu_threads = std::max(kde_stats.cpu_threads, st.cpu_threads);
                if (kde_stats.notice[0] == '\0' && st.notice[0] != '\0')
                    std::snprintf(kde_stats.notice, sizeof kde_stats.notice, "%s", st.notice);
            }
            account();
        }
        for (int j = 0; j < d; ++j) {
            Column& c = s.cols[j];
            if (!valid_positive(c.density_h) || !valid_positive(c.box_h))
                return Status::Error(StatusCode::DataException, "column %d: the %s bandwidth is not a positive number",
                                     j + 1, bandwidth_name(method));
            double step = 0;
            bool heaped = !exact[j] && step_of_distinct(distinct[j], c.box_h / 2, step);
            if (heaped)
                c.step = step;
            else if (!constant[j])
                step_of_distinct(distinct[j], 0, c.step);  // reported only
            // Auto starts exact; the guard below decides.
            c.mode = smoothing == Smoothing::Always && !exact[j] ? Mode::Kde : Mode::Exact;
            c.discrete = c.mode == Mode::Exact;
        }
        if (smoothing == Smoothing::Auto) {
            std::vector<const double*> cols(d);
            std::unique_ptr<bool[]> is_constant(new bool[d]);
            for (int j = 0; j < d; ++j) {
                cols[j] = columns[j].data();
                is_constant[j] = exact[j];  // constant, all-NULL and categorical columns stay exact
            }
            APPROX_TRY(choose_modes(s, cols.data(), is_constant.get(), kGuardSeed, ctx));
        }
        return Status::Ok();
    });
    if (outer.stats) {
        outer.stats->rows = s.n_rows;
        outer.stats->device = kde_stats.device;
        outer.stats->cpu_threads = kde_stats.cpu_threads;
        outer.stats->ms_transfer = ms_transfer;
        outer.stats->ms_compute = sw.ms() - ms_transfer;
        if (kde_stats.notice[0] != '\0')
            std::snprintf(outer.stats->notice, sizeof outer.stats->notice, "%s", kde_stats.notice);
    }
    return result;
}

// 0.1.0's column mean and sd (naive sum, then two-pass), kept only to accept
// synopses that version stored; builds use stats::column_moments.
static void legacy_mean_sd(const double* x, size_t m, size_t stride, double& mean, double& sd) {
    double sum = 0;
    for (size_t i = 0; i < m; ++i) sum += x[i * stride];
    mean = sum / static_cast<double>(m);
    double ss = 0;
    for (size_t i = 0; i < m; ++i) ss += (x[i * stride] - mean) * (x[i * stride] - mean);
    sd = m > 1 ? std::sqrt(ss / static_cast<double>(m - 1)) : 0;
}

static Status validate_unguarded(const Synopsis& s) {
    auto bad = [](const char* what) { return Status::Error(StatusCode::InvalidArgument, "%s", what); };
    if (s.d < 1 || s.d > kMaxDim) return bad("d must be between 1 and 32");
    if (s.n_rows < 1 || s.m < 1 || s.sample_size < 1 || s.skipped < 0)
        return bad("N, m and sample_size must be positive");
    if (s.n_strata < 0) return bad("the number of strata must not be negative");
    if (s.n_strata == 0) {
        if (s.m != std::min(s.sample_size, s.n_rows)) return bad("m must equal min(sample_size, N)");
    } else {
        // A congressional sample may hold more than sample_size rows (every
        // stratum keeps its floor), never more than N.
        if (s.strata == nullptr) return bad("missing strata");
        if (s.m > s.n_rows) return bad("m must not exceed N");
        int64_t next = 0, rows = 0;
        for (int g = 0; g < s.n_strata; ++g) {
            const Stratum& st = s.strata[g];
            if (st.begin != next) return bad("strata must be contiguous and in order from sample row 0");
            if (st.n_rows < 1 || st.end - st.begin < 1 || st.end - st.begin > st.n_rows)
                return bad("every stratum needs 1 <= its sample rows <= its rows");
            if (st.end > s.m) return bad("a stratum ends past the sample");
            if (rows > s.n_rows - st.n_rows) return bad("the strata's rows must add up to N");
            rows += st.n_rows;
            next = st.end;
        }
        if (next != s.m) return bad("the last stratum must end at m");
        if (rows != s.n_rows) return bad("the strata's rows must add up to N");
    }
    if (static_cast<uint8_t>(s.method) > 3) return bad("unknown bandwidth method");
    if (static_cast<uint8_t>(s.smoothing) > 2) return bad("unknown smoothing");
    if (s.sample == nullptr) return bad("missing sample");
    for (int j = 0; j < s.d; ++j) {
        const Column& c = s.cols[j];
        if (!std::isfinite(c.mean) || !std::isfinite(c.sd) || !std::isfinite(c.min) || !std::isfinite(c.max) ||
            !std::isfinite(c.step))
            return bad("column statistics must be finite");
        if (c.sd < 0 || c.min > c.max || c.step < 0) return bad("inconsistent column statistics");
        if (!valid_positive(c.density_h) || !valid_positive(c.box_h))
            return bad("bandwidths must be positive and finite");
        if (static_cast<uint8_t>(c.mode) >= kModes) return bad("unknown column mode");
        if (c.discrete != (c.mode == Mode::Exact)) return bad("discrete flag and mode disagree");
        if (c.categorical && c.mode != Mode::Exact) return bad("a categorical column must be exact");
        if (c.null_count < 0 || c.null_count > s.m) return bad("bad NULL count");
        if (!std::isfinite(c.shift) || !std::isfinite(c.log_h) || !std::isfinite(c.interval_scale) ||
            !(c.interval_scale >= 1) || c.interval_scale > 1e6 || !std::isfinite(c.cv_coverage) ||
            !(c.cv_coverage == -1 || (c.cv_coverage >= 0 && c.cv_coverage <= 1)))
            return bad("bad column mode parameters");
        for (double e : c.cv_error)
            if (!std::isfinite(e) || !(e == -1 || e >= 0)) return bad("bad cross-validated errors");
        if (c.mode == Mode::LogKde) {
            if (!valid_positive(c.log_h) || !(c.min + c.shift > 0) || !std::isfinite(std::log(c.min + c.shift)))
                return bad("a log-scale column needs min + shift > 0 and a positive bandwidth");
        } else if (c.log_h != 0 || c.shift != 0) {
            return bad("shift and log bandwidth belong to log-scale columns only");
        }
    }
    for (double e : s.joint_cv)
        if (!std::isfinite(e) || !(e == -1 || e >= 0)) return bad("bad cross-validated errors");
    for (int64_t i = 0; i < s.m; ++i)
        for (int j = 0; j < s.d; ++j)
            if (std::isinf(s.sample[i * s.d + j])) return bad("sample values must be finite or NULL");
    // The statistics must be the sample's (its non-NULL values): min and max
    // exactly, mean and sd to rounding, as finalize() computes them
    // (stats::column_moments). A synopsis stored by 0.1.0 holds the naive
    // two-pass mean and sd, which on data far from 0 (1e16 + small values)
    // differ from the stable ones by far more than rounding: those are
    // accepted too, compared the same way.
    std::vector<double> x;
    x.reserve(static_cast<size_t>(s.m));
    for (int j = 0; j < s.d; ++j) {
        const Column& c = s.cols[j];
        x.clear();
        for (int64_t i = 0; i < s.m; ++i) {
            double v = s.sample[i * s.d + j];
            if (!std::isnan(v)) x.push_back(v);
        }
        if (static_cast<int64_t>(s.m - x.size()) != c.null_count) return bad("NULL count must be the sample's");
        if (x.empty()) continue;  // every value NULL: no statistics to compare
        const size_t m = x.size();
        double lo = x[0], hi = lo;
        for (double v : x) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
        if (lo != c.min || hi != c.max) return bad("column min and max must be the sample's");
        const double scale = std::max({1.0, std::fabs(lo), std::fabs(hi)});
        const double range = 0.5 * hi - 0.5 * lo;  // half the range: finite for any finite lo, hi
        auto matches = [&](double mean, double sd) {
            return std::fabs(mean - c.mean) <= 1e-9 * scale &&
                   std::fabs(sd - c.sd) <= 1e-9 * std::max(sd, 1e-300) + 2e-12 * range;
        };
        const stats::ColumnMoments mom = stats::column_moments(x.data(), m);
        if (matches(mom.mean_units(), mom.sd_units())) continue;
        double legacy_mean = 0, legacy_sd = 0;
        legacy_mean_sd(x.data(), m, 1, legacy_mean, legacy_sd);
        if (!matches(legacy_mean, legacy_sd)) return bad("column mean and sd must be the sample's");
    }
    return Status::Ok();
}

Status validate(const Synopsis& s) {
    return guarded([&] { return validate_unguarded(s); });
}

// ---- box evaluation ---------------------------------------------------------------------------

math::ColumnParams column_params(const Synopsis& s) {
    math::ColumnParams p;
    for (int j = 0; j < kMaxDim; ++j) {
        bool used = j < s.d;
        const Column* c = used ? &s.cols[j] : nullptr;
        bool log_scale = used && c->mode == Mode::LogKde;
        p.h[j] = !used ? 1.0 : log_scale ? c->log_h : c->box_h;
        p.shift[j] = log_scale ? c->shift : 0.0;
        p.lower[j] = !used ? 0.0 : log_scale ? std::log(c->min + c->shift) : c->min;
        p.upper[j] = !used ? 0.0 : log_scale ? std::log(c->max + c->shift) : c->max;
        p.discrete[j] = used && c->mode == Mode::Exact ? 1 : 0;
        p.transform[j] = log_scale ? 1 : 0;
    }
    return p;
}

double box_interval_scale(const Synopsis& s, const double* lo, const double* hi) {
    double extra = 0;
    for (int j = 0; j < s.d; ++j) {
        const Column& c = s.cols[j];
        if (c.mode == Mode::Exact || c.interval_scale <= 1) continue;
        if (lo[j] <= c.min && hi[j] >= c.max) continue;  // unconstrained inside the sample's range
        extra += c.interval_scale * c.interval_scale - 1;
    }
    return std::sqrt(1 + extra);
}

bool box_empty(const Synopsis& s, const BoxBatch& boxes, int64_t b) {
    for (int j = 0; j < s.d; ++j)
        if (boxes.lo[b * s.d + j] > boxes.hi[b * s.d + j]) return true;
    return false;
}

namespace {

static_assert(math::kMaxColumns == kMaxDim, "one column limit");
static_assert(static_cast<unsigned char>(NullPolicy::Any) == math::kNullAny &&
                  static_cast<unsigned char>(NullPolicy::NotNull) == math::kNullNotNull &&
                  static_cast<unsigned char>(NullPolicy::IsNull) == math::kNullIsNull,
              "one encoding of the NULL policies");
using math::ColumnParams;

// Shifted sums of rows [begin, end) for one box; the shift (c0, s0) is the
// g of the piece's first row.
void accumulate(const Synopsis& s, const ColumnParams& p, const double* lo, const double* hi, const uint8_t* nulls,
                int k, int64_t begin, int64_t end, double c0, double s0, BoxSums& acc) {
    for (int64_t i = begin; i < end; ++i) {
        double c, g;
        math::row_terms(s.sample + i * s.d, lo, hi, p, s.d, k, nulls, c, g);
        double dc = c - c0, ds = g - s0;
        acc.sc += dc;
        acc.ss += ds;
        acc.scc += dc * dc;
        acc.sss += ds * ds;
        acc.scs += dc * ds;
        acc.support += c > 0;
    }
}

const uint8_t* box_nulls(const BoxBatch& boxes, int64_t b, int d) {
    return boxes.nulls ? boxes.nulls + b * d : nullptr;
}

// The population and sample rows of a piece.
double piece_population(const Synopsis& s, const Piece& p) {
    return p.stratum >= 0 && s.n_strata > 0 ? static_cast<double>(s.strata[p.stratum].n_rows)
                                            : static_cast<double>(s.n_rows);
}

// N times the mean of m shifted values (shift v0, shifted sum sv). A wholly
// sampled piece (m >= N) adds its values up instead, so that an exact answer
// is exact (31, not 31.000000000000004).
double piece_total(double N, double m, double v0, double sv) {
    return m >= N ? (m * v0 + sv) * (N / m) : N * (v0 + sv / m);
}

// One stratum's (or an unstratified sample's) estimate from its sums: N rows,
// m sample rows.
BoxEstimate estimate_one(double N, double m, Aggregate agg, const BoxSums& t) {
    BoxEstimate e;
    const double fpc = m >= N ? 0.0 : (N - m) / (N - 1);
    const double mean_c = t.c0 + t.sc / m, mean_s = t.s0 + t.ss / m;
    // Centred sums of squares from the shifted sums.
    const double scc = std::max(0.0, t.scc - t.sc * t.sc / m);
    const double sss = std::max(0.0, t.sss - t.ss * t.ss / m);
    const double scs = t.scs - t.sc * t.ss / m;
    const double dof = m > 1 ? m - 1 : 1;
    switch (agg) {
        case Aggregate::Count:
            e.estimate = piece_total(N, m, t.c0, t.sc);
            e.se = N * std::sqrt(fpc * scc / dof / m);
            break;
        case Aggregate::Sum:
            e.estimate = piece_total(N, m, t.s0, t.ss);
            e.se = N * std::sqrt(fpc * sss / dof / m);
            break;
        case Aggregate::Avg: {
            if (!(mean_c > 0)) {
                e.estimate = e.se = std::numeric_limits<double>::quiet_NaN();
                break;
            }
            const double r = mean_s / mean_c;
            // sum (s_i - R c_i)^2 = Sss - 2 R Scs + R^2 Scc (centred; mean residual is 0).
            const double resid = std::max(0.0, sss - 2 * r * scs + r * r * scc);
            e.estimate = r;
            e.se = std::sqrt(fpc * resid / dof / m) / mean_c;
            break;
        }
    }
    e.support = t.support;
    e.n_rows = N;
    return e;
}

}  // namespace

Status piece_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n, const ExecContext& exec,
                      BoxSums* sums) {
    return guarded([&]() -> Status {
        // Small batches (one box of a 10^4 sample) run on the calling thread:
        // starting threads would cost more than the work.
        ExecContext ctx = exec;
        int64_t total = 0, longest = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t rows = pieces[i].end - pieces[i].begin;
            total += rows;
            longest = std::max(longest, rows);
        }
        if (total <= kCpuSingleThreadWork) ctx.cpu_threads = 1;
        const ColumnParams p = column_params(s);
        const int k = boxes.agg == Aggregate::Count ? -1 : boxes.column;
        const int d = s.d;
        std::vector<unsigned char> empty(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            sums[i] = BoxSums();
            empty[i] = box_empty(s, boxes, pieces[i].box) || pieces[i].end <= pieces[i].begin ? 1 : 0;
        }
        auto shift = [&](const Piece& pc, BoxSums& out) {
            const int64_t b = pc.box;
            math::row_terms(s.sample + pc.begin * d, boxes.lo + b * d, boxes.hi + b * d, p, d, k,
                            box_nulls(boxes, b, d), out.c0, out.s0);
        };
        if (n >= 4 * ctx.cpu_threads || longest <= kCpuRowsPerTask) {
            // Many pieces: one task per piece.
            return parallel_for(ctx, static_cast<size_t>(n), [&](size_t i, size_t) {
                if (empty[i]) return Status::Ok();
                const Piece& pc = pieces[i];
                BoxSums& out = sums[i];
                shift(pc, out);
                accumulate(s, p, boxes.lo + pc.box * d, boxes.hi + pc.box * d, box_nulls(boxes, pc.box, d), k, pc.begin,
                           pc.end, out.c0, out.s0, out);
                return Status::Ok();
            });
        }
        // Few pieces: tasks over (piece, chunk of its rows), summed in chunk order.
        std::vector<int64_t> first(static_cast<size_t>(n) + 1, 0);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t rows = pieces[i].end - pieces[i].begin;
            first[i + 1] = first[i] + (rows + kCpuRowsPerTask - 1) / kCpuRowsPerTask;
            if (!empty[i]) shift(pieces[i], sums[i]);
        }
        const int64_t tasks = first[n];
        std::vector<BoxSums> partial(static_cast<size_t>(tasks));
        std::vector<int64_t> owner(static_cast<size_t>(tasks));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t t = first[i]; t < first[i + 1]; ++t) owner[t] = i;
        APPROX_TRY(parallel_for(ctx, static_cast<size_t>(tasks), [&](size_t task, size_t) {
            const int64_t i = owner[task];
            if (empty[i]) return Status::Ok();
            const Piece& pc = pieces[i];
            const int64_t begin = pc.begin + (static_cast<int64_t>(task) - first[i]) * kCpuRowsPerTask;
            const int64_t end = std::min(pc.end, begin + kCpuRowsPerTask);
            accumulate(s, p, boxes.lo + pc.box * d, boxes.hi + pc.box * d, box_nulls(boxes, pc.box, d), k, begin, end,
                       sums[i].c0, sums[i].s0, partial[task]);
            return Status::Ok();
        }));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t t = first[i]; t < first[i + 1]; ++t) {
                const BoxSums& u = partial[t];
                sums[i].sc += u.sc;
                sums[i].ss += u.ss;
                sums[i].scc += u.scc;
                sums[i].sss += u.sss;
                sums[i].scs += u.scs;
                sums[i].support += u.support;
            }
        return Status::Ok();
    });
}

namespace {

// One piece per box over every sample row.
std::vector<Piece> whole_pieces(const Synopsis& s, const BoxBatch& boxes) {
    std::vector<Piece> pieces(static_cast<size_t>(boxes.q));
    for (int64_t b = 0; b < boxes.q; ++b) {
        pieces[b].box = b;
        pieces[b].begin = 0;
        pieces[b].end = s.m;
    }
    return pieces;
}

}  // namespace

Status box_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums) {
    return guarded([&]() -> Status {
        const std::vector<Piece> pieces = whole_pieces(s, boxes);
        return piece_sums_cpu(s, boxes, pieces.data(), boxes.q, ctx, sums);
    });
}

#ifdef APPROX_WITH_CUDA
Status box_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums) {
    return guarded([&]() -> Status {
        const std::vector<Piece> pieces = whole_pieces(s, boxes);
        return piece_sums_gpu(s, boxes, pieces.data(), boxes.q, ctx, sums);
    });
}
#endif

BoxEstimate estimate_from_sums(const Synopsis& s, Aggregate agg, const BoxSums& t) {
    return estimate_one(static_cast<double>(s.n_rows), static_cast<double>(s.m), agg, t);
}

BoxEstimate estimate_from_pieces(const Synopsis& s, Aggregate agg, const Piece* pieces, const BoxSums* sums,
                                 int64_t n) {
    if (n == 1)  // one stratum, or an unstratified sample: the plain formulas
        return estimate_one(piece_population(s, pieces[0]), static_cast<double>(pieces[0].end - pieces[0].begin), agg,
                            sums[0]);
    // Stratified: totals and their variances summed over the strata.
    double C = 0, S = 0, var_c = 0, var_s = 0, N_all = 0;
    int64_t support = 0;
    for (int64_t i = 0; i < n; ++i) {
        const BoxSums& t = sums[i];
        const double N = piece_population(s, pieces[i]), m = static_cast<double>(pieces[i].end - pieces[i].begin);
        N_all += N;
        support += t.support;
        if (!(m > 0)) continue;
        const double fpc = m >= N ? 0.0 : (N - m) / (N - 1);
        const double w = N * N * fpc / (m > 1 ? m - 1 : 1) / m;
        C += piece_total(N, m, t.c0, t.sc);
        S += piece_total(N, m, t.s0, t.ss);
        var_c += w * std::max(0.0, t.scc - t.sc * t.sc / m);
        var_s += w * std::max(0.0, t.sss - t.ss * t.ss / m);
    }
    BoxEstimate e;
    e.support = support;
    e.n_rows = N_all;
    switch (agg) {
        case Aggregate::Count:
            e.estimate = C;
            e.se = std::sqrt(var_c);
            break;
        case Aggregate::Sum:
            e.estimate = S;
            e.se = std::sqrt(var_s);
            break;
        case Aggregate::Avg: {
            if (!(C > 0)) {
                e.estimate = e.se = std::numeric_limits<double>::quiet_NaN();
                break;
            }
            // Var(S) - 2 R Cov(S, C) + R^2 Var(C), summed per stratum as the
            // centred sum of (s_i - R c_i)^2 (non-negative in each).
            const double r = S / C;
            double resid = 0;
            for (int64_t i = 0; i < n; ++i) {
                const BoxSums& t = sums[i];
                const double N = piece_population(s, pieces[i]),
                             m = static_cast<double>(pieces[i].end - pieces[i].begin);
                if (!(m > 0)) continue;
                const double fpc = m >= N ? 0.0 : (N - m) / (N - 1);
                const double w = N * N * fpc / (m > 1 ? m - 1 : 1) / m;
                const double scc = std::max(0.0, t.scc - t.sc * t.sc / m);
                const double sss = std::max(0.0, t.sss - t.ss * t.ss / m);
                const double scs = t.scs - t.sc * t.ss / m;
                resid += w * std::max(0.0, sss - 2 * r * scs + r * r * scc);
            }
            e.estimate = r;
            e.se = std::sqrt(resid) / C;
            break;
        }
    }
    return e;
}

void widen_for_unseen(const Synopsis& s, Aggregate agg, int column, const Piece* pieces, const BoxSums* sums, int64_t n,
                      BoxEstimate& e, bool every_row) {
    constexpr double z2 = 1.96 * 1.96;
    const Column* col = agg == Aggregate::Count ? nullptr : &s.cols[column];
    const double xmax = col ? std::max(std::fabs(col->min), std::fabs(col->max)) : 0;
    double C = 0, S = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double m = static_cast<double>(pieces[i].end - pieces[i].begin);
        const double N = piece_population(s, pieces[i]);
        if (!(m > 0)) continue;
        C += N * (sums[i].c0 + sums[i].sc / m);
        S += N * (sums[i].s0 + sums[i].ss / m);
    }
    double var_c = 0, count_extra = 0, sum_extra = 0, floor_total = 0;
    for (int64_t i = 0; i < n; ++i) {
        const BoxSums& t = sums[i];
        const double m = static_cast<double>(pieces[i].end - pieces[i].begin);
        const double N = piece_population(s, pieces[i]);
        if (!(m > 0) || m >= N) continue;  // wholly sampled: nothing unseen
        const double fpc = (N - m) / (N - 1);
        const double mean_c = t.c0 + t.sc / m, mean_s = t.s0 + t.ss / m;
        const double k = std::min(m, std::max(0.0, m * mean_c)), q = k / m;
        const double p = (k + z2) / (m + 2 * z2);
        const double w = N * N * fpc / m;
        var_c += w / (m > 1 ? m - 1 : 1) * std::max(0.0, t.scc - t.sc * t.sc / m);
        if (every_row) continue;  // the box holds every row: nothing to miss
        const double extra = w * std::max(0.0, p * (1 - p) - q * (1 - q));
        floor_total += w * p * (1 - p);
        count_extra += extra;
        if (agg == Aggregate::Sum) {
            const double xbar = mean_c > 0 ? mean_s / mean_c : C > 0 ? S / C : xmax;
            sum_extra += extra * xbar * xbar;
        }
    }
    e.count = C;
    e.count_se = std::sqrt(var_c + count_extra);
    if (col) {
        e.has_range = true;
        e.value_min = col->min;
        e.value_max = col->max;
    }
    if (!(floor_total > 0) || std::isnan(e.se)) return;  // exact (or no AVG)
    switch (agg) {
        case Aggregate::Count:
            e.se = std::sqrt(e.se * e.se + count_extra);
            break;
        // The floors below replace a standard error that is negligible next
        // to the unseen rows' allowance (not only an exact 0: kernel tails
        // leave 1e-8 on one engine where the other sums to 0, and the two
        // engines must give one answer). An AVG's floor is capped at the
        // column's range: its interval is clipped to [min, max] anyway, and a
        // box whose weights are all but 0 (C ~ 1e-100) would divide by it.
        case Aggregate::Sum: {
            e.se = std::sqrt(e.se * e.se + sum_extra);
            const double floor_se = xmax * std::sqrt(floor_total);
            if (e.se < 1e-6 * floor_se) e.se = floor_se;
            break;
        }
        case Aggregate::Avg: {
            const double range = col->max - col->min;
            const double floor_se =
                C > 0 ? std::min(range, 0.5 * range * std::sqrt(floor_total) / C) : range;
            if (e.se < 1e-6 * floor_se) e.se = floor_se;
            break;
        }
    }
}

Status evaluate(const Synopsis& s, const BoxBatch& boxes, const ExecContext& caller, BoxEstimate* out) {
    ExecContext ctx = caller;
    Status st;
    // An empty batch, or one of impossible sizes (the checks below), is answered here.
    if (boxes.q > 0 && boxes.q <= (int64_t(1) << 40) && s.m >= 0 && s.d >= 1 && s.d <= kMaxDim && s.n_strata >= 0 &&
        service::try_run(ctx, boxes.q * s.m, st,
                         [&](const ExecContext& c) { return evaluate_in_service(s, boxes, c, out); }))
        return st;
    if (boxes.q < 0 || (boxes.q > 0 && (boxes.lo == nullptr || boxes.hi == nullptr)))
        return Status::Error(StatusCode::InvalidArgument, "bad box batch");
    if (boxes.agg != Aggregate::Count && (boxes.column < 0 || boxes.column >= s.d))
        return Status::Error(StatusCode::InvalidArgument, "column must be between 1 and %d, not %d", s.d,
                             boxes.column + 1);
    if (s.n_strata < 0 || (s.n_strata > 0 && s.strata == nullptr))
        return Status::Error(StatusCode::InvalidArgument, "bad strata");
    for (int g = 0; g < s.n_strata; ++g)  // cheap bounds only (validate() checks the rest at the trust boundary)
        if (s.strata[g].begin < 0 || s.strata[g].end > s.m || s.strata[g].begin > s.strata[g].end)
            return Status::Error(StatusCode::InvalidArgument, "stratum %d lies outside the sample", g);
    if (boxes.nulls)
        for (int64_t i = 0; i < boxes.q * s.d; ++i)
            if (boxes.nulls[i] > math::kNullIsNull)
                return Status::Error(StatusCode::InvalidArgument, "unknown NULL policy %d", boxes.nulls[i]);
    const int strata = std::max(1, s.n_strata);
    if (boxes.stratum)
        for (int64_t b = 0; b < boxes.q; ++b)
            if (boxes.stratum[b] < -1 || boxes.stratum[b] >= strata)
                return Status::Error(StatusCode::InvalidArgument, "box %lld: stratum %d is not between -1 and %d",
                                     static_cast<long long>(b), boxes.stratum[b], strata - 1);
    if (boxes.q == 0) return Status::Ok();
    return guarded([&]() -> Status {
        // Boxes to pieces: one per stratum a box is evaluated over (strata
        // without sample rows have none).
        std::vector<Piece> pieces;
        std::vector<int64_t> first(static_cast<size_t>(boxes.q) + 1, 0);
        pieces.reserve(static_cast<size_t>(boxes.q));
        int64_t rows = 0;
        for (int64_t b = 0; b < boxes.q; ++b) {
            const int32_t only = boxes.stratum ? boxes.stratum[b] : -1;
            auto add = [&](int64_t begin, int64_t end, int32_t g) {
                if (end <= begin) return;
                Piece pc;
                pc.box = b;
                pc.begin = begin;
                pc.end = end;
                pc.stratum = g;
                pieces.push_back(pc);
                rows += end - begin;
            };
            if (s.n_strata == 0)
                add(0, s.m, -1);
            else if (only >= 0)
                add(s.strata[only].begin, s.strata[only].end, only);
            else
                for (int32_t g = 0; g < s.n_strata; ++g) add(s.strata[g].begin, s.strata[g].end, g);
            first[b + 1] = static_cast<int64_t>(pieces.size());
        }
        const int64_t n = static_cast<int64_t>(pieces.size());
        std::vector<BoxSums> sums(static_cast<size_t>(n));
        if (ctx.stats) {
            ctx.stats->rows = rows;
            ctx.stats->add("boxes", static_cast<double>(boxes.q));
            ctx.stats->add("sample_rows", static_cast<double>(s.m));
            if (s.n_strata > 0) ctx.stats->add("pieces", static_cast<double>(n));
        }
        // Pieces of wholly sampled strata are summed with every column exact
        // (their rows are the stratum: an exact answer, never smoothed), the
        // rest with the synopsis' modes; both subsets keep the pieces' order.
        bool smoothed = false;
        for (int j = 0; j < s.d; ++j) smoothed |= s.cols[j].mode != Mode::Exact;
        std::vector<Piece> part[2];
        std::vector<int64_t> where[2];
        for (int64_t i = 0; i < n; ++i) {
            const bool whole =
                smoothed && static_cast<double>(pieces[i].end - pieces[i].begin) >= piece_population(s, pieces[i]);
            part[whole].push_back(pieces[i]);
            where[whole].push_back(i);
        }
        Synopsis exact = s;
        for (int j = 0; j < exact.d; ++j) {
            exact.cols[j].mode = Mode::Exact;
            exact.cols[j].discrete = true;
        }
        for (int w = 0; w < 2; ++w) {
            const int64_t np = static_cast<int64_t>(part[w].size());
            if (np == 0) continue;
            const Synopsis& model = w ? exact : s;
            std::vector<BoxSums> got(static_cast<size_t>(np));
            int64_t prow = 0;
            for (const Piece& pc : part[w]) prow += pc.end - pc.begin;
            APPROX_TRY(dispatch(
                ctx, prow, [&] { return piece_sums_cpu(model, boxes, part[w].data(), np, ctx, got.data()); },
                APPROX_GPU(piece_sums_gpu(model, boxes, part[w].data(), np, ctx, got.data()))));
            for (int64_t i = 0; i < np; ++i) sums[where[w][i]] = got[i];
        }
        for (int64_t b = 0; b < boxes.q; ++b) {
            const int64_t np = first[b + 1] - first[b];
            double population = 0;
            for (int64_t i = first[b]; i < first[b + 1]; ++i) population += piece_population(s, pieces[i]);
            if (box_empty(s, boxes, b) || np == 0) {
                out[b] = BoxEstimate();
                out[b].empty = box_empty(s, boxes, b);
                out[b].n_rows = population;
                if (boxes.agg == Aggregate::Avg) out[b].estimate = out[b].se = std::numeric_limits<double>::quiet_NaN();
                continue;
            }
            out[b] = estimate_from_pieces(s, boxes.agg, pieces.data() + first[b], sums.data() + first[b], np);
            // A box of no bound and no NULL test holds every row (a SUM / AVG
            // column without NULLs too): the sample cannot miss any.
            bool every_row = boxes.agg == Aggregate::Count || s.cols[boxes.column].null_count == 0;
            for (int j = 0; j < s.d && every_row; ++j)
                every_row = boxes.lo[b * s.d + j] == -INFINITY && boxes.hi[b * s.d + j] == INFINITY &&
                            (boxes.nulls == nullptr || boxes.nulls[b * s.d + j] == math::kNullAny);
            widen_for_unseen(s, boxes.agg, boxes.column, pieces.data() + first[b], sums.data() + first[b], np, out[b],
                             every_row);
            const double scale = box_interval_scale(s, boxes.lo + b * s.d, boxes.hi + b * s.d);
            out[b].se *= scale;
            out[b].count_se *= scale;
        }
        return Status::Ok();
    });
}

double normal_quantile(double p) {
    // Acklam's rational approximation (relative error 1.15e-9), refined by one
    // Halley step with erfc (about 1e-15).
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                               1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double dd[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    if (!(p > 0 && p < 1)) return std::numeric_limits<double>::quiet_NaN();
    const double plow = 0.02425;
    double x;
    if (p < plow) {
        double q = std::sqrt(-2 * std::log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((dd[0] * q + dd[1]) * q + dd[2]) * q + dd[3]) * q + 1);
    } else if (p <= 1 - plow) {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    } else {
        double q = std::sqrt(-2 * std::log1p(-p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((dd[0] * q + dd[1]) * q + dd[2]) * q + dd[3]) * q + 1);
    }
    double e = 0.5 * std::erfc(-x * math::kInvSqrt2) - p;
    double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

void interval(const Synopsis& s, Aggregate agg, const BoxEstimate& e, double confidence, double& lower, double& upper) {
    double z = normal_quantile(0.5 + confidence / 2);
    lower = e.estimate - z * e.se;
    upper = e.estimate + z * e.se;
    const double cap = e.n_rows > 0 ? e.n_rows : static_cast<double>(s.n_rows);
    if (agg == Aggregate::Count) {
        lower = std::max(0.0, lower);
        upper = std::min(cap, upper);
        return;
    }
    if (!e.has_range || std::isnan(e.estimate)) return;
    if (agg == Aggregate::Sum) {  // between count_lo / count_hi rows, each in [min, max]
        const double c_lo = std::max(0.0, e.count - z * e.count_se), c_hi = std::min(cap, e.count + z * e.count_se);
        lower = std::max(lower, e.value_min >= 0 ? c_lo * e.value_min : c_hi * e.value_min);
        upper = std::min(upper, e.value_max >= 0 ? c_hi * e.value_max : c_lo * e.value_max);
    } else {
        lower = std::max(lower, e.value_min);
        upper = std::min(upper, e.value_max);
    }
    lower = std::min(lower, e.estimate);
    upper = std::max(upper, e.estimate);
}

Status density(const Synopsis& s, const double* x, const ExecContext& ctx, double& out) {
    return guarded([&]() -> Status {
        double norm = 1;
        for (int j = 0; j < s.d; ++j) norm *= s.cols[j].density_h;
        double sum = 0;
        for (int64_t i = 0; i < s.m; ++i) {
            double prod = 1;
            for (int j = 0; j < s.d && prod > 0; ++j)
                prod *= math::normal_pdf((x[j] - s.sample[i * s.d + j]) / s.cols[j].density_h);
            sum += prod;
        }
        out = sum / (static_cast<double>(s.m) * norm);
        if (ctx.stats) ctx.stats->rows = s.m;
        return Status::Ok();
    });
}

}  // namespace approx::synopsis
