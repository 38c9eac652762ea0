// Hashed-join benchmark: build and find throughput of the cuckoo table for
// 10^6 .. 10^8 unique int64 keys (int64 values) on the GPU and the CPU (one
// thread, all threads), next to published peers, and the join engine on
// 10^7 x 10^6 rows. One table.
//
//   build/hashjoin_bench            full run (the device: H100 + 16 cores, ~90 s)
//   build/hashjoin_bench --quick    small sizes (a laptop or a 2-core CI box)
//
// GPU times are device times (CUDA events) of the engine's kernels with the
// data already on the GPU, as cuco and BGHT report theirs; the host<->device
// copies of the same call are shown separately (+xfer). CPU times are wall
// clock. A CPU cell marked '*' is extrapolated linearly from the largest size
// measured (runs predicted to take longer than the CPU budget are skipped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu.hpp"
#include "core/hashjoin.hpp"
#include "core/hashjoin_internal.hpp"

namespace hj = approx::hashjoin;
using approx::DeviceMode;
using approx::ExecContext;
using approx::RunStats;
using approx::Status;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double extra(const RunStats& s, const char* key) {
    for (int i = 0; i < s.n_extra; ++i)
        if (std::strcmp(s.extra[i].key, key) == 0) return s.extra[i].value;
    return 0;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void die(const Status& st, const char* what) {
    std::fprintf(stderr, "%s failed: %s\n", what, st.message);
    std::exit(1);
}

// Unique keys: splitmix64 is a bijection of the counter.
void make_keys(size_t n, std::vector<int64_t>& keys, std::vector<int64_t>& values, std::vector<int64_t>& queries) {
    keys.resize(n);
    values.resize(n);
    queries.resize(n);
    // Queries: the same keys in another order (i * p mod n is a permutation when p does not divide n).
    uint64_t p = 1000003;
    while (n % p == 0) p += 2;
    for (size_t i = 0; i < n; ++i) {
        keys[i] = static_cast<int64_t>(hj::splitmix64(0xabcdef0000000000ull + i));
        values[i] = static_cast<int64_t>(i);
        queries[i] = static_cast<int64_t>(hj::splitmix64(0xabcdef0000000000ull + (i * p) % n));
    }
}

struct GpuResult {
    double build_ms = 0, find_ms = 0;      // kernels
    double build_xfer = 0, find_xfer = 0;  // copies
    double ratio = 0;
    int64_t restarts = 0;
    int builds = 0;
    bool ok = false;
};

struct CpuResult {
    double build_ms = 0, find_ms = 0;
    bool measured = false;
};

bool all_found(const std::vector<uint8_t>& f, const std::vector<int64_t>& v, size_t n, const std::vector<int64_t>& q,
               const std::vector<int64_t>& keys) {
    // Every query is a key; its value is the key's index (checked on a sample).
    for (size_t i = 0; i < n; ++i)
        if (!f[i]) return false;
    for (size_t i = 0; i < n; i += 9973)
        if (keys[static_cast<size_t>(v[i])] != q[i]) return false;
    return true;
}

GpuResult run_gpu(const std::vector<int64_t>& keys, const std::vector<int64_t>& values,
                  const std::vector<int64_t>& queries, int reps) {
    GpuResult r;
    size_t n = keys.size();
    std::vector<int64_t> out(n);
    std::vector<uint8_t> found(n);
    std::vector<double> b, f, bx, fx;
    for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms up
        RunStats s;
        ExecContext ctx;
        ctx.mode = DeviceMode::Gpu;
        ctx.stats = &s;
        hj::Table t;
        Status st = t.build(keys.data(), values.data(), n, ctx);
        if (!st.ok()) die(st, "GPU build");
        double bk = extra(s, "ms_kernels"), bt = s.ms_transfer;
        RunStats s2;
        ctx.stats = &s2;
        st = t.find(queries.data(), n, out.data(), found.data(), ctx);
        if (!st.ok()) die(st, "GPU find");
        if (rep == 0 && !all_found(found, out, n, queries, keys)) {
            std::fprintf(stderr, "GPU find returned wrong results at n = %zu\n", n);
            std::exit(1);
        }
        if (rep == 0) continue;
        b.push_back(bk);
        bx.push_back(bt);
        f.push_back(extra(s2, "ms_kernels"));
        fx.push_back(s2.ms_transfer);
        r.ratio = t.info().memory_ratio;
        r.restarts = t.info().bucket_restarts;
        r.builds = t.info().table_builds;
    }
    r.build_ms = median(b);
    r.find_ms = median(f);
    r.build_xfer = median(bx);
    r.find_xfer = median(fx);
    r.ok = true;
    return r;
}

