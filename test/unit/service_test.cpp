// The GPU service's engine side (core/service.hpp): requests, the fallback
// rule, the resident cache, and every served operation through a loopback
// transport (the request's blobs copied as the glue's staging area would,
// served with the CPU engines) against the same call made directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/closure.hpp"
#include "core/hashjoin.hpp"
#include "core/kde.hpp"
#include "core/moving.hpp"
#include "core/service.hpp"
#include "core/synopsis.hpp"
#include "core/topk.hpp"
#include "unit_ctx.hpp"

using namespace approx;

namespace {

int loopback_calls = 0;
uint64_t loopback_owner = 7;           // the session the loopback "backend" is
size_t loopback_max_bytes = SIZE_MAX;  // the staging area: larger requests are NotServed

// Copies every blob (as into the staging area), serves the request with the
// CPU engines, copies the outputs back.
Status loopback(const ExecContext&, service::Request& req) {
    ++loopback_calls;
    size_t total = 0;
    for (int i = 0; i < req.n_in; ++i) total += req.in_bytes[i];
    for (int i = 0; i < req.n_out; ++i) total += req.out_bytes[i];
    if (total > loopback_max_bytes) return Status::Error(StatusCode::NotServed, "larger than the staging area");
    std::vector<std::vector<unsigned char>> ins(static_cast<size_t>(req.n_in)), outs(static_cast<size_t>(req.n_out));
    service::Served s;
    s.op = req.op;
    s.owner = loopback_owner;
    s.incarnation = 1;
    s.device = -1;
    s.n_in = req.n_in;
    s.n_out = req.n_out;
    for (int i = 0; i < req.n_in; ++i) {
        const unsigned char* p = static_cast<const unsigned char*>(req.in[i]);
        ins[i].assign(p, p + req.in_bytes[i]);
        s.in[i] = ins[i].data();
        s.in_bytes[i] = req.in_bytes[i];
    }
    for (int i = 0; i < req.n_out; ++i) {
        outs[i].assign(req.out_bytes[i], 0xab);
        s.out[i] = outs[i].data();
        s.out_bytes[i] = req.out_bytes[i];
    }
    ExecContext sc = cpu_ctx();
    RunStats stats;
    sc.stats = &stats;
    Status st = service::serve(sc, s);
    if (st.ok())
        for (int i = 0; i < req.n_out; ++i)
            if (req.out_bytes[i]) std::memcpy(req.out[i], outs[i].data(), req.out_bytes[i]);
    return st;
}

Status busy(const ExecContext&, service::Request&) {
    return Status::Error(StatusCode::ServiceBusy, "waited 5 ms for the GPU service");
}

// A context whose calls go to the loopback "service" (device = gpu: always wanted).
ExecContext served_ctx(service::Transport t = loopback) {
    ExecContext ctx = cpu_ctx();
    ctx.mode = DeviceMode::Gpu;
    ctx.service = t;
    return ctx;
}

}  // namespace

TEST(ServiceRequest, ContentHashSeesEveryByte) {
    std::vector<unsigned char> a(1000);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 7);
    const uint64_t h = service::content_hash(a.data(), a.size());
    EXPECT_NE(h, 0u);
    EXPECT_EQ(h, service::content_hash(a.data(), a.size()));
    for (size_t at : {size_t(0), size_t(31), size_t(500), size_t(999)}) {
        std::vector<unsigned char> b = a;
        b[at] ^= 1;
        EXPECT_NE(h, service::content_hash(b.data(), b.size())) << at;
    }
    EXPECT_NE(h, service::content_hash(a.data(), a.size() - 1));
}

TEST(ServiceRequest, ServedChecksEverySize) {
    double v[4] = {1, 2, 3, 4};
    double out[2];
    service::Served s;
    s.op = service::Op::TopkSelect;
    s.n_in = 1;
    s.in[0] = v;
    s.in_bytes[0] = sizeof v;
    s.n_out = 1;
    s.out[0] = out;
    s.out_bytes[0] = sizeof out;
    const double* p = nullptr;
    double* q = nullptr;
    EXPECT_TRUE(s.input(0, 4, p).ok());
    EXPECT_EQ(s.input(0, 3, p).code, StatusCode::Internal);
    EXPECT_EQ(s.input(1, 0, p).code, StatusCode::Internal);  // no such input
    EXPECT_TRUE(s.output(0, 2, q).ok());
    EXPECT_EQ(s.output(0, 4, q).code, StatusCode::Internal);
    struct Big {
        double x[5];
    } big;
    EXPECT_EQ(s.param(0, big).code, StatusCode::Internal);
}

