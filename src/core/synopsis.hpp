// KDE synopses: a uniform sample of a d-column relation plus per-column
// Gaussian-kernel bandwidths, answering COUNT / SUM / AVG over boxes with
// confidence intervals (plain C++ API; CPU engine in synopsis.cpp, GPU engine
// in cuda/synopsis.cu, the per-row formulas shared in synopsis_math.hpp).
//
// Model (issue 5): N rows, a uniform sample of m = min(sample_size, N) rows
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
#include "synopsis_math.hpp"

namespace approx::synopsis {

constexpr int kMaxDim = 32;                 // d limit (LSCV's limit too)
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
    // Format 3 (table synopses, issue 13).
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
    double uniform();                 // [0, 1), 53 random bits
    uint64_t below(uint64_t bound);   // uniform integer in [0, bound), exact (Lemire); bound > 0
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

// Exact Hypergeometric(population, successes, draws) variate: the number of
// successes among `draws` items taken without replacement, by sequential
// exact integer draws (O(draws), no approximation).
int64_t hypergeometric(Rng& rng, int64_t population, int64_t successes, int64_t draws);

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

// The heaped-column test alone: true when the values are integer multiples
// of one step delta >= min_step (within 1e-9 relative:
// |x - delta round(x / delta)| <= 1e-9 max(|x|, delta)); step gets the
// largest such delta (Euclid's algorithm on the distinct values, remainders
// below 1e-9 max|x| taken as 0). values need not be sorted; n >= 1.
bool find_step(const double* values, size_t n, double min_step, double& step);

// The guard (smoothing = Auto): for each non-constant column j, candidate
// modes Exact, Kde (box_h) and LogKde (log(x + shift), its own bandwidth) are
// compared by K-fold cross-validation on the sample: random 1-D boxes with
// edges at held-out sample values (so edges sit on atoms as often as users'
// do), selectivities from 0.5% to 60%, each box's COUNT estimated from the
// training folds by every mode and compared with the held-out fold's count.
// A smoothed mode is chosen only when its paired squared relative error is
// lower than Exact's by more than one standard error (the one-standard-error
// rule); otherwise the column is exact. Then a joint check on multi-column
// boxes: if the chosen modes together lose to the plain sample, every column
// falls back to exact. The chosen mode's interval_scale is the smallest
// factor >= 1 that makes 95% of its CV boxes covered. Fills mode, shift,
// log_h, interval_scale, cv_error, cv_coverage, discrete; seed fixes the
// folds and boxes. columns: d vectors of m values (NaN = NULL: a column is
// cross-validated on its non-NULL rows, each kept in its row's fold, and
// stays exact with fewer than 200 of them; joint boxes treat NULL as failing
// a constrained column and passing an unconstrained one); constant[j]
// columns stay exact.
Status choose_modes(Synopsis& s, const double* const* columns, const bool* constant, uint64_t seed,
                    const ExecContext& ctx);

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
                          // (box_interval_scale) when a smoothed column constrains the box
    bool empty = false;   // a bound pair lo > hi
    int64_t support = 0;  // sample rows with a positive COUNT weight in the box (0: no sample row in it)
    double n_rows = 0;    // rows of the population the box was evaluated over (N, or its stratum's)
};

// The per-box sums every engine produces: g_i shifted by the box's first
// sample row (c0, s0) so that the variance needs no large cancellation.
struct BoxSums {
    double c0 = 0, s0 = 0;                    // shift: g of sample row 0
    double sc = 0, ss = 0;                    // sum (c_i - c0), sum (s_i - s0)
    double scc = 0, sss = 0, scs = 0;         // sums of squares / cross products of the shifted values
    int64_t support = 0;                      // rows with c_i > 0 (BoxEstimate::support)
};

// A piece of a box: its sample rows [begin, end) of one stratum (stratum >= 0)
// or of every row of an unstratified synopsis (stratum = -1). evaluate()
// expands each box into pieces (one per stratum it is evaluated over), the
// engines sum each piece (shift = g of the piece's first row), and the host
// combines a box's pieces (estimate_from_pieces).
struct Piece {
    int64_t box = 0;
    int64_t begin = 0;
    int64_t end = 0;
    int32_t stratum = -1;
};

