// The synopsis guard: per column, choose between exact membership (the plain
// sample) and smoothing (raw scale, or on t = log(x + shift)) by
// cross-validated box errors on the sample itself, and calibrate the
// intervals of smoothed columns on the same evidence. See choose_modes() in
// synopsis_internal.hpp.
//
// Cross-validation. The sample's rows are split into kFolds random folds.
// Boxes are drawn per fold with both edges at held-out values of that fold
// (quantile windows of width log-uniform in [kMinWidth, kMaxWidth]): a user's
// box edges are data values, so on a column of atoms they sit on atoms, which
// is exactly where smoothing loses. A box's COUNT fraction is estimated from
// the other folds by every candidate mode and compared with the held-out
// fold's fraction, the rows that define the edges left out of it (so that the
// held-out fraction is unbiased also for continuous data). Loss: the squared
// error relative to the box's whole-sample fraction. The held-out noise is the
// same for every candidate; the paired difference of two candidates' losses
// estimates the difference of their mean squared errors.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kde.hpp"
#include "synopsis.hpp"
#include "synopsis_internal.hpp"
#include "synopsis_math.hpp"

namespace approx::synopsis {

namespace {

constexpr int kFolds = 5;
constexpr int kBoxesPerFold = 60;       // 1-D boxes per fold and column: 300 per column
constexpr int kJointBoxesPerFold = 60;  // multi-column boxes per fold: 300
constexpr int64_t kMinRows = 200;       // fewer sample rows: too little evidence, columns stay exact
constexpr double kMinWidth = 0.005, kMaxWidth = 0.6;
constexpr double kJointMinSel = 0.005, kJointMaxSel = 0.6;
constexpr double kCoverageLevel = 0.95;
constexpr double kZ95 = 1.959963984540054;
constexpr double kMaxIntervalScale = 1e3;

struct Folds {
    std::vector<int> of;                     // fold of each row
    std::vector<std::vector<int64_t>> rows;  // rows of each fold
};

Folds make_folds(int64_t m, Rng& rng) {
    Folds f;
    std::vector<int64_t> perm(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) perm[i] = i;
    for (int64_t i = m - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(static_cast<uint64_t>(i) + 1)]);
    f.of.assign(static_cast<size_t>(m), 0);
    f.rows.assign(kFolds, {});
    for (int64_t r = 0; r < m; ++r) {
        int k = static_cast<int>(r % kFolds);
        f.of[perm[r]] = k;
        f.rows[k].push_back(perm[r]);
    }
    return f;
}

// CV boxes over `dims` columns (bounds row-major), each with its fold and the
// rows whose values define its edges (left out of the held-out count).
struct CvBoxes {
    int dims = 0;
    std::vector<double> lo, hi;
    std::vector<int> fold;
    std::vector<std::vector<int64_t>> edges;
    size_t size() const { return fold.size(); }
};

// Per box and candidate: the training folds' estimate a and its standard
// error se; the held-out fraction t and its standard error se_t; the
// whole-sample exact fraction p (the relative errors' denominator).
struct CvResult {
    int cands = 0;
    std::vector<double> a, se;  // box * cands + c
    std::vector<double> t, se_t, p;
};

// in(i, b): row i lies in box b exactly; mass(i, b, c): candidate c's mass of
// row i in box b (candidate 0 is the exact indicator). rows(b) gives the
// positions [begin, end) in `order` (nullptr: the identity over all m rows)
// outside which every candidate's mass is exactly 0, so that only those rows
// are visited (the sums are the same).
template <class In, class Mass, class Rows>
Status cross_validate(int64_t m, const Folds& folds, const CvBoxes& boxes, int cands, const ExecContext& ctx, In in,
                      Mass mass, const int64_t* order, Rows rows, CvResult& out) {
    const size_t nb = boxes.size();
    out.cands = cands;
    out.a.assign(nb * cands, 0);
    out.se.assign(nb * cands, 0);
    out.t.assign(nb, 0);
    out.se_t.assign(nb, 0);
    out.p.assign(nb, 0);
    return parallel_for(ctx, nb, [&](size_t b, size_t) -> Status {
        if (ctx.cancelled()) return cancelled_status();
        const int f = boxes.fold[b];
        double s_all[kModes + 1] = {0}, ss_all[kModes + 1] = {0}, s_f[kModes + 1] = {0}, ss_f[kModes + 1] = {0};
        double exact_all = 0, exact_f = 0;
        const std::pair<int64_t, int64_t> range = rows(b);
        for (int64_t pos = range.first; pos < range.second; ++pos) {
            const int64_t i = order ? order[pos] : pos;
            const bool held_out = folds.of[i] == f;
            if (in(i, b)) {
                exact_all += 1;
                if (held_out) exact_f += 1;
            }
            for (int c = 0; c < cands; ++c) {
                double p = mass(i, b, c);
                s_all[c] += p;
                ss_all[c] += p * p;
                if (held_out) {
                    s_f[c] += p;
                    ss_f[c] += p * p;
                }
            }
        }
        // The edge rows (distinct) leave the held-out count.
        std::vector<int64_t> edges = boxes.edges[b];
        std::sort(edges.begin(), edges.end());
        edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
        double edge_in = 0;
        for (int64_t e : edges)
            if (in(e, b)) edge_in += 1;
        const double n_f = static_cast<double>(folds.rows[f].size()) - static_cast<double>(edges.size());
        const double n_train = static_cast<double>(m) - static_cast<double>(folds.rows[f].size());
        const double t = (exact_f - edge_in) / n_f;
        out.t[b] = t;
        out.se_t[b] = std::sqrt(std::max(t * (1 - t), 0.0) / n_f);
        out.p[b] = std::max(exact_all, 1.0) / static_cast<double>(m);
        for (int c = 0; c < cands; ++c) {
            const double s = s_all[c] - s_f[c], ss = ss_all[c] - ss_f[c];
            const double a = s / n_train;
            const double var = std::max(0.0, (ss - n_train * a * a) / (n_train - 1));
            out.a[b * cands + c] = a;
            out.se[b * cands + c] = std::sqrt(var / n_train);
        }
        return Status::Ok();
    });
}

double loss(const CvResult& r, size_t b, int c) {
    double e = (r.a[b * r.cands + c] - r.t[b]) / r.p[b];
    return e * e;
}

struct Comparison {
    double mean_diff = 0, se_diff = 0;  // paired loss(c) - loss(base)
    double rms = 0;                     // sqrt(mean loss(c))
};

Comparison compare(const CvResult& r, int c, int base) {
    Comparison out;
    const size_t nb = r.t.size();
    double sd = 0, sdd = 0, sl = 0;
    for (size_t b = 0; b < nb; ++b) {
        double l = loss(r, b, c), diff = l - loss(r, b, base);
        sl += l;
        sd += diff;
        sdd += diff * diff;
    }
    const double n = static_cast<double>(nb);
    out.mean_diff = sd / n;
    out.se_diff = n > 1 ? std::sqrt(std::max(0.0, (sdd - sd * sd / n) / (n - 1)) / n) : 0;
    out.rms = std::sqrt(sl / n);
    return out;
}

// Interval calibration for candidate c: box b is covered by a z se interval
// widened by lambda when |a - t| <= z sqrt(lambda^2 se^2 + se_t^2) (the
// held-out fraction's own noise se_t accounted for). lambda is the smallest
// value >= 1 that covers kCoverageLevel of the even-numbered boxes; the
// coverage reported is that lambda's on the odd-numbered boxes (not used to
// fit it).
void calibrate(const CvResult& r, int c, double& lambda, double& coverage) {
    const size_t nb = r.t.size();
    auto needed = [&](size_t b) {  // lambda^2 that just covers box b
        double a = r.a[b * r.cands + c], se = r.se[b * r.cands + c];
        double excess = (a - r.t[b]) * (a - r.t[b]) / (kZ95 * kZ95) - r.se_t[b] * r.se_t[b];
        if (excess <= 0) return 0.0;
        return se > 0 ? excess / (se * se) : HUGE_VAL;
    };
    std::vector<double> fit;
    for (size_t b = 0; b < nb; b += 2) fit.push_back(needed(b));
    size_t k = static_cast<size_t>(std::ceil(kCoverageLevel * fit.size())) - 1;
    std::nth_element(fit.begin(), fit.begin() + k, fit.end());
    double l2 = std::max(1.0, fit[k]);
    lambda = std::min(kMaxIntervalScale, std::sqrt(l2));
    l2 = lambda * lambda;
    double covered = 0, total = 0;
    for (size_t b = 1; b < nb; b += 2) {
        total += 1;
        if (needed(b) <= l2) covered += 1;
    }
    coverage = total > 0 ? covered / total : -1;
}

// The shift of the log scale: t = log(x - min + delta), delta = the 5%
// quantile of the values above the minimum, minus the minimum (1 for counts
// from 0: log1p; 0 offset past the floor for sizes from 1: log x).
double log_shift(const std::vector<double>& sorted) {
    const size_t m = sorted.size();
    const double lo = sorted.front();
    size_t first = static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), lo) - sorted.begin());
    if (first >= m) return 1.0 - lo;
    size_t q = first + static_cast<size_t>(0.05 * static_cast<double>(m - first));
    double delta = sorted[std::min(q, m - 1)] - lo;
    return delta - lo;
}

}  // namespace

