// The take-all stratum's row choice (see sample_census.hpp).
#include "core/sample_census.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace approx::sample {

int64_t census_size(int64_t budget, int n_measures, double share) {
    if (budget <= 0 || n_measures <= 0 || !(share > 0)) return 0;
    return static_cast<int64_t>(std::floor(share * static_cast<double>(budget) / n_measures));
}

CensusTop::CensusTop(int64_t t) : t_(std::max<int64_t>(0, t)) {}

void CensusTop::offer(double value, uint64_t key, int64_t row) {
    if (t_ == 0 || std::isnan(value)) return;
    const Entry e{std::fabs(value), key, row};
    // std::*_heap keep the greatest under the comparator at the front: with
    // "ranks above" as the comparator, the front is the lowest kept.
    auto above = [](const Entry& a, const Entry& b) { return lower(b, a); };
    if (static_cast<int64_t>(heap_.size()) < t_) {
        heap_.push_back(e);
        std::push_heap(heap_.begin(), heap_.end(), above);
        return;
    }
    if (!lower(heap_.front(), e)) return;
    std::pop_heap(heap_.begin(), heap_.end(), above);
    heap_.back() = e;
    std::push_heap(heap_.begin(), heap_.end(), above);
}

std::vector<int64_t> CensusTop::rows() const {
    std::vector<int64_t> out;
    out.reserve(heap_.size());
    for (const Entry& e : heap_) out.push_back(e.row);
    return out;
}

double CensusTop::threshold() const {
    return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().magnitude;
}

uint64_t census_key(uint64_t identity, uint64_t salt) {
    uint64_t z = identity + 0x9e3779b97f4a7c15ULL * (salt + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace approx::sample
