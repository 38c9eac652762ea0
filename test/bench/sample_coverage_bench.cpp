// Coverage of the sample path's 95% intervals (core/sample_estimate.hpp) on
// heavy-tailed measures: per repetition a fresh population of N rows is
// drawn, a 1% stratified sample taken without replacement, and each group's
// COUNT / SUM / AVG interval checked against the population's exact answer.
// Not a timed test; docs/benchmarks.md "Sample path: interval coverage on
// heavy tails" holds its table.
//
//   build/sample_coverage_bench [reps_1e5=300] [reps_1e6=40] [shapes=all]
//                               [designs=all] [census_share=0.1]
// (shapes: the digits of those to run, 0 normal .. 5 huge outliers; designs:
// digits 0 unstratified .. 4 census + strata = groups, 5 the builder's
// default: census where census_pays, else unstratified; reps 0 skips a size;
// COVERAGE_RAW=1 adds each configuration's counts, to pool split runs;
// WIDTH=1 adds AVG's median relative half-width to the table by k;
// NO_SPREAD=1 leaves out the stratum's spread, as for an expression).
// docs/benchmarks.md used 200 and 20.
// Query shapes: one group (a WHERE passing 20% of the rows), 10 and 100 groups
// (Zipf(1) sizes: the smallest of 100 holds ~0.2% of the rows). Designs:
// unstratified; 8 strata whose values scale with the stratum (sizes halving,
// 1% each with at least 30 rows); strata = the groups (groups_within_strata,
// the stratify-on-GROUP-BY case); census: the rows of the kCensusShare (10%)
// of the budget largest |value| (core/sample_census.hpp) kept whole as a
// stratum of their own, the rest a uniform sample of the other rows (alone,
// and with strata = groups); the default: the census where census_pays
// accepts the population's measure (the rule create_synopsis applies with
// census => NULL), else unstratified. Seeds: population and sample seed = rep.
// A group the sample missed (no row) is counted apart ("missed"): SQL returns
// no row for it in a GROUP BY; coverage is over the groups returned (plus, in
// one-group queries, the empty answer, which SQL does return). Unbounded
// intervals (+-inf: the sample cannot bound the answer) cover, and are
// counted apart ("unbounded"). Each stratum's spread over all its sample
// rows goes to the estimator (Options::spread), as the sample path passes it
// for an aggregate of a column.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/sample_census.hpp"
#include "core/sample_estimate.hpp"

using namespace approx;
using namespace approx::sample;

