// Star-join benchmark: an SSB-like synthetic star (lineorder-like fact of
// 10^6 .. 10^7 rows x 6 columns; date, part, supplier, customer dimensions)
// and two plans shaped like SSB Q2.1 and Q4.1, on the GPU (fact and dimension
// columns resident on the device, and uploaded from the host) and on the CPU
// (one thread, all threads). One table.
//
//   build/starjoin_bench            10^6, 3 x 10^6, 10^7 fact rows
//   build/starjoin_bench --quick    10^5, 10^6 (a laptop or a 2-core CI box)
//
// Times are wall clock of starjoin::run() (median of 5 GPU runs after a
// warm-up; CPU: median of 3, one run past 2 x 10^6 rows at one thread).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu.hpp"
#include "core/starjoin/starjoin.hpp"
#include "../unit/starjoin_builder.hpp"

using namespace approx::starjoin;
using approx::DeviceMode;
using approx::ExecContext;
using approx::Status;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

using sjtest::Builder;
using sjtest::I;

struct Dim {
    int64_t rows = 0;
    std::vector<std::vector<int32_t>> cols;  // all int32 (keys, codes, years)
    std::vector<Column> columns;
    std::vector<std::pair<void*, size_t>> device;
};

// SSB scale: part 200000 (1 + log2 SF), supplier 2000 SF, customer 30000 SF, date 2556 (yyyymmdd keys).
struct Ssb {
    int64_t n;
    std::vector<int32_t> custkey, partkey, suppkey, orderdate;
    std::vector<double> revenue, supplycost;
    std::vector<Column> fact;
    std::vector<std::pair<void*, size_t>> fact_device;
    Dim date, part, supplier, customer;

    explicit Ssb(int64_t n_) : n(n_) {
        std::mt19937_64 rng(42);
        const double sf = std::max(0.1, n / 6e6);
        part.rows = static_cast<int64_t>(200000 * (1 + std::max(0.0, std::log2(sf))));
        supplier.rows = static_cast<int64_t>(2000 * sf);
        customer.rows = static_cast<int64_t>(30000 * sf);
        date.rows = 2556;
        // date: d_datekey (yyyymmdd), d_year
        date.cols.assign(2, std::vector<int32_t>(static_cast<size_t>(date.rows)));
        for (int64_t i = 0; i < date.rows; ++i) {
            int y = 1992 + static_cast<int>(i / 365), doy = static_cast<int>(i % 365);
            date.cols[0][i] = y * 10000 + (doy / 31 + 1) * 100 + doy % 31 + 1;  // unique, yyyymmdd-like
            date.cols[1][i] = y;
        }
        // part: p_partkey, p_mfgr (5), p_category (25), p_brand1 (1000)
        part.cols.assign(4, std::vector<int32_t>(static_cast<size_t>(part.rows)));
        for (int64_t i = 0; i < part.rows; ++i) {
            int brand = static_cast<int>(rng() % 1000);
            part.cols[0][i] = static_cast<int32_t>(i + 1);
            part.cols[1][i] = brand / 200;
            part.cols[2][i] = brand / 40;
            part.cols[3][i] = brand;
        }
        // supplier / customer: key, region (5), nation (25)
        for (Dim* d : {&supplier, &customer}) {
            d->cols.assign(3, std::vector<int32_t>(static_cast<size_t>(d->rows)));
            for (int64_t i = 0; i < d->rows; ++i) {
                int nation = static_cast<int>(rng() % 25);
                d->cols[0][i] = static_cast<int32_t>(i + 1);
                d->cols[1][i] = nation / 5;
                d->cols[2][i] = nation;
            }
        }
        custkey.resize(n);
        partkey.resize(n);
        suppkey.resize(n);
        orderdate.resize(n);
        revenue.resize(n);
        supplycost.resize(n);
        for (int64_t r = 0; r < n; ++r) {
            custkey[r] = static_cast<int32_t>(rng() % customer.rows + 1);
            partkey[r] = static_cast<int32_t>(rng() % part.rows + 1);
            suppkey[r] = static_cast<int32_t>(rng() % supplier.rows + 1);
            orderdate[r] = date.cols[0][rng() % date.rows];
            revenue[r] = static_cast<double>(rng() % 10000000) / 100;
            supplycost[r] = static_cast<double>(rng() % 100000) / 100;
        }
        fact = {{ColType::Int32, custkey.data()}, {ColType::Int32, partkey.data()}, {ColType::Int32, suppkey.data()},
                {ColType::Int32, orderdate.data()}, {ColType::Float64, revenue.data()},
                {ColType::Float64, supplycost.data()}};
        for (Dim* d : {&date, &part, &supplier, &customer})
            for (auto& c : d->cols) d->columns.push_back({ColType::Int32, c.data()});
    }

