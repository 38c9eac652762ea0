// Per-row formulas of the synopsis box estimates, shared verbatim by the CPU
// engine (synopsis.cpp) and the GPU engine (cuda/synopsis.cu) so that both
// evaluate the same expressions in the same order (fp64 throughout).
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define SYNOPSIS_HD __host__ __device__ __forceinline__
#else
#define SYNOPSIS_HD inline
#endif

namespace approx::synopsis::math {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Phi(b) - Phi(a) for a <= b (either may be infinite), with erfc in the tails
// so that nothing cancels: both bounds above 0 use the upper tails
// Q(a) - Q(b), both below 0 the lower tails.
SYNOPSIS_HD double normal_mass(double a, double b) {
    if (a >= 0) return 0.5 * (erfc(a * kInvSqrt2) - erfc(b * kInvSqrt2));
    if (b <= 0) return 0.5 * (erfc(-b * kInvSqrt2) - erfc(-a * kInvSqrt2));
    return 1.0 - 0.5 * (erfc(b * kInvSqrt2) + erfc(-a * kInvSqrt2));
}

// Standard normal density; 0 at +-infinity.
SYNOPSIS_HD double normal_pdf(double t) { return kInvSqrt2Pi * exp(-0.5 * t * t); }

// Per-column constants of box evaluation, the same on both engines: the box
// bandwidth, the sample's range [lower, upper] (see column_mass), the
// discrete flag and the transform. A log-transformed column (transform 1) is
// smoothed on the scale t = log(x + shift): h, lower and upper are on that
// scale (the host computes them); sample values and box bounds are
// transformed here, in the shared code, so both engines do the same.
constexpr int kMaxColumns = 32;
struct ColumnParams {
    double h[kMaxColumns];
    double lower[kMaxColumns];
    double upper[kMaxColumns];
    double shift[kMaxColumns];
    unsigned char discrete[kMaxColumns];
    unsigned char transform[kMaxColumns];  // 0: none, 1: log(x + shift)
};

// t = log(x + shift), -inf where x + shift <= 0 (below every sample value:
// the sample's range starts at log(min + shift) > -inf).
SYNOPSIS_HD double log_scale(double x, double shift) {
    double u = x + shift;
    return u > 0 ? log(u) : -INFINITY;
}

// Adds the mass of the Gaussian kernel centred at y inside [lo, hi] to p and,
// when want_first_moment, its first moment y dPhi - h dphi to s. Beyond `cut`
// bandwidths the piece is dropped (at 40 it underflows to exactly 0).
SYNOPSIS_HD void add_kernel_piece(double y, double lo, double hi, double h, double cut, bool want_first_moment,
                                  double& p, double& s) {
    double a = (lo - y) / h, b = (hi - y) / h;
    if (a > cut || b < -cut) return;
    double mass = normal_mass(a, b);
    p += mass;
    if (want_first_moment) s += y * mass - h * (normal_pdf(b) - normal_pdf(a));
}

// The same piece for a log-transformed column: the kernel is Gaussian on
// t = log(x + c), centred at y with bandwidth h; p gets its mass in [a, b]
// (t scale) and s the first moment on the original scale,
//   E[(e^T - c) 1{a <= T <= b}] = e^(y + h^2/2) [Phi(b' - h) - Phi(a' - h)] - c [Phi(b') - Phi(a')],
// a' = (a - y) / h, b' = (b - y) / h (the log-normal partial expectation).
SYNOPSIS_HD void add_log_kernel_piece(double y, double lo, double hi, double h, double c, double cut,
                                      bool want_first_moment, double& p, double& s) {
    double a = (lo - y) / h, b = (hi - y) / h;
    if (a > cut || b < -cut) return;
    double mass = normal_mass(a, b);
    p += mass;
    if (want_first_moment) {
        double upper_mass = normal_mass(a - h, b - h);
        if (upper_mass > 0) s += exp(y + 0.5 * h * h) * upper_mass;
        s -= c * mass;
    }
}

// A reflected piece beyond 9 bandwidths holds under 1.2e-19 of a row: dropped.
constexpr double kReflectedCut = 9.0;

// Kernel mass p of a sample value x inside [lo, hi] for column j (the
// indicator for a discrete column), and when want_first_moment the integral
// s of t * K_h(t - x) over [lo, hi] (x times the indicator for a discrete
// column). lo <= hi; unbounded sides are +-inf.
// Boundary correction by reflection: the kernel mass that would fall outside
// the sample's range [lower, upper] is folded back inside (kernels at the
// mirror images 2 lower - x and 2 upper - x), so a column with a hard edge
// (prices >= 0, ratings in [0.5, 5]) loses no mass there and a box reaching
// past the sample's range counts every sample row on that side in full, as
// the plain sample does. Far from the edges (> 9 h) nothing changes.
// A log-transformed column does all of this on the scale t = log(x + shift)
// (range, reflection and bounds transformed), its first moment on the
// original scale (add_log_kernel_piece).
SYNOPSIS_HD void column_mass(double x, double lo, double hi, const ColumnParams& cp, int j, bool want_first_moment,
                             double& p, double& s) {
    if (cp.discrete[j]) {
        bool in = x >= lo && x <= hi;
        p = in ? 1.0 : 0.0;
        s = in ? x : 0.0;
        return;
    }
    p = 0.0;
    s = 0.0;
    const double lower = cp.lower[j], upper = cp.upper[j], h = cp.h[j];
    const bool logged = cp.transform[j];
    const double c = cp.shift[j];
    const double y = logged ? log_scale(x, c) : x;  // the kernel's centre on the smoothing scale
    if (logged) {
        lo = log_scale(lo, c);
        hi = log_scale(hi, c);
    }
    if (lo <= lower && hi >= upper) {  // the whole range: every kernel's full mass
        p = 1.0;
        s = x;
        return;
    }
    lo = lo > lower ? lo : lower;
    hi = hi < upper ? hi : upper;
    if (lo > hi) return;
    if (logged) {
        add_log_kernel_piece(y, lo, hi, h, c, 40.0, want_first_moment, p, s);
        add_log_kernel_piece(2.0 * lower - y, lo, hi, h, c, kReflectedCut, want_first_moment, p, s);
        add_log_kernel_piece(2.0 * upper - y, lo, hi, h, c, kReflectedCut, want_first_moment, p, s);
    } else {
        add_kernel_piece(y, lo, hi, h, 40.0, want_first_moment, p, s);
        add_kernel_piece(2.0 * lower - y, lo, hi, h, kReflectedCut, want_first_moment, p, s);
        add_kernel_piece(2.0 * upper - y, lo, hi, h, kReflectedCut, want_first_moment, p, s);
    }
}

// NULL policies of a box column (the values of synopsis::NullPolicy).
constexpr unsigned char kNullAny = 0, kNullNotNull = 1, kNullIsNull = 2;

// g of one sample row for one box: c = prod_j P_j and, for column k >= 0,
// s = S_k * prod_{j != k} P_j (s = 0 when k < 0). Discrete columns go first
// and a zero mass ends the row (then c = s = 0: S_k is 0 too when P_k is).
// Same order on both engines.
// NULLs (format 3): a sample value NaN is SQL NULL. nulls[j] (nullptr: Any
// everywhere) is the box's policy for column j: a NULL value's factor is 1
// under Any and IsNull and 0 under NotNull (no mass is computed for it); a
// non-NULL value's factor is 0 under IsNull, else its mass P_j (Any and
// NotNull both apply the bounds to non-NULL values). For SUM / AVG of column
// k (k >= 0) a row whose value in k is NULL has c = s = 0: it adds nothing to
// the SUM and is not counted in AVG's denominator, so AVG = SUM(x) / COUNT(x)
// over the box as SQL defines it (k behaves as NotNull; IsNull on k leaves
// nothing). Factors of 1 multiply exactly: without NULLs the products are
// the same as without the policies.
SYNOPSIS_HD void row_terms(const double* row, const double* lo, const double* hi, const ColumnParams& cp, int d, int k,
                           const unsigned char* nulls, double& c, double& s) {
    double prod = 1.0, others = 1.0, sk = 0.0;
    c = 0.0;
    s = 0.0;
    for (int pass = 0; pass < 2; ++pass)
        for (int j = 0; j < d; ++j) {
            if ((cp.discrete[j] != 0) != (pass == 0)) continue;
            const double x = row[j];
            const unsigned char policy = nulls ? nulls[j] : kNullAny;
            if (isnan(x)) {
                if (j == k || policy == kNullNotNull) return;  // NULL fails the box (or is not an x of SUM/AVG)
                continue;                                      // NULL passes: factor 1
            }
            if (policy == kNullIsNull) return;
            double p, sj;
            column_mass(x, lo[j], hi[j], cp, j, j == k, p, sj);
            if (p == 0.0) return;
            prod *= p;
            if (j == k)
                sk = sj;
            else
                others *= p;
        }
    c = prod;
    s = k >= 0 ? sk * others : 0.0;
}

// The same without NULL policies (Any on every column).
SYNOPSIS_HD void row_terms(const double* row, const double* lo, const double* hi, const ColumnParams& cp, int d, int k,
                           double& c, double& s) {
    row_terms(row, lo, hi, cp, d, k, nullptr, c, s);
}

}  // namespace approx::synopsis::math
