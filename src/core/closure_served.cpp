// Transitive closures through the GPU service (service.hpp).
//
// count_pairs and reachable are one request each. compute() keeps its result
// in the service (service::hold) and gives the backend a ServedResult: the
// vertex ids and component layout come over once (in pages), and the rows of
// the closure bit matrix are fetched a block at a time as next_pairs() walks
// them -- the same walk as over a local result, so the pairs come out in the
// same order. release() asks the service to free the result without waiting
// for the answer (it may run while a query aborts); what a backend leaves
// behind is freed when it exits.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "bitslice.hpp"
#include "closure.hpp"
#include "closure_internal.hpp"
#include "service.hpp"

namespace approx::closure {

using bitslice::words_for;

namespace {

enum class ClosureOp : uint32_t { CountPairs = 1, Reachable, Compute, Layout, Rows, Release };
enum class LayoutPart : int32_t { Ids = 0, CompStart, Members };

struct ClosureParams {
    ClosureOp what = ClosureOp::CountPairs;
    uint64_t handle = 0;
    Options opt;
    uint64_t n_edges = 0;
    int64_t source = 0;  // Reachable
    int64_t first = 0;   // Layout, Rows: the first entry or row
    int64_t count = 0;   // Layout, Rows: how many; Reachable: room for ids
    LayoutPart part = LayoutPart::Ids;
};

struct ClosureReply {
    uint64_t handle = 0;
    int32_t device = -1;  // where a kept result lives (its requests go there)
    int64_t value = 0;    // pairs (CountPairs, Compute) or ids found (Reachable)
    int64_t vertices = 0;
    int64_t comps = 0;
};

struct HeldResult final : service::Held {
    Result* result = nullptr;
    ~HeldResult() override { release(result); }
};

// Rows per request: about 8 MB of bit matrix.
int64_t rows_per_request(int64_t words) {
    return std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(words, 1));
}
// Layout entries per request.
constexpr int64_t kLayoutEntries = int64_t(1) << 22;

Status one_request(const ExecContext& ctx, const ClosureParams& p, int device, const void* in1, size_t b1,
                   const void* in2, size_t b2, void* out1, size_t o1, ClosureReply& reply, bool detached = false) {
    service::Request r(service::Op::Closure, static_cast<int64_t>(p.n_edges));
    r.device = device;
    r.detached = detached;
    r.add_param(p);
    r.add_in(in1, b1);
    r.add_in(in2, b2);
    r.add_out(&reply, sizeof reply);
    r.add_out(out1, o1);
    return service::call(ctx, r);
}

// A closure kept by the service; see the top of the file.
struct ServedResult final : Result {
    uint64_t handle = 0;
    int device = -1;
    ExecContext ctx;  // the transport and settings of the call that made it (no statistics)
    std::vector<uint64_t> block;

    ~ServedResult() override {
        ClosureParams p;
        p.what = ClosureOp::Release;
        p.handle = handle;
        ClosureReply reply;
        (void)one_request(ctx, p, device, nullptr, 0, nullptr, 0, nullptr, 0, reply, true);
    }

