// Hashed joins: the public API (dispatch) and the CPU engine.
//
// The CPU engine keeps the GPU's structure: phase 1 partitions the keys into
// buckets (per-chunk histograms, prefix sums, a stable scatter, so the layout
// does not depend on the thread count), phase 2 builds each bucket's 3-way
// cuckoo table sequentially (buckets in parallel) with the same hash functions
// and the same slot layout. The join partitions the build side by a hash,
// sorts each partition by key (stable), and builds the table over the
// distinct keys. join_count()'s request to the GPU service is in
// hashjoin_served.cpp.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "hashjoin_cpu.hpp"
#include "hashjoin_internal.hpp"
#include "service.hpp"
#include "hashjoin_served.hpp"

namespace approx::hashjoin {

// ---- shared helpers -------------------------------------------------------------

Status check_options(const BuildOptions& o) {
    if (o.target_bucket_load < 1 || o.target_bucket_load > kBucketCapacity)
        return Status::Error(StatusCode::InvalidArgument, "target_bucket_load must be between 1 and %d, not %d",
                             kBucketCapacity, o.target_bucket_load);
    if (o.max_phase1_attempts < 1 || o.max_phase1_attempts > 1000 || o.max_bucket_attempts < 1 ||
        o.max_bucket_attempts > 100000 || o.max_table_builds < 1 || o.max_table_builds > 1000 ||
        o.max_cuckoo_rounds < 1 || o.max_cuckoo_rounds > 100000)
        return Status::Error(StatusCode::InvalidArgument, "hash table build options out of range");
    return Status::Ok();
}

uint32_t bucket_count(size_t n, const BuildOptions& o) {
    uint64_t b = (static_cast<uint64_t>(n) + o.target_bucket_load - 1) / o.target_bucket_load;
    return b == 0 ? 1u : static_cast<uint32_t>(b);
}

Status emit_chunk(JoinSink sink, void* user, const int64_t* keys, const int64_t* build_values,
                  const int64_t* probe_values, size_t len, JoinInfo& info) {
    Stopwatch sw;
    bool go_on = sink(user, keys, build_values, probe_values, len);
    info.ms_emit += sw.ms();
    ++info.chunks;
    if (!go_on) return Status::Error(StatusCode::Cancelled, "the join's output was stopped by its consumer");
    return Status::Ok();
}

void describe_table(TableInfo& info, size_t n, uint32_t buckets) {
    info.keys = static_cast<int64_t>(n);
    info.buckets = buckets;
    info.slots = static_cast<int64_t>(buckets) * kBucketSlots;
    info.table_bytes = info.slots * static_cast<int64_t>(sizeof(Slot)) +
                       static_cast<int64_t>(buckets) * static_cast<int64_t>(sizeof(BucketMeta));
    info.load_factor = info.slots > 0 ? static_cast<double>(n) / static_cast<double>(info.slots) : 0;
    info.memory_ratio = n > 0 ? static_cast<double>(info.table_bytes) / (16.0 * static_cast<double>(n)) : 0;
}

bool find_duplicate(const int64_t* keys, size_t n, int64_t& dup) {
    std::vector<int64_t> k(keys, keys + n);
    std::sort(k.begin(), k.end());
    for (size_t i = 1; i < n; ++i)
        if (k[i] == k[i - 1]) {
            dup = k[i];
            return true;
        }
    return false;
}

// The table build itself is hashjoin_cpu.hpp.
using cpu::build_cpu_storage;
using cpu::CpuStorage;
using cpu::kRowsPerTask;
using cpu::partition;
using cpu::tasks_for;

Status cpu_build_table(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                       const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info) {
    Stopwatch sw;
    std::unique_ptr<CpuStorage> st(new CpuStorage);
    APPROX_TRY(build_cpu_storage(keys, values, n, ctx, o, true, *st, info));
    out = std::move(st);
    if (ctx.stats) ctx.stats->ms_compute = sw.ms();
    return Status::Ok();
}

// ---- CPU join ----------------------------------------------------------------------

namespace {

struct KeyValue {
    int64_t key;
    int64_t value;
};

// Emits rows [0, total) of the output described by out_off (exclusive scan
// over the probe rows, m + 1 entries) in chunks; fill(t, row, j) writes
// output row t (probe row `row`, its j-th match) into the chunk buffers.
template <class Fill>
Status emit_chunks(const ExecContext& ctx, const std::vector<int64_t>& out_off, size_t m, size_t chunk_rows,
                   JoinSink sink, void* user, JoinInfo& info, std::vector<int64_t>& out_keys,
                   std::vector<int64_t>& out_build, std::vector<int64_t>& out_probe, Fill&& fill) {
    const int64_t total = out_off[m];
    const size_t cap = static_cast<size_t>(std::min<int64_t>(total, static_cast<int64_t>(chunk_rows)));
    out_keys.resize(cap);
    out_build.resize(cap);
    out_probe.resize(cap);
    for (int64_t o0 = 0; o0 < total; o0 += static_cast<int64_t>(cap)) {
        if (ctx.cancelled()) return cancelled_status();
        int64_t o1 = std::min<int64_t>(total, o0 + static_cast<int64_t>(cap));
        size_t len = static_cast<size_t>(o1 - o0);
        const size_t per_task = 8192;
        APPROX_TRY(parallel_for(ctx, tasks_for(len, per_task), [&](size_t t, size_t) {
            int64_t s = o0 + static_cast<int64_t>(t * per_task);
            int64_t e = std::min<int64_t>(o1, s + static_cast<int64_t>(per_task));
            size_t row =
                static_cast<size_t>(std::upper_bound(out_off.begin(), out_off.begin() + m + 1, s) - out_off.begin()) -
                1;
            for (int64_t x = s; x < e; ++x) {
                while (out_off[row + 1] <= x) ++row;
                fill(static_cast<size_t>(x - o0), row, x - out_off[row]);
            }
            return Status::Ok();
        }));
        APPROX_TRY(emit_chunk(sink, user, out_keys.data(), out_build.data(), out_probe.data(), len, info));
    }
    return Status::Ok();
}

}  // namespace

Status cpu_join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                JoinInfo& info, const JoinOptions& o) {
    Stopwatch sw;
    const size_t n = build.n, m = probe.n;
    // Partition the build side by a hash of the key, then sort each part.
    size_t threads = ctx.cpu_threads < 1 ? 1 : static_cast<size_t>(ctx.cpu_threads);
    uint32_t parts = n < (size_t(1) << 16)
                         ? 1u
                         : static_cast<uint32_t>(std::min<size_t>(4096, std::max<size_t>(threads * 8, n >> 16)));
    const uint64_t part_seed = splitmix64(o.table.seed ^ 0x7061727469746e21ull);
    std::vector<KeyValue> sorted(n);
    std::vector<uint64_t> part_off;
    bool stopped = false;
    APPROX_TRY(partition(
        ctx, n, parts, [&](size_t i) { return bucket_of(mix_key(build.keys[i], part_seed), parts); },
        [](const std::vector<uint64_t>&) { return true; },
        [&](size_t i, uint64_t dest) {
            sorted[dest] = KeyValue{build.keys[i], build.values ? build.values[i] : static_cast<int64_t>(i)};
        },
        part_off, stopped));
    std::vector<uint64_t> runs(parts + 1, 0);
    APPROX_TRY(parallel_for(ctx, parts, [&](size_t p, size_t) {
        auto lo = sorted.begin() + static_cast<std::ptrdiff_t>(part_off[p]);
        auto hi = sorted.begin() + static_cast<std::ptrdiff_t>(part_off[p + 1]);
        std::stable_sort(lo, hi, [](const KeyValue& a, const KeyValue& b) { return a.key < b.key; });
        uint64_t r = 0;
        for (auto it = lo; it != hi; ++it)
            if (it == lo || it->key != (it - 1)->key) ++r;
        runs[p + 1] = r;
        return Status::Ok();
    }));
    for (uint32_t p = 0; p < parts; ++p) runs[p + 1] += runs[p];
    const size_t distinct = static_cast<size_t>(runs[parts]);
    std::vector<int64_t> dkeys(distinct), run_off(distinct + 1);
    run_off[distinct] = static_cast<int64_t>(n);
    APPROX_TRY(parallel_for(ctx, parts, [&](size_t p, size_t) {
        uint64_t r = runs[p];
        for (uint64_t i = part_off[p]; i < part_off[p + 1]; ++i)
            if (i == part_off[p] || sorted[i].key != sorted[i - 1].key) {
                dkeys[r] = sorted[i].key;
                run_off[r] = static_cast<int64_t>(i);
                ++r;
            }
        return Status::Ok();
    }));
    info.distinct_keys = static_cast<int64_t>(distinct);
    if (ctx.cancelled()) return cancelled_status();

    CpuStorage table;
    APPROX_TRY(build_cpu_storage(dkeys.data(), nullptr, distinct, ctx, o.table, false, table, info.table));
    APPROX_TRY(table.build_filter(dkeys.data(), distinct, ctx));
    std::vector<int64_t>().swap(dkeys);

    // Probe: matches per probe row, and where they start in the output.
    const size_t tasks = tasks_for(m, kRowsPerTask);
    std::vector<int64_t> task_sum(tasks + 1, 0);
    std::vector<int64_t> out_off, run;
    if (sink) {
        out_off.resize(m + 1);
        run.resize(m);
    }
    APPROX_TRY(parallel_for(ctx, tasks, [&](size_t t, size_t) {
        size_t lo = t * kRowsPerTask, hi = std::min(m, lo + kRowsPerTask);
        int64_t sum = 0;
        table.get_many(probe.keys + lo, hi - lo, [&](size_t j, bool f, int64_t r) {
            size_t i = lo + j;
            int64_t c = f ? run_off[static_cast<size_t>(r) + 1] - run_off[static_cast<size_t>(r)] : 0;
            if (sink) {
                run[i] = f ? r : -1;
                out_off[i] = c;
            }
            sum += c;
        });
        task_sum[t + 1] = sum;
        return Status::Ok();
    }));
    for (size_t t = 0; t < tasks; ++t) task_sum[t + 1] += task_sum[t];
    info.matches = task_sum[tasks];
    if (sink && info.matches > 0) {
        APPROX_TRY(parallel_for(ctx, tasks, [&](size_t t, size_t) {
            size_t lo = t * kRowsPerTask, hi = std::min(m, lo + kRowsPerTask);
            int64_t acc = task_sum[t];
            for (size_t i = lo; i < hi; ++i) {
                int64_t c = out_off[i];
                out_off[i] = acc;
                acc += c;
            }
            return Status::Ok();
        }));
        out_off[m] = info.matches;
        std::vector<int64_t> out_keys, out_build, out_probe;
        APPROX_TRY(emit_chunks(ctx, out_off, m, o.chunk_rows, sink, user, info, out_keys, out_build, out_probe,
                               [&](size_t at, size_t row, int64_t j) {
                                   size_t b = static_cast<size_t>(run_off[static_cast<size_t>(run[row])] + j);
                                   out_keys[at] = probe.keys[row];
                                   out_build[at] = sorted[b].value;
                                   out_probe[at] = probe.values ? probe.values[row] : static_cast<int64_t>(row);
                               }));
    }
    if (ctx.stats) ctx.stats->ms_compute = sw.ms() - info.ms_emit;
    return Status::Ok();
}

