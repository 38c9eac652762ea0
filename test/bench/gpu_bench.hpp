// Benchmark-only GPU code (test/bench/gpu_bench_kernels.cu, linked into the
// benchmark binaries of a CUDA build, never into approx_gpu.so). Plain C++.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/topk.hpp"

namespace approx::topk {

struct GpuSelectTiming {
    double ms_median = 0;  // device time of select() on resident data (CUDA events), median of runs
    double ms_min = 0;
    double ms_upload = 0;  // host -> device copy of ids and scores (pageable)
    double ms_floor = 0;   // reading ids and scores once (a plain streaming kernel), median
};

#ifdef APPROX_WITH_CUDA
// The data is uploaded once. For each ks[i]: warm-up, then `runs` timed
// selections; out_ids[i] (room for ks[i], may be null) receives the last run's ids.
Status gpu_select_bench(const int64_t* ids, const double* scores, size_t n, const size_t* ks, int nk, Order order,
                        int runs, const ExecContext& ctx, GpuSelectTiming* timing, int64_t* const* out_ids) noexcept;
#endif

}  // namespace approx::topk
