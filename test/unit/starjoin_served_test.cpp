// The star join through the GPU service (core/starjoin/starjoin_served.hpp):
// tables as blobs and back, and run_in_service() through a loopback
// transport that copies every blob as the staging area would and keeps the
// cacheable input resident as the service's cache does (an absent input it
// does not hold is NotServed), served with the CPU engine -- against run()
// called directly.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "core/service.hpp"
#include "core/starjoin/starjoin_served.hpp"
#include "starjoin_test.hpp"
#include "unit_ctx.hpp"

using namespace sjtest;
using approx::ExecContext;
using approx::Status;
using approx::StatusCode;
namespace service = approx::service;

namespace {

struct Loopback {
    std::map<uint64_t, std::vector<uint8_t>> resident;
    int calls = 0, hits = 0;
    size_t max_bytes = SIZE_MAX;  // the staging area
};
Loopback lb;

Status loopback(const ExecContext&, service::Request& req) {
    ++lb.calls;
    size_t total = 0;
    for (int i = 0; i < req.n_in; ++i) total += req.in_bytes[i];
    for (int i = 0; i < req.n_out; ++i) total += req.out_bytes[i];
    if (total > lb.max_bytes) return Status::Error(StatusCode::NotServed, "larger than the staging area");
    std::vector<std::vector<uint8_t>> ins(static_cast<size_t>(req.n_in)), outs(static_cast<size_t>(req.n_out));
    service::Served s;
    s.op = req.op;
    s.n_in = req.n_in;
    s.n_out = req.n_out;
    for (int i = 0; i < req.n_in; ++i) {
        const uint8_t* p = static_cast<const uint8_t*>(req.in[i]);
        ins[i].assign(p, p + req.in_bytes[i]);
        s.in[i] = ins[i].data();
        s.in_bytes[i] = req.in_bytes[i];
    }
    for (int k = 0; k < req.n_cached; ++k) {
        const int ci = req.cache_in[k];
        auto f = lb.resident.find(req.cache_key[k]);
        if (f != lb.resident.end()) {
            ++lb.hits;
            s.in[ci] = f->second.data();
            s.in_bytes[ci] = f->second.size();
        } else if (req.cache_absent[k]) {
            return Status::Error(StatusCode::NotServed, "resident input evicted");
        } else {
            lb.resident[req.cache_key[k]] = ins[static_cast<size_t>(ci)];
        }
    }
    for (int i = 0; i < req.n_out; ++i) {
        outs[i].assign(req.out_bytes[i], 0xab);
        s.out[i] = outs[i].data();
        s.out_bytes[i] = req.out_bytes[i];
    }
    Status st = service::serve(cpu_ctx(), s);
    if (st.ok())
        for (int i = 0; i < req.n_out; ++i)
            if (req.out_bytes[i]) std::memcpy(req.out[i], outs[i].data(), req.out_bytes[i]);
    return st;
}

ExecContext served_ctx() {
    ExecContext ctx = cpu_ctx();
    ctx.mode = approx::DeviceMode::Gpu;  // always wanted
    ctx.service = loopback;
    return ctx;
}

void expect_equal(const Result& a, const Result& b) {
    EXPECT_EQ(a.n_parts, b.n_parts);
    EXPECT_EQ(a.n_strata, b.n_strata);
    EXPECT_EQ(a.n_measures, b.n_measures);
    EXPECT_EQ(a.groups, b.groups);
    EXPECT_EQ(a.joined_rows, b.joined_rows);
    EXPECT_EQ(a.dense_groups, b.dense_groups);
    EXPECT_EQ(a.keys, b.keys);
    EXPECT_EQ(a.key_nulls, b.key_nulls);
    EXPECT_EQ(a.rows, b.rows);
    ASSERT_EQ(a.moments.size(), b.moments.size());
    EXPECT_EQ(0, std::memcmp(a.moments.data(), b.moments.data(), a.moments.size() * sizeof(a.moments[0])));
    for (int d = 0; d < kMaxDims; ++d) {
        EXPECT_EQ(a.dims[d].rows, b.dims[d].rows) << d;
        EXPECT_EQ(a.dims[d].passing, b.dims[d].passing) << d;
        EXPECT_EQ(a.dims[d].dense, b.dims[d].dense) << d;
        EXPECT_EQ(a.dims[d].key_min, b.dims[d].key_min) << d;
        EXPECT_EQ(a.dims[d].key_max, b.dims[d].key_max) << d;
    }
}

std::vector<uint8_t> blob_of(const Table& t) {
    std::vector<uint8_t> b(table_blob_bytes(t));
    pack_table(t, b.data());
    return b;
}

ServedInputs served_inputs(const std::vector<uint8_t>* fact, const Inputs& in, uint64_t key) {
    ServedInputs si;
    si.fact = fact ? fact->data() : nullptr;
    si.fact_bytes = fact ? fact->size() : 0;
    si.fact_key = key;
    si.fact_rows = in.fact.rows;
    si.dims = in.dims;
    return si;
}

}  // namespace

