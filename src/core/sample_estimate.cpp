// Weighted aggregates over a stratified sample and their intervals (see
// sample_estimate.hpp for the formulas and their sources).
#include "core/sample_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/synopsis_internal.hpp"  // normal_quantile

namespace approx::sample {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Student-t -----------------------------------------------------------------

// Continued fraction of the regularised incomplete beta function (modified
// Lentz), valid for x < (a + 1) / (a + b + 2).
double beta_fraction(double x, double a, double b) {
    constexpr double tiny = 1e-300;
    const double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (std::fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 500; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        const double del = d * c;
        h *= del;
        if (std::fabs(del - 1) < 1e-15) break;
    }
    return h;
}

// I_x(a, b).
double incomplete_beta(double x, double a, double b) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double front =
        std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(x, a, b) / a;
    return 1 - front * beta_fraction(1 - x, b, a) / b;
}

// P(T > t) for t >= 0.
double t_upper_tail(double t, double df) { return 0.5 * incomplete_beta(df / (df + t * t), df / 2, 0.5); }

double t_density(double t, double df) {
    return std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * M_PI) -
                    (df + 1) / 2 * std::log1p(t * t / df));
}

// ---- moments of a stratum ------------------------------------------------------

// A group's moments in a stratum of m sample rows, the other m - k rows
// counting as 0.
Moments with_zeros(const Moments& group, double m) {
    Moments all = group;
    Moments zeros;
    zeros.n = std::max(0.0, m - group.n);
    merge(all, zeros);
    return all;
}

// The group's values in a stratum with at least the stratum's relative
// spread (estimate()): M2 raised to (k - 1) CV^2 ms, CV^2 = S^2 / mean|y|^2
// of the stratum's sample, ms the group's mean square; and at least the
// stratum's skewness: M3 raised to k g1_s (M2 / k)^1.5 where |g1_s| is the
// larger. Only where the stratum's sample knows more values than the group's own.
void widen_to_stratum(Moments& g, const StratumSpread& s) {
    if (!(s.n > g.n) || g.n < 2 || !(s.mean_abs > 0) || !(s.variance > 0) || !std::isfinite(s.variance)) return;
    const double cv2 = s.variance / (s.mean_abs * s.mean_abs);
    const double mean_square = g.m2 / g.n + g.mean * g.mean;
    const double floor_m2 = (g.n - 1) * cv2 * mean_square;
    if (std::isfinite(floor_m2) && floor_m2 > g.m2) g.m2 = floor_m2;
    if (!(g.m2 > 0) || !std::isfinite(s.skewness)) return;
    const double spread_cubed = std::pow(g.m2 / g.n, 1.5);
    if (std::fabs(s.skewness) * g.n * spread_cubed > std::fabs(g.m3)) g.m3 = s.skewness * g.n * spread_cubed;
}

Status estimate_one(Aggregate agg, const Stratum* design, int32_t n_strata, const GroupPart* parts, int32_t n_parts,
                    const Options& opt, Estimate& out);

// Hall's (1992) inverse: the T with g(T) = u, g(T) = T + a T^2 + a^2 T^3 / 3 + a / 2
// = ((1 + a T)^3 - 1) / (3 a) + a / 2.
double hall_inverse(double u, double a) {
    if (std::fabs(a) < 1e-12) return u - a / 2;
    return (std::cbrt(1 + 3 * a * (u - a / 2)) - 1) / a;
}

// The estimator's skewness beyond which the one-term Edgeworth correction is
// not trusted (its inverse would leave the estimate outside the interval
// near |gamma| = 6 z); held at this value.
constexpr double kMaxSkew = 1.0;

}  // namespace

void add(Moments& a, double y) {
    const double n1 = a.n;
    a.n += 1;
    const double delta = y - a.mean, dn = delta / a.n, t1 = delta * dn * n1;
    a.mean += dn;
    a.m4 += t1 * dn * dn * (a.n * a.n - 3 * a.n + 3) + 6 * dn * dn * a.m2 - 4 * dn * a.m3;
    a.m3 += t1 * dn * (a.n - 2) - 3 * dn * a.m2;
    a.m2 += t1;
    a.sum += y;
    a.nonzero += y != 0 ? 1 : 0;
}

