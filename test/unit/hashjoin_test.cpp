// Hashed joins: the cuckoo table and the join against naive references
// (std::unordered_map), CPU and GPU (GPU tests skip without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/gpu.hpp"
#include "core/hashjoin.hpp"
#include "core/hashjoin_internal.hpp"
#include "hashjoin_seam.hpp"

namespace hj = approx::hashjoin;
using approx::DeviceMode;
using approx::ExecContext;
using approx::Status;
using approx::StatusCode;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

ExecContext cpu_ctx(int threads = 2) {
    ExecContext c;
    c.mode = DeviceMode::Cpu;
    c.cpu_threads = threads;
    return c;
}

ExecContext gpu_ctx() {
    ExecContext c;
    c.mode = DeviceMode::Gpu;
    c.gpu_min_rows = 0;
    return c;
}

bool has_gpu() {
    char why[256];
    return approx::gpu::available(why, sizeof why);
}

#define SKIP_WITHOUT_GPU()                                                                  \
    do {                                                                                    \
        if (!has_gpu()) GTEST_SKIP() << "no GPU on this machine: GPU engine not exercised"; \
    } while (0)

// n distinct keys (splitmix64 is a bijection), the int64 extremes, 0 and -1 among them.
std::vector<int64_t> unique_keys(size_t n, uint64_t seed) {
    std::vector<int64_t> k(n);
    for (size_t i = 0; i < n; ++i) k[i] = static_cast<int64_t>(hj::splitmix64(seed * 0x100000000ull + i));
    const int64_t special[] = {0, -1, kMin, kMax, 1, kMin + 1, kMax - 1};
    for (size_t i = 0; i < std::min<size_t>(n, 7); ++i) k[i * (n / 7 + 1) % n] = special[i];
    std::vector<int64_t> s = k;
    std::sort(s.begin(), s.end());
    EXPECT_TRUE(std::adjacent_find(s.begin(), s.end()) == s.end()) << "test keys must be distinct";
    return k;
}

// Checks that every key finds its value and no absent key is found in a table
// that build(values) built from keys (values, or the row index when
// with_values is false) and find(q, m, got, found) searches.
template <class Build, class Find>
void check_lookups(const std::vector<int64_t>& keys, bool with_values, Build&& build, Find&& find) {
    const size_t n = keys.size();
    std::vector<int64_t> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = static_cast<int64_t>(i) * 7 - 3;
    Status st = build(with_values ? values.data() : nullptr);
    ASSERT_TRUE(st.ok()) << st.message;
    std::unordered_map<int64_t, int64_t> ref;
    for (size_t i = 0; i < n; ++i) ref[keys[i]] = with_values ? values[i] : static_cast<int64_t>(i);
    // Present keys, then absent ones (other seed) and a few specials.
    std::vector<int64_t> q = keys;
    std::vector<int64_t> absent = unique_keys(std::max<size_t>(n / 2, 16), 991);
    const int64_t specials[] = {0, -1, kMin, kMax, 2, -2};
    q.insert(q.end(), absent.begin(), absent.end());
    q.insert(q.end(), std::begin(specials), std::end(specials));
    std::vector<int64_t> got(q.size(), 42);
    std::vector<uint8_t> found(q.size(), 9);
    st = find(q.data(), q.size(), got.data(), found.data());
    ASSERT_TRUE(st.ok()) << st.message;
    size_t bad = 0;
    for (size_t i = 0; i < q.size(); ++i) {
        auto it = ref.find(q[i]);
        bool want = it != ref.end();
        int64_t want_v = want ? it->second : 0;
        if (found[i] != (want ? 1 : 0) || got[i] != want_v) {
            if (++bad < 5)
                ADD_FAILURE() << "key " << q[i] << ": found " << int(found[i]) << " value " << got[i] << ", want "
                              << want << " " << want_v;
        }
    }
    EXPECT_EQ(bad, 0u);
}

