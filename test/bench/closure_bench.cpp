// Transitive-closure benchmark: the paper's table (1000..5000 vertices:
// sequential Warshall on the CPU, WARSHALL-C and WARSHALL-adapt on the GPU's
// STAR machine) next to the blocked bit-matrix closure (GPU device time, CPU
// one thread and all threads), then up to 32768 vertices. Random digraphs with
// mean out-degree 2 (fixed seeds). Every method's pair count is checked against
// the blocked closure's.
//
//   build/closure_bench            the full table (about 90 s on the H100 host)
//   build/closure_bench --quick    small sizes (CPU-only machines)
//
// CPU columns (and WARSHALL-C) are measured while one run is predicted to take
// at most 30 s and fits the remaining budget; beyond that they are extrapolated
// and marked '*': n^3 from the largest measured size for the CPU, and the
// measured time per STEP times the STEP count of the graph (counted on the
// host) for WARSHALL-C.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/bitslice.hpp"
#include "core/closure.hpp"
#include "core/gpu.hpp"
#include "../ref/warshall_sequential.hpp"

using approx::Device;
using approx::DeviceMode;
using approx::ExecContext;
using approx::RunStats;
using approx::Status;
namespace bs = approx::bitslice;
namespace cl = approx::closure;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Graph {
    int64_t n;
    std::vector<std::pair<int32_t, int32_t>> edges;
};

// splitmix64, so that test/bench/closure_torch.py draws the same graphs
struct SplitMix {
    uint64_t x;
    uint64_t next() {
        uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
};

// 2n edges (a, b), a and b uniform over 0..n-1 (next() % n, in that order)
Graph random_graph(int64_t n, uint64_t seed) {
    SplitMix rng{seed};
    Graph g{n, {}};
    for (int64_t e = 0; e < 2 * n; ++e) {
        int32_t a = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n));
        int32_t b = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n));
        g.edges.push_back({a, b});
    }
    return g;
}

std::vector<uint64_t> row_matrix(const Graph& g, int64_t ld) {
    std::vector<uint64_t> m(static_cast<size_t>(g.n * ld), 0);
    for (auto [a, b] : g.edges) m[a * ld + b / 64] |= 1ULL << (b % 64);
    return m;
}

int64_t popcount(const std::vector<uint64_t>& m) {
    int64_t c = 0;
    for (uint64_t w : m) c += __builtin_popcountll(w);
    return c;
}

// STEP count of WARSHALL-C on g: in round k, one STEP per 1 of row k (rows as
// they stand before round k, i.e. paths through vertices < k).
int64_t warshall_c_steps(const Graph& g, const ExecContext& ctx) {
    int64_t ld = bs::words_for(g.n);
    std::vector<uint64_t> m = row_matrix(g, ld);
    int64_t steps = 0;
    for (int64_t k = 0; k < g.n; ++k) {
        const uint64_t* rk = m.data() + k * ld;
        for (int64_t w = 0; w < ld; ++w) steps += __builtin_popcountll(rk[w]);
        const int64_t chunk = 512;
        size_t tasks = static_cast<size_t>((g.n + chunk - 1) / chunk);
        (void)approx::parallel_for(ctx, tasks, [&](size_t t, size_t) {
            int64_t i0 = static_cast<int64_t>(t) * chunk, i1 = std::min(g.n, i0 + chunk);
            for (int64_t i = i0; i < i1; ++i) {
                uint64_t* ri = m.data() + i * ld;
                if ((ri[k >> 6] >> (k & 63)) & 1)
                    for (int64_t w = 0; w < ld; ++w) ri[w] |= rk[w];
            }
            return Status::Ok();
        });
    }
    return steps;
}

ExecContext ctx_for(DeviceMode mode, int threads, RunStats* stats) {
    ExecContext c;
    c.mode = mode;
    c.gpu_min_rows = 0;
    c.cpu_threads = threads;
    c.stats = stats;
    return c;
}

struct Cell {
    double ms = -1;  // < 0: not run
    bool extrapolated = false;
    bool ok = true;  // pair count agreed
};

