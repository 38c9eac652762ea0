// Moving objects: what the CPU engine (moving_cpu.cpp) and the GPU engine
// (cuda/moving.cu) share -- the grid map, the grid and budget checks -- and
// create(), which picks the engine (or the GPU service) for a new index.
#include "moving.hpp"

#include <cmath>
#include <cstdio>

#include "gpu.hpp"
#include "service.hpp"

namespace approx::moving {

GridMap grid_map(const Grid& g) {
    GridMap m;
    m.xmin = g.xmin;
    m.ymin = g.ymin;
    m.xmax = g.xmax;
    m.ymax = g.ymax;
    m.nx = g.cells_x;
    m.ny = g.cells_y;
    m.cw = (g.xmax - g.xmin) / g.cells_x;
    m.ch = (g.ymax - g.ymin) / g.cells_y;
    return m;
}

Status check_grid(const Grid& g, int64_t max_cells) {
    if (!std::isfinite(g.xmin) || !std::isfinite(g.ymin) || !std::isfinite(g.xmax) || !std::isfinite(g.ymax))
        return Status::Error(StatusCode::InvalidArgument, "the extent must be finite");
    if (!(g.xmin < g.xmax) || !(g.ymin < g.ymax))
        return Status::Error(StatusCode::InvalidArgument,
                             "the extent must have xmin < xmax and ymin < ymax (got [%g, %g] x [%g, %g])", g.xmin,
                             g.xmax, g.ymin, g.ymax);
    if (g.cells_x < 1 || g.cells_y < 1)
        return Status::Error(StatusCode::InvalidArgument, "cells_x and cells_y must be at least 1 (got %d and %d)",
                             g.cells_x, g.cells_y);
    int64_t cells = int64_t(g.cells_x) * g.cells_y;
    if (cells > kMaxCells)
        return Status::Error(StatusCode::ProgramLimit, "%lld cells (%d x %d) exceed the limit of %lld",
                             static_cast<long long>(cells), g.cells_x, g.cells_y, static_cast<long long>(kMaxCells));
    if (cells > max_cells)
        return Status::Error(StatusCode::ProgramLimit, "%lld cells (%d x %d) exceed approx_gpu.moving_max_cells (%lld)",
                             static_cast<long long>(cells), g.cells_x, g.cells_y, static_cast<long long>(max_cells));
    GridMap m = grid_map(g);
    if (!std::isfinite(g.xmax - g.xmin) || !std::isfinite(g.ymax - g.ymin) || !(m.cw > 0) || !(m.ch > 0))
        return Status::Error(StatusCode::InvalidArgument, "the extent is too large or too small for its cell count");
    return Status::Ok();
}

Status check_budget(const MemoryBudget& b, int64_t held, int64_t extra, const char* what) {
    if (b.limit <= 0 || extra <= 0 || held + extra <= b.limit - b.others) return Status::Ok();
    return Status::Error(StatusCode::ProgramLimit,
                         "%s needs %lld more bytes: the index would hold %lld bytes and the session's other "
                         "moving-object indexes hold %lld, more than approx_gpu.moving_session_memory (%lld bytes)",
                         what, static_cast<long long>(extra), static_cast<long long>(held + extra),
                         static_cast<long long>(b.others), static_cast<long long>(b.limit));
}

Status create(const Grid& g, int64_t max_cells, const ExecContext& caller, Index*& out, const MemoryBudget& budget) {
    out = nullptr;
    APPROX_TRY(check_grid(g, max_cells));
    ExecContext ctx = caller;
    Status st;
    // With the GPU service in use the index lives there (a proxy here).
    if (service::try_run(ctx, INT64_MAX, st,
                         [&](const ExecContext& c) { return create_in_service(g, max_cells, c, out, budget); }))
        return st;
    // Like dispatch(): 'gpu' -> the GPU engine (an error without one), 'auto'
    // -> the GPU engine when one is usable (the CPU one when its allocation
    // fails), 'cpu' -> the CPU engine. Input size plays no part: an index
    // grows after it is created.
    Device device = Device::Cpu;
    APPROX_TRY(guarded([&] { return choose_device(ctx, INT64_MAX, device); }));
    if (device == Device::Gpu) {
        st = guarded(APPROX_GPU(create_gpu(g, max_cells, ctx, out, budget)));
        if (st.code != StatusCode::GpuOutOfMemory || ctx.mode != DeviceMode::Auto) return st;
        if (ctx.stats)
            std::snprintf(ctx.stats->notice, sizeof ctx.stats->notice,
                          "GPU allocation failed; the index uses the CPU engine");
    }
    return create_cpu(g, max_cells, ctx, out, budget);
}

}  // namespace approx::moving
