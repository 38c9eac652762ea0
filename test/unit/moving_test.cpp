// Moving-object grid index: both engines against a std::unordered_map model
// with brute-force range queries, after random batches of in-place,
// cross-cell, new, duplicated and deleted objects; uniform and clustered data.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "core/gpu.hpp"
#include "core/moving.hpp"

namespace mo = approx::moving;
using approx::ExecContext;
using approx::Status;
using approx::StatusCode;

namespace {

enum class Engine { Cpu1, CpuN, Gpu };

const char* engine_name(Engine e) { return e == Engine::Cpu1 ? "cpu1" : e == Engine::CpuN ? "cpu3" : "gpu"; }

bool have_gpu() {
    char why[256];
    return approx::gpu::available(why, sizeof why);
}

ExecContext context(Engine e) {
    ExecContext ctx;
    ctx.mode = e == Engine::Gpu ? approx::DeviceMode::Gpu : approx::DeviceMode::Cpu;
    ctx.cpu_threads = e == Engine::Cpu1 ? 1 : 3;
    return ctx;
}

std::unique_ptr<mo::Index> make(Engine e, const mo::Grid& g) {
    mo::Index* p = nullptr;
    Status st;
    ExecContext ctx = context(e);
    if (e == Engine::Gpu) {
#ifdef APPROX_WITH_CUDA
        st = mo::create_gpu(g, 1 << 24, ctx, p);
#else
        st = Status::Error(StatusCode::NoGpu, "built without CUDA");
#endif
    } else {
        st = mo::create_cpu(g, 1 << 24, ctx, p);
    }
    EXPECT_TRUE(st.ok()) << st.message;
    return std::unique_ptr<mo::Index>(p);
}

struct Pt {
    double x, y;
};
using Model = std::unordered_map<int64_t, Pt>;

// A batch of entries applied to the model the way the index must apply it.
struct Batch {
    std::vector<int64_t> ids;
    std::vector<double> xs, ys;
    void add(int64_t id, double x, double y) {
        ids.push_back(id);
        xs.push_back(x);
        ys.push_back(y);
    }
    void apply(Model& m) const {
        for (size_t i = 0; i < ids.size(); ++i) m[ids[i]] = Pt{xs[i], ys[i]};
    }
};

int64_t brute_count(const Model& m, const mo::Rect& q) {
    int64_t n = 0;
    for (const auto& kv : m) n += mo::in_rect(q, kv.second.x, kv.second.y);
    return n;
}

std::vector<int64_t> brute_ids(const Model& m, const mo::Rect& q) {
    std::vector<int64_t> v;
    for (const auto& kv : m)
        if (mo::in_rect(q, kv.second.x, kv.second.y)) v.push_back(kv.first);
    std::sort(v.begin(), v.end());
    return v;
}

// Random data and queries over a grid.
struct Gen {
    mo::Grid g;
    mo::GridMap gm;
    std::mt19937_64 rng;
    bool clustered;
    std::vector<Pt> centres;

    Gen(const mo::Grid& grid, uint64_t seed, bool clust)
        : g(grid), gm(mo::grid_map(grid)), rng(seed), clustered(clust) {
        std::uniform_real_distribution<double> ux(g.xmin, g.xmax), uy(g.ymin, g.ymax);
        for (int i = 0; i < 4; ++i) centres.push_back(Pt{ux(rng), uy(rng)});
    }
    double clampx(double x) const { return std::min(g.xmax, std::max(g.xmin, x)); }
    double clampy(double y) const { return std::min(g.ymax, std::max(g.ymin, y)); }
    double unif(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); }
    int64_t pick(int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); }

    // A point: uniform or around a cluster centre; now and then exactly on a
    // cell boundary or the extent's edge.
    Pt point() {
        int r = static_cast<int>(rng() % 20);
        double w = g.xmax - g.xmin, h = g.ymax - g.ymin;
        if (r == 0) return Pt{g.xmax, unif(g.ymin, g.ymax)};
        if (r == 1) return Pt{unif(g.xmin, g.xmax), g.ymax};
        if (r == 2)
            return Pt{g.xmin + gm.cw * static_cast<double>(pick(g.cells_x + 1)),
                      g.ymin + gm.ch * static_cast<double>(pick(g.cells_y + 1))};
        if (r == 3) return Pt{g.xmax, g.ymax};
        if (!clustered) return Pt{unif(g.xmin, g.xmax), unif(g.ymin, g.ymax)};
        const Pt& c = centres[static_cast<size_t>(pick(4))];
        std::normal_distribution<double> nd(0, 0.03);
        return Pt{clampx(c.x + nd(rng) * w), clampy(c.y + nd(rng) * h)};
    }
    // A small move (mostly within the cell) or a jump.
    Pt move(const Pt& p, bool jump) {
        if (jump) return point();
        return Pt{clampx(p.x + unif(-0.2, 0.2) * gm.cw), clampy(p.y + unif(-0.2, 0.2) * gm.ch)};
    }
    mo::Rect query(const Model& m) {
        double w = g.xmax - g.xmin, h = g.ymax - g.ymin;
        int r = static_cast<int>(rng() % 12);
        if (r == 0) return mo::Rect{-INFINITY, -INFINITY, INFINITY, INFINITY};
        if (r == 1) return mo::Rect{g.xmin - w, g.ymin - h, g.xmin + 0.3 * w, g.ymax + h};  // clipped
        if (r == 2) {  // exactly on existing points' coordinates (closed rectangle)
            if (!m.empty()) {
                auto it = m.begin();
                std::advance(it, pick(static_cast<int64_t>(std::min<size_t>(m.size(), 50))));
                Pt a = it->second, b = point();
                return mo::Rect{std::min(a.x, b.x), std::min(a.y, b.y), std::max(a.x, b.x), std::max(a.y, b.y)};
            }
        }
        if (r == 3) {  // degenerate: a line or a point on a cell boundary
            double x = g.xmin + gm.cw * static_cast<double>(pick(g.cells_x + 1));
            return mo::Rect{x, g.ymin, x, g.ymax};
        }
        if (r == 4) return mo::Rect{g.xmax, g.ymax, g.xmax, g.ymax};
        if (r == 5) return mo::Rect{g.xmin + 0.6 * w, g.ymin, g.xmin + 0.4 * w, g.ymax};  // inverted: empty
        if (r == 6) return mo::Rect{g.xmax + 1, g.ymin, g.xmax + 2, g.ymax};              // outside
        Pt c = point();
        double qw = unif(0, 0.4) * w, qh = unif(0, 0.4) * h;
        if (r == 7) qw = qh = unif(0, 1.5) * gm.cw;
        return mo::Rect{c.x - qw / 2, c.y - qh / 2, c.x + qw / 2, c.y + qh / 2};
    }
};