    Status rows(int64_t first, int64_t count, const uint64_t*& p, int64_t& stride) override {
        const int64_t words = words_for(comps);
        APPROX_TRY(guarded([&] {
            block.resize(static_cast<size_t>(count * words));
            return Status::Ok();
        }));
        ClosureParams q;
        q.what = ClosureOp::Rows;
        q.handle = handle;
        q.first = first;
        q.count = count;
        ClosureReply reply;
        APPROX_TRY(one_request(ctx, q, device, nullptr, 0, nullptr, 0, block.data(), block.size() * sizeof(uint64_t),
                               reply));
        p = block.data();
        stride = words;
        return Status::Ok();
    }
    int64_t rows_per_fetch() const override { return rows_per_request(words_for(comps)); }
};

// Fills r's ids, comp_start and members from the service, in pages.
Status fetch_layout(ServedResult& r, int64_t vertices) {
    auto part = [&](LayoutPart which, void* dst, int64_t n, size_t elem) -> Status {
        for (int64_t at = 0; at < n;) {
            const int64_t take = std::min(n - at, kLayoutEntries);
            ClosureParams p;
            p.what = ClosureOp::Layout;
            p.handle = r.handle;
            p.part = which;
            p.first = at;
            p.count = take;
            ClosureReply reply;
            APPROX_TRY(one_request(r.ctx, p, r.device, nullptr, 0, nullptr, 0, static_cast<char*>(dst) + at * elem,
                                   static_cast<size_t>(take) * elem, reply));
            at += take;
        }
        return Status::Ok();
    };
    APPROX_TRY(guarded([&] {
        r.ids.resize(static_cast<size_t>(vertices));
        r.comp_start.resize(static_cast<size_t>(r.comps + 1));
        r.members.resize(static_cast<size_t>(vertices));
        return Status::Ok();
    }));
    APPROX_TRY(part(LayoutPart::Ids, r.ids.data(), vertices, sizeof(int64_t)));
    APPROX_TRY(part(LayoutPart::CompStart, r.comp_start.data(), r.comps + 1, sizeof(int32_t)));
    return part(LayoutPart::Members, r.members.data(), vertices, sizeof(int32_t));
}

}  // namespace

// ---- the service's side ----------------------------------------------------------------

Status serve_closure(const ExecContext& ctx, const service::Served& req) {
    ClosureParams p;
    APPROX_TRY(req.param(0, p));
    ClosureReply* reply = nullptr;
    APPROX_TRY(req.output(0, 1, reply));
    const size_t n = static_cast<size_t>(p.n_edges);
    const int64_t *src = nullptr, *dst = nullptr;
    const bool edges = p.what == ClosureOp::CountPairs || p.what == ClosureOp::Reachable ||
                       p.what == ClosureOp::Compute;
    APPROX_TRY(req.input(1, edges ? n : 0, src));
    APPROX_TRY(req.input(2, edges ? n : 0, dst));
    switch (p.what) {
        case ClosureOp::CountPairs: return count_pairs(src, dst, n, p.opt, ctx, reply->value);
        case ClosureOp::Reachable: {
            int64_t* out = nullptr;
            APPROX_TRY(req.output(1, static_cast<size_t>(p.count), out));
            size_t found = 0;
            APPROX_TRY(reachable(src, dst, n, p.source, ctx, out, static_cast<size_t>(p.count), found));
            reply->value = static_cast<int64_t>(found);
            return Status::Ok();
        }
        case ClosureOp::Compute: {
            std::shared_ptr<HeldResult> h;
            APPROX_TRY(guarded([&] {
                h = std::make_shared<HeldResult>();
                return Status::Ok();
            }));
            APPROX_TRY(compute(src, dst, n, p.opt, ctx, &h->result));
            if (ctx.cancelled()) return cancelled_status();  // its backend stopped waiting: keep nothing
            APPROX_TRY(service::hold(req, h, reply->handle));
            reply->device = req.device;
            reply->value = h->result->pairs;
            reply->vertices = static_cast<int64_t>(h->result->ids.size());
            reply->comps = h->result->comps;
            return Status::Ok();
        }
        case ClosureOp::Release: service::unhold(p.handle); return Status::Ok();
        default: break;
    }
    std::shared_ptr<HeldResult> h =
        std::static_pointer_cast<HeldResult>(service::held(req, p.handle, service::Op::Closure));
    if (!h) return service::lost_held();
    Result& r = *h->result;
    if (p.first < 0 || p.count < 0) return Status::Error(StatusCode::Internal, "GPU service: bad closure range");
    if (p.what == ClosureOp::Layout) {
        const void* from = nullptr;
        size_t elem = 0, total = 0;
        switch (p.part) {
            case LayoutPart::Ids: from = r.ids.data(), elem = sizeof(int64_t), total = r.ids.size(); break;
            case LayoutPart::CompStart:
                from = r.comp_start.data(), elem = sizeof(int32_t), total = r.comp_start.size();
                break;
            case LayoutPart::Members: from = r.members.data(), elem = sizeof(int32_t), total = r.members.size(); break;
        }
        if (elem == 0 || static_cast<size_t>(p.first + p.count) > total)
            return Status::Error(StatusCode::Internal, "GPU service: closure layout request past its end");
        char* out = nullptr;
        APPROX_TRY(req.output(1, static_cast<size_t>(p.count) * elem, out));
        if (p.count > 0)
            std::memcpy(out, static_cast<const char*>(from) + p.first * elem, static_cast<size_t>(p.count) * elem);
        return Status::Ok();
    }
    if (p.what == ClosureOp::Rows) {
        const int64_t words = words_for(r.comps);
        if (p.first + p.count > r.comps)
            return Status::Error(StatusCode::Internal, "GPU service: closure rows past the end");
        uint64_t* out = nullptr;
        APPROX_TRY(req.output(1, static_cast<size_t>(p.count * words), out));
        // In blocks the result itself likes (a GPU result copies its rows to the host).
        for (int64_t at = 0; at < p.count;) {
            const int64_t take = std::min(p.count - at, r.rows_per_fetch());
            const uint64_t* rows = nullptr;
            int64_t stride = 0;
            APPROX_TRY(r.rows(p.first + at, take, rows, stride));
            for (int64_t i = 0; i < take; ++i)
                std::memcpy(out + (at + i) * words, rows + i * stride, static_cast<size_t>(words) * sizeof(uint64_t));
            at += take;
        }
        return Status::Ok();
    }
    return Status::Error(StatusCode::Internal, "GPU service: unknown closure operation %u",
                         static_cast<unsigned>(p.what));
}

