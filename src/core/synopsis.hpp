// KDE synopses: a uniform sample of a d-column relation plus per-column
// Gaussian-kernel bandwidths, answering COUNT / SUM / AVG over boxes with
// confidence intervals (plain C++ API; CPU engine in synopsis.cpp, GPU engine
// in cuda/synopsis.cu, the per-row formulas shared in synopsis_math.hpp, what
// the engines share besides in synopsis_internal.hpp).
//
// Model: N rows, a uniform sample of m = min(sample_size, N) rows
// (reservoir sampling, Vitter's algorithm R), per-column statistics of the
// sample, a density bandwidth and a box bandwidth per column, and a discrete
// flag per column (exact membership, no smoothing). For a box B and sample row
// i, P_ij is the kernel mass of column j inside [lo_j, hi_j] (the indicator for
// a discrete column; mass beyond the sample's range [min_j, max_j] is
// reflected back inside, see math::column_mass); every estimate is
// N * mean_i g_i with
//   COUNT: g_i = prod_j P_ij
//   SUM k: g_i = S_ik * prod_{j != k} P_ij,  S_ik = x_ik dPhi - h_k dphi
//   AVG k: SUM / COUNT (ratio estimator).
// Standard errors: N sd(g) / sqrt(m) * sqrt((N - m) / (N - 1)); AVG by the
// delta method, sqrt(fpc * sum (s_i - R c_i)^2 / (m - 1) / m) / mean(c).
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec.hpp"

