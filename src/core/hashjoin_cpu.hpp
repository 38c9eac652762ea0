// The CPU engine's hash-table build (hashjoin.hpp, "1. Table"): the stable
// parallel partition (also the join's), the table storage, phase 2 per bucket
// and the backend of build_table() (hashjoin_build.hpp). Internal to
// hashjoin.cpp; a header so that the unit tests can run the same build with a
// test gate (test/unit/hashjoin_seam.hpp) without a hook in the product.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "hashjoin_build.hpp"
#include "hashjoin_internal.hpp"

namespace approx::hashjoin::cpu {

constexpr size_t kRowsPerTask = size_t(1) << 16;

inline size_t tasks_for(size_t n, size_t per_task) { return (n + per_task - 1) / per_task; }

// Stable parallel partition of rows [0, n) into `parts` parts: part_of(i)
// gives the part; counts() sees the per-part totals before anything moves
// (returning false stops, e.g. a bucket over capacity); place(i, dest) moves
// row i to position dest. offsets gets parts + 1 entries.
template <class PartOf, class Check, class Place>
Status partition(const ExecContext& ctx, size_t n, uint32_t parts, PartOf&& part_of, Check&& check, Place&& place,
                 std::vector<uint64_t>& offsets, bool& stopped) {
    stopped = false;
    size_t threads = ctx.cpu_threads < 1 ? 1 : static_cast<size_t>(ctx.cpu_threads);
    size_t chunks = std::max<size_t>(1, std::min(threads, n / (size_t(1) << 15)));
    size_t chunk_len = (n + chunks - 1) / chunks;
    if (chunk_len == 0) chunk_len = 1;
    std::vector<uint32_t> ids(n);
    std::vector<uint64_t> hist(chunks * static_cast<size_t>(parts), 0);
    APPROX_TRY(parallel_for(ctx, chunks, [&](size_t c, size_t) {
        size_t lo = c * chunk_len, hi = std::min(n, lo + chunk_len);
        uint64_t* h = hist.data() + c * parts;
        for (size_t i = lo; i < hi; ++i) {
            uint32_t p = part_of(i);
            ids[i] = p;
            ++h[p];
        }
        return Status::Ok();
    }));
    // Per part: each chunk's start (relative), then the totals.
    std::vector<uint64_t> totals(parts);
    size_t part_tasks = tasks_for(parts, 4096);
    APPROX_TRY(parallel_for(ctx, part_tasks, [&](size_t t, size_t) {
        size_t lo = t * 4096, hi = std::min<size_t>(parts, lo + 4096);
        for (size_t p = lo; p < hi; ++p) {
            uint64_t run = 0;
            for (size_t c = 0; c < chunks; ++c) {
                uint64_t v = hist[c * parts + p];
                hist[c * parts + p] = run;
                run += v;
            }
            totals[p] = run;
        }
        return Status::Ok();
    }));
    if (!check(totals)) {
        stopped = true;
        return Status::Ok();
    }
    offsets.assign(static_cast<size_t>(parts) + 1, 0);
    for (uint32_t p = 0; p < parts; ++p) offsets[p + 1] = offsets[p] + totals[p];
    return parallel_for(ctx, chunks, [&](size_t c, size_t) {
        size_t lo = c * chunk_len, hi = std::min(n, lo + chunk_len);
        uint64_t* h = hist.data() + c * parts;
        for (size_t i = lo; i < hi; ++i) {
            uint32_t p = ids[i];
            place(i, offsets[p] + h[p]++);
        }
        return Status::Ok();
    });
}

class CpuStorage final : public TableStorage {
public:
    std::vector<Slot> slots;
    std::vector<BucketMeta> meta;
    uint64_t seed = 0;
    uint32_t buckets = 0;

    // Optional (the join's): a blocked Bloom filter of the keys, 16 bits a
    // key in 64-bit words, 3 bits of one word per key (about 1% false
    // positives): 2 bytes a key where the table takes 22, so it stays in the
    // cache while a probe that misses it saves the table's 3 slot reads --
    // most probe rows of a selective join.
    std::vector<uint64_t> filter;
    int filter_bits = 0;  // log2 of the words

