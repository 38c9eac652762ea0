// Moving-object indexes held by the GPU service (service.hpp).
//
// With the service in use, mo_create makes the index in the service -- on its
// GPU, or with its CPU engines under the CI test setting -- and the backend
// keeps a ServedIndex: a proxy whose every call is one request (Op::MovingIndex)
// to the executor of the device that holds the index. Backends then open no
// CUDA context for moving objects either, and the index's memory comes from
// the service's pool.
//
// The service keeps its indexes as session state (service::hold: by handle,
// for the session and device that made them; a handle from an earlier
// incarnation or another session finds nothing). It frees an index on
// mo_drop (close()) and when the backend exits (service::reap_held). When the
// service itself restarts, its indexes are gone; their proxies answer every
// call with an error that says so.
//
// Batches larger than one request may carry (the staging area is shared by
// every backend) go in parts: the service collects the parts of an update or
// delete and applies the whole batch at the last one, so a batch is still
// applied entirely or not at all; range counts go in independent chunks;
// range_ids results come back in pages of a list the service keeps between
// them.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "moving.hpp"
#include "service.hpp"

namespace approx::moving {

namespace {

enum class IndexOp : uint32_t { Create = 1, Update, Remove, Count, Ids, Drop };

struct IndexParams {
    IndexOp what = IndexOp::Create;
    uint64_t handle = 0;  // every op but Create
    Grid grid;            // Create
    int64_t max_cells = 0;
    MemoryBudget budget;
    int64_t n = 0;                          // entries of this part (Update, Remove, Count); Ids: offset into the result
    int64_t capacity = 0;                   // Ids: ids wanted from the offset (0: only count them)
    int32_t first_part = 1, last_part = 1;  // Update, Remove
    Rect q{0, 0, 0, 0};                     // Ids
};

struct IndexReply {
    uint64_t handle = 0;
    int32_t device = -1;  // the executor that holds the index (-1: the CPU engines)
    int64_t result = 0;   // applied, removed or found
    int64_t bytes = 0;    // what the index holds now
    Info info;
};

// ---- the service's side ----------------------------------------------------------------

struct Held final : service::Held {
    std::unique_ptr<Index> index;
    // An update or delete arriving in parts.
    std::vector<int64_t> ids;
    std::vector<double> xs, ys;
    // The last range_ids result, paged out.
    bool listed = false;
    Rect listed_q{0, 0, 0, 0};
    std::vector<int64_t> list;
};

template <class T>
void release(std::vector<T>& v) {
    std::vector<T>().swap(v);
}

void reply_for(const Held& h, uint64_t handle, int64_t result, IndexReply& r) {
    r.handle = handle;
    r.device = h.device;
    r.result = result;
    r.bytes = h.index->bytes();
    h.index->info(r.info);
    r.info.in_service = true;
}

// An update or delete part: collected until the last one, then applied.
Status apply_part(Held& h, const IndexParams& p, const service::Served& req, const ExecContext& ctx, int64_t& applied) {
    const bool is_delete = p.what == IndexOp::Remove;
    const size_t n = static_cast<size_t>(p.n);
    const int64_t* ids = nullptr;
    const double *xs = nullptr, *ys = nullptr;
    APPROX_TRY(req.input(1, n, ids));
    APPROX_TRY(req.input(2, is_delete ? 0 : n, xs));
    APPROX_TRY(req.input(3, is_delete ? 0 : n, ys));
    if (p.first_part) {
        release(h.ids);
        release(h.xs);
        release(h.ys);
    }
    if (p.first_part && p.last_part)  // one part: straight from the staging area
        return is_delete ? h.index->remove(ids, n, ctx, applied) : h.index->update(ids, xs, ys, n, ctx, applied);
    APPROX_TRY(guarded([&] {
        h.ids.insert(h.ids.end(), ids, ids + n);
        if (!is_delete) {
            h.xs.insert(h.xs.end(), xs, xs + n);
            h.ys.insert(h.ys.end(), ys, ys + n);
        }
        return Status::Ok();
    }));
    if (!p.last_part) return Status::Ok();
    Status st = is_delete ? h.index->remove(h.ids.data(), h.ids.size(), ctx, applied)
                          : h.index->update(h.ids.data(), h.xs.data(), h.ys.data(), h.ids.size(), ctx, applied);
    release(h.ids);
    release(h.xs);
    release(h.ys);
    return st;
}

// A page of range_ids: offset 0 runs the search (and keeps the list when more
// than one page is wanted); later pages read the kept list.
Status ids_page(Held& h, const IndexParams& p, const service::Served& req, const ExecContext& ctx, int64_t& found) {
    int64_t* out = nullptr;
    APPROX_TRY(req.output(1, static_cast<size_t>(p.capacity), out));
    if (p.capacity == 0) {
        size_t n = 0;
        APPROX_TRY(h.index->range_ids(p.q, ctx, nullptr, 0, n));
        found = static_cast<int64_t>(n);
        return Status::Ok();
    }
    const bool same = h.listed && std::memcmp(&h.listed_q, &p.q, sizeof p.q) == 0;
    if (p.n == 0 || !same) {
        h.listed = false;
        release(h.list);
        size_t n = 0;
        APPROX_TRY(h.index->range_ids(p.q, ctx, nullptr, 0, n));
        APPROX_TRY(guarded([&] {
            h.list.resize(n);
            return Status::Ok();
        }));
        size_t filled = 0;
        APPROX_TRY(h.index->range_ids(p.q, ctx, h.list.data(), n, filled));
        if (filled != n)
            return Status::Error(StatusCode::Internal, "the index reported %zu objects, then %zu", n, filled);
        h.listed = true;
        h.listed_q = p.q;
    }
    found = static_cast<int64_t>(h.list.size());
    if (p.n < 0 || p.n > found) return Status::Error(StatusCode::Internal, "range_ids page past the result");
    const int64_t take = std::min(p.capacity, found - p.n);
    std::memcpy(out, h.list.data() + p.n, sizeof(int64_t) * static_cast<size_t>(take));
    if (p.n + take >= found) {  // the last page: let the list go
        h.listed = false;
        release(h.list);
    }
    return Status::Ok();
}

}  // namespace

Status serve_index(const ExecContext& ctx, const service::Served& req) {
    IndexParams p;
    APPROX_TRY(req.param(0, p));
    IndexReply* reply = nullptr;
    APPROX_TRY(req.output(0, 1, reply));
    if (p.what == IndexOp::Create) {
        Index* made = nullptr;
        APPROX_TRY(create(p.grid, p.max_cells, ctx, made, p.budget));  // the service's engines (no transport here)
        std::shared_ptr<Held> h;
        APPROX_TRY(guarded([&] {
            h = std::make_shared<Held>();
            return Status::Ok();
        }));
        h->index.reset(made);
        if (ctx.cancelled()) return cancelled_status();  // its backend stopped waiting: keep nothing
        uint64_t handle = 0;
        APPROX_TRY(service::hold(req, h, handle));
        reply_for(*h, handle, 0, *reply);
        return Status::Ok();
    }
    std::shared_ptr<Held> h = std::static_pointer_cast<Held>(service::held(req, p.handle, service::Op::MovingIndex));
    if (!h) return service::lost_held();
    if (p.what == IndexOp::Drop) {
        service::unhold(p.handle);
        return Status::Ok();  // freed with the last reference, on this executor's thread
    }
    h->index->set_budget(p.budget);
    int64_t result = 0;
    switch (p.what) {
        case IndexOp::Update:
        case IndexOp::Remove: APPROX_TRY(apply_part(*h, p, req, ctx, result)); break;
        case IndexOp::Count: {
            const Rect* qs = nullptr;
            int64_t* counts = nullptr;
            APPROX_TRY(req.input(1, static_cast<size_t>(p.n), qs));
            APPROX_TRY(req.output(1, static_cast<size_t>(p.n), counts));
            APPROX_TRY(h->index->range_count(qs, static_cast<size_t>(p.n), ctx, counts));
            result = p.n;
            break;
        }
        case IndexOp::Ids: APPROX_TRY(ids_page(*h, p, req, ctx, result)); break;
        default:
            return Status::Error(StatusCode::Internal, "GPU service: unknown index operation %u",
                                 static_cast<unsigned>(p.what));
    }
    reply_for(*h, p.handle, result, *reply);
    return Status::Ok();
}

// ---- the backend's side ----------------------------------------------------------------

namespace {

// Entries per request part: 2^20 updates are 24 MB of the staging area; a
// part that still does not fit (a small approx_gpu.service_staging_size, a
// busy area) is halved.
constexpr int64_t kPartEntries = int64_t(1) << 20;
constexpr int64_t kMinPartEntries = 256;

class ServedIndex final : public Index {
public:
    explicit ServedIndex(const IndexReply& r) : handle_(r.handle), device_(r.device), last_(r) {}

