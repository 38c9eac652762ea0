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
constexpr int64_t kJointRows = 20000;  // the joint check's rows at most (a systematic subsample)
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

// out sized for nb boxes and cands candidates, every entry 0.
void reset_result(CvResult& out, size_t nb, int cands) {
    out.cands = cands;
    out.a.assign(nb * cands, 0);
    out.se.assign(nb * cands, 0);
    out.t.assign(nb, 0);
    out.se_t.assign(nb, 0);
    out.p.assign(nb, 0);
}

// One box's result from its sums over all rows (s_all, ss_all per
// candidate) and over its held-out fold (s_f, ss_f); edge_in(e): does edge
// row e lie in the box.
template <class EdgeIn>
void finish_box(int64_t m, const Folds& folds, const CvBoxes& boxes, size_t b, int cands, double exact_all,
                double exact_f, const double* s_all, const double* ss_all, const double* s_f, const double* ss_f,
                EdgeIn edge_in_box, CvResult& out) {
    const int f = boxes.fold[b];
    // The edge rows (distinct) leave the held-out count.
    std::vector<int64_t> edges = boxes.edges[b];
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    double edge_in = 0;
    for (int64_t e : edges)
        if (edge_in_box(e)) edge_in += 1;
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
}

// Row by row over all m rows (the joint check's multi-column boxes; 1-D
// boxes: cross_validate_1d). in(i, b): row i lies in box b exactly;
// mass(i, b, c): candidate c's mass of row i in box b (candidate 0 is the
// exact indicator).
template <class In, class Mass>
Status cross_validate(int64_t m, const Folds& folds, const CvBoxes& boxes, int cands, const ExecContext& ctx, In in,
                      Mass mass, CvResult& out) {
    const size_t nb = boxes.size();
    reset_result(out, nb, cands);
    return parallel_for(ctx, nb, [&](size_t b, size_t) -> Status {
        if (ctx.cancelled()) return cancelled_status();
        const int f = boxes.fold[b];
        double s_all[kModes + 1] = {0}, ss_all[kModes + 1] = {0}, s_f[kModes + 1] = {0}, ss_f[kModes + 1] = {0};
        double exact_all = 0, exact_f = 0;
        for (int64_t i = 0; i < m; ++i) {
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
        finish_box(m, folds, boxes, b, cands, exact_all, exact_f, s_all, ss_all, s_f, ss_f,
                   [&](int64_t e) { return in(e, b); }, out);
        return Status::Ok();
    });
}

// cross_validate's sums for the 1-D boxes of one column, at a cost that does
// not grow with the rows in a box: the exact candidate (0) counts rows by
// binary search in each fold's sorted values; a smoothed candidate groups
// the rows, in value order, into runs no wider than h / kCvGroupsPerBandwidth
// on its smoothing scale, and one mass, at the run's mean, stands for each
// of its rows (the midpoint rule: an error of order (1/64)^2 of the mass's
// curvature). Runs farther than kCvReach bandwidths from both edges of a box
// have mass 0 (outside) or 1 (inside), within 1e-23 (kReflectedCut = 9 <
// kCvReach), and are counted from prefix sums per fold. x[order[k]] is
// non-decreasing in k.
constexpr int kCvGroupsPerBandwidth = 64;
constexpr double kCvReach = 12.0;

struct ValueRuns {
    std::vector<double> y_min, y_max;  // the run's range on the smoothing scale
    std::vector<double> x;             // where its mass is taken (the mean on that scale, mapped back)
    std::vector<int64_t> prefix;       // (run + 1) * kFolds + f: rows of fold f in runs [0, run]
};

ValueRuns value_runs(const double* x, const int64_t* order, int64_t m, const Folds& folds,
                     const math::ColumnParams& cp, int c) {
    ValueRuns r;
    const double step = cp.h[c] / kCvGroupsPerBandwidth;
    auto scale = [&](double v) { return cp.transform[c] ? math::log_scale(v, cp.shift[c]) : v; };
    std::vector<int64_t> count(kFolds, 0);
    r.prefix.assign(kFolds, 0);
    double start = 0, sum = 0, last = 0;
    int64_t n = 0;
    auto close = [&]() {
        if (n == 0) return;
        const double mean = sum / static_cast<double>(n);
        r.y_min.push_back(start);
        r.y_max.push_back(last);
        r.x.push_back(cp.transform[c] ? std::exp(mean) - cp.shift[c] : mean);
        for (int f = 0; f < kFolds; ++f) r.prefix.push_back(r.prefix[r.prefix.size() - kFolds] + count[f]);
        std::fill(count.begin(), count.end(), 0);
        sum = 0;
        n = 0;
    };
    for (int64_t k = 0; k < m; ++k) {
        const int64_t i = order[k];
        const double y = scale(x[i]);
        if (n > 0 && y - start > step) close();
        if (n == 0) start = y;
        last = y;
        sum += y;
        ++n;
        ++count[folds.of[i]];
    }
    close();
    return r;
}

Status cross_validate_1d(const double* x, const int64_t* order, int64_t m, const Folds& folds, const CvBoxes& boxes,
                         int cands, const math::ColumnParams& cp, const ExecContext& ctx, CvResult& out) {
    const size_t nb = boxes.size();
    reset_result(out, nb, cands);
    std::vector<std::vector<double>> fold_values(kFolds);
    for (int64_t k = 0; k < m; ++k) fold_values[folds.of[order[k]]].push_back(x[order[k]]);
    std::vector<ValueRuns> runs(static_cast<size_t>(cands));
    for (int c = 1; c < cands; ++c) runs[c] = value_runs(x, order, m, folds, cp, c);
    if (ctx.cancelled()) return cancelled_status();
    return parallel_for(ctx, nb, [&](size_t b, size_t) -> Status {
        if (ctx.cancelled()) return cancelled_status();
        const int f = boxes.fold[b];
        const double lo = boxes.lo[b], hi = boxes.hi[b];
        double s_all[kModes + 1] = {0}, ss_all[kModes + 1] = {0}, s_f[kModes + 1] = {0}, ss_f[kModes + 1] = {0};
        double exact_all = 0, exact_f = 0;
        for (int g = 0; g < kFolds; ++g) {
            const std::vector<double>& v = fold_values[g];
            const double in = static_cast<double>(std::upper_bound(v.begin(), v.end(), hi) -
                                                  std::lower_bound(v.begin(), v.end(), lo));
            exact_all += in;
            if (g == f) exact_f = in;
        }
        s_all[0] = ss_all[0] = exact_all;
        s_f[0] = ss_f[0] = exact_f;
        for (int c = 1; c < cands; ++c) {
            const ValueRuns& r = runs[c];
            const double reach = kCvReach * cp.h[c];
            const double lo_y = cp.transform[c] ? math::log_scale(lo, cp.shift[c]) : lo;
            const double hi_y = cp.transform[c] ? math::log_scale(hi, cp.shift[c]) : hi;
            auto first_reaching = [&](double y) {  // first run with y_max >= y
                return static_cast<size_t>(std::lower_bound(r.y_max.begin(), r.y_max.end(), y) - r.y_max.begin());
            };
            auto first_beyond = [&](double y) {  // first run with y_min > y
                return static_cast<size_t>(std::upper_bound(r.y_min.begin(), r.y_min.end(), y) - r.y_min.begin());
            };
            size_t a0 = first_reaching(lo_y - reach), a1 = first_beyond(lo_y + reach);
            size_t b0 = first_reaching(hi_y - reach), b1 = first_beyond(hi_y + reach);
            auto add_runs = [&](size_t from, size_t to) {
                for (size_t k = from; k < to; ++k) {
                    double p, unused;
                    math::column_mass(r.x[k], lo, hi, cp, c, false, p, unused);
                    const int64_t* before = &r.prefix[k * kFolds];
                    const int64_t* after = &r.prefix[(k + 1) * kFolds];
                    double rows = 0;
                    for (int g = 0; g < kFolds; ++g) rows += static_cast<double>(after[g] - before[g]);
                    const double held = static_cast<double>(after[f] - before[f]);
                    s_all[c] += rows * p;
                    ss_all[c] += rows * p * p;
                    s_f[c] += held * p;
                    ss_f[c] += held * p * p;
                }
            };
            if (a1 >= b0) {  // the edges' reaches overlap: one stretch of runs
                add_runs(a0, std::max(a1, b1));
            } else {
                add_runs(a0, a1);
                add_runs(b0, b1);
                // Runs between the reaches lie inside, far from both edges: mass 1.
                double rows = 0, held = 0;
                for (int g = 0; g < kFolds; ++g) {
                    const double n = static_cast<double>(r.prefix[b0 * kFolds + g] - r.prefix[a1 * kFolds + g]);
                    rows += n;
                    if (g == f) held = n;
                }
                s_all[c] += rows;
                ss_all[c] += rows;
                s_f[c] += held;
                ss_f[c] += held;
            }
        }
        finish_box(m, folds, boxes, b, cands, exact_all, exact_f, s_all, ss_all, s_f, ss_f,
                   [&](int64_t e) { return x[e] >= lo && x[e] <= hi; }, out);
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

// One column's guard: exact vs smoothed on 1-D boxes (choose_modes). x: the
// column's m rows in the common folds (NaN = NULL); u: its 2 kFolds
// kBoxesPerFold uniforms for the boxes' widths and positions. The rows are
// sorted once, by value then row: that order gives the sorted values, each
// fold's sorted rows (the box edges) and cross_validate_1d's order.
static Status guard_column(Column& col, const double* x, int64_t m, const Folds& folds, const double* u,
                           const ExecContext& ctx) {
    // A column with NULLs is cross-validated on its non-NULL rows
    // (compacted, each in the fold of its row).
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
        x = compact.data();
        fp = &column_folds;
    }
    const Folds& cfolds = *fp;
    std::vector<int64_t> order(static_cast<size_t>(m));
    {
        std::vector<std::pair<double, int64_t>> keyed(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) keyed[i] = {x[i], i};
        std::sort(keyed.begin(), keyed.end());
        for (int64_t i = 0; i < m; ++i) order[i] = keyed[i].second;
    }
    if (ctx.cancelled()) return cancelled_status();
    std::vector<double> sorted(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) sorted[i] = x[order[i]];
    const double shift = log_shift(sorted);
    std::vector<double>().swap(sorted);
    std::vector<double> t(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) t[i] = std::log(x[i] + shift);
    // The log scale's bandwidth: the same cdf plug-in on t. Where it
    // cannot be computed the log candidate is simply not offered.
    double log_h = 0;
    Status st =
        kde::plugin_bandwidth_binned(t.data(), static_cast<size_t>(m), kde::PluginTarget::Distribution, ctx, log_h);
    std::vector<double>().swap(t);
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

    // Boxes per fold, edges at held-out values (the fold's rows in value order).
    CvBoxes boxes;
    boxes.dims = 1;
    std::vector<std::vector<int64_t>> fold_rows(kFolds);
    for (int f = 0; f < kFolds; ++f) fold_rows[f].reserve(cfolds.rows[f].size());
    for (int64_t r : order) fold_rows[cfolds.of[r]].push_back(r);
    for (int f = 0; f < kFolds; ++f) {
        const std::vector<int64_t>& rows = fold_rows[f];
        const double n_f = static_cast<double>(rows.size());
        for (int k = 0; k < kBoxesPerFold; ++k, u += 2) {
            double w = kMinWidth * std::pow(kMaxWidth / kMinWidth, u[0]);
            double at = u[1] * (1 - w);
            size_t lo_pos = static_cast<size_t>(at * (n_f - 1));
            size_t hi_pos = std::max(lo_pos + 1, static_cast<size_t>((at + w) * (n_f - 1)));
            hi_pos = std::min(hi_pos, rows.size() - 1);
            boxes.lo.push_back(x[rows[lo_pos]]);
            boxes.hi.push_back(x[rows[hi_pos]]);
            boxes.fold.push_back(f);
            boxes.edges.push_back({rows[lo_pos], rows[hi_pos]});
        }
    }
    std::vector<std::vector<int64_t>>().swap(fold_rows);
    CvResult r;
    APPROX_TRY(cross_validate_1d(x, order.data(), m, cfolds, boxes, cands, cp, ctx, r));
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
    return Status::Ok();
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
        // The columns are independent: they run in parallel, each with its
        // share of the threads. The random box positions are drawn here, in
        // column order, so that the decisions do not depend on the threads.
        std::vector<int> guarded_cols;
        std::vector<std::vector<double>> uniforms(d);
        for (int j = 0; j < d; ++j) {
            if (constant[j]) continue;
            const double* x = columns[j];
            std::vector<int64_t> per_fold(kFolds, 0);
            int64_t values = 0;
            for (int64_t i = 0; i < m; ++i)
                if (!std::isnan(x[i])) {
                    ++per_fold[folds.of[i]];
                    ++values;
                }
            bool enough = values == m || values >= kMinRows;
            for (int64_t n : per_fold) enough = enough && (values == m || n >= 3);
            if (!enough) continue;  // too little evidence: exact
            guarded_cols.push_back(j);
            uniforms[j].resize(2 * kFolds * kBoxesPerFold);
            for (double& u : uniforms[j]) u = rng.uniform();
        }
        const int n_guarded = static_cast<int>(guarded_cols.size());
        ExecContext col_ctx = ctx;
        col_ctx.stats = nullptr;
        col_ctx.cpu_threads = std::max(1, ctx.cpu_threads / std::max(1, n_guarded));
        ExecContext outer_ctx = ctx;
        outer_ctx.cpu_threads = std::min(std::max(1, ctx.cpu_threads), std::max(1, n_guarded));
        std::vector<Status> column_status(static_cast<size_t>(n_guarded));
        APPROX_TRY(parallel_for(outer_ctx, static_cast<size_t>(n_guarded), [&](size_t task, size_t) -> Status {
            column_status[task] = guard_column(s.cols[guarded_cols[task]], columns[guarded_cols[task]], m, folds,
                                               uniforms[guarded_cols[task]].data(), col_ctx);
            return Status::Ok();
        }));
        for (const Status& st : column_status) APPROX_TRY(st);

        // ---- joint check on multi-column boxes: the chosen modes against the plain sample
        int smoothed = 0;
        for (int j = 0; j < d; ++j) smoothed += s.cols[j].mode != Mode::Exact;
        if (smoothed == 0 || d < 2) return Status::Ok();
        const math::ColumnParams chosen = column_params(s);
        math::ColumnParams exact = chosen;
        for (int j = 0; j < kMaxDim; ++j) exact.discrete[j] = 1;
        // It reads at most kJointRows rows, a systematic subsample in folds
        // of its own: its boxes and their cross-validation are O(rows) each,
        // and a build must not cost more than what it reads.
        const double* sample = s.sample;
        int64_t mj = s.m;
        std::vector<double> sub;
        Folds sub_folds;
        const Folds* jf = &folds;
        if (mj > kJointRows) {
            sub.resize(static_cast<size_t>(kJointRows) * d);
            for (int64_t k = 0; k < kJointRows; ++k) {
                const int64_t row = (k * s.m) / kJointRows;
                std::copy(s.sample + row * d, s.sample + (row + 1) * d, &sub[k * d]);
            }
            sample = sub.data();
            mj = kJointRows;
            sub_folds = make_folds(mj, rng);
            jf = &sub_folds;
        }
        const Folds& fj = *jf;
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
        std::vector<std::vector<double>> col_copy(d, std::vector<double>(static_cast<size_t>(mj)));
        for (int j = 0; j < d; ++j)
            for (int64_t i = 0; i < mj; ++i) col_copy[j][i] = sample[i * d + j];
        for (int f = 0; f < kFolds; ++f)
            for (int j = 0; j < d; ++j) sorted_rows[f][j] = fold_sorted(col_copy[j].data(), fj, f);
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
                for (int64_t i = 0; i < mj; ++i) count += inside(i, lo.data(), hi.data());
                double sel = static_cast<double>(count) / static_cast<double>(mj);
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
            mj, fj, boxes, 2, ctx, [&](int64_t i, size_t b) { return inside(i, &boxes.lo[b * d], &boxes.hi[b * d]); },
            [&](int64_t i, size_t b, int c) {
                double p, unused;
                math::row_terms(sample + i * d, &boxes.lo[b * d], &boxes.hi[b * d], c == 0 ? exact : chosen, d, -1,
                                &policy[b * d], p, unused);
                return p;
            },
            r));
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
