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

// Kernel mass p of a sample value x inside [lo, hi] with bandwidth h (the
// indicator for a discrete column), and when want_first_moment the integral
// s of t * K_h(t - x) over [lo, hi]: x * dPhi - h * dphi (x times the
// indicator for a discrete column). lo <= hi; unbounded sides are +-inf.
SYNOPSIS_HD void column_mass(double x, double lo, double hi, double h, bool discrete, bool want_first_moment,
                             double& p, double& s) {
    if (discrete) {
        bool in = x >= lo && x <= hi;
        p = in ? 1.0 : 0.0;
        s = in ? x : 0.0;
        return;
    }
    if (lo == -INFINITY && hi == INFINITY) {
        p = 1.0;
        s = x;
        return;
    }
    double a = (lo - x) / h, b = (hi - x) / h;
    if (a > 40.0 || b < -40.0) {  // erfc(40 / sqrt 2) underflows: the mass is exactly 0
        p = 0.0;
        s = 0.0;
        return;
    }
    p = normal_mass(a, b);
    s = want_first_moment ? x * p - h * (normal_pdf(b) - normal_pdf(a)) : 0.0;
}

// g of one sample row for one box: c = prod_j P_j and, for column k >= 0,
// s = S_k * prod_{j != k} P_j (s = 0 when k < 0). Discrete columns go first
// and a zero mass ends the row (then c = s = 0: S_k is 0 too when P_k is).
// Same order on both engines.
SYNOPSIS_HD void row_terms(const double* row, const double* lo, const double* hi, const double* h,
                           const unsigned char* discrete, int d, int k, double& c, double& s) {
    double prod = 1.0, others = 1.0, sk = 0.0;
    c = 0.0;
    s = 0.0;
    for (int pass = 0; pass < 2; ++pass)
        for (int j = 0; j < d; ++j) {
            if ((discrete[j] != 0) != (pass == 0)) continue;
            double p, sj;
            column_mass(row[j], lo[j], hi[j], h[j], discrete[j] != 0, j == k, p, sj);
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

}  // namespace approx::synopsis::math
