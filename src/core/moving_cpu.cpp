// Moving objects: the CPU engine (see moving.hpp; moving.cpp holds what both
// engines share and create(), which picks one).
//
// The CPU engine follows the same plan as the GPU one: stage and plan the whole
// batch (dedupe by a stable radix sort on id keeping the last entry, classify
// against the id table, group deletes and inserts by cell with radix sorts,
// compute every touched cell's bucket needs, grow the pool, the cells' bucket
// lists and the id table), check for cancel one last time, then apply: every
// touched cell is owned by one worker thread that takes its new buckets, runs
// its deletes (swap with the cell's last object, in descending position
// order), its inserts (appends) and frees its surplus buckets; then all in-place
// updates in parallel. Nothing in the apply phase allocates or fails; it runs
// in tasks of whole cells (then chunks of in-place updates) that log what they
// overwrite, and the cancel callback is polled between tasks: a cancel undoes
// the tasks already done, so a batch is applied entirely or not at all. Every
// loop of the staging polls at least every kPollEntries entries.
//
// Memory: scratch, the id table, the bucket pool and the cells' bucket lists
// are checked against the index's MemoryBudget before they grow.
#include "moving.hpp"
#include "hash_mix.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace approx::moving {

namespace {

constexpr int B = kBucketSlots;
constexpr uint32_t kEmpty = 0, kFull = 1, kTomb = 2;

inline uint64_t pack(uint32_t cell, uint32_t k) { return (uint64_t(cell) << 32) | k; }

inline uint64_t next_pow2(uint64_t v) {
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

int bits_for(uint64_t max_value) {
    int b = 1;
    while (b < 64 && (max_value >> b) != 0) ++b;
    return b;
}

// An array of trivially copyable T that is never initialised on allocation
// (std::vector's value-initialisation of a few hundred MB is one long
// unpolled loop): its pages are touched first by the chunked, polled loops.
template <class T>
class RawBuf {
public:
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }
    T* data() { return p_.get(); }
    const T* data() const { return p_.get(); }
    size_t size() const { return n_; }
    size_t capacity() const { return n_; }
    void swap(RawBuf& o) {
        p_.swap(o.p_);
        std::swap(n_, o.n_);
    }
    // n elements, contents not kept.
    void reset(size_t n) {
        p_.reset(new T[n]);
        n_ = n;
    }

private:
    std::unique_ptr<T[]> p_;
    size_t n_ = 0;
};

// Grows scratch v to at least n elements (contents not kept).
template <class T>
void ensure_size(RawBuf<T>& v, size_t n) {
    if (v.size() < n) v.reset(n);
}

// Grows v to at least n elements (never shrinks; contents beyond the old size
// are value-initialised once). The capacity becomes exactly n, so that
// growth_bytes() predicted it.
template <class T>
void ensure_size(std::vector<T>& v, size_t n) {
    if (v.size() >= n) return;
    if (v.capacity() < n) v.reserve(n);
    v.resize(n);
}

// Bytes ensure_size(v, n) adds.
template <class V>
int64_t growth_bytes(const V& v, size_t n) {
    return v.capacity() >= n ? 0 : static_cast<int64_t>((n - v.capacity()) * sizeof(v[0]));
}

// Splits [0, n) into chunks for parallel_for: a few per thread, but never more
// than max_chunk elements (the cancel callback is polled between chunks).
struct Chunks {
    size_t n, count, size;
    Chunks(size_t n_, int threads, size_t min_chunk = 8192, size_t max_chunk = kPollEntries) : n(n_) {
        size_t t = threads < 1 ? 1 : static_cast<size_t>(threads);
        count = n / min_chunk;
        if (count > t * 8) count = t * 8;
        if (count < 1) count = 1;
        size = (n + count - 1) / count;
        if (size > max_chunk) size = max_chunk;
        if (size == 0) size = 1;
        count = (n + size - 1) / size;
        if (count == 0) count = 1;
    }
    size_t begin(size_t c) const { return std::min(n, c * size); }
    size_t end(size_t c) const { return std::min(n, (c + 1) * size); }
};

// Stable LSD radix sort (8-bit digits) of (keys, vals)[0, n) on the low `bits`
// bits of the keys, in parallel; passes whose digit is the same everywhere are
// skipped. k2/v2 are scratch (grown as needed); the result is in keys/vals.
Status radix_sort(RawBuf<uint64_t>& keys, RawBuf<uint32_t>& vals, RawBuf<uint64_t>& k2, RawBuf<uint32_t>& v2, size_t n,
                  int bits, const ExecContext& ctx) {
    if (n <= 1) return Status::Ok();
    ensure_size(k2, n);
    ensure_size(v2, n);
    Chunks ch(n, ctx.cpu_threads, 32768);
    std::vector<size_t> hist(ch.count * 256);
    for (int shift = 0; shift < bits; shift += 8) {
        std::fill(hist.begin(), hist.end(), 0);
        APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
            size_t* h = &hist[c * 256];
            for (size_t i = ch.begin(c); i < ch.end(c); ++i) ++h[(keys[i] >> shift) & 0xff];
            return Status::Ok();
        }));
        bool trivial = false;
        for (int d = 0; d < 256 && !trivial; ++d) {
            size_t total = 0;
            for (size_t c = 0; c < ch.count; ++c) total += hist[c * 256 + d];
            if (total == n)
                trivial = true;
            else if (total != 0)
                break;
        }
        if (trivial) continue;
        size_t run = 0;
        for (int d = 0; d < 256; ++d)
            for (size_t c = 0; c < ch.count; ++c) {
                size_t v = hist[c * 256 + d];
                hist[c * 256 + d] = run;
                run += v;
            }
        APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
            size_t* off = &hist[c * 256];
            for (size_t i = ch.begin(c); i < ch.end(c); ++i) {
                size_t pos = off[(keys[i] >> shift) & 0xff]++;
                k2[pos] = keys[i];
                v2[pos] = vals[i];
            }
            return Status::Ok();
        }));
        keys.swap(k2);
        vals.swap(v2);
    }
    return Status::Ok();
}

inline uint32_t state_load(const uint32_t* s) { return __atomic_load_n(s, __ATOMIC_RELAXED); }
inline void state_store(uint32_t* s, uint32_t v) { __atomic_store_n(s, v, __ATOMIC_RELAXED); }