    bool get(int64_t key, int64_t& value) const { return lookup(slots.data(), meta.data(), buckets, seed, key, value); }

    size_t filter_word(uint64_t u) const { return filter_bits == 0 ? 0 : static_cast<size_t>(u >> (64 - filter_bits)); }
    static uint64_t filter_mask(uint64_t u) {
        return (uint64_t(1) << (u & 63)) | (uint64_t(1) << ((u >> 6) & 63)) | (uint64_t(1) << ((u >> 12) & 63));
    }
    // The filter of the table's n keys (seed must be final).
    Status build_filter(const int64_t* keys, size_t n, const ExecContext& ctx) {
        filter_bits = 0;
        while ((size_t(1) << filter_bits) * 4 < n && filter_bits < 40) ++filter_bits;
        filter.assign(size_t(1) << filter_bits, 0);
        return parallel_for(ctx, tasks_for(n, kRowsPerTask), [&](size_t t, size_t) {
            size_t lo = t * kRowsPerTask, hi = std::min(n, lo + kRowsPerTask);
            for (size_t i = lo; i < hi; ++i) {
                uint64_t u = mix_key(keys[i], seed);
                __atomic_fetch_or(&filter[filter_word(u)], filter_mask(u), __ATOMIC_RELAXED);
            }
            return Status::Ok();
        });
    }

    // Lookups of keys[0..count) in groups, with the filter words, then the
    // bucket metadata and the first two candidate slots of the keys that
    // pass the filter prefetched a group ahead: a single lookup is a chain of
    // cache misses, a group overlaps them. emit(i, found, value), misses of
    // the filter first within a group.
    template <class Emit>
    void get_many(const int64_t* keys, size_t count, Emit&& emit) const {
        constexpr size_t kGroup = 16;
        uint64_t u[kGroup];
        uint32_t b[kGroup];
        size_t at[kGroup];
        const bool filtered = !filter.empty();
        for (size_t g = 0; g < count; g += kGroup) {
            size_t len = std::min(kGroup, count - g);
            for (size_t i = 0; i < len; ++i) {
                u[i] = mix_key(keys[g + i], seed);
                if (filtered) __builtin_prefetch(&filter[filter_word(u[i])]);
            }
            size_t cand = 0;
            for (size_t i = 0; i < len; ++i) {
                const uint64_t m = filtered ? filter_mask(u[i]) : 0;
                if (filtered && (filter[filter_word(u[i])] & m) != m) {
                    emit(g + i, false, int64_t(0));
                    continue;
                }
                u[cand] = u[i];
                at[cand++] = g + i;
            }
            for (size_t i = 0; i < cand; ++i) {
                b[i] = bucket_of(u[i], buckets);
                __builtin_prefetch(&meta[b[i]]);
            }
            for (size_t i = 0; i < cand; ++i) {
                const Slot* base = slots.data() + static_cast<size_t>(b[i]) * kBucketSlots;
                __builtin_prefetch(base + slot_of(u[i], meta[b[i]].mul[0]));
                __builtin_prefetch(base + kSubtableSlots + slot_of(u[i], meta[b[i]].mul[1]));
            }
            for (size_t i = 0; i < cand; ++i) {
                int64_t v = 0;
                bool f = get(keys[at[i]], v);
                emit(at[i], f, v);
            }
        }
    }

