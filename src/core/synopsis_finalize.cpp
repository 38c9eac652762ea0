// KDE synopses: building (statistics, bandwidths, discrete columns) and
// validation. See synopsis.hpp.
#include "synopsis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <vector>

#include "kde.hpp"
#include "moments.hpp"
#include "parallel.hpp"
#include "synopsis_internal.hpp"

namespace approx::synopsis {

namespace {

constexpr int kLscvGrid = 150;
constexpr size_t kLscvRows = 10000;  // LSCV of a build: at most this many rows (then rescaled)
constexpr double kCategoricalBandwidth = 0.5;  // half the distance of two dictionary codes (never used to smooth)
constexpr uint64_t kGuardSeed =
    0x6a09e667f3bcc909ULL;                       // the guard's folds and boxes: a synopsis is a function of its sample

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

}  // namespace approx::synopsis