// ---- the backend's side (called by the engine functions in closure.cpp) -----------------

namespace {

// A request over the edge list (on any executor).
Status edge_request(ClosureParams p, const ExecContext& ctx, const int64_t* src, const int64_t* dst, size_t n_edges,
                    void* out, size_t out_bytes, ClosureReply& reply) {
    p.n_edges = n_edges;
    return one_request(ctx, p, -1, src, n_edges * sizeof(int64_t), dst, n_edges * sizeof(int64_t), out, out_bytes,
                       reply);
}

}  // namespace

Status count_pairs_in_service(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt,
                              const ExecContext& ctx, int64_t& pairs) {
    ClosureParams p;
    p.what = ClosureOp::CountPairs;
    p.opt = opt;
    ClosureReply reply;
    APPROX_TRY(edge_request(p, ctx, src, dst, n_edges, nullptr, 0, reply));
    pairs = reply.value;
    return Status::Ok();
}

Status reachable_in_service(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source,
                            const ExecContext& ctx, int64_t* out, size_t cap, size_t& n) {
    ClosureParams p;
    p.what = ClosureOp::Reachable;
    p.source = source;
    p.count = static_cast<int64_t>(cap);
    ClosureReply reply;
    APPROX_TRY(edge_request(p, ctx, src, dst, n_edges, out, cap * sizeof(int64_t), reply));
    n = static_cast<size_t>(reply.value);
    return Status::Ok();
}

Status compute_in_service(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt,
                          const ExecContext& ctx, Result** out) {
    ClosureParams p;
    p.what = ClosureOp::Compute;
    p.opt = opt;
    ClosureReply reply;
    APPROX_TRY(edge_request(p, ctx, src, dst, n_edges, nullptr, 0, reply));
    std::unique_ptr<ServedResult> r;
    Status st = guarded([&] {
        r.reset(new ServedResult());
        return Status::Ok();
    });
    if (!st.ok()) {
        ServedResult gone;  // its destructor frees the result in the service
        gone.handle = reply.handle;
        gone.device = reply.device;
        gone.ctx = ctx;
        gone.ctx.stats = nullptr;
        return st;
    }
    r->handle = reply.handle;
    r->device = reply.device;
    r->ctx = ctx;
    r->ctx.stats = nullptr;
    r->comps = reply.comps;
    r->pairs = reply.value;
    APPROX_TRY(fetch_layout(*r, reply.vertices));
    *out = r.release();
    return Status::Ok();
}

}  // namespace approx::closure
