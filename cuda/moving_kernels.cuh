// The kernels of the GPU moving-object index and the device-side structures
// they address (the id table, the bucket store). cuda/moving.cu, the host side
// (the index class: buffers, growth, launches), describes the layout and the
// steps of a batch. Included by cuda/moving.cu only, so that the kernels and
// their launches stay in one translation unit (no relocatable device code);
// everything here has internal linkage.
#pragma once

#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/functional>

#include <cstddef>
#include <cstdint>

#include "common.cuh"
#include "core/hash_mix.hpp"
#include "core/moving.hpp"

namespace approx::moving {
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
constexpr int kItemsPerWarp = 8;  // bucket work items a warp takes at once

// Counters of the classify step (device, read back once).
enum { kCntDel = 0, kCntIns, kCntInp, kCntNew, kCntDistinct, kCntBad, kCntFlag, kCntMin, kCntMax, kCntN };
constexpr uint64_t kSignBit = uint64_t(1) << 63;  // id ^ kSignBit orders like the signed id

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
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// First index in [0, n) with a[i] > v (n if none).
template <class T>
__device__ int64_t upper_bound_dev(const T* a, int64_t n, T v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
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
        if (hs != kNoSlot)
            h.set_loc(static_cast<int64_t>(hs), loc);
        else
            hash_insert_new(h, id, loc);
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

}  // namespace
}  // namespace approx::moving