// A column answered by exact membership (the plain sample's estimator).
static void make_exact(Column& c) {
    c.mode = Mode::Exact;
    c.discrete = true;
    c.shift = c.log_h = 0;
    c.interval_scale = 1;
}

Status choose_modes(Synopsis& s, const double* const* columns, const bool* constant, uint64_t seed,
                    const ExecContext& ctx) {
    return guarded([&]() -> Status {
        const int d = s.d;
        const int64_t m = s.m;
        for (int j = 0; j < d; ++j) {
            Column& c = s.cols[j];
            make_exact(c);
            for (double& e : c.cv_error) e = -1;
            c.cv_coverage = -1;
        }
        s.joint_cv[0] = s.joint_cv[1] = -1;
        if (m < kMinRows) return Status::Ok();
        Rng rng;
        rng.seed(seed);
        const Folds folds = make_folds(m, rng);
        // Sorted non-NULL values of each fold, per column, with their rows: box edges.
        auto fold_sorted = [&](const double* x, const Folds& fo, int f) {
            std::vector<int64_t> rows;
            rows.reserve(fo.rows[f].size());
            for (int64_t r : fo.rows[f])
                if (!std::isnan(x[r])) rows.push_back(r);
            std::sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) { return x[a] < x[b]; });
            return rows;
        };

        // ---- per column: Exact vs Kde vs LogKde on 1-D boxes
        for (int j = 0; j < d; ++j) {
            if (constant[j]) continue;
            Column& col = s.cols[j];
            // A column with NULLs is cross-validated on its non-NULL rows
            // (compacted, each in the fold of its row).
            const double* x = columns[j];
            int64_t m = s.m;
            const Folds* fp = &folds;
            std::vector<double> compact;
            Folds column_folds;
            if (std::any_of(x, x + m, [](double v) { return std::isnan(v); })) {
                column_folds.rows.assign(kFolds, {});
                for (int64_t i = 0; i < m; ++i) {
                    if (std::isnan(x[i])) continue;
                    const int f = folds.of[i];
                    column_folds.rows[f].push_back(static_cast<int64_t>(compact.size()));
                    column_folds.of.push_back(f);
                    compact.push_back(x[i]);
                }
                m = static_cast<int64_t>(compact.size());
                bool enough = m >= kMinRows;
                for (const auto& rows : column_folds.rows) enough = enough && rows.size() >= 3;
                if (!enough) continue;  // too little evidence: exact
                x = compact.data();
                fp = &column_folds;
            }
            const Folds& cfolds = *fp;
            std::vector<double> sorted(x, x + m);
            std::sort(sorted.begin(), sorted.end());
            const double shift = log_shift(sorted);
            std::vector<double> t(static_cast<size_t>(m));
            for (int64_t i = 0; i < m; ++i) t[i] = std::log(x[i] + shift);
            // The log scale's bandwidth: the same cdf plug-in on t. Where it
            // cannot be computed the log candidate is simply not offered.
            double log_h = 0;
            Status st = kde::plugin_bandwidth(t.data(), static_cast<size_t>(m), kde::PluginTarget::Distribution, ctx,
                                              log_h);
            if (ctx.cancelled()) return cancelled_status();
            const bool have_log = st.ok() && std::isfinite(log_h) && log_h > 0;
            // The candidates as three columns of one ColumnParams.
            math::ColumnParams cp = {};
            for (int c = 0; c < kModes; ++c) {
                cp.h[c] = col.box_h;
                cp.lower[c] = col.min;
                cp.upper[c] = col.max;
            }
            cp.discrete[0] = 1;
            cp.transform[2] = 1;
            cp.shift[2] = shift;
            cp.h[2] = have_log ? log_h : 1.0;
            cp.lower[2] = std::log(col.min + shift);
            cp.upper[2] = std::log(col.max + shift);
            const int cands = have_log ? 3 : 2;

            CvBoxes boxes;
            boxes.dims = 1;
            for (int f = 0; f < kFolds; ++f) {
                std::vector<int64_t> rows = fold_sorted(x, cfolds, f);
                const double n_f = static_cast<double>(rows.size());
                for (int k = 0; k < kBoxesPerFold; ++k) {
                    double w = kMinWidth * std::pow(kMaxWidth / kMinWidth, rng.uniform());
                    double u = rng.uniform() * (1 - w);
                    size_t lo_pos = static_cast<size_t>(u * (n_f - 1));
                    size_t hi_pos = std::max(lo_pos + 1, static_cast<size_t>((u + w) * (n_f - 1)));
                    hi_pos = std::min(hi_pos, rows.size() - 1);
                    boxes.lo.push_back(x[rows[lo_pos]]);
                    boxes.hi.push_back(x[rows[hi_pos]]);
                    boxes.fold.push_back(f);
                    boxes.edges.push_back({rows[lo_pos], rows[hi_pos]});
                }
            }
            // Rows sorted by value: a box only needs the rows within 40
            // bandwidths of it on either scale (math::column_mass drops every
            // piece beyond that, reflected ones included).
            std::vector<int64_t> order(static_cast<size_t>(m));
            for (int64_t i = 0; i < m; ++i) order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return x[a] < x[b]; });
            auto window = [&](size_t b) {
                double lo = std::min(boxes.lo[b] - 40 * col.box_h, boxes.lo[b]);
                double hi = std::max(boxes.hi[b] + 40 * col.box_h, boxes.hi[b]);
                if (have_log) {
                    lo = std::min(lo, (boxes.lo[b] + shift) * std::exp(-40 * log_h) - shift);
                    hi = std::max(hi, (boxes.hi[b] + shift) * std::exp(40 * log_h) - shift);
                }
                int64_t begin = std::lower_bound(sorted.begin(), sorted.end(), lo) - sorted.begin();
                int64_t end = std::upper_bound(sorted.begin(), sorted.end(), hi) - sorted.begin();
                return std::make_pair(begin, end);
            };
            CvResult r;
            APPROX_TRY(cross_validate(
                m, cfolds, boxes, cands, ctx,
                [&](int64_t i, size_t b) { return x[i] >= boxes.lo[b] && x[i] <= boxes.hi[b]; },
                [&](int64_t i, size_t b, int c) {
                    double p, unused;
                    math::column_mass(x[i], boxes.lo[b], boxes.hi[b], cp, c, false, p, unused);
                    return p;
                },
                order.data(), window, r));
            Comparison cmp[kModes];
            for (int c = 0; c < cands; ++c) {
                cmp[c] = compare(r, c, 0);
                col.cv_error[c] = cmp[c].rms;
            }
            // The best smoothed candidate, taken only when it beats exact by
            // more than one standard error of the paired difference.
            int best = 1;
            if (cands > 2 && cmp[2].mean_diff < cmp[1].mean_diff) best = 2;
            double lambda = 1, coverage = -1;
            if (cmp[best].mean_diff + cmp[best].se_diff < 0) {
                calibrate(r, best, lambda, coverage);
                col.mode = best == 2 ? Mode::LogKde : Mode::Kde;
                col.discrete = false;
                col.interval_scale = lambda;
                if (best == 2) {
                    col.shift = shift;
                    col.log_h = log_h;
                }
            } else {
                calibrate(r, 0, lambda, coverage);  // reported only: exact keeps the plain interval
            }
            col.cv_coverage = coverage;
        }

        // ---- joint check on multi-column boxes: the chosen modes against the plain sample
        int smoothed = 0;
        for (int j = 0; j < d; ++j) smoothed += s.cols[j].mode != Mode::Exact;
        if (smoothed == 0 || d < 2) return Status::Ok();
        const math::ColumnParams chosen = column_params(s);
        math::ColumnParams exact = chosen;
        for (int j = 0; j < kMaxDim; ++j) exact.discrete[j] = 1;
        const double* sample = s.sample;
        // NULL (NaN) fails a constrained column and passes an unconstrained
        // one (the NotNull and Any policies of the engines).
        auto inside = [&](int64_t i, const double* lo, const double* hi) {
            for (int j = 0; j < d; ++j) {
                double v = sample[i * d + j];
                if (std::isnan(v)) {
                    if (lo[j] == -HUGE_VAL && hi[j] == HUGE_VAL) continue;
                    return false;
                }
                if (v < lo[j] || v > hi[j]) return false;
            }
            return true;
        };
        CvBoxes boxes;
        boxes.dims = d;
        std::vector<std::vector<std::vector<int64_t>>> sorted_rows(kFolds, std::vector<std::vector<int64_t>>(d));
        std::vector<std::vector<double>> col_copy(d, std::vector<double>(static_cast<size_t>(m)));
        for (int j = 0; j < d; ++j)
            for (int64_t i = 0; i < m; ++i) col_copy[j][i] = sample[i * d + j];
        for (int f = 0; f < kFolds; ++f)
            for (int j = 0; j < d; ++j) sorted_rows[f][j] = fold_sorted(col_copy[j].data(), folds, f);
        for (int f = 0; f < kFolds; ++f) {
            int got = 0;
            for (int tries = 0; got < kJointBoxesPerFold && tries < 50 * kJointBoxesPerFold; ++tries) {
                std::vector<double> lo(d, -HUGE_VAL), hi(d, HUGE_VAL);
                std::vector<int64_t> edges;
                int constrained = 0;
                for (int j = 0; j < d; ++j) {
                    if (constant[j] || rng.uniform() < 0.5) continue;
                    const std::vector<int64_t>& rows = sorted_rows[f][j];
                    if (rows.size() < 2) continue;  // (NULLs) too few values to place edges
                    const double n_f = static_cast<double>(rows.size());
                    double w = 0.05 * std::pow(0.9 / 0.05, rng.uniform());
                    double u = rng.uniform() * (1 - w);
                    size_t lo_pos = static_cast<size_t>(u * (n_f - 1));
                    size_t hi_pos = std::min(rows.size() - 1,
                                             std::max(lo_pos + 1, static_cast<size_t>((u + w) * (n_f - 1))));
                    lo[j] = col_copy[j][rows[lo_pos]];
                    hi[j] = col_copy[j][rows[hi_pos]];
                    edges.push_back(rows[lo_pos]);
                    edges.push_back(rows[hi_pos]);
                    ++constrained;
                }
                if (constrained < 2) continue;
                int64_t count = 0;
                for (int64_t i = 0; i < m; ++i) count += inside(i, lo.data(), hi.data());
                double sel = static_cast<double>(count) / static_cast<double>(m);
                if (sel < kJointMinSel || sel > kJointMaxSel) continue;
                boxes.lo.insert(boxes.lo.end(), lo.begin(), lo.end());
                boxes.hi.insert(boxes.hi.end(), hi.begin(), hi.end());
                boxes.fold.push_back(f);
                boxes.edges.push_back(edges);
                ++got;
            }
        }
        if (boxes.size() < 20) return Status::Ok();
        std::vector<unsigned char> policy(boxes.lo.size());
        for (size_t t = 0; t < policy.size(); ++t)
            policy[t] = boxes.lo[t] == -HUGE_VAL && boxes.hi[t] == HUGE_VAL ? math::kNullAny : math::kNullNotNull;
        CvResult r;
        APPROX_TRY(cross_validate(
            m, folds, boxes, 2, ctx, [&](int64_t i, size_t b) { return inside(i, &boxes.lo[b * d], &boxes.hi[b * d]); },
            [&](int64_t i, size_t b, int c) {
                double p, unused;
                math::row_terms(sample + i * d, &boxes.lo[b * d], &boxes.hi[b * d], c == 0 ? exact : chosen, d, -1,
                                &policy[b * d], p, unused);
                return p;
            },
            nullptr, [&](size_t) { return std::make_pair(int64_t{0}, m); }, r));
        Comparison plain = compare(r, 0, 0), mixed = compare(r, 1, 0);
        s.joint_cv[0] = plain.rms;
        s.joint_cv[1] = mixed.rms;
        if (mixed.mean_diff - mixed.se_diff > 0) {
            // Together the smoothed columns lose to the plain sample: exact everywhere.
            for (int j = 0; j < d; ++j) make_exact(s.cols[j]);
        }
        return Status::Ok();
    });
}

}  // namespace approx::synopsis
