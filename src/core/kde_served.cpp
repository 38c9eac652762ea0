// KDE bandwidths through the GPU service (service.hpp): the plug-in and the
// LSCV search are one request each (Op::KdeBandwidth); the service runs
// plugin_bandwidth() or lscv() on the same input.
#include <cstdint>

#include "kde.hpp"
#include "kde_internal.hpp"
#include "service.hpp"

namespace approx::kde {

namespace {

// The request's parameters (its first input); x follows as n x d doubles,
// the one output is the result (h, or an LscvResult).
struct ServedParams {
    bool lscv;
    uint64_t n;
    int d, grid;
    PluginTarget target;
    Covariance cov;
};

Status bandwidth_request(const ServedParams& p, const double* x, const ExecContext& ctx, void* out, size_t out_bytes) {
    service::Request r(service::Op::KdeBandwidth, static_cast<int64_t>(p.n));
    r.add_param(p);
    r.add_in(x, sizeof(double) * p.n * static_cast<size_t>(p.d));
    r.add_out(out, out_bytes);
    return service::call(ctx, r);
}

}  // namespace

// ---- the backend's side (called by the engine functions in kde.cpp) -----------------------

namespace detail {

Status plugin_in_service(const double* x, size_t n, PluginTarget target, const ExecContext& ctx, double& h) {
    return bandwidth_request(ServedParams{false, n, 1, 0, target, Covariance::Full}, x, ctx, &h, sizeof h);
}

Status lscv_in_service(const double* x, size_t n, int d, int grid, Covariance cov, const ExecContext& ctx,
                       LscvResult& out) {
    return bandwidth_request(ServedParams{true, n, d, grid, PluginTarget::Density, cov}, x, ctx, &out, sizeof out);
}

}  // namespace detail

// ---- the service's side ----------------------------------------------------------------

Status serve_bandwidth(const ExecContext& ctx, const service::Served& req) {
    ServedParams p;
    APPROX_TRY(req.param(0, p));
    if (p.d < 1 || p.d > kMaxLscvDim) return Status::Error(StatusCode::Internal, "GPU service: bad KDE request");
    const double* x = nullptr;
    APPROX_TRY(req.input(1, p.n * static_cast<size_t>(p.d), x));
    if (p.lscv) {
        LscvResult* out = nullptr;
        APPROX_TRY(req.output(0, 1, out));
        return lscv(x, p.n, p.d, p.grid, p.cov, ctx, *out);
    }
    double* h = nullptr;
    APPROX_TRY(req.output(0, 1, h));
    return plugin_bandwidth(x, p.n, p.target, ctx, *h);
}

}  // namespace approx::kde
