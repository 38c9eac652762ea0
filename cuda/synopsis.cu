// GPU engine of the synopsis box estimates (see src/core/synopsis.hpp).
//
// The unit of work is a piece (a box over the sample rows of one stratum, or
// over every row): the host cuts each piece into tasks of at most task_rows
// consecutive rows, and one block runs one task. The block holds its box's
// bounds and NULL policies and the column constants in shared memory, its
// first thread computes the piece's shift (g of the piece's first row, the
// same value in every task of the piece), the threads stride over the task's
// rows accumulating the shifted sums of BoxSums and the support counter in
// fp64 (the per-row formulas are synopsis_math.hpp, the same code the CPU
// runs), and a cub::BlockReduce adds them up. So 1,000 strata of ten rows are
// 1,000 small blocks in one launch, and one box over 10^7 rows is about 2,048
// blocks of a few thousand rows each. The host adds the tasks of a piece in
// order and combines the pieces of a box (estimate_from_pieces, shared with
// the CPU). Tasks go in batches; the cancel callback is polled between them.
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <vector>

#include "core/synopsis.hpp"
#include "core/synopsis_internal.hpp"
#include "core/synopsis_math.hpp"
#include "common.cuh"

namespace approx::synopsis {

namespace {

constexpr int kThreads = 128;
constexpr int kFields = 6;  // sc, ss, scc, sss, scs, support
constexpr int64_t kMinTaskRows = 4 * kThreads;
constexpr int64_t kTargetBlocks = 2048;  // blocks that fill an H100 / H200 a few times over
constexpr int64_t kTasksPerLaunch = 1 << 16;

// One task: rows [begin, end) of box `box` (relative to the launch's first
// box), shift from row `shift_row` (the piece's first row).
struct Task {
    int64_t box;
    int64_t begin;
    int64_t end;
    int64_t shift_row;
};

struct Acc {
    double v[kFields];
};

struct AccSum {
    __device__ __forceinline__ Acc operator()(const Acc& a, const Acc& b) const {
        Acc r;
#pragma unroll
        for (int f = 0; f < kFields; ++f) r.v[f] = a.v[f] + b.v[f];
        return r;
    }
};

// partial[task * kFields + f]; shift[2 * task + {0, 1}] = (c0, s0) of the task's piece.
__global__ void __launch_bounds__(kThreads)
    piece_sums_kernel(const double* __restrict__ sample, int d, const double* __restrict__ lo,
                      const double* __restrict__ hi, const unsigned char* __restrict__ nulls, int k,
                      math::ColumnParams cols, const Task* __restrict__ tasks, double* __restrict__ partial,
                      double* __restrict__ shift) {
    __shared__ double box_lo[math::kMaxColumns], box_hi[math::kMaxColumns];
    __shared__ unsigned char box_nulls[math::kMaxColumns];
    __shared__ math::ColumnParams cp;  // read by every row: shared, not the parameter bank
    __shared__ double shift_c, shift_s;
    using BlockReduce = cub::BlockReduce<Acc, kThreads>;
    __shared__ typename BlockReduce::TempStorage tmp;

    const Task task = tasks[blockIdx.x];
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        box_lo[j] = lo[task.box * d + j];
        box_hi[j] = hi[task.box * d + j];
        box_nulls[j] = nulls ? nulls[task.box * d + j] : math::kNullAny;
    }
    if (threadIdx.x == 0) cp = cols;
    __syncthreads();
    if (threadIdx.x == 0) {
        double c0, s0;
        math::row_terms(sample + task.shift_row * d, box_lo, box_hi, cp, d, k, box_nulls, c0, s0);
        shift_c = c0;
        shift_s = s0;
    }
    __syncthreads();
    const double c0 = shift_c, s0 = shift_s;
    Acc acc;
#pragma unroll
    for (int f = 0; f < kFields; ++f) acc.v[f] = 0;
    for (int64_t i = task.begin + threadIdx.x; i < task.end; i += blockDim.x) {
        double c, g;
        math::row_terms(sample + i * d, box_lo, box_hi, cp, d, k, box_nulls, c, g);
        const double dc = c - c0, ds = g - s0;
        acc.v[0] += dc;
        acc.v[1] += ds;
        acc.v[2] += dc * dc;
        acc.v[3] += ds * ds;
        acc.v[4] += dc * ds;
        acc.v[5] += c > 0 ? 1.0 : 0.0;
    }
    const Acc total = BlockReduce(tmp).Reduce(acc, AccSum());
    if (threadIdx.x == 0) {
#pragma unroll
        for (int f = 0; f < kFields; ++f) partial[static_cast<int64_t>(blockIdx.x) * kFields + f] = total.v[f];
        shift[2 * static_cast<int64_t>(blockIdx.x)] = c0;
        shift[2 * static_cast<int64_t>(blockIdx.x) + 1] = s0;
    }
}

}  // namespace