namespace approx::synopsis {

constexpr int kMaxDim = 32;  // d limit (LSCV's limit too)
// Version byte of the stored/binary form. 1: per-column discrete flag only
// (still read, and answered exactly as before); 2: per-column mode
// (exact / KDE / KDE on a log scale), the transform's shift and bandwidth,
// the interval allowance for smoothing bias and the guard's cross-validated
// evidence.
constexpr int kFormatVersion = 2;
constexpr int kFormatVersionMin = 1;

// How the box bandwidth is chosen (the density bandwidth follows from it).
//   Cdf:    box = Polansky & Baker plug-in for the distribution function,
//           density = Wand & Jones density plug-in;
//   Plugin: both = density plug-in;
//   Lscv:   both = h * sd_j with h from LSCV over H = h^2 diag(Sigma);
//   Scott:  both = 1.06 sd_j m^(-1/5).
enum class Bandwidth : uint8_t { Cdf = 0, Plugin = 1, Lscv = 2, Scott = 3 };
// Auto: the guard (synopsis_guard.cpp) picks each column's mode by
// cross-validation on the sample; Always: every non-constant column smoothed
// (raw scale); Never: every column exact (the plain sample estimator).
enum class Smoothing : uint8_t { Auto = 0, Always = 1, Never = 2 };

// How a column enters box estimates: exact membership (the plain sample), a
// Gaussian kernel on the raw scale, or a Gaussian kernel on t = log(x + shift).
enum class Mode : uint8_t { Exact = 0, Kde = 1, LogKde = 2 };
constexpr int kModes = 3;

const char* bandwidth_name(Bandwidth b);
const char* smoothing_name(Smoothing s);
const char* mode_name(Mode m);

struct Column {
    double mean = 0, sd = 0, min = 0, max = 0;  // of the sample (sd with m - 1)
    double density_h = 0;                       // kde_density
    double box_h = 0;                           // box integrals (raw scale)
    double step = 0;                            // the step delta of a heaped column (0 = none found)
    bool discrete = false;                      // = (mode == Exact)
    // Format 2 (a version-1 value reads as mode = discrete ? Exact : Kde,
    // log_h = shift = 0, interval_scale = 1, no evidence).
    Mode mode = Mode::Exact;
    double shift = 0;           // LogKde: t = log(x + shift), min + shift > 0
    double log_h = 0;           // LogKde: the box bandwidth on the t scale (0 otherwise)
    double interval_scale = 1;  // >= 1: the standard error's multiplier for smoothing bias (see evaluate)
    // The guard's evidence: root mean squared relative cross-validated error of
    // each mode's COUNT over the column's CV boxes (-1: not a candidate), and
    // the CV coverage of the chosen mode's 95% intervals (-1: not measured).
    double cv_error[kModes] = {-1, -1, -1};
    double cv_coverage = -1;
    // Format 3 (table synopses).
    // categorical: set by the caller before finalize for a dictionary-coded
    // column (bool, text, enum: the values are codes 0..K-1, not numbers):
    // always Exact, never smoothed, never a guard candidate.
    bool categorical = false;
    int64_t null_count = 0;  // sample rows whose value is NULL (NaN) in this column
};

// A stratum of a stratified sample: sample rows [begin, end) are a uniform
// sample of n_rows table rows (end - begin <= n_rows). Strata are contiguous
// and in order (strata[0].begin = 0, strata[g].end = strata[g+1].begin,
// strata[last].end = m); the sum of n_rows is N.
struct Stratum {
    int64_t n_rows = 0;
    int64_t begin = 0;
    int64_t end = 0;
};

// How a box treats a sample row whose value is NULL (NaN) in a column.
//   Any:     no predicate on the column: NULL passes, the bounds are ignored
//            for NULL rows (non-NULL rows still meet the bounds);
//   NotNull: a comparison on the column: NULL fails, the bounds apply;
//   IsNull:  IS NULL: only NULL passes (the bounds are ignored).
enum class NullPolicy : uint8_t { Any = 0, NotNull = 1, IsNull = 2 };

// The synopsis model. Plain data: the sample is not owned (the glue keeps it
// in palloc'd memory, the tests in vectors), so the struct is trivially
// copyable and may live across an ereport.
struct Synopsis {
    int64_t n_rows = 0;       // N: rows of the relation (formats 1-2: rows with every column non-NULL)
    int64_t m = 0;            // sample rows, = min(sample_size, N) (stratified: the strata's total)
    int64_t sample_size = 0;  // requested sample size (the reservoir's capacity)
    int64_t skipped = 0;      // rows skipped for a NULL
    int d = 0;
    Bandwidth method = Bandwidth::Cdf;
    Smoothing smoothing = Smoothing::Auto;
    const double* sample = nullptr;  // m x d, row-major
    // service::content_hash of the sample's bytes when the caller knows it (a
    // value parsed once and kept), so that a call through the GPU service
    // need not hash 10^4 rows again; 0: hashed per call. Never a stale value:
    // whoever changes `sample` clears it.
    uint64_t sample_key = 0;
    Column cols[kMaxDim];
    // Format 2: the guard's joint check, root mean squared relative CV error
    // of COUNT on multi-column boxes with every column exact [0] and with the
    // chosen modes [1] (-1: not run).
    double joint_cv[2] = {-1, -1};
    // Format 3: NULLs are data -- a sample value NaN is SQL NULL (statistics,
    // bandwidths and the guard use each column's non-NULL values). Strata:
    // n_strata = 0 is one stratum of every row (N rows, sample rows [0, m));
    // otherwise n_strata entries (not owned, like sample), each row of
    // stratum g weighted n_rows_g / m_g, variances summed over strata.
    int n_strata = 0;
    const Stratum* strata = nullptr;
};

// ---- random numbers and sampling ----------------------------------------------

// xoshiro256** seeded through splitmix64: reproducible on every platform.
struct Rng {
    uint64_t s[4] = {0, 0, 0, 0};
    void seed(uint64_t seed);
    uint64_t next();
    double uniform();                // [0, 1), 53 random bits
    uint64_t below(uint64_t bound);  // uniform integer in [0, bound), exact (Lemire); bound > 0
};

// Reservoir sampling, Vitter's algorithm R: row number `seen` (0-based) of the
// stream goes to slot reservoir_slot(...) or nowhere (-1). A slot equal to
// `size` appends. Always uniform, also after a merge.
struct Reservoir {
    int64_t capacity = 0;  // k (sample_size)
    int64_t seen = 0;      // rows offered so far (N)
    int64_t size = 0;      // rows held, = min(capacity, seen)
    Rng rng;
};
void reservoir_init(Reservoir& r, int64_t capacity, uint64_t seed);
// Where the next row goes; updates seen/size. -1: the row is not sampled.
int64_t reservoir_slot(Reservoir& r);

// Size of the merge of two reservoirs: min(k1, k2, N1 + N2) rows, capacity
// min(k1, k2) (k = sample_size; a reservoir with N < k holds all N rows).
int64_t merged_size(int64_t k1, int64_t n1, int64_t k2, int64_t n2);

// Merges two uniform samples a (m1 rows of N1) and b (m2 of N2), d columns
// each, into out (merged_size(...) rows, caller-allocated): K ~
// Hypergeometric(N1 + N2, N1, m') rows drawn without replacement from a and
// m' - K from b. The result is a uniform sample of the union.
Status merge_samples(const double* a, int64_t m1, int64_t n1, int64_t k1, const double* b, int64_t m2, int64_t n2,
                     int64_t k2, int d, Rng& rng, double* out, int64_t& m_out);

// Congressional allocation (Acharya, Gibbons & Poosala, SIGMOD 2000) of a
// stratified sample of about sample_size rows over `groups` strata of
// group_rows[g] > 0 rows each: every stratum keeps min(rows_g, floor) rows
// (small groups exactly, rare groups never lost) and what remains of
// sample_size is shared in proportion to the group sizes, never more than a
// stratum's rows: m_out[g] = min(rows_g, max(min(rows_g, floor), share_g)).
// The total may exceed sample_size when the floors alone do (every group is
// kept). InvalidArgument for groups < 1, a non-positive size or floor < 1.
Status congressional_allocation(const int64_t* group_rows, int64_t groups, int64_t sample_size, int64_t floor,
                                int64_t* m_out);

// ---- building ----------------------------------------------------------------------

// Fills s.cols (statistics, both bandwidths, modes, steps) from
// s.sample, s.m, s.d with the given method and smoothing (Auto: the guard). Bandwidths come from
// the KDE engine (kde::plugin_bandwidth / lscv / bandwidth, which choose CPU or
// GPU themselves). A column with fewer than two distinct sample values is
// constant: discrete, both bandwidths 1e-9 * max(1, |value|).
// NULLs (NaN): every statistic, bandwidth and the guard use each column's
// non-NULL values; null_count counts the NaN rows; an all-NULL column is
// exact with statistics 0 and bandwidths 1e-9; Lscv is fitted on the rows
// with no NULL in the smoothed columns (at least two). A column with
// categorical = true (kept through finalize) is exact under every smoothing,
// never a guard candidate, bandwidths 0.5 (half a code step, never used).
// Errors: d outside [1, kMaxDim] or m < 1 -> InvalidArgument; infinite
// sample values -> DataException; the KDE engine's errors.
Status finalize(Synopsis& s, Bandwidth method, Smoothing smoothing, const ExecContext& ctx);

// Checks every invariant of a synopsis read from outside (text or binary
// input): lengths, values finite or NULL (NaN; +-inf rejected), null_count =
// the column's NaN rows, statistics of the non-NULL values, bandwidths > 0,
// categorical columns exact; unstratified: m = min(sample_size, N);
// stratified: strata contiguous and in order from row 0 to m, each with
// 1 <= end - begin <= n_rows, n_rows adding up to N (m may exceed
// sample_size, never N). InvalidArgument names the first problem.
Status validate(const Synopsis& s);

// ---- box evaluation ---------------------------------------------------------------------

enum class Aggregate : uint8_t { Count = 0, Sum = 1, Avg = 2 };

// q boxes, each d lower and d upper bounds (row-major q x d); -inf / +inf =
// unbounded; a box with lo_j > hi_j for some j is empty.
struct BoxBatch {
    int64_t q = 0;
    const double* lo = nullptr;
    const double* hi = nullptr;
    Aggregate agg = Aggregate::Count;
    int column = 0;  // 0-based, for Sum / Avg
    // Format 3 (optional): q x d NullPolicy values (nullptr: Any everywhere),
    // and per box the stratum it is evaluated over (nullptr, or -1: every
    // stratum; a stratum's box estimates that stratum's rows only, and its
    // COUNT interval is clipped to [0, n_rows of the stratum]).
    const uint8_t* nulls = nullptr;
    const int32_t* stratum = nullptr;
};

struct BoxEstimate {
    double estimate = 0;  // NaN for the AVG of an empty box (SQL NULL)
    double se = 0;        // standard error (NaN where undefined), times the box's smoothing allowance
                          // (box_interval_scale, synopsis_internal.hpp) when a smoothed column constrains the box
    bool empty = false;   // a bound pair lo > hi
    int64_t support = 0;  // sample rows with a positive COUNT weight in the box (0: no sample row in it)
    double n_rows = 0;    // rows of the population the box was evaluated over (N, or its stratum's)
    // What interval() needs besides: the COUNT of the rows the aggregate
    // reads (SUM / AVG: those with a value in the column) with its standard
    // error, and for SUM / AVG the column's sample range [value_min, value_max].
    double count = 0;
    double count_se = 0;
    bool has_range = false;
    double value_min = 0, value_max = 0;
};

// Estimates and standard errors for every box (out has q entries). Each box
// is expanded into pieces (one per stratum it is evaluated over), the engine
// sums each piece, and estimate_from_pieces (synopsis_internal.hpp) combines
// them; a box with one piece (unstratified, or one stratum) gets the plain
// formulas above with that piece's N and m. Pieces of a wholly sampled
// stratum (m_g = N_g, or an unstratified sample of every row) are evaluated
// with every column exact: their rows are the population, and smoothing
// them would only blur an exact answer. Runs on the GPU (cuda/synopsis.cu:
// one block per run of a piece's rows) or the CPU (threads over pieces, or over
// row chunks for few pieces) under ctx. NULL semantics: see math::row_terms in
// synopsis_math.hpp (for SUM / AVG of column k, rows whose k is NULL count for
// neither: AVG = SUM(x) / COUNT(x) in the box). InvalidArgument for a bad
// column, stratum or policy.
Status evaluate(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxEstimate* out);

// Confidence interval estimate -/+ z se, z = Phi^-1((1 + confidence) / 2);
// COUNT intervals are clipped to [0, e.n_rows] (the population the box was
// evaluated over; s.n_rows when e.n_rows is 0); SUM intervals to
// [count_lo min, count_hi max] (each of the box's rows lies in the column's
// range: a non-negative column's SUM is >= 0), AVG intervals to [min, max];
// the estimate always lies inside. The standard errors come floored from
// evaluate (see widen_for_unseen, synopsis_internal.hpp): an interval has zero
// width only when every stratum of the box was wholly sampled. confidence in (0, 1).
void interval(const Synopsis& s, Aggregate agg, const BoxEstimate& e, double confidence, double& lower, double& upper);

// Product-kernel density at x (d values) with the density bandwidths
// (every column smoothed). CPU: O(m d) for one point.
Status density(const Synopsis& s, const double* x, const ExecContext& ctx, double& out);

}  // namespace approx::synopsis
