// Benchmark-only GPU code: the top-k selection timed on device-resident data
// (CUDA events) against the bandwidth floor, a kernel that reads ids and
// scores once. Built into build/*_bench of a CUDA build only (Makefile).
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/topk_device.cuh"
#include "gpu_bench.hpp"

namespace approx::topk {

namespace {

constexpr int kBlock = 256;

// Reads ids and scores once (the bandwidth floor of any selection).
__global__ void __launch_bounds__(kBlock)
    read_floor_kernel(const double* scores, const int64_t* ids, size_t n, unsigned long long* sink) {
    using BR = cub::BlockReduce<unsigned long long, kBlock>;
    __shared__ typename BR::TempStorage tmp;
    unsigned long long acc = 0;
    const size_t n2 = n / 2;
    const double2* s2 = reinterpret_cast<const double2*>(scores);
    const longlong2* i2 = reinterpret_cast<const longlong2*>(ids);
    for (size_t i = size_t(blockIdx.x) * kBlock + threadIdx.x; i < n2; i += size_t(gridDim.x) * kBlock) {
        double2 s = s2[i];
        longlong2 d = i2[i];
        acc += static_cast<unsigned long long>(__double_as_longlong(s.x) ^ __double_as_longlong(s.y)) +
               static_cast<unsigned long long>(d.x ^ d.y);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0 && (n & 1))
        acc += static_cast<unsigned long long>(__double_as_longlong(scores[n - 1]) ^ ids[n - 1]);
    unsigned long long total = BR(tmp).Sum(acc);
    if (threadIdx.x == 0) atomicAdd(sink, total);
}

}  // namespace

Status gpu_select_bench(const int64_t* ids, const double* scores, size_t n, const size_t* ks, int nk, Order order,
                        int runs, const ExecContext& ctx, GpuSelectTiming* timing, int64_t* const* out_ids) noexcept {
    using namespace detail;
    using gpu::DeviceBuffer;
    return guarded([&]() -> Status {
        if (n == 0 || runs < 1) return Status::Error(StatusCode::InvalidArgument, "empty benchmark");
        cudaStream_t s;
        APPROX_TRY(gpu::begin(ctx, s));
        DeviceBuffer<double> d_scores;
        DeviceBuffer<int64_t> d_ids;
        double ms_upload;
        APPROX_TRY(upload_inputs(ctx, s, ids, scores, n, d_ids, d_scores, ms_upload));

        cudaEvent_t e0, e1;
        APPROX_CUDA(cudaEventCreate(&e0));
        APPROX_CUDA(cudaEventCreate(&e1));
        struct Events {
            cudaEvent_t a, b;
            ~Events() {
                cudaEventDestroy(a);
                cudaEventDestroy(b);
            }
        } events{e0, e1};
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };

        DeviceBuffer<unsigned long long> sink;
        APPROX_TRY(sink.alloc(ctx, 1));
        std::vector<double> floor_ms;
        const unsigned floor_grid = gpu::grid_for(n / 2 + 1, kBlock, int64_t(gpu::sm_count()) * 8);
        for (int r = 0; r < runs + 1; ++r) {
            APPROX_CUDA(cudaEventRecord(e0, s));
            read_floor_kernel<<<floor_grid, kBlock, 0, s>>>(d_scores.get(), d_ids.get(), n, sink.get());
            APPROX_CUDA_LAUNCHED();
            APPROX_CUDA(cudaEventRecord(e1, s));
            APPROX_CUDA(cudaEventSynchronize(e1));
            float ms = 0;
            APPROX_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            if (r > 0) floor_ms.push_back(ms);
        }

        SelectWorkPtr w(new_select_work());
        for (int q = 0; q < nk; ++q) {
            size_t kk = std::min(ks[q], n);
            DeviceBuffer<uint64_t> d_idx;
            DeviceBuffer<int64_t> d_out;
            APPROX_TRY(d_idx.alloc(ctx, kk));
            APPROX_TRY(d_out.alloc(ctx, kk));
            std::vector<double> ms_runs;
            for (int r = 0; r < runs + 2; ++r) {  // two warm-up runs
                APPROX_CUDA(cudaEventRecord(e0, s));
                APPROX_TRY(device_select(d_scores.get(), d_ids.get(), n, kk, order, ctx, s, *w, d_idx.get()));
                APPROX_CUDA(cudaEventRecord(e1, s));
                APPROX_CUDA(cudaEventSynchronize(e1));
                float ms = 0;
                APPROX_CUDA(cudaEventElapsedTime(&ms, e0, e1));
                if (r >= 2) ms_runs.push_back(ms);
            }
            timing[q].ms_median = median(ms_runs);
            timing[q].ms_min = *std::min_element(ms_runs.begin(), ms_runs.end());
            timing[q].ms_upload = ms_upload;
            timing[q].ms_floor = median(floor_ms);
            if (out_ids && out_ids[q]) {
                APPROX_TRY(gather(d_idx.get(), kk, d_ids.get(), d_scores.get(), d_out.get(), nullptr, s));
                APPROX_CUDA(cudaMemcpyAsync(out_ids[q], d_out.get(), kk * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
                APPROX_CUDA(cudaStreamSynchronize(s));
            }
        }
        return Status::Ok();
    });
}

}  // namespace approx::topk