// Builds a Table and checks it (check_lookups).
void check_table(const ExecContext& ctx, const std::vector<int64_t>& keys, const hj::BuildOptions& o,
                 hj::TableInfo* info_out = nullptr, bool with_values = true) {
    hj::Table t;
    check_lookups(
        keys, with_values, [&](const int64_t* values) { return t.build(keys.data(), values, keys.size(), ctx, o); },
        [&](const int64_t* q, size_t m, int64_t* got, uint8_t* found) { return t.find(q, m, got, found, ctx); });
    if (info_out) *info_out = t.info();
}

// The same through the test seam (hashjoin_seam.hpp): the engine of ctx builds
// the table with the first N attempts of every bucket refused in its first
// table build.
template <int N>
void check_table_refusing(const ExecContext& ctx, const std::vector<int64_t>& keys, const hj::BuildOptions& o,
                          hj::TableInfo* info_out) {
    std::unique_ptr<hj::TableStorage> st;
    hj::TableInfo info;
    check_lookups(
        keys, true,
        [&](const int64_t* values) {
#ifdef APPROX_WITH_CUDA
            if (ctx.mode == DeviceMode::Gpu)
                return hj::test::gpu_build_refusing<N>(keys.data(), values, keys.size(), ctx, o, st, info);
#endif
            return hj::test::cpu_build_refusing<N>(keys.data(), values, keys.size(), ctx, o, st, info);
        },
        [&](const int64_t* q, size_t m, int64_t* got, uint8_t* found) { return st->find(q, m, got, found, ctx); });
    *info_out = info;
}

// ---- join reference ----------------------------------------------------------------

struct Row {
    int64_t key, build, probe;
    bool operator==(const Row& o) const { return key == o.key && build == o.build && probe == o.probe; }
};

// The engines' documented order: probe rows in order, then build rows in order.
std::vector<Row> naive_join(const std::vector<int64_t>& bk, const std::vector<int64_t>& bv,
                            const std::vector<int64_t>& pk, const std::vector<int64_t>& pv) {
    std::unordered_map<int64_t, std::vector<size_t>> rows;
    for (size_t j = 0; j < bk.size(); ++j) rows[bk[j]].push_back(j);
    std::vector<Row> out;
    for (size_t i = 0; i < pk.size(); ++i) {
        auto it = rows.find(pk[i]);
        if (it == rows.end()) continue;
        for (size_t j : it->second)
            out.push_back(Row{pk[i], bv.empty() ? int64_t(j) : bv[j], pv.empty() ? int64_t(i) : pv[i]});
    }
    return out;
}

struct Collect {
    std::vector<Row> rows;
    std::vector<size_t> chunk_sizes;
    size_t stop_after = 0;  // chunks; 0 = never stop
};

bool collect_sink(void* user, const int64_t* k, const int64_t* b, const int64_t* p, size_t count) {
    Collect* c = static_cast<Collect*>(user);
    for (size_t i = 0; i < count; ++i) c->rows.push_back(Row{k[i], b[i], p[i]});
    c->chunk_sizes.push_back(count);
    return c->stop_after == 0 || c->chunk_sizes.size() < c->stop_after;
}

hj::JoinSide side(const std::vector<int64_t>& k, const std::vector<int64_t>& v) {
    hj::JoinSide s;
    s.keys = k.data();
    s.values = v.empty() ? nullptr : v.data();
    s.n = k.size();
    return s;
}

void check_join(const ExecContext& ctx, const std::vector<int64_t>& bk, const std::vector<int64_t>& bv,
                const std::vector<int64_t>& pk, const std::vector<int64_t>& pv, size_t chunk_rows = size_t(1) << 20) {
    std::vector<Row> want = naive_join(bk, bv, pk, pv);
    hj::JoinOptions o;
    o.chunk_rows = chunk_rows;
    Collect c;
    hj::JoinInfo info;
    Status st = hj::join(side(bk, bv), side(pk, pv), collect_sink, &c, ctx, info, o);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(info.matches, static_cast<int64_t>(want.size()));
    ASSERT_EQ(c.rows.size(), want.size());
    EXPECT_TRUE(c.rows == want) << "rows differ from the reference (order: probe row, then build row)";
    size_t expect_chunks = want.empty() ? 0 : (want.size() + chunk_rows - 1) / chunk_rows;
    EXPECT_EQ(c.chunk_sizes.size(), expect_chunks);
    for (size_t s : c.chunk_sizes) EXPECT_LE(s, chunk_rows);
    hj::JoinInfo ci;
    st = hj::join_count(side(bk, bv), side(pk, pv), ctx, ci, o);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(ci.matches, static_cast<int64_t>(want.size()));
    std::vector<int64_t> distinct = bk;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (!pk.empty()) {
        EXPECT_EQ(ci.distinct_keys, static_cast<int64_t>(distinct.size()));
    }
}

