// The STAR machine on the CPU, argument checks shared with the GPU machine,
// and Warshall's algorithm written with STAR operations (see bitslice.hpp).
#include "bitslice.hpp"

#include <vector>

#include "bitslice_internal.hpp"

namespace approx::bitslice {

// ---- argument checks (shared by both machines) ------------------------------------

namespace detail {

Status check_bit(Slice x, int64_t i, const char* op) {
    if (i < 0 || i >= x.n)
        return Status::Error(StatusCode::InvalidArgument, "%s: index %lld outside a slice of %lld bits", op,
                             static_cast<long long>(i), static_cast<long long>(x.n));
    return Status::Ok();
}

Status check_same(Slice a, Slice b, const char* op) {
    if (a.n != b.n)
        return Status::Error(StatusCode::InvalidArgument, "%s: slices of %lld and %lld bits", op,
                             static_cast<long long>(a.n), static_cast<long long>(b.n));
    return Status::Ok();
}

Status check_trim(int64_t i, int64_t j, Slice w, Slice out) {
    if (i < 0 || j < i || j >= w.n)
        return Status::Error(StatusCode::InvalidArgument, "TRIM: range [%lld, %lld] outside a word of %lld bits",
                             static_cast<long long>(i), static_cast<long long>(j), static_cast<long long>(w.n));
    if (out.n != j - i + 1)
        return Status::Error(StatusCode::InvalidArgument, "TRIM: result word has %lld bits, the range %lld",
                             static_cast<long long>(out.n), static_cast<long long>(j - i + 1));
    return Status::Ok();
}

Status check_rep(int64_t i, int64_t j, Slice v, Slice w) {
    if (i < 0 || j < i || j >= w.n)
        return Status::Error(StatusCode::InvalidArgument, "REP: range [%lld, %lld] outside a word of %lld bits",
                             static_cast<long long>(i), static_cast<long long>(j), static_cast<long long>(w.n));
    if (v.n < j - i + 1)
        return Status::Error(StatusCode::InvalidArgument, "REP: replacement word has %lld bits, the range %lld",
                             static_cast<long long>(v.n), static_cast<long long>(j - i + 1));
    return Status::Ok();
}

Status check_col(const Table& t, int64_t j, Slice x, const char* op) {
    if (j < 0 || j >= t.cols)
        return Status::Error(StatusCode::InvalidArgument, "%s: column %lld outside a table of %lld columns", op,
                             static_cast<long long>(j), static_cast<long long>(t.cols));
    if (x.n != t.rows)
        return Status::Error(StatusCode::InvalidArgument, "%s: slice of %lld bits for a table of %lld rows", op,
                             static_cast<long long>(x.n), static_cast<long long>(t.rows));
    return Status::Ok();
}

Status check_row(const Table& t, int64_t i, Slice w, const char* op) {
    if (i < 0 || i >= t.rows)
        return Status::Error(StatusCode::InvalidArgument, "%s: row %lld outside a table of %lld rows", op,
                             static_cast<long long>(i), static_cast<long long>(t.rows));
    if (w.n != t.cols)
        return Status::Error(StatusCode::InvalidArgument, "%s: word of %lld bits for a table of %lld columns", op,
                             static_cast<long long>(w.n), static_cast<long long>(t.cols));
    return Status::Ok();
}

Status check_where(const Table& t, Slice w, Slice x) {
    if (w.n != t.cols || x.n != t.rows)
        return Status::Error(StatusCode::InvalidArgument,
                             "or_cols_where: word of %lld bits and slice of %lld bits for a %lld x %lld table",
                             static_cast<long long>(w.n), static_cast<long long>(x.n), static_cast<long long>(t.rows),
                             static_cast<long long>(t.cols));
    const uint64_t* tb = t.w;
    const uint64_t* te = t.w + t.ld * t.cols;
    const uint64_t* xb = x.w;
    const uint64_t* xe = x.w + x.words();
    if (xb < te && tb < xe)
        return Status::Error(StatusCode::InvalidArgument, "or_cols_where: the slice lies inside the table");
    return Status::Ok();
}

Status check_size(int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0 || rows > (int64_t(1) << 40) || cols > (int64_t(1) << 40))
        return Status::Error(StatusCode::InvalidArgument, "a slice or table of %lld x %lld bits is not allowed",
                             static_cast<long long>(rows), static_cast<long long>(cols));
    return Status::Ok();
}

}  // namespace detail

