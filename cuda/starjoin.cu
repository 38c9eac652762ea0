// The star-join engine on the GPU (core/starjoin/starjoin.hpp): the same
// passes as the CPU engine, with the same per-row code
// (core/starjoin/starjoin_internal.hpp, interp.hpp) compiled for the device.
// 1. Per dimension: one thread per row evaluates the filter and outputs;
//    key min / max; the key map as a dense array (atomicCAS finds repeated
//    keys) or the project's cuckoo table (hashjoin_table.cuh) over the
//    non-NULL keys -> row.
// 2. Fact passes, grid-stride: domains of the group parts (per-thread
//    min / max, one atomic each at the end), each row's packed key, (sparse
//    groups: CUB select + radix sort + unique, a cuckoo table packed key ->
//    group), then n / sum / nonzero per cell with atomics and the central
//    sums about the cells' means.
// Columns come from the caller's device copies (Column::device) or are
// uploaded on the engines' stream; everything lives in DeviceBuffers (freed
// on every path); cancellation is checked between passes.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <vector>

#include "starjoin_kernels.cuh"

namespace approx::starjoin {

namespace {

using gpu::CubTemp;
using gpu::DeviceBuffer;
using gpu::grid_for;
constexpr int kThreads = 256;

// The run's device state: buffers live until it returns, on every path.
struct Run {
    const ExecContext& ctx;
    cudaStream_t stream;
    std::vector<DeviceBuffer<uint8_t>> uploads;
    DeviceBuffer<Flags> flags;
    Flags h{};
    double transfer_ms = 0;