std::vector<int64_t> random_keys(size_t n, int64_t lo, int64_t hi, uint64_t seed) {
    std::mt19937_64 g(seed);
    std::uniform_int_distribution<int64_t> d(lo, hi);
    std::vector<int64_t> k(n);
    for (auto& x : k) x = d(g);
    return k;
}

std::vector<int64_t> zipf_keys(size_t n, int distinct, double s, uint64_t seed) {
    std::vector<double> w(distinct);
    for (int i = 0; i < distinct; ++i) w[i] = 1.0 / std::pow(i + 1.0, s);
    std::discrete_distribution<int> d(w.begin(), w.end());
    std::mt19937_64 g(seed);
    std::vector<int64_t> k(n);
    for (auto& x : k) x = static_cast<int64_t>(d(g)) * 1000003 - 500;
    return k;
}

std::vector<int64_t> iota_values(size_t n, int64_t mul) {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(i) * mul + 11;
    return v;
}

// Runs body(ctx) for the CPU engine and, when there is one, the GPU engine.
template <class Body>
void both_engines(Body&& body) {
    {
        SCOPED_TRACE("cpu");
        body(cpu_ctx(2));
    }
    if (has_gpu()) {
        SCOPED_TRACE("gpu");
        body(gpu_ctx());
    }
}

}  // namespace

// ---- hash functions -------------------------------------------------------------------

TEST(HashjoinHash, FillerNeverMatchesAProbedKey) {
    // For any multiplier, an empty slot's key is not mapped to that slot.
    for (uint32_t a = 0; a < 50; ++a) {
        uint64_t seed = hj::splitmix64(a);
        uint64_t mul = hj::bucket_multiplier(seed, a, a, 1);
        hj::Filler f;
        ASSERT_TRUE(hj::make_filler(seed, mul, f));
        for (uint32_t s = 0; s < static_cast<uint32_t>(hj::kSubtableSlots); ++s)
            EXPECT_NE(hj::slot_of(hj::mix_key(hj::filler_key(f, s), seed), mul), s);
    }
}

// ---- the table --------------------------------------------------------------------

TEST(HashjoinTable, CpuFindsEveryKeyAndNoOther) {
    hj::TableInfo info;
    check_table(cpu_ctx(2), unique_keys(300000, 1), hj::BuildOptions(), &info);
    EXPECT_EQ(info.device, approx::Device::Cpu);
    EXPECT_EQ(info.keys, 300000);
    EXPECT_EQ(info.buckets, (300000 + 408) / 409);
    EXPECT_NEAR(info.load_factor, 409.0 / 576, 0.01);
    EXPECT_NEAR(info.memory_ratio, 1.41, 0.02);
    EXPECT_LE(info.max_bucket_keys, hj::kBucketCapacity);
    EXPECT_EQ(info.table_builds, 1);
}

TEST(HashjoinTable, SmallSizesAndExtremeKeys) {
    both_engines([](const ExecContext& ctx) {
        for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(7), size_t(409), size_t(512), size_t(513),
                         size_t(4000)}) {
            SCOPED_TRACE("n = " + std::to_string(n));
            check_table(ctx, unique_keys(n, 7 + n), hj::BuildOptions());
        }
        check_table(ctx, {0}, hj::BuildOptions());
        check_table(ctx, {-1}, hj::BuildOptions());
        check_table(ctx, {kMin, kMax, 0, -1}, hj::BuildOptions());
    });
}

TEST(HashjoinTable, ValuesDefaultToTheRowIndex) {
    both_engines([](const ExecContext& ctx) {
        check_table(ctx, unique_keys(5000, 3), hj::BuildOptions(), nullptr, false);
    });
}

