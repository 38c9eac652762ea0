// A GPU-service request with two cacheable inputs (core/service.hpp): the
// Request's bookkeeping, the executor's side (pin_cached: the glue's executor
// calls it with the slot's arrays) against the resident cache, and the
// resident lookup per host pointer that gpu::resident_device() does. The
// transport's omit rule is the glue's (service_client.cpp, PostgreSQL); it is
// exercised by the SQL suites, not here.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/service.hpp"
#include "unit_ctx.hpp"

using namespace approx;

namespace {

// What the executor sees of req: its blobs, the omitted ones absent (as the
// staging area holds them), and the cacheable inputs' arrays.
struct Staged {
    service::Served s;
    bool omitted[service::kMaxCached] = {};
};
Staged stage(const service::Request& req, unsigned omit) {
    Staged st;
    st.s.op = req.op;
    st.s.n_in = req.n_in;
    for (int i = 0; i < req.n_in; ++i) {
        st.s.in[i] = req.in[i];
        st.s.in_bytes[i] = req.in_bytes[i];
    }
    for (int k = 0; k < req.n_cached; ++k) {
        st.omitted[k] = (omit >> k & 1u) != 0;
        if (st.omitted[k]) st.s.in[req.cache_in[k]] = nullptr;
    }
    return st;
}

}  // namespace

TEST(ServiceCached, RequestTakesTwoCacheableInputsAndNoThird) {
    std::vector<unsigned char> a(100, 1), b(50, 2), c(30, 3);
    service::Request r(service::Op::StarJoin, 1);
    r.add_param(int64_t(7));
    r.add_in(a.data(), a.size());
    EXPECT_TRUE(r.cache_last_input(0x11));
    EXPECT_TRUE(r.add_resident_input(0x22));
    r.add_in(c.data(), c.size());
    EXPECT_FALSE(r.cache_last_input(0x33));  // a third: sent as a plain input
    EXPECT_FALSE(r.add_resident_input(0x44));  // nothing added: the caller reads it and add_in()s it
    EXPECT_EQ(r.n_in, 4);
    EXPECT_EQ(r.n_cached, 2);
    EXPECT_EQ(r.cache_in[0], 1);
    EXPECT_EQ(r.cache_key[0], 0x11u);
    EXPECT_FALSE(r.cache_absent[0]);
    EXPECT_EQ(r.cache_in[1], 2);
    EXPECT_EQ(r.cache_key[1], 0x22u);
    EXPECT_TRUE(r.cache_absent[1]);
    EXPECT_EQ(r.in_bytes[2], 0u);
    // An empty input is not cacheable; key 0 means "hash it here".
    service::Request e(service::Op::StarJoin, 1);
    e.add_in(nullptr, 0);
    EXPECT_FALSE(e.cache_last_input(9));
    e.add_in(b.data(), b.size());
    EXPECT_TRUE(e.cache_last_input());
    EXPECT_EQ(e.n_cached, 1);
    EXPECT_EQ(e.cache_key[0], service::content_hash(b.data(), b.size()));
}

TEST(ServiceCached, ResidentLookupIsPerHostPointer) {
    int fact[4] = {}, dims[2] = {}, other = 0;
    const int dev_fact = 0, dev_dims = 0;
    ExecContext ctx;
    EXPECT_EQ(ctx.resident.find(fact), nullptr);
    ctx.resident.add(ResidentInput{fact, &dev_fact, sizeof fact});
    ctx.resident.add(ResidentInput{dims, &dev_dims, sizeof dims});
    ctx.resident.add(ResidentInput{&other, &other, sizeof other});  // a third: not kept
    ASSERT_NE(ctx.resident.find(fact), nullptr);
    EXPECT_EQ(ctx.resident.find(fact)->device, &dev_fact);
    ASSERT_NE(ctx.resident.find(dims), nullptr);
    EXPECT_EQ(ctx.resident.find(dims)->device, &dev_dims);
    EXPECT_EQ(ctx.resident.find(&other), nullptr);
    EXPECT_EQ(ctx.resident.find(nullptr), nullptr);
    EXPECT_EQ(ctx.resident.find(fact + 1), nullptr);  // only the blob's own start
    ExecContext copy = ctx;  // contexts are copied (try_run): the entries travel
    EXPECT_EQ(copy.resident.find(dims)->device, &dev_dims);
}

