// Box estimates through the GPU service (service.hpp): evaluate() is one
// request (Op::SynopsisEvaluate); the service runs evaluate() on the same
// synopsis and boxes. The sample is the request's cacheable input, so it
// stays resident in the service after the first call.
#include <cstdint>

#include "service.hpp"
#include "synopsis.hpp"
#include "synopsis_served.hpp"

namespace approx::synopsis {

namespace {

// The request's parameters (its first input); the pointers inside travel as
// the blobs that follow (sample, strata, lo, hi, nulls, stratum), the one
// output is the q estimates.
struct EvaluateParams {
    Synopsis s;
    BoxBatch boxes;
};

}  // namespace

// ---- the backend's side (called by evaluate() in synopsis.cpp) ---------------------------

Status evaluate_in_service(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxEstimate* out) {
    const size_t q = static_cast<size_t>(boxes.q), d = static_cast<size_t>(s.d);
    service::Request r(service::Op::SynopsisEvaluate, boxes.q * s.m);
    r.add_param(EvaluateParams{s, boxes});
    r.add_in(s.sample, sizeof(double) * static_cast<size_t>(s.m) * d);
    r.cache_last_input(s.sample_key);  // the sample: resident in the service after the first call
    r.add_in(s.strata, sizeof(Stratum) * static_cast<size_t>(s.n_strata));
    r.add_in(boxes.lo, sizeof(double) * q * d);
    r.add_in(boxes.hi, sizeof(double) * q * d);
    r.add_in(boxes.nulls, q * d);
    r.add_in(boxes.stratum, sizeof(int32_t) * q);
    r.add_out(out, sizeof(BoxEstimate) * q);
    return service::call(ctx, r);
}

// ---- the service's side ----------------------------------------------------------------

Status serve_evaluate(const ExecContext& ctx, const service::Served& req) {
    EvaluateParams p;
    APPROX_TRY(req.param(0, p));
    Synopsis& s = p.s;
    BoxBatch& b = p.boxes;
    if (s.m < 0 || s.d < 1 || s.d > kMaxDim || s.n_strata < 0 || b.q < 0)
        return Status::Error(StatusCode::Internal, "GPU service: bad synopsis request");
    const size_t q = static_cast<size_t>(b.q), d = static_cast<size_t>(s.d);
    APPROX_TRY(req.input(1, static_cast<size_t>(s.m) * d, s.sample));
    APPROX_TRY(req.input(2, static_cast<size_t>(s.n_strata), s.strata));
    APPROX_TRY(req.input(3, q * d, b.lo));
    APPROX_TRY(req.input(4, q * d, b.hi));
    const uint8_t* nulls = nullptr;
    APPROX_TRY(req.input(5, b.nulls ? q * d : 0, nulls));
    b.nulls = nulls;
    const int32_t* stratum = nullptr;
    APPROX_TRY(req.input(6, b.stratum ? q : 0, stratum));
    b.stratum = stratum;
    BoxEstimate* out = nullptr;
    APPROX_TRY(req.output(0, q, out));
    return evaluate(s, b, ctx, out);
}

}  // namespace approx::synopsis
