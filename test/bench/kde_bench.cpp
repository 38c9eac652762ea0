// KDE bandwidth benchmark: one table of the engine's plug-in and LSCV (grid
// 150) times on the GPU, the CPU with one thread and the CPU with all
// threads, and the speedups.
//
//   make bench && build/kde_bench            (the GPU machine: test/gpu/device.sh)
//   build/kde_bench --quick                  (small sizes, a smoke test)
//   build/kde_bench --max-cpu-s 10           (CPU measuring cap, default 30 s)
//   build/kde_bench --only plugin            (or lscv)
//   python3 test/bench/kde_torch.py          (the plain PyTorch peer, same cases)
//
// Times are end to end through the engine API (kde::plugin_bandwidth,
// kde::lscv): fp64 preparation, upload, GPU work and reductions. GPU: median
// of several runs after a warm-up. CPU: measured while a run is predicted to
// take at most the cap, from c n^2 fitted to the largest measured size of the
// same case; beyond it that c n^2 estimate is printed, marked '*'. The last
// column compares the GPU's answer with the CPU's (plug-in h; LSCV objective)
// where the CPU ran.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu.hpp"
#include "core/kde.hpp"

using namespace approx;

namespace {

std::vector<double> bimodal_data(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> N(0, 1);
    std::uniform_real_distribution<double> U(0, 1);
    std::vector<double> x(n);
    for (auto& v : x) v = U(rng) < 0.3 ? 4 + 0.5 * N(rng) : N(rng);
    return x;
}

std::vector<double> point_data(size_t n, int d, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> N(0, 1);
    std::uniform_real_distribution<double> U(0, 1);
    std::vector<double> x(n * d);
    for (size_t i = 0; i < n; ++i) {
        double shift = U(rng) < 0.3 ? 3 : 0;
        for (int k = 0; k < d; ++k) x[i * d + k] = N(rng) + shift + 0.5 * (k > 0 ? x[i * d + k - 1] : 0);
    }
    return x;
}

struct Case {
    bool lscv;
    size_t n;
    int d;
};

struct Run {
    bool ok = false;
    double ms = 0;
    double value = 0;  // h (plug-in) or objective (LSCV)
    char error[sizeof(Status::message)] = {0};
};

Run run_once(const Case& c, const std::vector<double>& x, const ExecContext& ctx) {
    Run r;
    Stopwatch sw;
    Status st;
    if (c.lscv) {
        static kde::LscvResult res;
        st = kde::lscv(x.data(), c.n, c.d, 150, kde::Covariance::Full, ctx, res);
        r.value = res.objective;
    } else {
        st = kde::plugin_bandwidth(x.data(), c.n, kde::PluginTarget::Density, ctx, r.value);
    }
    r.ms = sw.ms();
    r.ok = st.ok();
    if (!st.ok()) std::snprintf(r.error, sizeof r.error, "%s", st.message);
    return r;
}

// Median of `reps` runs after `warm` unmeasured ones.
Run run_median(const Case& c, const std::vector<double>& x, const ExecContext& ctx, int warm, int reps) {
    for (int i = 0; i < warm; ++i) {
        Run r = run_once(c, x, ctx);
        if (!r.ok) return r;
    }
    std::vector<double> ms;
    Run last;
    for (int i = 0; i < reps; ++i) {
        last = run_once(c, x, ctx);
        if (!last.ok) return last;
        ms.push_back(last.ms);
    }
    std::sort(ms.begin(), ms.end());
    last.ms = ms[ms.size() / 2];
    return last;
}

// CPU timing series of one (method, d): measured while the c n^2 prediction
// from the largest measured size stays under the cap, extrapolated beyond.
struct CpuSeries {
    size_t n = 0;
    double ms = 0;
    bool have = false;
};

struct Cell {
    double ms = 0;
    bool estimated = false;
    bool ran = false;
    double value = 0;
    bool failed = false;
};

Cell cpu_cell(const Case& c, const std::vector<double>& x, int threads, double cap_ms, CpuSeries& s) {
    Cell cell;
    double predicted = s.have ? s.ms * std::pow(double(c.n) / double(s.n), 2) : 0;
    if (s.have && predicted > cap_ms) {
        cell.ms = predicted;
        cell.estimated = true;
        return cell;
    }
    ExecContext ctx;
    ctx.mode = DeviceMode::Cpu;
    ctx.cpu_threads = threads;
    Run r = run_once(c, x, ctx);
    if (r.ok && r.ms < 1000) r = run_median(c, x, ctx, 0, 3);
    if (!r.ok) {
        std::fprintf(stderr, "CPU run failed: %s\n", r.error);
        cell.failed = true;
        return cell;
    }
    cell.ms = r.ms;
    cell.ran = true;
    cell.value = r.value;
    s = {c.n, r.ms, true};
    return cell;
}

std::string fmt_ms(const Cell& c) {
    if (c.failed) return "failed";
    char b[64];
    if (c.ms >= 100000)
        std::snprintf(b, sizeof b, "%.3g%s", c.ms, c.estimated ? "*" : "");
    else
        std::snprintf(b, sizeof b, "%.*f%s", c.ms < 10 ? 3 : c.ms < 1000 ? 1 : 0, c.ms, c.estimated ? "*" : "");
    return b;
}

std::string fmt_speedup(double cpu_ms, double gpu_ms, bool estimated) {
    if (!(gpu_ms > 0) || !(cpu_ms > 0)) return "-";
    char b[64];
    double s = cpu_ms / gpu_ms;
    std::snprintf(b, sizeof b, "%.*f%s", s < 10 ? 2 : s < 100 ? 1 : 0, s, estimated ? "*" : "");
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false;
    double cap_s = 30;
    const char* only = nullptr;  // "plugin" or "lscv"
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--quick"))
            quick = true;
        else if (!std::strcmp(argv[i], "--max-cpu-s") && i + 1 < argc)
            cap_s = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--max-cpu-s SECONDS] [--only plugin|lscv]\n", argv[0]);
            return 2;
        }
    }
    const double cap_ms = cap_s * 1000;
    unsigned hw = std::thread::hardware_concurrency();
    const int all_threads = hw == 0 ? 1 : static_cast<int>(hw);

    char why[256] = {0};
    bool gpu = gpu::available(why, sizeof why);
    gpu::DeviceInfo info[1];
    if (gpu && gpu::devices(info, 1) > 0)
        std::printf("GPU: %s (%d SMs)\n", info[0].name, info[0].multiprocessors);
    else
        std::printf("GPU: none (%s)\n", why);
    std::printf("CPU: %d threads; CPU columns measured up to %.0f s a run, '*' = extrapolated c*n^2\n", all_threads,
                cap_s);
    std::printf("times in ms, end to end through the engine API; GPU: median after a warm-up\n\n");

    std::vector<Case> cases;
    std::vector<size_t> plug_n = quick ? std::vector<size_t>{1000, 3000, 10000}
                                       : std::vector<size_t>{1000, 10000, 30720, 100000, 1000000};
    std::vector<size_t> lscv_n = quick ? std::vector<size_t>{300, 1000, 2000}
                                       : std::vector<size_t>{1000, 10240, 100000};
    if (!only || !std::strcmp(only, "plugin"))
        for (size_t n : plug_n) cases.push_back({false, n, 1});
    if (!only || !std::strcmp(only, "lscv"))
        for (int d : {1, 4, 16})
            for (size_t n : lscv_n) cases.push_back({true, n, d});

    std::printf("%-8s %8s %3s %11s %12s %12s %9s %9s %10s\n", "method", "n", "d", "GPU", "CPU 1 thr",
                ("CPU " + std::to_string(all_threads) + " thr").c_str(), "x 1 thr",
                ("x " + std::to_string(all_threads) + " thr").c_str(), "GPU-CPU");
    CpuSeries one[2][3], all[2][3];  // [lscv][d index]
    for (const Case& c : cases) {
        std::vector<double> x = c.lscv ? point_data(c.n, c.d, 7 + c.n + c.d) : bimodal_data(c.n, 3 + c.n);
        Cell g;
        if (gpu) {
            ExecContext ctx;
            ctx.mode = DeviceMode::Gpu;
            Run probe = run_once(c, x, ctx);  // warm-up (the first also creates the CUDA context)
            if (probe.ok) {
                int reps = probe.ms > 2000 ? 3 : probe.ms > 200 ? 5 : 10;
                probe = run_median(c, x, ctx, 1, reps);
            }
            if (probe.ok) {
                g.ms = probe.ms;
                g.ran = true;
                g.value = probe.value;
            } else {
                g.failed = true;
                std::fprintf(stderr, "GPU run failed: %s\n", probe.error);
            }
        }
        int di = c.d == 1 ? 0 : c.d == 4 ? 1 : 2;
        Cell c1 = cpu_cell(c, x, 1, cap_ms, one[c.lscv][di]);
        Cell ca = cpu_cell(c, x, all_threads, cap_ms, all[c.lscv][di]);
        std::string check = "-";
        const Cell* ref = ca.ran ? &ca : c1.ran ? &c1 : nullptr;
        if (g.ran && ref) {
            char b[32];
            std::snprintf(b, sizeof b, "%.1e", std::fabs(g.value / ref->value - 1));
            check = b;
        }
        std::printf("%-8s %8zu %3d %11s %12s %12s %9s %9s %10s\n", c.lscv ? "lscv" : "plugin", c.n, c.d,
                    gpu ? fmt_ms(g).c_str() : "-", fmt_ms(c1).c_str(), fmt_ms(ca).c_str(),
                    fmt_speedup(c1.ms, g.ms, c1.estimated).c_str(), fmt_speedup(ca.ms, g.ms, ca.estimated).c_str(),
                    check.c_str());
        std::fflush(stdout);
    }
    std::printf("\nGPU-CPU: relative difference of h (plug-in) or of the LSCV objective, GPU vs CPU\n");
    return 0;
}