int64_t buckets_of(const Model& m, const mo::GridMap& gm) {
    std::unordered_map<uint32_t, int64_t> per;
    for (const auto& kv : m) ++per[gm.cell(kv.second.x, kv.second.y)];
    int64_t b = 0;
    for (const auto& kv : per) b += (kv.second + mo::kBucketSlots - 1) / mo::kBucketSlots;
    return b;
}

// Every query of a set against the model; ids for some of them.
void check_queries(mo::Index& idx, const Model& m, Gen& gen, Engine e, int nq, const char* where) {
    std::vector<mo::Rect> qs;
    for (int i = 0; i < nq; ++i) qs.push_back(gen.query(m));
    std::vector<int64_t> counts(qs.size(), -1);
    ExecContext ctx = context(e);
    Status st = idx.range_count(qs.data(), qs.size(), ctx, counts.data());
    ASSERT_TRUE(st.ok()) << st.message;
    for (size_t i = 0; i < qs.size(); ++i)
        ASSERT_EQ(counts[i], brute_count(m, qs[i]))
            << where << " " << engine_name(e) << " query " << i << " [" << qs[i].xmin << "," << qs[i].ymin << ","
            << qs[i].xmax << "," << qs[i].ymax << "]";
    for (size_t i = 0; i < qs.size() && i < 6; ++i) {
        std::vector<int64_t> want = brute_ids(m, qs[i]);
        size_t found = 0;
        ASSERT_TRUE(idx.range_ids(qs[i], ctx, nullptr, 0, found).ok());
        ASSERT_EQ(found, want.size()) << where;
        std::vector<int64_t> got(found + 1);
        ASSERT_TRUE(idx.range_ids(qs[i], ctx, got.data(), got.size(), found).ok());
        got.resize(found);
        ASSERT_EQ(got, want) << where << " " << engine_name(e) << " ids of query " << i;
    }
    mo::Info info;
    idx.info(info);
    ASSERT_EQ(info.objects, static_cast<int64_t>(m.size())) << where;
    ASSERT_EQ(info.buckets_used, buckets_of(m, gen.gm)) << where;
}

struct Workload {
    mo::Grid grid;
    bool clustered;
    int n0;  // initial objects
    int rounds;
    int batch;  // update entries per round
    uint64_t seed;
};

