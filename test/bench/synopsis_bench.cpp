// Batched box estimates of a KDE synopsis: q boxes x m = 10^4 sample rows,
// d = 4 (two smoothed columns, two discrete), COUNT, on the GPU engine, the
// CPU engine with 1 thread and with every core. Engine time from host arrays
// (what the API receives), GPU: warm-up then the median of several runs, the
// host <-> device share printed separately. CPU columns are measured while a
// run takes at most 30 s and extrapolated linearly in q beyond ('*').
//
//   build/synopsis_bench            the device table (about a minute)
//   build/synopsis_bench --quick    smaller sizes
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/gpu.hpp"
#include "core/synopsis.hpp"

using namespace approx;
using namespace approx::synopsis;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
    double ms = 0;
    double transfer_ms = 0;
    bool extrapolated = false;
    bool ok = true;
};

Timing time_eval(const Synopsis& s, const BoxBatch& b, ExecContext ctx, int reps) {
    std::vector<BoxEstimate> out(static_cast<size_t>(b.q));
    std::vector<double> times, transfers;
    Timing t;
    for (int r = 0; r < reps + 1; ++r) {  // the first run warms up
        RunStats stats;
        ctx.stats = &stats;
        double t0 = now_ms();
        Status st = evaluate(s, b, ctx, out.data());
        double ms = now_ms() - t0;
        if (!st.ok()) {
            std::fprintf(stderr, "evaluate failed: %s\n", st.message);
            t.ok = false;
            return t;
        }
        if (r > 0) {
            times.push_back(ms);
            transfers.push_back(stats.ms_transfer);
        }
    }
    std::sort(times.begin(), times.end());
    std::sort(transfers.begin(), transfers.end());
    t.ms = times[times.size() / 2];
    t.transfer_ms = transfers[transfers.size() / 2];
    return t;
}