// id -> packed (cell, k): open addressing, linear probing, separate state words
// (ids are arbitrary int64, so no key value can mean "empty"). Inserts of new
// keys claim an empty slot with a CAS, so workers may insert concurrently while
// others look up keys that existed before (their probe chains hold no empty
// slot) or tombstone existing keys.
struct HostHash {
    RawBuf<int64_t> key;
    RawBuf<uint64_t> val;
    RawBuf<uint32_t> state;
    uint64_t mask = 0;
    int64_t live = 0, tombs = 0;

    uint64_t capacity() const { return state.size(); }

    int64_t find(int64_t k) const {
        if (state.size() == 0) return -1;
        uint64_t s = mix64(static_cast<uint64_t>(k)) & mask;
        for (uint64_t probes = 0; probes <= mask; ++probes) {
            uint32_t st = state_load(&state[s]);
            if (st == kEmpty) return -1;
            if (st == kFull && key[s] == k) return static_cast<int64_t>(s);
            s = (s + 1) & mask;
        }
        return -1;
    }

    // k must be absent; the table must have an empty slot.
    uint64_t insert_new(int64_t k, uint64_t v) {
        uint64_t s = mix64(static_cast<uint64_t>(k)) & mask;
        for (;;) {
            uint32_t expected = kEmpty;
            if (state_load(&state[s]) == kEmpty &&
                __atomic_compare_exchange_n(&state[s], &expected, kFull, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                key[s] = k;
                val[s] = v;
                return s;
            }
            s = (s + 1) & mask;
        }
    }

    size_t bytes() const { return key.capacity() * 8 + val.capacity() * 8 + state.capacity() * 4; }
};

class CpuIndex final : public Index {
public:
    CpuIndex(const Grid& g) : grid_(g), g_(grid_map(g)), cells_(int64_t(g.cells_x) * g.cells_y) {}

    Status init() {
        count_.assign(static_cast<size_t>(cells_), 0);
        dir_.resize(static_cast<size_t>(cells_));
        sat_dirty_ = true;
        return Status::Ok();
    }

    Device device() const override { return Device::Cpu; }

    void info(Info& out) const override {
        out = Info();
        out.device = Device::Cpu;
        out.grid = grid_;
        out.objects = objects_;
        out.cells = cells_;
        out.buckets_used = nb_ - free_top_;
        out.bucket_capacity = nb_;
        out.hash_capacity = static_cast<int64_t>(h_.capacity());
        out.device_bytes = 0;
        out.host_bytes = bytes();
        out.last_update = last_update_;
        out.last_query = last_query_;
    }

    int64_t bytes() const override {
        size_t host = count_.capacity() * 4 + dir_.capacity() * sizeof(std::vector<int32_t>) + dir_elems_ * 4 +
                      pid_.capacity() * 8 + px_.capacity() * 8 + py_.capacity() * 8 + free_.capacity() * 4 +
                      h_.bytes() + sat_.capacity() * 8;
        host += skey_.capacity() * 8 + skey2_.capacity() * 8 + dkey_.capacity() * 8 + ikey_.capacity() * 8;
        host += (sval_.capacity() + sval2_.capacity() + uidx_.capacity() + dval_.capacity() + ival_.capacity() +
                 inp_.capacity() + ecell_.capacity()) *
                4;
        host += cat_.capacity() + ehs_.capacity() * 8 + eloc_.capacity() * 8;
        host += uslot_.capacity() * sizeof(SlotSave) + uhash_.capacity() * sizeof(HashSave) + uinp_.capacity() * 8;
        return static_cast<int64_t>(host);
    }

    // Bytes of an empty index of `cells` cells.
    static int64_t empty_bytes(int64_t cells) { return cells * static_cast<int64_t>(4 + sizeof(std::vector<int32_t>)); }

private:
    struct Seg {
        uint32_t cell;
        uint32_t begin, end;
    };
    struct Touch {
        uint32_t cell;
        uint32_t db, de, ib, ie;  // delete and insert entries of the cell (sorted lists)
        int32_t before, after;    // buckets before / after the batch
        int32_t n0;               // objects before the batch
        int64_t alloc_off, free_off;
        int64_t uslot_off, uhash_off;  // the cell's undo log ranges
    };
    // Undo log of the apply phase: a slot's old contents; a hash slot's old
    // value (kind 0), a tombstone to make full again (1), a new key's slot to
    // empty again (2); kind in the top two bits of hs.
    struct SlotSave {
        size_t s;
        int64_t id;
        double x, y;
    };
    struct HashSave {
        uint64_t hs;
        uint64_t val;
    };
    static constexpr uint64_t kSaveVal = 0, kSaveTomb = uint64_t(1) << 62, kSaveNew = uint64_t(2) << 62;
    static constexpr uint64_t kSaveMask = (uint64_t(1) << 62) - 1;

    size_t slot(const std::vector<int32_t>& d, int64_t k) const {
        return static_cast<size_t>(d[static_cast<size_t>(k / B)]) * B + static_cast<size_t>(k % B);
    }

    // Makes room in the id table for `incoming` new keys (load <= 1/2),
    // rehashing (which also drops tombstones) when needed.
    // The id table's capacity after ensure_hash(incoming); 0 when it stays.
    uint64_t hash_growth(int64_t incoming) const {
        uint64_t need = static_cast<uint64_t>(h_.live + h_.tombs + incoming);
        if (h_.capacity() != 0 && need <= h_.capacity() / 2) return 0;
        return next_pow2(std::max<uint64_t>(1024, 3 * static_cast<uint64_t>(h_.live + incoming)));
    }