// The acceptance scenario: load, then random batches (in-place, cross-cell,
// new ids, duplicates, deletes of known and unknown ids), every range query
// equal to brute force after every batch.
void run_workload(Engine e, const Workload& w) {
    auto idx = make(e, w.grid);
    ASSERT_TRUE(idx);
    Gen gen(w.grid, w.seed, w.clustered);
    Model m;
    std::vector<int64_t> known;
    int64_t next_id = -1000;  // negative ids too
    Batch load;
    for (int i = 0; i < w.n0; ++i) {
        Pt p = gen.point();
        int64_t id = (next_id += 1 + static_cast<int64_t>(gen.rng() % 3)) * 7919;
        load.add(id, p.x, p.y);
        known.push_back(id);
    }
    ExecContext ctx = context(e);
    int64_t applied = 0;
    Status st = idx->update(load.ids.data(), load.xs.data(), load.ys.data(), load.ids.size(), ctx, applied);
    ASSERT_TRUE(st.ok()) << st.message;
    load.apply(m);
    ASSERT_EQ(applied, static_cast<int64_t>(m.size()));
    check_queries(*idx, m, gen, e, 40, "after load");

    for (int r = 0; r < w.rounds; ++r) {
        if (r % 4 == 3) {
            // delete batch: known ids (some twice) and unknown ones
            std::vector<int64_t> del;
            int64_t expect = 0;
            Model after = m;
            for (int i = 0; i < w.batch / 4; ++i) {
                int64_t id = gen.pick(3) == 0
                                 ? int64_t(1) << 50 | static_cast<int64_t>(gen.rng() % 1000)
                                 : known[static_cast<size_t>(gen.pick(static_cast<int64_t>(known.size())))];
                del.push_back(id);
                if (gen.pick(5) == 0) del.push_back(id);
            }
            for (int64_t id : del) expect += after.erase(id);
            int64_t removed = -1;
            st = idx->remove(del.data(), del.size(), ctx, removed);
            ASSERT_TRUE(st.ok()) << st.message;
            ASSERT_EQ(removed, expect);
            m.swap(after);
        } else {
            Batch b;
            for (int i = 0; i < w.batch; ++i) {
                int kind = static_cast<int>(gen.rng() % 10);
                if (kind < 2 || known.empty()) {  // new id
                    int64_t id = (next_id += 1 + static_cast<int64_t>(gen.rng() % 3)) * 7919;
                    Pt p = gen.point();
                    b.add(id, p.x, p.y);
                    known.push_back(id);
                } else {
                    int64_t id = known[static_cast<size_t>(gen.pick(static_cast<int64_t>(known.size())))];
                    auto it = m.find(id);
                    Pt base = it != m.end() ? it->second : gen.point();  // a deleted id comes back
                    Pt p = gen.move(base, kind < 5);
                    b.add(id, p.x, p.y);
                    if (kind == 9) {  // the same id again in this batch: the later entry wins
                        Pt q = gen.move(p, gen.pick(2) == 0);
                        b.add(id, q.x, q.y);
                    }
                }
            }
            // shuffle so duplicates are not adjacent
            for (size_t i = b.ids.size(); i > 1; --i) {
                size_t j = static_cast<size_t>(gen.rng() % i);
                std::swap(b.ids[i - 1], b.ids[j]);
                std::swap(b.xs[i - 1], b.xs[j]);
                std::swap(b.ys[i - 1], b.ys[j]);
            }
            st = idx->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied);
            ASSERT_TRUE(st.ok()) << st.message;
            Model before = m;
            b.apply(m);
            std::unordered_map<int64_t, int> distinct;
            for (int64_t id : b.ids) distinct[id] = 1;
            ASSERT_EQ(applied, static_cast<int64_t>(distinct.size()));
        }
        check_queries(*idx, m, gen, e, 30, "after batch");
    }
}

class MovingEngines : public ::testing::TestWithParam<Engine> {
protected:
    void SetUp() override {
        if (GetParam() == Engine::Gpu && !have_gpu())
            GTEST_SKIP() << "no GPU on this machine: the GPU engine is tested on the GPU machine";
    }
};

mo::Grid grid(double x0, double y0, double x1, double y1, int cx, int cy) {
    mo::Grid g;
    g.xmin = x0;
    g.ymin = y0;
    g.xmax = x1;
    g.ymax = y1;
    g.cells_x = cx;
    g.cells_y = cy;
    return g;
}

TEST_P(MovingEngines, UniformRandomBatches) {
    run_workload(GetParam(), Workload{grid(0, 0, 1000, 500, 16, 8), false, 3000, 12, 1500, 1});
}

TEST_P(MovingEngines, ClusteredRandomBatches) {
    run_workload(GetParam(), Workload{grid(-50, -50, 50, 50, 32, 32), true, 4000, 12, 2000, 2});
}

TEST_P(MovingEngines, SingleCellAndManyBuckets) {
    run_workload(GetParam(), Workload{grid(0, 0, 1, 1, 1, 1), false, 700, 8, 300, 3});
}

TEST_P(MovingEngines, ThinGrid) {
    run_workload(GetParam(), Workload{grid(0, 0, 100, 1, 100, 1), true, 2000, 8, 800, 4});
}

TEST_P(MovingEngines, LargerGrid) {
    run_workload(GetParam(), Workload{grid(0, 0, 100000, 100000, 256, 256), false, 20000, 6, 8000, 5});
}

