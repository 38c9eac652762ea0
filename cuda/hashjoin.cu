// Hashed joins: the GPU engine (hybrid FKS + cuckoo, Alcantara et al.).
//
// Build: phase 1 counts keys per bucket with atomics (each key keeps its
// rank in its bucket), an exclusive scan (CUB) turns the counts into bucket
// offsets and a scatter writes the pairs bucket by bucket; a bucket over
// kBucketCapacity makes phase 1 start again with a new seed. Phase 2 runs one
// 512-thread block per bucket: every thread holds one key and the block
// builds a 3-sub-table cuckoo table of slot -> key index in shared memory
// (unplaced keys write their slot, evicted ones move to their next
// sub-table), restarting with new multipliers when a round limit passes,
// then writes the bucket's 576 slots coalesced. The table's kernels and build
// phases are hashjoin_table.cuh (shared with the unit tests' seam).
// Join: CUB radix sort of the build side, run-length encoding into distinct
// keys with (offset, count), a table over the distinct keys, one probe pass
// counting matches, an exclusive scan and a load-balanced emit per output row.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>

#include "hashjoin_table.cuh"

namespace approx::hashjoin {

namespace {

// ---- join kernels ----------------------------------------------------------------------

// Matches of each probe row: its run among the distinct build keys (or -1)
// and that run's length.
__global__ void probe_kernel(const int64_t* __restrict__ keys, size_t m, TableView tv,
                             const int64_t* __restrict__ run_off, int64_t* __restrict__ run,
                             int64_t* __restrict__ matches) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= m) return;
    int64_t r = -1;
    int64_t c = 0;
    if (lookup(tv.slots, tv.meta, tv.buckets, tv.seed, keys[i], r))
        c = run_off[r + 1] - run_off[r];
    else
        r = -1;
    if (run) run[i] = r;
    matches[i] = c;
}

