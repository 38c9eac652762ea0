// Binned plug-in pair sums (kde_internal.hpp, binned_psi_sums): the sums
// over all ordered pairs of sum_i sum_j K_r((z_i - z_j) / g) computed on
// linearly binned data (Wand 1994; Fan & Marron 1994), for synopsis builds,
// which must cost what they read (O(n) + O(bins), never O(n^2)).
//
// Each stage bins z anew on a grid of step delta = g / kBinsPerBandwidth:
// a point at grid position k + f gives weight 1 - f to bin k and f to k + 1.
// The sum is then sum_k sum_l w_k w_l K_r((k - l) delta / g) over occupied
// bins, truncated at |k - l| delta > kReach g, where K_r is below 1e-16 of
// its peak. The grid's step is tied to g, not to the data's range, so the
// error does not depend on the data's shape: heavy tails only add empty
// bins, which are never visited (the grid is sparse: a sorted copy of z when
// a dense grid would be too large). Measured against the exact sums
// (test/unit/kde_test.cpp, KdeBinned.*): bandwidths within 1e-4 relative on
// normal, lognormal, heaped and point-mass data.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kde_internal.hpp"

namespace approx::kde::detail {

namespace {

constexpr int kBinsPerBandwidth = 64;
constexpr double kReach = 10.0;                    // K_r(10) phi-factor: 7.7e-23 x 10^6 at most

struct Bin {
    int64_t index;
    double weight;
};

class BinnedPsi final : public PsiSums {
public:
    BinnedPsi(const double* z, size_t n, const ExecContext& ctx, size_t max_dense_bins)
        : z_(z), n_(n), ctx_(ctx), max_dense_bins_(max_dense_bins) {
        lo_ = hi_ = n > 0 ? z[0] : 0.0;
        for (size_t i = 0; i < n; ++i) {
            lo_ = std::min(lo_, z[i]);
            hi_ = std::max(hi_, z[i]);
        }
    }

    Status sum(int r, double g, double& out) override {
        if (r != 2 && r != 4 && r != 6) return Status::Error(StatusCode::Internal, "psi order %d not supported", r);
        if (!(g > 0) || !std::isfinite(g)) return Status::Error(StatusCode::InvalidArgument, "g must be positive");
        const double delta = g / kBinsPerBandwidth;
        APPROX_TRY(bin(delta));
        const int64_t reach = static_cast<int64_t>(std::ceil(kReach * kBinsPerBandwidth));
        std::vector<double> kernel(static_cast<size_t>(reach) + 1);
        for (int64_t d = 0; d <= reach; ++d) {
            const double u = static_cast<double>(d) / kBinsPerBandwidth;
            kernel[d] = hermite(r, u * u) * kPhi0 * std::exp(-0.5 * u * u);
        }
        double self = 0, cross = 0;
        const size_t nb = bins_.size();
        for (size_t i = 0; i < nb; ++i) {
            if ((i & 0xffff) == 0 && ctx_.cancelled()) return cancelled_status();
            const Bin& a = bins_[i];
            self += a.weight * a.weight;
            double row = 0;
            for (size_t j = i + 1; j < nb && bins_[j].index - a.index <= reach; ++j)
                row += bins_[j].weight * kernel[bins_[j].index - a.index];
            cross += a.weight * row;
        }
        out = self * kernel[0] + 2.0 * cross;
        return Status::Ok();
    }

private:
    // bins_: the occupied bins of the grid lo_ + k delta, by index.
    Status bin(double delta) {
        bins_.clear();
        const double span = (hi_ - lo_) / delta;
        if (span + 2 <= static_cast<double>(max_dense_bins_)) {
            std::vector<double> w(static_cast<size_t>(span) + 2, 0.0);
            for (size_t i = 0; i < n_; ++i) {
                const double pos = (z_[i] - lo_) / delta;
                const size_t k = std::min(static_cast<size_t>(pos), w.size() - 2);
                const double f = pos - static_cast<double>(k);
                w[k] += 1.0 - f;
                w[k + 1] += f;
            }
            for (size_t k = 0; k < w.size(); ++k)
                if (w[k] != 0) bins_.push_back({static_cast<int64_t>(k), w[k]});
            return Status::Ok();
        }
        // Sparse: the points in order, each adding to bins k and k + 1 with k
        // non-decreasing, so a bin is complete once k has passed it.
        if (sorted_.empty()) {
            sorted_.assign(z_, z_ + n_);
            std::sort(sorted_.begin(), sorted_.end());
            if (ctx_.cancelled()) return cancelled_status();
        }
        auto add = [&](int64_t k, double w) {
            for (size_t b = bins_.size(); b > 0 && bins_[b - 1].index >= k; --b)
                if (bins_[b - 1].index == k) return void(bins_[b - 1].weight += w);
            // k is new: it belongs after every index below it (at most the
            // last entry, index k + 1 of the previous point, lies above).
            if (!bins_.empty() && bins_.back().index > k)
                bins_.insert(bins_.end() - 1, Bin{k, w});
            else
                bins_.push_back({k, w});
        };
        for (double v : sorted_) {
            const double pos = (v - lo_) / delta;
            const int64_t k = static_cast<int64_t>(pos);
            const double f = pos - static_cast<double>(k);
            add(k, 1.0 - f);
            add(k + 1, f);
        }
        return Status::Ok();
    }

    const double* z_;
    size_t n_;
    const ExecContext& ctx_;
    size_t max_dense_bins_;
    double lo_, hi_;
    std::vector<double> sorted_;
    std::vector<Bin> bins_;
};

}  // namespace

Status binned_psi_sums_capped(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out,
                       size_t max_dense_bins) {
    out.reset(new BinnedPsi(z, n, ctx, max_dense_bins));
    return Status::Ok();
}

Status binned_psi_sums(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out) {
    return binned_psi_sums_capped(z, n, ctx, out, kMaxDenseBins);
}

}  // namespace approx::kde::detail