TEST(ServiceRequest, WantedAndFallBack) {
    ExecContext ctx = cpu_ctx();
    EXPECT_FALSE(service::wanted(ctx, 1 << 20));  // no transport
    ctx.service = loopback;
    EXPECT_FALSE(service::wanted(ctx, 1 << 20));  // device = cpu
    ctx.mode = DeviceMode::Auto;
    ctx.gpu_min_rows = 1000;
    EXPECT_FALSE(service::wanted(ctx, 999));
    EXPECT_TRUE(service::wanted(ctx, 1000));
    ctx.mode = DeviceMode::Gpu;
    EXPECT_TRUE(service::wanted(ctx, 1));

    RunStats stats;
    ctx.stats = &stats;
    ExecContext local;
    EXPECT_FALSE(service::fall_back(ctx, Status::Ok(), local));
    EXPECT_TRUE(service::fall_back(ctx, Status::Error(StatusCode::NotServed, "too large"), local));
    EXPECT_EQ(local.service, nullptr);
    EXPECT_EQ(local.mode, DeviceMode::Gpu);  // in the backend, as without a service
    // Busy or down: an error under gpu, the CPU (with a notice) under auto.
    EXPECT_FALSE(service::fall_back(ctx, Status::Error(StatusCode::ServiceBusy, "busy"), local));
    ctx.mode = DeviceMode::Auto;
    EXPECT_TRUE(service::fall_back(ctx, Status::Error(StatusCode::ServiceDown, "gone"), local));
    EXPECT_EQ(local.mode, DeviceMode::Cpu);
    EXPECT_NE(std::strstr(stats.notice, "ran on the CPU"), nullptr);
    EXPECT_FALSE(service::fall_back(ctx, Status::Error(StatusCode::InvalidArgument, "bad"), local));
}

TEST(ServiceCache, LeastRecentlyUsedOutPinnedStay) {
    service::cache_configure(1000, false);
    service::cache_clear(0);
    const service::CacheStats before = service::cache_stats();
    std::vector<unsigned char> a(400, 1), b(400, 2), c(400, 3), d(400, 4);
    ExecContext ctx = cpu_ctx();
    ResidentInput r;
    const service::CacheEntry* e = nullptr;
    ASSERT_TRUE(service::cache_insert(ctx, 0, 11, a.data(), a.size(), e, r).ok());
    EXPECT_EQ(std::memcmp(r.host, a.data(), a.size()), 0);
    service::cache_unpin(e);
    ASSERT_TRUE(service::cache_insert(ctx, 0, 22, b.data(), b.size(), e, r).ok());
    service::cache_unpin(e);
    const service::CacheEntry* touched = service::cache_find(0, 11, r);  // 11 is now the most recent
    EXPECT_NE(touched, nullptr);
    service::cache_unpin(touched);
    ASSERT_TRUE(service::cache_insert(ctx, 0, 33, c.data(), c.size(), e, r).ok());  // evicts 22
    service::cache_unpin(e);
    EXPECT_EQ(service::cache_find(0, 22, r), nullptr);
    const service::CacheEntry* pinned = service::cache_find(0, 11, r);
    ASSERT_NE(pinned, nullptr);
    EXPECT_EQ(std::memcmp(r.host, a.data(), a.size()), 0);
    ASSERT_TRUE(service::cache_insert(ctx, 0, 44, d.data(), d.size(), e, r).ok());  // evicts 33, not the pinned 11
    EXPECT_EQ(service::cache_find(0, 33, r), nullptr);
    // Full of pinned entries: a new one does not fit, and nothing in use is freed.
    const service::CacheEntry* e44 = e;
    EXPECT_EQ(service::cache_insert(ctx, 0, 55, c.data(), c.size(), e, r).code, StatusCode::GpuOutOfMemory);
    EXPECT_EQ(service::cache_find(0, 55, r), nullptr);
    service::cache_unpin(e44);
    service::cache_unpin(pinned);
    EXPECT_EQ(service::cache_insert(ctx, 0, 66, a.data(), 2000, e, r).code, StatusCode::GpuOutOfMemory);  // > limit
    const service::CacheStats after = service::cache_stats();
    EXPECT_EQ(after.entries, 2);
    EXPECT_EQ(after.bytes, 800);
    EXPECT_GE(after.evictions - before.evictions, 2);
    uint64_t keys[8];
    EXPECT_EQ(service::cache_keys(keys, 8), 2);
    service::cache_clear(0);
    EXPECT_EQ(service::cache_stats().entries, 0);
}