TEST(ServiceCached, BothInsertedThenBothHitThenEvictedIsNotServed) {
    service::cache_configure(1000, false);
    service::cache_clear(0);
    std::vector<unsigned char> fact(400, 1), dims(300, 2), other(500, 3);
    const uint64_t kf = 0xf1, kd = 0xd1;
    service::Request req(service::Op::StarJoin, 1);
    req.add_param(int64_t(1));
    req.add_in(fact.data(), fact.size());
    req.cache_last_input(kf);
    req.add_in(dims.data(), dims.size());
    req.cache_last_input(kd);

    // First call: both sent, both inserted, both pinned and resident.
    {
        Staged st = stage(req, 0);
        ExecContext ctx = cpu_ctx();
        service::CachedInputs pins;
        ASSERT_TRUE(service::pin_cached(ctx, 0, req.n_cached, req.cache_in, req.cache_key, st.omitted, st.s, pins).ok());
        EXPECT_EQ(pins.looked, 2);
        EXPECT_FALSE(pins.hit[0]);
        EXPECT_FALSE(pins.hit[1]);
        EXPECT_NE(pins.pinned[0], nullptr);
        EXPECT_NE(pins.pinned[1], nullptr);
        EXPECT_EQ(ctx.resident.n, 2);
        EXPECT_NE(st.s.in[1], fact.data());  // read from the cache's copy
        ASSERT_NE(ctx.resident.find(st.s.in[1]), nullptr);
        ASSERT_NE(ctx.resident.find(st.s.in[2]), nullptr);
        EXPECT_EQ(std::memcmp(st.s.in[2], dims.data(), dims.size()), 0);
    }
    EXPECT_EQ(service::cache_stats().entries, 2);

    // Second call: both omitted (the backend saw both keys), both hits.
    {
        Staged st = stage(req, 3u);
        ExecContext ctx = cpu_ctx();
        service::CachedInputs pins;
        ASSERT_TRUE(service::pin_cached(ctx, 0, req.n_cached, req.cache_in, req.cache_key, st.omitted, st.s, pins).ok());
        EXPECT_TRUE(pins.hit[0]);
        EXPECT_TRUE(pins.hit[1]);
        ASSERT_EQ(st.s.in_bytes[1], fact.size());
        ASSERT_EQ(st.s.in_bytes[2], dims.size());
        EXPECT_EQ(std::memcmp(st.s.in[1], fact.data(), fact.size()), 0);
        EXPECT_EQ(std::memcmp(st.s.in[2], dims.data(), dims.size()), 0);
        EXPECT_EQ(ctx.resident.find(st.s.in[1])->bytes, fact.size());
        EXPECT_EQ(ctx.resident.find(st.s.in[2])->bytes, dims.size());
        // Both pinned: a new entry that needs either's room does not fit.
        ResidentInput r;
        const service::CacheEntry* e = nullptr;
        EXPECT_EQ(service::cache_insert(ctx, 0, 0x99, other.data(), other.size(), e, r).code,
                  StatusCode::GpuOutOfMemory);
        pins.unpin();
        EXPECT_EQ(pins.pinned[0], nullptr);
        pins.unpin();  // twice is harmless
    }

    // The fact (least recently used) evicted by another entry: an omitted
    // fact is NotServed and nothing stays pinned; the dimensions stay.
    {
        ExecContext ctx = cpu_ctx();
        ResidentInput r;
        const service::CacheEntry* e = nullptr;
        ASSERT_TRUE(service::cache_insert(ctx, 0, 0x99, other.data(), other.size(), e, r).ok());
        service::cache_unpin(e);
        EXPECT_EQ(service::cache_find(0, kf, r), nullptr);
        const service::CacheEntry* d = service::cache_find(0, kd, r);
        ASSERT_NE(d, nullptr);
        service::cache_unpin(d);
    }
    {
        Staged st = stage(req, 3u);
        ExecContext ctx = cpu_ctx();
        service::CachedInputs pins;
        Status s = service::pin_cached(ctx, 0, req.n_cached, req.cache_in, req.cache_key, st.omitted, st.s, pins);
        EXPECT_EQ(s.code, StatusCode::NotServed);
        EXPECT_EQ(pins.looked, 1);  // stopped at the fact
        EXPECT_EQ(ctx.resident.n, 0);
        // Omitting only the dimensions (the fact sent): served, the fact inserted again.
        st = stage(req, 2u);
        ASSERT_TRUE(service::pin_cached(ctx, 0, req.n_cached, req.cache_in, req.cache_key, st.omitted, st.s, pins).ok());
        EXPECT_FALSE(pins.hit[0]);
        EXPECT_TRUE(pins.hit[1]);
        EXPECT_EQ(ctx.resident.n, 2);
    }
    // Every pin was dropped (the destructors too): clearing empties the cache.
    service::cache_clear(0);
    EXPECT_EQ(service::cache_stats().entries, 0);
}

TEST(ServiceCached, OneInputPathsAsBefore) {
    service::cache_configure(1000, false);
    service::cache_clear(0);
    std::vector<unsigned char> sample(200, 5), big(2000, 6);
    service::Request req(service::Op::SynopsisEvaluate, 1);
    req.add_in(sample.data(), sample.size());
    req.cache_last_input(0x51);
    req.add_in(big.data(), big.size());
    req.cache_last_input(0x52);  // larger than the cache: served from the staged copy
    Staged st = stage(req, 0);
    ExecContext ctx = cpu_ctx();
    service::CachedInputs pins;
    ASSERT_TRUE(service::pin_cached(ctx, 0, req.n_cached, req.cache_in, req.cache_key, st.omitted, st.s, pins).ok());
    EXPECT_NE(pins.pinned[0], nullptr);
    EXPECT_EQ(pins.pinned[1], nullptr);
    EXPECT_EQ(st.s.in[1], big.data());
    EXPECT_EQ(ctx.resident.n, 1);
    EXPECT_EQ(ctx.resident.find(big.data()), nullptr);
    // A bad slot (index outside the inputs, too many) is an error, never a stray read.
    int bad_in[2] = {5, 0};
    uint64_t keys[2] = {1, 2};
    bool omitted[2] = {};
    service::CachedInputs none;
    EXPECT_EQ(service::pin_cached(ctx, 0, 1, bad_in, keys, omitted, st.s, none).code, StatusCode::Internal);
    EXPECT_EQ(service::pin_cached(ctx, 0, 3, bad_in, keys, omitted, st.s, none).code, StatusCode::Internal);
    pins.unpin();
    service::cache_clear(0);
    EXPECT_EQ(service::cache_stats().entries, 0);
}