namespace {

// ---- the CPU machine ------------------------------------------------------------------

inline int ctz64(uint64_t v) { return __builtin_ctzll(v); }

class CpuMachine final : public Machine {
public:
    explicit CpuMachine(const ExecContext& ctx) : ctx_(ctx) {}
    Device device() const override { return Device::Cpu; }

    Status new_slice(int64_t n, Slice& out) override {
        APPROX_TRY(detail::check_size(n, 1));
        out = Slice{alloc(static_cast<size_t>(words_for(n))), n};
        return Status::Ok();
    }
    Status new_table(int64_t rows, int64_t cols, Table& out) override {
        APPROX_TRY(detail::check_size(rows, cols));
        int64_t ld = words_for(rows);
        out = Table{alloc(static_cast<size_t>(ld * cols)), rows, cols, ld};
        return Status::Ok();
    }
    Status load(Slice x, const uint64_t* host) override {
        int64_t nw = x.words();
        for (int64_t i = 0; i < nw; ++i) x.w[i] = host[i];
        if (nw) x.w[nw - 1] &= tail_mask(x.n);
        return Status::Ok();
    }
    Status store(Slice x, uint64_t* host) override {
        for (int64_t i = 0; i < x.words(); ++i) host[i] = x.w[i];
        return Status::Ok();
    }
    Status load_table(const Table& t, const uint64_t* host) override {
        for (int64_t j = 0; j < t.cols; ++j) APPROX_TRY(load(t.col(j), host + j * t.ld));
        return Status::Ok();
    }
    Status store_table(const Table& t, uint64_t* host) override {
        for (int64_t i = 0; i < t.ld * t.cols; ++i) host[i] = t.w[i];
        return Status::Ok();
    }
    Status sync() override { return Status::Ok(); }