void fmt(char* buf, size_t n, const Timing& t) {
    if (!t.ok)
        std::snprintf(buf, n, "-");
    else
        std::snprintf(buf, n, "%.3f%s", t.ms, t.extrapolated ? "*" : "");
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int64_t m = 10000;
    const int d = 4;
    const int all_threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<int64_t> sizes = quick ? std::vector<int64_t>{1, 10, 100, 1000}
                                       : std::vector<int64_t>{1, 10, 100, 1000, 10000, 100000};

    // Sample: two smooth columns, a heaped one (multiples of 5) and a few-valued one.
    std::mt19937_64 gen(12345);
    std::normal_distribution<double> n01;
    std::vector<double> sample(static_cast<size_t>(m) * d);
    for (int64_t i = 0; i < m; ++i) {
        sample[i * d] = n01(gen);
        sample[i * d + 1] = 3 * n01(gen) + 0.5 * sample[i * d];
        sample[i * d + 2] = std::round((10 * n01(gen) + 50) / 5) * 5;
        sample[i * d + 3] = static_cast<double>(gen() % 6);
    }
    Synopsis s;
    s.d = d;
    s.m = m;
    s.n_rows = 10000000;
    s.sample_size = m;
    s.sample = sample.data();
    ExecContext build_ctx;
    build_ctx.mode = DeviceMode::Cpu;
    build_ctx.cpu_threads = all_threads;
    double t0 = now_ms();
    Status st = finalize(s, Bandwidth::Scott, Smoothing::Auto, build_ctx);
    if (!st.ok()) {
        std::fprintf(stderr, "finalize: %s\n", st.message);
        return 1;
    }
    double scott_ms = now_ms() - t0;

    char why[256];
    bool gpu = gpu::available(why, sizeof why);
    std::printf("synopsis box estimates: m = %lld sample rows, d = %d (discrete:%s%s%s%s), COUNT; ms per batch\n",
                static_cast<long long>(m), d, s.cols[0].discrete ? " 1" : "", s.cols[1].discrete ? " 2" : "",
                s.cols[2].discrete ? " 3" : "", s.cols[3].discrete ? " 4" : "");
    if (!gpu) std::printf("(no GPU: %s)\n", why);
    std::printf("%8s %12s %12s %14s %14s %12s %12s\n", "boxes", "GPU", "(transfer)", "CPU 1 thread", "CPU all",
                "GPU/CPU1", "GPU/CPUall");
    std::printf("%8s %12s %12s %14s %14s %12s %12s\n", "", "", "", "", "", "speedup", "speedup");

    Timing prev1, prevall;
    int64_t prev_q = 0;
    for (int64_t q : sizes) {
        std::vector<double> lo(static_cast<size_t>(q) * d), hi(static_cast<size_t>(q) * d);
        std::uniform_real_distribution<double> u(0, 1);
        for (int64_t b = 0; b < q; ++b)
            for (int j = 0; j < d; ++j) {
                const Column& c = s.cols[j];
                double a = c.min + (c.max - c.min) * u(gen), w = (c.max - c.min) * (0.1 + 0.5 * u(gen));
                lo[b * d + j] = a - w / 2;
                hi[b * d + j] = a + w / 2;
            }
        BoxBatch batch{q, lo.data(), hi.data(), Aggregate::Count, 0};
        int reps = q <= 1000 ? 9 : 3;

        Timing tg;
        tg.ok = false;
        if (gpu) {
            ExecContext g;
            g.mode = DeviceMode::Gpu;
            tg = time_eval(s, batch, g, reps);
        }
        auto cpu_timing = [&](int threads, Timing& prev) {
            Timing t;
            double predicted = prev_q > 0 ? prev.ms * static_cast<double>(q) / prev_q : 0;
            if (prev_q > 0 && predicted > 30000) {
                t.ms = predicted;
                t.extrapolated = true;
            } else {
                ExecContext c;
                c.mode = DeviceMode::Cpu;
                c.cpu_threads = threads;
                t = time_eval(s, batch, c, q <= 1000 ? 5 : 1);
            }
            prev = t;
            return t;
        };
        Timing t1 = cpu_timing(1, prev1);
        Timing tall = cpu_timing(all_threads, prevall);
        prev_q = q;

        char g[32], tr[32], c1[32], ca[32], s1[32] = "-", sa[32] = "-";
        fmt(g, sizeof g, tg);
        if (tg.ok)
            std::snprintf(tr, sizeof tr, "%.3f", tg.transfer_ms);
        else
            std::snprintf(tr, sizeof tr, "-");
        fmt(c1, sizeof c1, t1);
        fmt(ca, sizeof ca, tall);
        if (tg.ok) {
            std::snprintf(s1, sizeof s1, "%.1fx%s", t1.ms / tg.ms, t1.extrapolated ? "*" : "");
            std::snprintf(sa, sizeof sa, "%.1fx%s", tall.ms / tg.ms, tall.extrapolated ? "*" : "");
        }
        std::printf("%8lld %12s %12s %14s %14s %12s %12s\n", static_cast<long long>(q), g, tr, c1, ca, s1, sa);
    }
    std::printf("CPU all = %d threads; * = extrapolated linearly in q (a run would exceed 30 s)\n", all_threads);
    std::printf("per-box CPU target: one box from a 10^4 sample under 1 ms (row 1)\n");

    // Building: the bandwidths (the only GPU work of the aggregate), cdf = 2 plug-ins per column.
    for (int dev = 0; dev < 2; ++dev) {
        if (dev == 1 && !gpu) break;
        Synopsis b = s;
        ExecContext c;
        c.mode = dev == 0 ? DeviceMode::Cpu : DeviceMode::Gpu;
        c.cpu_threads = all_threads;
        double t = now_ms();
        Status bs = finalize(b, Bandwidth::Cdf, Smoothing::Auto, c);
        double ms = now_ms() - t;
        std::printf("finalize (cdf bandwidths, m = %lld, d = %d) on the %s: %.1f ms%s%s\n", static_cast<long long>(m),
                    d, dev == 0 ? "CPU (all threads)" : "GPU", ms,
                    bs.ok() ? "" : " FAILED: ", bs.ok() ? "" : bs.message);
    }
    std::printf("finalize (scott) on the CPU: %.1f ms\n", scott_ms);
    return 0;
}
