// Moving-object grid index benchmark: the G-LFPP paper's setup scaled to one
// GPU and its host (objects on 100 km x 100 km, speeds 1-1000 m/s, a move per
// update of speed x 1 s with reflection at the border, batches of updates of
// randomly picked objects (so a batch holds duplicates), batches of
// 100 m x 100 m = 10,000 m^2 range-count queries).
//
//   build/moving_bench            full run (device host: ~1 min)
//   build/moving_bench --quick    small sizes (a laptop / CI machine)
//
// Table 1: updates/s and queries/s by object count for the GPU engine, the CPU
// engine on 1 thread and on all threads, and the GPU/CPU speedups. GPU times
// are engine times for data already in host memory (the index lives on the
// GPU; each batch is uploaded); "GPU dev" subtracts the host<->device copies
// (the kernels alone). Medians over several batches after a warm-up batch.
// CPU figures for runs predicted to pass 30 s are extrapolated (marked *):
// updates/s kept, queries/s scaled by objects (a query's cost grows with
// the objects per cell).
// Table 2: the effect of the cell count (the paper's figures 5/6) at the
// largest size.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu.hpp"
#include "core/moving.hpp"

namespace mo = approx::moving;
using approx::ExecContext;
using approx::Status;

namespace {

constexpr double kSide = 100000.0;  // 100 km

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct World {
    std::vector<double> x, y, vx, vy;
};

World make_world(int64_t n, bool clustered, uint64_t seed) {
    World w;
    w.x.resize(n);
    w.y.resize(n);
    w.vx.resize(n);
    w.vy.resize(n);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> g(0, 1);
    const double cx[4] = {20000, 70000, 45000, 80000}, cy[4] = {30000, 75000, 50000, 15000};
    for (int64_t i = 0; i < n; ++i) {
        if (clustered && u(rng) < 0.8) {
            int c = static_cast<int>(rng() % 4);
            w.x[i] = std::min(kSide, std::max(0.0, cx[c] + 4000 * g(rng)));
            w.y[i] = std::min(kSide, std::max(0.0, cy[c] + 4000 * g(rng)));
        } else {
            w.x[i] = u(rng) * kSide;
            w.y[i] = u(rng) * kSide;
        }
        double speed = 1 + 999 * u(rng), th = 2 * M_PI * u(rng);
        w.vx[i] = speed * std::cos(th);
        w.vy[i] = speed * std::sin(th);
    }
    return w;
}

struct Batch {
    std::vector<int64_t> ids;
    std::vector<double> xs, ys;
};

// Moves randomly picked objects by speed x 1 s (reflecting at the border).
std::vector<Batch> make_batches(World w, int count, int64_t size, uint64_t seed) {
    std::vector<Batch> out(count);
    std::mt19937_64 rng(seed);
    const int64_t n = static_cast<int64_t>(w.x.size());
    for (auto& b : out) {
        b.ids.resize(size);
        b.xs.resize(size);
        b.ys.resize(size);
        for (int64_t k = 0; k < size; ++k) {
            int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
            double x = w.x[i] + w.vx[i], y = w.y[i] + w.vy[i];
            if (x < 0 || x > kSide) {
                w.vx[i] = -w.vx[i];
                x = x < 0 ? -x : 2 * kSide - x;
            }
            if (y < 0 || y > kSide) {
                w.vy[i] = -w.vy[i];
                y = y < 0 ? -y : 2 * kSide - y;
            }
            w.x[i] = x;
            w.y[i] = y;
            b.ids[k] = i;
            b.xs[k] = x;
            b.ys[k] = y;
        }
    }
    return out;
}

std::vector<mo::Rect> make_queries(int64_t q, uint64_t seed) {
    std::vector<mo::Rect> out(q);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, kSide - 100);
    for (auto& r : out) {
        double x = u(rng), y = u(rng);
        r = mo::Rect{x, y, x + 100, y + 100};
    }
    return out;
}

struct Result {
    bool ok = false;
    double load_ms = NAN, upd_ms = NAN, upd_dev_ms = NAN, qry_ms = NAN, qry_dev_ms = NAN, cross = NAN;
    double total_s = 0;
    std::string error;
};

enum class Eng { Gpu, Cpu };

