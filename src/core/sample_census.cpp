// The take-all stratum's row choice (see sample_census.hpp).
#include "core/sample_census.hpp"

#include "core/bottom_k.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace approx::sample {

int64_t census_size(int64_t budget, int n_measures, double share) {
    if (budget <= 0 || n_measures <= 0 || !(share > 0)) return 0;
    return static_cast<int64_t>(std::floor(share * static_cast<double>(budget) / n_measures));
}

namespace {

bool ranks_below(const CensusEntry& a, const CensusEntry& b) {
    return a.magnitude != b.magnitude ? a.magnitude < b.magnitude : a.key < b.key;
}
// std::*_heap keep the greatest under the comparator at the front: with
// "ranks above" as the comparator, the front is the lowest kept.
bool ranks_above(const CensusEntry& a, const CensusEntry& b) { return ranks_below(b, a); }

}  // namespace

void census_offer(CensusEntry* heap, int64_t& n, int64_t t, double value, uint64_t key, int64_t row) {
    if (t <= 0 || std::isnan(value)) return;
    const CensusEntry e{std::fabs(value), key, row, value};
    if (n < t) {
        heap[n++] = e;
        std::push_heap(heap, heap + n, ranks_above);
        return;
    }
    if (!ranks_below(heap[0], e)) return;
    std::pop_heap(heap, heap + n, ranks_above);
    heap[n - 1] = e;
    std::push_heap(heap, heap + n, ranks_above);
}

int64_t census_merge_add(CensusEntry* buf, int64_t n, int64_t t, int64_t cap, const CensusEntry& e) {
    if (t <= 0 || std::isnan(e.value)) return n;
    return keep_first_add(buf, n, t, cap, e, ranks_above);
}

int64_t census_merge_end(CensusEntry* buf, int64_t n, int64_t t) {
    n = keep_first(buf, n, std::max<int64_t>(t, 0), ranks_above);
    std::make_heap(buf, buf + n, ranks_above);
    return n;
}

void census_sort(CensusEntry* heap, int64_t n) {
    if (n > 1) std::sort(heap, heap + n, ranks_above);
}

CensusTop::CensusTop(int64_t t) : t_(std::max<int64_t>(0, t)) {}

void CensusTop::offer(double value, uint64_t key, int64_t row) {
    if (n_ < t_ && n_ == static_cast<int64_t>(heap_.size())) heap_.push_back(CensusEntry{0, 0, 0, 0});
    census_offer(heap_.data(), n_, t_, value, key, row);
}

std::vector<int64_t> CensusTop::rows() const {
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) out.push_back(heap_[i].row);
    return out;
}

double CensusTop::threshold() const {
    return n_ == 0 ? std::numeric_limits<double>::infinity() : heap_[0].magnitude;
}

void CensusSpread::add(double y) {
    if (std::isnan(y)) return;
    n += 1;
    const double delta = y - mean;
    mean += delta / n;
    m2 += delta * (y - mean);
}

bool census_pays(const CensusSpread& all, const CensusEntry* top, int64_t n_top, double share) {
    if (n_top <= 0 || top == nullptr || !(all.n > 1)) return false;
    if (!std::isfinite(all.m2) || !std::isfinite(all.mean)) return true;
    if (!(all.m2 > 0)) return false;
    // The rest's moments about the overall mean: sum (y - mean) and
    // sum (y - mean)^2 of the top subtracted from the whole's (0 and M2).
    double k = 0, d1 = 0, d2 = 0;
    for (int64_t i = 0; i < n_top; ++i) {
        if (std::isnan(top[i].value)) continue;
        const double d = top[i].value - all.mean;
        k += 1;
        d1 += d;
        d2 += d * d;
    }
    const double n_rest = all.n - k;
    if (n_rest <= 1) return true;  // the census would hold (nearly) every row
    const double m2_rest = std::max(0.0, (all.m2 - d2) - d1 * d1 / n_rest);
    const double s2_all = all.m2 / (all.n - 1), s2_rest = m2_rest / (n_rest - 1);
    return s2_rest < (1 - share) * s2_all;
}

uint64_t census_key(uint64_t identity, uint64_t salt) {
    uint64_t z = identity + 0x9e3779b97f4a7c15ULL * (salt + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace approx::sample