StratumSpread stratum_spread(const Moments& m, double abs_sum) {
    StratumSpread out;
    out.n = m.n;
    out.variance = m.n > 1 ? m.m2 / (m.n - 1) : 0;
    out.mean_abs = m.n > 0 ? abs_sum / m.n : 0;
    out.skewness = m.n > 2 && m.m2 > 0 ? (m.m3 / m.n) / std::pow(m.m2 / m.n, 1.5) : 0;
    return out;
}

void merge(Moments& a, const Moments& b) {
    if (b.n <= 0) return;
    if (a.n <= 0) {
        a = b;
        return;
    }
    const double n = a.n + b.n, delta = b.mean - a.mean, dn = delta / n;
    a.m4 = a.m4 + b.m4 + delta * dn * dn * dn * a.n * b.n * (a.n * a.n - a.n * b.n + b.n * b.n) +
           6 * dn * dn * (a.n * a.n * b.m2 + b.n * b.n * a.m2) + 4 * dn * (a.n * b.m3 - b.n * a.m3);
    a.m3 = a.m3 + b.m3 + delta * dn * dn * a.n * b.n * (a.n - b.n) + 3 * dn * (a.n * b.m2 - b.n * a.m2);
    a.m2 = a.m2 + b.m2 + delta * dn * a.n * b.n;
    a.mean += dn * b.n;
    a.n = n;
    a.sum += b.sum;
    a.nonzero += b.nonzero;
}

double student_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) return std::numeric_limits<double>::quiet_NaN();
    if (p == 0.5) return 0;
    if (p < 0.5) return -student_t_quantile(1 - p, df);
    const double z = synopsis::normal_quantile(p);
    if (!(df < 1e7)) return z;
    if (df == 1) return std::tan(M_PI * (p - 0.5));
    if (df == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
    const double alpha = 1 - p;
    // Cornish-Fisher start, then Newton kept inside a bracket [lo, hi].
    double t = z + (z * z * z + z) / (4 * df) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * df * df);
    double lo = 0, hi = std::max(t, z);
    while (t_upper_tail(hi, df) > alpha && hi < 1e300) hi *= 2;
    if (!(t > lo && t < hi)) t = 0.5 * (lo + hi);
    for (int it = 0; it < 200; ++it) {
        const double diff = t_upper_tail(t, df) - alpha;  // decreasing in t
        if (diff > 0)
            lo = t;
        else
            hi = t;
        double next = t + diff / t_density(t, df);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        if (std::fabs(next - t) <= 1e-13 * std::max(1.0, t)) return next;
        t = next;
    }
    return t;
}

Status estimate(Aggregate agg, const Stratum* design, int32_t n_strata, const GroupPart* parts, int32_t n_parts,
                const Options& opt, Estimate& out) {
    if (opt.spread != nullptr && agg != Aggregate::Count) {
        // The stratum's spread only widens: the interval is the hull of the
        // group's own and the one with its variance raised to the stratum's
        // (raising M2 alone also lowers the kurtosis and skewness the
        // degrees of freedom and the skewness correction read).
        Options own = opt;
        own.spread = nullptr;
        Estimate base;
        Status st = estimate_one(agg, design, n_strata, parts, n_parts, own, base);
        if (!st.ok()) return (out = base, st);
        st = estimate_one(agg, design, n_strata, parts, n_parts, opt, out);
        if (!st.ok()) return st;
        out.lower = std::min(out.lower, base.lower);
        out.upper = std::max(out.upper, base.upper);
        out.se = std::max(out.se, base.se);
        out.estimable = out.estimable && base.estimable;
        return Status::Ok();
    }
    return estimate_one(agg, design, n_strata, parts, n_parts, opt, out);
}

