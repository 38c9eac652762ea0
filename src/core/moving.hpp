// Moving objects: a uniform grid index with batched updates and batched range
// queries (G-LFPP: GPU lock-free parallel processing of moving objects).
//
// Plain C++ API; the CPU engine is src/core/moving.cpp, the GPU engine
// cuda/moving.cu. An Index is a long-lived object (the SQL glue keeps one per
// name in the backend); which engine it uses is fixed when it is created.
//
// Layout (both engines): cells_x x cells_y cells over [xmin,xmax] x [ymin,ymax];
// each cell holds its objects densely in a sequence of fixed-length buckets of
// kBucketSlots slots taken from a pool (object k of a cell sits in the cell's
// bucket k / 32, slot k % 32); a secondary index (open-addressing hash table)
// maps object id -> (cell, k).
//
// Batched update (the paper's scheme, no locks): validate, stage and dedupe the
// batch (a later entry for the same id wins), classify every entry as in-place
// (same cell), cross-cell (a delete from the old cell plus an insert into the
// new one) or new (an insert), group deletes and inserts by cell, plan every
// cell's bucket needs and grow the pool / directory / hash table *before*
// applying anything. The cancel callback is polled every few ten thousand
// entries of work in every phase. The apply phases (all deletes, all inserts,
// all in-place updates) cannot fail; the CPU engine runs them in chunks that
// log what they overwrite and polls between chunks: a cancel there undoes the
// chunks already applied. The GPU engine's apply is a handful of kernels
// (milliseconds even for 10^7 entries) after the last poll. A failed or
// cancelled batch therefore leaves the index as it was.
//
// Memory: every index counts the bytes it holds (host and device, scratch
// included) and refuses to grow past a budget the caller sets (the glue: what
// approx_gpu.moving_session_memory leaves after the session's other indexes);
// creation or a batch that would pass it fails with ProgramLimit and changes
// nothing.
//
// Range queries: rectangles are closed; a point on xmax or ymax belongs to the
// last cell; queries are clipped to the extent. Cells strictly inside a query's
// cell range are fully covered (counted without checks: a summed-area table of
// the cell counts gives their total); the ring of boundary cells is checked
// object by object.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec.hpp"

#if defined(__CUDACC__)
#define APPROX_MO_HD __host__ __device__
#else
#define APPROX_MO_HD
#endif

namespace approx::moving {

constexpr int kBucketSlots = 32;                     // one warp reads one bucket
constexpr int64_t kMaxObjects = (int64_t(1) << 30);  // (cell, k) packs into 64 bits, k < 2^31
constexpr int64_t kMaxBatch = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxCells = int64_t(1) << 28;  // a location (cell << 32 | k) stays below 2^62

struct Grid {
    double xmin = 0, ymin = 0, xmax = 1, ymax = 1;
    int32_t cells_x = 1, cells_y = 1;
};

struct Rect {
    double xmin, ymin, xmax, ymax;
};

// Cell arithmetic shared by both engines (and the tests). col()/row() are
// monotone non-decreasing in x / y, which is what makes the "strictly inside
// the query's cell range => fully covered" rule exact under rounding.
struct GridMap {
    double xmin, ymin, xmax, ymax, cw, ch;
    int32_t nx, ny;