// ---- public API ----------------------------------------------------------------------

Table::Table() = default;
Table::~Table() = default;
Table::Table(Table&&) noexcept = default;
Table& Table::operator=(Table&&) noexcept = default;

Status Table::build(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                    const BuildOptions& options) {
    storage_.reset();
    info_ = TableInfo();
    APPROX_TRY(check_options(options));
    if (n > kMaxTableKeys)
        return Status::Error(StatusCode::ProgramLimit, "a hash table holds at most %llu keys, not %zu",
                             static_cast<unsigned long long>(kMaxTableKeys), n);
    if (n > 0 && keys == nullptr) return Status::Error(StatusCode::InvalidArgument, "keys is null");
    if (ctx.stats) ctx.stats->rows = static_cast<int64_t>(n);
    std::unique_ptr<TableStorage> st;
    TableInfo info;
    Status s = dispatch(
        ctx, static_cast<int64_t>(n), [&] { return cpu_build_table(keys, values, n, ctx, options, st, info); },
        APPROX_GPU(gpu_build_table(keys, values, n, ctx, options, st, info)));
    if (!s.ok()) return s;
    storage_ = std::move(st);
    info_ = info;
    return Status::Ok();
}

Status Table::find(const int64_t* keys, size_t m, int64_t* values, uint8_t* found, const ExecContext& ctx) const {
    if (!storage_) return Status::Error(StatusCode::InvalidArgument, "the hash table has not been built");
    if (m > 0 && (keys == nullptr || values == nullptr || found == nullptr))
        return Status::Error(StatusCode::InvalidArgument, "find: null buffer");
    if (ctx.stats) {
        ctx.stats->rows = static_cast<int64_t>(m);
        ctx.stats->device = info_.device;
    }
    if (m == 0) return Status::Ok();
    return guarded([&] { return storage_->find(keys, m, values, found, ctx); });
}

