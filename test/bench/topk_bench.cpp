// Top-k selection benchmark: the engine's device time (data resident on the
// GPU, CUDA events, median of runs after warm-up) for k in {10, 100, 1000}
// over 10^6 .. 10^8 (id int8, score float8) pairs, against the CPU engine (one
// thread and all threads), torch.topk (test/bench/topk_torch.py, run from
// here when python3 with torch and CUDA is present) and the bandwidth floor
// (one streaming read of ids and scores, measured). CPU columns are measured
// while a run is predicted to take at most 30 s and extrapolated (marked *)
// beyond. Every GPU answer is checked against the CPU engine's.
//
//   build/topk_bench            10^6, 10^7, 10^8 (the device)
//   build/topk_bench --quick    10^5, 10^6 (a laptop / CI machine)
//   build/topk_bench --nra      the NRA engine on the paper's setup (4 uniform
//                               lists, k = 100) at 10^6 and 10^7 objects:
//                               rounds, depth, CPU vs GPU bookkeeping, and the
//                               full-scan alternative
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/gpu.hpp"
#include "core/topk.hpp"
#include "gpu_bench.hpp"

using approx::DeviceMode;
using approx::ExecContext;
using approx::Status;
namespace topk = approx::topk;

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int all_threads() {
    unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(std::min(hc, 64u));
}

ExecContext cpu_ctx(int threads) {
    ExecContext c;
    c.mode = DeviceMode::Cpu;
    c.cpu_threads = threads;
    return c;
}