TEST(StarJoinServed, TableBlobRoundTrip) {
    Star s(1000, 50, 40, 3, 11);
    Inputs in = s.inputs();
    std::vector<Column> cols = s.fact_cols;
    cols[3].data = nullptr;  // a column no program reads travels without values
    Table t{cols.data(), static_cast<int32_t>(cols.size()), s.n};
    std::vector<uint8_t> b = blob_of(t);
    std::vector<Column> back;
    Table u;
    size_t used = 0;
    ASSERT_TRUE(unpack_table(b.data(), b.size(), back, u, &used).ok());
    EXPECT_EQ(used, b.size());
    ASSERT_EQ(u.n_columns, t.n_columns);
    EXPECT_EQ(u.rows, t.rows);
    for (int32_t c = 0; c < t.n_columns; ++c) {
        EXPECT_EQ(u.columns[c].type, t.columns[c].type) << c;
        EXPECT_EQ(u.columns[c].data == nullptr, t.columns[c].data == nullptr) << c;
        EXPECT_EQ(u.columns[c].nulls == nullptr, t.columns[c].nulls == nullptr) << c;
        if (t.columns[c].data) {
            EXPECT_EQ(0, std::memcmp(u.columns[c].data, t.columns[c].data,
                                     static_cast<size_t>(t.rows) * column_width(t.columns[c].type)))
                << c;
        }
        if (t.columns[c].nulls) {
            EXPECT_EQ(0, std::memcmp(u.columns[c].nulls, t.columns[c].nulls, static_cast<size_t>(t.rows + 7) / 8)) << c;
        }
    }
    // Truncated or corrupted: an error, never a read past the end.
    EXPECT_FALSE(unpack_table(b.data(), b.size() - 1, back, u).ok());
    EXPECT_FALSE(unpack_table(b.data(), 8, back, u).ok());
    std::vector<uint8_t> bad = b;
    bad[0] ^= 1;
    EXPECT_FALSE(unpack_table(bad.data(), bad.size(), back, u).ok());
    (void)in;
}

TEST(StarJoinServed, RoundTripAnswersAsDirect) {
    Star s(6000, 300, 200, 40, 5);
    Inputs in = s.inputs();
    std::vector<uint8_t> fact = blob_of(in.fact);
    for (int groups : {0, 1, 2, 3})
        for (bool dim_filter : {false, true}) {
            Knobs k;
            k.groups = groups;
            k.dim_filter = dim_filter;
            Plan plan = make_plan(s, k);
            Result direct, served;
            ASSERT_TRUE(run(plan, in, cpu_ctx(), direct).ok());
            lb = Loopback();
            approx::RunStats stats;
            ExecContext ctx = served_ctx();
            ctx.stats = &stats;
            ASSERT_TRUE(run_in_service(plan, served_inputs(&fact, in, 0), ctx, served).ok()) << groups;
            expect_equal(direct, served);
            // groups 2 (a % 7, code, q; 40 strata): a result of megabytes, over
            // the first answer's room, asked for once more with room for it.
            const size_t bytes = served.moments.size() * sizeof(served.moments[0]);
            EXPECT_EQ(lb.calls, bytes > (size_t(1) << 20) ? 2 : 1) << groups;
            if (groups == 2) {
                EXPECT_GT(bytes, size_t(1) << 20);
            }
        }
}

// One star (4000 facts, two dimensions) with one group column, its fact's
// blob and its plan: the resident-input tests' setup.
struct ServedStar {
    Star s{4000, 100, 80, 2, 9};
    Inputs in = s.inputs();
    std::vector<uint8_t> fact = blob_of(in.fact);
    Plan plan = make_plan(s, one_group());
    static Knobs one_group() {
        Knobs k;
        k.groups = 1;
        return k;
    }
};