TEST(ServiceLoopback, TopkSelectAnswersAsDirect) {
    std::mt19937_64 g(5);
    const size_t n = 50000;
    std::vector<int64_t> ids(n);
    std::vector<double> scores(n);
    for (size_t i = 0; i < n; ++i) {
        ids[i] = static_cast<int64_t>(i);
        scores[i] = static_cast<double>(g() % 1000);  // many ties
    }
    for (size_t k : {size_t(1), size_t(100), n + 5}) {
        std::vector<int64_t> a(std::min(k, n)), b(a.size());
        std::vector<double> as(a.size()), bs(a.size());
        size_t na = 0, nb = 0;
        ASSERT_TRUE(
            topk::select(ids.data(), scores.data(), n, k, topk::Order::Desc, cpu_ctx(), a.data(), as.data(), na).ok());
        const int before = loopback_calls;
        ASSERT_TRUE(topk::select(ids.data(), scores.data(), n, k, topk::Order::Desc, served_ctx(), b.data(), bs.data(),
                                 nb)
                        .ok());
        EXPECT_EQ(loopback_calls, before + 1);
        ASSERT_EQ(na, nb);
        EXPECT_EQ(a, b);
        EXPECT_EQ(as, bs);
    }
}

TEST(ServiceLoopback, KdeBandwidthsAnswerAsDirect) {
    std::mt19937_64 g(7);
    std::normal_distribution<double> n01(0, 1);
    std::vector<double> x(1500), pts(800 * 2);
    for (double& v : x) v = n01(g);
    for (double& v : pts) v = n01(g);
    double h1 = 0, h2 = 0;
    ASSERT_TRUE(kde::plugin_bandwidth(x.data(), x.size(), kde::PluginTarget::Density, cpu_ctx(), h1).ok());
    ASSERT_TRUE(kde::plugin_bandwidth(x.data(), x.size(), kde::PluginTarget::Density, served_ctx(), h2).ok());
    EXPECT_EQ(h1, h2);
    ASSERT_TRUE(kde::bandwidth(x.data(), x.size(), kde::Method::Lscv, cpu_ctx(), h1).ok());
    ASSERT_TRUE(kde::bandwidth(x.data(), x.size(), kde::Method::Lscv, served_ctx(), h2).ok());
    EXPECT_EQ(h1, h2);
    kde::LscvResult r1, r2;
    ASSERT_TRUE(kde::lscv(pts.data(), 800, 2, 40, kde::Covariance::Full, cpu_ctx(), r1).ok());
    ASSERT_TRUE(kde::lscv(pts.data(), 800, 2, 40, kde::Covariance::Full, served_ctx(), r2).ok());
    EXPECT_EQ(r1.h, r2.h);
    EXPECT_EQ(r1.objective, r2.objective);
    EXPECT_EQ(std::memcmp(r1.bandwidth_matrix, r2.bandwidth_matrix, sizeof r1.bandwidth_matrix), 0);
    // Errors come back as the engine's own.
    std::vector<double> constant(100, 3.0);
    Status a = kde::plugin_bandwidth(constant.data(), constant.size(), kde::PluginTarget::Density, cpu_ctx(), h1);
    Status b = kde::plugin_bandwidth(constant.data(), constant.size(), kde::PluginTarget::Density, served_ctx(), h2);
    EXPECT_EQ(a.code, b.code);
    EXPECT_STREQ(a.message, b.message);
}

TEST(ServiceLoopback, JoinCountAnswersAsDirect) {
    std::vector<int64_t> bk(20000), pk(30000), bv(20000);
    for (size_t i = 0; i < bk.size(); ++i) {
        bk[i] = static_cast<int64_t>(i % 7000);
        bv[i] = static_cast<int64_t>(i);
    }
    for (size_t i = 0; i < pk.size(); ++i) pk[i] = static_cast<int64_t>((i * 13) % 9000);
    hashjoin::JoinSide build{bk.data(), bv.data(), bk.size()}, probe{pk.data(), nullptr, pk.size()};
    hashjoin::JoinInfo a, b;
    ASSERT_TRUE(hashjoin::join_count(build, probe, cpu_ctx(), a).ok());
    ASSERT_TRUE(hashjoin::join_count(build, probe, served_ctx(), b).ok());
    EXPECT_EQ(a.matches, b.matches);
    EXPECT_EQ(a.distinct_keys, b.distinct_keys);
}

