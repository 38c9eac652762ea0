// KDE bandwidth selection engine (plain C++ API; CPU engine in kde_cpu.cpp,
// GPU engine in cuda/kde.cu). Formulas: DESIGN.md, "KDE definitions".
#pragma once

#include <cstddef>

#include "exec.hpp"

namespace approx::kde {

enum class Method { Plugin, Lscv, Scott, Silverman };

// What the bandwidth targets: the density (Wand & Jones two-stage direct
// plug-in) or the distribution function (Polansky & Baker 2000), the latter
// used to integrate a KDE over boxes (synopses).
enum class PluginTarget { Density, Distribution };

enum class Covariance { Full, Diagonal };

constexpr int kMaxLscvDim = 32;  // d beyond this is ProgramLimit

// Bandwidth of the 1-D sample x[0..n) in the data's units.
//  - Plugin: two-stage direct plug-in for the density, exact O(n^2) pair sums.
//  - Lscv: 1-D LSCV (grid 150) times sd.
//  - Scott: 1.06 sd n^-1/5;  Silverman: 0.9 min(sd, IQR/1.34) n^-1/5.
// Errors: n < 2 -> InvalidArgument; non-finite values -> DataException;
// sd = 0 -> DataException (a bandwidth of constant data is undefined).
Status bandwidth(const double* x, size_t n, Method method, const ExecContext& ctx, double& h);

// Two-stage plug-in bandwidth for the density or the distribution function.
Status plugin_bandwidth(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h);

// The same plug-in with its pair sums over linearly binned data (Wand 1994):
// linear in n (synopsis builds). Within 1e-4 relative of plugin_bandwidth()
// on the shapes its unit tests try; runs on the CPU whatever the device.
Status plugin_bandwidth_binned(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h);

struct LscvResult {
    int d = 0;
    double h = 0;              // scalar: H = h^2 * S, S = Sigma (Full) or diag(Sigma) (Diagonal)
    double objective = 0;      // LSCV g(h) at h
    double h0 = 0;             // normal-reference start (4/(d+2))^(1/(d+4)) n^(-1/(d+4))
    bool at_boundary = false;  // minimum at h0/4 or 4 h0
    double bandwidth_matrix[kMaxLscvDim * kMaxLscvDim] = {0};  // h^2 * S, row-major d x d
};

// Multivariate LSCV over H = h^2 S: `grid` equally spaced h in [h0/4, 4 h0],
// then 40 golden-section steps around the best grid point; exact leave-one-out
// objective. x is row-major n x d. Y_ij is recomputed per pass, never stored.
// Errors: n < 2, d < 1, grid < 2 -> InvalidArgument; d > kMaxLscvDim ->
// ProgramLimit; non-finite -> DataException; singular S -> DataException.
Status lscv(const double* x, size_t n, int d, int grid, Covariance cov, const ExecContext& ctx, LscvResult& out);

// The LSCV objective g(h) exactly as defined in DESIGN.md, for tests and the
// benchmark (CPU, double precision).
Status lscv_objective(const double* x, size_t n, int d, Covariance cov, double h, const ExecContext& ctx, double& g);

}  // namespace approx::kde
