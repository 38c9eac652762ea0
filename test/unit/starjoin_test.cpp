// The star-join engine (core/starjoin/starjoin.hpp) on the CPU against an
// independent scalar reference (starjoin_test.hpp) on random star schemas,
// and its errors, budget and plan checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/sample_estimate.hpp"
#include "starjoin_test.hpp"

using namespace sjtest;
using approx::ExecContext;
using approx::Status;
using approx::StatusCode;
namespace sample = approx::sample;

namespace {

ExecContext cpu_ctx(int threads) {
    ExecContext ctx;
    ctx.mode = approx::DeviceMode::Cpu;
    ctx.cpu_threads = threads;
    return ctx;
}

// sum over values of |v - mean|^p (the scale a central sum's rounding error grows with)
double abs_central(const std::vector<double>& v, double mean, int p) {
    double s = 0;
    for (double y : v) s += std::pow(std::fabs(y - mean), p);
    return s;
}

void expect_matches_reference(const Star& s, const Knobs& k, const Result& res) {
    auto ref = reference(s, k);
    ASSERT_EQ(res.groups, static_cast<int64_t>(ref.size()));
    int64_t g = 0, joined = 0;
    for (const auto& [key, cells] : ref) {
        for (size_t p = 0; p < key.size(); ++p) {
            EXPECT_EQ(res.key_nulls[g * key.size() + p], key[p].first) << "group " << g << " part " << p;
            if (!key[p].first) {
                EXPECT_EQ(res.keys[g * key.size() + p], key[p].second) << "group " << g << " part " << p;
            }
        }
        for (int32_t st = 0; st < s.strata; ++st) {
            const RefCell& c = cells[static_cast<size_t>(st)];
            EXPECT_EQ(res.rows[g * s.strata + st], c.rows);
            joined += c.rows;
            for (int m = 0; m < 3; ++m) {
                sample::Moments want;
                for (double y : c.vals[m]) sample::add(want, y);
                const sample::Moments& got = res.at(g, st, m);
                ASSERT_EQ(got.n, want.n) << "group " << g << " stratum " << st << " measure " << m;
                EXPECT_EQ(got.nonzero, want.nonzero);
                const double abs_sum = abs_central(c.vals[m], 0, 1);
                EXPECT_NEAR(got.sum, want.sum, 1e-12 * abs_sum + 1e-300);
                EXPECT_NEAR(got.mean, want.mean, 1e-12 * (want.n > 0 ? abs_sum / want.n : 0) + 1e-300);
                EXPECT_NEAR(got.m2, want.m2, 1e-12 * abs_central(c.vals[m], want.mean, 2) + 1e-300);
                EXPECT_NEAR(got.m3, want.m3, 1e-11 * abs_central(c.vals[m], want.mean, 3) + 1e-300);
                EXPECT_NEAR(got.m4, want.m4, 1e-12 * abs_central(c.vals[m], want.mean, 4) + 1e-300);
            }
        }
        ++g;
    }
    EXPECT_EQ(res.joined_rows, joined);
}

Result run_ok(const Plan& p, const Inputs& in, const ExecContext& ctx) {
    Result res;
    Status st = run(p, in, ctx, res);
    EXPECT_TRUE(st.ok()) << st.message;
    return res;
}

}  // namespace

TEST(StarJoin, MatchesReferenceOnRandomStars) {
    struct Case {
        int64_t n, n1, n2;
        int32_t strata;
        Knobs k;
    };
    std::vector<Case> cases;
    for (int groups = 0; groups <= 3; ++groups) {
        Knobs k;
        k.groups = groups;
        cases.push_back({6000, 300, 200, 1, k});
        cases.push_back({6000, 300, 200, 4, k});
    }
    Knobs all;  // every filter passes
    all.no_filter1 = true;
    all.qcut = 1000;
    all.codes_pass.assign(10, 1);
    cases.push_back({8000, 500, 100, 3, all});
    Knobs none;  // dimension 1 rejects every row
    none.lo1 = 50;
    none.hi1 = 40;
    cases.push_back({3000, 100, 100, 2, none});
    Knobs dimf;  // the fact filter reads a dimension output; NULL group keys
    dimf.dim_filter = true;
    dimf.no_filter1 = true;
    dimf.groups = 1;
    cases.push_back({7000, 400, 50, 5, dimf});
    uint64_t seed = 1;
    for (const Case& c : cases) {
        Star s(c.n, c.n1, c.n2, c.strata, seed++);
        Plan p = make_plan(s, c.k);
        for (int threads : {1, 3}) {
            SCOPED_TRACE("seed " + std::to_string(seed - 1) + " groups " + std::to_string(c.k.groups) + " threads " +
                         std::to_string(threads));
            Result res = run_ok(p, s.inputs(), cpu_ctx(threads));
            expect_matches_reference(s, c.k, res);
            if (c.k.lo1 <= c.k.hi1) {
                EXPECT_GT(res.groups, 0);
            }
            if (c.k.groups == 2 && c.k.lo1 <= c.k.hi1) {
                EXPECT_GT(res.groups, 100);
            }
            EXPECT_TRUE(res.dims[0].dense);
            EXPECT_FALSE(res.dims[1].dense);
            EXPECT_EQ(res.dims[0].rows, c.n1);
        }
    }
}