// One engine on one workload: load, a warm-up batch, timed batches, then a
// warm-up query batch and timed query batches.
Result run(Eng e, int threads, int cells_side, const std::vector<int64_t>& ids, const World& w,
           const std::vector<Batch>& batches, const std::vector<mo::Rect>& qs, int query_reps) {
    Result r;
    double t0 = now_ms();
    ExecContext ctx;
    ctx.mode = e == Eng::Gpu ? approx::DeviceMode::Gpu : approx::DeviceMode::Cpu;
    ctx.cpu_threads = threads;
    mo::Grid g;
    g.xmin = g.ymin = 0;
    g.xmax = g.ymax = kSide;
    g.cells_x = g.cells_y = cells_side;
    mo::Index* p = nullptr;
    Status st = e == Eng::Gpu ?
#ifdef APPROX_WITH_CUDA
                              mo::create_gpu(g, int64_t(1) << 26, ctx, p)
#else
                              Status::Error(approx::StatusCode::NoGpu, "built without CUDA")
#endif
                              : mo::create_cpu(g, int64_t(1) << 26, ctx, p);
    if (!st.ok()) {
        r.error = st.message;
        return r;
    }
    std::unique_ptr<mo::Index> idx(p);
    int64_t applied = 0;
    double a = now_ms();
    st = idx->update(ids.data(), w.x.data(), w.y.data(), ids.size(), ctx, applied);
    r.load_ms = now_ms() - a;
    if (!st.ok()) {
        r.error = st.message;
        return r;
    }
    std::vector<double> upd, upd_dev, cross;
    for (size_t b = 0; b < batches.size(); ++b) {
        const Batch& bt = batches[b];
        a = now_ms();
        st = idx->update(bt.ids.data(), bt.xs.data(), bt.ys.data(), bt.ids.size(), ctx, applied);
        double ms = now_ms() - a;
        if (!st.ok()) {
            r.error = st.message;
            return r;
        }
        mo::Info info;
        idx->info(info);
        if (b == 0) continue;  // warm-up
        upd.push_back(ms);
        upd_dev.push_back(ms - info.last_update.ms_transfer);
        cross.push_back(double(info.last_update.moved) / double(std::max<int64_t>(1, info.last_update.distinct)));
    }
    std::vector<int64_t> counts(qs.size());
    std::vector<double> qry, qry_dev;
    for (int rep = 0; rep <= query_reps; ++rep) {
        a = now_ms();
        st = idx->range_count(qs.data(), qs.size(), ctx, counts.data());
        double ms = now_ms() - a;
        if (!st.ok()) {
            r.error = st.message;
            return r;
        }
        mo::Info info;
        idx->info(info);
        if (rep == 0) continue;
        qry.push_back(ms);
        qry_dev.push_back(ms - info.last_query.ms_transfer);
    }
    r.upd_ms = median(upd);
    r.upd_dev_ms = median(upd_dev);
    r.cross = median(cross);
    r.qry_ms = median(qry);
    r.qry_dev_ms = median(qry_dev);
    r.ok = true;
    r.total_s = (now_ms() - t0) / 1000;
    return r;
}

std::string rate(double items, double ms, bool extrapolated = false) {
    if (!(ms > 0)) return "-";
    char buf[32];
    double v = items / ms / 1000.0;  // M/s
    if (v >= 100)
        std::snprintf(buf, sizeof buf, "%.0f%s", v, extrapolated ? "*" : "");
    else if (v >= 1)
        std::snprintf(buf, sizeof buf, "%.1f%s", v, extrapolated ? "*" : "");
    else
        std::snprintf(buf, sizeof buf, "%.3f%s", v, extrapolated ? "*" : "");
    return buf;
}