TEST(StarJoinServed, ResidentFactIsNotSentAndEvictionSaysSo) {
    ServedStar t;
    Inputs& in = t.in;
    std::vector<uint8_t>& fact = t.fact;
    const Plan& plan = t.plan;
    Result direct, first, second, third;
    ASSERT_TRUE(run(plan, in, cpu_ctx(), direct).ok());
    lb = Loopback();
    const uint64_t key = 0x1234;
    ASSERT_TRUE(run_in_service(plan, served_inputs(&fact, in, key), served_ctx(), first).ok());
    EXPECT_EQ(lb.hits, 0);
    EXPECT_EQ(lb.resident.count(key), 1u);
    // The caller saw the key resident: no fact in the request, the same answer.
    ASSERT_TRUE(run_in_service(plan, served_inputs(nullptr, in, key), served_ctx(), second).ok());
    EXPECT_EQ(lb.hits, 1);
    expect_equal(direct, first);
    expect_equal(direct, second);
    // Another key (a new sample relation, another column set) is not the resident copy.
    EXPECT_EQ(run_in_service(plan, served_inputs(nullptr, in, key + 1), served_ctx(), third).code,
              StatusCode::NotServed);
    // Evicted meanwhile: NotServed, and with the fact sent again it answers.
    lb.resident.clear();
    EXPECT_EQ(run_in_service(plan, served_inputs(nullptr, in, key), served_ctx(), third).code, StatusCode::NotServed);
    ASSERT_TRUE(run_in_service(plan, served_inputs(&fact, in, key), served_ctx(), third).ok());
    expect_equal(direct, third);
}

TEST(StarJoinServed, ResidentDimensionsAreNotSentAndEvictionSaysSo) {
    ServedStar t;
    Inputs& in = t.in;
    std::vector<uint8_t>& fact = t.fact;
    const Plan& plan = t.plan;
    ASSERT_GT(plan.n_dims, 0);
    std::vector<uint8_t> dims(dims_blob_bytes(in.dims, plan.n_dims));
    pack_dims(in.dims, plan.n_dims, dims.data());
    auto with_dims = [&](const std::vector<uint8_t>* f, const std::vector<uint8_t>* d) {
        ServedInputs si = served_inputs(f, in, 0x1234);
        si.dims = nullptr;  // only the blob, or the key
        si.dims_blob = d ? d->data() : nullptr;
        si.dims_bytes = d ? d->size() : 0;
        si.dims_key = 0x5678;
        return si;
    };
    Result direct, first, second, third;
    ASSERT_TRUE(run(plan, in, cpu_ctx(), direct).ok());
    lb = Loopback();
    ASSERT_TRUE(run_in_service(plan, with_dims(&fact, &dims), served_ctx(), first).ok());
    EXPECT_EQ(lb.resident.count(0x1234), 1u);
    EXPECT_EQ(lb.resident.count(0x5678), 1u);
    // Both resident: neither travels, the same answer.
    ASSERT_TRUE(run_in_service(plan, with_dims(nullptr, nullptr), served_ctx(), second).ok());
    EXPECT_EQ(lb.hits, 2);
    expect_equal(direct, first);
    expect_equal(direct, second);
    // The dimensions evicted: NotServed, and with them sent again it answers.
    lb.resident.erase(0x5678);
    EXPECT_EQ(run_in_service(plan, with_dims(nullptr, nullptr), served_ctx(), third).code, StatusCode::NotServed);
    ASSERT_TRUE(run_in_service(plan, with_dims(nullptr, &dims), served_ctx(), third).ok());
    expect_equal(direct, third);
}

TEST(StarJoinServed, TooLargeForTheStagingAreaIsNotServedAndErrorsComeBack) {
    Star s(3000, 100, 80, 2, 3);
    Inputs in = s.inputs();
    std::vector<uint8_t> fact = blob_of(in.fact);
    Knobs k;
    Plan plan = make_plan(s, k);
    Result out;
    lb = Loopback();
    lb.max_bytes = fact.size() / 2;
    EXPECT_EQ(run_in_service(plan, served_inputs(&fact, in, 0), served_ctx(), out).code, StatusCode::NotServed);
    // The engine's own answers travel as they are: a budget's Declined.
    lb = Loopback();
    plan.state_budget = 16;
    EXPECT_EQ(run_in_service(plan, served_inputs(&fact, in, 0), served_ctx(), out).code, StatusCode::Declined);
}