TEST(StarJoin, SparseGroupsAndRoundTripThroughBytes) {
    // a group key of 2^40 spread: sorted distinct keys, not a dense array
    Star s(5000, 200, 100, 2, 77);
    Knobs k;
    k.groups = 1;
    Plan p = make_plan(s, k);
    Builder b{p};
    p.group_parts[p.n_group_parts++] =
        b.add({I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, int64_t(1) << 34), I(Op::Mul)});
    std::vector<uint8_t> bytes;
    serialize(p, bytes);
    Plan q;
    ASSERT_TRUE(deserialize(bytes.data(), bytes.size(), q).ok());
    Result a = run_ok(p, s.inputs(), cpu_ctx(2)), c = run_ok(q, s.inputs(), cpu_ctx(1));
    EXPECT_FALSE(a.dense_groups);
    ASSERT_EQ(a.groups, c.groups);
    EXPECT_EQ(a.keys, c.keys);
    EXPECT_EQ(a.rows, c.rows);
    for (int64_t g = 1; g < a.groups; ++g)  // ascending keys
        EXPECT_TRUE(a.keys[(g - 1) * 2] < a.keys[g * 2] ||
                    (a.keys[(g - 1) * 2] == a.keys[g * 2] && a.keys[(g - 1) * 2 + 1] < a.keys[g * 2 + 1]));
    EXPECT_EQ(deserialize(bytes.data(), bytes.size() - 1, q).code, StatusCode::InvalidArgument);
}

TEST(StarJoin, ErrorsOnlyWhereRowsAreEvaluated) {
    Star s(4000, 100, 50, 1, 5);
    Knobs k;
    k.qcut = 10;
    s.x_nulls.assign(s.x_nulls.size(), 0);  // x never NULL: the filter is q < 10
    Plan p = make_plan(s, k);
    Builder b{p};
    // measure 100 / (q - 20): q = 20 rows never pass q < 10, so nothing raises
    p.measures[p.n_measures++] =
        b.add({I(Op::ConstInt, Kind::Int, 0, 100), I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, 20),
               I(Op::Sub, Kind::Int, 0, 0, 0, 4), I(Op::Div, Kind::Int, 0, 0, 0, 4), I(Op::IntToFloat)});
    Result res;
    EXPECT_TRUE(run(p, s.inputs(), cpu_ctx(2), res).ok());
    // 100 / (q - 5): rows with q = 5 pass: 22012
    p.code[static_cast<size_t>(p.measures[3].first + 2)].b = 5;
    Status st = run(p, s.inputs(), cpu_ctx(2), res);
    EXPECT_EQ(st.code, StatusCode::DivisionByZero) << st.message;
    EXPECT_NE(std::string(st.message).find("division by zero"), std::string::npos);
    // q * 2^62: 22003 bigint out of range
    p.measures[3] = b.add({I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, int64_t(1) << 62), I(Op::Mul),
                           I(Op::IntToFloat)});
    st = run(p, s.inputs(), cpu_ctx(3), res);
    EXPECT_EQ(st.code, StatusCode::OutOfRange) << st.message;
    // a dimension output that fails on dimension rows no fact row joins does not raise
    Plan p2 = make_plan(s, k);
    Builder b2{p2};
    for (double& w : s.w1)
        if (w == 0) w = 0.5;
    s.w1[0] = 0;  // dimension-1 row 0: its key is never used below
    for (int64_t r = 0; r < s.n; ++r)
        if (s.fk1[r] == s.key1[0]) s.fk1[r] = s.key1[1];
    p2.dims[0].outputs[1] =
        b2.add({I(Op::ConstFloat, Kind::Float, 0, float_bits(1.0)), I(Op::Col, Kind::Float, 2), I(Op::Div, Kind::Float)});
    EXPECT_TRUE(run(p2, s.inputs(), cpu_ctx(2), res).ok());
    s.fk1[0] = s.key1[0];  // now one row joins it (if it passes the filters, it raises)
    s.q[0] = 0;
    s.fk1_nulls[0] &= static_cast<uint8_t>(~1u);
    s.fk2[0] = s.key2[1];
    s.code2[1] = 0;
    s.a1[0] = 50;
    s.a1_nulls[0] &= static_cast<uint8_t>(~1u);
    EXPECT_EQ(run(p2, s.inputs(), cpu_ctx(2), res).code, StatusCode::DivisionByZero);
}