TEST(ServiceLoopback, SynopsisEvaluateAnswersAsDirectAndBusyFallsBack) {
    std::mt19937_64 g(3);
    std::normal_distribution<double> n01(0, 1);
    const int d = 2;
    const int64_t m = 4000;
    std::vector<double> sample(static_cast<size_t>(m) * d);
    for (int64_t i = 0; i < m; ++i) {
        sample[i * d] = n01(g) * 3 + 50;
        sample[i * d + 1] = static_cast<double>(g() % 20);
    }
    synopsis::Synopsis s;
    s.d = d;
    s.m = m;
    s.n_rows = 100000;
    s.sample_size = m;
    s.sample = sample.data();
    ASSERT_TRUE(synopsis::finalize(s, synopsis::Bandwidth::Cdf, synopsis::Smoothing::Auto, cpu_ctx()).ok());
    s.sample = sample.data();
    const int64_t q = 500;
    std::vector<double> lo(q * d), hi(q * d);
    for (int64_t b = 0; b < q; ++b) {
        lo[b * d] = 40 + (b % 17);
        hi[b * d] = lo[b * d] + 5 + (b % 5);
        lo[b * d + 1] = static_cast<double>(b % 10);
        hi[b * d + 1] = lo[b * d + 1] + (b % 7);
    }
    synopsis::BoxBatch boxes;
    boxes.q = q;
    boxes.lo = lo.data();
    boxes.hi = hi.data();
    std::vector<synopsis::BoxEstimate> a(q), b(q), c(q);
    ASSERT_TRUE(synopsis::evaluate(s, boxes, cpu_ctx(), a.data()).ok());
    ExecContext served = served_ctx();
    ASSERT_TRUE(synopsis::evaluate(s, boxes, served, b.data()).ok());
    for (int64_t i = 0; i < q; ++i) {
        EXPECT_EQ(a[i].estimate, b[i].estimate) << i;
        EXPECT_EQ(a[i].se, b[i].se) << i;
    }
    // A busy service: auto answers on the CPU (same numbers), gpu is the error.
    ExecContext auto_busy = served_ctx(busy);
    auto_busy.mode = DeviceMode::Auto;
    auto_busy.gpu_min_rows = 0;
    RunStats stats;
    auto_busy.stats = &stats;
    ASSERT_TRUE(synopsis::evaluate(s, boxes, auto_busy, c.data()).ok());
    EXPECT_EQ(stats.device, Device::Cpu);
    EXPECT_NE(std::strstr(stats.notice, "waited 5 ms"), nullptr);
    for (int64_t i = 0; i < q; ++i) EXPECT_EQ(a[i].estimate, c[i].estimate) << i;
    EXPECT_EQ(synopsis::evaluate(s, boxes, served_ctx(busy), c.data()).code, StatusCode::ServiceBusy);
}

namespace {

moving::Grid test_grid() {
    moving::Grid g;
    g.xmin = 0;
    g.ymin = 0;
    g.xmax = 100;
    g.ymax = 100;
    g.cells_x = 16;
    g.cells_y = 16;
    return g;
}

int64_t count_in(moving::Index* index, const moving::Rect& q, const ExecContext& ctx) {
    int64_t c = -1;
    EXPECT_TRUE(index->range_count(&q, 1, ctx, &c).ok());
    return c;
}

bool alive_none(uint64_t) { return false; }
bool alive_all(uint64_t) { return true; }

}  // namespace