TEST_P(MovingEngines, EmptyAndTinyBatches) {
    auto idx = make(GetParam(), grid(0, 0, 10, 10, 4, 4));
    ExecContext ctx = context(GetParam());
    int64_t applied = -1;
    ASSERT_TRUE(idx->update(nullptr, nullptr, nullptr, 0, ctx, applied).ok());
    EXPECT_EQ(applied, 0);
    int64_t id = 42;
    double x = 10, y = 10;  // the corner belongs to the last cell
    ASSERT_TRUE(idx->update(&id, &x, &y, 1, ctx, applied).ok());
    EXPECT_EQ(applied, 1);
    mo::Rect q{10, 10, 10, 10}, all{0, 0, 10, 10}, none{0, 0, 9.999, 9.999};
    int64_t c[3];
    mo::Rect qs[3] = {q, all, none};
    ASSERT_TRUE(idx->range_count(qs, 3, ctx, c).ok());
    EXPECT_EQ(c[0], 1);
    EXPECT_EQ(c[1], 1);
    EXPECT_EQ(c[2], 0);
    ASSERT_TRUE(idx->range_count(qs, 0, ctx, c).ok());
    int64_t removed = -1;
    ASSERT_TRUE(idx->remove(&id, 1, ctx, removed).ok());
    EXPECT_EQ(removed, 1);
    ASSERT_TRUE(idx->remove(&id, 1, ctx, removed).ok());
    EXPECT_EQ(removed, 0);
    ASSERT_TRUE(idx->range_count(qs, 3, ctx, c).ok());
    EXPECT_EQ(c[1], 0);
    mo::Info info;
    idx->info(info);
    EXPECT_EQ(info.objects, 0);
    EXPECT_EQ(info.buckets_used, 0);
    EXPECT_EQ(info.cells, 16);
}

// Bad batches fail and change nothing.
TEST_P(MovingEngines, InvalidBatchLeavesIndexUnchanged) {
    mo::Grid g = grid(0, 0, 100, 100, 10, 10);
    auto idx = make(GetParam(), g);
    ExecContext ctx = context(GetParam());
    Gen gen(g, 7, false);
    Model m;
    Batch b;
    for (int i = 0; i < 500; ++i) {
        Pt p = gen.point();
        b.add(i, p.x, p.y);
    }
    int64_t applied;
    ASSERT_TRUE(idx->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied).ok());
    b.apply(m);
    Batch bad;
    for (int i = 0; i < 400; ++i) {
        Pt p = gen.point();
        bad.add(i * 3, p.x, p.y);  // moves, and new ids
    }
    bad.xs[123] = 100.5;
    Status st = idx->update(bad.ids.data(), bad.xs.data(), bad.ys.data(), bad.ids.size(), ctx, applied);
    EXPECT_EQ(st.code, StatusCode::OutOfRange);
    EXPECT_NE(std::string(st.message).find("point 124"), std::string::npos) << st.message;
    check_queries(*idx, m, gen, GetParam(), 30, "after out-of-extent batch");
    bad.xs[123] = 50;
    bad.ys[7] = NAN;
    st = idx->update(bad.ids.data(), bad.xs.data(), bad.ys.data(), bad.ids.size(), ctx, applied);
    EXPECT_EQ(st.code, StatusCode::InvalidArgument);
    check_queries(*idx, m, gen, GetParam(), 30, "after NaN batch");
    bad.ys[7] = -1e-9;
    st = idx->update(bad.ids.data(), bad.xs.data(), bad.ys.data(), bad.ids.size(), ctx, applied);
    EXPECT_EQ(st.code, StatusCode::OutOfRange);
    check_queries(*idx, m, gen, GetParam(), 30, "after below-extent batch");
    bad.ys[7] = 0;
    ASSERT_TRUE(idx->update(bad.ids.data(), bad.xs.data(), bad.ys.data(), bad.ids.size(), ctx, applied).ok());
    bad.apply(m);
    check_queries(*idx, m, gen, GetParam(), 30, "after the corrected batch");
    mo::Rect nanq{NAN, 0, 1, 1};
    int64_t c;
    EXPECT_EQ(idx->range_count(&nanq, 1, ctx, &c).code, StatusCode::InvalidArgument);
}

// Cancellation at every poll point of a batch leaves the index unchanged; the
// batch finally goes through when no cancel comes.
int g_cancel_after = 0;
std::atomic<int> g_polls{0};
bool cancel_after_n() { return g_polls++ >= g_cancel_after; }

