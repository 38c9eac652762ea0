// CPU engine of the KDE pair sums (kde_internal.hpp): fp64, tiled rows,
// threads from parallel_for, symmetry (only i < j is computed).
//
// Results do not depend on the thread count: the work is split into a fixed
// set of tasks (by n and nh only), each writes its own partial sums, and the
// partials are added in task order. Every task pairs row tile t with row tile
// NT-1-t, so all tasks carry the same number of pairs.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kde_internal.hpp"

namespace approx::kde::detail {

namespace {

// Row tiles of `rows` rows; task t covers tiles t and nt-1-t.
struct Folding {
    size_t n = 0, rows = 0, tiles = 0, tasks = 0;

    Folding(size_t n_, size_t max_tasks) : n(n_) {
        rows = std::max<size_t>(32, (n + 2 * max_tasks - 1) / (2 * max_tasks));
        tiles = (n + rows - 1) / rows;
        tasks = (tiles + 1) / 2;
    }
    // Calls row(i) for every row of task t, polling the cancel callback
    // between rows (a row of a large input is a long loop).
    template <class F>
    Status rows_of(size_t t, const ExecContext& ctx, F&& row) const {
        size_t tile[2] = {t, tiles - 1 - t};
        for (int k = 0; k < (tile[1] == tile[0] ? 1 : 2); ++k)
            for (size_t i = tile[k] * rows; i < std::min(n, (tile[k] + 1) * rows); ++i) {
                if (ctx.cancelled()) return cancelled_status();
                row(i);
            }
        return Status::Ok();
    }
};

template <int R>
double hermite_r(double t2) {
    if (R == 2) return t2 - 1.0;
    if (R == 4) return (t2 - 6.0) * t2 + 3.0;
    return ((t2 - 15.0) * t2 + 45.0) * t2 - 15.0;
}

class CpuPsi final : public PsiSums {
public:
    CpuPsi(const double* z, size_t n, const ExecContext& ctx) : z_(z), n_(n), ctx_(ctx) {}

    Status sum(int r, double g, double& out) override {
        switch (r) {
            case 2: return run<2>(g, out);
            case 4: return run<4>(g, out);
            case 6: return run<6>(g, out);
        }
        return Status::Error(StatusCode::Internal, "psi order %d not supported", r);
    }

private:
    template <int R>
    Status run(double g, double& out) {
        const size_t n = n_;
        std::vector<double> u(n);  // z / g: pair differences in units of g
        for (size_t i = 0; i < n; ++i) u[i] = z_[i] / g;
        Folding fold(n, 1 << 16);
        std::vector<double> part(fold.tasks, 0.0);
        const double* uu = u.data();
        APPROX_TRY(parallel_for(ctx_, fold.tasks, [&](size_t t, size_t) -> Status {
            double s = 0;
            APPROX_TRY(fold.rows_of(t, ctx_, [&](size_t i) {
                const double ui = uu[i];
                double si = 0;
                for (size_t j = i + 1; j < n; ++j) {
                    double d = ui - uu[j];
                    double t2 = d * d;
                    si += hermite_r<R>(t2) * std::exp(-0.5 * t2);
                }
                s += si;
            }));
            part[t] = s;
            return Status::Ok();
        }));
        double pairs = 0;
        for (double p : part) pairs += p;
        // all ordered pairs: the n diagonal terms K_r(0) plus both orders of i < j
        out = (static_cast<double>(n) * hermite_r<R>(0.0) + 2.0 * pairs) * kPhi0;
        return Status::Ok();
    }

    const double* z_;
    size_t n_;
    const ExecContext& ctx_;
};

class CpuLscv final : public LscvSums {
public:
    CpuLscv(const double* z, size_t n, int d, const ExecContext& ctx) : z_(z), n_(n), d_(d), ctx_(ctx) {}

    Status sums(const double* h, int nh, double* s4, double* s2) override {
        // h values in chunks, so the per-task partials stay small for any grid.
        constexpr int kChunk = 256;
        for (int k0 = 0; k0 < nh; k0 += kChunk) {
            int m = std::min(kChunk, nh - k0);
            APPROX_TRY(chunk(h + k0, m, s4 + k0, s2 + k0));
        }
        return Status::Ok();
    }

private:
    Status chunk(const double* h, int nh, double* s4, double* s2) {
        const size_t n = n_;
        const int d = d_;
        std::vector<double> c(static_cast<size_t>(nh));  // exp(-Y c_k) = exp(-Y / (4 h_k^2))
        for (int k = 0; k < nh; ++k) c[k] = 1.0 / (4.0 * h[k] * h[k]);
        Folding fold(n, 4096);
        const size_t stride = 2 * static_cast<size_t>(nh);
        std::vector<double> part(fold.tasks * stride, 0.0);
        const double* z = z_;
        const double* cc = c.data();
        APPROX_TRY(parallel_for(ctx_, fold.tasks, [&](size_t t, size_t) -> Status {
            double* a4 = &part[t * stride];
            double* a2 = a4 + nh;
            return fold.rows_of(t, ctx_, [&](size_t i) {
                const double* zi = z + i * d;
                for (size_t j = i + 1; j < n; ++j) {
                    const double* zj = z + j * d;
                    double y = 0;
                    for (int k = 0; k < d; ++k) {
                        double v = zi[k] - zj[k];
                        y += v * v;
                    }
                    for (int k = 0; k < nh; ++k) {
                        double e = std::exp(-y * cc[k]);
                        a4[k] += e;
                        a2[k] += e * e;  // exp(-Y / (2 h^2)) = exp(-Y / (4 h^2))^2
                    }
                }
            });
        }));
        for (int k = 0; k < nh; ++k) {
            double x4 = 0, x2 = 0;
            for (size_t t = 0; t < fold.tasks; ++t) {
                x4 += part[t * stride + k];
                x2 += part[t * stride + nh + k];
            }
            s4[k] = x4;
            s2[k] = x2;
        }
        return Status::Ok();
    }

    const double* z_;
    size_t n_;
    int d_;
    const ExecContext& ctx_;
};

}  // namespace

Status cpu_psi_sums(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out) {
    out.reset(new CpuPsi(z, n, ctx));
    return Status::Ok();
}

Status cpu_lscv_sums(const double* z, size_t n, int d, const ExecContext& ctx, std::unique_ptr<LscvSums>& out) {
    out.reset(new CpuLscv(z, n, d, ctx));
    return Status::Ok();
}

}  // namespace approx::kde::detail