namespace {

Status check_side(const JoinSide& s, const char* name) {
    if (s.n > 0 && s.keys == nullptr) return Status::Error(StatusCode::InvalidArgument, "%s keys are null", name);
    return Status::Ok();
}

Status run_join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                JoinInfo& info, const JoinOptions& options) {
    info = JoinInfo();
    APPROX_TRY(check_options(options.table));
    APPROX_TRY(check_side(build, "build"));
    APPROX_TRY(check_side(probe, "probe"));
    if (options.chunk_rows < 1) return Status::Error(StatusCode::InvalidArgument, "chunk_rows must be positive");
    if (build.n > kMaxTableKeys)
        return Status::Error(StatusCode::ProgramLimit, "the build side holds at most %llu rows, not %zu",
                             static_cast<unsigned long long>(kMaxTableKeys), build.n);
    int64_t rows = static_cast<int64_t>(build.n + probe.n);
    if (ctx.stats) ctx.stats->rows = rows;
    Status st;
    if (build.n == 0 || probe.n == 0) {
        // Nothing can match: no device work at all.
        st = guarded([&] { return choose_device(ctx, rows, info.table.device); });
        if (st.ok() && ctx.stats) ctx.stats->device = info.table.device;
    } else {
        st = dispatch(
            ctx, rows, [&] { return cpu_join(build, probe, sink, user, ctx, info, options); },
            APPROX_GPU(gpu_join(build, probe, sink, user, ctx, info, options)));
    }
    if (ctx.stats) {
        ctx.stats->add("matches", static_cast<double>(info.matches));
        ctx.stats->add("distinct_build_keys", static_cast<double>(info.distinct_keys));
        ctx.stats->add("table_builds", info.table.table_builds);
        ctx.stats->add("bucket_restarts", static_cast<double>(info.table.bucket_restarts));
        ctx.stats->add("load_factor", info.table.load_factor);
        ctx.stats->add("memory_ratio", info.table.memory_ratio);
        if (sink) ctx.stats->add("ms_emit", info.ms_emit);
    }
    return st;
}

}  // namespace

Status join_count(const JoinSide& build, const JoinSide& probe, const ExecContext& caller, JoinInfo& info,
                  const JoinOptions& options) {
    ExecContext ctx = caller;
    Status st;
    // An empty side (no device work) or a missing key column (an argument
    // error) is answered here.
    if (build.n > 0 && probe.n > 0 && build.keys && probe.keys &&
        service::try_run(ctx, static_cast<int64_t>(build.n + probe.n), st,
                         [&](const ExecContext& c) { return join_count_in_service(build, probe, c, info, options); }))
        return st;
    return run_join(build, probe, nullptr, nullptr, ctx, info, options);
}

Status join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
            JoinInfo& info, const JoinOptions& options) {
    if (sink == nullptr) return Status::Error(StatusCode::InvalidArgument, "join: sink is null");
    return run_join(build, probe, sink, user, ctx, info, options);
}

}  // namespace approx::hashjoin