// Estimates and standard errors for every box (out has q entries). Each box
// is expanded into pieces (one per stratum it is evaluated over), the engine
// sums each piece, and estimate_from_pieces combines them; a box with one
// piece (unstratified, or one stratum) gets the plain formulas above with
// that piece's N and m. Runs on the GPU (cuda/synopsis.cu: one block per run
// of a piece's rows) or the CPU (threads over pieces, or over row chunks for
// few pieces) under ctx. NULL semantics: see math::row_terms (for SUM / AVG
// of column k, rows whose k is NULL count for neither: AVG = SUM(x) /
// COUNT(x) in the box). InvalidArgument for a bad column, stratum or policy.
Status evaluate(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxEstimate* out);

// The engines alone (tests and benchmark; evaluate() dispatches): the sums of
// every box (sums has q entries; an empty box's sums are left zero). The GPU
// engine exists only in a CUDA build.
// box_sums_*: one piece per box over every sample row (strata ignored).
// piece_sums_*: the sums of every piece (sums has n entries; the pieces of an
// empty box are left zero); pieces of one box are contiguous and in stratum
// order, boxes in order, every piece has begin < end <= m.
Status box_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums);
Status box_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums);
Status piece_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n,
                      const ExecContext& ctx, BoxSums* sums);
Status piece_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n,
                      const ExecContext& ctx, BoxSums* sums);

// The per-column constants both engines evaluate boxes with (box bandwidth,
// the sample's range for the boundary reflection, discrete flag).
math::ColumnParams column_params(const Synopsis& s);

// The standard error multiplier of box b: sqrt(1 + sum_j (scale_j^2 - 1))
// over the smoothed columns j the box constrains inside the sample's range
// (1 when none does).
double box_interval_scale(const Synopsis& s, const double* lo, const double* hi);

// True when some lo_j > hi_j in box b.
bool box_empty(const Synopsis& s, const BoxBatch& boxes, int64_t b);

// Turns the sums of one box over every sample row into its estimate
// (N = s.n_rows, m = s.m; shared by both engines).
BoxEstimate estimate_from_sums(const Synopsis& s, Aggregate agg, const BoxSums& sums);

// Combines the sums of one box's n pieces (shared by both engines). One
// piece: the unstratified formulas with that piece's N_g (the stratum's
// n_rows, or N) and m_g = end - begin. Several: the stratified estimator,
// C = sum_g N_g mean_g(c), S likewise, Var = sum_g N_g^2 fpc_g var_g / m_g
// (fpc_g = (N_g - m_g) / (N_g - 1), 0 when m_g >= N_g; var_g with m_g - 1),
// AVG = S / C with the delta method
// se = sqrt(Var(S) - 2 R Cov(S, C) + R^2 Var(C)) / C. The standard error is
// not yet multiplied by box_interval_scale. support and n_rows are summed.
BoxEstimate estimate_from_pieces(const Synopsis& s, Aggregate agg, const Piece* pieces, const BoxSums* sums,
                                 int64_t n);

// Confidence interval estimate -/+ z se, z = Phi^-1((1 + confidence) / 2);
// COUNT intervals are clipped to [0, e.n_rows] (the population the box was
// evaluated over; s.n_rows when e.n_rows is 0). confidence in (0, 1).
void interval(const Synopsis& s, Aggregate agg, const BoxEstimate& e, double confidence, double& lower,
              double& upper);

// Phi^-1(p), p in (0, 1), to about 1e-15 (Acklam + one Halley step).
double normal_quantile(double p);

// Product-kernel density at x (d values) with the density bandwidths
// (every column smoothed). CPU: O(m d) for one point.
Status density(const Synopsis& s, const double* x, const ExecContext& ctx, double& out);

}  // namespace approx::synopsis