Status piece_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n, const ExecContext& ctx,
                      BoxSums* sums) {
    for (int64_t i = 0; i < n; ++i) sums[i] = BoxSums();
    if (n == 0 || s.m == 0) return Status::Ok();
    const int d = s.d;
    if (d < 1 || d > kMaxDim) return Status::Error(StatusCode::InvalidArgument, "d out of range");
    const int k = boxes.agg == Aggregate::Count ? -1 : boxes.column;

    // Tasks: every non-empty piece cut into runs of at most task_rows rows.
    int64_t total_rows = 0;
    for (int64_t i = 0; i < n; ++i) total_rows += std::max<int64_t>(0, pieces[i].end - pieces[i].begin);
    const int64_t task_rows = std::max(kMinTaskRows, (total_rows + kTargetBlocks - 1) / kTargetBlocks);
    std::vector<Task> tasks;
    std::vector<int64_t> task_piece;
    std::vector<unsigned char> empty_box(static_cast<size_t>(boxes.q), 0);
    for (int64_t b = 0; b < boxes.q; ++b) empty_box[b] = box_empty(s, boxes, b) ? 1 : 0;
    for (int64_t i = 0; i < n; ++i) {
        const Piece& pc = pieces[i];
        if (empty_box[pc.box] || pc.end <= pc.begin) continue;
        for (int64_t r = pc.begin; r < pc.end; r += task_rows) {
            tasks.push_back(Task{pc.box, r, std::min(pc.end, r + task_rows), pc.begin});
            task_piece.push_back(i);
        }
    }
    const int64_t n_tasks = static_cast<int64_t>(tasks.size());
    if (n_tasks == 0) return Status::Ok();

    // Batches of tasks; each batch's boxes are a contiguous range (pieces come in box order).
    struct Batch {
        int64_t first, count, box0, boxes;
    };
    std::vector<Batch> batches;
    int64_t max_tasks = 0, max_boxes = 0;
    for (int64_t first = 0; first < n_tasks; first += kTasksPerLaunch) {
        const int64_t count = std::min(kTasksPerLaunch, n_tasks - first);
        const int64_t box0 = tasks[first].box, box1 = tasks[first + count - 1].box;
        batches.push_back(Batch{first, count, box0, box1 - box0 + 1});
        max_tasks = std::max(max_tasks, count);
        max_boxes = std::max(max_boxes, box1 - box0 + 1);
    }

    cudaStream_t stream;
    APPROX_TRY(gpu::begin(ctx, stream));
    const math::ColumnParams cols = column_params(s);
    Stopwatch transfer;
    gpu::DeviceBuffer<double> d_sample, d_lo, d_hi, d_partial, d_shift;
    gpu::DeviceBuffer<unsigned char> d_nulls;
    gpu::DeviceBuffer<Task> d_tasks;
    // The GPU service keeps a synopsis's sample resident between calls.
    const size_t sample_bytes = sizeof(double) * static_cast<size_t>(s.m) * d;
    const double* sample = static_cast<const double*>(gpu::resident_device(ctx, s.sample, sample_bytes));
    if (sample == nullptr) APPROX_TRY(d_sample.alloc(ctx, static_cast<size_t>(s.m) * d));
    APPROX_TRY(d_lo.alloc(ctx, static_cast<size_t>(max_boxes) * d));
    APPROX_TRY(d_hi.alloc(ctx, static_cast<size_t>(max_boxes) * d));
    if (boxes.nulls) APPROX_TRY(d_nulls.alloc(ctx, static_cast<size_t>(max_boxes) * d));
    APPROX_TRY(d_tasks.alloc(ctx, static_cast<size_t>(max_tasks)));
    APPROX_TRY(d_partial.alloc(ctx, static_cast<size_t>(kFields) * max_tasks));
    APPROX_TRY(d_shift.alloc(ctx, static_cast<size_t>(2) * max_tasks));
    if (sample == nullptr) {
        APPROX_CUDA(cudaMemcpyAsync(d_sample.get(), s.sample, sample_bytes, cudaMemcpyHostToDevice, stream));
        sample = d_sample.get();
    } else if (ctx.stats) {
        ctx.stats->add("sample_resident", 1);
    }
    APPROX_CUDA(cudaStreamSynchronize(stream));
    gpu::add_transfer_ms(ctx, transfer.ms());

    std::vector<double> h_partial(static_cast<size_t>(kFields) * max_tasks),
        h_shift(static_cast<size_t>(2) * max_tasks);
    std::vector<Task> h_tasks(static_cast<size_t>(max_tasks));
    std::vector<unsigned char> started(static_cast<size_t>(n), 0);
    for (const Batch& bt : batches) {
        if (ctx.cancelled()) return cancelled_status();
        for (int64_t t = 0; t < bt.count; ++t) {
            h_tasks[t] = tasks[bt.first + t];
            h_tasks[t].box -= bt.box0;
        }
        APPROX_CUDA(cudaMemcpyAsync(d_tasks.get(), h_tasks.data(), sizeof(Task) * bt.count, cudaMemcpyHostToDevice,
                                    stream));
        APPROX_CUDA(cudaMemcpyAsync(d_lo.get(), boxes.lo + bt.box0 * d, sizeof(double) * bt.boxes * d,
                                    cudaMemcpyHostToDevice, stream));
        APPROX_CUDA(cudaMemcpyAsync(d_hi.get(), boxes.hi + bt.box0 * d, sizeof(double) * bt.boxes * d,
                                    cudaMemcpyHostToDevice, stream));
        if (boxes.nulls)
            APPROX_CUDA(cudaMemcpyAsync(d_nulls.get(), boxes.nulls + bt.box0 * d, bt.boxes * d, cudaMemcpyHostToDevice,
                                        stream));
        piece_sums_kernel<<<static_cast<unsigned>(bt.count), kThreads, 0, stream>>>(
            sample, d, d_lo.get(), d_hi.get(), boxes.nulls ? d_nulls.get() : nullptr, k, cols, d_tasks.get(),
            d_partial.get(), d_shift.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_CUDA(cudaMemcpyAsync(h_partial.data(), d_partial.get(), sizeof(double) * kFields * bt.count,
                                    cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaMemcpyAsync(h_shift.data(), d_shift.get(), sizeof(double) * 2 * bt.count,
                                    cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        // A piece's tasks, in row order (a piece may span two batches).
        for (int64_t t = 0; t < bt.count; ++t) {
            const int64_t i = task_piece[bt.first + t];
            BoxSums& out = sums[i];
            if (!started[i]) {
                started[i] = 1;
                out.c0 = h_shift[2 * t];
                out.s0 = h_shift[2 * t + 1];
            }
            const double* v = h_partial.data() + t * kFields;
            out.sc += v[0];
            out.ss += v[1];
            out.scc += v[2];
            out.sss += v[3];
            out.scs += v[4];
            out.support += static_cast<int64_t>(v[5]);
        }
    }
    return Status::Ok();
}

}  // namespace approx::synopsis
