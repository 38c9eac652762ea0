// Moving objects: the GPU engine (see src/core/moving.hpp). This file is its
// host side, the index class (device buffers, growth, launches) and
// create_gpu(); its kernels are in moving_kernels.cuh.
//
// Device layout: per cell a count and a slice of a bucket directory
// (dir[dir_off[c] .. dir_off[c] + dir_cap[c]) holds the ids of the cell's
// buckets in order); a pool of 32-slot buckets (ids, x, y as separate arrays:
// one warp reads one bucket coalesced) with a free-bucket stack; an
// open-addressing table id -> (cell << 32 | position) with separate state
// bits (empty / full / tombstone) in the slot's location word, since ids are
// arbitrary int64 and no key value can mean "empty".
//
// Update batch (every step before "apply" only writes scratch or grows
// storage without changing what the index holds):
//   upload; validate (first bad index by atomicMin); stable radix sort of
//   (id, entry) and keep the last entry per id; classify each distinct id with
//   one table probe into three queues (warp-aggregated appends): deletes
//   (cross-cell moves and removals, key cell<<32|position), inserts (new ids
//   and cross-cell moves, key cell<<32|entry), in-place; radix sort both keyed
//   queues; mark each cell's run in them; per cell the new count, buckets to
//   take / give back (exclusive scans give stack offsets) and whether its
//   directory slice overflows; grow the pool, the directory and the table as
//   needed (every growth checked against the index's MemoryBudget); the cancel
//   callback is polled between these steps (each is a few kernels: well under
//   100 ms even for 10^7 entries); the last cancel check; then apply, no
//   allocation and no failure
//   path left: take buckets, all deletes, all inserts, give back buckets, all
//   in-place updates.
// Deletes need no per-cell serial loop: with d deletes in a cell of n objects
// the survivors at positions >= n - d ("movers", ranked by position) fill the
// deleted positions < n - d ("holes", ranked by position); each thread of the
// cell's run finds its rank with two binary searches in the sorted run.
//
// Range count batch: per query the clipped cell range; cells strictly inside
// it are summed from a summed-area table of the cell counts (built lazily);
// the ring of boundary cells forms the candidate list (query, cell); an
// exclusive scan over the candidates' bucket counts maps every bucket of every
// candidate cell to a warp, one lane per object slot, and a ballot counts the
// objects inside the rectangle.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "common.cuh"
#include "core/moving.hpp"
#include "moving_kernels.cuh"

