// The star-join engine on the GPU against the CPU engine (CUDA builds only;
// skipped without a GPU): equal groups, keys, rows and counts, sums and
// moments within 1e-12 of their scale; errors and budget the same.
#ifdef APPROX_WITH_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/gpu.hpp"
#include "starjoin_test.hpp"

using namespace sjtest;
using approx::ExecContext;
using approx::Status;
using approx::StatusCode;

namespace {

bool have_gpu(std::string& why) {
    char buf[256];
    bool ok = approx::gpu::available(buf, sizeof buf);
    why = buf;
    return ok;
}
#define SJ_REQUIRE_GPU()                                    \
    do {                                                    \
        std::string why_;                                   \
        if (!have_gpu(why_)) GTEST_SKIP() << "no GPU: " << why_; \
    } while (0)

ExecContext ctx_for(approx::DeviceMode mode) {
    ExecContext ctx;
    ctx.mode = mode;
    ctx.cpu_threads = 2;
    ctx.gpu_min_rows = 0;
    return ctx;
}

void expect_same(const Result& c, const Result& g) {
    ASSERT_EQ(c.groups, g.groups);
    EXPECT_EQ(c.keys, g.keys);
    EXPECT_EQ(c.key_nulls, g.key_nulls);
    EXPECT_EQ(c.rows, g.rows);
    EXPECT_EQ(c.joined_rows, g.joined_rows);
    EXPECT_EQ(c.dense_groups, g.dense_groups);
    ASSERT_EQ(c.moments.size(), g.moments.size());
    for (size_t i = 0; i < c.moments.size(); ++i) {
        const auto &a = c.moments[i], &b = g.moments[i];
        ASSERT_EQ(a.n, b.n) << i;
        EXPECT_EQ(a.nonzero, b.nonzero) << i;
        const double scale = std::fabs(a.mean) * a.n + std::sqrt(a.m2 * a.n) + 1e-300;
        EXPECT_NEAR(a.sum, b.sum, 1e-12 * scale) << i;
        EXPECT_NEAR(a.mean, b.mean, 1e-12 * scale / std::max(1.0, a.n)) << i;
        EXPECT_NEAR(a.m2, b.m2, 1e-12 * a.m2 + 1e-300) << i;
        EXPECT_NEAR(a.m3, b.m3, 1e-11 * std::pow(a.m2, 1.5) + 1e-300) << i;
        EXPECT_NEAR(a.m4, b.m4, 1e-12 * a.m4 + 1e-300) << i;
    }
    for (int d = 0; d < approx::starjoin::kMaxDims; ++d) {
        EXPECT_EQ(c.dims[d].passing, g.dims[d].passing);
        EXPECT_EQ(c.dims[d].dense, g.dims[d].dense);
    }
}

}  // namespace

TEST(StarJoinGpu, MatchesCpuOnRandomStars) {
    SJ_REQUIRE_GPU();
    uint64_t seed = 100;
    for (int groups = 0; groups <= 3; ++groups)
        for (int32_t strata : {1, 4}) {
            Knobs k;
            k.groups = groups;
            k.no_filter1 = groups == 1;
            k.dim_filter = strata == 4;
            Star s(200000, 3000, 2000, strata, seed++);
            Plan p = make_plan(s, k);
            Result c, g;
            ASSERT_TRUE(run(p, s.inputs(), ctx_for(approx::DeviceMode::Cpu), c).ok());
            approx::RunStats stats;
            ExecContext gctx = ctx_for(approx::DeviceMode::Gpu);
            gctx.stats = &stats;
            Status st = run(p, s.inputs(), gctx, g);
            ASSERT_TRUE(st.ok()) << st.message;
            EXPECT_EQ(stats.device, approx::Device::Gpu);
            SCOPED_TRACE("groups " + std::to_string(groups) + " strata " + std::to_string(strata));
            expect_same(c, g);
            EXPECT_GT(c.groups, 0);
        }
}

TEST(StarJoinGpu, SparseGroupsResidentColumnsAndErrors) {
    SJ_REQUIRE_GPU();
    Star s(100000, 1000, 500, 2, 7);
    Knobs k;
    k.groups = 1;
    Plan p = make_plan(s, k);
    Builder b{p};
    p.group_parts[p.n_group_parts++] =
        b.add({I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, int64_t(1) << 34), I(Op::Mul)});
    Result c, g;
    ASSERT_TRUE(run(p, s.inputs(), ctx_for(approx::DeviceMode::Cpu), c).ok());
    ASSERT_TRUE(run(p, s.inputs(), ctx_for(approx::DeviceMode::Gpu), g).ok());
    EXPECT_FALSE(g.dense_groups);
    expect_same(c, g);
    // the same answer when the x column is device-resident (no host data)
    void* dx = nullptr;
    ASSERT_TRUE(approx::gpu::resident_upload(s.x.data(), s.x.size() * sizeof(double), dx).ok());
    Inputs in = s.inputs();
    std::vector<Column> cols = s.fact_cols;
    cols[2].data = nullptr;
    cols[2].device = dx;
    in.fact.columns = cols.data();
    Result r;
    Status st = run(p, in, ctx_for(approx::DeviceMode::Gpu), r);
    EXPECT_TRUE(st.ok()) << st.message;
    expect_same(c, r);
    approx::gpu::resident_free(dx, s.x.size() * sizeof(double));
    // errors: the first in row order on both engines
    p.measures[2] = b.add({I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, int64_t(1) << 62), I(Op::Mul),
                           I(Op::IntToFloat)});
    Status ce = run(p, s.inputs(), ctx_for(approx::DeviceMode::Cpu), c);
    Status ge = run(p, s.inputs(), ctx_for(approx::DeviceMode::Gpu), g);
    EXPECT_EQ(ce.code, StatusCode::OutOfRange);
    EXPECT_EQ(ge.code, StatusCode::OutOfRange);
    EXPECT_STREQ(ce.message, ge.message);
    // duplicate keys (dense and hashed maps), the budget
    Plan q = make_plan(s, k);
    s.key1[5] = s.key1[6];
    EXPECT_EQ(run(q, s.inputs(), ctx_for(approx::DeviceMode::Gpu), g).code, StatusCode::InvalidArgument);
    s.key1[5] = s.key1[6] + 100000000;  // now sparse: the hashed map
    ASSERT_TRUE(run(q, s.inputs(), ctx_for(approx::DeviceMode::Cpu), c).ok());
    ASSERT_TRUE(run(q, s.inputs(), ctx_for(approx::DeviceMode::Gpu), g).ok());
    EXPECT_FALSE(g.dims[0].dense);
    expect_same(c, g);
    s.key2[5] = s.key2[6];
    EXPECT_EQ(run(q, s.inputs(), ctx_for(approx::DeviceMode::Gpu), g).code, StatusCode::InvalidArgument);
    s.key2[5] = s.key2[6] + 1;
    q.state_budget = 1000;
    EXPECT_EQ(run(q, s.inputs(), ctx_for(approx::DeviceMode::Gpu), g).code, StatusCode::Declined);
}
#endif  // APPROX_WITH_CUDA