// Median CPU time of select over the data (1 run when a run takes > 1 s).
double time_cpu(const std::vector<int64_t>& ids, const std::vector<double>& scores, size_t k, int threads,
                std::vector<int64_t>* result) {
    std::vector<int64_t> out(k);
    std::vector<double> outs(k);
    std::vector<double> ms;
    for (int r = 0; r < 3; ++r) {
        size_t n_out = 0;
        double t0 = now_ms();
        Status st = topk::select_cpu(ids.data(), scores.data(), ids.size(), k, topk::Order::Desc, cpu_ctx(threads),
                                     out.data(), outs.data(), n_out);
        double t = now_ms() - t0;
        if (!st.ok()) {
            std::fprintf(stderr, "CPU select failed: %s\n", st.message);
            std::exit(1);
        }
        ms.push_back(t);
        if (t > 1000) break;
    }
    if (result) *result = out;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// torch.topk timings from the peer script: (n, k) -> (fp64 ms, fp32 ms).
std::map<std::pair<size_t, size_t>, std::pair<double, double>> torch_times(const std::vector<size_t>& sizes) {
    std::map<std::pair<size_t, size_t>, std::pair<double, double>> t;
    std::string cmd = "python3 test/bench/topk_torch.py --csv --sizes";
    for (size_t n : sizes) cmd += " " + std::to_string(n);
    cmd += " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return t;
    char line[256];
    while (std::fgets(line, sizeof line, p)) {
        size_t n = 0, k = 0;
        double a = 0, b = 0;
        if (std::sscanf(line, "%zu,%zu,%lf,%lf", &n, &k, &a, &b) == 4) t[{n, k}] = {a, b};
    }
    pclose(p);
    return t;
}

void fmt_ms(char* buf, size_t len, double ms, bool extrapolated) {
    if (ms <= 0)
        std::snprintf(buf, len, "-");
    else if (ms < 10)
        std::snprintf(buf, len, "%.3f%s", ms, extrapolated ? "*" : "");
    else
        std::snprintf(buf, len, "%.1f%s", ms, extrapolated ? "*" : "");
}

int select_table(bool quick) {
    std::vector<size_t> sizes = quick ? std::vector<size_t>{100000, 1000000}
                                      : std::vector<size_t>{1000000, 10000000, 100000000};
    const size_t ks[] = {10, 100, 1000};
    const int threads = all_threads();
    char why[256];
    bool gpu = approx::gpu::available(why, sizeof why);
    auto torch = torch_times(sizes);
    std::printf("top-k selection, (score DESC, id ASC), uniform float8 scores, int8 ids; CPU threads = %d\n", threads);
    if (!gpu) std::printf("GPU: none (%s)\n", why);
    std::printf(
        "GPU ms: device time, data resident (median); upload: host->device copy of ids+scores (pageable); "
        "floor: one read of ids+scores;\ntorch: torch.topk on resident float64 / float32 scores (no id "
        "tie-break); * = extrapolated from the previous size (run > 30 s)\n\n");
    std::printf("%11s %5s | %9s %9s %9s | %9s %9s | %10s %10s | %8s %8s %8s | %s\n", "n", "k", "GPU ms", "upload",
                "floor", "torch64", "torch32", "CPU 1 thr", "CPU all", "x CPU1", "x CPUall", "x torch", "check");
    double prev_cpu1[3] = {0, 0, 0}, prev_cpuall[3] = {0, 0, 0};
    size_t prev_n = 0;
    bool all_ok = true;
    for (size_t n : sizes) {
        std::mt19937_64 rng(1234 + n);
        std::uniform_real_distribution<double> U(0, 1);
        std::vector<int64_t> ids(n);
        std::vector<double> scores(n);
        for (size_t i = 0; i < n; ++i) {
            ids[i] = static_cast<int64_t>(i);
            scores[i] = U(rng);
        }
        topk::GpuSelectTiming tg[3];
        std::vector<std::vector<int64_t>> gpu_ids(3);
        bool gpu_ran = false;
#ifdef APPROX_WITH_CUDA
        if (gpu) {
            int64_t* outs[3];
            for (int q = 0; q < 3; ++q) {
                gpu_ids[q].assign(ks[q], 0);
                outs[q] = gpu_ids[q].data();
            }
            ExecContext c;
            c.mode = DeviceMode::Gpu;
            Status st = topk::gpu_select_bench(ids.data(), scores.data(), n, ks, 3, topk::Order::Desc, 9, c, tg, outs);
            if (!st.ok()) {
                std::printf("GPU benchmark failed: %s\n", st.message);
                return 1;
            }
            gpu_ran = true;
        }
#endif
        for (int q = 0; q < 3; ++q) {
            size_t k = ks[q];
            double cpu1 = 0, cpuall = 0;
            bool x1 = false, xall = false;
            std::vector<int64_t> ref;
            auto predict = [&](double prev) { return prev * static_cast<double>(n) / static_cast<double>(prev_n); };
            if (prev_n == 0 || predict(prev_cpu1[q]) <= 30000) {
                cpu1 = time_cpu(ids, scores, k, 1, &ref);
            } else {
                cpu1 = predict(prev_cpu1[q]);
                x1 = true;
            }
            if (prev_n == 0 || predict(prev_cpuall[q]) <= 30000) {
                cpuall = time_cpu(ids, scores, k, threads, ref.empty() ? &ref : nullptr);
            } else {
                cpuall = predict(prev_cpuall[q]);
                xall = true;
            }
            if (ref.empty()) time_cpu(ids, scores, k, threads, &ref);  // the check needs an answer
            std::string check = "-";
            if (gpu_ran) {
                check = gpu_ids[q] == ref ? "ok" : "MISMATCH";
                if (gpu_ids[q] != ref) all_ok = false;
            }
            auto tt = torch.find({n, k});
            double t64 = tt == torch.end() ? 0 : tt->second.first;
            double t32 = tt == torch.end() ? 0 : tt->second.second;
            char g[32], up[32], fl[32], a[32], b[32], c1[32], ca[32], s1[32], sa[32], st[32];
            fmt_ms(g, sizeof g, gpu_ran ? tg[q].ms_median : 0, false);
            fmt_ms(up, sizeof up, gpu_ran ? tg[q].ms_upload : 0, false);
            fmt_ms(fl, sizeof fl, gpu_ran ? tg[q].ms_floor : 0, false);
            fmt_ms(a, sizeof a, t64, false);
            fmt_ms(b, sizeof b, t32, false);
            fmt_ms(c1, sizeof c1, cpu1, x1);
            fmt_ms(ca, sizeof ca, cpuall, xall);
            if (gpu_ran) {
                std::snprintf(s1, sizeof s1, "%.0f", cpu1 / tg[q].ms_median);
                std::snprintf(sa, sizeof sa, "%.1f", cpuall / tg[q].ms_median);
                if (t64 > 0)
                    std::snprintf(st, sizeof st, "%.2f", t64 / tg[q].ms_median);
                else
                    std::snprintf(st, sizeof st, "-");
            } else {
                std::snprintf(s1, sizeof s1, "-");
                std::snprintf(sa, sizeof sa, "-");
                std::snprintf(st, sizeof st, "-");
            }
            std::printf("%11zu %5zu | %9s %9s %9s | %9s %9s | %10s %10s | %8s %8s %8s | %s\n", n, k, g, up, fl, a, b,
                        c1, ca, s1, sa, st, check.c_str());
            std::fflush(stdout);
            prev_cpu1[q] = cpu1;
            prev_cpuall[q] = cpuall;
        }
        prev_n = n;
    }
    return all_ok ? 0 : 1;
}

// ---- NRA on the paper's setup -------------------------------------------------------------

struct NraTiming {
    double ms = 0;
    int64_t rounds = 0;
    int64_t depth = 0;
    std::vector<int64_t> winners;
    bool ok = false;
};

NraTiming run_nra(const std::vector<std::vector<std::pair<int64_t, double>>>& lists, const std::vector<double>& mins,
                  size_t k, size_t batch, const ExecContext& ctx) {
    NraTiming t;
    const int m = static_cast<int>(lists.size());
    std::vector<std::vector<int64_t>> ids(m, std::vector<int64_t>(batch));
    std::vector<std::vector<double>> sc(m, std::vector<double>(batch));
    std::vector<topk::NraList> l(m);
    std::vector<size_t> depth(m, 0);
    double t0 = now_ms();
    topk::NraConfig cfg;
    cfg.m = m;
    cfg.k = static_cast<int64_t>(k);
    cfg.min_score = mins.data();
    cfg.rows_hint = static_cast<int64_t>(lists[0].size());
    topk::Nra* nra = nullptr;
    Status st = topk::nra_create(cfg, ctx, nra);
    if (!st.ok()) {
        std::printf("nra_create: %s\n", st.message);
        return t;
    }
    topk::NraProgress pr;
    while (st.ok() && !pr.done && !pr.need_unlisted) {
        for (int j = 0; j < m; ++j) {  // the glue's fetch: copy the next batch out of the list
            size_t take = std::min(batch, lists[j].size() - depth[j]);
            for (size_t e = 0; e < take; ++e) {
                ids[j][e] = lists[j][depth[j] + e].first;
                sc[j][e] = lists[j][depth[j] + e].second;
            }
            depth[j] += take;
            l[j] = topk::NraList{ids[j].data(), sc[j].data(), take, take < batch};
        }
        st = topk::nra_round(nra, l.data(), ctx, pr);
    }
    t.winners.assign(k, 0);
    size_t n = 0;
    if (st.ok()) st = topk::nra_winners(nra, ctx, t.winners.data(), k, n);
    t.ms = now_ms() - t0;
    topk::NraInfo info = topk::nra_info(nra);
    topk::nra_destroy(nra);
    if (!st.ok()) {
        std::printf("NRA failed: %s\n", st.message);
        return t;
    }
    t.winners.resize(n);
    std::sort(t.winners.begin(), t.winners.end());
    t.rounds = info.rounds;
    t.depth = info.depth[0];
    t.ok = true;
    return t;
}

int nra_table(bool quick) {
    std::vector<size_t> sizes = quick ? std::vector<size_t>{100000, 1000000} : std::vector<size_t>{1000000, 10000000};
    const int m = 4;
    const size_t k = 100, batch = 1024;
    char why[256];
    bool gpu = approx::gpu::available(why, sizeof why);
    const int threads = all_threads();
    std::printf(
        "NRA top-k, paper setup: %d independent uniform lists, k = %zu, batch (STRIDE) = %zu; engine time "
        "(lists in memory, the glue's copies included); full scan: sum all objects' scores and select\n\n",
        m, k, batch);
    std::printf("%10s | %7s %8s %8s | %10s %10s | %11s %11s | %s\n", "objects", "rounds", "depth %", "(24k/N)^.25",
                "CPU ms", "GPU ms", "scan 1 thr", "scan all", "check");
    int rc = 0;
    for (size_t n : sizes) {
        std::mt19937_64 rng(77 + n);
        std::uniform_real_distribution<double> U(0, 1);
        std::vector<double> vals(n * m);
        for (auto& v : vals) v = U(rng);
        std::vector<std::vector<std::pair<int64_t, double>>> lists(m);
        std::vector<double> mins(m, 1.0);
        for (int j = 0; j < m; ++j) {
            lists[j].resize(n);
            for (size_t i = 0; i < n; ++i) {
                lists[j][i] = {static_cast<int64_t>(i), vals[i * m + j]};
                mins[j] = std::min(mins[j], vals[i * m + j]);
            }
            std::sort(lists[j].begin(), lists[j].end(),
                      [](const auto& a, const auto& b) { return a.second > b.second; });
        }
        NraTiming c = run_nra(lists, mins, k, batch, cpu_ctx(1));
        NraTiming g;
        if (gpu) {
            ExecContext gc;
            gc.mode = DeviceMode::Gpu;
            run_nra(lists, mins, k, batch, gc);  // warm-up (CUDA context, first allocations)
            g = run_nra(lists, mins, k, batch, gc);
        }
        // full scan: totals of every object, then the engine's selection
        std::vector<int64_t> ids(n);
        for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int64_t>(i);
        double scan[2];
        std::vector<int64_t> scan_ids(k);
        for (int t = 0; t < 2; ++t) {
            std::vector<double> tot(k);
            size_t n_out = 0;
            Status st;
            double t0 = now_ms();
            if (t == 0) {
                st = topk::rank_by_sum(ids.data(), vals.data(), n, m, k, cpu_ctx(1), scan_ids.data(), tot.data(),
                                       n_out);
            } else {  // the totals pass stays serial; the selection uses every thread
                std::vector<double> totals(n);
                for (size_t i = 0; i < n; ++i) totals[i] = topk::nra_sum(&vals[i * m], m);
                st = topk::select_cpu(ids.data(), totals.data(), n, k, topk::Order::Desc, cpu_ctx(threads),
                                      scan_ids.data(), tot.data(), n_out);
            }
            scan[t] = now_ms() - t0;
            if (!st.ok()) return 1;
        }
        std::sort(scan_ids.begin(), scan_ids.end());
        bool ok = c.ok && c.winners == scan_ids && (!gpu || (g.ok && g.winners == scan_ids && g.rounds == c.rounds));
        if (!ok) rc = 1;
        char gms[32];
        if (gpu)
            std::snprintf(gms, sizeof gms, "%.1f", g.ms);
        else
            std::snprintf(gms, sizeof gms, "-");
        std::printf("%10zu | %7lld %8.2f %8.2f | %10.1f %10s | %11.1f %11.1f | %s\n", n,
                    static_cast<long long>(c.rounds), 100.0 * static_cast<double>(c.depth) / static_cast<double>(n),
                    100.0 * std::pow(24.0 * k / static_cast<double>(n), 0.25), c.ms, gms, scan[0], scan[1],
                    ok ? "ok" : "MISMATCH");
        std::fflush(stdout);
    }
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = false, nra = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (std::strcmp(argv[i], "--nra") == 0)
            nra = true;
        else {
            std::fprintf(stderr, "usage: %s [--quick] [--nra]\n", argv[0]);
            return 2;
        }
    }
    return nra ? nra_table(quick) : select_table(quick);
}