// Output rows [o0, o0 + len): each finds its probe row by binary search over
// out_off (exclusive scan of the matches, m + 1 entries), so one probe row
// with millions of matches is spread over many threads.
__global__ void emit_kernel(int64_t o0, size_t len, const int64_t* __restrict__ out_off, size_t m,
                            const int64_t* __restrict__ run, const int64_t* __restrict__ run_off,
                            const int64_t* __restrict__ sorted_values, const int64_t* __restrict__ probe_keys,
                            const int64_t* __restrict__ probe_values, int64_t* __restrict__ out_keys,
                            int64_t* __restrict__ out_build, int64_t* __restrict__ out_probe) {
    size_t x = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (x >= len) return;
    int64_t t = o0 + static_cast<int64_t>(x);
    size_t lo = 0, hi = m;  // out_off[lo] <= t < out_off[hi]
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (out_off[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    int64_t j = t - out_off[lo];
    int64_t b = run_off[run[lo]] + j;
    out_keys[x] = probe_keys[lo];
    out_build[x] = sorted_values[b];
    out_probe[x] = probe_values ? probe_values[lo] : static_cast<int64_t>(lo);
}

Status gpu_join_impl(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                     JoinInfo& info, const JoinOptions& o, double& transfer, double& kernels, bool& emitting) {
    const size_t n = build.n, m = probe.n;
    if (n > static_cast<size_t>(INT_MAX))
        return Status::Error(StatusCode::ProgramLimit,
                             "the GPU join takes at most %d build rows (CUB run-length encoding), not %zu", INT_MAX, n);
    cudaStream_t stream;
    APPROX_TRY(gpu::begin(ctx, stream));
    CubTemp tmp;
    Lap lap;

    // Build side: sort by key, distinct keys with (offset, count).
    DeviceBuffer<int64_t> keys_in, vals_in, sorted_keys, sorted_vals, num_runs;
    APPROX_TRY(keys_in.alloc(ctx, n));
    APPROX_TRY(vals_in.alloc(ctx, n + 1));  // + 1: later the runs' offsets, n + 1 of them
    APPROX_TRY(sorted_keys.alloc(ctx, n));
    APPROX_TRY(sorted_vals.alloc(ctx, n));
    APPROX_TRY(num_runs.alloc(ctx, 1));
    APPROX_TRY(upload(ctx, keys_in.get(), build.keys, n, stream, transfer));
    if (build.values) {
        APPROX_TRY(upload(ctx, vals_in.get(), build.values, n, stream, transfer));
    }
    APPROX_TRY(lap.start(stream));
    if (!build.values) {
        APPROX_TRY(gpu::sequence(vals_in.get(), static_cast<int64_t>(n), int64_t(0), stream));
    }
    const int n_items = static_cast<int>(n);
    APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(p, bytes, keys_in.get(), sorted_keys.get(), vals_in.get(),
                                               sorted_vals.get(), n_items, 0, 64, stream);
    }));
    // keys_in / vals_in are free again: the distinct keys and, in place of
    // their run lengths, the runs' offsets go there (gpu::run_offsets).
    int64_t* unique_keys = keys_in.get();
    int64_t* run_starts = vals_in.get();
    APPROX_TRY(gpu::run_offsets(tmp, ctx, sorted_keys.get(), static_cast<int64_t>(n), unique_keys, run_starts,
                                run_starts, num_runs.get(), stream));
    int64_t distinct = 0;
    APPROX_CUDA(cudaMemcpyAsync(&distinct, num_runs.get(), sizeof distinct, cudaMemcpyDeviceToHost, stream));
    APPROX_TRY(lap.stop(stream, kernels));
    info.distinct_keys = distinct;
    sorted_keys.reset();
    if (ctx.cancelled()) return cancelled_status();

    // The offsets outlive vals_in: keep the distinct + 1 that the join reads.
    DeviceBuffer<int64_t> run_off;
    APPROX_TRY(run_off.alloc(ctx, static_cast<size_t>(distinct) + 1));
    APPROX_TRY(lap.start(stream));
    APPROX_CUDA(cudaMemcpyAsync(run_off.get(), run_starts, (static_cast<size_t>(distinct) + 1) * sizeof(int64_t),
                                cudaMemcpyDeviceToDevice, stream));
    APPROX_TRY(lap.stop(stream, kernels));

    GpuTable table;
    APPROX_TRY(build_on_device(unique_keys, nullptr, static_cast<size_t>(distinct), nullptr, ctx, o.table, stream,
                               table, info.table, kernels));
    keys_in.reset();
    vals_in.reset();
    if (ctx.cancelled()) return cancelled_status();

    // Probe side: matches per row, then where each row's output starts.
    DeviceBuffer<int64_t> probe_keys, probe_vals, run, out_off;
    APPROX_TRY(probe_keys.alloc(ctx, m));
    APPROX_TRY(out_off.alloc(ctx, m + 1));
    if (sink) {
        APPROX_TRY(run.alloc(ctx, m));
        if (probe.values) APPROX_TRY(probe_vals.alloc(ctx, m));
    }
    APPROX_TRY(upload(ctx, probe_keys.get(), probe.keys, m, stream, transfer));
    if (sink && probe.values) APPROX_TRY(upload(ctx, probe_vals.get(), probe.values, m, stream, transfer));
    DeviceBuffer<int64_t> total;
    APPROX_TRY(total.alloc(ctx, 1));
    APPROX_TRY(lap.start(stream));
    probe_kernel<<<blocks_for(m, kThreads), kThreads, 0, stream>>>(probe_keys.get(), m, table.view(), run_off.get(),
                                                                   sink ? run.get() : nullptr, out_off.get());
    APPROX_CUDA_LAUNCHED();
    int64_t matches = 0;
    if (!sink) {
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::Sum(p, bytes, out_off.get(), total.get(), m, stream);
        }));
        APPROX_CUDA(cudaMemcpyAsync(&matches, total.get(), sizeof matches, cudaMemcpyDeviceToHost, stream));
    } else {
        APPROX_CUDA(cudaMemsetAsync(out_off.get() + m, 0, sizeof(int64_t), stream));
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceScan::ExclusiveSum(p, bytes, out_off.get(), m + 1, stream);
        }));
        APPROX_CUDA(cudaMemcpyAsync(&matches, out_off.get() + m, sizeof matches, cudaMemcpyDeviceToHost, stream));
    }
    APPROX_TRY(lap.stop(stream, kernels));
    info.matches = matches;
    if (!sink || matches == 0) return Status::Ok();

    // Emit in chunks; everything is allocated before the first row goes out
    // (a later GPU allocation failure must not rerun the join on the CPU).
    const size_t cap = static_cast<size_t>(std::min<int64_t>(matches, static_cast<int64_t>(o.chunk_rows)));
    DeviceBuffer<int64_t> out_keys, out_build, out_probe;
    PinnedBuffer<int64_t> h_keys, h_build, h_probe;
    APPROX_TRY(out_keys.alloc(ctx, cap));
    APPROX_TRY(out_build.alloc(ctx, cap));
    APPROX_TRY(out_probe.alloc(ctx, cap));
    APPROX_TRY(h_keys.alloc(cap));
    APPROX_TRY(h_build.alloc(cap));
    APPROX_TRY(h_probe.alloc(cap));
    emitting = true;
    for (int64_t o0 = 0; o0 < matches; o0 += static_cast<int64_t>(cap)) {
        if (ctx.cancelled()) return cancelled_status();
        size_t len = static_cast<size_t>(std::min<int64_t>(matches - o0, static_cast<int64_t>(cap)));
        APPROX_TRY(lap.start(stream));
        emit_kernel<<<blocks_for(len, kThreads), kThreads, 0, stream>>>(
            o0, len, out_off.get(), m, run.get(), run_off.get(), sorted_vals.get(), probe_keys.get(),
            probe.values ? probe_vals.get() : nullptr, out_keys.get(), out_build.get(), out_probe.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_TRY(lap.stop(stream, kernels));
        APPROX_TRY(lap.start(stream));
        APPROX_CUDA(cudaMemcpyAsync(h_keys.get(), out_keys.get(), len * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                    stream));
        APPROX_CUDA(cudaMemcpyAsync(h_build.get(), out_build.get(), len * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                    stream));
        APPROX_CUDA(cudaMemcpyAsync(h_probe.get(), out_probe.get(), len * sizeof(int64_t), cudaMemcpyDeviceToHost,
                                    stream));
        APPROX_TRY(lap.stop(stream, transfer));
        APPROX_TRY(emit_chunk(sink, user, h_keys.get(), h_build.get(), h_probe.get(), len, info));
    }
    return Status::Ok();
}

}  // namespace

Status gpu_build_table(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                       const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info) {
    return build_gpu_table(keys, values, n, ctx, o, out, info);
}

Status gpu_join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                JoinInfo& info, const JoinOptions& o) {
    Stopwatch wall;
    double transfer = 0, kernels = 0;
    bool emitting = false;
    Status st = gpu_join_impl(build, probe, sink, user, ctx, info, o, transfer, kernels, emitting);
    if (st.code == StatusCode::GpuOutOfMemory && emitting) st.code = StatusCode::GpuError;  // rows already went out
    if (ctx.stats) {
        ctx.stats->ms_transfer = transfer;
        ctx.stats->ms_compute = wall.ms() - transfer - info.ms_emit;
        ctx.stats->add("ms_kernels", kernels);
    }
    return st;
}

}  // namespace approx::hashjoin