    Status find(const int64_t* keys, size_t m, int64_t* values, uint8_t* found, const ExecContext& ctx) const override {
        Stopwatch sw;
        Status st = parallel_for(ctx, tasks_for(m, kRowsPerTask), [&](size_t t, size_t) {
            size_t lo = t * kRowsPerTask, hi = std::min(m, lo + kRowsPerTask);
            get_many(keys + lo, hi - lo, [&](size_t i, bool f, int64_t v) {
                values[lo + i] = f ? v : 0;
                found[lo + i] = f ? 1 : 0;
            });
            return Status::Ok();
        });
        if (ctx.stats) ctx.stats->ms_compute = sw.ms();
        return st;
    }
};

// Phase 2 for one bucket of c keys: 3-way cuckoo insertion, new multipliers
// after a failed attempt. Returns false when every attempt failed.
struct BucketWork {
    uint64_t u[kBucketCapacity];
    uint16_t pos[kBucketCapacity][kSubtables];
    int16_t slot_key[kBucketSlots];
};

template <class Gate>
bool build_bucket(const int64_t* k, const int64_t* v, int c, uint32_t b, uint64_t seed, const BuildOptions& o,
                  const Gate& gate, BucketWork& w, Slot* out, BucketMeta& meta, int64_t& restarts, bool& dup,
                  int64_t& dup_key) {
    for (int i = 0; i < c; ++i) w.u[i] = mix_key(k[i], seed);
    for (int attempt = 0; attempt < o.max_bucket_attempts; ++attempt) {
        uint64_t mul[kSubtables];
        Filler fill[kSubtables];
        bool ok = true;
        for (int j = 0; j < kSubtables; ++j) {
            mul[j] = bucket_multiplier(seed, b, static_cast<uint32_t>(attempt), j);
            ok = ok && make_filler(seed, mul[j], fill[j]);
        }
        for (int i = 0; i < c; ++i)
            for (int j = 0; j < kSubtables; ++j) w.pos[i][j] = static_cast<uint16_t>(slot_of(w.u[i], mul[j]));
        std::fill(w.slot_key, w.slot_key + kBucketSlots, int16_t(-1));
        for (int i = 0; i < c && ok; ++i) {
            int cur = i, sub = 0;
            for (int steps = 0;; ++steps) {
                int p = sub * kSubtableSlots + w.pos[cur][sub];
                int evicted = w.slot_key[p];
                w.slot_key[p] = static_cast<int16_t>(cur);
                if (evicted < 0) break;
                if (steps + 1 >= o.max_cuckoo_rounds) {
                    ok = false;
                    break;
                }
                cur = evicted;  // it sat in sub-table `sub`: on to the next one
                sub = (sub + 1) % kSubtables;
            }
        }
        if (!gate.accepts(attempt)) ok = false;
        if (!ok) {
            ++restarts;
            continue;
        }
        // Two equal keys hash alike: a copy would sit in one of the other's slots.
        for (int i = 0; i < c && !dup; ++i)
            for (int j = 0; j < kSubtables; ++j) {
                int idx = w.slot_key[j * kSubtableSlots + w.pos[i][j]];
                if (idx >= 0 && idx != i && k[idx] == k[i]) {
                    dup = true;
                    dup_key = k[i];
                    break;
                }
            }
        for (int s = 0; s < kBucketSlots; ++s) {
            int idx = w.slot_key[s];
            if (idx >= 0) {
                out[s].key = k[idx];
                out[s].value = v[idx];
            } else {
                out[s].key = filler_key(fill[s / kSubtableSlots], static_cast<uint32_t>(s % kSubtableSlots));
                out[s].value = 0;
            }
        }
        for (int j = 0; j < kSubtables; ++j) meta.mul[j] = mul[j];
        meta.attempt = static_cast<uint32_t>(attempt);
        meta.keys = static_cast<uint32_t>(c);
        return true;
    }
    // Every attempt failed: more than three equal keys never fit; say so.
    if (find_duplicate(k, static_cast<size_t>(c), dup_key)) dup = true;
    return false;
}

// The CPU phases of build_table() (hashjoin_build.hpp): phase 1 by a stable
// parallel partition into bk/bv, phase 2 over buckets in parallel; `gate`
// decides which converged bucket attempts stand (EveryAttempt in the product).
template <class Gate = EveryAttempt>
class CpuBuild {
public:
    Gate gate{};

    CpuBuild(const int64_t* keys, const int64_t* values, size_t n, uint32_t buckets, const ExecContext& ctx,
             const BuildOptions& o, bool check_duplicates, CpuStorage& st)
        : keys_(keys),
          values_(values),
          n_(n),
          buckets_(buckets),
          ctx_(ctx),
          o_(o),
          check_duplicates_(check_duplicates),
          st_(st),
          bk_(n),
          bv_(n) {}

