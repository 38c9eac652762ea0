// What a synopsis build costs as its sample grows (issue: builds linear in
// the sample): finalize() (statistics, plug-in bandwidths, the guard's
// smoothing decision) on a sample of m rows x 4 columns of generated shapes
// that break smoothing (lognormal sigma 1.5, heaped distances, a point mass
// at zero with a tail, a normal), on the CPU engine with 1 thread and every
// core, next to the exact O(m^2) plug-in of one column (what a build paid
// per bandwidth before; measured while it takes at most 30 s).
//
//   build/synopsis_build_bench           m = 10^3 .. 10^6
//   build/synopsis_build_bench --large   also 10^7 (about 1.3 GB of memory)
//
// Columns: ms of finalize (auto smoothing) per thread count, ms of finalize
// without smoothing (Scott bandwidths, no guard: the floor), the ratio of
// time to m (ns per sample row), the exact plug-in's ms for one column, and
// the modes chosen (E exact, K kde, L log-kde).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/kde.hpp"
#include "core/synopsis.hpp"

using namespace approx;
using namespace approx::synopsis;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<double> sample_rows(int64_t m, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> N(0, 1);
    std::uniform_real_distribution<double> U(0, 1);
    std::vector<double> x(static_cast<size_t>(m) * 4);
    for (int64_t i = 0; i < m; ++i) {
        double* r = &x[i * 4];
        r[0] = std::exp(1.5 * N(rng));                                              // lognormal
        r[1] = 10 * std::round(std::exp(U(rng) < 0.35 ? 7.2 + 0.4 * N(rng) : 5.9 + 0.5 * N(rng)) / 10);  // heaped
        r[2] = U(rng) < 0.55 ? 0 : std::round(std::exp(2.3 + 1.1 * N(rng)));        // point mass + tail
        r[3] = 100 + 15 * N(rng);                                                   // normal
    }
    return x;
}

struct Run {
    double ms = 0;
    std::string modes;
    bool ok = true;
};

Run time_finalize(const std::vector<double>& x, int64_t m, Bandwidth bw, Smoothing sm, int threads) {
    Synopsis s;
    s.d = 4;
    s.n_rows = m * 100;
    s.m = m;
    s.sample_size = m;
    s.sample = x.data();
    ExecContext ctx;
    ctx.mode = DeviceMode::Cpu;
    ctx.cpu_threads = threads;
    Run r;
    double t0 = now_ms();
    Status st = finalize(s, bw, sm, ctx);
    r.ms = now_ms() - t0;
    if (!st.ok()) {
        std::fprintf(stderr, "finalize m=%lld: %s\n", static_cast<long long>(m), st.message);
        r.ok = false;
        return r;
    }
    for (int j = 0; j < 4; ++j) r.modes += s.cols[j].mode == Mode::Exact ? 'E' : s.cols[j].mode == Mode::Kde ? 'K' : 'L';
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    bool large = argc > 1 && std::strcmp(argv[1], "--large") == 0;
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::printf("synopsis build (finalize) on the CPU engine, m sample rows x 4 columns; %d cores\n", cores);
    std::printf("%10s | %12s | %12s | %10s | %12s | %14s | %s\n", "m", "auto 1 thr", "auto all", "ns/row all",
                "no smoothing", "exact plug-in", "modes");
    bool exact_feasible = true;
    std::vector<int64_t> sizes = {1000, 10000, 100000, 1000000};
    if (large) sizes.push_back(10000000);
    for (int64_t m : sizes) {
        std::vector<double> x = sample_rows(m, 42);
        Run one = time_finalize(x, m, Bandwidth::Cdf, Smoothing::Auto, 1);
        Run all = time_finalize(x, m, Bandwidth::Cdf, Smoothing::Auto, cores);
        Run floor = time_finalize(x, m, Bandwidth::Scott, Smoothing::Never, cores);
        char exact[32] = "-";
        if (exact_feasible) {
            std::vector<double> col(static_cast<size_t>(m));
            for (int64_t i = 0; i < m; ++i) col[i] = x[i * 4];
            ExecContext ctx;
            ctx.mode = DeviceMode::Cpu;
            ctx.cpu_threads = cores;
            double h = 0, t0 = now_ms();
            kde::plugin_bandwidth(col.data(), col.size(), kde::PluginTarget::Distribution, ctx, h);
            double ms = now_ms() - t0;
            std::snprintf(exact, sizeof exact, "%.1f", ms);
            exact_feasible = ms * 100 < 30000;  // the next size costs 100x
        }
        std::printf("%10lld | %12.1f | %12.1f | %10.0f | %12.1f | %14s | %s\n", static_cast<long long>(m), one.ms, all.ms,
                    all.ms * 1e6 / static_cast<double>(m), floor.ms, exact, all.modes.c_str());
        std::fflush(stdout);
    }
    return 0;
}