TEST(HashjoinTable, OneBucketHoldsUpToCapacity) {
    // target load = capacity: a single bucket of 512 keys (load 0.89 in the bucket).
    hj::BuildOptions o;
    o.target_bucket_load = hj::kBucketCapacity;
    both_engines([&](const ExecContext& ctx) {
        hj::TableInfo info;
        check_table(ctx, unique_keys(512, 12), o, &info);
        EXPECT_EQ(info.buckets, 1);
        EXPECT_EQ(info.max_bucket_keys, 512);
    });
}

TEST(HashjoinTable, LayoutDoesNotDependOnThreads) {
    std::vector<int64_t> keys = unique_keys(200000, 5);
    hj::Table a, b;
    ASSERT_TRUE(a.build(keys.data(), nullptr, keys.size(), cpu_ctx(1)).ok());
    ASSERT_TRUE(b.build(keys.data(), nullptr, keys.size(), cpu_ctx(3)).ok());
    EXPECT_EQ(a.info().bucket_restarts, b.info().bucket_restarts);
    EXPECT_EQ(a.info().max_bucket_keys, b.info().max_bucket_keys);
    std::vector<int64_t> va(keys.size()), vb(keys.size());
    std::vector<uint8_t> fa(keys.size()), fb(keys.size());
    ASSERT_TRUE(a.find(keys.data(), keys.size(), va.data(), fa.data(), cpu_ctx(3)).ok());
    ASSERT_TRUE(b.find(keys.data(), keys.size(), vb.data(), fb.data(), cpu_ctx(1)).ok());
    EXPECT_EQ(va, vb);
    EXPECT_EQ(fa, fb);
}

TEST(HashjoinTable, DuplicateKeysAreRejected) {
    both_engines([](const ExecContext& ctx) {
        // Two copies (they fit a bucket), five copies (no cuckoo table holds
        // them), 2000 copies (no bucket holds them).
        for (int copies : {2, 5, 2000}) {
            SCOPED_TRACE("copies = " + std::to_string(copies));
            std::vector<int64_t> keys = unique_keys(3000, 21);
            for (int c = 0; c < copies - 1; ++c) keys.push_back(keys[100]);
            hj::Table t;
            Status st = t.build(keys.data(), nullptr, keys.size(), ctx);
            EXPECT_EQ(st.code, StatusCode::InvalidArgument);
            EXPECT_EQ(std::string(st.message), "duplicate key " + std::to_string(keys[100])) << st.message;
            EXPECT_FALSE(t.built());
        }
    });
}

TEST(HashjoinTable, BadOptionsAndUnbuiltTable) {
    hj::Table t;
    int64_t k = 1, v = 0;
    uint8_t f = 0;
    EXPECT_EQ(t.find(&k, 1, &v, &f, cpu_ctx()).code, StatusCode::InvalidArgument);
    hj::BuildOptions o;
    o.target_bucket_load = 513;
    EXPECT_EQ(t.build(&k, nullptr, 1, cpu_ctx(), o).code, StatusCode::InvalidArgument);
    o = hj::BuildOptions();
    o.max_bucket_attempts = 0;
    EXPECT_EQ(t.build(&k, nullptr, 1, cpu_ctx(), o).code, StatusCode::InvalidArgument);
    EXPECT_EQ(t.build(nullptr, nullptr, 3, cpu_ctx()).code, StatusCode::InvalidArgument);
}

// ---- forced failures and rebuilds ----------------------------------------------------

TEST(HashjoinRebuild, FailedBucketsRestartWithNewFunctions) {
    // The test seam refuses the first three attempts of every bucket.
    hj::BuildOptions o;
    both_engines([&](const ExecContext& ctx) {
        hj::TableInfo info;
        check_table_refusing<3>(ctx, unique_keys(20000, 31), o, &info);
        EXPECT_EQ(info.table_builds, 1);
        EXPECT_EQ(info.bucket_restarts, 3 * info.buckets);
    });
}

