// Weighted (Horvitz-Thompson) aggregates over a stratified sample, with
// honest intervals: the sample path's COUNT / SUM / AVG and percentiles
// (plain C++ API, no PostgreSQL; the glue is src/aqp/sample/aggregates.cpp).
//
// A group's state is, per stratum s it touched, the moments of its rows
// there (rows outside the group count as y = 0 and need no state). With the
// design (N_s table rows, m_s sample rows per stratum) the estimate is
// sum_s N_s / m_s sum_{group rows} y, its variance the stratified
// sum_s N_s^2 (1 - m_s / N_s) s^2_s / m_s, s^2_s over all m_s sample rows
// of s (zeros included); AVG is the ratio SUM / COUNT (delta method).
#pragma once

#include <cstdint>

#include "core/status.hpp"

namespace approx::sample {

// n values' count, mean and central moment sums M2 = sum (y - mean)^2,
// M3 = sum (y - mean)^3, M4 = sum (y - mean)^4, updated one value at a time and merged (Pebay 2008,
// "Formulas for robust, one-pass parallel computation of covariances and
// arbitrary-order statistical moments"): stable where sum y^2 - (sum y)^2 / n
// cancels (large values, small spread).
struct Moments {
    double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;
    double sum = 0;  // the plain running sum, for the estimate: over a whole stratum the SUM is sum()'s own
    double nonzero = 0;  // values != 0: a SUM learns its spread from these alone (zero-inflated measures)
};
void add(Moments& a, double y);
void merge(Moments& a, const Moments& b);

// One stratum of the design: the table's rows N_s and the sample's m_s.
struct Stratum {
    double rows = 0;
    double sampled = 0;
};

// A group's rows in one stratum (0-based index into the design).
struct GroupPart {
    int32_t stratum = 0;
    Moments m;  // COUNT: every y = 1
};

enum class Aggregate : uint8_t { Count = 0, Sum = 1, Avg = 2 };
enum class Percentile : uint8_t { Cont = 0, Disc = 1 };

// The spread of a measure over every sample row of one stratum, whatever
// its group (the sample relation's rows of the stratum; n = 0: unknown): a
// group's few rows cannot show the tail of a heavy-tailed measure, the
// stratum's many rows can (see estimate()).
struct StratumSpread {
    double n = 0;         // values (not NULL)
    double variance = 0;  // S^2 (n - 1 denominator)
    double mean_abs = 0;  // mean of |y|
    double skewness = 0;  // g1 = (M3 / n) / (M2 / n)^1.5 (0: unknown)
};
// The spread of a stratum's values from their moments and the sum of their |y|.
StratumSpread stratum_spread(const Moments& m, double abs_sum);

struct Options {
    double confidence = 0.95;  // (0, 1)
    // SUM / AVG: per stratum of the design (n_strata entries) the measure's
    // spread over the stratum's sample rows; nullptr: none known.
    const StratumSpread* spread = nullptr;
    // Every group's rows lie in the strata where the sample saw it (GROUP BY
    // the stratify columns, or a partition key): strata it was not seen in
    // hold none of its rows. Otherwise each stratum not sampled whole may
    // hold rows of the group the sample missed, and the interval allows for
    // them (see estimate()).
    bool groups_within_strata = false;
    // percentile() only: the order is descending (ORDER BY x DESC, or USING >):
    // positions count from the largest value, NaN first, as PostgreSQL's
    // percentile_cont / _disc over ORDER BY x DESC (not f -> 1 - f, which
    // differs for _disc and for weights that are not whole numbers).
    bool descending = false;
};

struct Estimate {
    bool null = false;       // no value to aggregate (AVG of no value; exact: also SUM): SQL NULL
    double estimate = 0;
    double se = 0;           // standard error (+inf: the sample cannot bound it)
    double lower = 0, upper = 0;
    bool exact = false;      // every stratum the group may touch was sampled whole: lower = upper = estimate
    bool estimable = true;   // false: lower / upper are infinite (the sample cannot bound the answer)
    bool repeated = false;   // more rows in a stratum than the sample holds (a join repeated sample rows):
                             // the variance treats them as distinct rows
    double df = 0;           // degrees of freedom of the t quantile (0: normal)
    double skew = 0;         // the estimator's standardised skewness used by the interval
    double rows = 0;         // sample rows of the group
};

// COUNT / SUM / AVG of a group from its parts (distinct strata, any order)
// and the design (n_strata entries; a part's stratum must index it).
//   Intervals: the stratified variance above, plus for COUNT and SUM the
//   Wilson score allowance of widen_for_unseen (src/core/synopsis.cpp) per
//   stratum not sampled whole: N_s^2 (1 - f_s) / m_s max(0, p~(1 - p~) - q(1 - q)),
//   q = k_s / m_s, p~ = (k_s + z^2) / (m_s + 2 z^2), times the group's mean square
//   value in s for SUM; strata the group was not seen in get the k = 0 term
//   unless groups_within_strata (a stratum of no sample row: unbounded).
//   COUNT: estimate -/+ z se. SUM, AVG: Student-t with Satterthwaite's degrees
//   of freedom (sum a_s)^2 / sum a_s^2 / df_s over the estimated terms a_s
//   (the allowances count as known), df_s = min(k_s - 1, 2 / (2 / (m_s - 1) +
//   kappa_s / m_s)) with kappa_s the excess kurtosis of the stratum's y (the
//   variance estimate of heavy-tailed values is itself uncertain), and Hall's (1992) monotone skewness
//   correction of the studentised statistic, g(T) = T + a T^2 + a^2 T^3 / 3 + a / 2,
//   a = gamma / 3, gamma the estimator's skewness from the third moments
//   (kappa_3 = sum_s (N_s / m_s)^3 (1 - f_s)(1 - 2 f_s) M3_s). AVG (R = SUM / COUNT)
//   linearises y = d (v - R). When every value seen is equal the spread says
//   nothing: SUM keeps the allowance (scaled by the value), AVG gets
//   |R| sqrt(sum of the allowances) / COUNT, and a group whose values are all 0
//   cannot be bounded (estimable = false). COUNT intervals start at 0.
//   AVG's term of a stratum is times k_s / (k_s - 1) (small domains); for SUM
//   and AVG df_s counts only values != 0. Few values: where the strata not
//   sampled whole hold at most one value of the group (SUM: one != 0), the
//   interval is (-inf, inf) (estimable = false); no value at all: SUM 0, AVG
//   null, (-inf, inf); null with exact only where every stratum the group may
//   touch was sampled whole (a part with m.n = 0, rows of NULL values, marks
//   its stratum as one the group touches).
//   The stratum's spread (opt.spread, SUM and AVG): a group's k_s values of
//   a heavy-tailed measure usually miss its tail, so their s^2 is usually far
//   below the variance they were drawn with, and no interval from them alone
//   can be honest (Bahadur & Savage). Where the stratum's sample holds more
//   values than the group, the group's variance is taken as at least the
//   stratum's relative variance at the group's scale, CV_s^2 * ms_g with
//   CV_s^2 = S_s^2 / mean|y|_s^2 and ms_g the group's mean square: groups
//   assumed to share the measure's shape up to scale (a group whose values
//   are less spread than the stratum's gets a wider interval than it needs:
//   the price of borrowing the tail). Skewness is part of that shape: where
//   the stratum's |g1| exceeds the group's, the group's third moment is
//   raised to the stratum's g1 at the group's (raised) spread, which the
//   skewness correction then reads (a right tail the group's rows missed
//   moves the upper bound up, not the lower one down).
// InvalidArgument for a part outside the design or a bad confidence.
Status estimate(Aggregate agg, const Stratum* design, int32_t n_strata, const GroupPart* parts, int32_t n_parts,
                const Options& opt, Estimate& out);

// One value of a percentile's group and the stratum of its row.
struct WeightedValue {
    double value;
    int32_t stratum;
};

// The weighted percentile at `fraction` of a group's n values (weight
// N_s / m_s of the value's stratum); rows are sorted in place (by value, NaN
// last as in ORDER BY; opt.descending: largest first, NaN first, as ORDER BY
// x DESC, and every position below counts in that order). Cont: position h = f (W - 1) of
// the weighted order statistics (value i covers positions [C_{i-1}, C_i),
// C the cumulative weight, W the total), linear between floor(h) and
// ceil(h) as percentile_cont (equal weights 1 give exactly percentile_cont);
// Disc: the first value whose cumulative weight is >= f W (percentile_disc).
// Interval (Woodruff 1952): the standard error of the estimated CDF at the
// percentile (stratified, linearised d (1{y <= q} - f)), a Wilson score
// interval [p_L, p_U] for f at the effective sample size f (1 - f) / V, mapped
// back to the values conservatively: lower = the largest value with
// cumulative weight <= p_L W (none: -inf), upper = the smallest with
// cumulative weight before it >= p_U W (none: +inf); descending, those two
// values of the order are the upper and the lower bound. n = 0: null, exact when
// every stratum was sampled whole, else not estimable with (-inf, inf).
Status percentile(Percentile kind, double fraction, const Stratum* design, int32_t n_strata, WeightedValue* rows,
                  int64_t n, const Options& opt, Estimate& out);

// Student-t quantile t_df(p), p in (0, 1), df > 0 (df = +inf: normal).
double student_t_quantile(double p, double df);

// Groups a sample never saw, from the groups it saw exactly once (f1) and
// exactly twice (f2): the bias-corrected Chao1 estimator f1 (f1 - 1) /
// (2 (f2 + 1)) (Chao 1984; Chao 2005, "Species estimation and applications").
// A lower bound in expectation: rare groups leave few singletons to count.
double unseen_groups(int64_t f1, int64_t f2);

}  // namespace approx::sample