std::string fmt(const Cell& c) {
    if (c.ms < 0) return "-";
    char b[48];
    if (c.ms >= 100000)
        std::snprintf(b, sizeof b, "%.0f s", c.ms / 1000);
    else if (c.ms >= 1000)
        std::snprintf(b, sizeof b, "%.2f s", c.ms / 1000);
    else if (c.ms >= 10)
        std::snprintf(b, sizeof b, "%.1f ms", c.ms);
    else
        std::snprintf(b, sizeof b, "%.3f ms", c.ms);
    std::string s = b;
    if (c.extrapolated) s += "*";
    if (!c.ok) s += " WRONG";
    return s;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A CPU column measured while predicted <= 30 s and within its budget, else
// extrapolated by n^3 from the largest measured size.
struct CpuColumn {
    double budget_s;
    int64_t last_n = 0;
    double last_ms = 0;
    bool stopped = false;
    template <class Run>
    Cell run(int64_t n, Run&& fn) {
        Cell c;
        double predicted = last_n ? last_ms * std::pow(double(n) / last_n, 3) / 1000 : 0;
        if (!stopped && predicted <= 30 && predicted <= budget_s) {
            double t0 = now_s();
            c.ok = fn();
            c.ms = (now_s() - t0) * 1000;
            budget_s -= c.ms / 1000;
            last_n = n;
            last_ms = c.ms;
        } else if (last_n) {
            stopped = true;
            c.ms = predicted * 1000;
            c.extrapolated = true;
        }
        return c;
    }
};

}  // namespace