CpuResult run_cpu(const std::vector<int64_t>& keys, const std::vector<int64_t>& values,
                  const std::vector<int64_t>& queries, int threads, int reps) {
    CpuResult r;
    size_t n = keys.size();
    std::vector<int64_t> out(n);
    std::vector<uint8_t> found(n);
    std::vector<double> b, f;
    for (int rep = 0; rep < reps; ++rep) {
        ExecContext ctx;
        ctx.mode = DeviceMode::Cpu;
        ctx.cpu_threads = threads;
        hj::Table t;
        double t0 = now_ms();
        Status st = t.build(keys.data(), values.data(), n, ctx);
        if (!st.ok()) die(st, "CPU build");
        double t1 = now_ms();
        st = t.find(queries.data(), n, out.data(), found.data(), ctx);
        if (!st.ok()) die(st, "CPU find");
        double t2 = now_ms();
        if (rep == 0 && !all_found(found, out, n, queries, keys)) {
            std::fprintf(stderr, "CPU find returned wrong results at n = %zu\n", n);
            std::exit(1);
        }
        b.push_back(t1 - t0);
        f.push_back(t2 - t1);
    }
    r.build_ms = median(b);
    r.find_ms = median(f);
    r.measured = true;
    return r;
}

// A CPU column: measured while predicted to fit the budget, else extrapolated.
struct CpuColumn {
    int threads;
    double budget_ms;
    double per_key_build = 0, per_key_find = 0;  // from the largest measured size
    CpuResult at(const std::vector<int64_t>& keys, const std::vector<int64_t>& values,
                 const std::vector<int64_t>& queries, int reps) {
        double n = static_cast<double>(keys.size());
        double predicted = (per_key_build + per_key_find) * n * reps;
        CpuResult r;
        if (per_key_build == 0 || predicted <= budget_ms) {
            r = run_cpu(keys, values, queries, threads, reps);
            per_key_build = r.build_ms / n;
            per_key_find = r.find_ms / n;
        } else {
            r.build_ms = per_key_build * n;
            r.find_ms = per_key_find * n;
        }
        return r;
    }
};

std::string ms_cell(double ms, bool measured) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f%s", ms, measured ? "" : "*");
    return b;
}

std::string gs_cell(double n, double ms) {
    if (ms <= 0) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", n / ms / 1e6);
    return b;
}

std::string sizename(double n) {
    char b[32];
    if (n >= 1e6 && std::fmod(n, 1e6) == 0)
        std::snprintf(b, sizeof b, "%gM", n / 1e6);
    else
        std::snprintf(b, sizeof b, "%g", n);
    return b;
}

void row(const char* op, const std::string& n, const std::string& gms, const std::string& ggs, const std::string& xfer,
         const std::string& c1, const std::string& cn, const std::string& speed, const std::string& note) {
    std::printf("| %-12s | %-9s | %9s | %7s | %9s | %11s | %11s | %8s | %s\n", op, n.c_str(), gms.c_str(), ggs.c_str(),
                xfer.c_str(), c1.c_str(), cn.c_str(), speed.c_str(), note.c_str());
}

// The join: a sink that only touches the rows (the engine's cost, not a consumer's).
struct Discard {
    int64_t rows = 0;
    uint64_t mix = 0;
};
bool discard_sink(void* user, const int64_t* k, const int64_t* b, const int64_t* p, size_t count) {
    Discard* d = static_cast<Discard*>(user);
    for (size_t i = 0; i < count; i += 4096) d->mix += static_cast<uint64_t>(k[i] ^ b[i] ^ p[i]);
    d->rows += static_cast<int64_t>(count);
    return true;
}

struct JoinTimes {
    double count_ms = 0, join_ms = 0, kernels = 0, xfer = 0;
    int64_t matches = 0;
};