TEST(HashjoinRebuild, ExhaustedBucketsRebuildTheWholeTable) {
    // Every attempt of every bucket fails in the first build: the whole table
    // is rebuilt with a new seed, and that build succeeds.
    hj::BuildOptions o;
    o.max_bucket_attempts = 4;
    both_engines([&](const ExecContext& ctx) {
        hj::TableInfo info;
        check_table_refusing<4>(ctx, unique_keys(20000, 32), o, &info);
        EXPECT_EQ(info.table_builds, 2);
        EXPECT_EQ(info.phase1_attempts, 2);
        // At least one bucket used up its attempts (the CPU stops at the first).
        EXPECT_GE(info.bucket_restarts, 4);
        EXPECT_LE(info.bucket_restarts, 4 * info.buckets);
    });
}

TEST(HashjoinRebuild, AdversarialKeysOverflowABucket) {
    // 700 keys chosen to fall into bucket 0 under the first seed: phase 1
    // overflows (> 512) and starts again with a new seed, which spreads them.
    hj::BuildOptions o;
    const size_t n = 4000;
    const uint32_t buckets = hj::bucket_count(n, o);
    ASSERT_EQ(buckets, 10u);
    std::vector<int64_t> keys;
    for (int64_t c = 1; keys.size() < 700; ++c)
        if (hj::bucket_of(hj::mix_key(c, o.seed), buckets) == 0) keys.push_back(c);
    for (int64_t c = -1; keys.size() < n; --c) keys.push_back(c);
    both_engines([&](const ExecContext& ctx) {
        hj::TableInfo info;
        check_table(ctx, keys, o, &info);
        EXPECT_GE(info.phase1_attempts, 2);
        EXPECT_EQ(info.table_builds, 1);
        EXPECT_LE(info.max_bucket_keys, hj::kBucketCapacity);
    });
}

TEST(HashjoinRebuild, TightRoundLimitFailsSomeBucketsWhichRetry) {
    // Real cuckoo failures: full buckets (512 keys in 576 slots) and a small
    // eviction limit make some attempts fail; new multipliers then succeed.
    hj::BuildOptions o;
    o.target_bucket_load = hj::kBucketCapacity;
    o.max_cuckoo_rounds = 48;
    o.max_bucket_attempts = 1000;
    std::vector<int64_t> keys;
    // Exactly 512 keys in each of 8 buckets (the rest of each bucket's keys go elsewhere).
    const uint32_t buckets = 8;
    std::vector<int> fill(buckets, 0);
    for (int64_t c = 0; keys.size() < buckets * 512u; ++c) {
        uint32_t b = hj::bucket_of(hj::mix_key(c, o.seed), buckets);
        if (fill[b] < 512) {
            ++fill[b];
            keys.push_back(c);
        }
    }
    both_engines([&](const ExecContext& ctx) {
        hj::TableInfo info;
        check_table(ctx, keys, o, &info);
        EXPECT_EQ(info.buckets, 8);
        EXPECT_EQ(info.max_bucket_keys, 512);
        EXPECT_GT(info.bucket_restarts, 0) << "the round limit should make some attempts fail";
        EXPECT_EQ(info.table_builds, 1);
    });
}

TEST(HashjoinRebuild, GivesUpWithAnErrorWhenNothingConverges) {
    hj::BuildOptions o;
    o.max_cuckoo_rounds = 1;  // no eviction allowed: every full-ish bucket fails
    o.max_bucket_attempts = 2;
    o.max_table_builds = 2;
    both_engines([&](const ExecContext& ctx) {
        std::vector<int64_t> keys = unique_keys(5000, 40);
        hj::Table t;
        Status st = t.build(keys.data(), nullptr, keys.size(), ctx, o);
        EXPECT_EQ(st.code, StatusCode::Internal) << st.message;
        EXPECT_FALSE(t.built());
    });
}

// ---- the join ----------------------------------------------------------------------

TEST(HashjoinJoin, RandomKeys) {
    both_engines([](const ExecContext& ctx) {
        auto bk = random_keys(50000, -30000, 30000, 1);
        auto pk = random_keys(40000, -30000, 30000, 2);
        check_join(ctx, bk, iota_values(bk.size(), 3), pk, iota_values(pk.size(), -5));
    });
}