    Status ensure_hash(int64_t incoming, const ExecContext& ctx) {
        uint64_t cap = hash_growth(incoming);
        if (cap == 0) return Status::Ok();
        APPROX_TRY(charge(static_cast<int64_t>(cap * 20) - static_cast<int64_t>(h_.bytes()), "the id table"));
        HostHash nh;
        nh.key.reset(cap);
        nh.val.reset(cap);
        nh.state.reset(cap);
        Chunks cs(cap, ctx.cpu_threads, 65536, size_t(1) << 18);
        APPROX_TRY(parallel_for(ctx, cs.count, [&](size_t c, size_t) {
            std::fill(nh.state.data() + cs.begin(c), nh.state.data() + cs.end(c), kEmpty);
            return Status::Ok();
        }));
        nh.mask = cap - 1;
        nh.live = h_.live;
        nh.tombs = 0;
        Chunks ch(h_.capacity(), ctx.cpu_threads, 65536, size_t(1) << 18);
        if (h_.capacity() > 0)
            APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
                for (size_t s = ch.begin(c); s < ch.end(c); ++s)
                    if (h_.state[s] == kFull) nh.insert_new(h_.key[s], h_.val[s]);
                return Status::Ok();
            }));
        h_.key.swap(nh.key);
        h_.val.swap(nh.val);
        h_.state.swap(nh.state);
        h_.mask = nh.mask;
        h_.live = nh.live;
        h_.tombs = nh.tombs;
        return Status::Ok();
    }

    Status validate(const double* xs, const double* ys, size_t n, const ExecContext& ctx) {
        Chunks ch(n, ctx.cpu_threads, 65536);
        std::vector<size_t> first_bad(ch.count, SIZE_MAX);
        APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
            for (size_t i = ch.begin(c); i < ch.end(c); ++i)
                if (!g_.inside_extent(xs[i], ys[i])) {  // false for NaN too
                    first_bad[c] = i;
                    break;
                }
            return Status::Ok();
        }));
        for (size_t c = 0; c < ch.count; ++c) {
            size_t i = first_bad[c];
            if (i == SIZE_MAX) continue;
            if (!std::isfinite(xs[i]) || !std::isfinite(ys[i]))
                return Status::Error(StatusCode::InvalidArgument,
                                     "point %zu has a non-finite coordinate (x = %g, y = %g)", i + 1, xs[i], ys[i]);
            return Status::Error(
                StatusCode::OutOfRange,
                "point %zu (x = %.17g, y = %.17g) lies outside the extent [%.17g, %.17g] x [%.17g, %.17g]", i + 1,
                xs[i], ys[i], g_.xmin, g_.xmax, g_.ymin, g_.ymax);
        }
        return Status::Ok();
    }

    // Category of a distinct entry.
    enum : uint8_t { kNone = 0, kNew = 1, kInPlace = 2, kCross = 3, kDelete = 4 };

    Status apply_batch(bool is_delete, const int64_t* ids, const double* xs, const double* ys, size_t n,
                       const ExecContext& ctx, int64_t& applied) override {
        Stopwatch total;
        BatchStats bs;
        std::snprintf(bs.op, sizeof bs.op, "%s", is_delete ? "delete" : "update");
        bs.entries = static_cast<int64_t>(n);
        if (ctx.stats) {
            ctx.stats->device = Device::Cpu;
            ctx.stats->cpu_threads = ctx.cpu_threads;
            ctx.stats->rows = static_cast<int64_t>(n);
        }
        if (static_cast<int64_t>(n) > kMaxBatch)
            return Status::Error(StatusCode::ProgramLimit, "a batch holds at most %lld entries",
                                 static_cast<long long>(kMaxBatch));
        if (n == 0) {
            finish_batch(bs, total, 0, ctx);
            return Status::Ok();
        }

        // 1. validate
        if (!is_delete) APPROX_TRY(validate(xs, ys, n, ctx));
        if (ctx.cancelled()) return cancelled_status();

        // 2. scratch for n entries and room in the id table for every entry
        // being new (semantically invisible), within the memory budget
        {
            int64_t extra = growth_bytes(skey_, n) + growth_bytes(skey2_, n) + growth_bytes(sval_, n) +
                            growth_bytes(sval2_, n) + growth_bytes(uidx_, n) + growth_bytes(cat_, n) +
                            growth_bytes(ehs_, n) + growth_bytes(eloc_, n) + growth_bytes(dkey_, n) +
                            growth_bytes(dval_, n);
            if (!is_delete)
                extra += growth_bytes(ecell_, n) + growth_bytes(ikey_, n) + growth_bytes(ival_, n) +
                         growth_bytes(inp_, n);
            uint64_t cap = hash_growth(is_delete ? 0 : static_cast<int64_t>(n));
            if (cap != 0) extra += static_cast<int64_t>(cap * 20) - static_cast<int64_t>(h_.bytes());
            APPROX_TRY(charge(extra, "a batch of this size (scratch and the id table)"));
        }
        // (growing a buffer fills it: one poll per buffer)
#define APPROX_MO_GROW(v)                               \
    do {                                                \
        ensure_size(v, n);                              \
        if (ctx.cancelled()) return cancelled_status(); \
    } while (0)
        APPROX_MO_GROW(skey_);
        APPROX_MO_GROW(skey2_);
        APPROX_MO_GROW(sval_);
        APPROX_MO_GROW(sval2_);
        APPROX_MO_GROW(uidx_);
        APPROX_MO_GROW(cat_);
        APPROX_MO_GROW(ehs_);
        APPROX_MO_GROW(eloc_);
        APPROX_MO_GROW(dkey_);
        APPROX_MO_GROW(dval_);
        if (!is_delete) {
            APPROX_MO_GROW(ecell_);
            APPROX_MO_GROW(ikey_);
            APPROX_MO_GROW(ival_);
            APPROX_MO_GROW(inp_);
        }
#undef APPROX_MO_GROW
        APPROX_TRY(ensure_hash(is_delete ? 0 : static_cast<int64_t>(n), ctx));

        // 3. dedupe: stable sort by id, keep the last entry of each id
        {
            Chunks c0(n, ctx.cpu_threads);
            APPROX_TRY(parallel_for(ctx, c0.count, [&](size_t c, size_t) {
                for (size_t i = c0.begin(c); i < c0.end(c); ++i) {
                    skey_[i] = static_cast<uint64_t>(ids[i]) ^ (uint64_t(1) << 63);
                    sval_[i] = static_cast<uint32_t>(i);
                }
                return Status::Ok();
            }));
        }
        APPROX_TRY(radix_sort(skey_, sval_, skey2_, sval2_, n, 64, ctx));
        Chunks ch(n, ctx.cpu_threads);
        std::vector<size_t> cnt(ch.count * 3 + 3, 0);
        APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
            size_t k = 0;
            for (size_t j = ch.begin(c); j < ch.end(c); ++j) k += (j + 1 == n || skey_[j] != skey_[j + 1]);
            cnt[c] = k;
            return Status::Ok();
        }));
        size_t nu = 0;
        for (size_t c = 0; c < ch.count; ++c) {
            size_t v = cnt[c];
            cnt[c] = nu;
            nu += v;
        }
        ensure_size(uidx_, nu);
        APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
            size_t w = cnt[c];
            for (size_t j = ch.begin(c); j < ch.end(c); ++j)
                if (j + 1 == n || skey_[j] != skey_[j + 1]) uidx_[w++] = sval_[j];
            return Status::Ok();
        }));
        bs.distinct = static_cast<int64_t>(nu);

        // 4. classify every distinct entry against the id table
        ensure_size(cat_, nu);
        ensure_size(ehs_, nu);
        ensure_size(eloc_, nu);
        ensure_size(ecell_, nu);
        Chunks cu(nu, ctx.cpu_threads);
        std::fill(cnt.begin(), cnt.end(), 0);
        APPROX_TRY(parallel_for(ctx, cu.count, [&](size_t c, size_t) {
            size_t nd = 0, ni = 0, np = 0;
            for (size_t j = cu.begin(c); j < cu.end(c); ++j) {
                size_t i = uidx_[j];
                int64_t hs = h_.find(ids[i]);
                ehs_[j] = hs;
                uint8_t k;
                if (is_delete) {
                    k = hs >= 0 ? kDelete : kNone;
                    if (hs >= 0) eloc_[j] = h_.val[static_cast<size_t>(hs)];
                } else {
                    uint32_t cell = g_.cell(xs[i], ys[i]);
                    ecell_[j] = cell;
                    if (hs < 0) {
                        k = kNew;
                    } else {
                        uint64_t loc = h_.val[static_cast<size_t>(hs)];
                        eloc_[j] = loc;
                        k = static_cast<uint32_t>(loc >> 32) == cell ? kInPlace : kCross;
                    }
                }
                cat_[j] = k;
                nd += (k == kDelete || k == kCross);
                ni += (k == kNew || k == kCross);
                np += (k == kInPlace);
            }
            cnt[3 * c] = nd;
            cnt[3 * c + 1] = ni;
            cnt[3 * c + 2] = np;
            return Status::Ok();
        }));
        size_t n_del = 0, n_ins = 0, n_inp = 0;
        for (size_t c = 0; c < cu.count; ++c) {
            size_t a = cnt[3 * c], b = cnt[3 * c + 1], p = cnt[3 * c + 2];
            cnt[3 * c] = n_del;
            cnt[3 * c + 1] = n_ins;
            cnt[3 * c + 2] = n_inp;
            n_del += a;
            n_ins += b;
            n_inp += p;
        }
        ensure_size(dkey_, n_del);
        ensure_size(dval_, n_del);
        ensure_size(ikey_, n_ins);
        ensure_size(ival_, n_ins);
        ensure_size(inp_, n_inp);
        int64_t n_new = 0;
        std::atomic<int64_t> new_count{0};
        APPROX_TRY(parallel_for(ctx, cu.count, [&](size_t c, size_t) {
            size_t d = cnt[3 * c], in = cnt[3 * c + 1], p = cnt[3 * c + 2];
            int64_t nn = 0;
            for (size_t j = cu.begin(c); j < cu.end(c); ++j) {
                uint8_t k = cat_[j];
                if (k == kDelete || k == kCross) {
                    dkey_[d] = eloc_[j];
                    dval_[d++] = static_cast<uint32_t>(j);
                }
                if (k == kNew || k == kCross) {
                    ikey_[in] = ecell_[j];
                    ival_[in++] = static_cast<uint32_t>(j);
                }
                if (k == kInPlace) inp_[p++] = static_cast<uint32_t>(j);
                nn += (k == kNew);
            }
            new_count += nn;
            return Status::Ok();
        }));
        n_new = new_count.load();
        if (objects_ + n_new > kMaxObjects)
            return Status::Error(StatusCode::ProgramLimit, "an index holds at most %lld objects",
                                 static_cast<long long>(kMaxObjects));

        // 5. group deletes by (cell, position) and inserts by cell (stable: entry order)
        int cell_bits = bits_for(static_cast<uint64_t>(cells_ - 1));
        APPROX_TRY(radix_sort(dkey_, dval_, skey2_, sval2_, n_del, 32 + cell_bits, ctx));
        APPROX_TRY(radix_sort(ikey_, ival_, skey2_, sval2_, n_ins, cell_bits, ctx));

        // 6. per touched cell: entry ranges and bucket needs
        std::vector<Seg> ds, is;
        APPROX_TRY(segments(dkey_, n_del, 32, ds, ctx));
        APPROX_TRY(segments(ikey_, n_ins, 0, is, ctx));
        std::vector<Touch> touched;
        touched.reserve(ds.size() + is.size());
        size_t a = 0, b = 0;
        int64_t total_alloc = 0, total_free = 0, total_uslot = 0, total_uhash = 0;
        while (a < ds.size() || b < is.size()) {
            if ((touched.size() & 0xffff) == 0xffff && ctx.cancelled()) return cancelled_status();
            Touch t{};
            if (b == is.size() || (a < ds.size() && ds[a].cell < is[b].cell)) {
                t.cell = ds[a].cell;
                t.db = ds[a].begin;
                t.de = ds[a].end;
                ++a;
            } else if (a == ds.size() || is[b].cell < ds[a].cell) {
                t.cell = is[b].cell;
                t.ib = is[b].begin;
                t.ie = is[b].end;
                ++b;
            } else {
                t.cell = ds[a].cell;
                t.db = ds[a].begin;
                t.de = ds[a].end;
                t.ib = is[b].begin;
                t.ie = is[b].end;
                ++a;
                ++b;
            }
            int64_t n0 = count_[t.cell];
            int64_t n2 = n0 - (t.de - t.db) + (t.ie - t.ib);
            t.before = static_cast<int32_t>((n0 + B - 1) / B);
            t.after = static_cast<int32_t>((n2 + B - 1) / B);
            t.n0 = static_cast<int32_t>(n0);
            t.alloc_off = total_alloc;
            t.free_off = total_free;
            total_alloc += std::max(0, t.after - t.before);
            total_free += std::max(0, t.before - t.after);
            // undo log: a slot per delete that moves an object and per insert
            // over an old position; a hash slot per moved survivor and per
            // removed or inserted id
            const int64_t d = t.de - t.db, i = t.ie - t.ib, n1 = n0 - d;
            t.uslot_off = total_uslot;
            t.uhash_off = total_uhash;
            total_uslot += d + std::max<int64_t>(0, std::min(n2, n0) - n1);
            total_uhash += d + (is_delete ? d : i);
            touched.push_back(t);
        }

        // 7. grow the pool, the cells' bucket lists and the undo log before
        // applying anything (within the memory budget)
        int64_t dir_extra = 0;
        for (const Touch& t : touched) {
            const auto& d = dir_[t.cell];
            if (static_cast<size_t>(t.after) > d.capacity())
                dir_extra += static_cast<int64_t>(static_cast<size_t>(t.after) + t.after / 2 + 1 - d.capacity());
        }
        {
            int64_t pool_extra = total_alloc > free_top_ ? pool_growth(total_alloc - free_top_) * (B * 24 + 4) : 0;
            int64_t extra = pool_extra + dir_extra * 4 + growth_bytes(uslot_, static_cast<size_t>(total_uslot)) +
                            growth_bytes(uhash_, static_cast<size_t>(total_uhash)) + growth_bytes(uinp_, 2 * n_inp);
            APPROX_TRY(charge(extra, "this batch (bucket pool, cell lists and undo log)"));
        }
        if (ctx.cancelled()) return cancelled_status();
        if (total_alloc > free_top_) APPROX_TRY(grow_pool(total_alloc - free_top_, ctx));
        if (ctx.cancelled()) return cancelled_status();
        for (size_t ti = 0; ti < touched.size(); ++ti) {
            if ((ti & 0xfff) == 0xfff && ctx.cancelled()) return cancelled_status();
            const Touch& t = touched[ti];
            auto& d = dir_[t.cell];
            if (static_cast<size_t>(t.after) > d.capacity()) {
                size_t old = d.capacity();
                d.reserve(static_cast<size_t>(t.after) + t.after / 2 + 1);
                dir_elems_ += d.capacity() - old;
            }
        }
        ensure_size(uslot_, static_cast<size_t>(total_uslot));
        ensure_size(uhash_, static_cast<size_t>(total_uhash));
        ensure_size(uinp_, 2 * n_inp);
        bs.ms_stage = total.ms();

        // 8. apply in tasks of whole cells, then chunks of in-place updates;
        // the cancel callback is polled between tasks and a cancel undoes the
        // tasks done (nothing here allocates or fails)
        if (ctx.cancelled()) return cancelled_status();
        Stopwatch apply;
        ExecContext actx = ctx;
        actx.cancel = nullptr;
        const int64_t stack_base = free_top_ - total_alloc;
        std::vector<size_t> tasks;  // first touched cell of each task
        for (size_t ti = 0, work = kPollEntries; ti < touched.size(); ++ti) {
            if (work >= kPollEntries / 4 || ti - tasks.back() >= 256) {
                tasks.push_back(ti);
                work = 0;
            }
            work += touched[ti].de - touched[ti].db + touched[ti].ie - touched[ti].ib + 1;
        }
        tasks.push_back(touched.size());
        const size_t n_tasks = tasks.size() - 1;
        std::vector<uint8_t> task_done(n_tasks, 0);
        std::vector<uint32_t> uslot_n(touched.size(), 0), uhash_n(touched.size(), 0);
        Status st = parallel_for(ctx, n_tasks, [&](size_t task, size_t) {
            for (size_t ti = tasks[task]; ti < tasks[task + 1]; ++ti)
                apply_cell(touched[ti], is_delete, ids, xs, ys, stack_base, uslot_n[ti], uhash_n[ti]);
            task_done[task] = 1;
            return Status::Ok();
        });
        const size_t inp_chunk = kPollEntries;
        const size_t n_inp_tasks = (n_inp + inp_chunk - 1) / inp_chunk;
        std::vector<uint8_t> inp_done(n_inp_tasks, 0);
        if (st.ok())
            st = parallel_for(ctx, n_inp_tasks, [&](size_t c, size_t) {
                size_t e1 = std::min(n_inp, (c + 1) * inp_chunk);
                for (size_t e = c * inp_chunk; e < e1; ++e) {
                    uint32_t j = inp_[e];
                    size_t i = uidx_[j];
                    uint64_t loc = h_.val[static_cast<size_t>(ehs_[j])];
                    size_t s = slot(dir_[loc >> 32], static_cast<int64_t>(loc & 0xffffffffu));
                    uinp_[2 * e] = px_[s];
                    uinp_[2 * e + 1] = py_[s];
                    px_[s] = xs[i];
                    py_[s] = ys[i];
                }
                inp_done[c] = 1;
                return Status::Ok();
            });
        if (!st.ok()) {  // cancelled: undo what was applied, newest first
            (void)parallel_for(actx, n_inp_tasks, [&](size_t c, size_t) {
                if (!inp_done[c]) return Status::Ok();
                size_t e1 = std::min(n_inp, (c + 1) * inp_chunk);
                for (size_t e = c * inp_chunk; e < e1; ++e) {
                    uint64_t loc = h_.val[static_cast<size_t>(ehs_[inp_[e]])];
                    size_t s = slot(dir_[loc >> 32], static_cast<int64_t>(loc & 0xffffffffu));
                    px_[s] = uinp_[2 * e];
                    py_[s] = uinp_[2 * e + 1];
                }
                return Status::Ok();
            });
            (void)parallel_for(actx, n_tasks, [&](size_t task, size_t) {
                if (!task_done[task]) return Status::Ok();
                for (size_t ti = tasks[task]; ti < tasks[task + 1]; ++ti)
                    undo_cell(touched[ti], uslot_n[ti], uhash_n[ti]);
                return Status::Ok();
            });
            return st;
        }
        // [free_top_, free_top_ + total_free) lies inside the stack: those buckets were in use.
        if (total_free > 0)
            std::memmove(&free_[static_cast<size_t>(stack_base)], &free_[static_cast<size_t>(free_top_)],
                         static_cast<size_t>(total_free) * sizeof(int32_t));
        free_top_ = stack_base + total_free;
        int64_t n_deleted = is_delete ? static_cast<int64_t>(n_del) : 0;
        objects_ += n_new - n_deleted;
        h_.live += n_new - n_deleted;
        h_.tombs += n_deleted;
        if (n_del > 0 || n_ins > 0) sat_dirty_ = true;
        bs.ms_apply = apply.ms();
        bs.inserted = n_new;
        bs.moved = is_delete ? 0 : static_cast<int64_t>(n_del);
        bs.in_place = static_cast<int64_t>(n_inp);
        bs.deleted = n_deleted;
        applied = is_delete ? n_deleted : static_cast<int64_t>(nu);
        finish_batch(bs, total, static_cast<int64_t>(touched.size()), ctx);
        return Status::Ok();
    }

    void finish_batch(BatchStats& bs, const Stopwatch& total, int64_t touched, const ExecContext& ctx) {
        bs.ms_total = total.ms();
        last_update_ = bs;
        if (ctx.stats) {
            ctx.stats->ms_compute = bs.ms_total;
            ctx.stats->add("distinct", static_cast<double>(bs.distinct));
            ctx.stats->add("inserted", static_cast<double>(bs.inserted));
            ctx.stats->add("moved", static_cast<double>(bs.moved));
            ctx.stats->add("in_place", static_cast<double>(bs.in_place));
            ctx.stats->add("deleted", static_cast<double>(bs.deleted));
            ctx.stats->add("cells_touched", static_cast<double>(touched));
            ctx.stats->add("ms_stage", bs.ms_stage);
            ctx.stats->add("ms_apply", bs.ms_apply);
        }
    }

    // Runs of equal cell in sorted keys (cell = key >> shift).
    static Status segments(const RawBuf<uint64_t>& keys, size_t n, int shift, std::vector<Seg>& out,
                           const ExecContext& ctx) {
        out.clear();
        size_t s = 0, next_poll = kPollEntries;
        while (s < n) {
            if (s >= next_poll) {
                if (ctx.cancelled()) return cancelled_status();
                next_poll = s + kPollEntries;
            }
            uint32_t c = static_cast<uint32_t>(keys[s] >> shift);
            size_t e = s + 1;
            while (e < n && static_cast<uint32_t>(keys[e] >> shift) == c) ++e;
            out.push_back(Seg{c, static_cast<uint32_t>(s), static_cast<uint32_t>(e)});
            s = e;
        }
        return Status::Ok();
    }

    // Buckets grow_pool(extra_buckets) adds.
    int64_t pool_growth(int64_t extra_buckets) const {
        return std::max<int64_t>({nb_ + extra_buckets, nb_ + nb_ / 2, 64}) - nb_;
    }

    // Polls between the buffers; a cancelled growth only leaves spare capacity
    // (nb_ and the free stack change last).
    Status grow_pool(int64_t extra_buckets, const ExecContext& ctx) {
        int64_t nb = nb_ + pool_growth(extra_buckets);
        size_t slots = static_cast<size_t>(nb) * B, old = static_cast<size_t>(nb_) * B;
        // New buffers, the old contents copied in polled chunks; the index
        // takes them (swap) only when all are complete.
        RawBuf<int64_t> pid;
        RawBuf<double> px, py;
        RawBuf<int32_t> fr;
        pid.reset(slots);
        px.reset(slots);
        py.reset(slots);
        fr.reset(static_cast<size_t>(nb));
        Chunks ch(old, ctx.cpu_threads, 65536);
        if (old > 0)
            APPROX_TRY(parallel_for(ctx, ch.count, [&](size_t c, size_t) {
                size_t b = ch.begin(c), e = ch.end(c);
                std::memcpy(pid.data() + b, pid_.data() + b, (e - b) * sizeof(int64_t));
                std::memcpy(px.data() + b, px_.data() + b, (e - b) * sizeof(double));
                std::memcpy(py.data() + b, py_.data() + b, (e - b) * sizeof(double));
                return Status::Ok();
            }));
        if (free_top_ > 0) std::memcpy(fr.data(), free_.data(), static_cast<size_t>(free_top_) * sizeof(int32_t));
        pid_.swap(pid);
        px_.swap(px);
        py_.swap(py);
        free_.swap(fr);
        // The new buckets go on top of the free stack.
        for (int64_t b = nb_; b < nb; ++b) free_[static_cast<size_t>(free_top_ + (b - nb_))] = static_cast<int32_t>(b);
        free_top_ += nb - nb_;
        nb_ = nb;
        return Status::Ok();
    }

    // One touched cell, by the worker that owns it: take new buckets, deletes
    // (descending position; the cell's last object fills each hole), inserts
    // (appends), give back surplus buckets.
    // Every slot and hash slot it overwrites goes to the cell's undo log
    // (uslot_n / uhash_n entries from t.uslot_off / t.uhash_off).
    void apply_cell(const Touch& t, bool is_delete, const int64_t* ids, const double* xs, const double* ys,
                    int64_t stack_base, uint32_t& uslot_n, uint32_t& uhash_n) {
        const uint32_t c = t.cell;
        auto& d = dir_[c];
        int64_t n = count_[c];
        const int64_t n0 = n;
        SlotSave* us = uslot_.data() + t.uslot_off;
        HashSave* uh = uhash_.data() + t.uhash_off;
        auto save_slot = [&](size_t s) { us[uslot_n++] = SlotSave{s, pid_[s], px_[s], py_[s]}; };
        for (int32_t a = 0; a < t.after - t.before; ++a)
            d.push_back(free_[static_cast<size_t>(stack_base + t.alloc_off + a)]);  // within the reserved capacity
        for (uint32_t e = t.de; e > t.db; --e) {
            int64_t k = static_cast<int64_t>(dkey_[e - 1] & 0xffffffffu);
            int64_t last = n - 1;
            if (k != last) {
                size_t src = slot(d, last), dst = slot(d, k);
                save_slot(dst);
                pid_[dst] = pid_[src];
                px_[dst] = px_[src];
                py_[dst] = py_[src];
                int64_t hs = h_.find(pid_[dst]);
                uh[uhash_n++] = HashSave{static_cast<uint64_t>(hs) | kSaveVal, h_.val[static_cast<size_t>(hs)]};
                h_.val[static_cast<size_t>(hs)] = pack(c, static_cast<uint32_t>(k));
            }
            --n;
            if (is_delete) {
                size_t hs = static_cast<size_t>(ehs_[dval_[e - 1]]);
                uh[uhash_n++] = HashSave{static_cast<uint64_t>(hs) | kSaveTomb, 0};
                state_store(&h_.state[hs], kTomb);
            }
        }
        for (uint32_t e = t.ib; e < t.ie; ++e) {
            uint32_t j = ival_[e];
            size_t i = uidx_[j];
            int64_t p = n++;
            size_t s = slot(d, p);
            if (p < n0) save_slot(s);
            pid_[s] = ids[i];
            px_[s] = xs[i];
            py_[s] = ys[i];
            if (cat_[j] == kNew) {
                uint64_t hs = h_.insert_new(ids[i], pack(c, static_cast<uint32_t>(p)));
                uh[uhash_n++] = HashSave{hs | kSaveNew, 0};
            } else {
                size_t hs = static_cast<size_t>(ehs_[j]);
                uh[uhash_n++] = HashSave{static_cast<uint64_t>(hs) | kSaveVal, h_.val[hs]};
                h_.val[hs] = pack(c, static_cast<uint32_t>(p));
            }
        }
        // Freed buckets go above the current top (other workers are still
        // taking buckets from below it); apply_batch() moves them down afterwards.
        for (int32_t f = 0; f < t.before - t.after; ++f)
            free_[static_cast<size_t>(free_top_ + t.free_off + f)] = d[static_cast<size_t>(t.after + f)];
        if (t.after < t.before) d.resize(static_cast<size_t>(t.after));
        count_[c] = static_cast<int32_t>(n);
    }

    // Reverts apply_cell(t) from its undo log (newest first). The buckets a
    // shrinking cell gave up still sit above free_top_ in free_.
    void undo_cell(const Touch& t, uint32_t uslot_n, uint32_t uhash_n) {
        const HashSave* uh = uhash_.data() + t.uhash_off;
        for (uint32_t k = uhash_n; k > 0; --k) {
            const HashSave& h = uh[k - 1];
            size_t hs = static_cast<size_t>(h.hs & kSaveMask);
            uint64_t kind = h.hs & ~kSaveMask;
            if (kind == kSaveVal)
                h_.val[hs] = h.val;
            else
                state_store(&h_.state[hs], kind == kSaveTomb ? kFull : kEmpty);
        }
        const SlotSave* us = uslot_.data() + t.uslot_off;
        for (uint32_t k = uslot_n; k > 0; --k) {
            const SlotSave& v = us[k - 1];
            pid_[v.s] = v.id;
            px_[v.s] = v.x;
            py_[v.s] = v.y;
        }
        auto& d = dir_[t.cell];
        if (t.after < t.before) {
            for (int32_t f = 0; f < t.before - t.after; ++f)  // within the capacity it had
                d.push_back(free_[static_cast<size_t>(free_top_ + t.free_off + f)]);
        } else {
            d.resize(static_cast<size_t>(t.before));
        }
        count_[t.cell] = t.n0;
    }

    // Summed-area table of the cell counts (rebuilt after a batch changed them).
    Status ensure_sat() {
        if (!sat_dirty_) return Status::Ok();
        const size_t w1 = static_cast<size_t>(g_.nx) + 1;
        const size_t cells1 = w1 * (static_cast<size_t>(g_.ny) + 1);
        APPROX_TRY(charge(growth_bytes(sat_, cells1), "the query's table of cell counts"));
        ensure_size(sat_, cells1);
        std::fill(sat_.begin(), sat_.end(), 0);
        for (int32_t r = 0; r < g_.ny; ++r) {
            int64_t run = 0;
            for (int32_t c = 0; c < g_.nx; ++c) {
                run += count_[static_cast<size_t>(r) * g_.nx + c];
                sat_[(r + 1) * w1 + c + 1] = sat_[r * w1 + c + 1] + run;
            }
        }
        sat_dirty_ = false;
        return Status::Ok();
    }

    int64_t interior(int32_t c0, int32_t c1, int32_t r0, int32_t r1) const {
        if (c1 - c0 < 2 || r1 - r0 < 2) return 0;
        const size_t w1 = static_cast<size_t>(g_.nx) + 1;
        size_t a = static_cast<size_t>(c0) + 1, b = static_cast<size_t>(c1);  // columns a..b-1 -> SAT cols a..b
        size_t e = static_cast<size_t>(r0) + 1, f = static_cast<size_t>(r1);
        return sat_[f * w1 + b] - sat_[e * w1 + b] - sat_[f * w1 + a] + sat_[e * w1 + a];
    }

    // Objects of cell c inside q (checked one by one).
    int64_t count_in_cell(uint32_t c, const Rect& q) const {
        int64_t n = count_[c], hits = 0;
        const auto& d = dir_[c];
        for (int64_t base = 0; base < n; base += B) {
            size_t s0 = static_cast<size_t>(d[static_cast<size_t>(base / B)]) * B;
            int64_t m = std::min<int64_t>(B, n - base);
            for (int64_t s = 0; s < m; ++s) hits += in_rect(q, px_[s0 + s], py_[s0 + s]);
        }
        return hits;
    }

    Status count_ranges(const Rect* qs, size_t nq, const ExecContext& ctx, int64_t* counts) override {
        Stopwatch total;
        BatchStats bs;
        std::snprintf(bs.op, sizeof bs.op, "range_count");
        bs.entries = static_cast<int64_t>(nq);
        if (ctx.stats) {
            ctx.stats->device = Device::Cpu;
            ctx.stats->cpu_threads = ctx.cpu_threads;
            ctx.stats->rows = static_cast<int64_t>(nq);
        }
        for (size_t i = 0; i < nq; ++i)
            if (std::isnan(qs[i].xmin) || std::isnan(qs[i].ymin) || std::isnan(qs[i].xmax) || std::isnan(qs[i].ymax))
                return Status::Error(StatusCode::InvalidArgument, "query %zu has a NaN bound", i + 1);
        APPROX_TRY(ensure_sat());
        bs.ms_stage = total.ms();
        Stopwatch search;
        std::atomic<int64_t> cand{0}, checked{0}, results{0};
        Chunks ch(nq, ctx.cpu_threads, 256);
        APPROX_TRY(parallel_for(ctx, nq == 0 ? 0 : ch.count, [&](size_t task, size_t) {
            int64_t my_cand = 0, my_checked = 0, my_results = 0;
            for (size_t i = ch.begin(task); i < ch.end(task); ++i) {
                int32_t c0, c1, r0, r1;
                int64_t hits = 0;
                if (g_.cell_range(qs[i], c0, c1, r0, r1)) {
                    hits = interior(c0, c1, r0, r1);
                    int64_t ring = ring_cells(c0, c1, r0, r1);
                    for (int64_t t = 0; t < ring; ++t) {
                        int32_t cx, cy;
                        ring_cell(c0, c1, r0, r1, t, cx, cy);
                        uint32_t c = static_cast<uint32_t>(cy) * static_cast<uint32_t>(g_.nx) +
                                     static_cast<uint32_t>(cx);
                        my_checked += count_[c];
                        hits += count_in_cell(c, qs[i]);
                    }
                    my_cand += ring;
                }
                counts[i] = hits;
                my_results += hits;
            }
            cand += my_cand;
            checked += my_checked;
            results += my_results;
            return Status::Ok();
        }));
        bs.candidate_cells = cand.load();
        bs.checked_objects = checked.load();
        bs.results = results.load();
        bs.ms_apply = search.ms();
        bs.ms_total = total.ms();
        last_query_ = bs;
        if (ctx.stats) {
            ctx.stats->ms_compute = bs.ms_total;
            ctx.stats->add("candidate_cells", static_cast<double>(bs.candidate_cells));
            ctx.stats->add("checked_objects", static_cast<double>(bs.checked_objects));
            ctx.stats->add("results", static_cast<double>(bs.results));
        }
        return Status::Ok();
    }

    Status list_range(const Rect& q, const ExecContext& ctx, int64_t* out, size_t capacity, size_t& found) override {
        Stopwatch total;
        BatchStats bs;
        std::snprintf(bs.op, sizeof bs.op, "range");
        bs.entries = 1;
        if (ctx.stats) {
            ctx.stats->device = Device::Cpu;
            ctx.stats->cpu_threads = ctx.cpu_threads;
            ctx.stats->rows = 1;
        }
        if (std::isnan(q.xmin) || std::isnan(q.ymin) || std::isnan(q.xmax) || std::isnan(q.ymax))
            return Status::Error(StatusCode::InvalidArgument, "the query has a NaN bound");
        std::vector<int64_t> hits;
        int32_t c0, c1, r0, r1;
        if (g_.cell_range(q, c0, c1, r0, r1)) {
            for (int32_t cy = r0; cy <= r1; ++cy) {
                if (ctx.cancelled()) return cancelled_status();
                for (int32_t cx = c0; cx <= c1; ++cx) {
                    uint32_t c = static_cast<uint32_t>(cy) * static_cast<uint32_t>(g_.nx) + static_cast<uint32_t>(cx);
                    bool full = c0 < cx && cx < c1 && r0 < cy && cy < r1;
                    int64_t n = count_[c];
                    const auto& d = dir_[c];
                    if (!full) {
                        ++bs.candidate_cells;
                        bs.checked_objects += n;
                    }
                    for (int64_t k = 0; k < n; ++k) {
                        size_t s = slot(d, k);
                        if (full || in_rect(q, px_[s], py_[s])) hits.push_back(pid_[s]);
                    }
                }
            }
        }
        found = hits.size();
        if (found <= capacity && found > 0) {
            std::sort(hits.begin(), hits.end());
            std::memcpy(out, hits.data(), found * sizeof(int64_t));
        }
        bs.results = static_cast<int64_t>(found);
        bs.ms_apply = bs.ms_total = total.ms();
        last_query_ = bs;
        if (ctx.stats) {
            ctx.stats->ms_compute = bs.ms_total;
            ctx.stats->add("results", static_cast<double>(found));
        }
        return Status::Ok();
    }

    Grid grid_;
    GridMap g_;
    int64_t cells_;
    std::vector<int32_t> count_;
    std::vector<std::vector<int32_t>> dir_;  // per cell: its buckets in order
    RawBuf<int64_t> pid_;
    RawBuf<double> px_, py_;
    size_t dir_elems_ = 0;  // sum of the bucket lists' capacities
    RawBuf<int32_t> free_;  // free bucket stack, [0, free_top_)
    int64_t free_top_ = 0, nb_ = 0;
    int64_t objects_ = 0;
    HostHash h_;
    std::vector<int64_t> sat_;
    bool sat_dirty_ = true;
    BatchStats last_update_, last_query_;

    // batch scratch (kept between batches)
    RawBuf<uint64_t> skey_, skey2_, dkey_, ikey_;
    RawBuf<uint32_t> sval_, sval2_, uidx_, dval_, ival_, inp_;
    RawBuf<uint8_t> cat_;
    RawBuf<int64_t> ehs_;
    RawBuf<uint64_t> eloc_;
    RawBuf<uint32_t> ecell_;
    RawBuf<SlotSave> uslot_;
    RawBuf<HashSave> uhash_;
    RawBuf<double> uinp_;
};

}  // namespace

Status create_cpu(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out, const MemoryBudget& budget) {
    out = nullptr;
    APPROX_TRY(check_grid(g, max_cells));
    APPROX_TRY(check_budget(budget, 0, CpuIndex::empty_bytes(int64_t(g.cells_x) * g.cells_y),
                            "an empty index of this many cells"));
    return guarded([&] {
        std::unique_ptr<CpuIndex> idx(new CpuIndex(g));
        idx->set_budget(budget);
        APPROX_TRY(idx->init());
        if (ctx.stats) {
            ctx.stats->device = Device::Cpu;
            ctx.stats->cpu_threads = ctx.cpu_threads;
        }
        out = idx.release();
        return Status::Ok();
    });
}

}  // namespace approx::moving
