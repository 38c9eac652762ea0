// GPU engine of the synopsis box estimates (see src/core/synopsis.hpp).
//
// One pass over the sample per tile of 8 boxes: a block holds the tile's
// bounds and a tile of sample rows in shared memory, each warp owns one box
// and its lanes stride over the rows, accumulating the shifted sums of
// BoxSums in fp64 (the per-row formulas are synopsis_math.hpp, the same code
// the CPU runs). The sample is split into chunks along grid.y so that few
// boxes still fill the GPU; the per-chunk partial sums are added up with
// cub::DeviceSegmentedReduce. Boxes go in batches, and the cancel callback is
// polled between batches.
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <vector>

#include "../src/core/synopsis.hpp"
#include "../src/core/synopsis_math.hpp"
#include "common.cuh"

namespace approx::synopsis {

namespace {

constexpr int kBoxesPerBlock = 8;  // one warp per box
constexpr int kThreads = kBoxesPerBlock * 32;
constexpr int kFields = 5;  // sc, ss, scc, sss, scs
constexpr int64_t kBoxTilesPerLaunch = 4096;
constexpr int kTargetBlocks = 2048;
constexpr int kMaxGridY = 65535;

int tile_rows_for(int d) {
    int rows = (4096 / d) / 32 * 32;  // 32 KB of sample per tile
    return rows < 32 ? 32 : rows;
}

size_t shared_bytes(int d, int tile_rows) {
    return sizeof(double) * (static_cast<size_t>(tile_rows) * d + 2 * kBoxesPerBlock * d) + sizeof(math::ColumnParams);
}

// grid.x: box tiles of this launch; grid.y: sample chunks.
// partial[(field * q + box) * chunks + chunk]; shift[2 * box + {0, 1}] = g of row 0.
__global__ void box_sums_kernel(const double* __restrict__ sample, int64_t m, int d, const double* __restrict__ lo,
                                const double* __restrict__ hi, int64_t q, int k, math::ColumnParams cols, int tile_rows,
                                int64_t chunk_rows, int chunks, double* __restrict__ partial,
                                double* __restrict__ shift) {
    extern __shared__ double smem[];
    double* tile = smem;                                           // tile_rows x d
    double* box_lo = tile + static_cast<size_t>(tile_rows) * d;    // kBoxesPerBlock x d
    double* box_hi = box_lo + kBoxesPerBlock * d;                  // kBoxesPerBlock x d
    // the column constants, read by every row: shared, not the parameter bank
    math::ColumnParams& cp = *reinterpret_cast<math::ColumnParams*>(box_hi + kBoxesPerBlock * d);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t box0 = static_cast<int64_t>(blockIdx.x) * kBoxesPerBlock;
    const int64_t box = box0 + warp;
    const int chunk = blockIdx.y;

    for (int t = threadIdx.x; t < kBoxesPerBlock * d; t += blockDim.x) {
        int64_t b = box0 + t / d;
        int j = t % d;
        box_lo[t] = b < q ? lo[b * d + j] : 0.0;
        box_hi[t] = b < q ? hi[b * d + j] : 0.0;
    }
    if (threadIdx.x == 0) cp = cols;
    __syncthreads();

    const double* my_lo = box_lo + warp * d;
    const double* my_hi = box_hi + warp * d;
    bool active = box < q;
    if (active)
        for (int j = 0; j < d; ++j)
            if (my_lo[j] > my_hi[j]) active = false;  // empty box: sums stay 0

    double c0 = 0, s0 = 0;
    if (active) {
        math::row_terms(sample, my_lo, my_hi, cp, d, k, c0, s0);  // row 0: the shift
        if (chunk == 0 && lane == 0) {
            shift[2 * box] = c0;
            shift[2 * box + 1] = s0;
        }
    } else if (box < q && chunk == 0 && lane == 0) {
        shift[2 * box] = 0;
        shift[2 * box + 1] = 0;
    }

    double acc[kFields] = {0, 0, 0, 0, 0};
    const int64_t begin = static_cast<int64_t>(chunk) * chunk_rows;
    const int64_t end = begin + chunk_rows < m ? begin + chunk_rows : m;
    for (int64_t t0 = begin; t0 < end; t0 += tile_rows) {
        const int rows = static_cast<int>(end - t0 < tile_rows ? end - t0 : tile_rows);
        __syncthreads();  // the previous tile is no longer read
        const double* src = sample + t0 * d;
        for (int t = threadIdx.x; t < rows * d; t += blockDim.x) tile[t] = src[t];
        __syncthreads();
        if (active) {
            for (int r = lane; r < rows; r += 32) {
                double c, g;
                math::row_terms(tile + static_cast<size_t>(r) * d, my_lo, my_hi, cp, d, k, c, g);
                double dc = c - c0, ds = g - s0;
                acc[0] += dc;
                acc[1] += ds;
                acc[2] += dc * dc;
                acc[3] += ds * ds;
                acc[4] += dc * ds;
            }
        }
    }
    for (int f = 0; f < kFields; ++f)
        for (int offset = 16; offset > 0; offset /= 2) acc[f] += __shfl_down_sync(0xffffffffu, acc[f], offset);
    if (box < q && lane == 0)
        for (int f = 0; f < kFields; ++f) partial[(static_cast<int64_t>(f) * q + box) * chunks + chunk] = acc[f];
}

struct SegmentStart {
    int chunks;
    __host__ __device__ int64_t operator()(int64_t i) const { return i * chunks; }
};

}  // namespace

Status box_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums) {
    for (int64_t b = 0; b < boxes.q; ++b) sums[b] = BoxSums();
    if (boxes.q == 0 || s.m == 0) return Status::Ok();
    const int d = s.d;
    if (d < 1 || d > kMaxDim) return Status::Error(StatusCode::InvalidArgument, "d out of range");
    const int k = boxes.agg == Aggregate::Count ? -1 : boxes.column;
    cudaStream_t stream;
    APPROX_TRY(gpu::begin(ctx, stream));

    const math::ColumnParams cols = column_params(s);
    const int tile_rows = tile_rows_for(d);
    const size_t smem = shared_bytes(d, tile_rows);

    const int64_t q_batch_max = std::min<int64_t>(boxes.q, kBoxTilesPerLaunch * kBoxesPerBlock);
    const int64_t tiles_max = (q_batch_max + kBoxesPerBlock - 1) / kBoxesPerBlock;
    // Chunks of the sample: enough blocks to fill the GPU, at least one row tile each.
    int64_t chunks = std::max<int64_t>(1, (kTargetBlocks + tiles_max - 1) / tiles_max);
    chunks = std::min<int64_t>(chunks, (s.m + tile_rows - 1) / tile_rows);
    chunks = std::min<int64_t>(chunks, kMaxGridY);
    chunks = std::max<int64_t>(chunks, (s.m + static_cast<int64_t>(INT32_MAX) - 1) / INT32_MAX);
    const int64_t chunk_rows = (s.m + chunks - 1) / chunks;

    Stopwatch transfer;
    gpu::DeviceBuffer<double> d_sample, d_lo, d_hi, d_partial, d_sums, d_shift;
    APPROX_TRY(d_sample.alloc(ctx, static_cast<size_t>(s.m) * d));
    APPROX_TRY(d_lo.alloc(ctx, static_cast<size_t>(q_batch_max) * d));
    APPROX_TRY(d_hi.alloc(ctx, static_cast<size_t>(q_batch_max) * d));
    APPROX_TRY(d_partial.alloc(ctx, static_cast<size_t>(kFields) * q_batch_max * chunks));
    APPROX_TRY(d_sums.alloc(ctx, static_cast<size_t>(kFields) * q_batch_max));
    APPROX_TRY(d_shift.alloc(ctx, static_cast<size_t>(2) * q_batch_max));
    APPROX_CUDA(cudaMemcpyAsync(d_sample.get(), s.sample, sizeof(double) * s.m * d, cudaMemcpyHostToDevice, stream));
    APPROX_CUDA(cudaStreamSynchronize(stream));
    gpu::add_transfer_ms(ctx, transfer.ms());

    std::vector<double> h_sums(static_cast<size_t>(kFields) * q_batch_max), h_shift(static_cast<size_t>(2) * q_batch_max);
    gpu::CubTemp temp;
    for (int64_t first = 0; first < boxes.q; first += q_batch_max) {
        if (ctx.cancelled()) return cancelled_status();
        const int64_t q = std::min<int64_t>(q_batch_max, boxes.q - first);
        const int64_t tiles = (q + kBoxesPerBlock - 1) / kBoxesPerBlock;
        APPROX_CUDA(cudaMemcpyAsync(d_lo.get(), boxes.lo + first * d, sizeof(double) * q * d, cudaMemcpyHostToDevice,
                                    stream));
        APPROX_CUDA(cudaMemcpyAsync(d_hi.get(), boxes.hi + first * d, sizeof(double) * q * d, cudaMemcpyHostToDevice,
                                    stream));
        dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks));
        box_sums_kernel<<<grid, kThreads, smem, stream>>>(d_sample.get(), s.m, d, d_lo.get(), d_hi.get(), q, k, cols,
                                                          tile_rows, chunk_rows, static_cast<int>(chunks),
                                                          d_partial.get(), d_shift.get());
        APPROX_CUDA_LAUNCHED();
        const double* reduced = d_partial.get();
        if (chunks > 1) {
            auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0),
                                                          SegmentStart{static_cast<int>(chunks)});
            const int64_t segments = kFields * q;
            APPROX_TRY(temp.run(ctx, [&](void* p, size_t& n) {
                return cub::DeviceSegmentedReduce::Sum(p, n, d_partial.get(), d_sums.get(), segments, starts,
                                                       starts + 1, stream);
            }));
            reduced = d_sums.get();
        }
        APPROX_CUDA(cudaMemcpyAsync(h_sums.data(), reduced, sizeof(double) * kFields * q, cudaMemcpyDeviceToHost,
                                    stream));
        APPROX_CUDA(cudaMemcpyAsync(h_shift.data(), d_shift.get(), sizeof(double) * 2 * q, cudaMemcpyDeviceToHost,
                                    stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        for (int64_t b = 0; b < q; ++b) {
            BoxSums& t = sums[first + b];
            t.c0 = h_shift[2 * b];
            t.s0 = h_shift[2 * b + 1];
            t.sc = h_sums[0 * q + b];
            t.ss = h_sums[1 * q + b];
            t.scc = h_sums[2 * q + b];
            t.sss = h_sums[3 * q + b];
            t.scs = h_sums[4 * q + b];
        }
    }
    return Status::Ok();
}

}  // namespace approx::synopsis
