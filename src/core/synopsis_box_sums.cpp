// KDE synopses: the CPU box engine's sums (per box and piece, shifted sums
// over the sample rows). See synopsis.hpp and synopsis_internal.hpp.
#include "synopsis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "parallel.hpp"
#include "synopsis_internal.hpp"
#include "synopsis_math.hpp"

namespace approx::synopsis {

namespace {

constexpr int64_t kCpuRowsPerTask = 2048;        // sample rows per task when boxes are few
constexpr int64_t kCpuSingleThreadWork = 20000;  // box x row evaluations below which one thread runs

}  // namespace

// ---- box evaluation ---------------------------------------------------------------------------

math::ColumnParams column_params(const Synopsis& s) {
    math::ColumnParams p;
    for (int j = 0; j < kMaxDim; ++j) {
        bool used = j < s.d;
        const Column* c = used ? &s.cols[j] : nullptr;
        bool log_scale = used && c->mode == Mode::LogKde;
        p.h[j] = !used ? 1.0 : log_scale ? c->log_h : c->box_h;
        p.shift[j] = log_scale ? c->shift : 0.0;
        p.lower[j] = !used ? 0.0 : log_scale ? std::log(c->min + c->shift) : c->min;
        p.upper[j] = !used ? 0.0 : log_scale ? std::log(c->max + c->shift) : c->max;
        p.discrete[j] = used && c->mode == Mode::Exact ? 1 : 0;
        p.transform[j] = log_scale ? 1 : 0;
    }
    return p;
}

double box_interval_scale(const Synopsis& s, const double* lo, const double* hi) {
    double extra = 0;
    for (int j = 0; j < s.d; ++j) {
        const Column& c = s.cols[j];
        if (c.mode == Mode::Exact || c.interval_scale <= 1) continue;
        if (lo[j] <= c.min && hi[j] >= c.max) continue;  // unconstrained inside the sample's range
        extra += c.interval_scale * c.interval_scale - 1;
    }
    return std::sqrt(1 + extra);
}

bool box_empty(const Synopsis& s, const BoxBatch& boxes, int64_t b) {
    for (int j = 0; j < s.d; ++j)
        if (boxes.lo[b * s.d + j] > boxes.hi[b * s.d + j]) return true;
    return false;
}

namespace {

static_assert(math::kMaxColumns == kMaxDim, "one column limit");
static_assert(static_cast<unsigned char>(NullPolicy::Any) == math::kNullAny &&
                  static_cast<unsigned char>(NullPolicy::NotNull) == math::kNullNotNull &&
                  static_cast<unsigned char>(NullPolicy::IsNull) == math::kNullIsNull,
              "one encoding of the NULL policies");
using math::ColumnParams;

// Shifted sums of rows [begin, end) for one box; the shift (c0, s0) is the
// g of the piece's first row.
void accumulate(const Synopsis& s, const ColumnParams& p, const double* lo, const double* hi, const uint8_t* nulls,
                int k, int64_t begin, int64_t end, double c0, double s0, BoxSums& acc) {
    for (int64_t i = begin; i < end; ++i) {
        double c, g;
        math::row_terms(s.sample + i * s.d, lo, hi, p, s.d, k, nulls, c, g);
        double dc = c - c0, ds = g - s0;
        acc.sc += dc;
        acc.ss += ds;
        acc.scc += dc * dc;
        acc.sss += ds * ds;
        acc.scs += dc * ds;
        acc.support += c > 0;
    }
}

const uint8_t* box_nulls(const BoxBatch& boxes, int64_t b, int d) {
    return boxes.nulls ? boxes.nulls + b * d : nullptr;
}

}  // namespace

Status piece_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const Piece* pieces, int64_t n, const ExecContext& exec,
                      BoxSums* sums) {
    return guarded([&]() -> Status {
        // Small batches (one box of a 10^4 sample) run on the calling thread:
        // starting threads would cost more than the work.
        ExecContext ctx = exec;
        int64_t total = 0, longest = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t rows = pieces[i].end - pieces[i].begin;
            total += rows;
            longest = std::max(longest, rows);
        }
        if (total <= kCpuSingleThreadWork) ctx.cpu_threads = 1;
        const ColumnParams p = column_params(s);
        const int k = boxes.agg == Aggregate::Count ? -1 : boxes.column;
        const int d = s.d;
        std::vector<unsigned char> empty(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            sums[i] = BoxSums();
            empty[i] = box_empty(s, boxes, pieces[i].box) || pieces[i].end <= pieces[i].begin ? 1 : 0;
        }
        auto shift = [&](const Piece& pc, BoxSums& out) {
            const int64_t b = pc.box;
            math::row_terms(s.sample + pc.begin * d, boxes.lo + b * d, boxes.hi + b * d, p, d, k,
                            box_nulls(boxes, b, d), out.c0, out.s0);
        };
        if (n >= 4 * ctx.cpu_threads || longest <= kCpuRowsPerTask) {
            // Many pieces: one task per piece.
            return parallel_for(ctx, static_cast<size_t>(n), [&](size_t i, size_t) {
                if (empty[i]) return Status::Ok();
                const Piece& pc = pieces[i];
                BoxSums& out = sums[i];
                shift(pc, out);
                accumulate(s, p, boxes.lo + pc.box * d, boxes.hi + pc.box * d, box_nulls(boxes, pc.box, d), k, pc.begin,
                           pc.end, out.c0, out.s0, out);
                return Status::Ok();
            });
        }
        // Few pieces: tasks over (piece, chunk of its rows), summed in chunk order.
        std::vector<int64_t> first(static_cast<size_t>(n) + 1, 0);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t rows = pieces[i].end - pieces[i].begin;
            first[i + 1] = first[i] + (rows + kCpuRowsPerTask - 1) / kCpuRowsPerTask;
            if (!empty[i]) shift(pieces[i], sums[i]);
        }
        const int64_t tasks = first[n];
        std::vector<BoxSums> partial(static_cast<size_t>(tasks));
        std::vector<int64_t> owner(static_cast<size_t>(tasks));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t t = first[i]; t < first[i + 1]; ++t) owner[t] = i;
        APPROX_TRY(parallel_for(ctx, static_cast<size_t>(tasks), [&](size_t task, size_t) {
            const int64_t i = owner[task];
            if (empty[i]) return Status::Ok();
            const Piece& pc = pieces[i];
            const int64_t begin = pc.begin + (static_cast<int64_t>(task) - first[i]) * kCpuRowsPerTask;
            const int64_t end = std::min(pc.end, begin + kCpuRowsPerTask);
            accumulate(s, p, boxes.lo + pc.box * d, boxes.hi + pc.box * d, box_nulls(boxes, pc.box, d), k, begin, end,
                       sums[i].c0, sums[i].s0, partial[task]);
            return Status::Ok();
        }));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t t = first[i]; t < first[i + 1]; ++t) {
                const BoxSums& u = partial[t];
                sums[i].sc += u.sc;
                sums[i].ss += u.ss;
                sums[i].scc += u.scc;
                sums[i].sss += u.sss;
                sums[i].scs += u.scs;
                sums[i].support += u.support;
            }
        return Status::Ok();
    });
}

namespace {

// One piece per box over every sample row.
std::vector<Piece> whole_pieces(const Synopsis& s, const BoxBatch& boxes) {
    std::vector<Piece> pieces(static_cast<size_t>(boxes.q));
    for (int64_t b = 0; b < boxes.q; ++b) {
        pieces[b].box = b;
        pieces[b].begin = 0;
        pieces[b].end = s.m;
    }
    return pieces;
}

}  // namespace

Status box_sums_cpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums) {
    return guarded([&]() -> Status {
        const std::vector<Piece> pieces = whole_pieces(s, boxes);
        return piece_sums_cpu(s, boxes, pieces.data(), boxes.q, ctx, sums);
    });
}

#ifdef APPROX_WITH_CUDA
Status box_sums_gpu(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxSums* sums) {
    return guarded([&]() -> Status {
        const std::vector<Piece> pieces = whole_pieces(s, boxes);
        return piece_sums_gpu(s, boxes, pieces.data(), boxes.q, ctx, sums);
    });
}
#endif

}  // namespace approx::synopsis