namespace {

enum Shape { Normal, Lognormal2, Pareto11, Pareto15, ZeroInflated, Outliers, kShapes };
const char* kShapeName[kShapes] = {"normal", "lognormal s=2", "pareto a=1.1", "pareto a=1.5", "95% zeros",
                                   "huge outliers"};

double draw(Shape shape, std::mt19937_64& rng, double scale) {
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> nd(0, 1);
    switch (shape) {
        case Normal: return scale * (100 + 20 * nd(rng));
        case Lognormal2: return scale * std::exp(2 * nd(rng));
        case Pareto11: return scale * std::pow(1 - u(rng), -1 / 1.1);
        case Pareto15: return scale * std::pow(1 - u(rng), -1 / 1.5);
        case ZeroInflated: return u(rng) < 0.95 ? 0 : scale * std::exp(1.5 * nd(rng));
        default:  // normal body, 1 row in 20,000 a million times larger
            return u(rng) < 5e-5 ? scale * 1e8 : scale * (100 + 20 * nd(rng));
    }
}

double census_share = kCensusShare;  // argv[5]: the sensitivity check only

enum Design { Unstratified, ValueStrata, GroupStrata, Census, CensusGroups, Default, kDesigns };
const char* kDesignName[kDesigns] = {"unstratified", "8 value strata", "strata = groups", "census",
                                     "census + strata = groups", "default (census where it pays)"};

struct Tally {
    long covered = 0, total = 0, unbounded = 0;
    std::vector<float> width;  // relative half-widths of the bounded intervals (WIDTH=1 prints AVG's median per k)
    void add(const Estimate& e, double truth) {
        ++total;
        if (e.estimable && truth != 0) width.push_back(static_cast<float>((e.upper - e.lower) / 2 / std::fabs(truth)));
        if (!e.estimable) ++unbounded;
        if (e.lower <= truth && truth <= e.upper) ++covered;
    }
    double rate() const { return total ? static_cast<double>(covered) / total : NAN; }
};

// Buckets of a group's sample rows k: 0, 1, 2, 3-5, 6-10, 11-30, 31-100, > 100.
constexpr int kBuckets = 8;
const char* kBucketName[kBuckets] = {"0", "1", "2", "3-5", "6-10", "11-30", "31-100", ">100"};
int bucket_of(double k) {
    return k < 1 ? 0 : k < 2 ? 1 : k < 3 ? 2 : k <= 5 ? 3 : k <= 10 ? 4 : k <= 30 ? 5 : k <= 100 ? 6 : 7;
}

struct Result {
    Tally agg[3];
    Tally by_rows[3][kBuckets];
    long groups = 0, missed = 0;
};

// One repetition: population, sample, per-group estimates.
void run_once(Shape shape, Design design, int64_t N, int n_groups, uint64_t seed, Result& res) {
    std::mt19937_64 rng(seed * 7919 + shape * 131 + design * 17 + n_groups);
    std::uniform_real_distribution<double> u(0, 1);
    const bool single = n_groups == 1;
    // Group of a row: one group = the 20% a WHERE passes (-1: filtered out);
    // otherwise Zipf(1) over n_groups.
    std::vector<double> cdf(n_groups);
    double h = 0;
    for (int g = 0; g < n_groups; ++g) cdf[g] = (h += 1.0 / (g + 1));
    for (double& c : cdf) c /= h;
    const bool census = design == Census || design == CensusGroups || design == Default;
    // census: stratum 0 = the rest, the last = the census; census + groups: the groups, then the census
    const int n_strata = design == Unstratified ? 1
                         : design == ValueStrata ? 8
                         : design == GroupStrata ? n_groups
                         : design == Census || design == Default ? 2
                                                                 : n_groups + 1;
    std::vector<std::vector<int64_t>> rows_of(n_strata);
    std::vector<int> stratum_of(N);
    std::vector<double> value(N);
    std::vector<int> group(N);
    std::vector<double> truth_n(n_groups, 0), truth_sum(n_groups, 0);
    for (int64_t i = 0; i < N; ++i) {
        int g;
        if (single)
            g = u(rng) < 0.2 ? 0 : -1;
        else
            g = static_cast<int>(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
        g = std::min(g, n_groups - 1);
        // value strata: sizes halving (stratum s holds ~2^-(s+1)), values scaled by 1 + s
        int s = 0;
        if (design == ValueStrata) {
            double r = u(rng);
            while (s < 7 && r < 0.5) {
                ++s;
                r *= 2;
            }
        } else if (design == GroupStrata || design == CensusGroups) {
            s = std::max(g, 0);
        }
        value[i] = draw(shape, rng, design == ValueStrata ? 1 + s : 1);
        group[i] = g;
        stratum_of[i] = s;
        if (g >= 0) {
            truth_n[g] += 1;
            truth_sum[g] += value[i];
        }
    }
    // Census (core/sample_census.hpp, as a build would choose it): the t rows
    // of largest |value|, ties by a key of the row's identity; t =
    // kCensusShare of the unstratified budget round(0.01 N), one measure.
    const double budget = std::round(0.01 * static_cast<double>(N));
    if (census) {
        // The default: an empty census stratum (no row, none sampled: the
        // estimator skips it) where the rule declines, i.e. unstratified.
        const int64_t t = census_size(static_cast<int64_t>(budget), 1, census_share);
        std::vector<CensusEntry> heap(static_cast<size_t>(std::max<int64_t>(t, 1)));
        int64_t used = 0;
        CensusSpread spread;
        for (int64_t i = 0; i < N; ++i) {
            census_offer(heap.data(), used, t, value[i], census_key(static_cast<uint64_t>(i), seed), i);
            spread.add(value[i]);
        }
        if (design != Default || census_pays(spread, heap.data(), used, census_share))
            for (int64_t k = 0; k < used; ++k) stratum_of[heap[k].row] = n_strata - 1;
    }
    for (int64_t i = 0; i < N; ++i) rows_of[stratum_of[i]].push_back(i);
    std::vector<Stratum> strata(n_strata);
    std::vector<std::vector<GroupPart>> parts(n_groups, std::vector<GroupPart>(n_strata));
    std::vector<Moments> stratum_values(n_strata);
    std::vector<double> stratum_abs(n_strata, 0);
    for (int s = 0; s < n_strata; ++s) {
        std::vector<int64_t>& idx = rows_of[s];
        const double Ns = static_cast<double>(idx.size());
        double ms;
        if (design == Unstratified)
            ms = std::round(0.01 * Ns);
        else if (census && s == n_strata - 1)
            ms = Ns;  // kept whole
        else if (design == Census || design == Default)
            ms = budget - static_cast<double>(rows_of[n_strata - 1].size());
        else if (design == CensusGroups)  // the groups' rule on (1 - share) of the rate
            ms = std::min(Ns, std::max(30.0, std::round((1 - census_share) * 0.01 * Ns)));
        else
            ms = std::min(Ns, std::max(30.0, std::round(0.01 * Ns)));
        strata[s] = {Ns, ms};
        for (int g = 0; g < n_groups; ++g) parts[g][s].stratum = s;
        for (int64_t i = 0; i < static_cast<int64_t>(ms); ++i) {  // partial Fisher-Yates
            std::uniform_int_distribution<int64_t> pick(i, static_cast<int64_t>(idx.size()) - 1);
            std::swap(idx[i], idx[pick(rng)]);
            const int64_t row = idx[i];
            if (group[row] >= 0) add(parts[group[row]][s].m, value[row]);
            add(stratum_values[s], value[row]);
            stratum_abs[s] += std::fabs(value[row]);
        }
    }
    Options opt;
    std::vector<StratumSpread> spread(n_strata);
    for (int s = 0; s < n_strata; ++s) {
        spread[s] = stratum_spread(stratum_values[s], stratum_abs[s]);
        // NO_SKEW=1 borrows the spread without the skewness (as before it was borrowed)
        if (std::getenv("NO_SKEW")) spread[s].skewness = 0;
    }
    // as the sample path does for a column: the stratum's spread over its sample rows
    if (!std::getenv("NO_SPREAD")) opt.spread = spread.data();
    // the census stratum is sampled whole: a group it holds no row of has none there
    opt.groups_within_strata = design == GroupStrata || design == CensusGroups;
    for (int g = 0; g < n_groups; ++g) {
        if (truth_n[g] == 0) continue;  // not in the exact answer either
        std::vector<GroupPart> seen;
        for (int s = 0; s < n_strata; ++s)
            if (parts[g][s].m.n > 0) seen.push_back(parts[g][s]);
        ++res.groups;
        if (seen.empty() && !single) {  // a GROUP BY returns no row for it
            ++res.missed;
            continue;
        }
        const double truth[3] = {truth_n[g], truth_sum[g], truth_sum[g] / truth_n[g]};
        const Aggregate aggs[3] = {Aggregate::Count, Aggregate::Sum, Aggregate::Avg};
        for (int a = 0; a < 3; ++a) {
            Estimate e;
            Status st = estimate(aggs[a], strata.data(), n_strata, seen.data(), static_cast<int32_t>(seen.size()), opt, e);
            if (!st.ok()) {
                std::fprintf(stderr, "estimate: %s\n", st.message);
                std::exit(1);
            }
            if (e.null && e.estimable) {  // a NULL the sample claims: a miss
                ++res.agg[a].total;
                ++res.by_rows[a][0].total;
                continue;
            }
            res.agg[a].add(e, truth[a]);
            res.by_rows[a][bucket_of(e.rows)].add(e, truth[a]);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const int reps_small = argc > 1 ? std::atoi(argv[1]) : 300;
    const int reps_large = argc > 2 ? std::atoi(argv[2]) : 40;
    const std::string only = argc > 3 ? argv[3] : "all";
    const std::string designs = argc > 4 ? argv[4] : "all";
    if (argc > 5) census_share = std::atof(argv[5]);
    std::printf("| N | shape | design | groups | COUNT | SUM | AVG | unbounded SUM/AVG | missed groups |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    Tally all[3];
    Tally by_design[kShapes][kDesigns][3];  // pooled over N and query shapes
    std::vector<Result> per_shape(kShapes);
    for (int64_t N : {int64_t(100000), int64_t(1000000)}) {
        const int reps = N == 100000 ? reps_small : reps_large;
        if (reps <= 0) continue;
        for (int shape = 0; shape < kShapes; ++shape) {
            if (only != "all" && only.find(std::to_string(shape)) == std::string::npos) continue;
            for (int design = 0; design < kDesigns; ++design)
                for (int n_groups : {1, 10, 100}) {
                    if ((design == GroupStrata || design == CensusGroups) && n_groups == 1)
                        continue;  // the same as unstratified / census
                    if (!(designs == "all" || designs.find(std::to_string(design)) != std::string::npos)) continue;
                    Result res;
                    for (int r = 1; r <= reps; ++r)
                        run_once(static_cast<Shape>(shape), static_cast<Design>(design), N, n_groups, r, res);
                    for (int a = 0; a < 3; ++a)
                        for (int b = 0; b < kBuckets; ++b) {
                            Tally& t = per_shape[shape].by_rows[a][b];
                            t.covered += res.by_rows[a][b].covered;
                            t.total += res.by_rows[a][b].total;
                            t.unbounded += res.by_rows[a][b].unbounded;
                            t.width.insert(t.width.end(), res.by_rows[a][b].width.begin(), res.by_rows[a][b].width.end());
                        }
                    for (int a = 0; a < 3; ++a) {
                        Tally& d = by_design[shape][design][a];
                        d.covered += res.agg[a].covered;
                        d.total += res.agg[a].total;
                        d.unbounded += res.agg[a].unbounded;
                    }
                    for (int a = 0; a < 3; ++a) {
                        all[a].covered += res.agg[a].covered;
                        all[a].total += res.agg[a].total;
                        all[a].unbounded += res.agg[a].unbounded;
                    }
                    std::printf("| 10^%d | %s | %s | %d | %.3f | %.3f | %.3f | %.3f / %.3f | %.3f |\n",
                                N == 100000 ? 5 : 6, kShapeName[shape], kDesignName[design], n_groups,
                                res.agg[0].rate(), res.agg[1].rate(), res.agg[2].rate(),
                                res.agg[1].total ? double(res.agg[1].unbounded) / res.agg[1].total : 0.0,
                                res.agg[2].total ? double(res.agg[2].unbounded) / res.agg[2].total : 0.0,
                                res.groups ? double(res.missed) / res.groups : 0.0);
                    if (std::getenv("COVERAGE_RAW"))  // counts, for pooling runs split by shape or size
                        std::printf("RAW %d %d %d %d %ld %ld %ld %ld %ld %ld\n", N == 100000 ? 5 : 6, shape, design,
                                    n_groups, res.agg[0].covered, res.agg[0].total, res.agg[1].covered,
                                    res.agg[1].total, res.agg[2].covered, res.agg[2].total);
                    std::fflush(stdout);
                }
        }
    }
    std::printf("\nBy the group's sample rows k (all N, designs and query shapes; SUM / AVG coverage, in brackets the share unbounded):\n\n");
    std::printf("| shape |");
    for (int b = 0; b < kBuckets; ++b) std::printf(" k = %s |", kBucketName[b]);
    std::printf("\n| --- |");
    for (int b = 0; b < kBuckets; ++b) std::printf(" --- |");
    std::printf("\n");
    for (int shape = 0; shape < kShapes; ++shape) {
        if (per_shape[shape].by_rows[1][7].total + per_shape[shape].by_rows[1][6].total == 0) continue;
        std::printf("| %s |", kShapeName[shape]);
        for (int b = 0; b < kBuckets; ++b) {
            Tally &s = per_shape[shape].by_rows[1][b], &v = per_shape[shape].by_rows[2][b];
            if (std::getenv("WIDTH") && !v.width.empty()) {
                std::sort(v.width.begin(), v.width.end());
                std::printf(" w%.2f", v.width[v.width.size() / 2]);
            }
            if (s.total == 0)
                std::printf(" - |");
            else
                std::printf(" %.2f / %.2f (%.2f) |", s.rate(), v.rate(), double(s.unbounded) / s.total);
        }
        std::printf("\n");
    }
    std::printf("\nPer shape and design (both N, all query shapes): SUM / AVG coverage\n\n| shape |");
    for (int d = 0; d < kDesigns; ++d) std::printf(" %s |", kDesignName[d]);
    std::printf("\n| --- |");
    for (int d = 0; d < kDesigns; ++d) std::printf(" --- |");
    std::printf("\n");
    Tally pooled[3][3];  // without census (designs 0-2), with (3-4), the default (5)
    for (int shape = 0; shape < kShapes; ++shape) {
        long shape_total = 0;
        for (int d = 0; d < kDesigns; ++d) shape_total += by_design[shape][d][1].total;
        if (shape_total == 0) continue;
        std::printf("| %s |", kShapeName[shape]);
        for (int d = 0; d < kDesigns; ++d) {
            const Tally &su = by_design[shape][d][1], &av = by_design[shape][d][2];
            if (su.total == 0)
                std::printf(" - |");
            else
                std::printf(" %.3f / %.3f |", su.rate(), av.rate());
            for (int a = 0; a < 3; ++a) {
                const int pool = d == Default ? 2 : d >= Census ? 1 : 0;
                pooled[pool][a].covered += by_design[shape][d][a].covered;
                pooled[pool][a].total += by_design[shape][d][a].total;
            }
        }
        std::printf("\n");
    }
    for (int c = 0; c < 3; ++c)
        if (pooled[c][1].total)
            std::printf("\n%s designs: COUNT %.3f, SUM %.3f, AVG %.3f (%ld intervals each)",
                        c == 2 ? "default" : c ? "census" : "no-census",
                        pooled[c][0].rate(), pooled[c][1].rate(), pooled[c][2].rate(), pooled[c][1].total);
    std::printf("\n");
    std::printf("\nall (query, group) pairs returned: COUNT %.3f, SUM %.3f, AVG %.3f (%ld, %ld, %ld intervals)\n",
                all[0].rate(), all[1].rate(), all[2].rate(), all[0].total, all[1].total, all[2].total);
    return 0;
}