    // Device-resident copies (Column::device) of every column; false without a GPU.
    bool make_resident() {
        auto up = [](Column& c, size_t bytes, std::vector<std::pair<void*, size_t>>& keep) {
            void* p = nullptr;
            if (!approx::gpu::resident_upload(c.data, bytes, p).ok()) return false;
            c.device = p;
            keep.push_back({p, bytes});
            return true;
        };
        for (Column& c : fact)
            if (!up(c, static_cast<size_t>(n) * (c.type == ColType::Float64 ? 8 : 4), fact_device)) return false;
        for (Dim* d : {&date, &part, &supplier, &customer})
            for (Column& c : d->columns)
                if (!up(c, static_cast<size_t>(d->rows) * 4, d->device)) return false;
        return true;
    }

    Inputs inputs(std::initializer_list<Dim*> dims) {
        Inputs in;
        in.fact = {fact.data(), static_cast<int32_t>(fact.size()), n};
        int d = 0;
        for (Dim* x : dims) in.dims[d++] = {x->columns.data(), static_cast<int32_t>(x->columns.size()), x->rows};
        return in;
    }
};

// Q2.1: sum(lo_revenue) by d_year, p_brand1 where p_category = 'MFGR#12' and s_region = 'AMERICA'.
Plan q21() {
    Plan p;
    Builder b{p};
    p.n_dims = 3;
    p.dims[0] = DimensionPlan{0, 3, {}, 1, {Kind::Int}, {b.add({I(Op::Col, Kind::Int, 1)})}};  // date -> d_year
    p.dims[1].key_column = 0;
    p.dims[1].fact_column = 1;
    p.dims[1].filter = b.add({I(Op::Col, Kind::Int, 2), I(Op::ConstInt, Kind::Int, 0, 1), I(Op::Cmp)});  // category
    p.dims[1].n_outputs = 1;
    p.dims[1].outputs[0] = b.add({I(Op::Col, Kind::Int, 3)});  // p_brand1
    p.dims[2].key_column = 0;
    p.dims[2].fact_column = 2;
    p.dims[2].filter = b.add({I(Op::Col, Kind::Int, 1), I(Op::ConstInt, Kind::Int, 0, 1), I(Op::Cmp)});  // s_region
    p.n_group_parts = 2;
    p.group_parts[0] = b.add({I(Op::DimOut, Kind::Int, 0, 0)});
    p.group_parts[1] = b.add({I(Op::DimOut, Kind::Int, 1, 0)});
    p.n_measures = 1;
    p.measures[0] = b.add({I(Op::Col, Kind::Float, 4)});
    return p;
}

// Q4.1: sum(lo_revenue - lo_supplycost) by d_year, c_nation where c_region = s_region = 'AMERICA'
// and p_mfgr in ('MFGR#1', 'MFGR#2').
Plan q41() {
    Plan p;
    Builder b{p};
    p.pool = {0, 1};
    p.n_dims = 4;
    p.dims[0] = DimensionPlan{0, 3, {}, 1, {Kind::Int}, {b.add({I(Op::Col, Kind::Int, 1)})}};
    p.dims[1].key_column = 0;  // customer
    p.dims[1].fact_column = 0;
    p.dims[1].filter = b.add({I(Op::Col, Kind::Int, 1), I(Op::ConstInt, Kind::Int, 0, 1), I(Op::Cmp)});
    p.dims[1].n_outputs = 1;
    p.dims[1].outputs[0] = b.add({I(Op::Col, Kind::Int, 2)});
    p.dims[2].key_column = 0;  // supplier
    p.dims[2].fact_column = 2;
    p.dims[2].filter = b.add({I(Op::Col, Kind::Int, 1), I(Op::ConstInt, Kind::Int, 0, 1), I(Op::Cmp)});
    p.dims[3].key_column = 0;  // part
    p.dims[3].fact_column = 1;
    p.dims[3].filter = b.add({I(Op::Col, Kind::Int, 1), I(Op::In, Kind::Int, 0, 2)});
    p.n_group_parts = 2;
    p.group_parts[0] = b.add({I(Op::DimOut, Kind::Int, 0, 0)});
    p.group_parts[1] = b.add({I(Op::DimOut, Kind::Int, 1, 0)});
    p.n_measures = 1;
    p.measures[0] = b.add({I(Op::Col, Kind::Float, 4), I(Op::Col, Kind::Float, 5), I(Op::Sub, Kind::Float)});
    return p;
}