    Status set(Slice x) override {
        int64_t nw = x.words();
        for (int64_t i = 0; i < nw; ++i) x.w[i] = ~0ULL;
        if (nw) x.w[nw - 1] = tail_mask(x.n);
        return Status::Ok();
    }
    Status clr(Slice x) override {
        for (int64_t i = 0; i < x.words(); ++i) x.w[i] = 0;
        return Status::Ok();
    }
    Status copy(Slice z, Slice x) override {
        APPROX_TRY(detail::check_same(z, x, "copy"));
        for (int64_t i = 0; i < z.words(); ++i) z.w[i] = x.w[i];
        return Status::Ok();
    }
    Status and_(Slice z, Slice y) override {
        APPROX_TRY(detail::check_same(z, y, "AND"));
        for (int64_t i = 0; i < z.words(); ++i) z.w[i] &= y.w[i];
        return Status::Ok();
    }
    Status or_(Slice z, Slice y) override {
        APPROX_TRY(detail::check_same(z, y, "OR"));
        for (int64_t i = 0; i < z.words(); ++i) z.w[i] |= y.w[i];
        return Status::Ok();
    }
    Status xor_(Slice z, Slice y) override {
        APPROX_TRY(detail::check_same(z, y, "XOR"));
        for (int64_t i = 0; i < z.words(); ++i) z.w[i] ^= y.w[i];
        return Status::Ok();
    }
    Status not_(Slice z) override {
        int64_t nw = z.words();
        for (int64_t i = 0; i < nw; ++i) z.w[i] = ~z.w[i];
        if (nw) z.w[nw - 1] &= tail_mask(z.n);
        return Status::Ok();
    }
    Status get(Slice x, int64_t i, bool& bit) override {
        APPROX_TRY(detail::check_bit(x, i, "Y(i)"));
        bit = (x.w[i >> 6] >> (i & 63)) & 1;
        return Status::Ok();
    }
    Status put(Slice x, int64_t i, bool bit) override {
        APPROX_TRY(detail::check_bit(x, i, "Y(i)"));
        uint64_t m = 1ULL << (i & 63);
        if (bit)
            x.w[i >> 6] |= m;
        else
            x.w[i >> 6] &= ~m;
        return Status::Ok();
    }
    Status fnd(Slice x, int64_t& i) override {
        i = first_one(x);
        return Status::Ok();
    }
    Status step(Slice x, int64_t& i) override {
        i = first_one(x);
        if (i >= 0) x.w[i >> 6] &= ~(1ULL << (i & 63));
        return Status::Ok();
    }
    Status some(Slice x, bool& any) override {
        any = first_one(x) >= 0;
        return Status::Ok();
    }
    Status numb(Slice x, int64_t& count) override {
        count = 0;
        for (int64_t i = 0; i < x.words(); ++i) count += __builtin_popcountll(x.w[i]);
        return Status::Ok();
    }
    Status frst(Slice x) override {
        int64_t f = first_one(x);
        for (int64_t i = 0; i < x.words(); ++i) x.w[i] = 0;
        if (f >= 0) x.w[f >> 6] = 1ULL << (f & 63);
        return Status::Ok();
    }
    Status trim(int64_t i, int64_t j, Slice w, Slice out) override {
        APPROX_TRY(detail::check_trim(i, j, w, out));
        for (int64_t o = 0; o < out.words(); ++o) out.w[o] = detail::bits_at(w.w, w.words(), i + 64 * o);
        out.w[out.words() - 1] &= tail_mask(out.n);
        return Status::Ok();
    }
    Status rep(int64_t i, int64_t j, Slice v, Slice w) override {
        APPROX_TRY(detail::check_rep(i, j, v, w));
        for (int64_t o = i >> 6; o <= (j >> 6); ++o) w.w[o] = detail::rep_word(w.w[o], o, i, j, v.w, v.words());
        return Status::Ok();
    }
    Status col(const Table& t, int64_t j, Slice out) override {
        APPROX_TRY(detail::check_col(t, j, out, "COL"));
        return copy(out, t.col(j));
    }
    Status set_col(const Table& t, int64_t j, Slice x) override {
        APPROX_TRY(detail::check_col(t, j, x, "set COL"));
        return copy(t.col(j), x);
    }
    Status row(const Table& t, int64_t i, Slice out) override {
        APPROX_TRY(detail::check_row(t, i, out, "ROW"));
        int64_t wi = i >> 6;
        int sh = static_cast<int>(i & 63);
        for (int64_t o = 0; o < out.words(); ++o) {
            uint64_t acc = 0;
            int64_t c0 = o * 64;
            int64_t c1 = c0 + 64 < t.cols ? c0 + 64 : t.cols;
            for (int64_t c = c0; c < c1; ++c) acc |= ((t.w[c * t.ld + wi] >> sh) & 1ULL) << (c - c0);
            out.w[o] = acc;
        }
        return Status::Ok();
    }
    Status set_row(const Table& t, int64_t i, Slice w) override {
        APPROX_TRY(detail::check_row(t, i, w, "set ROW"));
        int64_t wi = i >> 6;
        uint64_t m = 1ULL << (i & 63);
        for (int64_t c = 0; c < t.cols; ++c) {
            uint64_t& dst = t.w[c * t.ld + wi];
            if ((w.w[c >> 6] >> (c & 63)) & 1)
                dst |= m;
            else
                dst &= ~m;
        }
        return Status::Ok();
    }
    Status or_cols_where(const Table& t, Slice w, Slice x) override {
        APPROX_TRY(detail::check_where(t, w, x));
        // Columns are independent: split them over the worker threads when
        // the table is large enough to pay for them.
        int64_t nw = x.words();
        auto body = [&](int64_t c0, int64_t c1) {
            for (int64_t c = c0; c < c1; ++c) {
                if (!((w.w[c >> 6] >> (c & 63)) & 1)) continue;
                uint64_t* dst = t.w + c * t.ld;
                for (int64_t r = 0; r < nw; ++r) dst[r] |= x.w[r];
            }
            return Status::Ok();
        };
        if (ctx_.cpu_threads <= 1 || t.cols * nw < (1 << 16)) return body(0, t.cols);
        const int64_t chunk = 256;
        size_t tasks = static_cast<size_t>((t.cols + chunk - 1) / chunk);
        return parallel_for(ctx_, tasks, [&](size_t task, size_t) {
            int64_t c0 = static_cast<int64_t>(task) * chunk;
            return body(c0, c0 + chunk < t.cols ? c0 + chunk : t.cols);
        });
    }

private:
    uint64_t* alloc(size_t words) {
        store_.emplace_back(words == 0 ? 1 : words, 0ULL);  // bad_alloc: caught by the callers' guarded()
        return store_.back().data();
    }
    static int64_t first_one(Slice x) {
        for (int64_t i = 0; i < x.words(); ++i)
            if (x.w[i]) return i * 64 + ctz64(x.w[i]);
        return -1;
    }