TEST(HashjoinJoin, HeavyDuplicatesOnBothSides) {
    both_engines([](const ExecContext& ctx) {
        auto bk = random_keys(3000, 0, 9, 3);
        auto pk = random_keys(2000, 0, 12, 4);
        check_join(ctx, bk, iota_values(bk.size(), 1), pk, iota_values(pk.size(), 2), 100000);
    });
}

TEST(HashjoinJoin, ZipfSkew) {
    both_engines([](const ExecContext& ctx) {
        auto bk = zipf_keys(20000, 5000, 1.1, 5);
        auto pk = zipf_keys(5000, 5000, 1.1, 6);
        check_join(ctx, bk, iota_values(bk.size(), 7), pk, iota_values(pk.size(), 9), 250000);
    });
}

TEST(HashjoinJoin, OneSideEmpty) {
    both_engines([](const ExecContext& ctx) {
        std::vector<int64_t> none;
        auto k = random_keys(1000, 0, 50, 7);
        check_join(ctx, none, none, k, k);
        check_join(ctx, k, k, none, none);
        check_join(ctx, none, none, none, none);
    });
}

TEST(HashjoinJoin, EveryKeyEqual) {
    both_engines([](const ExecContext& ctx) {
        std::vector<int64_t> bk(2000, 42), pk(300, 42);
        check_join(ctx, bk, iota_values(bk.size(), 1), pk, iota_values(pk.size(), 1), 65536);
    });
}

TEST(HashjoinJoin, Int64Limits) {
    both_engines([](const ExecContext& ctx) {
        std::vector<int64_t> bk = {kMin, kMax, 0, -1, kMin, 1, kMax, kMin + 1};
        std::vector<int64_t> bv = {kMax, kMin, 0, -1, 5, 6, 7, 8};
        std::vector<int64_t> pk = {kMax, kMin, -1, 0, 0, 2, kMax - 1, kMin};
        std::vector<int64_t> pv = {kMin, kMax, 1, 2, 3, 4, 5, kMin};
        check_join(ctx, bk, bv, pk, pv);
    });
}

TEST(HashjoinJoin, ValuesDefaultToRowIndices) {
    both_engines([](const ExecContext& ctx) {
        auto bk = random_keys(5000, 0, 999, 8);
        auto pk = random_keys(4000, 0, 1500, 9);
        check_join(ctx, bk, {}, pk, {});
    });
}

TEST(HashjoinJoin, ChunksSplitEvenOneProbeRow) {
    // One probe row matches 5000 build rows; chunks of 1000 rows split it.
    both_engines([](const ExecContext& ctx) {
        std::vector<int64_t> bk(5000, 7), pk = {1, 7, 3, 7};
        bk.push_back(3);
        check_join(ctx, bk, iota_values(bk.size(), 1), pk, iota_values(pk.size(), 1), 1000);
        check_join(ctx, bk, iota_values(bk.size(), 1), pk, iota_values(pk.size(), 1), 1);
    });
}

TEST(HashjoinJoin, SinkCanStopTheJoin) {
    both_engines([](const ExecContext& ctx) {
        std::vector<int64_t> bk(100, 1), pk(100, 1);
        hj::JoinOptions o;
        o.chunk_rows = 1000;
        Collect c;
        c.stop_after = 2;
        hj::JoinInfo info;
        Status st = hj::join(side(bk, {}), side(pk, {}), collect_sink, &c, ctx, info, o);
        EXPECT_EQ(st.code, StatusCode::Cancelled);
        EXPECT_EQ(c.chunk_sizes.size(), 2u);
        EXPECT_EQ(c.rows.size(), 2000u);
    });
}

TEST(HashjoinJoin, CancelStopsTheEngine) {
    static bool stop = true;
    both_engines([](const ExecContext& base) {
        ExecContext ctx = base;
        ctx.cancel = [] { return stop; };
        auto bk = random_keys(20000, 0, 100, 10);
        Collect c;
        hj::JoinInfo info;
        Status st = hj::join(side(bk, {}), side(bk, {}), collect_sink, &c, ctx, info);
        EXPECT_EQ(st.code, StatusCode::Cancelled);
        EXPECT_TRUE(c.rows.empty());
    });
}

