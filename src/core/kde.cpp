// KDE bandwidth selection: argument checks, the fp64 preparation shared by
// both engines, the plug-in formulas and the LSCV grid + golden-section
// search. The engines (kde_cpu.cpp, cuda/kde.cu) only compute pair sums;
// kde_served.cpp sends the calls to the GPU service.
// Formulas: DESIGN.md, "KDE definitions".
#include "kde.hpp"
#include "service.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kde_internal.hpp"
#include "moments.hpp"

namespace approx::kde {

using detail::kPi;
using detail::LscvSums;
using detail::PsiSums;

namespace {

void set_rows(const ExecContext& ctx, size_t n) {
    if (ctx.stats) ctx.stats->rows = static_cast<int64_t>(n);
}

Status check_finite(const double* x, size_t count, const char* arg) {
    for (size_t i = 0; i < count; ++i)
        if (!std::isfinite(x[i]))
            return Status::Error(StatusCode::DataException, "%s contains a non-finite value (%s)", arg,
                                 std::isnan(x[i]) ? "NaN" : "infinity");
    return Status::Ok();
}

// 1-D data: checks, then z = (x - mean) / sd in fp64, computed in the data's
// power-of-two scale (stats::column_moments) so that 1e-300- and 1e307-scale
// data give the z, and so the relative bandwidth, of the same data at scale 1.
// m: the moments (scaled units); the bandwidth in data units is
// ldexp(h_scaled, m.exp).
Status prepare_1d(const double* x, size_t n, std::vector<double>* z, stats::ColumnMoments& m) {
    if (n < 2) return Status::Error(StatusCode::InvalidArgument, "x has fewer than 2 non-NULL values");
    APPROX_TRY(check_finite(x, n, "x"));
    m = stats::column_moments(x, n);
    if (m.var == 0)
        return Status::Error(StatusCode::DataException,
                             "x is constant (standard deviation 0): its bandwidth is undefined");
    if (z) {
        const double sd = m.sd();
        z->resize(n);
        for (size_t i = 0; i < n; ++i) (*z)[i] = (m.scaled(x[i]) - m.mean) / sd;
    }
    return Status::Ok();
}

// A bandwidth h_scaled * 2^exp in data units, or an error saying it overflows.
Status unscale_bandwidth(double h_scaled, const stats::ColumnMoments& m, double& h) {
    h = std::ldexp(h_scaled, m.exp);
    if (!std::isfinite(h) || !(h > 0))
        return Status::Error(StatusCode::OutOfRange,
                             "x: the bandwidth (%.17g x 2^%d) is outside the range of double precision "
                             "(max |x| < 2^%d)",
                             h_scaled, m.exp, m.exp);
    return Status::Ok();
}

// ---- plug-in ---------------------------------------------------------------

// Bandwidth of the stage that estimates psi_r, from the previous estimate
// psi_prev (or the normal reference): g = (-2 K_r(0) / (psi_prev n))^(1/(r+3)).
Status stage_bandwidth(int r, double psi_prev, double n, double& g) {
    double base = -2.0 * detail::kernel_at_zero(r) / (psi_prev * n);
    g = std::pow(base, 1.0 / (r + 3));
    if (!(base > 0) || !std::isfinite(g) || !(g > 0))
        return Status::Error(StatusCode::DataException,
                             "x: the plug-in estimate is undefined for this data (psi has the wrong sign); "
                             "try method lscv");
    return Status::Ok();
}

// Two-stage direct plug-in on standardised data (sd = 1); returns h in z units.
Status plugin_z(PsiSums& engine, size_t n_, PluginTarget target, const ExecContext& ctx, double& hz) {
    const double n = static_cast<double>(n_);
    const double sqrt_pi = std::sqrt(kPi);
    // Density: psi8 (normal reference) -> psi6 -> psi4 -> h.
    // Distribution (Polansky & Baker): psi6 (normal reference) -> psi4 -> psi2 -> h.
    const int r1 = target == PluginTarget::Density ? 6 : 4;
    const int r2 = r1 - 2;
    const double psi_ref = target == PluginTarget::Density ? 105.0 / (32.0 * sqrt_pi) : -15.0 / (16.0 * sqrt_pi);

    double g1, g2, s1, s2;
    APPROX_TRY(stage_bandwidth(r1, psi_ref, n, g1));
    APPROX_TRY(engine.sum(r1, g1, s1));
    double psi1 = s1 / (n * n * std::pow(g1, r1 + 1));
    APPROX_TRY(stage_bandwidth(r2, psi1, n, g2));
    APPROX_TRY(engine.sum(r2, g2, s2));
    double psi2 = s2 / (n * n * std::pow(g2, r2 + 1));
    if (ctx.stats) {
        ctx.stats->add("g1", g1);
        ctx.stats->add("g2", g2);
    }
    if (target == PluginTarget::Density) {
        hz = std::pow(1.0 / (2.0 * sqrt_pi) / (psi2 * n), 0.2);  // R(K) = 1/(2 sqrt(pi))
        if (!(psi2 > 0))
            return Status::Error(StatusCode::DataException,
                                 "x: the plug-in estimate is undefined for this data (psi4 <= 0); try method lscv");
    } else {
        hz = std::pow(1.0 / (sqrt_pi * -psi2 * n), 1.0 / 3.0);
        if (!(psi2 < 0))
            return Status::Error(StatusCode::DataException,
                                 "x: the plug-in estimate is undefined for this data (psi2 >= 0)");
    }
    if (!std::isfinite(hz) || !(hz > 0))
        return Status::Error(StatusCode::DataException, "x: the plug-in bandwidth is not finite");
    return Status::Ok();
}

// Runs the plug-in on the engine that `make` creates.
template <class Factory>
Status plugin_with(Factory make, const std::vector<double>& z, PluginTarget target, const ExecContext& ctx,
                   double& hz) {
    std::unique_ptr<PsiSums> engine;
    APPROX_TRY(make(z.data(), z.size(), ctx, engine));
    return plugin_z(*engine, z.size(), target, ctx, hz);
}

Status plugin_impl(const double* x, size_t n, PluginTarget target, const ExecContext& caller, double& h) {
    set_rows(caller, n);
    ExecContext ctx = caller;
    Status st;
    if (service::try_run(ctx, static_cast<int64_t>(n), st,
                         [&](const ExecContext& c) { return detail::plugin_in_service(x, n, target, c, h); }))
        return st;
    std::vector<double> z;
    stats::ColumnMoments m;
    APPROX_TRY(prepare_1d(x, n, &z, m));
    double hz = 0;
    st = dispatch(
        ctx, static_cast<int64_t>(n), [&] { return plugin_with(detail::cpu_psi_sums, z, target, ctx, hz); },
        APPROX_GPU(plugin_with(detail::gpu_psi_sums, z, target, ctx, hz)));
    APPROX_TRY(st);
    return unscale_bandwidth(hz * m.sd(), m, h);
}

Status plugin_binned_impl(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h) {
    set_rows(ctx, n);
    if (ctx.stats) {  // O(n) on the host whatever the device setting
        ctx.stats->device = Device::Cpu;
        ctx.stats->cpu_threads = 1;
    }
    std::vector<double> z;
    stats::ColumnMoments m;
    APPROX_TRY(prepare_1d(x, n, &z, m));
    double hz = 0;
    APPROX_TRY(plugin_with(detail::binned_psi_sums, z, target, ctx, hz));
    return unscale_bandwidth(hz * m.sd(), m, h);
}

// ---- LSCV ------------------------------------------------------------------

// Whitened points and what the objective needs of S (Sigma or diag(Sigma)).
struct LscvData {
    std::vector<double> z;    // n x d, Y_ij = |z_i - z_j|^2 = (x_i - x_j)' S^-1 (x_i - x_j)
    std::vector<double> S;    // d x d, scaled: Sigma_ab = S_ab 2^(exp_a + exp_b)
    std::vector<int> exp;     // per column power-of-two scale
    double log_sqrt_det = 0;  // log sqrt(det Sigma)
};

Status prepare_lscv(const double* x, size_t n, int d, Covariance cov, LscvData& out) {
    if (d < 1) return Status::Error(StatusCode::InvalidArgument, "x must have at least 1 column, not %d", d);
    if (d > kMaxLscvDim)
        return Status::Error(StatusCode::ProgramLimit, "x has %d columns; at most %d are supported", d, kMaxLscvDim);
    if (n < 2) return Status::Error(StatusCode::InvalidArgument, "x has fewer than 2 points (rows without NULLs)");
    const size_t D = static_cast<size_t>(d);
    APPROX_TRY(check_finite(x, n * D, "x"));

    // Each column in its own power-of-two scale (stats::column_moments): S
    // holds the scaled covariance, Sigma_ab = S_ab 2^(exp_a + exp_b), so no
    // product under- or overflows at 1e-300 or 1e307.
    std::vector<stats::ColumnMoments> mom(D);
    for (size_t k = 0; k < D; ++k) mom[k] = stats::column_moments(x + k, n, D);
    out.exp.resize(D);
    for (size_t k = 0; k < D; ++k) out.exp[k] = mom[k].exp;
    out.S.assign(D * D, 0.0);
    for (size_t a = 0; a < D; ++a)
        for (size_t b = 0; b <= a; ++b) {
            double v =
                (cov == Covariance::Diagonal && a != b) ? 0.0 : stats::scaled_covariance(x, n, D, a, b, mom[a], mom[b]);
            out.S[a * D + b] = out.S[b * D + a] = v;
        }
    for (size_t a = 0; a < D; ++a)
        if (out.S[a * D + a] == 0)
            return Status::Error(StatusCode::DataException,
                                 "x: column %zu is constant, so the covariance matrix is singular", a + 1);

    // Cholesky S = L L' (for the diagonal case L = sqrt(diag S)).
    std::vector<double> L(D * D, 0.0);
    out.log_sqrt_det = 0;  // of Sigma: log sqrt(det S) + sum of exp_a log 2
    for (size_t a = 0; a < D; ++a) out.log_sqrt_det += out.exp[a] * std::log(2.0);
    for (size_t a = 0; a < D; ++a) {
        for (size_t b = 0; b <= a; ++b) {
            double s = out.S[a * D + b];
            for (size_t k = 0; k < b; ++k) s -= L[a * D + k] * L[b * D + k];
            if (a == b) {
                if (!(s > 1e-12 * out.S[a * D + a]))
                    return Status::Error(StatusCode::DataException,
                                         "x: the covariance matrix is singular (columns are collinear or there are "
                                         "too few points)");
                L[a * D + a] = std::sqrt(s);
                out.log_sqrt_det += std::log(L[a * D + a]);
            } else {
                L[a * D + b] = s / L[b * D + b];
            }
        }
    }
    // z_i = L^-1 (x_i - mean) by forward substitution.
    out.z.resize(n * D);
    for (size_t i = 0; i < n; ++i) {
        double* zi = &out.z[i * D];
        for (size_t a = 0; a < D; ++a) {
            double s = mom[a].scaled(x[i * D + a]) - mom[a].mean;
            for (size_t k = 0; k < a; ++k) s -= L[a * D + k] * zi[k];
            zi[a] = s / L[a * D + a];
        }
    }
    return Status::Ok();
}

// g(h) * sqrt(det S): the LSCV objective without the constant factor
// 1/sqrt(det S), which only scales it (and could under/overflow for d = 32).
double scaled_objective(double h, double s4, double s2, double n, int d) {
    double c2 = std::pow(4.0 * kPi, d / 2.0);
    double c1 = std::pow(2.0 * kPi, d / 2.0);
    return std::pow(h, -d) * ((2.0 / (n * n)) * s4 / c2 - (4.0 / (n * (n - 1.0))) * s2 / c1 + 1.0 / (n * c2));
}

double lscv_h0(size_t n, int d) {
    return std::pow(4.0 / (d + 2.0), 1.0 / (d + 4.0)) * std::pow(static_cast<double>(n), -1.0 / (d + 4.0));
}

struct SearchResult {
    double h = 0, g = 0, h0 = 0;
    bool at_boundary = false;
};

// Grid of `grid` equally spaced h in [h0/4, 4 h0] (one pass), then 40
// golden-section steps around the best grid point (one h per pass).
Status lscv_search(LscvSums& engine, size_t n_, int d, int grid, SearchResult& r) {
    const double n = static_cast<double>(n_);
    const double h0 = lscv_h0(n_, d);
    r.h0 = h0;
    std::vector<double> hs(static_cast<size_t>(grid)), s4(hs.size()), s2(hs.size());
    for (int k = 0; k < grid; ++k) hs[k] = h0 / 4 + (4 * h0 - h0 / 4) * k / (grid - 1);
    APPROX_TRY(engine.sums(hs.data(), grid, s4.data(), s2.data()));
    int best = 0;
    double best_g = 0;
    for (int k = 0; k < grid; ++k) {
        double g = scaled_objective(hs[k], s4[k], s2[k], n, d);
        if (k == 0 || g < best_g) {
            best_g = g;
            best = k;
        }
    }
    double best_h = hs[best];
    auto eval = [&](double h, double& g) -> Status {
        double a4, a2;
        APPROX_TRY(engine.sums(&h, 1, &a4, &a2));
        g = scaled_objective(h, a4, a2, n, d);
        return Status::Ok();
    };

    const double ratio = (std::sqrt(5.0) - 1) / 2;
    double a = hs[std::max(best - 1, 0)], b = hs[std::min(best + 1, grid - 1)];
    double x1 = b - ratio * (b - a), x2 = a + ratio * (b - a), f1, f2;
    {
        double hh[2] = {x1, x2}, a4[2], a2[2];
        APPROX_TRY(engine.sums(hh, 2, a4, a2));
        f1 = scaled_objective(x1, a4[0], a2[0], n, d);
        f2 = scaled_objective(x2, a4[1], a2[1], n, d);
    }
    for (int it = 0; it < 40; ++it) {
        if (f1 < best_g) best_h = x1, best_g = f1;
        if (f2 < best_g) best_h = x2, best_g = f2;
        if (f1 < f2) {
            b = x2, x2 = x1, f2 = f1;
            x1 = b - ratio * (b - a);
            APPROX_TRY(eval(x1, f1));
        } else {
            a = x1, x1 = x2, f1 = f2;
            x2 = a + ratio * (b - a);
            APPROX_TRY(eval(x2, f2));
        }
    }
    r.h = best_h;
    double p4, p2;
    APPROX_TRY(engine.precise_sums(best_h, p4, p2));
    r.g = scaled_objective(best_h, p4, p2, n, d);
    // The minimum sits on the search interval's end (e.g. many tied points,
    // where g falls towards h -> 0): the grid's best is an end point and the
    // refinement stayed next to it.
    double step = hs[1] - hs[0];
    r.at_boundary = (best == 0 && best_h - hs[0] <= 1e-6 * step) ||
                    (best == grid - 1 && hs[grid - 1] - best_h <= 1e-6 * step);
    return Status::Ok();
}

template <class Factory>
Status lscv_with(Factory make, const LscvData& data, size_t n, int d, int grid, const ExecContext& ctx,
                 SearchResult& r) {
    std::unique_ptr<LscvSums> engine;
    APPROX_TRY(make(data.z.data(), n, d, ctx, engine));
    return lscv_search(*engine, n, d, grid, r);
}

Status lscv_impl(const double* x, size_t n, int d, int grid, Covariance cov, const ExecContext& caller,
                 LscvResult& out) {
    set_rows(caller, n);
    ExecContext ctx = caller;
    Status st;
    if (d >= 1 && d <= kMaxLscvDim &&  // another d is an argument error, answered here
        service::try_run(ctx, static_cast<int64_t>(n), st,
                         [&](const ExecContext& c) { return detail::lscv_in_service(x, n, d, grid, cov, c, out); }))
        return st;
    LscvData data;
    APPROX_TRY(prepare_lscv(x, n, d, cov, data));
    if (grid < 2) return Status::Error(StatusCode::InvalidArgument, "grid must be at least 2, not %d", grid);
    if (ctx.stats) ctx.stats->add("grid", grid);
    SearchResult r;
    st = dispatch(
        ctx, static_cast<int64_t>(n), [&] { return lscv_with(detail::cpu_lscv_sums, data, n, d, grid, ctx, r); },
        APPROX_GPU(lscv_with(detail::gpu_lscv_sums, data, n, d, grid, ctx, r)));
    APPROX_TRY(st);
    out = LscvResult();
    out.d = d;
    out.h = r.h;
    out.objective = r.g * std::exp(-data.log_sqrt_det);
    out.h0 = r.h0;
    out.at_boundary = r.at_boundary;
    for (int a = 0; a < d; ++a)
        for (int b = 0; b < d; ++b)
            out.bandwidth_matrix[a * d + b] = std::ldexp(r.h * r.h * data.S[a * d + b], data.exp[a] + data.exp[b]);
    return Status::Ok();
}

// Type 7 quantile (R's default) of v, reordering v.
double quantile7(std::vector<double>& v, double p) {
    double pos = (static_cast<double>(v.size()) - 1) * p;
    size_t lo = static_cast<size_t>(std::floor(pos));
    std::nth_element(v.begin(), v.begin() + lo, v.end());
    double a = v[lo];
    if (lo + 1 >= v.size()) return a;
    double b = *std::min_element(v.begin() + lo + 1, v.end());
    return a + (pos - lo) * (b - a);
}

Status rule_of_thumb(const double* x, size_t n, Method method, const ExecContext& ctx, double& h) {
    set_rows(ctx, n);
    if (ctx.stats) {  // O(n) on the host whatever the device setting
        ctx.stats->device = Device::Cpu;
        ctx.stats->cpu_threads = 1;
    }
    Stopwatch sw;
    stats::ColumnMoments m;
    APPROX_TRY(prepare_1d(x, n, nullptr, m));
    // In scaled units (q3 - q1 of raw 1e308-scale data could overflow).
    const double sd = m.sd();
    double scale = sd;
    double factor = 1.06;
    if (method == Method::Silverman) {
        std::vector<double> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = m.scaled(x[i]);
        double q1 = quantile7(v, 0.25), q3 = quantile7(v, 0.75);
        double iqr_sd = (q3 - q1) / 1.34;
        // As R's bw.nrd0: a zero IQR (many ties) falls back to sd.
        if (iqr_sd > 0 && iqr_sd < sd) scale = iqr_sd;
        factor = 0.9;
    }
    APPROX_TRY(unscale_bandwidth(factor * scale * std::pow(static_cast<double>(n), -0.2), m, h));
    if (ctx.stats) ctx.stats->ms_compute = sw.ms();
    return Status::Ok();
}

}  // namespace

Status plugin_bandwidth(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h) {
    return guarded([&] { return plugin_impl(x, n, target, ctx, h); });
}

Status plugin_bandwidth_binned(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h) {
    return guarded([&] { return plugin_binned_impl(x, n, target, ctx, h); });
}

Status lscv(const double* x, size_t n, int d, int grid, Covariance cov, const ExecContext& ctx, LscvResult& out) {
    return guarded([&] { return lscv_impl(x, n, d, grid, cov, ctx, out); });
}

Status bandwidth(const double* x, size_t n, Method method, const ExecContext& ctx, double& h) {
    return guarded([&]() -> Status {
        switch (method) {
            case Method::Plugin: return plugin_impl(x, n, PluginTarget::Density, ctx, h);
            case Method::Scott:
            case Method::Silverman: return rule_of_thumb(x, n, method, ctx, h);
            case Method::Lscv: {
                stats::ColumnMoments m;
                APPROX_TRY(prepare_1d(x, n, nullptr, m));
                LscvResult r;
                APPROX_TRY(lscv_impl(x, n, 1, 150, Covariance::Full, ctx, r));
                return unscale_bandwidth(r.h * m.sd(), m, h);
            }
        }
        return Status::Error(StatusCode::InvalidArgument, "unknown bandwidth method");
    });
}

Status lscv_objective(const double* x, size_t n, int d, Covariance cov, double h, const ExecContext& ctx, double& g) {
    return guarded([&]() -> Status {
        set_rows(ctx, n);
        LscvData data;
        APPROX_TRY(prepare_lscv(x, n, d, cov, data));
        if (!(h > 0) || !std::isfinite(h))
            return Status::Error(StatusCode::InvalidArgument, "h must be positive and finite");
        std::unique_ptr<LscvSums> engine;
        APPROX_TRY(detail::cpu_lscv_sums(data.z.data(), n, d, ctx, engine));
        double s4, s2;
        APPROX_TRY(engine->sums(&h, 1, &s4, &s2));
        g = scaled_objective(h, s4, s2, static_cast<double>(n), d) * std::exp(-data.log_sqrt_det);
        return Status::Ok();
    });
}

}  // namespace approx::kde
