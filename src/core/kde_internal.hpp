// Internal interface between the KDE driver (kde.cpp), its two engines
// (kde_cpu.cpp, cuda/kde.cu) and its GPU-service requests (kde_served.cpp).
// Not part of the engine API.
//
// The driver prepares the data in fp64 (centred and scaled, or whitened) and
// owns every formula; an engine only computes pair sums over that prepared
// data, keeping it resident (the GPU engine uploads it once) for as many
// passes as the driver asks for. GPU factories are referenced only through
// APPROX_GPU(...), so a CPU-only build links without cuda/kde.o.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>

#include "exec.hpp"
#include "kde.hpp"

namespace approx::kde::detail {

constexpr double kPi = 3.14159265358979323846;
constexpr double kPhi0 = 0.39894228040143267794;  // 1/sqrt(2 pi), the normal density at 0

// Hermite factor of the r-th derivative of the Gaussian kernel: K_r(x) = He_r(x) phi(x).
inline double hermite(int r, double t2) {
    switch (r) {
        case 2: return t2 - 1.0;
        case 4: return (t2 - 6.0) * t2 + 3.0;
        default: return ((t2 - 15.0) * t2 + 45.0) * t2 - 15.0;  // r = 6
    }
}
inline double kernel_at_zero(int r) { return hermite(r, 0.0) * kPhi0; }

// Plug-in pair sums over 1-D data z (centred and scaled, fp64 on the host).
class PsiSums {
public:
    virtual ~PsiSums() = default;
    // out = sum_i sum_j K_r((z_i - z_j) / g) over all ordered pairs, i = j
    // included; r is 2, 4 or 6; g > 0.
    virtual Status sum(int r, double g, double& out) = 0;
};

// LSCV pair sums over whitened points z (n x d row-major), Y_ij = |z_i - z_j|^2.
class LscvSums {
public:
    virtual ~LscvSums() = default;
    // For k < nh: s4[k] = sum_{i<j} exp(-Y_ij / (4 h_k^2)),
    //             s2[k] = sum_{i<j} exp(-Y_ij / (2 h_k^2)).
    // One pass over the pairs serves every h_k (the grid is one pass).
    virtual Status sums(const double* h, int nh, double* s4, double* s2) = 0;
    // The same for one h at the engine's best accuracy: the reported
    // objective comes from here (the GPU's search passes use fast fp32
    // exponentials; the CPU's are exact already).
    virtual Status precise_sums(double h, double& s4, double& s2) { return sums(&h, 1, &s4, &s2); }
};

// Engine factories. z must stay alive and unchanged while the object is used
// (the CPU engine reads it in place; the GPU engine copies it at creation).
Status cpu_psi_sums(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out);
Status cpu_lscv_sums(const double* z, size_t n, int d, const ExecContext& ctx, std::unique_ptr<LscvSums>& out);
Status gpu_psi_sums(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out);
// The same sums on linearly binned data (kde_binned.cpp): O(n) per stage plus
// O(bins), the grid's step a fixed fraction of g; CPU only (a stage costs
// milliseconds at n = 10^7: nothing for a GPU to win). A grid of more than
// max_dense_bins bins is kept sparse (a sorted copy of z); the default, 2^22
// bins, is 32 MiB of weights.
constexpr size_t kMaxDenseBins = size_t{1} << 22;
Status binned_psi_sums(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out);
Status binned_psi_sums_capped(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out,
                       size_t max_dense_bins);
Status gpu_lscv_sums(const double* z, size_t n, int d, const ExecContext& ctx, std::unique_ptr<LscvSums>& out);

// plugin_bandwidth() and lscv() in the GPU service (kde_served.cpp): the
// request's status, for service::try_run.
Status plugin_in_service(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h);
Status lscv_in_service(const double* x, size_t n, int d, int grid, Covariance cov, const ExecContext& ctx,
                       LscvResult& out);

}  // namespace approx::kde::detail
