// The GPU top-k selection on device-resident data (cuda/topk.cu), for CUDA
// code outside topk.cu: the benchmark times it on data uploaded once
// (test/bench/gpu_bench_kernels.cu). The engine API is src/core/topk.hpp.
#pragma once

#include <memory>

#include "core/topk.hpp"
#include "common.cuh"

namespace approx::topk::detail {

// Scratch space of the device selection, kept between calls so that
// steady-state calls allocate nothing (defined in topk.cu).
struct SelectWork;
SelectWork* new_select_work();
struct SelectWorkDeleter {
    void operator()(SelectWork* w) const noexcept;
};
using SelectWorkPtr = std::unique_ptr<SelectWork, SelectWorkDeleter>;

// The k best (0 < k <= n) of n device-resident pairs: their positions, best
// first, into d_out (room for k), queued on s.
Status device_select(const double* d_scores, const int64_t* d_ids, size_t n, size_t k, Order order,
                     const ExecContext& ctx, cudaStream_t s, SelectWork& w, uint64_t* d_out);

// d_out_ids[i] = d_ids[d_idx[i]], d_out_scores[i] = d_scores[d_idx[i]] (either output may be null).
Status gather(const uint64_t* d_idx, size_t k, const int64_t* d_ids, const double* d_scores, int64_t* d_out_ids,
              double* d_out_scores, cudaStream_t s);

// Copies the n (id, score) inputs to the device on stream s (allocating
// d_ids, d_scores) and waits; ms = the copy's time.
Status upload_inputs(const ExecContext& ctx, cudaStream_t s, const int64_t* ids, const double* scores, size_t n,
                     gpu::DeviceBuffer<int64_t>& d_ids, gpu::DeviceBuffer<double>& d_scores, double& ms);

}  // namespace approx::topk::detail