    const ExecContext& ctx_;
    std::vector<std::vector<uint64_t>> store_;
};

}  // namespace

Status make_cpu_machine(const ExecContext& ctx, std::unique_ptr<Machine>& out) {
    return guarded([&] {
        out.reset(new CpuMachine(ctx));
        return Status::Ok();
    });
}

Status make_machine(Device device, const ExecContext& ctx, std::unique_ptr<Machine>& out) {
    if (device == Device::Cpu) return make_cpu_machine(ctx, out);
#ifdef APPROX_WITH_CUDA
    return make_gpu_machine(ctx, out);
#else
    return Status::Error(StatusCode::NoGpu, "built without CUDA");
#endif
}

// ---- Warshall with STAR operations ------------------------------------------------------

namespace {

// The frame the three listings share: a square table and, for each round k,
// X = COL(k) (the rows i with an edge i -> k) and W = ROW(k) (the columns j
// with an edge k -> j), then the listing's own round(X, W). The cancel
// callback is polled every poll_every rounds (a power of two).
template <class Round>
Status warshall_rounds(Machine& m, const Table& t, const ExecContext& ctx, int64_t poll_every, Round&& round) {
    return guarded([&]() -> Status {
        if (t.rows != t.cols)
            return Status::Error(StatusCode::InvalidArgument, "Warshall: the table must be square, not %lld x %lld",
                                 static_cast<long long>(t.rows), static_cast<long long>(t.cols));
        const int64_t n = t.rows;
        if (n == 0) return Status::Ok();
        Slice x, w;
        APPROX_TRY(m.new_slice(n, x));
        APPROX_TRY(m.new_slice(n, w));
        for (int64_t k = 0; k < n; ++k) {
            if ((k & (poll_every - 1)) == 0 && ctx.cancelled()) return cancelled_status();
            APPROX_TRY(m.col(t, k, x));
            APPROX_TRY(m.row(t, k, w));
            APPROX_TRY(round(x, w));
        }
        return m.sync();
    });
}

}  // namespace

// Listing 1 (row-oriented): each row i of X (STEP) takes ROW(i) OR ROW(k).
// ROW(k) does not change during round k (only row k itself could, by ROW(k)
// OR ROW(k)).
Status warshall_rows(Machine& m, const Table& t, const ExecContext& ctx) {
    Slice v;
    return warshall_rounds(m, t, ctx, 1, [&](Slice& x, Slice& w) -> Status {
        if (v.n == 0) APPROX_TRY(m.new_slice(t.rows, v));
        for (;;) {
            int64_t i;
            APPROX_TRY(m.step(x, i));
            if (i < 0) return Status::Ok();
            APPROX_TRY(m.row(t, i, v));
            APPROX_TRY(m.or_(v, w));
            APPROX_TRY(m.set_row(t, i, v));
        }
    });
}

// Listing 2 (column-oriented): each column j of W (STEP) takes COL(j) OR
// COL(k), a vertical operation on whole slices.
Status warshall_cols(Machine& m, const Table& t, const ExecContext& ctx) {
    return warshall_rounds(m, t, ctx, 1, [&](Slice& x, Slice& w) -> Status {
        for (;;) {
            int64_t j;
            APPROX_TRY(m.step(w, j));
            if (j < 0) return Status::Ok();
            APPROX_TRY(m.or_(t.col(j), x));
        }
    });
}

// Listing 4 (adapted): all columns of round k at once.
Status warshall_adapt(Machine& m, const Table& t, const ExecContext& ctx) {
    return warshall_rounds(m, t, ctx, 64, [&](Slice& x, Slice& w) { return m.or_cols_where(t, w, x); });
}

}  // namespace approx::bitslice