TEST_P(MovingEngines, CancelledBatchLeavesIndexUnchanged) {
    mo::Grid g = grid(0, 0, 100, 100, 8, 8);
    auto idx = make(GetParam(), g);
    ExecContext ctx = context(GetParam());
    Gen gen(g, 11, true);
    Model m;
    Batch b;
    for (int i = 0; i < 3000; ++i) {
        Pt p = gen.point();
        b.add(i, p.x, p.y);
    }
    int64_t applied;
    ASSERT_TRUE(idx->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied).ok());
    b.apply(m);
    Batch u;
    for (int i = 0; i < 40000; ++i) {  // big enough for several parallel chunks
        int64_t id = static_cast<int64_t>(gen.rng() % 6000);
        Pt p = gen.point();
        u.add(id, p.x, p.y);
    }
    ExecContext cctx = ctx;
    cctx.cancel = cancel_after_n;
    bool done = false;
    for (g_cancel_after = 0; g_cancel_after < 10000 && !done; ++g_cancel_after) {
        g_polls = 0;
        Status st = idx->update(u.ids.data(), u.xs.data(), u.ys.data(), u.ids.size(), cctx, applied);
        if (st.ok()) {
            done = true;
        } else {
            ASSERT_EQ(st.code, StatusCode::Cancelled) << st.message;
            check_queries(*idx, m, gen, GetParam(), 8, "after a cancelled batch");
        }
    }
    ASSERT_TRUE(done);
    EXPECT_GT(g_cancel_after, 1);  // at least one cancelled attempt
    u.apply(m);
    check_queries(*idx, m, gen, GetParam(), 30, "after the batch");
    // deletes too
    std::vector<int64_t> del;
    for (int i = 0; i < 2000; ++i) del.push_back(i * 2);
    for (g_cancel_after = 0, done = false; g_cancel_after < 10000 && !done; ++g_cancel_after) {
        g_polls = 0;
        int64_t removed;
        Status st = idx->remove(del.data(), del.size(), cctx, removed);
        if (st.ok()) {
            done = true;
        } else {
            ASSERT_EQ(st.code, StatusCode::Cancelled);
            check_queries(*idx, m, gen, GetParam(), 8, "after a cancelled delete");
        }
    }
    ASSERT_TRUE(done);
    for (int64_t id : del) m.erase(id);
    check_queries(*idx, m, gen, GetParam(), 30, "after the delete");
}

// A batch large enough for many apply tasks, cancelled at every poll from the
// last one back: every cancel (those in the apply phase included, which undo
// the cells and in-place updates already written) leaves the index unchanged.
TEST_P(MovingEngines, CancelInTheApplyPhaseIsUndone) {
    mo::Grid g = grid(0, 0, 100, 100, 16, 16);
    auto idx = make(GetParam(), g);
    ExecContext ctx = context(GetParam());
    Gen gen(g, 23, false);
    Model m;
    Batch b;
    for (int i = 0; i < 150000; ++i) {
        Pt p = gen.point();
        b.add(i, p.x, p.y);
    }
    int64_t applied;
    ASSERT_TRUE(idx->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied).ok());
    b.apply(m);
    Batch u;  // moves in place and across cells, new ids
    for (int i = 0; i < 200000; ++i) {
        int64_t id = static_cast<int64_t>(gen.rng() % 250000);
        auto it = m.find(id);
        Pt p = it == m.end() ? gen.point() : gen.move(it->second, gen.rng() % 4 == 0);
        u.add(id, p.x, p.y);
    }
    ExecContext cctx = ctx;
    cctx.cancel = cancel_after_n;
    g_cancel_after = 1 << 30;  // count the polls of a batch that goes through (on a copy of the work)
    g_polls = 0;
    {
        auto probe = make(GetParam(), g);
        ASSERT_TRUE(probe->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied).ok());
        ASSERT_TRUE(probe->update(u.ids.data(), u.xs.data(), u.ys.data(), u.ids.size(), cctx, applied).ok());
    }
    const int total = g_polls.load();
    ASSERT_GT(total, 4);
    // (Storage grown by a cancelled attempt stays, so a later attempt may poll
    // less often and go through: then it is checked like a finished batch.)
    int cancelled = 0;
    bool done = false;
    for (int k = total - 1; k >= std::max(0, total - 12) && !done; --k) {
        g_cancel_after = k;
        g_polls = 0;
        Status st = idx->update(u.ids.data(), u.xs.data(), u.ys.data(), u.ids.size(), cctx, applied);
        if (st.ok()) {
            done = true;
            break;
        }
        ASSERT_EQ(st.code, StatusCode::Cancelled) << "poll " << k << " of " << total << ": " << st.message;
        ++cancelled;
        mo::Info info;
        idx->info(info);
        ASSERT_EQ(info.objects, static_cast<int64_t>(m.size()));
        check_queries(*idx, m, gen, GetParam(), 6, "after a batch cancelled late");
    }
    EXPECT_GE(cancelled, 1);
    if (!done) {
        ASSERT_TRUE(idx->update(u.ids.data(), u.xs.data(), u.ys.data(), u.ids.size(), ctx, applied).ok());
    }
    u.apply(m);
    check_queries(*idx, m, gen, GetParam(), 30, "after the batch");
}