std::string ratio(double a_ms, double b_ms) {
    if (!(a_ms > 0) || !(b_ms > 0)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fx", b_ms / a_ms);
    return buf;
}

std::string human(int64_t n) {
    char buf[32];
    if (n >= 1000000)
        std::snprintf(buf, sizeof buf, "%.0fM", n / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.0fk", n / 1e3);
    return buf;
}

// A CPU result predicted from a smaller measured one (updates/s kept,
// per-query cost proportional to objects).
Result extrapolate(const Result& small, int64_t n_small, int64_t n, int64_t batch_small, int64_t batch, int64_t q_small,
                   int64_t q) {
    Result r = small;
    double f = double(n) / double(n_small);
    r.load_ms = small.load_ms * f;
    r.upd_ms = small.upd_ms * double(batch) / double(batch_small);
    r.qry_ms = small.qry_ms * f * double(q) / double(q_small);
    r.total_s = small.total_s * f;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    char why[256];
    bool gpu = approx::gpu::available(why, sizeof why);
    int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (all > 64) all = 64;

    const std::vector<int64_t> sizes = quick ? std::vector<int64_t>{100000, 300000}
                                             : std::vector<int64_t>{1000000, 3000000, 10000000};
    const int64_t batch_size = quick ? 100000 : 1000000;
    const int64_t nq = quick ? 100000 : 1000000;
    const int nbatches = 5, qreps = 3;
    const int cells_side = 256;  // 65,536 cells, as in the paper
    const double cpu_budget_s = 30;

    std::printf("moving objects (G-LFPP): %s objects on 100 km x 100 km, %d x %d cells, speeds 1-1000 m/s\n",
                quick ? "quick:" : "paper setup scaled:", cells_side, cells_side);
    std::printf(
        "update batches of %s random objects (4 timed after 1 warm-up), query batches of %s 100 m x 100 m "
        "range counts (median of %d)\n",
        human(batch_size).c_str(), human(nq).c_str(), qreps);
    std::printf("GPU: %s; CPU: 1 thread and %d threads; rates in millions per second; * = extrapolated CPU figure\n\n",
                gpu ? "yes" : why, all);

    std::printf(
        "| objects | data | cross-cell | load GPU | load CPU %dt | updates GPU | GPU dev | CPU 1t | CPU %dt | "
        "GPU/CPU %dt | queries GPU | GPU dev | CPU 1t | CPU %dt | GPU/CPU %dt |\n",
        all, all, all, all, all);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");

    struct Case {
        int64_t n;
        bool clustered;
    };
    std::vector<Case> cases;
    for (int64_t n : sizes) cases.push_back(Case{n, false});
    cases.push_back(Case{sizes.back(), true});

    Result last1, lastn;
    int64_t last_n = 0;
    for (const Case& c : cases) {
        World w = make_world(c.n, c.clustered, 42 + c.n);
        std::vector<int64_t> ids(c.n);
        for (int64_t i = 0; i < c.n; ++i) ids[i] = i;
        int64_t bs = std::min(batch_size, c.n);
        std::vector<Batch> batches = make_batches(w, nbatches, bs, 7 + c.n);
        std::vector<mo::Rect> qs = make_queries(nq, 99);

        Result rg, r1, rn;
        if (gpu) rg = run(Eng::Gpu, 1, cells_side, ids, w, batches, qs, qreps);
        bool x1 = false, xn = false;
        if (last_n > 0 && last1.ok && last1.total_s * double(c.n) / double(last_n) > cpu_budget_s) {
            r1 = extrapolate(last1, last_n, c.n, std::min(batch_size, last_n), bs, nq, nq);
            x1 = true;
        } else {
            r1 = run(Eng::Cpu, 1, cells_side, ids, w, batches, qs, qreps);
        }
        if (last_n > 0 && lastn.ok && lastn.total_s * double(c.n) / double(last_n) > cpu_budget_s) {
            rn = extrapolate(lastn, last_n, c.n, std::min(batch_size, last_n), bs, nq, nq);
            xn = true;
        } else {
            rn = run(Eng::Cpu, all, cells_side, ids, w, batches, qs, qreps);
        }
        if (!c.clustered) {
            if (!x1) last1 = r1;
            if (!xn) lastn = rn;
            if (!x1 || !xn) last_n = c.n;
        }
        if (!rg.error.empty()) std::printf("GPU error: %s\n", rg.error.c_str());
        if (!r1.error.empty()) std::printf("CPU error: %s\n", r1.error.c_str());
        double cross = rg.ok ? rg.cross : r1.cross;
        std::printf("| %s | %s | %.0f%% | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                    human(c.n).c_str(), c.clustered ? "clustered" : "uniform", 100 * cross,
                    rate(double(c.n), rg.load_ms).c_str(), rate(double(c.n), rn.load_ms, xn).c_str(),
                    rate(double(bs), rg.upd_ms).c_str(), rate(double(bs), rg.upd_dev_ms).c_str(),
                    rate(double(bs), r1.upd_ms, x1).c_str(), rate(double(bs), rn.upd_ms, xn).c_str(),
                    ratio(rg.upd_ms, rn.upd_ms).c_str(), rate(double(nq), rg.qry_ms).c_str(),
                    rate(double(nq), rg.qry_dev_ms).c_str(), rate(double(nq), r1.qry_ms, x1).c_str(),
                    rate(double(nq), rn.qry_ms, xn).c_str(), ratio(rg.qry_ms, rn.qry_ms).c_str());
        std::fflush(stdout);
    }

    // The cell-count sweep at the largest uniform size.
    const int64_t n = sizes.back();
    std::printf("\ncell count sweep (paper figures 5/6): %s uniform objects; updates and queries in M/s\n\n",
                human(n).c_str());
    std::printf("| cells | objects/cell | updates GPU | GPU dev | CPU %dt | queries GPU | GPU dev | CPU %dt |\n", all,
                all);
    std::printf("|---|---|---|---|---|---|---|---|\n");
    World w = make_world(n, false, 42 + n);
    std::vector<int64_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = i;
    int64_t bs = std::min(batch_size, n);
    std::vector<Batch> batches = make_batches(w, 3, bs, 7 + n);
    std::vector<mo::Rect> qs = make_queries(nq, 99);
    const std::vector<int> sides = quick ? std::vector<int>{64, 256, 1024} : std::vector<int>{64, 128, 256, 512, 1024};
    for (int side : sides) {
        Result rg, rn;
        if (gpu) rg = run(Eng::Gpu, 1, side, ids, w, batches, qs, 2);
        rn = run(Eng::Cpu, all, side, ids, w, batches, qs, 2);
        std::printf("| %d | %.1f | %s | %s | %s | %s | %s | %s |\n", side * side, double(n) / (double(side) * side),
                    rate(double(bs), rg.upd_ms).c_str(), rate(double(bs), rg.upd_dev_ms).c_str(),
                    rate(double(bs), rn.upd_ms).c_str(), rate(double(nq), rg.qry_ms).c_str(),
                    rate(double(nq), rg.qry_dev_ms).c_str(), rate(double(nq), rn.qry_ms).c_str());
        std::fflush(stdout);
    }
    return 0;
}