JoinTimes run_join(const hj::JoinSide& b, const hj::JoinSide& p, DeviceMode mode, int threads, int reps) {
    JoinTimes r;
    std::vector<double> c, j, k, x;
    for (int rep = 0; rep <= reps; ++rep) {
        ExecContext ctx;
        ctx.mode = mode;
        ctx.cpu_threads = threads;
        RunStats s;
        ctx.stats = &s;
        hj::JoinInfo info;
        double t0 = now_ms();
        Status st = hj::join_count(b, p, ctx, info);
        if (!st.ok()) die(st, "join_count");
        double t1 = now_ms();
        Discard acc;
        RunStats s2;
        ctx.stats = &s2;
        hj::JoinInfo info2;
        st = hj::join(b, p, discard_sink, &acc, ctx, info2);
        if (!st.ok()) die(st, "join");
        double t2 = now_ms();
        if (info2.matches != info.matches || acc.rows != info.matches) {
            std::fprintf(stderr, "join and join_count disagree\n");
            std::exit(1);
        }
        r.matches = info.matches;
        if (rep == 0 && mode == DeviceMode::Gpu) continue;  // warm-up
        c.push_back(t1 - t0);
        j.push_back(t2 - t1);
        k.push_back(extra(s2, "ms_kernels"));
        x.push_back(s2.ms_transfer);
        if (mode == DeviceMode::Cpu && rep + 1 >= reps) break;
    }
    r.count_ms = median(c);
    r.join_ms = median(j);
    r.kernels = median(k);
    r.xfer = median(x);
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    char why[256] = {0};
    bool gpu = approx::gpu::available(why, sizeof why);
    int hw = static_cast<int>(std::thread::hardware_concurrency());
    if (hw < 1) hw = 1;
    std::vector<double> sizes = quick ? std::vector<double>{1e5, 1e6} : std::vector<double>{1e6, 1e7, 5e7, 1e8};
    approx::gpu::DeviceInfo dev[1];
    if (gpu) approx::gpu::devices(dev, 1);
    std::printf("hashjoin_bench%s: cuckoo table of unique int64 keys -> int64 values; GPU: %s; CPU: %d threads\n",
                quick ? " --quick" : "", gpu ? dev[0].name : why, hw);
    std::printf(
        "GPU ms = kernels with data on the GPU (median of %d after a warm-up); +xfer = that call's host<->device "
        "copies; CPU ms = wall clock; * = extrapolated; G/s = 10^9 keys per second\n\n",
        quick ? 3 : 5);
    std::string all_header = "CPU " + std::to_string(hw) + "t ms";
    std::printf("| %-12s | %-9s | %9s | %7s | %9s | %11s | %11s | %8s | %s\n", "operation", "n", "GPU ms", "GPU G/s",
                "+xfer ms", "CPU 1t ms", all_header.c_str(), "GPU/CPU", "notes");
    std::printf(
        "|--------------|-----------|-----------|---------|-----------|-------------|-------------|----------|------\n");

    CpuColumn one{1, 20000.0}, all{hw, 20000.0};
    std::vector<int64_t> keys, values, queries;
    for (double nd : sizes) {
        size_t n = static_cast<size_t>(nd);
        make_keys(n, keys, values, queries);
        int reps = (quick || n <= 10000000) ? 5 : 3;
        GpuResult g;
        if (gpu) g = run_gpu(keys, values, queries, reps);
        CpuResult c1 = one.at(keys, values, queries, n <= 10000000 ? 3 : 1);
        CpuResult cn = all.at(keys, values, queries, n <= 10000000 ? 3 : 1);
        hj::TableInfo shape;
        hj::describe_table(shape, n, hj::bucket_count(n, hj::BuildOptions()));
        char note[160];
        std::snprintf(note, sizeof note, "load %.2f, memory %.2fx input", shape.load_factor, shape.memory_ratio);
        if (gpu && (g.restarts > 0 || g.builds > 1)) {
            size_t len = std::strlen(note);
            std::snprintf(note + len, sizeof note - len, ", %lld bucket restarts, %d table builds",
                          static_cast<long long>(g.restarts), g.builds);
        }
        std::string s = sizename(nd);
        auto speed = [&](double gms, double cms) {
            if (!gpu || gms <= 0) return std::string("-");
            char b[32];
            std::snprintf(b, sizeof b, "%.0fx", cms / gms);
            return std::string(b);
        };
        row("build", s, gpu ? ms_cell(g.build_ms, true) : "-", gpu ? gs_cell(nd, g.build_ms) : "-",
            gpu ? ms_cell(g.build_xfer, true) : "-", ms_cell(c1.build_ms, c1.measured),
            ms_cell(cn.build_ms, cn.measured), speed(g.build_ms, cn.build_ms), note);
        row("find", s, gpu ? ms_cell(g.find_ms, true) : "-", gpu ? gs_cell(nd, g.find_ms) : "-",
            gpu ? ms_cell(g.find_xfer, true) : "-", ms_cell(c1.find_ms, c1.measured), ms_cell(cn.find_ms, cn.measured),
            speed(g.find_ms, cn.find_ms), "all keys present, random order");
        std::fflush(stdout);
    }
    // Published peers (not run here).
    row("build (ref)", "5M", "35.7", "0.14", "", "", "", "", "paper: Alcantara et al. 2009, GTX 280, 1.42x memory");
    row("find (ref)", "5M", "15.3", "0.33", "", "", "", "", "paper: retrieve all 5M");
    row("insert (ref)", "5M", "0.74", "6.76", "", "", "", "", "cuco static_map, our H100, load 0.5");
    row("find (ref)", "5M", "0.27", "18.5", "", "", "", "", "cuco static_map, our H100, load 0.5");
    row("insert (ref)", "50M", "6.3", "7.9", "", "", "", "",
        "cuco static_map, our H100, load 0.5; target here >= 10 G/s");
    row("find (ref)", "50M", "2.7", "18.7", "", "", "", "",
        "cuco static_map, our H100, load 0.5; target here >= 20 G/s");
    row("insert (ref)", "-", "", "5.1", "", "", "", "", "BGHT bucketed cuckoo, A100");
    row("find (ref)", "-", "", "11.3", "", "", "", "", "BGHT bucketed cuckoo, A100");

    // The join engine: build side with duplicates, probe side half hits.
    size_t nb = quick ? 1000000 : 10000000, np = quick ? 100000 : 1000000;
    std::vector<int64_t> bk(nb), bv(nb), pk(np), pv(np);
    for (size_t i = 0; i < nb; ++i) {
        bk[i] = static_cast<int64_t>(hj::splitmix64(i * 3 + 1) % nb);
        bv[i] = static_cast<int64_t>(i);
    }
    for (size_t i = 0; i < np; ++i) {
        pk[i] = static_cast<int64_t>(hj::splitmix64(i * 7 + 2) % (2 * nb));
        pv[i] = -static_cast<int64_t>(i);
    }
    hj::JoinSide b{bk.data(), bv.data(), nb}, p{pk.data(), pv.data(), np};
    JoinTimes gj;
    if (gpu) gj = run_join(b, p, DeviceMode::Gpu, 1, 5);
    JoinTimes c1 = run_join(b, p, DeviceMode::Cpu, 1, quick ? 3 : 1);
    JoinTimes cn = run_join(b, p, DeviceMode::Cpu, hw, 3);
    std::string js = sizename(static_cast<double>(nb)) + "x" + sizename(static_cast<double>(np));
    char note[160];
    std::snprintf(note, sizeof note, "%lld matches; GPU/CPU columns wall clock incl. copies",
                  static_cast<long long>(cn.matches));
    auto sp = [&](double g, double c) {
        if (!gpu || g <= 0) return std::string("-");
        char bb[32];
        std::snprintf(bb, sizeof bb, "%.0fx", c / g);
        return std::string(bb);
    };
    row("join count", js, gpu ? ms_cell(gj.count_ms, true) : "-", "", "", ms_cell(c1.count_ms, true),
        ms_cell(cn.count_ms, true), sp(gj.count_ms, cn.count_ms), note);
    char note2[160];
    std::snprintf(note2, sizeof note2, "all pairs to a sink in 2^20-row chunks; GPU kernels %.2f ms, copies %.2f ms",
                  gj.kernels, gj.xfer);
    row("join emit", js, gpu ? ms_cell(gj.join_ms, true) : "-", "", "", ms_cell(c1.join_ms, true),
        ms_cell(cn.join_ms, true), sp(gj.join_ms, cn.join_ms), note2);
    return 0;
}
