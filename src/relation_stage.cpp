// The relation reader's GPU staging (relation_reader.h, stage_for_gpu): when
// the engine call will run on the GPU, the rows the backend appends to the
// result are also handed, 64K rows at a time, to the GPU runtime's staging
// (core/gpu.hpp), whose uploads run while the workers go on reading. The
// device copies belong to a StagedInput freed by release_staged() or, on an
// ERROR, by its memory context's reset callback. Staging is an optimisation:
// any failure drops it and the engine uploads as before.
#include "relation_reader.h"

#include "relation_scan.h"

extern "C" {
#include "utils/memutils.h"
}

#include "core/gpu.hpp"

namespace gpu = approx::gpu;

struct StagedInput {
    gpu::StagedColumns* cols;
    double ms;            // the backend's time in staging calls
    int64 staged_rows;    // rows handed over (each range once)
    int refs;   // the memory context's callback, and the DSM detach callback when registered
    MemoryContextCallback cb;
};

namespace {

void unref(StagedInput* s) {
    if (--s->refs == 0) pfree(s);
}

// The reading call's memory context goes (end of the call, or an ERROR).
void context_gone(void* arg) {
    StagedInput* s = static_cast<StagedInput*>(arg);
    if (s->cols) gpu::stage_free(s->cols);
    s->cols = nullptr;
    unref(s);
}

// The leader detaches the chunk pool (normally before the call returns; on
// an ERROR during the abort, before the memory context goes): no upload may
// still read it, and it must be unregistered before it is unmapped.
void pool_detached(dsm_segment*, Datum arg) {
    StagedInput* s = reinterpret_cast<StagedInput*>(DatumGetPointer(arg));
    if (s->cols) gpu::stage_unregister(s->cols);
    unref(s);
}

void drop(StagedInput* s) {
    if (s->cols) gpu::stage_free(s->cols);
    s->cols = nullptr;
}

}  // namespace

bool relscan::upload_while_reading = true;

StagedInput* relscan::stage_start(int ncols, int64 expected_rows) {
    if (!upload_while_reading || expected_rows <= 0) return nullptr;
    approx::ExecContext ctx = engine_settings();
    approx::Device device = approx::Device::Cpu;
    gpu::StagedColumns* cols = nullptr;
    approx::Status st = approx::guarded([&] {
        approx::Status s = approx::choose_device(ctx, expected_rows, device);
        if (!s.ok() || device != approx::Device::Gpu) return approx::Status::Ok();
        return gpu::stage_begin(ctx, ncols, expected_rows, cols);
    });
    if (!st.ok() || cols == nullptr) return nullptr;
    // In TopMemoryContext: the DSM detach callback may outlive the call's context.
    StagedInput* s = static_cast<StagedInput*>(MemoryContextAllocZero(TopMemoryContext, sizeof(StagedInput)));
    s->cols = cols;
    s->refs = 1;
    s->cb.func = context_gone;
    s->cb.arg = s;
    MemoryContextRegisterResetCallback(CurrentMemoryContext, &s->cb);
    return s;
}

bool relscan::stage_register_chunks(StagedInput* s, dsm_segment* seg, void* pool, Size bytes, int nchunks) {
    if (s == nullptr || s->cols == nullptr || seg == nullptr || nchunks < 1) return false;
    double t0 = glue_clock_ms();
    approx::Status st = approx::guarded([&] { return gpu::stage_register(s->cols, pool, bytes, nchunks); });
    s->ms += glue_clock_ms() - t0;
    if (!st.ok()) return false;
    ++s->refs;
    on_dsm_detach(seg, pool_detached, PointerGetDatum(s));
    return true;
}

bool relscan::stage_range(StagedInput* s, const ColumnsView& src, int64 first, int64 n, int chunk) {
    if (s == nullptr || s->cols == nullptr || n <= 0) return false;
    double t0 = glue_clock_ms();
    bool staged = false, direct = false;
    const void* host[kMaxCols];
    for (int c = 0; c < kMaxCols; ++c) host[c] = src.values[c];
    approx::Status st = approx::guarded([&] {
        if (chunk >= 0) {
            APPROX_TRY(gpu::stage_direct(s->cols, host, first, n, chunk, direct));
            if (direct) {
                staged = true;
                return approx::Status::Ok();
            }
        }
        return gpu::stage_rows(s->cols, host, first, n, staged);
    });
    s->ms += glue_clock_ms() - t0;
    if (!st.ok() || !staged) {
        drop(s);
        return false;
    }
    s->staged_rows += n;
    return direct;
}

bool relscan::stage_chunk_done(StagedInput* s, int chunk) {
    return s == nullptr || s->cols == nullptr || gpu::stage_done(s->cols, chunk);
}

bool relscan::stage_done(StagedInput* s, const ColumnsView& view, int64 rows) {
    if (s == nullptr || s->cols == nullptr) return false;
    const void* host[kMaxCols];
    for (int c = 0; c < kMaxCols; ++c) host[c] = view.values[c];
    double t0 = glue_clock_ms();
    approx::Status st = approx::guarded([&] { return gpu::stage_finish(s->cols, host, rows); });
    s->ms += glue_clock_ms() - t0;
    if (!st.ok() || s->staged_rows != rows) {  // every row staged once: the runtime bound the arrays
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