    Device device() const override { return last_.info.device; }
    int64_t bytes() const override { return last_.bytes; }
    void info(Info& out) const override { out = last_.info; }

    Status close(const ExecContext& ctx) noexcept override {
        if (closed_) return Status::Ok();
        IndexParams p = params(IndexOp::Drop);
        IndexReply r;
        Status st = send(ctx, p, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, r);
        closed_ = true;
        return st;
    }

protected:
    Status apply_batch(bool is_delete, const int64_t* ids, const double* xs, const double* ys, size_t n,
                       const ExecContext& ctx, int64_t& applied) override {
        int64_t part = kPartEntries;
        size_t at = 0;
        bool first = true;
        for (;;) {
            const size_t take = std::min<size_t>(n - at, static_cast<size_t>(part));
            IndexParams p = params(is_delete ? IndexOp::Remove : IndexOp::Update);
            p.n = static_cast<int64_t>(take);
            p.first_part = first;
            p.last_part = at + take == n;
            IndexReply r;
            Status st = send(ctx, p, ids + at, sizeof(int64_t) * take, is_delete ? nullptr : xs + at,
                             sizeof(double) * take, is_delete ? nullptr : ys + at, sizeof(double) * take, nullptr, 0,
                             r);
            if (st.code == StatusCode::NotServed && part > kMinPartEntries && take > 1) {
                part /= 2;
                continue;
            }
            APPROX_TRY(st);
            first = false;
            at += take;
            if (at == n) {
                applied = r.result;
                return Status::Ok();
            }
        }
    }

