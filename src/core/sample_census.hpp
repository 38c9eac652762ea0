// The take-all (census, certainty) stratum of a sample for heavy-tailed
// measures: the rows holding a measure's t largest |values| are kept whole
// (weight 1, no variance) and the ordinary sample is drawn from the other
// rows. A 1% sample rarely holds the few values that make a heavy-tailed sum;
// kept whole they no longer need estimating (Hansen, Hurwitz & Madow 1953,
// "Sample Survey Methods and Theory", certainty units; Chaudhuri, Das &
// Narasayya 2001, outlier indexing for approximate aggregation).
//
// Membership must be a fixed function of the table, never random, so that
// the design stays a stratified design with fixed strata: a row's rank is by
// |value|, ties broken by a key the caller derives from the row's identity
// (its TID, its leaf), so the same rows are chosen whatever order they are
// read in. Plain C++, no PostgreSQL.
#pragma once

#include <cstdint>
#include <vector>

namespace approx::sample {

// The census' share of the sample budget: a tenth, fixed before measuring
// (test/bench/sample_coverage_bench.cpp): the sampled strata keep 90% of
// their rows (their variance grows by ~11%) while at a 1% sample the top
// 0.1% of the table is kept whole.
constexpr double kCensusShare = 0.1;

// The census rows one measure may keep out of `budget` sample rows shared by
// `n_measures` measures: floor(share * budget / n_measures) (0 when there is
// no measure or no budget).
int64_t census_size(int64_t budget, int n_measures, double share = kCensusShare);

// One kept row: |value|, its tie-breaking key, the caller's row id and the
// value itself (census_pays needs its sign).
struct CensusEntry {
    double magnitude;
    uint64_t key;
    int64_t row;
    double value;
};

// The t rows of largest |value| seen so far, over caller-owned memory (a
// bounded min-heap of t entries: O(log t) a row; allocates nothing and
// throws nothing, so that glue whose scan may longjmp can keep `heap` in
// palloc'd memory). `n` entries are in use (start at 0). NaN (NULL) values
// never enter. Ties in |value|: the larger key wins, so the kept set is a
// function of the (value, key) pairs alone. Keys must be distinct per row.
void census_offer(CensusEntry* heap, int64_t& n, int64_t t, double value, uint64_t key, int64_t row);

// Merges census_offer heaps (a parallel scan's participants'), linear in
// the entries: census_merge_add appends e to buf (capacity cap > t, e.g.
// 2t), cutting buf back to its top t (std::nth_element) when it is full;
// census_merge_end leaves the top min(n, t) as census_offer's heap. The rows
// kept are those census_offer keeps when fed the same entries.
int64_t census_merge_add(CensusEntry* buf, int64_t n, int64_t t, int64_t cap, const CensusEntry& e);
int64_t census_merge_end(CensusEntry* buf, int64_t n, int64_t t);

// Orders n kept entries (census_offer's heap) from the highest rank down,
// so that the first t of them are the top t.
void census_sort(CensusEntry* heap, int64_t n);

// The same with its own memory.
class CensusTop {
public:
    explicit CensusTop(int64_t t);
    void offer(double value, uint64_t key, int64_t row);
    // The rows kept, in no particular order.
    std::vector<int64_t> rows() const;
    // The smallest |value| kept (the census threshold); +inf when none.
    double threshold() const;
    int64_t size() const { return n_; }

private:
    int64_t t_;
    int64_t n_ = 0;
    std::vector<CensusEntry> heap_;  // grows to t_ as rows arrive
};

// A measure's count, mean and M2 = sum (y - mean)^2 over every row
// (Welford's update; NaN, the caller's NULL, is skipped).
struct CensusSpread {
    double n = 0, mean = 0, m2 = 0;
    void add(double y);
};

// Whether a census of `top` (the n_top rows of largest |value|, out of the
// rows `all` describes) pays for itself: kept whole, the top rows no
// longer add to the variance of an estimate of the measure, but the census
// takes `share` of the budget, so the sampled rows' variance grows by
// 1 / (1 - share). It pays where the other rows' variance S^2_rest is under
// (1 - share) S^2_all: the top rows hold more than `share` of the
// measure's spread (a normal or uniform measure's top 0.1% hold ~0.3-1%, an
// exponential one's ~5%; lognormal sigma = 2 or Pareto tails most of it).
// A break-even of the measure's own variance, not a fitted threshold. False
// when n_top is 0 or there is no spread; true when the spread is not finite.
bool census_pays(const CensusSpread& all, const CensusEntry* top, int64_t n_top, double share = kCensusShare);

// A 64-bit mix of a row's identity (SplitMix64's finaliser, Steele, Lea &
// Flood 2014): the tie-breaking key of CensusTop from, e.g., a TID's
// (block << 16 | offset) and the leaf's OID.
uint64_t census_key(uint64_t identity, uint64_t salt);

}  // namespace approx::sample