// The CPU engine polls the cancel callback in proportion to the work: every
// pass over the entries (and the apply phase) in tasks of at most
// kPollEntries entries, so a poll comes every ~100 ms or less whatever the
// batch size. (It used to poll a fixed ~8 times per pass and never while
// applying: ~200 polls for any batch.)
TEST(MovingCancel, CpuPollsGrowWithTheBatch) {
    mo::Grid g = grid(0, 0, 1000, 1000, 128, 128);
    ExecContext ctx = context(Engine::Cpu1);
    mo::Index* p = nullptr;
    ASSERT_TRUE(mo::create_cpu(g, 1 << 24, ctx, p).ok());
    std::unique_ptr<mo::Index> idx(p);
    const size_t n = size_t(1) << 21;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0, 1000);
    std::vector<int64_t> ids(n);
    std::vector<double> xs(n), ys(n);
    for (size_t i = 0; i < n; ++i) {
        ids[i] = static_cast<int64_t>(rng() % (2 * n));
        xs[i] = u(rng);
        ys[i] = u(rng);
    }
    ExecContext cctx = ctx;
    cctx.cancel = cancel_after_n;
    g_cancel_after = 1 << 30;
    g_polls = 0;
    int64_t applied;
    ASSERT_TRUE(idx->update(ids.data(), xs.data(), ys.data(), n, cctx, applied).ok());
    EXPECT_GE(g_polls.load(), static_cast<int>(10 * n / mo::kPollEntries)) << "polls for " << n << " entries";
}

// Memory: an index counts what it holds; creation and growth past the budget
// are ProgramLimit and change nothing; a small batch still fits.
TEST_P(MovingEngines, MemoryBudget) {
    mo::Grid big = grid(0, 0, 1, 1, 1024, 1024);
    ExecContext ctx = context(GetParam());
    mo::MemoryBudget tight;
    tight.limit = 8 << 20;
    tight.others = 1 << 20;
    mo::Index* p = nullptr;
    Status st = GetParam() == Engine::Gpu ? mo::create(big, 1 << 24, ctx, p, tight)
                                          : mo::create_cpu(big, 1 << 24, ctx, p, tight);
    ASSERT_EQ(st.code, StatusCode::ProgramLimit) << st.message;
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::strstr(st.message, "approx_gpu.moving_session_memory"), nullptr) << st.message;

    mo::Grid g = grid(0, 0, 1, 1, 8, 8);
    auto idx = make(GetParam(), g);
    const int64_t empty = idx->bytes();
    EXPECT_GT(empty, 8 * 8 * 4);
    idx->set_budget(tight);
    Gen gen(g, 3, false);
    Model m;
    Batch small;
    for (int i = 0; i < 100; ++i) {
        Pt q = gen.point();
        small.add(i, q.x, q.y);
    }
    int64_t applied;
    ASSERT_TRUE(idx->update(small.ids.data(), small.xs.data(), small.ys.data(), small.ids.size(), ctx, applied).ok());
    small.apply(m);
    const int64_t held = idx->bytes();
    EXPECT_GT(held, empty);
    EXPECT_LE(held, tight.limit - tight.others);
    Batch large;
    for (int i = 0; i < 200000; ++i) {
        Pt q = gen.point();
        large.add(1000 + i, q.x, q.y);
    }
    st = idx->update(large.ids.data(), large.xs.data(), large.ys.data(), large.ids.size(), ctx, applied);
    ASSERT_EQ(st.code, StatusCode::ProgramLimit) << st.message;
    EXPECT_LE(idx->bytes(), tight.limit - tight.others);
    check_queries(*idx, m, gen, GetParam(), 20, "after a batch over the budget");
    idx->set_budget(mo::MemoryBudget());
    ASSERT_TRUE(idx->update(large.ids.data(), large.xs.data(), large.ys.data(), large.ids.size(), ctx, applied).ok());
    large.apply(m);
    check_queries(*idx, m, gen, GetParam(), 20, "without a budget");
}

// Delete everything, then the pool's buckets are reused.
TEST_P(MovingEngines, DrainAndRefill) {
    mo::Grid g = grid(0, 0, 64, 64, 8, 8);
    auto idx = make(GetParam(), g);
    ExecContext ctx = context(GetParam());
    Gen gen(g, 5, true);
    Model m;
    for (int round = 0; round < 3; ++round) {
        Batch b;
        for (int i = 0; i < 5000; ++i) {
            Pt p = gen.point();
            b.add(i + round * 100000, p.x, p.y);
        }
        int64_t applied;
        ASSERT_TRUE(idx->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied).ok());
        b.apply(m);
        check_queries(*idx, m, gen, GetParam(), 20, "refilled");
        mo::Info info;
        idx->info(info);
        int64_t cap = info.bucket_capacity;
        ASSERT_TRUE(idx->remove(b.ids.data(), b.ids.size(), ctx, applied).ok());
        EXPECT_EQ(applied, 5000);
        m.clear();
        idx->info(info);
        EXPECT_EQ(info.objects, 0);
        EXPECT_EQ(info.buckets_used, 0);
        EXPECT_EQ(info.bucket_capacity, cap);  // nothing lost: every bucket back on the free stack
        check_queries(*idx, m, gen, GetParam(), 10, "drained");
    }
}

