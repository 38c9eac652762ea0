// Moving objects: the GPU engine (see src/core/moving.hpp).
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
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/functional>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "common.cuh"
#include "core/moving.hpp"
#include "core/hash_mix.hpp"

namespace approx::moving {

using gpu::CubTemp;
using gpu::DeviceBuffer;

namespace {

constexpr int B = kBucketSlots;
static_assert(B == 32, "one warp lane per bucket slot");
// Id table slots: 16 bytes, {key, word}; the word's top two bits are the
// slot's state (0 = empty, so a zeroed table is empty), the rest the location
// cell << 32 | position (cell < 2^26, position < 2^30). One 32-byte sector per probe.
constexpr unsigned long long kStateFull = 1ull << 62, kStateTomb = 2ull << 62;
constexpr unsigned long long kLocMask = (1ull << 62) - 1;
constexpr uint64_t kNoSlot = ~uint64_t(0);
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;
constexpr int kItemsPerWarp = 8;           // bucket work items a warp takes at once
constexpr int64_t kMaxCandidates = int64_t(1) << 24;  // per query chunk (memory bound)
constexpr int64_t kQueryChunk = int64_t(1) << 22;

// Counters of the classify step (device, read back once).
enum { kCntDel = 0, kCntIns, kCntInp, kCntNew, kCntDistinct, kCntBad, kCntFlag, kCntMin, kCntMax, kCntN };
constexpr uint64_t kSignBit = uint64_t(1) << 63;  // id ^ kSignBit orders like the signed id

// Grid of the grid-stride kernels here over n threads: gpu::grid_for with
// kThreads per block and up to 2^20 blocks, more than the shared default (the
// stride loops cover the rest).
constexpr int64_t kMaxBlocks = int64_t(1) << 20;
unsigned moving_grid(int64_t n) { return gpu::grid_for(n, kThreads, kMaxBlocks); }

__host__ __device__ inline uint64_t pack(uint32_t cell, uint32_t k) { return (uint64_t(cell) << 32) | k; }

struct __align__(16) HSlot {
    int64_t key;
    unsigned long long word;
};

struct DevHash {
    HSlot* slot;
    uint64_t mask;
    __device__ uint64_t loc(int64_t s) const { return slot[s].word & kLocMask; }
    __device__ void set_loc(int64_t s, uint64_t loc) const { slot[s].word = kStateFull | loc; }
    __device__ void tombstone(int64_t s) const { slot[s].word = kStateTomb; }
};

__device__ int64_t hash_find(const DevHash& h, int64_t k) {
    uint64_t s = mix64(static_cast<uint64_t>(k)) & h.mask;
    for (uint64_t p = 0; p <= h.mask; ++p) {
        HSlot e = h.slot[s];  // one 16-byte load
        if (e.word == 0) return -1;
        if ((e.word >> 62) == 1 && e.key == k) return static_cast<int64_t>(s);
        s = (s + 1) & h.mask;
    }
    return -1;
}

// k must be absent and the table must have an empty slot (load <= 1/2).
__device__ void hash_insert_new(const DevHash& h, int64_t k, uint64_t loc) {
    uint64_t s = mix64(static_cast<uint64_t>(k)) & h.mask;
    for (uint64_t p = 0; p <= h.mask; ++p) {
        if (h.slot[s].word == 0 && atomicCAS(&h.slot[s].word, 0ull, kStateFull | loc) == 0ull) {
            h.slot[s].key = k;
            return;
        }
        s = (s + 1) & h.mask;
    }
}

// Storage the apply kernels address.
struct Store {
    int32_t* count;
    const int64_t* dir_off;
    int32_t* dir;
    int64_t* pid;
    double* px;
    double* py;
};

__device__ __forceinline__ size_t slot_of(const Store& s, uint32_t c, int64_t k) {
    return static_cast<size_t>(s.dir[s.dir_off[c] + (k >> 5)]) * B + static_cast<size_t>(k & 31);
}

// First index in [lo, hi) with a[i] >= v (hi if none).
template <class T>
__device__ int64_t lower_bound_dev(const T* a, int64_t lo, int64_t hi, T v) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// First index in [0, n) with a[i] > v (n if none).
template <class T>
__device__ int64_t upper_bound_dev(const T* a, int64_t n, T v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

using gpu::warp_append;

// ---- update kernels --------------------------------------------------------------------

// Entry numbers, the first point outside the extent (atomicMin), and the range
// of the ids (so the sort by id only needs the bits that differ).
using WarpReduceU64 = cub::WarpReduce<unsigned long long>;

__global__ void stage_kernel(const int64_t* ids, const double* xs, const double* ys, int64_t n, GridMap g,
                             uint32_t* iota, unsigned long long* counters) {
    __shared__ typename WarpReduceU64::TempStorage reduce[kThreads / 32];
    int64_t n_round = (n + 31) & ~int64_t(31);  // whole warps (the grid's stride is a multiple of 32)
    GRID_STRIDE(i, n_round) {
        unsigned long long lo = ~0ull, hi = 0;
        if (i < n) {
            iota[i] = static_cast<uint32_t>(i);
            if (xs != nullptr && !g.inside_extent(xs[i], ys[i]))  // false for NaN too
                atomicMin(&counters[kCntBad], static_cast<unsigned long long>(i));
            lo = hi = static_cast<uint64_t>(ids[i]) ^ kSignBit;
        }
        lo = WarpReduceU64(reduce[threadIdx.x >> 5]).Reduce(lo, ::cuda::minimum<>{});  // valid in lane 0
        __syncwarp();
        hi = WarpReduceU64(reduce[threadIdx.x >> 5]).Reduce(hi, ::cuda::maximum<>{});
        __syncwarp();
        if ((threadIdx.x & 31) == 0 && lo <= hi) {
            atomicMin(&counters[kCntMin], lo);
            atomicMax(&counters[kCntMax], hi);
        }
    }
}

// Sort keys: the id's offset from the smallest id (as unsigned, sign flipped).
__global__ void id_keys_kernel(const int64_t* ids, int64_t n, uint64_t base, uint64_t* keys) {
    GRID_STRIDE(i, n) keys[i] = (static_cast<uint64_t>(ids[i]) ^ kSignBit) - base;
}

// One thread per sorted entry; the last entry of each id is the distinct one.
// Also writes the ids back in sorted order (sid) for the insert phase.
__global__ void classify_kernel(const uint64_t* skey, uint64_t base, int64_t* sid, const uint32_t* sidx, int64_t n,
                                const double* xs, const double* ys, GridMap g, DevHash h, bool is_delete,
                                uint64_t* ent_hs, uint64_t* dkey, uint32_t* dval, uint64_t* ikey, uint32_t* inp,
                                unsigned long long* counters) {
    int64_t n_round = (n + 31) & ~int64_t(31);  // whole warps (the grid's stride is a multiple of 32)
    GRID_STRIDE(j, n_round) {
        bool active = j < n && (j + 1 == n || skey[j] != skey[j + 1]);
        bool del = false, ins = false, inplace = false, fresh = false;
        uint64_t dk = 0, ik = 0;
        if (active) {
            int64_t id = static_cast<int64_t>((skey[j] + base) ^ kSignBit);
            sid[j] = id;
            int64_t hs = hash_find(h, id);
            ent_hs[j] = hs < 0 ? kNoSlot : static_cast<uint64_t>(hs);
            if (is_delete) {
                if (hs >= 0) {
                    del = true;
                    dk = h.loc(hs);
                }
            } else {
                uint32_t orig = sidx[j];
                uint32_t cell = g.cell(xs[orig], ys[orig]);
                ik = pack(cell, static_cast<uint32_t>(j));
                if (hs < 0) {
                    ins = fresh = true;
                } else {
                    uint64_t loc = h.loc(hs);
                    if (static_cast<uint32_t>(loc >> 32) == cell) {
                        inplace = true;
                    } else {
                        del = ins = true;
                        dk = loc;
                    }
                }
            }
        }
        unsigned long long p;
        p = warp_append(del, &counters[kCntDel]);
        if (del) {
            dkey[p] = dk;
            dval[p] = static_cast<uint32_t>(j);
        }
        p = warp_append(ins, &counters[kCntIns]);
        if (ins) ikey[p] = ik;
        p = warp_append(inplace, &counters[kCntInp]);
        if (inplace) inp[p] = static_cast<uint32_t>(j);
        warp_append(fresh, &counters[kCntNew]);
        warp_append(active, &counters[kCntDistinct]);
    }
}

// Marks each cell's run [beg, end) in keys sorted by cell (cell = key >> 32).
__global__ void segments_kernel(const uint64_t* keys, int64_t n, int32_t* beg, int32_t* end) {
    GRID_STRIDE(t, n) {
        uint32_t c = static_cast<uint32_t>(keys[t] >> 32);
        if (t == 0 || static_cast<uint32_t>(keys[t - 1] >> 32) != c) beg[c] = static_cast<int32_t>(t);
        if (t + 1 == n || static_cast<uint32_t>(keys[t + 1] >> 32) != c) end[c] = static_cast<int32_t>(t + 1);
    }
}

// Per cell: the count after the batch, buckets to take / give back, and
// whether the cell's directory slice is too small.
__global__ void plan_cells_kernel(int64_t cells, const int32_t* count, const int32_t* db, const int32_t* de,
                                  const int32_t* ib, const int32_t* ie, const int32_t* dir_cap, int32_t* new_count,
                                  int32_t* alloc, int32_t* freeb, unsigned long long* counters) {
    GRID_STRIDE(c, cells) {
        int32_t n = count[c];
        int32_t n2 = n - (de[c] - db[c]) + (ie[c] - ib[c]);
        int32_t before = (n + B - 1) / B, after = (n2 + B - 1) / B;
        new_count[c] = n2;
        alloc[c] = after > before ? after - before : 0;
        freeb[c] = before > after ? before - after : 0;
        if (after > dir_cap[c]) counters[kCntFlag] = 1;  // benign race: all write 1
        if (c == 0) {
            alloc[cells] = 0;
            freeb[cells] = 0;
        }
    }
}

// Bucket t of the batch's allocations goes to the cell whose range holds t.
__global__ void alloc_kernel(int64_t total, const int32_t* alloc_off, int64_t cells, Store s, const int32_t* stack,
                             int64_t stack_base) {
    GRID_STRIDE(t, total) {
        int64_t c = upper_bound_dev(alloc_off, cells + 1, static_cast<int32_t>(t)) - 1;
        int64_t i = t - alloc_off[c];
        int64_t before = (s.count[c] + B - 1) / B;
        s.dir[s.dir_off[c] + before + i] = stack[stack_base + t];
    }
}

// All deletes: one thread per deleted (cell, position), sorted. The thread for
// the i-th delete of a cell looks at tail position p = n - d + i: if a survivor
// sits there, it moves into the r-th hole, r = its rank among the survivors of
// the tail. Sources (>= n - d) and holes (< n - d) never overlap.
__global__ void delete_kernel(const uint64_t* dkey, const uint32_t* dval, int64_t n_del, const int32_t* db,
                              const int32_t* de, Store s, DevHash h, bool removal, const uint64_t* ent_hs) {
    GRID_STRIDE(j, n_del) {
        uint32_t c = static_cast<uint32_t>(dkey[j] >> 32);
        int64_t b = db[c], e = de[c];
        int64_t n = s.count[c];
        if (removal) h.tombstone(static_cast<int64_t>(ent_hs[dval[j]]));
        int64_t p, hole;
        if (!delete_move(dkey, b, e, n, j - b, p, hole)) continue;  // p itself is deleted
        size_t src = slot_of(s, c, p), dst = slot_of(s, c, hole);
        int64_t id = s.pid[src];
        s.pid[dst] = id;
        s.px[dst] = s.px[src];
        s.py[dst] = s.py[src];
        int64_t hs = hash_find(h, id);
        if (hs >= 0) h.set_loc(hs, pack(c, static_cast<uint32_t>(hole)));
    }
}

// All inserts: appended after the cell's survivors, in entry order.
__global__ void insert_kernel(const uint64_t* ikey, int64_t n_ins, const int32_t* ib, const int32_t* db,
                              const int32_t* de, Store s, DevHash h, const int64_t* sid, const uint32_t* sidx,
                              const double* xs, const double* ys, const uint64_t* ent_hs) {
    GRID_STRIDE(t, n_ins) {
        uint32_t c = static_cast<uint32_t>(ikey[t] >> 32);
        uint32_t j = static_cast<uint32_t>(ikey[t] & 0xffffffffu);
        int64_t n1 = s.count[c] - (de[c] - db[c]);
        int64_t p = n1 + (t - ib[c]);
        size_t dst = slot_of(s, c, p);
        uint32_t orig = sidx[j];
        int64_t id = sid[j];
        s.pid[dst] = id;
        s.px[dst] = xs[orig];
        s.py[dst] = ys[orig];
        uint64_t loc = pack(c, static_cast<uint32_t>(p));
        uint64_t hs = ent_hs[j];
        if (hs != kNoSlot) h.set_loc(static_cast<int64_t>(hs), loc);
        else hash_insert_new(h, id, loc);
    }
}

// Surplus buckets (beyond the new count) go back on the stack.
__global__ void free_kernel(int64_t total, const int32_t* free_off, int64_t cells, const int32_t* new_count, Store s,
                            int32_t* stack, int64_t stack_base) {
    GRID_STRIDE(t, total) {
        int64_t c = upper_bound_dev(free_off, cells + 1, static_cast<int32_t>(t)) - 1;
        int64_t i = t - free_off[c];
        int64_t after = (new_count[c] + B - 1) / B;
        stack[stack_base + t] = s.dir[s.dir_off[c] + after + i];
    }
}

__global__ void inplace_kernel(const uint32_t* inp, int64_t n_inp, const uint64_t* ent_hs, DevHash h, Store s,
                               const uint32_t* sidx, const double* xs, const double* ys) {
    GRID_STRIDE(t, n_inp) {
        uint32_t j = inp[t];
        uint64_t loc = h.loc(static_cast<int64_t>(ent_hs[j]));
        size_t dst = slot_of(s, static_cast<uint32_t>(loc >> 32), static_cast<int64_t>(loc & 0xffffffffu));
        uint32_t orig = sidx[j];
        s.px[dst] = xs[orig];
        s.py[dst] = ys[orig];
    }
}

// ---- growth kernels ----------------------------------------------------------------------

__global__ void rehash_kernel(const HSlot* old, uint64_t cap, DevHash nh) {
    GRID_STRIDE(s, static_cast<int64_t>(cap)) {
        HSlot e = old[s];
        if ((e.word >> 62) == 1) hash_insert_new(nh, e.key, e.word & kLocMask);
    }
}

// New directory slice sizes: the buckets a cell needs during and after the
// batch, with room to grow.
__global__ void dir_caps_kernel(int64_t cells, const int32_t* count, const int32_t* new_count, int64_t* cap64,
                                int32_t* cap32) {
    GRID_STRIDE(c, cells) {
        int32_t a = (count[c] + B - 1) / B, b = (new_count[c] + B - 1) / B;
        int32_t need = a > b ? a : b;
        int32_t cap = need + need / 2 + 2;
        cap64[c] = cap;
        cap32[c] = cap;
        if (c == 0) cap64[cells] = 0;
    }
}

// One warp per cell copies its current buckets to the new directory.
__global__ void dir_copy_kernel(int64_t cells, const int32_t* count, const int64_t* old_off, const int32_t* old_dir,
                                const int64_t* new_off, int32_t* new_dir) {
    int lane = threadIdx.x & 31;
    WARP_GRID_STRIDE(c, cells) {
        int32_t before = (count[c] + B - 1) / B;
        for (int32_t i = lane; i < before; i += 32) new_dir[new_off[c] + i] = old_dir[old_off[c] + i];
    }
}

// ---- query kernels -----------------------------------------------------------------------

struct QRange {
    int32_t c0, c1, r0, r1;
};

// Per query: NaN check, clipped cell range, ring size; counts start at 0.
__global__ void query_setup_kernel(const Rect* rects, int64_t q0, int64_t qn, GridMap g, QRange* qr, int64_t* ncand,
                                   unsigned long long* cnt, unsigned long long* counters) {
    GRID_STRIDE(i, qn) {
        Rect q = rects[q0 + i];
        cnt[q0 + i] = 0;
        if (i == 0) ncand[qn] = 0;
        if (isnan(q.xmin) || isnan(q.ymin) || isnan(q.xmax) || isnan(q.ymax)) {
            atomicMin(&counters[kCntBad], static_cast<unsigned long long>(q0 + i));
            ncand[i] = 0;
            qr[i] = QRange{0, -1, 0, -1};
            continue;
        }
        QRange r;
        if (g.cell_range(q, r.c0, r.c1, r.r0, r.r1)) {
            ncand[i] = ring_cells(r.c0, r.c1, r.r0, r.r1);
            if (r.c1 - r.c0 >= 2 && r.r1 - r.r0 >= 2) counters[kCntFlag] = 1;  // has interior cells
        } else {
            r = QRange{0, -1, 0, -1};
            ncand[i] = 0;
        }
        qr[i] = r;
    }
}

// Interior cells of each query from the summed-area table (no object checks).
__global__ void interior_kernel(const QRange* qr, int64_t q0, int64_t qn, const int64_t* sat, int64_t w1,
                                unsigned long long* cnt) {
    GRID_STRIDE(i, qn) {
        QRange r = qr[i];
        if (r.c1 < r.c0 || r.c1 - r.c0 < 2 || r.r1 - r.r0 < 2) continue;
        int64_t a = r.c0 + 1, b = r.c1, e = r.r0 + 1, f = r.r1;
        int64_t v = sat[f * w1 + b] - sat[e * w1 + b] - sat[f * w1 + a] + sat[e * w1 + a];
        cnt[q0 + i] += static_cast<unsigned long long>(v);
    }
}

// Candidate t (a ring cell of a query): its cell, query and bucket count.
__global__ void ring_candidates_kernel(int64_t tc, const int64_t* cand_off, int64_t qn, int64_t q0, const QRange* qr,
                                       GridMap g, const int32_t* count, uint32_t* cand_c, uint32_t* cand_q,
                                       int64_t* nb) {
    GRID_STRIDE(t, tc) {
        int64_t i = upper_bound_dev(cand_off, qn + 1, t) - 1;
        QRange r = qr[i];
        int32_t cx, cy;
        ring_cell(r.c0, r.c1, r.r0, r.r1, t - cand_off[i], cx, cy);
        uint32_t c = static_cast<uint32_t>(cy) * static_cast<uint32_t>(g.nx) + static_cast<uint32_t>(cx);
        cand_c[t] = c;
        cand_q[t] = static_cast<uint32_t>(q0 + i);
        nb[t] = (count[c] + B - 1) / B;
        if (t == 0) nb[tc] = 0;
    }
}

// Every cell of one query's range (ids mode); cand_q holds "fully covered".
__global__ void range_candidates_kernel(int64_t tc, QRange r, GridMap g, const int32_t* count, uint32_t* cand_c,
                                        uint32_t* cand_full, int64_t* nb) {
    int64_t w = int64_t(r.c1) - r.c0 + 1;
    GRID_STRIDE(t, tc) {
        int32_t cx = static_cast<int32_t>(r.c0 + t % w), cy = static_cast<int32_t>(r.r0 + t / w);
        uint32_t c = static_cast<uint32_t>(cy) * static_cast<uint32_t>(g.nx) + static_cast<uint32_t>(cx);
        cand_c[t] = c;
        cand_full[t] = (r.c0 < cx && cx < r.c1 && r.r0 < cy && cy < r.r1) ? 1u : 0u;
        nb[t] = (count[c] + B - 1) / B;
        if (t == 0) nb[tc] = 0;
    }
}

// Work item w = one bucket of one candidate cell, found through the scanned
// bucket offsets wb_off[0..tc]; one lane per slot. A warp takes
// kItemsPerWarp consecutive items: one binary search, then it walks forward.
template <class F>
__device__ void for_each_bucket(const int64_t* wb_off, int64_t tc, int64_t wb, F&& f) {
    const int lane = threadIdx.x & 31;
    const int64_t groups = (wb + kItemsPerWarp - 1) / kItemsPerWarp;
    WARP_GRID_STRIDE(group, groups) {
        int64_t w0 = group * kItemsPerWarp;
        int64_t w1 = w0 + kItemsPerWarp < wb ? w0 + kItemsPerWarp : wb;
        int64_t t = 0;
        if (lane == 0) t = upper_bound_dev(wb_off, tc + 1, w0) - 1;
        t = __shfl_sync(kFullMask, t, 0);
        for (int64_t w = w0; w < w1; ++w) {
            while (wb_off[t + 1] <= w) ++t;  // the same t in every lane
            f(t, w - wb_off[t], lane);
        }
    }
}

__global__ void count_buckets_kernel(const int64_t* wb_off, int64_t tc, int64_t wb, const uint32_t* cand_c,
                                     const uint32_t* cand_q, const Rect* rects, Store s, unsigned long long* cnt) {
    for_each_bucket(wb_off, tc, wb, [&](int64_t t, int64_t j, int lane) {
        uint32_t c = cand_c[t], q = cand_q[t];
        int64_t k = j * B + lane;
        bool in = false;
        if (k < s.count[c]) {
            size_t sl = static_cast<size_t>(s.dir[s.dir_off[c] + j]) * B + static_cast<size_t>(lane);
            in = in_rect(rects[q], s.px[sl], s.py[sl]);
        }
        unsigned m = __ballot_sync(kFullMask, in);
        if (lane == 0 && m != 0) atomicAdd(&cnt[q], static_cast<unsigned long long>(__popc(m)));
    });
}

__global__ void emit_buckets_kernel(const int64_t* wb_off, int64_t tc, int64_t wb, const uint32_t* cand_c,
                                    const uint32_t* cand_full, Rect q, Store s, int64_t* out, int64_t capacity,
                                    unsigned long long* cursor) {
    for_each_bucket(wb_off, tc, wb, [&](int64_t t, int64_t j, int lane) {
        uint32_t c = cand_c[t];
        int64_t k = j * B + lane;
        bool in = false;
        size_t sl = 0;
        if (k < s.count[c]) {
            sl = static_cast<size_t>(s.dir[s.dir_off[c] + j]) * B + static_cast<size_t>(lane);
            in = cand_full[t] != 0 || in_rect(q, s.px[sl], s.py[sl]);  // fully covered: no check
        }
        unsigned long long pos = warp_append(in, cursor);
        if (in && static_cast<int64_t>(pos) < capacity) out[pos] = s.pid[sl];
    });
}

// Summed-area table: rows (one warp per row, cub::WarpScan), then columns (one
// thread per column walks the rows; neighbouring threads read neighbouring words).
using WarpScanI64 = cub::WarpScan<int64_t>;

__global__ void sat_rows_kernel(const int32_t* count, int32_t nx, int32_t ny, int64_t* sat) {
    __shared__ typename WarpScanI64::TempStorage scan[kThreads / 32];
    int lane = threadIdx.x & 31;
    const int64_t w1 = int64_t(nx) + 1;
    WARP_GRID_STRIDE(r, ny) {
        int64_t carry = 0;
        for (int64_t base = 0; base < nx; base += 32) {
            int64_t c = base + lane;
            int64_t v = c < nx ? count[r * nx + c] : 0;
            int64_t row_part = 0;  // the 32 values' sum
            WarpScanI64(scan[threadIdx.x >> 5]).InclusiveSum(v, v, row_part);
            __syncwarp();
            if (c < nx) sat[(r + 1) * w1 + c + 1] = carry + v;
            carry += row_part;
        }
    }
}

__global__ void sat_cols_kernel(int32_t nx, int32_t ny, int64_t* sat) {
    const int64_t w1 = int64_t(nx) + 1;
    GRID_STRIDE(i, nx) {
        const int64_t c = i + 1;  // sat's column c sums count's columns < c
        int64_t run = 0;
        for (int64_t r = 1; r <= ny; ++r) {
            run += sat[r * w1 + c];
            sat[r * w1 + c] = run;
        }
    }
}

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
            ncand_.bytes() + cand_off_.bytes() + cand_c_.bytes() + cand_q_.bytes() + nb_buf_.bytes() +
            wb_off_.bytes() + out_.bytes());
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

    Store store() {
        return Store{count_.get(), dir_off_.get(), dir_.get(), pid_.get(), px_.get(), py_.get()};
    }
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
                    count_buckets_kernel<<<moving_grid(warps * 32), kThreads, 0, stream>>>(wb_off_.get(), tc, wb,
                                                                                           cand_c_.get(), cand_q_.get(),
                                                                                           rects_.get(), s,
                                                                                           qcnt_.get());
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
                emit_buckets_kernel<<<moving_grid(warps * 32), kThreads, 0, stream>>>(wb_off_.get(), tc, wb,
                                                                                      cand_c_.get(), cand_q_.get(), q,
                                                                                      store(), out_.get(), n,
                                                                                      counters_.get());
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