    Status count_ranges(const Rect* qs, size_t nq, const ExecContext& ctx, int64_t* counts) override {
        int64_t part = kPartEntries;
        size_t at = 0;
        while (at < nq) {
            const size_t take = std::min<size_t>(nq - at, static_cast<size_t>(part));
            IndexParams p = params(IndexOp::Count);
            p.n = static_cast<int64_t>(take);
            IndexReply r;
            Status st = send(ctx, p, qs + at, sizeof(Rect) * take, nullptr, 0, nullptr, 0, counts + at,
                             sizeof(int64_t) * take, r);
            if (st.code == StatusCode::NotServed && part > kMinPartEntries && take > 1) {
                part /= 2;
                continue;
            }
            APPROX_TRY(st);
            at += take;
        }
        return Status::Ok();
    }

    Status list_range(const Rect& q, const ExecContext& ctx, int64_t* out, size_t capacity, size_t& found) override {
        IndexParams p = params(IndexOp::Ids);
        p.q = q;
        IndexReply r;
        if (capacity == 0) {
            APPROX_TRY(send(ctx, p, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0, r));
            found = static_cast<size_t>(r.result);
            return Status::Ok();
        }
        // Pages of the list the service keeps after the first (offset 0) runs the search.
        const int64_t room = static_cast<int64_t>(capacity);
        int64_t page = 2 * kPartEntries;
        int64_t at = 0;
        for (;;) {
            p.n = at;
            p.capacity = std::min<int64_t>(room - at, page);
            Status st = send(ctx, p, nullptr, 0, nullptr, 0, nullptr, 0, out + at,
                             sizeof(int64_t) * static_cast<size_t>(p.capacity), r);
            if (st.code == StatusCode::NotServed && page > kMinPartEntries) {
                page /= 2;
                continue;
            }
            APPROX_TRY(st);
            found = static_cast<size_t>(r.result);
            if (r.result > room) return Status::Ok();  // more than the caller has room for: only the count
            at += std::min<int64_t>(p.capacity, r.result - at);
            if (at >= r.result) return Status::Ok();
        }
    }

private:
    IndexParams params(IndexOp what) const {
        IndexParams p;
        p.what = what;
        p.handle = handle_;
        p.budget = budget_;
        return p;
    }

    // One request on the index; the reply refreshes what bytes() and info() say.
    Status send(const ExecContext& ctx, const IndexParams& p, const void* in1, size_t b1, const void* in2, size_t b2,
                const void* in3, size_t b3, void* out1, size_t o1, IndexReply& reply) {
        if (closed_) return Status::Error(StatusCode::Internal, "the index was closed");
        if (ctx.service == nullptr)
            return Status::Error(StatusCode::ServiceDown,
                                 "the index lives in the GPU service, which this session does not use now "
                                 "(approx_gpu.use_service)");
        service::Request r(service::Op::MovingIndex, p.n);
        r.device = device_;
        r.add_param(p);
        r.add_in(in1, b1);
        r.add_in(in2, b2);
        r.add_in(in3, b3);
        r.add_out(&reply, sizeof reply);
        r.add_out(out1, o1);
        APPROX_TRY(service::call(ctx, r));
        if (p.what != IndexOp::Drop) last_ = reply;
        return Status::Ok();
    }

    uint64_t handle_;
    int device_;
    IndexReply last_;
    bool closed_ = false;
};

}  // namespace

// create()'s way into the service: the index made there, or a status for
// service::try_run.
Status create_in_service(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out,
                         const MemoryBudget& budget) {
    IndexParams p;
    p.what = IndexOp::Create;
    p.grid = g;
    p.max_cells = max_cells;
    p.budget = budget;
    IndexReply reply;
    service::Request r(service::Op::MovingIndex, 0);
    r.add_param(p);
    r.add_in(nullptr, 0);
    r.add_in(nullptr, 0);
    r.add_in(nullptr, 0);
    r.add_out(&reply, sizeof reply);
    r.add_out(nullptr, 0);
    APPROX_TRY(service::call(ctx, r));
    return guarded([&] {
        out = new ServedIndex(reply);
        return Status::Ok();
    });
}

}  // namespace approx::moving