int main(int argc, char** argv) {
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    char why[256] = "";
    const bool gpu = approx::gpu::available(why, sizeof why);
    const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<int64_t> paper = quick ? std::vector<int64_t>{500, 1000}
                                       : std::vector<int64_t>{1000, 2000, 3000, 4000, 5000};
    std::vector<int64_t> large = quick ? std::vector<int64_t>{2048, 4096} : std::vector<int64_t>{8192, 16384, 32768};
    std::vector<int64_t> sizes = paper;
    sizes.insert(sizes.end(), large.begin(), large.end());

    std::printf("closure benchmark: random digraphs, mean out-degree 2, seed 42 + n; %s; CPU %d threads\n",
                gpu ? "GPU present" : why, all);
    if (gpu) {
        approx::gpu::DeviceInfo info[1];
        if (approx::gpu::devices(info, 1) > 0) std::printf("GPU: %s, %d SMs\n", info[0].name, info[0].multiprocessors);
    }
    std::fflush(stdout);

    CpuColumn seq{quick ? 10.0 : 20.0}, cpu1{quick ? 20.0 : 25.0}, cpuall{quick ? 20.0 : 30.0};
    double wc_ms_per_step = -1;  // WARSHALL-C on the GPU, measured once
    double wc_budget_s = 15;

    // warm the GPU up (context, modules)
    if (gpu) {
        Graph g = random_graph(600, 1);
        int64_t ld = bs::words_for(g.n);
        std::vector<uint64_t> m = row_matrix(g, ld);
        RunStats st;
        (void)cl::close_matrix(m.data(), g.n, ld, ctx_for(DeviceMode::Gpu, all, &st));
    }

    std::printf("%7s %11s | %15s %15s %15s | %12s %12s %12s | %10s %8s\n", "n", "pairs", "seq Warshall", "WARSHALL-C",
                "WARSHALL-adapt", "blocked GPU", "blocked CPU", "blocked CPU", "GPU vs CPU", "target");
    std::printf("%7s %11s | %15s %15s %15s | %12s %12s %12s | %10s %8s\n", "", "", "CPU 1 thread", "GPU STAR",
                "GPU STAR", "device time", "1 thread", ("all (" + std::to_string(all) + ")").c_str(), "all threads",
                "");
    for (int64_t n : sizes) {
        Graph g = random_graph(n, 42 + n);
        const int64_t ld = bs::words_for(n);
        const std::vector<uint64_t> adj = row_matrix(g, ld);
        const bool paper_size = std::find(paper.begin(), paper.end(), n) != paper.end();

        // reference answer: the blocked closure on all CPU threads (timed as that column)
        int64_t pairs = -1;
        std::vector<uint64_t> ref;
        Cell c_all = cpuall.run(n, [&] {
            ref = adj;
            Status s = cl::close_matrix(ref.data(), n, ld, ctx_for(DeviceMode::Cpu, all, nullptr));
            pairs = s.ok() ? popcount(ref) : -2;
            return s.ok();
        });
        Cell c_gpu;
        if (gpu) {
            std::vector<double> times;
            std::vector<uint64_t> m;
            bool ok = true;
            for (int rep = 0; rep < (n >= 16384 ? 3 : 5); ++rep) {
                m = adj;
                RunStats st;
                Status s = cl::close_matrix(m.data(), n, ld, ctx_for(DeviceMode::Gpu, all, &st));
                if (!s.ok()) {
                    std::printf("GPU error: %s\n", s.message);
                    ok = false;
                    break;
                }
                times.push_back(st.ms_compute);
            }
            if (ok) {
                int64_t p = popcount(m);
                if (pairs < 0) pairs = p;  // the CPU column was extrapolated: the GPU is the reference
                c_gpu.ms = median(times);
                c_gpu.ok = p == pairs;
            }
        }
        Cell c_one = cpu1.run(n, [&] {
            std::vector<uint64_t> m = adj;
            Status s = cl::close_matrix(m.data(), n, ld, ctx_for(DeviceMode::Cpu, 1, nullptr));
            return s.ok() && (pairs < 0 || popcount(m) == pairs);
        });
        Cell c_seq, c_wc, c_ad;
        if (paper_size) {
            c_seq = seq.run(n, [&] {
                std::vector<uint8_t> a(static_cast<size_t>(n * n), 0);
                for (auto [u, v] : g.edges) a[u * n + v] = 1;
                Status s = cl::warshall_sequential(a.data(), n, ctx_for(DeviceMode::Cpu, 1, nullptr));
                int64_t p = 0;
                for (uint8_t x : a) p += x != 0;
                return s.ok() && (pairs < 0 || p == pairs);
            });
            if (gpu) {
                ExecContext ctx = ctx_for(DeviceMode::Gpu, all, nullptr);
                std::unique_ptr<bs::Machine> m;
                if (bs::make_machine(Device::Gpu, ctx, m).ok()) {
                    // the table of A: column j holds the predecessors of j
                    std::vector<uint64_t> host(static_cast<size_t>(ld * n), 0);
                    for (auto [u, v] : g.edges) host[v * ld + u / 64] |= 1ULL << (u % 64);
                    auto run_star = [&](Status (*fn)(bs::Machine&, const bs::Table&, const ExecContext&), Cell& cell) {
                        bs::Table t;
                        if (!m->new_table(n, n, t).ok() || !m->load_table(t, host.data()).ok() || !m->sync().ok())
                            return;
                        double t0 = now_s();
                        Status s = fn(*m, t, ctx);
                        cell.ms = (now_s() - t0) * 1000;
                        std::vector<uint64_t> back(host.size());
                        cell.ok = s.ok() && m->store_table(t, back.data()).ok() && popcount(back) == pairs;
                    };
                    run_star(bs::warshall_adapt, c_ad);
                    int64_t steps = warshall_c_steps(g, ctx_for(DeviceMode::Cpu, all, nullptr));
                    if (wc_ms_per_step < 0 || wc_ms_per_step * steps / 1000 <= std::min(30.0, wc_budget_s)) {
                        run_star(bs::warshall_cols, c_wc);
                        wc_budget_s -= c_wc.ms / 1000;
                        if (steps > 0) wc_ms_per_step = c_wc.ms / steps;
                    } else {
                        c_wc.ms = wc_ms_per_step * steps;
                        c_wc.extrapolated = true;
                    }
                }
            }
        }
        char speed[32] = "-";
        if (c_gpu.ms > 0 && c_all.ms > 0)
            std::snprintf(speed, sizeof speed, "%.0fx%s", c_all.ms / c_gpu.ms, c_all.extrapolated ? "*" : "");
        const char* target = n == 5000 ? "<= 1 ms" : n == 16384 ? "<= 20 ms" : n == 32768 ? "<= 100 ms" : "";
        std::printf("%7lld %11lld | %15s %15s %15s | %12s %12s %12s | %10s %8s\n", static_cast<long long>(n),
                    static_cast<long long>(pairs), fmt(c_seq).c_str(), fmt(c_wc).c_str(), fmt(c_ad).c_str(),
                    fmt(c_gpu).c_str(), fmt(c_one).c_str(), fmt(c_all).c_str(), speed, target);
        std::fflush(stdout);
    }
    std::printf(
        "paper (NVIDIA K40, 5000 vertices): sequential Warshall 884.6 s, WARSHALL-C 64.5 s, WARSHALL-adapt 0.372 s\n");
    std::printf(
        "PyTorch peer on our H100 (test/bench/closure_torch.py, fp16 repeated squaring): 4.3 ms at 5000, 88 ms at 16384\n");
    return 0;
}
