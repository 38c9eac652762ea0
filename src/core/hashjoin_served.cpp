// Hash-join counts through the GPU service (service.hpp): join_count() is one
// request (Op::HashjoinCount); the service runs join_count() on the same
// sides. Joins with a sink (rows back to the caller) run in the backend.
#include <cstdint>

#include "hashjoin.hpp"
#include "hashjoin_served.hpp"
#include "service.hpp"

namespace approx::hashjoin {

namespace {

// The request's parameters (its first input); the build side's keys and
// values and the probe side's follow (values may be absent), the one output
// is the JoinInfo.
struct CountParams {
    uint64_t build_n, probe_n;
    bool build_values, probe_values;
    JoinOptions options;
};

}  // namespace

// ---- the backend's side (called by join_count() in hashjoin.cpp) -------------------------

Status join_count_in_service(const JoinSide& build, const JoinSide& probe, const ExecContext& ctx, JoinInfo& info,
                             const JoinOptions& options) {
    info = JoinInfo();
    service::Request r(service::Op::HashjoinCount, static_cast<int64_t>(build.n + probe.n));
    r.add_param(CountParams{build.n, probe.n, build.values != nullptr, probe.values != nullptr, options});
    r.add_in(build.keys, build.n * sizeof(int64_t));
    r.add_in(build.values, build.n * sizeof(int64_t));
    r.add_in(probe.keys, probe.n * sizeof(int64_t));
    r.add_in(probe.values, probe.n * sizeof(int64_t));
    r.add_out(&info, sizeof info);
    return service::call(ctx, r);
}

// ---- the service's side ----------------------------------------------------------------

Status serve_join_count(const ExecContext& ctx, const service::Served& req) {
    CountParams p;
    APPROX_TRY(req.param(0, p));
    JoinSide build, probe;
    build.n = p.build_n;
    probe.n = p.probe_n;
    APPROX_TRY(req.input(1, p.build_n, build.keys));
    APPROX_TRY(req.input(2, p.build_values ? p.build_n : 0, build.values));
    APPROX_TRY(req.input(3, p.probe_n, probe.keys));
    APPROX_TRY(req.input(4, p.probe_values ? p.probe_n : 0, probe.values));
    JoinInfo* info = nullptr;
    APPROX_TRY(req.output(0, 1, info));
    return join_count(build, probe, ctx, *info, p.options);  // no transport in the service: runs here
}

}  // namespace approx::hashjoin