// An index held by the service (through its proxy) answers as a local one,
// also when every batch, query list and result goes in parts; a batch in
// parts is still all or nothing; other sessions, a dropped index and a reaped
// one are out of reach.
TEST(ServiceLoopback, MovingIndexAnswersAsLocal) {
    moving::Index* local = nullptr;
    moving::Index* served = nullptr;
    ASSERT_TRUE(moving::create(test_grid(), 1 << 20, cpu_ctx(), local).ok());
    ExecContext sc = served_ctx();
    ASSERT_TRUE(moving::create(test_grid(), 1 << 20, sc, served).ok());
    std::unique_ptr<moving::Index> own_local(local), own_served(served);
    moving::Info info;
    served->info(info);
    EXPECT_TRUE(info.in_service);
    EXPECT_EQ(served->device(), Device::Cpu);

    loopback_max_bytes = 100000;  // updates go in parts of 4096, ids in pages of 8192
    std::mt19937_64 g(11);
    std::uniform_real_distribution<double> u(0, 100);
    const size_t n = 30000;
    std::vector<int64_t> ids(n);
    std::vector<double> xs(n), ys(n);
    for (size_t i = 0; i < n; ++i) {
        ids[i] = static_cast<int64_t>(g() % 20000);  // duplicates: the later entry wins, across parts too
        xs[i] = u(g);
        ys[i] = u(g);
    }
    int64_t a = 0, b = 0;
    ASSERT_TRUE(local->update(ids.data(), xs.data(), ys.data(), n, cpu_ctx(), a).ok());
    const int before = loopback_calls;
    ASSERT_TRUE(served->update(ids.data(), xs.data(), ys.data(), n, sc, b).ok());
    EXPECT_GT(loopback_calls - before, 5);  // it went in parts
    EXPECT_EQ(a, b);
    EXPECT_GT(served->bytes(), 0);

    std::vector<moving::Rect> qs(6000);
    for (auto& q : qs) {
        double x = u(g), y = u(g);
        q = moving::Rect{x, y, x + u(g) / 3, y + u(g) / 3};
    }
    std::vector<int64_t> ca(qs.size()), cb(qs.size());
    ASSERT_TRUE(local->range_count(qs.data(), qs.size(), cpu_ctx(), ca.data()).ok());
    ASSERT_TRUE(served->range_count(qs.data(), qs.size(), sc, cb.data()).ok());
    EXPECT_EQ(ca, cb);

    const moving::Rect wide{1, 1, 99, 99};
    size_t fa = 0, fb = 0;
    ASSERT_TRUE(local->range_ids(wide, cpu_ctx(), nullptr, 0, fa).ok());
    ASSERT_TRUE(served->range_ids(wide, sc, nullptr, 0, fb).ok());
    ASSERT_EQ(fa, fb);
    ASSERT_GT(fa, size_t(8192));  // more than one page
    std::vector<int64_t> la(fa), lb(fb);
    ASSERT_TRUE(local->range_ids(wide, cpu_ctx(), la.data(), fa, fa).ok());
    ASSERT_TRUE(served->range_ids(wide, sc, lb.data(), fb, fb).ok());
    EXPECT_EQ(la, lb);

    // A bad point in the last part: the error, and nothing of the batch applied.
    const int64_t objects = count_in(served, moving::Rect{0, 0, 100, 100}, sc);
    std::vector<int64_t> more(10000);
    std::vector<double> mx(10000, 5.0), my(10000, 5.0);
    for (size_t i = 0; i < more.size(); ++i) more[i] = 100000 + static_cast<int64_t>(i);
    mx.back() = 1000;  // outside the extent
    EXPECT_EQ(served->update(more.data(), mx.data(), my.data(), more.size(), sc, b).code, StatusCode::OutOfRange);
    EXPECT_EQ(count_in(served, moving::Rect{0, 0, 100, 100}, sc), objects);

    std::vector<int64_t> gone(ids.begin(), ids.begin() + 10000);
    ASSERT_TRUE(local->remove(gone.data(), gone.size(), cpu_ctx(), a).ok());
    ASSERT_TRUE(served->remove(gone.data(), gone.size(), sc, b).ok());
    EXPECT_EQ(a, b);
    ASSERT_TRUE(local->range_count(qs.data(), qs.size(), cpu_ctx(), ca.data()).ok());
    ASSERT_TRUE(served->range_count(qs.data(), qs.size(), sc, cb.data()).ok());
    EXPECT_EQ(ca, cb);
    loopback_max_bytes = SIZE_MAX;

    // Another session's requests find nothing.
    int64_t c = 0;
    loopback_owner = 8;
    EXPECT_EQ(served->range_count(&wide, 1, sc, &c).code, StatusCode::ServiceDown);
    loopback_owner = 7;
    EXPECT_TRUE(served->range_count(&wide, 1, sc, &c).ok());

    // Reaped when its session is gone; reaping spares the living.
    moving::Index* other = nullptr;
    ASSERT_TRUE(moving::create(test_grid(), 1 << 20, sc, other).ok());
    std::unique_ptr<moving::Index> own_other(other);
    const int64_t held = service::reap_held(-1, alive_all);
    EXPECT_GE(held, 2);
    EXPECT_TRUE(other->range_count(&wide, 1, sc, &c).ok());
    EXPECT_EQ(service::reap_held(-1, alive_none), held - 2);
    EXPECT_EQ(other->range_count(&wide, 1, sc, &c).code, StatusCode::ServiceDown);
    EXPECT_NE(std::strstr(other->range_count(&wide, 1, sc, &c).message, "mo_drop"), nullptr);

    // Dropped: freed in the service.
    moving::Index* third = nullptr;
    ASSERT_TRUE(moving::create(test_grid(), 1 << 20, sc, third).ok());
    std::unique_ptr<moving::Index> own_third(third);
    const int64_t with_third = service::reap_held(-1, alive_all);
    EXPECT_TRUE(third->close(sc).ok());
    EXPECT_EQ(service::reap_held(-1, alive_all), with_third - 1);
}