namespace approx::moving {

using gpu::CubTemp;
using gpu::DeviceBuffer;

namespace {

constexpr int64_t kMaxCandidates = int64_t(1) << 24;  // per query chunk (memory bound)
constexpr int64_t kQueryChunk = int64_t(1) << 22;

// Grid of the grid-stride kernels here over n threads: gpu::grid_for with
// kThreads per block and up to 2^20 blocks, more than the shared default (the
// stride loops cover the rest).
constexpr int64_t kMaxBlocks = int64_t(1) << 20;
unsigned moving_grid(int64_t n) { return gpu::grid_for(n, kThreads, kMaxBlocks); }

// Bytes ensure(b, n) adds (gpu::grown_capacity, the shared growth rule).
template <class T>
int64_t ensure_growth(const DeviceBuffer<T>& b, size_t n) {
    return static_cast<int64_t>((gpu::grown_capacity(b.size(), n) - b.size()) * sizeof(T));
}

int bits_for(uint64_t max_value) {
    int b = 1;
    while (b < 64 && (max_value >> b) != 0) ++b;
    return b;
}

uint64_t next_pow2(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

class GpuIndex final : public Index {
public:
    explicit GpuIndex(const Grid& g) : grid_(g), g_(grid_map(g)), cells_(int64_t(g.cells_x) * g.cells_y) {}

    Status init(const ExecContext& ctx) {
        cudaStream_t stream;
        APPROX_TRY(gpu::begin(ctx, stream));
        size_t C = static_cast<size_t>(cells_);
        APPROX_TRY(count_.alloc(ctx, C));
        APPROX_TRY(new_count_.alloc(ctx, C));
        APPROX_TRY(dir_off_.alloc(ctx, C + 1));
        APPROX_TRY(dir_cap_.alloc(ctx, C));
        APPROX_TRY(counters_.alloc(ctx, kCntN));
        APPROX_CUDA(cudaMemsetAsync(count_.get(), 0, count_.bytes(), stream));
        APPROX_CUDA(cudaMemsetAsync(dir_off_.get(), 0, dir_off_.bytes(), stream));
        APPROX_CUDA(cudaMemsetAsync(dir_cap_.get(), 0, dir_cap_.bytes(), stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        return Status::Ok();
    }

    Device device() const override { return Device::Gpu; }

    // Bytes of an empty index of `cells` cells (init()).
    static int64_t empty_bytes(int64_t cells) { return cells * (4 + 4 + 8 + 4) + 8 + kCntN * 8; }

    int64_t bytes() const override {
        return static_cast<int64_t>(
            count_.bytes() + new_count_.bytes() + dir_off_.bytes() + dir_cap_.bytes() + dir_.bytes() + pid_.bytes() +
            px_.bytes() + py_.bytes() + stack_.bytes() + hslot_.bytes() + sat_.bytes() + counters_.bytes() +
            d_ids_.bytes() + d_xs_.bytes() + d_ys_.bytes() + skey_.bytes() + ukey_.bytes() + ukey2_.bytes() +
            sidx0_.bytes() + sidx_.bytes() + ent_hs_.bytes() + dkey_.bytes() + dkey2_.bytes() + dval_.bytes() +
            dval2_.bytes() + ikey_.bytes() + ikey2_.bytes() + inp_.bytes() + seg_.bytes() + alloc_.bytes() +
            alloc_off_.bytes() + freeb_.bytes() + free_off_.bytes() + rects_.bytes() + qcnt_.bytes() + qr_.bytes() +
            ncand_.bytes() + cand_off_.bytes() + cand_c_.bytes() + cand_q_.bytes() + nb_buf_.bytes() + wb_off_.bytes() +
            out_.bytes());
    }

    Status count_ranges(const Rect* qs, size_t nq, const ExecContext& ctx, int64_t* counts) override {
        BatchStats bs;
        Stopwatch total;
        std::snprintf(bs.op, sizeof bs.op, "range_count");
        APPROX_TRY(count_queries(qs, nq, ctx, counts, bs));
        bs.ms_total = total.ms();
        last_query_ = bs;
        record(ctx, bs, static_cast<int64_t>(nq));
        return Status::Ok();
    }

    void info(Info& out) const override {
        out = Info();
        out.device = Device::Gpu;
        out.grid = grid_;
        out.objects = objects_;
        out.cells = cells_;
        out.buckets_used = nb_ - free_top_;
        out.bucket_capacity = nb_;
        out.hash_capacity = static_cast<int64_t>(hcap_);
        out.device_bytes = bytes();
        out.host_bytes = 0;
        out.last_update = last_update_;
        out.last_query = last_query_;
    }

private:
    // gpu::ensure, charged to the index's memory budget first.
    template <class T>
    Status ensure(DeviceBuffer<T>& b, const ExecContext& ctx, size_t n) {
        if (b.size() >= n) return Status::Ok();
        APPROX_TRY(charge(ensure_growth(b, n), "scratch of this size"));
        return gpu::ensure(b, ctx, n);
    }

    Status reserve_batch_scratch(bool is_delete, size_t n, const ExecContext& ctx) {
        APPROX_TRY(ensure(d_ids_, ctx, n));
        APPROX_TRY(ensure(skey_, ctx, n));
        APPROX_TRY(ensure(ukey_, ctx, n));
        APPROX_TRY(ensure(ukey2_, ctx, n));
        APPROX_TRY(ensure(sidx0_, ctx, n));
        APPROX_TRY(ensure(sidx_, ctx, n));
        APPROX_TRY(ensure(ent_hs_, ctx, n));
        APPROX_TRY(ensure(dkey_, ctx, n));
        APPROX_TRY(ensure(dkey2_, ctx, n));
        APPROX_TRY(ensure(dval_, ctx, n));
        APPROX_TRY(ensure(dval2_, ctx, n));
        if (!is_delete) {
            APPROX_TRY(ensure(d_xs_, ctx, n));
            APPROX_TRY(ensure(d_ys_, ctx, n));
            APPROX_TRY(ensure(ikey_, ctx, n));
            APPROX_TRY(ensure(ikey2_, ctx, n));
            APPROX_TRY(ensure(inp_, ctx, n));
        }
        return Status::Ok();
    }
    void release_batch_scratch() {
        d_ids_.reset(), skey_.reset(), ukey_.reset(), ukey2_.reset(), sidx0_.reset(), sidx_.reset();
        ent_hs_.reset(), dkey_.reset(), dkey2_.reset(), dval_.reset(), dval2_.reset();
        d_xs_.reset(), d_ys_.reset(), ikey_.reset(), ikey2_.reset(), inp_.reset();
    }

    Store store() { return Store{count_.get(), dir_off_.get(), dir_.get(), pid_.get(), px_.get(), py_.get()}; }
    DevHash hash() { return DevHash{hslot_.get(), hcap_ - 1}; }

    // Copies device -> host and waits (small read-backs). The queued kernels
    // finish first, so only the copy counts as transfer time.
    template <class T>
    Status fetch(T* host, const T* dev, size_t count, cudaStream_t stream, const ExecContext& ctx) {
        APPROX_CUDA(cudaStreamSynchronize(stream));
        Stopwatch sw;
        APPROX_CUDA(cudaMemcpyAsync(host, dev, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        transfer_ms_ += sw.ms();
        return Status::Ok();
    }

    template <class T>
    Status upload(T* dev, const T* host, size_t count, cudaStream_t stream) {
        APPROX_CUDA(cudaStreamSynchronize(stream));
        Stopwatch sw;
        APPROX_CUDA(cudaMemcpyAsync(dev, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        transfer_ms_ += sw.ms();
        return Status::Ok();
    }

    void record(const ExecContext& ctx, const BatchStats& bs, int64_t rows) {
        if (!ctx.stats) return;
        ctx.stats->device = Device::Gpu;
        ctx.stats->cpu_threads = 0;
        ctx.stats->rows = rows;
        ctx.stats->ms_transfer = bs.ms_transfer;
        ctx.stats->ms_compute = bs.ms_total - bs.ms_transfer;
        if (bs.op[0] == 'u' || bs.op[0] == 'd') {
            ctx.stats->add("distinct", static_cast<double>(bs.distinct));
            ctx.stats->add("inserted", static_cast<double>(bs.inserted));
            ctx.stats->add("moved", static_cast<double>(bs.moved));
            ctx.stats->add("in_place", static_cast<double>(bs.in_place));
            ctx.stats->add("deleted", static_cast<double>(bs.deleted));
            ctx.stats->add("ms_stage", bs.ms_stage);
            ctx.stats->add("ms_apply", bs.ms_apply);
        } else {
            ctx.stats->add("candidate_cells", static_cast<double>(bs.candidate_cells));
            ctx.stats->add("checked_objects", static_cast<double>(bs.checked_objects));
            ctx.stats->add("results", static_cast<double>(bs.results));
        }
    }

    // Room in the id table for `incoming` new keys at load <= 1/2 (rehashing
    // drops tombstones). The index's contents do not change.
    Status ensure_hash(int64_t incoming, const ExecContext& ctx, cudaStream_t stream) {
        uint64_t need = static_cast<uint64_t>(live_ + tombs_ + incoming);
        if (hcap_ != 0 && need <= hcap_ / 2) return Status::Ok();
        uint64_t cap = next_pow2(std::max<uint64_t>(1024, 3 * static_cast<uint64_t>(live_ + incoming)));
        APPROX_TRY(charge(static_cast<int64_t>(cap * sizeof(HSlot)) - static_cast<int64_t>(hslot_.bytes()),
                          "the id table"));
        DeviceBuffer<HSlot> slots;
        APPROX_TRY(slots.alloc(ctx, cap));
        APPROX_CUDA(cudaMemsetAsync(slots.get(), 0, slots.bytes(), stream));
        if (hcap_ > 0) {
            DevHash nh{slots.get(), cap - 1};
            rehash_kernel<<<moving_grid(static_cast<int64_t>(hcap_)), kThreads, 0, stream>>>(hslot_.get(), hcap_, nh);
            APPROX_CUDA_LAUNCHED();
        }
        APPROX_CUDA(cudaStreamSynchronize(stream));
        hslot_ = std::move(slots);
        hcap_ = cap;
        tombs_ = 0;
        return Status::Ok();
    }

    // Adds at least `extra` buckets to the pool (copying the old pool); the
    // new buckets go on the free stack.
    Status grow_pool(int64_t extra, const ExecContext& ctx, cudaStream_t stream) {
        int64_t nb = std::max<int64_t>({nb_ + extra + extra / 4, nb_ + nb_ / 2, 1024});
        size_t slots = static_cast<size_t>(nb) * B, old_slots = static_cast<size_t>(nb_) * B;
        APPROX_TRY(charge(static_cast<int64_t>((slots - old_slots) * 24 + static_cast<size_t>(nb - nb_) * 4),
                          "the bucket pool"));
        DeviceBuffer<int64_t> pid;
        DeviceBuffer<double> px, py;
        DeviceBuffer<int32_t> stack;
        APPROX_TRY(pid.alloc(ctx, slots));
        APPROX_TRY(px.alloc(ctx, slots));
        APPROX_TRY(py.alloc(ctx, slots));
        APPROX_TRY(stack.alloc(ctx, static_cast<size_t>(nb)));
        if (old_slots > 0) {
            APPROX_CUDA(cudaMemcpyAsync(pid.get(), pid_.get(), old_slots * 8, cudaMemcpyDeviceToDevice, stream));
            APPROX_CUDA(cudaMemcpyAsync(px.get(), px_.get(), old_slots * 8, cudaMemcpyDeviceToDevice, stream));
            APPROX_CUDA(cudaMemcpyAsync(py.get(), py_.get(), old_slots * 8, cudaMemcpyDeviceToDevice, stream));
        }
        if (free_top_ > 0)
            APPROX_CUDA(cudaMemcpyAsync(stack.get(), stack_.get(), static_cast<size_t>(free_top_) * 4,
                                        cudaMemcpyDeviceToDevice, stream));
        APPROX_TRY(gpu::sequence(stack.get() + free_top_, nb - nb_, static_cast<int32_t>(nb_), stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        pid_ = std::move(pid);
        px_ = std::move(px);
        py_ = std::move(py);
        stack_ = std::move(stack);
        free_top_ += nb - nb_;
        nb_ = nb;
        return Status::Ok();
    }

    // A new directory with room for every cell's needs (count_ and new_count_).
    Status rebuild_dir(const ExecContext& ctx, cudaStream_t stream) {
        size_t C = static_cast<size_t>(cells_);
        DeviceBuffer<int64_t> caps, off;
        DeviceBuffer<int32_t> cap32, dir;
        APPROX_TRY(caps.alloc(ctx, C + 1));
        APPROX_TRY(off.alloc(ctx, C + 1));
        APPROX_TRY(cap32.alloc(ctx, C));
        dir_caps_kernel<<<moving_grid(cells_), kThreads, 0, stream>>>(cells_, count_.get(), new_count_.get(),
                                                                      caps.get(), cap32.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceScan::ExclusiveSum(p, bytes, caps.get(), off.get(), static_cast<int>(C + 1), stream);
        }));
        int64_t total = 0;
        APPROX_TRY(fetch(&total, off.get() + C, 1, stream, ctx));
        APPROX_TRY(charge(static_cast<int64_t>(caps.bytes() + total * 4) - static_cast<int64_t>(dir_.bytes()),
                          "the cells' bucket lists"));
        APPROX_TRY(dir.alloc(ctx, static_cast<size_t>(total)));
        dir_copy_kernel<<<moving_grid(cells_ * 32), kThreads, 0, stream>>>(cells_, count_.get(), dir_off_.get(),
                                                                           dir_.get(), off.get(), dir.get());
        APPROX_CUDA_LAUNCHED();
        APPROX_CUDA(cudaStreamSynchronize(stream));
        dir_ = std::move(dir);
        dir_off_ = std::move(off);
        dir_cap_ = std::move(cap32);
        return Status::Ok();
    }

    // The error for the first point outside the extent (the CPU engine's words).
    Status bad_point(size_t i, const double* xs, const double* ys) const {
        if (!std::isfinite(xs[i]) || !std::isfinite(ys[i]))
            return Status::Error(StatusCode::InvalidArgument, "point %zu has a non-finite coordinate (x = %g, y = %g)",
                                 i + 1, xs[i], ys[i]);
        return Status::Error(StatusCode::OutOfRange,
                             "point %zu (x = %.17g, y = %.17g) lies outside the extent [%.17g, %.17g] x [%.17g, %.17g]",
                             i + 1, xs[i], ys[i], g_.xmin, g_.xmax, g_.ymin, g_.ymax);
    }

    Status apply_batch(bool is_delete, const int64_t* ids, const double* xs, const double* ys, size_t n,
                       const ExecContext& ctx, int64_t& applied) override {
        Stopwatch total;
        transfer_ms_ = 0;
        BatchStats bs;
        std::snprintf(bs.op, sizeof bs.op, "%s", is_delete ? "delete" : "update");
        bs.entries = static_cast<int64_t>(n);
        if (static_cast<int64_t>(n) > kMaxBatch)
            return Status::Error(StatusCode::ProgramLimit, "a batch holds at most %lld entries",
                                 static_cast<long long>(kMaxBatch));
        cudaStream_t stream;
        APPROX_TRY(gpu::begin(ctx, stream));
        if (n == 0) {
            bs.ms_total = total.ms();
            last_update_ = bs;
            record(ctx, bs, 0);
            return Status::Ok();
        }
        const int64_t nn = static_cast<int64_t>(n);

        // scratch for n entries (grown, kept between batches); a batch refused
        // its scratch keeps none of it, so the refusal leaves the index's
        // memory as it was
        {
            Status st = reserve_batch_scratch(is_delete, n, ctx);
            if (!st.ok()) {
                release_batch_scratch();
                return st;
            }
        }
        APPROX_TRY(upload(d_ids_.get(), ids, n, stream));
        if (!is_delete) {
            APPROX_TRY(upload(d_xs_.get(), xs, n, stream));
            APPROX_TRY(upload(d_ys_.get(), ys, n, stream));
        }
        const double* dx = is_delete ? nullptr : d_xs_.get();
        const double* dy = is_delete ? nullptr : d_ys_.get();
        if (ctx.cancelled()) return cancelled_status();

        // room in the id table for every entry being new (invisible to readers)
        APPROX_TRY(ensure_hash(is_delete ? 0 : nn, ctx, stream));
        if (ctx.cancelled()) return cancelled_status();

        // validate, dedupe (stable sort by id; the last entry of an id wins), classify
        unsigned long long init[kCntN];
        for (int i = 0; i < kCntN; ++i) init[i] = 0;
        init[kCntBad] = ~0ull;
        init[kCntMin] = ~0ull;
        APPROX_CUDA(cudaMemcpyAsync(counters_.get(), init, sizeof init, cudaMemcpyHostToDevice, stream));
        stage_kernel<<<moving_grid(nn), kThreads, 0, stream>>>(d_ids_.get(), dx, dy, nn, g_, sidx0_.get(),
                                                               counters_.get());
        APPROX_CUDA_LAUNCHED();
        unsigned long long early[4];  // kCntBad, kCntFlag, kCntMin, kCntMax
        static_assert(kCntFlag == kCntBad + 1 && kCntMin == kCntBad + 2 && kCntMax == kCntBad + 3, "layout");
        APPROX_TRY(fetch(early, counters_.get() + kCntBad, 4, stream, ctx));
        if (early[0] != ~0ull) return bad_point(static_cast<size_t>(early[0]), xs, ys);
        if (ctx.cancelled()) return cancelled_status();
        const unsigned long long range[2] = {early[2], early[3]};
        const uint64_t base = range[0];
        id_keys_kernel<<<moving_grid(nn), kThreads, 0, stream>>>(d_ids_.get(), nn, base, ukey_.get());
        APPROX_CUDA_LAUNCHED();
        const int id_bits = bits_for(range[1] - range[0]);
        APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceRadixSort::SortPairs(p, bytes, ukey_.get(), ukey2_.get(), sidx0_.get(), sidx_.get(),
                                                   static_cast<int>(nn), 0, id_bits, stream);
        }));
        classify_kernel<<<moving_grid(nn), kThreads, 0, stream>>>(ukey2_.get(), base, skey_.get(), sidx_.get(), nn, dx,
                                                                  dy, g_, hash(), is_delete, ent_hs_.get(), dkey_.get(),
                                                                  dval_.get(), ikey_.get(), inp_.get(),
                                                                  counters_.get());
        APPROX_CUDA_LAUNCHED();
        unsigned long long cnt[kCntN];
        APPROX_TRY(fetch(cnt, counters_.get(), kCntN, stream, ctx));
        if (ctx.cancelled()) return cancelled_status();
        const int64_t n_del = static_cast<int64_t>(cnt[kCntDel]), n_ins = static_cast<int64_t>(cnt[kCntIns]);
        const int64_t n_inp = static_cast<int64_t>(cnt[kCntInp]), n_new = static_cast<int64_t>(cnt[kCntNew]);
        bs.distinct = static_cast<int64_t>(cnt[kCntDistinct]);
        if (objects_ + n_new > kMaxObjects)
            return Status::Error(StatusCode::ProgramLimit, "an index holds at most %lld objects",
                                 static_cast<long long>(kMaxObjects));
        if (ctx.cancelled()) return cancelled_status();

        // group deletes by (cell, position) and inserts by (cell, entry); plan every cell
        const int end_bit = 32 + bits_for(static_cast<uint64_t>(cells_ - 1));
        const bool structural = n_del > 0 || n_ins > 0;
        int64_t total_alloc = 0, total_free = 0;
        const size_t C = static_cast<size_t>(cells_);
        int32_t *db = nullptr, *de = nullptr, *ib = nullptr, *ie = nullptr;
        if (n_del > 0)
            APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                return cub::DeviceRadixSort::SortPairs(p, bytes, dkey_.get(), dkey2_.get(), dval_.get(), dval2_.get(),
                                                       static_cast<int>(n_del), 0, end_bit, stream);
            }));
        if (n_ins > 0)
            APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                return cub::DeviceRadixSort::SortKeys(p, bytes, ikey_.get(), ikey2_.get(), static_cast<int>(n_ins), 0,
                                                      end_bit, stream);
            }));
        if (structural) {
            APPROX_TRY(ensure(seg_, ctx, 4 * C));
            APPROX_TRY(ensure(alloc_, ctx, C + 1));
            APPROX_TRY(ensure(alloc_off_, ctx, C + 1));
            APPROX_TRY(ensure(freeb_, ctx, C + 1));
            APPROX_TRY(ensure(free_off_, ctx, C + 1));
            db = seg_.get();
            de = db + C;
            ib = de + C;
            ie = ib + C;
            APPROX_CUDA(cudaMemsetAsync(seg_.get(), 0, 4 * C * sizeof(int32_t), stream));
            if (n_del > 0) {
                segments_kernel<<<moving_grid(n_del), kThreads, 0, stream>>>(dkey2_.get(), n_del, db, de);
                APPROX_CUDA_LAUNCHED();
            }
            if (n_ins > 0) {
                segments_kernel<<<moving_grid(n_ins), kThreads, 0, stream>>>(ikey2_.get(), n_ins, ib, ie);
                APPROX_CUDA_LAUNCHED();
            }
            plan_cells_kernel<<<moving_grid(cells_), kThreads, 0, stream>>>(cells_, count_.get(), db, de, ib, ie,
                                                                            dir_cap_.get(), new_count_.get(),
                                                                            alloc_.get(), freeb_.get(),
                                                                            counters_.get());
            APPROX_CUDA_LAUNCHED();
            APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                return cub::DeviceScan::ExclusiveSum(p, bytes, alloc_.get(), alloc_off_.get(), static_cast<int>(C + 1),
                                                     stream);
            }));
            APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                return cub::DeviceScan::ExclusiveSum(p, bytes, freeb_.get(), free_off_.get(), static_cast<int>(C + 1),
                                                     stream);
            }));
            int32_t totals[2];
            APPROX_TRY(fetch(&totals[0], alloc_off_.get() + C, 1, stream, ctx));
            APPROX_TRY(fetch(&totals[1], free_off_.get() + C, 1, stream, ctx));
            APPROX_TRY(fetch(cnt, counters_.get(), kCntN, stream, ctx));
            total_alloc = totals[0];
            total_free = totals[1];
            if (ctx.cancelled()) return cancelled_status();
            // grow before applying: pool, then the directory
            if (total_alloc > free_top_) APPROX_TRY(grow_pool(total_alloc - free_top_, ctx, stream));
            if (ctx.cancelled()) return cancelled_status();
            if (cnt[kCntFlag] != 0) APPROX_TRY(rebuild_dir(ctx, stream));
        }
        bs.ms_stage = total.ms();

        // the last cancel check: from here on only kernels that cannot fail on their own
        if (ctx.cancelled()) return cancelled_status();
        Stopwatch apply;
        Store s = store();
        DevHash h = hash();
        const int64_t stack_base = free_top_ - total_alloc;
        if (structural) {
            if (total_alloc > 0) {
                alloc_kernel<<<moving_grid(total_alloc), kThreads, 0, stream>>>(total_alloc, alloc_off_.get(), cells_,
                                                                                s, stack_.get(), stack_base);
                APPROX_CUDA_LAUNCHED();
            }
            if (n_del > 0) {
                delete_kernel<<<moving_grid(n_del), kThreads, 0, stream>>>(dkey2_.get(), dval2_.get(), n_del, db, de, s,
                                                                           h, is_delete, ent_hs_.get());
                APPROX_CUDA_LAUNCHED();
            }
            if (n_ins > 0) {
                insert_kernel<<<moving_grid(n_ins), kThreads, 0, stream>>>(ikey2_.get(), n_ins, ib, db, de, s, h,
                                                                           skey_.get(), sidx_.get(), dx, dy,
                                                                           ent_hs_.get());
                APPROX_CUDA_LAUNCHED();
            }
            if (total_free > 0) {
                free_kernel<<<moving_grid(total_free), kThreads, 0, stream>>>(total_free, free_off_.get(), cells_,
                                                                              new_count_.get(), s, stack_.get(),
                                                                              stack_base);
                APPROX_CUDA_LAUNCHED();
            }
            std::swap(count_, new_count_);
            s = store();
        }
        if (n_inp > 0) {
            inplace_kernel<<<moving_grid(n_inp), kThreads, 0, stream>>>(inp_.get(), n_inp, ent_hs_.get(), h, s,
                                                                        sidx_.get(), dx, dy);
            APPROX_CUDA_LAUNCHED();
        }
        // Bookkeeping first: the kernels are queued and will run; an error
        // reported by the synchronisation below is a device fault.
        free_top_ = stack_base + total_free;
        const int64_t n_removed = is_delete ? n_del : 0;
        objects_ += n_new - n_removed;
        live_ += n_new - n_removed;
        tombs_ += n_removed;
        if (structural) sat_dirty_ = true;
        APPROX_CUDA(cudaStreamSynchronize(stream));
        bs.ms_apply = apply.ms();
        bs.inserted = n_new;
        bs.moved = is_delete ? 0 : n_del;
        bs.in_place = n_inp;
        bs.deleted = n_removed;
        bs.ms_transfer = transfer_ms_;
        bs.ms_total = total.ms();
        last_update_ = bs;
        applied = is_delete ? n_removed : bs.distinct;
        record(ctx, bs, nn);
        return Status::Ok();
    }

    Status ensure_sat(const ExecContext& ctx, cudaStream_t stream) {
        if (sat_dirty_ && ctx.cancelled()) return cancelled_status();
        if (!sat_dirty_ && sat_.size() > 0) return Status::Ok();
        size_t w1 = static_cast<size_t>(g_.nx) + 1, h1 = static_cast<size_t>(g_.ny) + 1;
        APPROX_TRY(ensure(sat_, ctx, w1 * h1));
        APPROX_CUDA(cudaMemsetAsync(sat_.get(), 0, w1 * h1 * sizeof(int64_t), stream));
        sat_rows_kernel<<<moving_grid(int64_t(g_.ny) * 32), kThreads, 0, stream>>>(count_.get(), g_.nx, g_.ny,
                                                                                   sat_.get());
        APPROX_CUDA_LAUNCHED();
        sat_cols_kernel<<<moving_grid(g_.nx), kThreads, 0, stream>>>(g_.nx, g_.ny, sat_.get());
        APPROX_CUDA_LAUNCHED();
        sat_dirty_ = false;
        return Status::Ok();
    }

    Status count_queries(const Rect* qs, size_t nq, const ExecContext& ctx, int64_t* counts, BatchStats& bs) {
        transfer_ms_ = 0;
        bs.entries = static_cast<int64_t>(nq);
        if (nq == 0) return Status::Ok();
        Stopwatch setup;
        cudaStream_t stream;
        APPROX_TRY(gpu::begin(ctx, stream));
        APPROX_TRY(ensure(rects_, ctx, nq));
        APPROX_TRY(ensure(qcnt_, ctx, nq));
        APPROX_TRY(upload(rects_.get(), qs, nq, stream));
        bs.ms_stage = setup.ms();
        Stopwatch search;
        const int64_t NQ = static_cast<int64_t>(nq);
        int64_t chunk = std::min(NQ, kQueryChunk);
        Store s = store();
        for (int64_t q0 = 0; q0 < NQ;) {
            if (ctx.cancelled()) return cancelled_status();
            const int64_t qn = std::min(chunk, NQ - q0);
            APPROX_TRY(ensure(qr_, ctx, static_cast<size_t>(qn)));
            APPROX_TRY(ensure(ncand_, ctx, static_cast<size_t>(qn) + 1));
            APPROX_TRY(ensure(cand_off_, ctx, static_cast<size_t>(qn) + 1));
            unsigned long long init[kCntN];
            for (int i = 0; i < kCntN; ++i) init[i] = 0;
            init[kCntBad] = ~0ull;
            APPROX_CUDA(cudaMemcpyAsync(counters_.get(), init, sizeof init, cudaMemcpyHostToDevice, stream));
            query_setup_kernel<<<moving_grid(qn), kThreads, 0, stream>>>(rects_.get(), q0, qn, g_, qr_.get(),
                                                                         ncand_.get(), qcnt_.get(), counters_.get());
            APPROX_CUDA_LAUNCHED();
            APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                return cub::DeviceScan::ExclusiveSum(p, bytes, ncand_.get(), cand_off_.get(), static_cast<int>(qn + 1),
                                                     stream);
            }));
            unsigned long long cnt[kCntN];
            int64_t tc = 0;
            APPROX_TRY(fetch(&tc, cand_off_.get() + qn, 1, stream, ctx));
            APPROX_TRY(fetch(cnt, counters_.get(), kCntN, stream, ctx));
            if (cnt[kCntBad] != ~0ull)
                return Status::Error(StatusCode::InvalidArgument, "query %llu has a NaN bound", cnt[kCntBad] + 1);
            if (tc > kMaxCandidates && qn > 1) {  // too many candidates at once: a smaller chunk
                chunk = std::max<int64_t>(1, qn / 2);
                continue;
            }
            if (cnt[kCntFlag] != 0) {
                APPROX_TRY(ensure_sat(ctx, stream));
                interior_kernel<<<moving_grid(qn), kThreads, 0, stream>>>(qr_.get(), q0, qn, sat_.get(),
                                                                          int64_t(g_.nx) + 1, qcnt_.get());
                APPROX_CUDA_LAUNCHED();
            }
            if (tc > 0) {
                APPROX_TRY(ensure(cand_c_, ctx, static_cast<size_t>(tc)));
                APPROX_TRY(ensure(cand_q_, ctx, static_cast<size_t>(tc)));
                APPROX_TRY(ensure(nb_buf_, ctx, static_cast<size_t>(tc) + 1));
                APPROX_TRY(ensure(wb_off_, ctx, static_cast<size_t>(tc) + 1));
                ring_candidates_kernel<<<moving_grid(tc), kThreads, 0, stream>>>(tc, cand_off_.get(), qn, q0, qr_.get(),
                                                                                 g_, count_.get(), cand_c_.get(),
                                                                                 cand_q_.get(), nb_buf_.get());
                APPROX_CUDA_LAUNCHED();
                APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                    return cub::DeviceScan::ExclusiveSum(p, bytes, nb_buf_.get(), wb_off_.get(),
                                                         static_cast<int>(tc + 1), stream);
                }));
                int64_t wb = 0;
                APPROX_TRY(fetch(&wb, wb_off_.get() + tc, 1, stream, ctx));
                if (wb > 0) {
                    int64_t warps = (wb + kItemsPerWarp - 1) / kItemsPerWarp;
                    count_buckets_kernel<<<moving_grid(warps * 32), kThreads, 0, stream>>>(
                        wb_off_.get(), tc, wb, cand_c_.get(), cand_q_.get(), rects_.get(), s, qcnt_.get());
                    APPROX_CUDA_LAUNCHED();
                }
                bs.candidate_cells += tc;
                bs.checked_objects += wb * B;
            }
            q0 += qn;
        }
        APPROX_TRY(fetch(reinterpret_cast<unsigned long long*>(counts), qcnt_.get(), nq, stream, ctx));
        for (size_t i = 0; i < nq; ++i) bs.results += counts[i];
        bs.ms_transfer = transfer_ms_;
        bs.ms_apply = search.ms();
        return Status::Ok();
    }

    Status list_range(const Rect& q, const ExecContext& ctx, int64_t* out, size_t capacity, size_t& found) override {
        Stopwatch total;
        BatchStats bs;
        int64_t n = 0;
        APPROX_TRY(count_queries(&q, 1, ctx, &n, bs));
        std::snprintf(bs.op, sizeof bs.op, "range");
        found = static_cast<size_t>(n);
        int32_t c0, c1, r0, r1;
        if (n > 0 && found <= capacity && g_.cell_range(q, c0, c1, r0, r1)) {
            cudaStream_t stream;
            APPROX_TRY(gpu::begin(ctx, stream));
            const int64_t tc = (int64_t(c1) - c0 + 1) * (int64_t(r1) - r0 + 1);
            APPROX_TRY(ensure(cand_c_, ctx, static_cast<size_t>(tc)));
            APPROX_TRY(ensure(cand_q_, ctx, static_cast<size_t>(tc)));
            APPROX_TRY(ensure(nb_buf_, ctx, static_cast<size_t>(tc) + 1));
            APPROX_TRY(ensure(wb_off_, ctx, static_cast<size_t>(tc) + 1));
            APPROX_TRY(ensure(out_, ctx, found));
            range_candidates_kernel<<<moving_grid(tc), kThreads, 0, stream>>>(tc, QRange{c0, c1, r0, r1}, g_,
                                                                              count_.get(), cand_c_.get(),
                                                                              cand_q_.get(), nb_buf_.get());
            APPROX_CUDA_LAUNCHED();
            APPROX_TRY(cub_.run(ctx, [&](void* p, size_t& bytes) {
                return cub::DeviceScan::ExclusiveSum(p, bytes, nb_buf_.get(), wb_off_.get(), static_cast<int>(tc + 1),
                                                     stream);
            }));
            int64_t wb = 0;
            APPROX_TRY(fetch(&wb, wb_off_.get() + tc, 1, stream, ctx));
            APPROX_CUDA(cudaMemsetAsync(counters_.get(), 0, sizeof(unsigned long long), stream));
            if (wb > 0) {
                int64_t warps = (wb + kItemsPerWarp - 1) / kItemsPerWarp;
                emit_buckets_kernel<<<moving_grid(warps * 32), kThreads, 0, stream>>>(
                    wb_off_.get(), tc, wb, cand_c_.get(), cand_q_.get(), q, store(), out_.get(), n, counters_.get());
                APPROX_CUDA_LAUNCHED();
            }
            unsigned long long emitted = 0;
            APPROX_TRY(fetch(&emitted, counters_.get(), 1, stream, ctx));
            if (static_cast<int64_t>(emitted) != n)
                return Status::Error(StatusCode::Internal, "range: counted %lld objects but found %llu",
                                     static_cast<long long>(n), emitted);
            APPROX_TRY(fetch(out, out_.get(), found, stream, ctx));
            std::sort(out, out + found);
        }
        bs.results = n;
        bs.ms_transfer = transfer_ms_;
        bs.ms_total = total.ms();
        last_query_ = bs;
        record(ctx, bs, 1);
        return Status::Ok();
    }

    Grid grid_;
    GridMap g_;
    int64_t cells_;
    int64_t nb_ = 0, free_top_ = 0, objects_ = 0, live_ = 0, tombs_ = 0;
    uint64_t hcap_ = 0;
    bool sat_dirty_ = true;
    double transfer_ms_ = 0;
    BatchStats last_update_, last_query_;
    CubTemp cub_;

    // the index
    DeviceBuffer<int32_t> count_, new_count_, dir_cap_, dir_, stack_;
    DeviceBuffer<int64_t> dir_off_;
    DeviceBuffer<int64_t> pid_;
    DeviceBuffer<double> px_, py_;
    DeviceBuffer<HSlot> hslot_;
    DeviceBuffer<int64_t> sat_;
    DeviceBuffer<unsigned long long> counters_;
    // batch scratch
    DeviceBuffer<int64_t> d_ids_, skey_;
    DeviceBuffer<double> d_xs_, d_ys_;
    DeviceBuffer<uint32_t> sidx0_, sidx_, dval_, dval2_, inp_;
    DeviceBuffer<uint64_t> ent_hs_, dkey_, dkey2_, ikey_, ikey2_, ukey_, ukey2_;
    DeviceBuffer<int32_t> seg_, alloc_, alloc_off_, freeb_, free_off_;
    // query scratch
    DeviceBuffer<Rect> rects_;
    DeviceBuffer<unsigned long long> qcnt_;
    DeviceBuffer<QRange> qr_;
    DeviceBuffer<int64_t> ncand_, cand_off_, nb_buf_, wb_off_, out_;
    DeviceBuffer<uint32_t> cand_c_, cand_q_;
};

}  // namespace

Status create_gpu(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out, const MemoryBudget& budget) {
    out = nullptr;
    APPROX_TRY(check_grid(g, max_cells));
    APPROX_TRY(check_budget(budget, 0, GpuIndex::empty_bytes(int64_t(g.cells_x) * g.cells_y),
                            "an empty index of this many cells"));
    return guarded([&] {
        std::unique_ptr<GpuIndex> idx(new GpuIndex(g));
        idx->set_budget(budget);
        APPROX_TRY(idx->init(ctx));
        if (ctx.stats) {
            ctx.stats->device = Device::Gpu;
            ctx.stats->cpu_threads = 0;
        }
        out = idx.release();
        return Status::Ok();
    });
}

}  // namespace approx::moving