    Status reset_flags() {
        Flags f{};
        f.error = kNoError;
        for (int p = 0; p < kMaxGroupParts; ++p) {
            f.min[p] = kInt64Max;
            f.max[p] = kInt64Min;
        }
        APPROX_CUDA(cudaMemcpyAsync(flags.get(), &f, sizeof f, cudaMemcpyHostToDevice, stream));
        return Status::Ok();
    }
    Status read_flags() {
        APPROX_CUDA(cudaMemcpyAsync(&h, flags.get(), sizeof h, cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        return Status::Ok();
    }
    template <class T>
    Status upload(const T* host, size_t n, const T*& dev) {
        uploads.emplace_back();
        APPROX_TRY(uploads.back().alloc(ctx, n * sizeof(T)));
        Stopwatch sw;
        APPROX_CUDA(cudaMemcpyAsync(uploads.back().get(), host, n * sizeof(T), cudaMemcpyHostToDevice, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        transfer_ms += sw.ms();
        dev = reinterpret_cast<const T*>(uploads.back().get());
        return Status::Ok();
    }
    // Device views of a table's columns (unused ones left empty).
    Status columns(const Table& t, const std::vector<uint8_t>& used, DeviceBuffer<ColumnView>& out) {
        std::vector<ColumnView> v(static_cast<size_t>(std::max(t.n_columns, 1)));
        for (int32_t c = 0; c < t.n_columns; ++c) {
            const Column& col = t.columns[c];
            ColumnView& cv = v[static_cast<size_t>(c)];
            cv.type = col.type;
            if (!used[static_cast<size_t>(c)] || t.rows == 0) continue;
            const size_t bytes = static_cast<size_t>(t.rows) * static_cast<size_t>(column_width(col.type));
            const size_t nbytes = static_cast<size_t>((t.rows + 7) / 8);
            const uint8_t* d = nullptr;
            if (col.device) {
                cv.data = col.device;
            } else {
                APPROX_TRY(upload(static_cast<const uint8_t*>(col.data), bytes, d));
                cv.data = d;
            }
            if (col.device_nulls) {
                cv.nulls = col.device_nulls;
            } else if (col.nulls) {
                APPROX_TRY(upload(col.nulls, nbytes, d));
                cv.nulls = d;
            }
        }
        APPROX_TRY(out.alloc(ctx, v.size()));
        APPROX_CUDA(cudaMemcpyAsync(out.get(), v.data(), v.size() * sizeof(ColumnView), cudaMemcpyHostToDevice, stream));
        return Status::Ok();
    }
};

unsigned grid(int64_t n) { return grid_for(n, kThreads, static_cast<int64_t>(gpu::sm_count()) * 8); }

struct DimState {
    DeviceBuffer<ColumnView> cols;
    DeviceBuffer<int32_t> status, slot;
    DeviceBuffer<Val> vals;
    hashjoin::GpuTable table;
};

Status build_dim(Run& run, const Plan& plan, const Instr* d_code, const int64_t* d_pool, const Table& t,
                 const std::vector<uint8_t>& used, int32_t d, DimState& ds, DevMap& map, DimensionInfo& info) {
    const DimensionPlan& dp = plan.dims[d];
    if (t.rows > INT32_MAX) return Status::Error(StatusCode::ProgramLimit, "dimension %d: more than 2^31 rows", d);
    APPROX_TRY(run.columns(t, used, ds.cols));
    const size_t n = static_cast<size_t>(t.rows);
    APPROX_TRY(ds.status.alloc(run.ctx, std::max<size_t>(n, 1)));
    APPROX_TRY(ds.vals.alloc(run.ctx, std::max<size_t>(n * static_cast<size_t>(dp.n_outputs), 1)));
    APPROX_TRY(run.reset_flags());
    DimArgs a{d_code, d_pool, ds.cols.get(), t.rows, dp.filter, dp.n_outputs, {}, dp.key_column};
    for (int o = 0; o < kMaxDimOutputs; ++o) a.outputs[o] = dp.outputs[o];
    if (n > 0) {
        dim_eval_kernel<<<grid(t.rows), kThreads, 0, run.stream>>>(a, ds.status.get(), ds.vals.get(), run.flags.get());
        APPROX_CUDA_LAUNCHED();
    }
    APPROX_TRY(run.read_flags());
    char where[48];
    std::snprintf(where, sizeof where, "dimension %d", d);
    APPROX_TRY(error_word_status(run.h.error, where));
    const int64_t kmin = run.h.min[0], kmax = run.h.max[0];
    info.rows = t.rows;
    info.passing = static_cast<int64_t>(run.h.count);
    info.key_min = kmax >= kmin ? kmin : 0;
    info.key_max = kmax >= kmin ? kmax : 0;
    info.dense = dense_keys(kmin, kmax, t.rows);
    map.dense = info.dense ? 1 : 0;
    map.min = kmin;
    ColumnView key;
    APPROX_CUDA(cudaMemcpyAsync(&key, ds.cols.get() + dp.key_column, sizeof key, cudaMemcpyDeviceToHost, run.stream));
    APPROX_CUDA(cudaStreamSynchronize(run.stream));
    if (info.dense) {
        map.range = kmax >= kmin ? static_cast<uint64_t>(kmax) - static_cast<uint64_t>(kmin) + 1 : 0;
        APPROX_TRY(ds.slot.alloc(run.ctx, std::max<uint64_t>(map.range, 1)));
        APPROX_CUDA(cudaMemsetAsync(ds.slot.get(), 0xff, ds.slot.bytes(), run.stream));
        APPROX_TRY(run.reset_flags());
        if (n > 0) {
            dense_fill_kernel<<<grid(t.rows), kThreads, 0, run.stream>>>(key, t.rows, kmin, ds.slot.get(), run.flags.get());
            APPROX_CUDA_LAUNCHED();
        }
        APPROX_TRY(run.read_flags());
        if (run.h.dup)
            return Status::Error(StatusCode::InvalidArgument, "dimension %d: key %lld is not unique", d, run.h.dup_key);
        map.slot = ds.slot.get();
        return Status::Ok();
    }
    DeviceBuffer<int64_t> keys, rows;
    APPROX_TRY(keys.alloc(run.ctx, n));
    APPROX_TRY(rows.alloc(run.ctx, n));
    APPROX_TRY(run.reset_flags());
    key_extract_kernel<<<grid(t.rows), kThreads, 0, run.stream>>>(key, t.rows, keys.get(), rows.get(), &run.flags.get()->count);
    APPROX_CUDA_LAUNCHED();
    APPROX_TRY(run.read_flags());
    hashjoin::TableInfo ti;
    double kernel_ms = 0;
    Status st = hashjoin::build_on_device(keys.get(), rows.get(), static_cast<size_t>(run.h.count), nullptr, run.ctx,
                                          hashjoin::BuildOptions(), run.stream, ds.table, ti, kernel_ms);
    if (!st.ok() && st.code == StatusCode::InvalidArgument)
        return Status::Error(StatusCode::InvalidArgument, "dimension %d: %.200s (keys must be unique)", d, st.message);
    APPROX_TRY(st);
    map.table = ds.table.view();
    return Status::Ok();
}

}  // namespace

Status gpu_run(const Plan& plan, const Inputs& in, const Prepared& prep, const ExecContext& ctx, Result& out) {
    Run run{ctx, nullptr};
    APPROX_TRY(gpu::begin(ctx, run.stream));
    APPROX_TRY(run.flags.alloc(ctx, 1));
    const Instr* code = nullptr;
    const int64_t* pool = nullptr;
    if (!plan.code.empty()) APPROX_TRY(run.upload(plan.code.data(), plan.code.size(), code));
    if (!plan.pool.empty()) APPROX_TRY(run.upload(plan.pool.data(), plan.pool.size(), pool));
    std::vector<DimState> dims(static_cast<size_t>(plan.n_dims));
    DevProbe probe;
    for (int32_t d = 0; d < plan.n_dims; ++d)
        APPROX_TRY(build_dim(run, plan, code, pool, in.dims[d], prep.dim_used[static_cast<size_t>(d)], d,
                             dims[static_cast<size_t>(d)], probe.maps[d], out.dims[d]));
    if (ctx.cancelled()) return cancelled_status();
    DeviceBuffer<ColumnView> fact_cols;
    APPROX_TRY(run.columns(in.fact, prep.fact_used, fact_cols));
    FactView v;
    fill_fact_view(plan, prep, code, pool, fact_cols.get(),
                   [&](int32_t d, const int32_t*& status, const Val*& vals) {
                       status = dims[static_cast<size_t>(d)].status.get();
                       vals = dims[static_cast<size_t>(d)].vals.get();
                   },
                   v);
    const int64_t n = in.fact.rows;
    const unsigned blocks = grid(n);

    // 1. domains
    APPROX_TRY(run.reset_flags());
    if (n > 0) {
        domain_kernel<<<blocks, kThreads, 0, run.stream>>>(v, probe, n, run.flags.get());
        APPROX_CUDA_LAUNCHED();
    }
    APPROX_TRY(run.read_flags());
    APPROX_TRY(error_word_status(run.h.error, "fact"));
    if (ctx.cancelled()) return cancelled_status();
    PartDomain dom[kMaxGroupParts];
    for (int p = 0; p < plan.n_group_parts; ++p) {
        dom[p].min = run.h.min[p];
        dom[p].max = run.h.max[p];
        dom[p].has_null = run.h.has_null[p];
    }
    const int64_t joined = static_cast<int64_t>(run.h.count);
    GroupLayout g;
    APPROX_TRY(choose_layout(plan, dom, joined, g));

    // 2. packed keys -> groups
    DeviceBuffer<uint64_t> gid;
    APPROX_TRY(gid.alloc(ctx, static_cast<size_t>(std::max<int64_t>(n, 1))));
    if (n > 0) {
        pack_kernel<<<blocks, kThreads, 0, run.stream>>>(v, probe, n, g, gid.get());
        APPROX_CUDA_LAUNCHED();
    }
    uint64_t groups = g.product;
    std::vector<uint64_t> keys;
    hashjoin::GpuTable gtable;
    if (!g.dense) {
        CubTemp tmp;
        DeviceBuffer<uint64_t> sel, sorted;
        DeviceBuffer<int64_t> count;
        const size_t m = static_cast<size_t>(std::max<int64_t>(joined, 1));
        APPROX_TRY(sel.alloc(ctx, m));
        APPROX_TRY(sorted.alloc(ctx, m));
        APPROX_TRY(count.alloc(ctx, 1));
        const int items = static_cast<int>(std::min<int64_t>(n, INT32_MAX));
        if (n > INT32_MAX) return Status::Error(StatusCode::Declined, "sparse groups over more than 2^31 rows");
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& b) {
            return cub::DeviceSelect::If(p, b, gid.get(), sel.get(), count.get(), items, NotRejected(), run.stream);
        }));
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& b) {
            return cub::DeviceRadixSort::SortKeys(p, b, sel.get(), sorted.get(), static_cast<int>(joined), 0, 64,
                                                  run.stream);
        }));
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& b) {
            return cub::DeviceSelect::Unique(p, b, sorted.get(), sel.get(), count.get(), static_cast<int>(joined),
                                             run.stream);
        }));
        int64_t distinct = 0;
        APPROX_CUDA(cudaMemcpyAsync(&distinct, count.get(), sizeof distinct, cudaMemcpyDeviceToHost, run.stream));
        APPROX_CUDA(cudaStreamSynchronize(run.stream));
        groups = static_cast<uint64_t>(distinct);
        APPROX_TRY(check_budget(plan, groups, "distinct"));
        keys.resize(static_cast<size_t>(groups));
        if (groups > 0)
            APPROX_CUDA(cudaMemcpyAsync(keys.data(), sel.get(), groups * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                        run.stream));
        hashjoin::TableInfo ti;
        double kernel_ms = 0;
        APPROX_TRY(hashjoin::build_on_device(reinterpret_cast<const int64_t*>(sel.get()), nullptr,
                                             static_cast<size_t>(groups), nullptr, ctx, hashjoin::BuildOptions(),
                                             run.stream, gtable, ti, kernel_ms));
        if (n > 0) {
            group_of_kernel<<<blocks, kThreads, 0, run.stream>>>(n, gtable.view(), gid.get());
            APPROX_CUDA_LAUNCHED();
        }
    }
    if (ctx.cancelled()) return cancelled_status();

    // 3. and 4. moments
    const size_t cells = static_cast<size_t>(groups) * static_cast<size_t>(plan.n_strata);
    const size_t acc_n = cells * static_cast<size_t>(plan.n_measures);
    DeviceBuffer<Acc> acc;
    DeviceBuffer<unsigned long long> rows;
    DeviceBuffer<double> mean;
    APPROX_TRY(acc.alloc(ctx, std::max<size_t>(acc_n, 1)));
    APPROX_TRY(rows.alloc(ctx, std::max<size_t>(cells, 1)));
    APPROX_TRY(mean.alloc(ctx, std::max<size_t>(acc_n, 1)));
    APPROX_CUDA(cudaMemsetAsync(acc.get(), 0, acc.bytes(), run.stream));
    APPROX_CUDA(cudaMemsetAsync(rows.get(), 0, rows.bytes(), run.stream));
    APPROX_TRY(run.reset_flags());
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1 && acc_n > 0) {
            mean_kernel<<<grid(static_cast<int64_t>(acc_n)), kThreads, 0, run.stream>>>(acc.get(), acc_n, mean.get());
            APPROX_CUDA_LAUNCHED();
        }
        if (n > 0) {
            moments_kernel<<<blocks, kThreads, 0, run.stream>>>(v, probe, n, gid.get(), pass, acc.get(), rows.get(),
                                                                mean.get(), run.flags.get());
            APPROX_CUDA_LAUNCHED();
        }
        APPROX_TRY(run.read_flags());
        APPROX_TRY(error_word_status(run.h.error, "fact"));
        if (ctx.cancelled()) return cancelled_status();
    }
    std::vector<Acc> h_acc(acc_n);
    std::vector<int64_t> h_rows(cells);
    Stopwatch sw;
    if (acc_n) APPROX_CUDA(cudaMemcpyAsync(h_acc.data(), acc.get(), acc_n * sizeof(Acc), cudaMemcpyDeviceToHost, run.stream));
    if (cells)
        APPROX_CUDA(cudaMemcpyAsync(h_rows.data(), rows.get(), cells * sizeof(int64_t), cudaMemcpyDeviceToHost, run.stream));
    APPROX_CUDA(cudaStreamSynchronize(run.stream));
    run.transfer_ms += sw.ms();
    finish_groups(plan, g, g.dense ? nullptr : keys.data(), groups, h_rows, h_acc, out);
    if (ctx.stats) ctx.stats->ms_transfer = run.transfer_ms;
    return Status::Ok();
}

}  // namespace approx::starjoin