double time_runs(const Plan& p, const Inputs& in, const ExecContext& ctx, int reps, int64_t& groups) {
    std::vector<double> t;
    Result res;
    for (int i = 0; i < reps; ++i) {
        double t0 = now_ms();
        Status st = run(p, in, ctx, res);
        if (!st.ok()) {
            std::fprintf(stderr, "starjoin failed: %s\n", st.message);
            std::exit(1);
        }
        t.push_back(now_ms() - t0);
    }
    groups = res.groups;
    return median(t);
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    char why[256];
    const bool gpu = approx::gpu::available(why, sizeof why);
    std::printf("starjoin_bench%s: SSB-like star, plans shaped like Q2.1 (3 dimensions) and Q4.1 (4); GPU: %s; "
                "CPU: %d threads\n",
                quick ? " --quick" : "", gpu ? "yes" : why, threads);
    std::printf("| %-5s | %-9s | %6s | %14s | %13s | %11s | %13s | %s\n", "query", "fact rows", "groups",
                "GPU resident ms", "GPU upload ms", "CPU 1 thr ms", "CPU all thr ms", "CPU all / GPU resident");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    std::vector<int64_t> sizes = quick ? std::vector<int64_t>{100000, 1000000}
                                       : std::vector<int64_t>{1000000, 3000000, 10000000};
    for (int64_t n : sizes) {
        Ssb s(n);
        for (int q = 0; q < 2; ++q) {
            Plan p = q == 0 ? q21() : q41();
            Inputs in = q == 0 ? s.inputs({&s.date, &s.part, &s.supplier})
                               : s.inputs({&s.date, &s.customer, &s.supplier, &s.part});
            ExecContext ctx;
            int64_t groups = 0;
            double g_res = -1, g_up = -1;
            if (gpu) {
                ctx.mode = DeviceMode::Gpu;
                time_runs(p, in, ctx, 1, groups);  // warm-up
                g_up = time_runs(p, in, ctx, 5, groups);
                if (s.fact_device.empty() && !s.make_resident()) std::fprintf(stderr, "resident upload failed\n");
                g_res = time_runs(p, in, ctx, 5, groups);  // the same columns, now with device copies
            }
            ctx.mode = DeviceMode::Cpu;
            ctx.cpu_threads = 1;
            double c1 = time_runs(p, in, ctx, n > 2000000 ? 1 : 3, groups);
            ctx.cpu_threads = threads;
            double ca = time_runs(p, in, ctx, 3, groups);
            char gr[32] = "-", gu[32] = "-", ratio[32] = "-";
            if (gpu) {
                std::snprintf(gr, sizeof gr, "%.2f", g_res);
                std::snprintf(gu, sizeof gu, "%.2f", g_up);
                std::snprintf(ratio, sizeof ratio, "%.0fx", ca / g_res);
            }
            std::printf("| Q%s | %-9lld | %6lld | %14s | %13s | %11.1f | %13.1f | %s\n", q == 0 ? "2.1" : "4.1",
                        static_cast<long long>(n), static_cast<long long>(groups), gr, gu, c1, ca, ratio);
            std::fflush(stdout);
            // the next plan starts from host columns again
            for (Column& c : s.fact) c.device = nullptr;
            for (Dim* d : {&s.date, &s.part, &s.supplier, &s.customer})
                for (Column& c : d->columns) c.device = nullptr;
            for (auto& p2 : s.fact_device) approx::gpu::resident_free(p2.first, p2.second);
            s.fact_device.clear();
            for (Dim* d : {&s.date, &s.part, &s.supplier, &s.customer}) {
                for (auto& p2 : d->device) approx::gpu::resident_free(p2.first, p2.second);
                d->device.clear();
            }
        }
    }
    return 0;
}
