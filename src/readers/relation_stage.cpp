// The relation reader's GPU staging (relation_reader.h, stage_for_gpu): when
// the engine call will run on the GPU, the rows the backend appends to the
// result are also handed, 64K rows at a time, to the GPU runtime's staging
// (core/gpu.hpp), whose uploads run while the workers go on reading. The
// device copies belong to a StagedInput freed by release_staged() or, on an
// ERROR, by its memory context's reset callback. Staging is an optimisation:
// any failure drops it and the engine uploads as before.
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"

extern "C" {
#include "utils/memutils.h"
}

#include "core/gpu.hpp"

namespace gpu = approx::gpu;

struct StagedInput {
    gpu::StagedColumns* cols;
    int64 queued;  // rows handed to the runtime
    double ms;     // the backend's time in staging calls
    MemoryContextCallback cb;
};

namespace {

constexpr int64 kStageRows = 65536;  // rows per hand-over (the pinned ring holds 8 MB)

// Frees the device copies (also the memory context's reset callback).
void drop(void* arg) {
    StagedInput* s = static_cast<StagedInput*>(arg);
    if (s->cols) gpu::stage_free(s->cols);
    s->cols = nullptr;
}

}  // namespace

bool relscan::upload_while_reading = true;

StagedInput* relscan::stage_start(int ncols, int64 expected_rows) {
    if (!upload_while_reading || expected_rows <= 0) return nullptr;
    approx::ExecContext ctx = engine_settings();
    // With the GPU service the rows go to its staging area instead (and this
    // backend keeps no CUDA context).
    if (ctx.service) return nullptr;
    // The engine's own device decision, asked before the call -- about the
    // rows the staging makes room for (the statistics' count plus 16 chunks),
    // not the rows the engine will get: under `auto` a table smaller than
    // gpu_min_rows is staged too, and its engine call then runs on the CPU.
    if (!approx::will_run_on_gpu(ctx, expected_rows)) return nullptr;
    gpu::StagedColumns* cols = nullptr;
    approx::Status st = approx::guarded([&] { return gpu::stage_begin(ctx, ncols, expected_rows, cols); });
    if (!st.ok() || cols == nullptr) return nullptr;
    StagedInput* s = static_cast<StagedInput*>(palloc0(sizeof(StagedInput)));
    s->cols = cols;
    s->cb.func = drop;
    s->cb.arg = s;
    MemoryContextRegisterResetCallback(CurrentMemoryContext, &s->cb);
    return s;
}

void relscan::stage_tail(StagedInput* s, const ColumnsView& view, int64 rows, bool final) {
    if (s == nullptr || s->cols == nullptr) return;
    if (rows - s->queued < (final ? 1 : kStageRows)) return;
    double t0 = glue_clock_ms();
    bool staged = false;
    const void* host[kMaxCols];
    for (int c = 0; c < kMaxCols; ++c) host[c] = view.values[c];
    approx::Status st =
        approx::guarded([&] { return gpu::stage_rows(s->cols, host, s->queued, rows - s->queued, staged); });
    s->ms += glue_clock_ms() - t0;
    if (!st.ok() || !staged) {
        drop(s);
        return;
    }
    s->queued = rows;
}

bool relscan::stage_done(StagedInput* s, const ColumnsView& view, int64 rows) {
    if (s == nullptr || s->cols == nullptr) return false;
    stage_tail(s, view, rows, true);
    if (s->cols == nullptr) return false;
    const void* host[kMaxCols];
    for (int c = 0; c < kMaxCols; ++c) host[c] = view.values[c];
    double t0 = glue_clock_ms();
    approx::Status st = approx::guarded([&] { return gpu::stage_finish(s->cols, host, rows); });
    s->ms += glue_clock_ms() - t0;
    if (!st.ok() || s->queued != rows) {
        drop(s);
        return false;
    }
    return true;
}

double relscan::stage_ms(const StagedInput* s) { return s ? s->ms : 0; }
double relscan::stage_wait_ms(const StagedInput* s) { return s && s->cols ? gpu::stage_wait_ms(s->cols) : 0; }

const gpu::StagedColumns* staged_columns(const QueryColumns* in) { return in->staged ? in->staged->cols : nullptr; }

void release_staged(const QueryColumns* in) {
    if (in->staged) drop(in->staged);
}
