// Internals of the synopsis engine, shared by its CPU part (synopsis.cpp, the
// guard in synopsis_guard.cpp), its GPU part (cuda/synopsis.cu) and the unit
// tests: the building steps finalize() runs, the per-box sums and pieces every
// engine produces, the engines' entry points and the host-side combination.
// Not part of the engine API (synopsis.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "synopsis.hpp"
#include "synopsis_math.hpp"

namespace approx::synopsis {

// ---- sampling and building ---------------------------------------------------------

// Exact Hypergeometric(population, successes, draws) variate: the number of
// successes among `draws` items taken without replacement, by sequential
// exact integer draws (O(draws), no approximation).
int64_t hypergeometric(Rng& rng, int64_t population, int64_t successes, int64_t draws);

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

// ---- box evaluation ---------------------------------------------------------------------

// The per-box sums every engine produces: g_i shifted by the box's first
// sample row (c0, s0) so that the variance needs no large cancellation.
struct BoxSums {
    double c0 = 0, s0 = 0;             // shift: g of sample row 0
    double sc = 0, ss = 0;             // sum (c_i - c0), sum (s_i - s0)
    double scc = 0, sss = 0, scs = 0;  // sums of squares / cross products of the shifted values
    int64_t support = 0;               // rows with c_i > 0 (BoxEstimate::support)
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

// The engines alone (tests and benchmark; evaluate() dispatches): the sums of
// every box (sums has q entries; an empty box's sums are left zero). The GPU
// engine exists only in a CUDA build.
// box_sums_*: one piece per box over every sample row (strata ignored).
// piece_sums_*: the sums of every piece (sums has n entries; the pieces of an
// empty box are left zero); pieces of one box are contiguous and in stratum
// order, boxes in order, every piece has begin < end <= m.
Status box_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums);
Status box_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums);
Status piece_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n, const ExecContext& ctx,
                      BoxSums* sums);
Status piece_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n, const ExecContext& ctx,
                      BoxSums* sums);

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
BoxEstimate estimate_from_pieces(const Synopsis& s, Aggregate agg, const Piece* pieces, const BoxSums* sums, int64_t n);

// What the sample cannot see (shared by both engines; after
// estimate_from_pieces, before box_interval_scale). Each piece of a stratum
// that was not wholly sampled (m_g < N_g) adds the Wilson score interval's
// excess over the plug-in binomial variance, N_g^2 fpc_g / m_g *
// max(0, p~ (1 - p~) - p^ (1 - p^)), p^ = k / m_g, p~ = (k + z^2) / (m_g + 2 z^2)
// (k = the piece's COUNT weight, z = 1.96): with k = 0 the 95% upper bound is
// N_g z^2 / (m_g + z^2), Wilson's bound for no successes (about 3.8 N_g / m_g,
// Clopper-Pearson's is 3.7); with k = m_g (every sample row in the box) the
// lower bound likewise; for small k it is close to Wilson's interval; for
// moderate k it adds little. SUM adds the same times the square of the
// piece's mean value in the box (the box's mean, or the column's largest
// magnitude when the sample saw no value); a SUM or AVG whose se is still 0
// (every value seen equal) gets sqrt(sum of the pieces' N_g^2 fpc_g p~ (1 - p~)
// / m_g) times the column's largest magnitude (SUM) or half its range over
// COUNT (AVG). every_row: the box has no bound (nothing to widen). Also fills
// count, count_se and (SUM / AVG) the column's range. column: the SUM / AVG column.
void widen_for_unseen(const Synopsis& s, Aggregate agg, int column, const Piece* pieces, const BoxSums* sums, int64_t n,
                      BoxEstimate& e, bool every_row);

// Phi^-1(p), p in (0, 1), to about 1e-15 (Acklam + one Halley step).
double normal_quantile(double p);

}  // namespace approx::synopsis
