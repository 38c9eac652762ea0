// Top-k selection through the GPU service (service.hpp): select() is one
// request (Op::TopkSelect); the service runs select() on the same pairs.
#include <algorithm>
#include <cstdint>

#include "service.hpp"
#include "topk.hpp"
#include "topk_internal.hpp"

namespace approx::topk {

namespace {

// The request's parameters (its first input); ids and scores follow, the
// outputs are the min(k, n) best ids and scores and how many there are.
struct SelectParams {
    uint64_t n, k;
    Order order;
};

}  // namespace

// ---- the backend's side (called by select() in topk.cpp) ---------------------------------

namespace detail {

Status select_in_service(const int64_t* ids, const double* scores, size_t n, size_t k, Order order,
                         const ExecContext& ctx, int64_t* out_ids, double* out_scores, size_t& out_n) {
    const size_t kk = std::min(k, n);
    uint64_t got = 0;
    service::Request r(service::Op::TopkSelect, static_cast<int64_t>(n));
    r.add_param(SelectParams{n, k, order});
    r.add_in(ids, n * sizeof(int64_t));
    r.add_in(scores, n * sizeof(double));
    r.add_out(out_ids, kk * sizeof(int64_t));
    r.add_out(out_scores, kk * sizeof(double));
    r.add_out(&got, sizeof got);
    APPROX_TRY(service::call(ctx, r));
    out_n = static_cast<size_t>(got);
    return Status::Ok();
}

}  // namespace detail

// ---- the service's side ----------------------------------------------------------------

Status serve_select(const ExecContext& ctx, const service::Served& req) {
    SelectParams p;
    APPROX_TRY(req.param(0, p));
    const size_t kk = std::min(p.k, p.n);
    const int64_t* ids = nullptr;
    const double* scores = nullptr;
    int64_t* out_ids = nullptr;
    double* out_scores = nullptr;
    uint64_t* out_n = nullptr;
    APPROX_TRY(req.input(1, p.n, ids));
    APPROX_TRY(req.input(2, p.n, scores));
    APPROX_TRY(req.output(0, kk, out_ids));
    APPROX_TRY(req.output(1, kk, out_scores));
    APPROX_TRY(req.output(2, 1, out_n));
    size_t got = 0;
    Status st = select(ids, scores, p.n, p.k, p.order, ctx, out_ids, out_scores, got);
    *out_n = got;
    return st;
}

}  // namespace approx::topk