namespace {

Status estimate_one(Aggregate agg, const Stratum* design, int32_t n_strata, const GroupPart* parts, int32_t n_parts,
                    const Options& opt, Estimate& out) {
    out = Estimate();
    if (!(opt.confidence > 0 && opt.confidence < 1))
        return Status::Error(StatusCode::InvalidArgument, "confidence must be between 0 and 1");
    if (n_strata < 0 || n_parts < 0 || (n_strata > 0 && design == nullptr) || (n_parts > 0 && parts == nullptr))
        return Status::Error(StatusCode::InvalidArgument, "bad design");
    for (int32_t i = 0; i < n_parts; ++i)
        if (parts[i].stratum < 0 || parts[i].stratum >= n_strata)
            return Status::Error(StatusCode::InvalidArgument, "stratum %d is not between 1 and %d",
                                 parts[i].stratum + 1, n_strata);
    for (int32_t s = 0; s < n_strata; ++s)
        if (!(design[s].rows >= 0) || !(design[s].sampled >= 0) || !std::isfinite(design[s].rows))
            return Status::Error(StatusCode::InvalidArgument, "stratum %d has a bad design", s + 1);
    const double z = synopsis::normal_quantile(0.5 + opt.confidence / 2), z2 = z * z;

    // Totals: X = COUNT, Y = SUM; the group's moments over every part.
    double X = 0, Y = 0;
    Moments all;
    for (int32_t i = 0; i < n_parts; ++i) {
        const Stratum& d = design[parts[i].stratum];
        const double k = parts[i].m.n;
        if (k <= 0) continue;
        const double m = std::max(d.sampled, k), N = std::max(d.rows, m);
        out.repeated |= k > d.sampled;
        X += N / m * k;
        Y += N / m * parts[i].m.sum;
        merge(all, parts[i].m);
    }
    out.rows = all.n;
    // No value seen (SUM / AVG): NULL if the sample holds every row the group
    // may have, otherwise unknown (decided below, once `whole` is known).
    const bool no_value = agg != Aggregate::Count && all.n <= 0;
    const double R = agg == Aggregate::Avg && X > 0 ? Y / X : 0;
    out.estimate = agg == Aggregate::Count ? X : agg == Aggregate::Sum ? Y : R;
    const double mean_square = all.n > 0 ? all.m2 / all.n + all.mean * all.mean : 0;

    // The k = 0 allowance of one stratum (the group unseen there).
    auto unseen_allowance = [&](const Stratum& d) {
        const double m = d.sampled, N = d.rows;
        const double p = z2 / (m + 2 * z2);
        return N * N * (1 - m / N) / m * p * (1 - p);
    };
    // Per stratum: the estimated variance term a_s, the allowances, the third cumulant.
    double v_est = 0, allowance = 0, avg_allowance = 0, kappa3 = 0, sat_den = 0;
    bool whole = true;
    int64_t unbounded = 0;  // strata that may hold the group and have no sample row
    double untouched_allowance = 0;
    double varying_rows = 0;     // the group's sample rows in strata not sampled whole
    double varying_nonzero = 0;  // ... and of them, those whose value is not 0
    for (int32_t i = 0; i < n_parts; ++i) {
        const Stratum& d = design[parts[i].stratum];
        const double k = parts[i].m.n;
        const double m = std::max(d.sampled, k), N = std::max(d.rows, m);
        if (k <= 0) {
            // Rows of the group with no value (all NULL) in this stratum: the
            // stratum holds the group, its unsampled rows may hold values (the
            // k = 0 allowance; without groups_within_strata the loop below adds it).
            if (opt.groups_within_strata && d.rows > d.sampled) {
                if (d.sampled <= 0)
                    ++unbounded;
                else
                    untouched_allowance += unseen_allowance(d);
            }
            continue;
        }
        // Undo this stratum's share of the untouched sums below (added for every stratum there).
        if (!opt.groups_within_strata && d.rows > d.sampled) {
            if (d.sampled <= 0)
                --unbounded;
            else
                untouched_allowance -= unseen_allowance(d);
        }
        if (m >= N) continue;  // wholly sampled: exact
        whole = false;
        varying_rows += k;
        varying_nonzero += parts[i].m.nonzero;
        const double f = m / N, w = N / m, W = N * N * (1 - f) / m;
        Moments g = parts[i].m;
        if (agg != Aggregate::Count && opt.spread != nullptr) widen_to_stratum(g, opt.spread[parts[i].stratum]);
        if (agg == Aggregate::Count) {
            g.mean = 1;
            g.m2 = g.m3 = g.m4 = 0;
        } else {
            g.mean -= R;  // AVG: y = d (v - R); otherwise R = 0
        }
        const Moments full = with_zeros(g, m);
        const double s2 = m > 1 ? full.m2 / (m - 1) : 0;
        // AVG: the linearised term of a domain of k_s rows underestimates the
        // variance of its mean by (k_s - 1) / k_s; conditioning on the rows
        // the sample drew of the group (Sarndal, Swensson & Wretman 1992,
        // Model Assisted Survey Sampling, 10.3) restores it (k_s = 1: as 2).
        const double a = W * s2 * (agg == Aggregate::Avg ? (k >= 2 ? k / (k - 1) : 2.0) : 1.0);
        v_est += a;
        // Degrees of freedom of s^2_s: at most k_s - 1 (the group's rows), and
        // fewer where the values are heavy-tailed: Var(s^2) / sigma^4 =
        // 2 / (m - 1) + kappa / m (kappa: the excess kurtosis of the stratum's
        // y), so df_s = 2 / that.
        const double kurt = full.m2 > 0 ? m * full.m4 / (full.m2 * full.m2) - 3 : 0;
        const double rel_var = 2 / std::max(1.0, m - 1) + std::max(0.0, kurt) / m;
        // ... and at most (nonzero values - 1): zeros carry no information
        // on the spread of the values that make a SUM (zero-inflated measures).
        const double informative = agg == Aggregate::Count ? k : std::min(k, parts[i].m.nonzero);
        sat_den += a * a * std::max(rel_var / 2, 1 / std::max(1.0, informative - 1));
        kappa3 += w * w * w * (1 - f) * (1 - 2 * f) * full.m3;
        const double q = std::min(1.0, k / m), p = (k + z2) / (m + 2 * z2);
        const double extra = W * std::max(0.0, p * (1 - p) - q * (1 - q));
        if (agg == Aggregate::Count)
            allowance += extra;
        else if (agg == Aggregate::Sum)
            allowance += extra * (parts[i].m.m2 / k + parts[i].m.mean * parts[i].m.mean);
        avg_allowance += W * p * (1 - p);
    }
    if (!opt.groups_within_strata)
        for (int32_t s = 0; s < n_strata; ++s) {
            if (!(design[s].rows > design[s].sampled)) continue;
            if (design[s].sampled <= 0)
                ++unbounded;
            else
                untouched_allowance += unseen_allowance(design[s]);
        }
    untouched_allowance = std::max(0.0, untouched_allowance);
    if (untouched_allowance > 0 || unbounded > 0) whole = false;
    if (whole) {
        out.exact = true;
        out.null = no_value;
        out.lower = out.upper = out.estimate;
        return Status::Ok();
    }
    // SUM / AVG from at most one value (SUM: one value other than 0) where
    // the sample is not whole: one value says nothing about the spread of the
    // rest (Bahadur & Savage 1956: no finite interval for a mean is honest
    // for every distribution; with 2+ values the t interval below is the
    // method's assumption). No value: SUM 0 (the Horvitz-Thompson estimate of
    // no sample row), AVG NULL (0 / 0); the interval is (-inf, inf).
    if (agg != Aggregate::Count && (varying_rows <= 1 || (agg == Aggregate::Sum && varying_nonzero <= 1))) {
        out.null = no_value && agg == Aggregate::Avg;
        out.estimable = false;
        out.se = kInf;
        out.lower = -kInf;
        out.upper = kInf;
        return Status::Ok();
    }
    if (agg == Aggregate::Count)
        allowance += untouched_allowance;
    else if (agg == Aggregate::Sum)
        allowance += untouched_allowance * mean_square;
    avg_allowance += untouched_allowance;

    double V = v_est + allowance;  // SUM units (AVG: of the linearised total)
    if (agg == Aggregate::Avg) {
        // Equal values leave no spread: the allowance at the value's scale
        // (as widen_for_unseen's AVG floor, with |R| for the column's range).
        const double floor_v = R * R * avg_allowance;
        if (std::sqrt(V) < 1e-6 * std::sqrt(floor_v)) V = floor_v;
    }
    if (unbounded > 0 || !(V > 0)) {
        out.estimable = false;
        out.se = kInf;
        out.lower = agg == Aggregate::Count ? 0 : -kInf;
        out.upper = kInf;
        return Status::Ok();
    }
    const double scale = agg == Aggregate::Avg ? X : 1;
    out.se = std::sqrt(V) / scale;
    double quantile = z;
    if (agg != Aggregate::Count) {
        out.df = sat_den > 0 ? V * V / sat_den : 0;
        if (out.df > 0) quantile = student_t_quantile(0.5 + opt.confidence / 2, out.df);
        out.skew = std::max(-kMaxSkew, std::min(kMaxSkew, kappa3 / (V * std::sqrt(V))));
    }
    // T = (estimate - theta) / se; g(T) in [-quantile, quantile].
    const double a = out.skew / 3;
    const double t_hi = hall_inverse(quantile, a), t_lo = hall_inverse(-quantile, a);
    out.lower = std::min(out.estimate, out.estimate - t_hi * out.se);
    out.upper = std::max(out.estimate, out.estimate - t_lo * out.se);
    if (agg == Aggregate::Count) out.lower = std::max(0.0, out.lower);
    return Status::Ok();
}

}  // namespace