TEST(HashjoinJoin, ThreadCountsGiveTheSameOutput) {
    auto bk = random_keys(200000, 0, 50000, 11);
    auto pk = random_keys(100000, 0, 60000, 12);
    auto bv = iota_values(bk.size(), 1), pv = iota_values(pk.size(), 1);
    Collect one, three;
    hj::JoinInfo i1, i3;
    ASSERT_TRUE(hj::join(side(bk, bv), side(pk, pv), collect_sink, &one, cpu_ctx(1), i1).ok());
    ASSERT_TRUE(hj::join(side(bk, bv), side(pk, pv), collect_sink, &three, cpu_ctx(3), i3).ok());
    EXPECT_TRUE(one.rows == three.rows);
    EXPECT_EQ(i1.matches, i3.matches);
    EXPECT_GT(i1.matches, 0);
}

TEST(HashjoinJoin, StatsAreRecorded) {
    approx::RunStats stats;
    ExecContext ctx = cpu_ctx(2);
    ctx.stats = &stats;
    std::vector<int64_t> bk = {1, 1, 2}, pk = {1, 2, 3};
    hj::JoinInfo info;
    ASSERT_TRUE(hj::join_count(side(bk, {}), side(pk, {}), ctx, info).ok());
    EXPECT_EQ(stats.rows, 6);
    bool seen = false;
    for (int i = 0; i < stats.n_extra; ++i)
        if (std::string(stats.extra[i].key) == "matches") {
            EXPECT_EQ(stats.extra[i].value, 3);
            seen = true;
        }
    EXPECT_TRUE(seen);
}

// ---- GPU = CPU ---------------------------------------------------------------------------

TEST(HashjoinGpu, LargeTableMatchesCpu) {
    SKIP_WITHOUT_GPU();
    std::vector<int64_t> keys = unique_keys(2000000, 50);
    hj::TableInfo gi, ci;
    check_table(gpu_ctx(), keys, hj::BuildOptions(), &gi);
    check_table(cpu_ctx(4), keys, hj::BuildOptions(), &ci);
    EXPECT_EQ(gi.device, approx::Device::Gpu);
    EXPECT_EQ(gi.buckets, ci.buckets);
    EXPECT_EQ(gi.memory_ratio, ci.memory_ratio);
    EXPECT_LE(gi.max_bucket_keys, hj::kBucketCapacity);
}

TEST(HashjoinGpu, JoinMatchesCpuExactly) {
    SKIP_WITHOUT_GPU();
    auto bk = zipf_keys(300000, 100000, 0.9, 13);
    auto pk = zipf_keys(200000, 120000, 0.9, 14);
    auto bv = iota_values(bk.size(), 3), pv = iota_values(pk.size(), 5);
    hj::JoinOptions o;
    o.chunk_rows = 100000;
    Collect g, c;
    hj::JoinInfo gi, ci;
    ASSERT_TRUE(hj::join(side(bk, bv), side(pk, pv), collect_sink, &g, gpu_ctx(), gi, o).ok());
    ASSERT_TRUE(hj::join(side(bk, bv), side(pk, pv), collect_sink, &c, cpu_ctx(4), ci, o).ok());
    EXPECT_EQ(gi.table.device, approx::Device::Gpu);
    EXPECT_EQ(gi.matches, ci.matches);
    EXPECT_EQ(gi.distinct_keys, ci.distinct_keys);
    EXPECT_TRUE(g.rows == c.rows);
}

TEST(HashjoinGpu, MemoryLimitFallsBackToCpuUnderAuto) {
    SKIP_WITHOUT_GPU();
    ExecContext ctx;
    ctx.mode = DeviceMode::Auto;
    ctx.gpu_min_rows = 0;
    ctx.gpu_memory_limit = 1024;  // far too little
    approx::RunStats stats;
    ctx.stats = &stats;
    auto bk = random_keys(10000, 0, 100, 15);
    Collect c;
    hj::JoinInfo info;
    ASSERT_TRUE(hj::join(side(bk, {}), side(bk, {}), collect_sink, &c, ctx, info).ok());
    EXPECT_EQ(stats.device, approx::Device::Cpu);
    EXPECT_NE(std::string(stats.notice), "");
    EXPECT_EQ(c.rows.size(), static_cast<size_t>(info.matches));
}