// Many cells and many large queries: the GPU engine splits a query batch whose
// boundary-cell candidates pass its per-chunk limit; interiors come from the
// summed-area table.
TEST_P(MovingEngines, ManyCellsAndLargeQueries) {
    mo::Grid g = grid(0, 0, 2048, 2048, 2048, 2048);
    auto idx = make(GetParam(), g);
    ExecContext ctx = context(GetParam());
    Gen gen(g, 23, true);
    Model m;
    Batch b;
    for (int i = 0; i < 30000; ++i) {
        Pt p = gen.point();
        b.add(i, p.x, p.y);
    }
    int64_t applied;
    ASSERT_TRUE(idx->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), ctx, applied).ok());
    b.apply(m);
    std::vector<mo::Rect> qs;
    for (int i = 0; i < 2700; ++i) {
        double x0 = gen.unif(-10, 300), y0 = gen.unif(-10, 300);
        qs.push_back(i % 3 == 0 ? mo::Rect{-INFINITY, -INFINITY, INFINITY, INFINITY}
                                : mo::Rect{x0, y0, x0 + gen.unif(1500, 2100), y0 + gen.unif(1500, 2100)});
    }
    std::vector<int64_t> counts(qs.size());
    Status st = idx->range_count(qs.data(), qs.size(), ctx, counts.data());
    ASSERT_TRUE(st.ok()) << st.message;
    for (size_t i = 0; i < qs.size(); ++i) ASSERT_EQ(counts[i], brute_count(m, qs[i])) << "query " << i;
    mo::Info info;
    idx->info(info);
    EXPECT_GT(info.last_query.candidate_cells, int64_t(1) << 24);  // more than one GPU chunk
    check_queries(*idx, m, gen, GetParam(), 20, "many cells");
}

INSTANTIATE_TEST_SUITE_P(Engines, MovingEngines, ::testing::Values(Engine::Cpu1, Engine::CpuN, Engine::Gpu),
                         [](const ::testing::TestParamInfo<Engine>& i) { return std::string(engine_name(i.param)); });