Status percentile(Percentile kind, double fraction, const Stratum* design, int32_t n_strata, WeightedValue* rows,
                  int64_t n, const Options& opt, Estimate& out) {
    out = Estimate();
    if (!(opt.confidence > 0 && opt.confidence < 1))
        return Status::Error(StatusCode::InvalidArgument, "confidence must be between 0 and 1");
    if (!(fraction >= 0 && fraction <= 1))
        return Status::Error(StatusCode::OutOfRange, "fraction %g is not between 0 and 1", fraction);
    if (n < 0 || n_strata < 0 || (n > 0 && rows == nullptr) || (n_strata > 0 && design == nullptr))
        return Status::Error(StatusCode::InvalidArgument, "bad design");
    for (int64_t i = 0; i < n; ++i)
        if (rows[i].stratum < 0 || rows[i].stratum >= n_strata)
            return Status::Error(StatusCode::InvalidArgument, "stratum %d is not between 1 and %d",
                                 rows[i].stratum + 1, n_strata);
    out.rows = static_cast<double>(n);
    if (n == 0) {
        // No value seen: NULL, which only a sample holding every row promises
        // (exact); otherwise unknown, with the interval (-inf, inf).
        out.null = true;
        out.exact = true;
        for (int32_t s = 0; s < n_strata; ++s) out.exact = out.exact && !(design[s].rows > design[s].sampled);
        out.estimable = out.exact;
        out.lower = -kInf;
        out.upper = kInf;
        return Status::Ok();
    }
    // The HT weight of a row (a stratum without sample rows in the design:
    // the rows stand for themselves).
    auto weight = [&](int32_t s) { return design[s].sampled > 0 ? design[s].rows / design[s].sampled : 1.0; };
    // The order of ORDER BY x (float8's: NaN above every number) or, with
    // opt.descending, of ORDER BY x DESC (NaN first): `before` is that
    // order's strict "comes before". Every position below is in that order,
    // as PostgreSQL's percentile_cont / _disc read the sorted input.
    const bool desc = opt.descending;
    auto ascending_before = [](double x, double y) { return !std::isnan(x) && (std::isnan(y) || x < y); };
    auto before = [&](double x, double y) { return desc ? ascending_before(y, x) : ascending_before(x, y); };
    std::sort(rows, rows + n, [&](const WeightedValue& x, const WeightedValue& y) { return before(x.value, y.value); });
    double W = 0;
    for (int64_t i = 0; i < n; ++i) W += weight(rows[i].stratum);
    const double f = fraction;
    // The value covering weighted position k (0-based): the first i with C_i > k.
    auto value_at_position = [&](double k) {
        double c = 0;
        for (int64_t i = 0; i < n; ++i) {
            c += weight(rows[i].stratum);
            if (c > k) return rows[i].value;
        }
        return rows[n - 1].value;
    };
    if (kind == Percentile::Cont) {
        const double h = std::max(0.0, f * (W - 1));
        const double first = std::floor(h), second = std::ceil(h);
        const double lo = value_at_position(first);
        // float8_lerp's formula (PostgreSQL's utils/adt/orderedsetaggs.c)
        out.estimate = first == second ? lo : lo + (value_at_position(second) - lo) * (h - first);
    } else {
        const double target = f * W;
        double c = 0;
        out.estimate = rows[n - 1].value;
        for (int64_t i = 0; i < n; ++i) {
            c += weight(rows[i].stratum);
            if (c >= target) {
                out.estimate = rows[i].value;
                break;
            }
        }
    }
    // Woodruff: the stratified variance of the estimated CDF at the
    // estimate, y_i = d_i (1{v_i <= q} - f) over each stratum's m_s rows.
    // Strata are summed one at a time (a scan per distinct stratum of the
    // group, marked done by flipping its index negative, restored after).
    const double q = out.estimate;
    double v = 0;
    bool whole = true;
    for (int64_t i = 0; i < n; ++i) {
        if (rows[i].stratum < 0) continue;
        const int32_t s = rows[i].stratum;
        double k = 0, below = 0;
        for (int64_t j = i; j < n; ++j)
            if (rows[j].stratum == s) {
                k += 1;
                below += before(q, rows[j].value) ? 0 : 1;  // at or before q in the order
                rows[j].stratum = -s - 1;
            }
        out.repeated |= k > design[s].sampled;
        const double m = std::max(design[s].sampled, k), N = std::max(design[s].rows, m);
        if (m >= N) continue;
        whole = false;
        const double sum = below - f * k, sum2 = below * (1 - f) * (1 - f) + (k - below) * f * f;
        const double s2 = m > 1 ? std::max(0.0, sum2 - sum * sum / m) / (m - 1) : 0;
        v += N * N * (1 - m / N) / m * s2;
    }
    for (int64_t i = 0; i < n; ++i) rows[i].stratum = -rows[i].stratum - 1;
    if (!opt.groups_within_strata)
        for (int32_t s = 0; s < n_strata && whole; ++s) whole = !(design[s].rows > design[s].sampled);
    if (whole) {
        out.exact = true;
        out.lower = out.upper = out.estimate;
        return Status::Ok();
    }
    const double z = synopsis::normal_quantile(0.5 + opt.confidence / 2), z2 = z * z;
    const double vp = v / (W * W);
    out.se = std::sqrt(vp);
    // [p_lo, p_hi] for the CDF at the percentile; outside [0, 1]: that side unbounded.
    double p_lo = -1, p_hi = 2;
    if (f > 0 && f < 1 && vp > 0) {
        // Wilson's score interval for f at the effective sample size.
        const double ne = f * (1 - f) / vp;
        const double centre = (f + z2 / (2 * ne)) / (1 + z2 / ne);
        const double half = z / (1 + z2 / ne) * std::sqrt(f * (1 - f) / ne + z2 / (4 * ne * ne));
        p_lo = centre - half;
        p_hi = centre + half;
    }
    // In the order: `early` = the last value with C_i <= p_lo W, `late` = the
    // first with C_{i-1} >= p_hi W (none: that side is unbounded).
    bool has_early = false, has_late = false;
    double early = 0, late = 0;
    double c = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double c_before = c;
        c += weight(rows[i].stratum);
        if (p_lo >= 0 && c <= p_lo * W) has_early = true, early = rows[i].value;
        if (p_hi <= 1 && c_before >= p_hi * W && !has_late) has_late = true, late = rows[i].value;
    }
    // The population's first value in the order comes at or before the first
    // seen, its last at or after the last seen: f = 0 bounds the late side, f = 1 the early one.
    if (f <= 0) has_late = true, late = out.estimate;
    if (f >= 1) has_early = true, early = out.estimate;
    // Ascending, the early side is the lower bound; descending, the upper.
    out.lower = desc ? (has_late ? late : -kInf) : (has_early ? early : -kInf);
    out.upper = desc ? (has_early ? early : kInf) : (has_late ? late : kInf);
    out.estimable = std::isfinite(out.lower) && std::isfinite(out.upper);
    out.lower = std::min(out.lower, out.estimate);
    out.upper = std::max(out.upper, out.estimate);
    return Status::Ok();
}

double unseen_groups(int64_t f1, int64_t f2) {
    if (f1 <= 1) return 0;
    return static_cast<double>(f1) * static_cast<double>(f1 - 1) / (2.0 * static_cast<double>(f2 + 1));
}

}  // namespace approx::sample