TEST(StarJoin, BadInputsAndBudget) {
    Star s(3000, 100, 50, 3, 9);
    Knobs k;
    Plan p = make_plan(s, k);
    Result res;
    // the budget: Declined (the caller falls back to its general plan)
    Plan tight = p;
    tight.state_budget = 1000;
    Status st = run(tight, s.inputs(), cpu_ctx(1), res);
    EXPECT_EQ(st.code, StatusCode::Declined) << st.message;
    // duplicate dimension keys
    s.key2[7] = s.key2[3];
    EXPECT_EQ(run(p, s.inputs(), cpu_ctx(1), res).code, StatusCode::InvalidArgument);
    s.key2[7] = s.key2[3] + 1;
    // a stratum outside [0, n_strata)
    s.stratum[17] = 3;
    st = run(p, s.inputs(), cpu_ctx(2), res);
    EXPECT_EQ(st.code, StatusCode::InvalidArgument) << st.message;
    s.stratum[17] = 0;
    // a malformed program, a bad column index, a float foreign key: rejected before any row
    Plan bad = p;
    bad.code[static_cast<size_t>(bad.measures[1].first)].a = 99;
    EXPECT_EQ(run(bad, s.inputs(), cpu_ctx(1), res).code, StatusCode::InvalidArgument);
    bad = p;
    bad.dims[0].fact_column = 2;
    EXPECT_EQ(run(bad, s.inputs(), cpu_ctx(1), res).code, StatusCode::InvalidArgument);
    bad = p;
    bad.measures[2].length = 1000000;
    EXPECT_EQ(run(bad, s.inputs(), cpu_ctx(1), res).code, StatusCode::InvalidArgument);
    bad = p;
    bad.n_dims = 9;
    EXPECT_EQ(run(bad, s.inputs(), cpu_ctx(1), res).code, StatusCode::InvalidArgument);
    Inputs in = s.inputs();
    Column no_data[6];
    for (int c = 0; c < 6; ++c) no_data[c] = s.fact_cols[static_cast<size_t>(c)];
    no_data[2].data = nullptr;
    in.fact.columns = no_data;
    EXPECT_EQ(run(p, in, cpu_ctx(1), res).code, StatusCode::InvalidArgument);
    // still fine afterwards
    EXPECT_TRUE(run(p, s.inputs(), cpu_ctx(2), res).ok());
}

TEST(StarJoin, EmptyFactAndNoDimensions) {
    Star s(0, 10, 10, 1, 3);
    Knobs k;
    Result res = run_ok(make_plan(s, k), s.inputs(), cpu_ctx(2));
    EXPECT_EQ(res.groups, 0);
    // a fact table alone: SELECT q % 3, count(*), moments(x) GROUP BY 1
    Star t(2000, 10, 10, 1, 4);
    Plan p;
    Builder b{p};
    p.n_group_parts = 1;
    p.group_parts[0] = b.add({I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, 3), I(Op::Mod)});
    p.n_measures = 1;
    p.measures[0] = b.add({I(Op::Col, Kind::Float, 2)});
    res = run_ok(p, t.inputs(), cpu_ctx(2));
    ASSERT_EQ(res.groups, 3);
    int64_t rows = 0;
    for (int g = 0; g < 3; ++g) {
        EXPECT_EQ(res.keys[g], g);
        rows += res.rows[g];
    }
    EXPECT_EQ(rows, 2000);
}