TEST(MovingGrid, Checks) {
    EXPECT_TRUE(mo::check_grid(grid(0, 0, 1, 1, 1, 1), 10).ok());
    EXPECT_EQ(mo::check_grid(grid(1, 0, 1, 1, 1, 1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(0, 2, 1, 1, 1, 1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(0, 0, INFINITY, 1, 1, 1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(0, NAN, 1, 1, 1, 1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(-1e308, 0, 1e308, 1, 1, 1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(0, 0, 1, 1, 0, 1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(0, 0, 1, 1, 4, -1), 10).code, StatusCode::InvalidArgument);
    EXPECT_EQ(mo::check_grid(grid(0, 0, 1, 1, 4, 4), 10).code, StatusCode::ProgramLimit);
    EXPECT_EQ(mo::check_grid(grid(0, 0, 5e-324, 1, 4, 1), 10).code, StatusCode::InvalidArgument);
}

TEST(MovingGrid, CellsAreMonotoneAndEdgesBelongToTheLastCell) {
    mo::GridMap gm = mo::grid_map(grid(-3, 0.1, 7.3, 0.7, 13, 7));
    EXPECT_EQ(gm.col(7.3), 12);
    EXPECT_EQ(gm.row(0.7), 6);
    EXPECT_EQ(gm.col(-3), 0);
    std::mt19937_64 rng(3);
    std::vector<double> xs;
    for (int i = 0; i < 20000; ++i) xs.push_back(-3 + 10.3 * std::uniform_real_distribution<double>(0, 1)(rng));
    for (int i = 0; i <= 13; ++i) xs.push_back(-3 + gm.cw * i);
    std::sort(xs.begin(), xs.end());
    for (size_t i = 1; i < xs.size(); ++i) ASSERT_LE(gm.col(xs[i - 1]), gm.col(xs[i]));
}

TEST(MovingGrid, RingCellsCoverTheBoundary) {
    for (int c0 = 0; c0 < 4; ++c0)
        for (int c1 = c0; c1 < 7; ++c1)
            for (int r0 = 0; r0 < 3; ++r0)
                for (int r1 = r0; r1 < 6; ++r1) {
                    std::vector<int> seen(64, 0);
                    int64_t n = mo::ring_cells(c0, c1, r0, r1);
                    for (int64_t t = 0; t < n; ++t) {
                        int32_t cx, cy;
                        mo::ring_cell(c0, c1, r0, r1, t, cx, cy);
                        ASSERT_TRUE(cx >= c0 && cx <= c1 && cy >= r0 && cy <= r1);
                        ++seen[cy * 8 + cx];
                    }
                    for (int cy = r0; cy <= r1; ++cy)
                        for (int cx = c0; cx <= c1; ++cx) {
                            bool interior = c0 < cx && cx < c1 && r0 < cy && cy < r1;
                            ASSERT_EQ(seen[cy * 8 + cx], interior ? 0 : 1);
                        }
                }
}

TEST(MovingCreate, DispatchPicksTheEngine) {
    ExecContext ctx;
    ctx.mode = approx::DeviceMode::Cpu;
    mo::Index* p = nullptr;
    ASSERT_TRUE(mo::create(grid(0, 0, 1, 1, 2, 2), 100, ctx, p).ok());
    std::unique_ptr<mo::Index> idx(p);
    EXPECT_EQ(idx->device(), approx::Device::Cpu);
    ctx.mode = approx::DeviceMode::Auto;
    ASSERT_TRUE(mo::create(grid(0, 0, 1, 1, 2, 2), 100, ctx, p).ok());
    idx.reset(p);
    EXPECT_EQ(idx->device(), have_gpu() ? approx::Device::Gpu : approx::Device::Cpu);
    ctx.mode = approx::DeviceMode::Gpu;
    Status st = mo::create(grid(0, 0, 1, 1, 2, 2), 100, ctx, p);
    if (have_gpu()) {
        ASSERT_TRUE(st.ok());
        idx.reset(p);
        EXPECT_EQ(idx->device(), approx::Device::Gpu);
    } else {
        EXPECT_EQ(st.code, StatusCode::NoGpu);
    }
    EXPECT_EQ(mo::create(grid(0, 0, 1, 1, 20, 20), 100, ctx, p).code, StatusCode::ProgramLimit);
}

// The GPU engine gives the CPU engine's answers on the same workload.
TEST(MovingCpuGpu, SameAnswers) {
    if (!have_gpu()) GTEST_SKIP() << "no GPU on this machine: CPU = GPU is checked on the GPU machine";
    mo::Grid g = grid(0, 0, 1000, 1000, 64, 64);
    auto cpu = make(Engine::CpuN, g), gpu = make(Engine::Gpu, g);
    Gen gen(g, 99, true);
    Model m;
    ExecContext cc = context(Engine::CpuN), gc = context(Engine::Gpu);
    for (int r = 0; r < 5; ++r) {
        Batch b;
        for (int i = 0; i < 30000; ++i) {
            Pt p = gen.point();
            b.add(static_cast<int64_t>(gen.rng() % 40000), p.x, p.y);
        }
        int64_t a1, a2;
        ASSERT_TRUE(cpu->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), cc, a1).ok());
        ASSERT_TRUE(gpu->update(b.ids.data(), b.xs.data(), b.ys.data(), b.ids.size(), gc, a2).ok());
        EXPECT_EQ(a1, a2);
        std::vector<mo::Rect> qs;
        for (int i = 0; i < 5000; ++i) qs.push_back(gen.query(m));
        std::vector<int64_t> c1(qs.size()), c2(qs.size());
        ASSERT_TRUE(cpu->range_count(qs.data(), qs.size(), cc, c1.data()).ok());
        ASSERT_TRUE(gpu->range_count(qs.data(), qs.size(), gc, c2.data()).ok());
        ASSERT_EQ(c1, c2);
        mo::Info i1, i2;
        cpu->info(i1);
        gpu->info(i2);
        EXPECT_EQ(i1.objects, i2.objects);
        EXPECT_EQ(i1.buckets_used, i2.buckets_used);
    }
}

}  // namespace

namespace {

// The GPU engine's parallel delete (delete_move) against the serial meaning:
// after all moves, positions 0..n-d-1 hold exactly the survivors.
TEST(MovingDeleteMove, EveryHoleFilledByADistinctSurvivor) {
    std::mt19937_64 rng(17);
    for (int trial = 0; trial < 3000; ++trial) {
        int64_t n = 1 + static_cast<int64_t>(rng() % 200);
        int64_t d = static_cast<int64_t>(rng() % (n + 1));
        if (trial % 7 == 0) d = n;
        std::vector<int64_t> all(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
        std::shuffle(all.begin(), all.end(), rng);
        std::vector<int64_t> del(all.begin(), all.begin() + d);
        std::sort(del.begin(), del.end());
        const uint32_t cell = 12345;
        std::vector<uint64_t> keys(static_cast<size_t>(d) + 3, 0);
        for (int64_t i = 0; i < d; ++i)
            keys[static_cast<size_t>(i + 3)] = (uint64_t(cell) << 32) | uint64_t(del[static_cast<size_t>(i)]);
        std::vector<int64_t> slots(static_cast<size_t>(n)), after;
        for (int64_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = i;  // object id = its position
        after = slots;
        std::vector<int> dst_used(static_cast<size_t>(n), 0);
        for (int64_t i = 0; i < d; ++i) {
            int64_t from, to;
            if (mo::delete_move(keys.data(), 3, 3 + d, n, i, from, to)) {
                ASSERT_GE(from, n - d);
                ASSERT_LT(to, n - d);
                ASSERT_EQ(dst_used[static_cast<size_t>(to)]++, 0);
                after[static_cast<size_t>(to)] = slots[static_cast<size_t>(from)];
            }
        }
        std::vector<int64_t> got(after.begin(), after.begin() + (n - d)), want;
        for (int64_t i = 0; i < n; ++i)
            if (!std::binary_search(del.begin(), del.end(), i)) want.push_back(i);
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, want) << "n=" << n << " d=" << d;
    }
}

}  // namespace