    Status spread(uint64_t seed, bool& overflow) {
        bool stopped = false;
        APPROX_TRY(partition(
            ctx_, n_, buckets_, [&](size_t i) { return bucket_of(mix_key(keys_[i], seed), buckets_); },
            [&](const std::vector<uint64_t>& totals) {
                for (uint64_t t : totals)
                    if (t > static_cast<uint64_t>(kBucketCapacity)) return false;
                return true;
            },
            [&](size_t i, uint64_t dest) {
                bk_[dest] = keys_[i];
                bv_[dest] = values_ ? values_[i] : static_cast<int64_t>(i);
            },
            offsets_, stopped));
        overflow = stopped;
        return Status::Ok();
    }

    bool find_duplicate(int64_t& key) const { return check_duplicates_ && hashjoin::find_duplicate(keys_, n_, key); }

    Status build_buckets(uint64_t seed, BucketsResult& r) {
        st_.seed = seed;
        st_.buckets = buckets_;
        st_.slots.assign(static_cast<size_t>(buckets_) * kBucketSlots, Slot{0, 0});
        st_.meta.assign(buckets_, BucketMeta{});
        std::atomic<bool> failed{false}, dup_found{false};
        std::atomic<int64_t> restarts{0}, dup_key_shared{0};
        std::atomic<int> max_keys{0};
        const size_t per_task = 256;
        size_t threads = ctx_.cpu_threads < 1 ? 1 : static_cast<size_t>(ctx_.cpu_threads);
        std::vector<std::unique_ptr<BucketWork>> work(std::min(threads, tasks_for(buckets_, per_task)) + 1);
        APPROX_TRY(parallel_for(ctx_, tasks_for(buckets_, per_task), [&](size_t t, size_t worker) {
            if (!work[worker]) work[worker].reset(new BucketWork);
            int64_t local_restarts = 0;
            int local_max = 0;
            size_t lo = t * per_task, hi = std::min<size_t>(buckets_, lo + per_task);
            for (size_t b = lo; b < hi && !failed.load(std::memory_order_relaxed); ++b) {
                int c = static_cast<int>(offsets_[b + 1] - offsets_[b]);
                local_max = std::max(local_max, c);
                bool dup = false;
                int64_t dup_key = 0;
                bool ok = build_bucket(bk_.data() + offsets_[b], bv_.data() + offsets_[b], c, static_cast<uint32_t>(b),
                                       seed, o_, gate, *work[worker], st_.slots.data() + b * kBucketSlots, st_.meta[b],
                                       local_restarts, dup, dup_key);
                if (dup && !dup_found.exchange(true)) dup_key_shared.store(dup_key);
                if (!ok) failed.store(true);
            }
            restarts.fetch_add(local_restarts);
            int prev = max_keys.load();
            while (local_max > prev && !max_keys.compare_exchange_weak(prev, local_max)) {
            }
            return Status::Ok();
        }));
        r.restarts = restarts.load();
        r.dup = dup_found.load();
        r.dup_key = dup_key_shared.load();
        r.failed = failed.load();
        r.max_keys = max_keys.load();
        return Status::Ok();
    }

    Status finish(uint64_t) { return Status::Ok(); }

    void abandon() {
        st_.slots.clear();
        st_.meta.clear();
    }

private:
    const int64_t* keys_;
    const int64_t* values_;
    size_t n_;
    uint32_t buckets_;
    const ExecContext& ctx_;
    const BuildOptions& o_;
    bool check_duplicates_;
    CpuStorage& st_;
    std::vector<int64_t> bk_, bv_;  // the pairs, bucket by bucket
    std::vector<uint64_t> offsets_;
};

// A table built into st by the phases of Backend (CpuBuild<> in the product).
template <class Backend = CpuBuild<>>
Status build_cpu_storage(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                         const BuildOptions& o, bool check_duplicates, CpuStorage& st, TableInfo& info) {
    APPROX_TRY(check_options(o));
    if (n > kMaxTableKeys)
        return Status::Error(StatusCode::ProgramLimit, "a hash table holds at most %llu keys, not %zu",
                             static_cast<unsigned long long>(kMaxTableKeys), n);
    uint32_t buckets = bucket_count(n, o);
    info = TableInfo();
    info.device = Device::Cpu;
    Backend backend(keys, values, n, buckets, ctx, o, check_duplicates, st);
    return build_table(backend, n, buckets, ctx, o, info);
}

}  // namespace approx::hashjoin::cpu