// Closures through the service: the count, the reachable set and the pairs
// (a result the service keeps, read row block by row block) are the local
// ones, in the same order; releasing the result frees it in the service.
TEST(ServiceLoopback, ClosureAnswersAsLocal) {
    std::mt19937_64 g(5);
    const size_t n = 3000;
    std::vector<int64_t> src(n), dst(n);
    for (size_t i = 0; i < n; ++i) {
        src[i] = static_cast<int64_t>(g() % 500) * 7;  // sparse ids
        dst[i] = static_cast<int64_t>(g() % 500) * 7;
    }
    ExecContext sc = served_ctx();
    closure::Options opt;
    int64_t a = -1, b = -2;
    ASSERT_TRUE(closure::count_pairs(src.data(), dst.data(), n, opt, cpu_ctx(), a).ok());
    const int before = loopback_calls;
    ASSERT_TRUE(closure::count_pairs(src.data(), dst.data(), n, opt, sc, b).ok());
    EXPECT_EQ(loopback_calls, before + 1);
    EXPECT_EQ(a, b);

    std::vector<int64_t> ra(2 * n + 1), rb(2 * n + 1);
    size_t na = 0, nb = 0;
    ASSERT_TRUE(closure::reachable(src.data(), dst.data(), n, 21, cpu_ctx(), ra.data(), ra.size(), na).ok());
    ASSERT_TRUE(closure::reachable(src.data(), dst.data(), n, 21, sc, rb.data(), rb.size(), nb).ok());
    ASSERT_EQ(na, nb);
    ra.resize(na);
    rb.resize(nb);
    EXPECT_EQ(ra, rb);

    const int64_t held_before = service::reap_held(-1, alive_all);
    closure::Result* local = nullptr;
    closure::Result* served = nullptr;
    ASSERT_TRUE(closure::compute(src.data(), dst.data(), n, opt, cpu_ctx(), &local).ok());
    ASSERT_TRUE(closure::compute(src.data(), dst.data(), n, opt, sc, &served).ok());
    EXPECT_EQ(service::reap_held(-1, alive_all), held_before + 1);
    EXPECT_EQ(closure::result_pairs(local), closure::result_pairs(served));
    EXPECT_EQ(closure::result_vertices(local), closure::result_vertices(served));
    std::vector<int64_t> sa(1000), da(1000), sb(1000), db(1000);
    int64_t total = 0;
    for (;;) {
        size_t ka = 0, kb = 0;
        ASSERT_TRUE(closure::next_pairs(local, sa.data(), da.data(), sa.size(), ka).ok());
        ASSERT_TRUE(closure::next_pairs(served, sb.data(), db.data(), sb.size(), kb).ok());
        ASSERT_EQ(ka, kb);
        if (ka == 0) break;
        for (size_t i = 0; i < ka; ++i) {
            ASSERT_EQ(sa[i], sb[i]) << total + static_cast<int64_t>(i);
            ASSERT_EQ(da[i], db[i]) << total + static_cast<int64_t>(i);
        }
        total += static_cast<int64_t>(ka);
    }
    EXPECT_EQ(total, closure::result_pairs(local));
    closure::release(local);
    closure::release(served);
    EXPECT_EQ(service::reap_held(-1, alive_all), held_before);
}
