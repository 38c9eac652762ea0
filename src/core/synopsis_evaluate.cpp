// KDE synopses: estimates from the box sums (strata, unseen values),
// evaluate(), intervals and density. See synopsis.hpp.
#include "synopsis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "service.hpp"
#include "synopsis_internal.hpp"
#include "synopsis_math.hpp"
#include "synopsis_served.hpp"

namespace approx::synopsis {

namespace {

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