    APPROX_MO_HD int32_t col(double x) const {
        double t = (x - xmin) / cw;
        if (!(t > 0)) return 0;
        if (t >= static_cast<double>(nx)) return nx - 1;
        int32_t c = static_cast<int32_t>(t);
        return c < nx ? c : nx - 1;
    }
    APPROX_MO_HD int32_t row(double y) const {
        double t = (y - ymin) / ch;
        if (!(t > 0)) return 0;
        if (t >= static_cast<double>(ny)) return ny - 1;
        int32_t r = static_cast<int32_t>(t);
        return r < ny ? r : ny - 1;
    }
    APPROX_MO_HD uint32_t cell(double x, double y) const {
        return static_cast<uint32_t>(row(y)) * static_cast<uint32_t>(nx) + static_cast<uint32_t>(col(x));
    }
    APPROX_MO_HD bool inside_extent(double x, double y) const {
        return x >= xmin && x <= xmax && y >= ymin && y <= ymax;
    }
    // Clips q to the extent and returns its cell range; false when it is empty.
    APPROX_MO_HD bool cell_range(const Rect& q, int32_t& c0, int32_t& c1, int32_t& r0, int32_t& r1) const {
        double ax = q.xmin > xmin ? q.xmin : xmin;
        double bx = q.xmax < xmax ? q.xmax : xmax;
        double ay = q.ymin > ymin ? q.ymin : ymin;
        double by = q.ymax < ymax ? q.ymax : ymax;
        if (!(ax <= bx) || !(ay <= by)) return false;  // also false for NaN
        c0 = col(ax);
        c1 = col(bx);
        r0 = row(ay);
        r1 = row(by);
        return true;
    }
};

// Number of boundary ("ring") cells of a cell range: every cell that is not
// strictly inside it in both directions.
APPROX_MO_HD inline int64_t ring_cells(int32_t c0, int32_t c1, int32_t r0, int32_t r1) {
    int64_t w = int64_t(c1) - c0 + 1, h = int64_t(r1) - r0 + 1;
    if (w <= 2 || h <= 2) return w * h;
    return 2 * w + 2 * (h - 2);
}

// The t-th ring cell (0 <= t < ring_cells) as (column, row).
APPROX_MO_HD inline void ring_cell(int32_t c0, int32_t c1, int32_t r0, int32_t r1, int64_t t, int32_t& cx,
                                   int32_t& cy) {
    int64_t w = int64_t(c1) - c0 + 1, h = int64_t(r1) - r0 + 1;
    if (w <= 2 || h <= 2) {
        cx = static_cast<int32_t>(c0 + t % w);
        cy = static_cast<int32_t>(r0 + t / w);
    } else if (t < w) {
        cx = static_cast<int32_t>(c0 + t);
        cy = r0;
    } else if (t < 2 * w) {
        cx = static_cast<int32_t>(c0 + (t - w));
        cy = r1;
    } else {
        int64_t u = t - 2 * w;
        cy = static_cast<int32_t>(r0 + 1 + u / 2);
        cx = (u % 2 == 0) ? c0 : c1;
    }
}

APPROX_MO_HD inline bool in_rect(const Rect& q, double x, double y) {
    return x >= q.xmin && x <= q.xmax && y >= q.ymin && y <= q.ymax;
}

// Parallel delete within one cell (GPU engine): the cell holds n objects at
// positions 0..n-1 and loses d of them, whose positions are the low 32 bits of
// keys[b..e) (e - b = d), sorted ascending. Survivors at positions >= n - d
// ("movers", ranked by position) fill the deleted positions < n - d ("holes",
// ranked by position), so positions 0..n-d-1 end up holding exactly the
// survivors. The i-th delete (0 <= i < d) looks at tail position p = n - d + i:
// returns true with (from, to) = (p, hole) when a mover sits there. Sources
// and holes never overlap, so all d threads may move at once.
APPROX_MO_HD inline bool delete_move(const uint64_t* keys, int64_t b, int64_t e, int64_t n, int64_t i, int64_t& from,
                                     int64_t& to) {
    const int64_t d = e - b, n1 = n - d, p = n1 + i;
    auto pos = [&](int64_t idx) { return static_cast<int64_t>(keys[idx] & 0xffffffffu); };
    auto lower = [&](int64_t v) {  // first index in [b, e) with position >= v
        int64_t lo = b, hi = e;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (pos(mid) < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo;
    };
    int64_t L = lower(p);
    if (L < e && pos(L) == p) return false;    // p itself is deleted
    int64_t holes = lower(n1) - b;             // deleted positions < n1
    int64_t r = (p - n1) - (L - (b + holes));  // survivors in [n1, p)
    from = p;
    to = pos(b + r);
    return true;
}

// Timings and counts of the last batch of one kind.
struct BatchStats {
    char op[16] = {0};            // "update", "delete", "range_count", "range"
    int64_t entries = 0;          // input entries (updates, ids or queries)
    int64_t distinct = 0;         // distinct ids after dedupe (updates, deletes)
    int64_t inserted = 0;         // new ids
    int64_t moved = 0;            // cross-cell updates
    int64_t in_place = 0;         // same-cell updates
    int64_t deleted = 0;          // ids removed
    int64_t candidate_cells = 0;  // boundary cells checked object by object (queries)
    int64_t checked_objects = 0;  // objects tested against a rectangle (CPU: exact; GPU: bucket slots)
    int64_t results = 0;          // objects reported (queries)
    double ms_transfer = 0;       // host <-> device copies
    double ms_stage = 0;          // validate, dedupe, classify, plan, grow (updates); setup (queries)
    double ms_apply = 0;          // the apply phases (updates); the search (queries)
    double ms_total = 0;
};

struct Info {
    Device device = Device::Cpu;
    Grid grid;
    int64_t objects = 0;
    int64_t cells = 0;
    int64_t buckets_used = 0;     // buckets holding objects (sum over cells of ceil(count / 32))
    int64_t bucket_capacity = 0;  // buckets in the pool
    int bucket_slots = kBucketSlots;
    int64_t hash_capacity = 0;  // slots of the id -> (cell, k) table
    int64_t device_bytes = 0;   // GPU memory held (0 on the CPU engine)
    int64_t host_bytes = 0;     // host memory held
    BatchStats last_update;     // last update or delete batch
    BatchStats last_query;      // last range query batch
    bool in_service = false;    // the GPU service holds the index (moving_served.cpp)
};

// What an index may hold: at most limit - others bytes (others = what the
// session's other indexes hold). limit <= 0: no cap.
struct MemoryBudget {
    int64_t limit = 0;
    int64_t others = 0;
};

// ProgramLimit when held + extra bytes pass the budget; `what` names the need.
Status check_budget(const MemoryBudget& b, int64_t held, int64_t extra, const char* what);

// Entries of work between two polls of the cancel callback (upper bound per
// task of the CPU engine's parallel loops).
constexpr size_t kPollEntries = size_t(1) << 16;

// A grid index. Methods return Status and never throw. Not thread-safe: one
// caller at a time (a backend).
class Index {
public:
    virtual ~Index() = default;
    virtual Device device() const = 0;

    // The budget later calls must stay within (see MemoryBudget).
    void set_budget(const MemoryBudget& b) { budget_ = b; }
    const MemoryBudget& budget() const { return budget_; }
    // Bytes held now, host and device (what the budget counts).
    virtual int64_t bytes() const = 0;

    // A batch of (id, x, y): unknown ids are inserted, known ids move; within
    // the batch a later entry for the same id wins. Every point must be finite
    // and inside the extent, else OutOfRange / InvalidArgument and nothing
    // changes. applied = distinct ids written.
    Status update(const int64_t* ids, const double* xs, const double* ys, size_t n, const ExecContext& ctx,
                  int64_t& applied) noexcept {
        applied = 0;
        return guarded([&] { return apply_batch(false, ids, xs, ys, n, ctx, applied); });
    }

    // Removes the ids that exist (duplicates and unknown ids are ignored).
    Status remove(const int64_t* ids, size_t n, const ExecContext& ctx, int64_t& removed) noexcept {
        removed = 0;
        return guarded([&] { return apply_batch(true, ids, nullptr, nullptr, n, ctx, removed); });
    }

    // counts[i] = objects inside the closed rectangle qs[i] (clipped to the
    // extent; an inverted rectangle is empty). Bounds may be +-infinity, not NaN.
    Status range_count(const Rect* qs, size_t nq, const ExecContext& ctx, int64_t* counts) noexcept {
        return guarded([&] { return count_ranges(qs, nq, ctx, counts); });
    }

    // The ids inside q in ascending order. found = how many there are; out is
    // filled only when found <= capacity (call with capacity 0 to count).
    Status range_ids(const Rect& q, const ExecContext& ctx, int64_t* out, size_t capacity, size_t& found) noexcept {
        found = 0;
        return guarded([&] { return list_range(q, ctx, out, capacity, found); });
    }

    virtual void info(Info& out) const = 0;

    // Before the index is deleted: an index the GPU service holds is freed
    // there (deleting it only forgets it; the service frees what a backend
    // leaves when the backend exits). Nothing to do for a local index.
    virtual Status close(const ExecContext&) noexcept { return Status::Ok(); }

protected:
    // What each engine implements; the public calls above zero the outputs
    // and turn exceptions into a Status (one no-throw boundary for both).
    // is_delete: remove the ids (xs, ys are null), else insert or move them.
    virtual Status apply_batch(bool is_delete, const int64_t* ids, const double* xs, const double* ys, size_t n,
                               const ExecContext& ctx, int64_t& applied) = 0;
    virtual Status count_ranges(const Rect* qs, size_t nq, const ExecContext& ctx, int64_t* counts) = 0;
    virtual Status list_range(const Rect& q, const ExecContext& ctx, int64_t* out, size_t capacity, size_t& found) = 0;
    // ProgramLimit when `extra` more bytes would pass the budget.
    Status charge(int64_t extra, const char* what) const { return check_budget(budget_, bytes(), extra, what); }

    MemoryBudget budget_;
};

// Checks a grid: finite extent with xmin < xmax, ymin < ymax, a positive cell
// size, 1 <= cells_x, cells_y and cells_x * cells_y <= max_cells.
Status check_grid(const Grid& g, int64_t max_cells);

GridMap grid_map(const Grid& g);

// Creates an index; the engine is chosen like dispatch(): device 'gpu' -> GPU
// (error without one), 'auto' -> GPU when one is usable (CPU when its
// allocation fails), 'cpu' -> CPU. The caller owns *out (delete it). An
// empty index that would pass `budget` is ProgramLimit (nothing allocated).
Status create(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out,
              const MemoryBudget& budget = MemoryBudget());

// The engines themselves (tests, benchmark).
Status create_cpu(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out,
                  const MemoryBudget& budget = MemoryBudget());
Status create_gpu(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out,
                  const MemoryBudget& budget = MemoryBudget());  // cuda/moving.cu
// An index held by the GPU service (ctx.service), behind a proxy; a status
// for service::fall_back when the service does not take it (moving_served.cpp).
Status create_in_service(const Grid& g, int64_t max_cells, const ExecContext& ctx, Index*& out,
                         const MemoryBudget& budget);

}  // namespace approx::moving
