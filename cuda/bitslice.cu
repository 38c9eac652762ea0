// The STAR machine on the GPU (see src/core/bitslice.hpp): slices and tables
// in device memory (DeviceBuffer), bitwise operations as plain elementwise
// kernels, the reductions through CUB (NUMB = popc + Sum, SOME = any via Max,
// FND = Min over the word index of each word's first 1). Operations queue on
// the engines' stream; those that return a value to the host wait for it.
#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <thrust/iterator/counting_iterator.h>

#include <climits>
#include <vector>

#include "core/bitslice.hpp"
#include "core/bitslice_internal.hpp"
#include "common.cuh"

namespace approx::bitslice {

namespace {

using gpu::CubTemp;
using gpu::DeviceBuffer;
using gpu::grid_for;
using gpu::PinnedBuffer;

constexpr unsigned kThreads = 256;
constexpr int64_t kNone = LLONG_MAX;

__global__ void fill_kernel(uint64_t* w, int64_t nw, uint64_t value, uint64_t tail) {
    GRID_STRIDE(i, nw) w[i] = (i == nw - 1) ? (value & tail) : value;
}

__global__ void mask_tails_kernel(uint64_t* w, int64_t ld, int64_t cols, int64_t last, uint64_t tail) {
    GRID_STRIDE(c, cols) w[c * ld + last] &= tail;
}

enum class Op { And, Or, Xor };

template <Op op>
__global__ void binop_kernel(uint64_t* z, const uint64_t* y, int64_t nw) {
    GRID_STRIDE(i, nw) {
        if (op == Op::And) z[i] &= y[i];
        if (op == Op::Or) z[i] |= y[i];
        if (op == Op::Xor) z[i] ^= y[i];
    }
}

__global__ void not_kernel(uint64_t* z, int64_t nw, uint64_t tail) {
    GRID_STRIDE(i, nw) z[i] = (i == nw - 1) ? (~z[i] & tail) : ~z[i];
}

__global__ void put_kernel(uint64_t* w, int64_t i, int bit) {
    uint64_t m = 1ULL << (i & 63);
    if (bit)
        w[i >> 6] |= m;
    else
        w[i >> 6] &= ~m;
}

// STEP's second half: clear the 1 that FND found (found = kNone: none).
__global__ void clear_found_kernel(uint64_t* w, const int64_t* found) {
    int64_t f = *found;
    if (f != kNone) w[f >> 6] &= ~(1ULL << (f & 63));
}

// FRST: keep only the 1 that FND found.
__global__ void keep_found_kernel(uint64_t* w, int64_t nw, const int64_t* found) {
    int64_t f = *found;
    GRID_STRIDE(i, nw) w[i] = (f != kNone && i == (f >> 6)) ? (1ULL << (f & 63)) : 0ULL;
}

__global__ void trim_kernel(uint64_t* out, int64_t out_nw, uint64_t tail, const uint64_t* w, int64_t w_nw, int64_t i) {
    GRID_STRIDE(o, out_nw) {
        uint64_t v = detail::bits_at(w, w_nw, i + 64 * o);
        out[o] = (o == out_nw - 1) ? (v & tail) : v;
    }
}

__global__ void rep_kernel(uint64_t* w, int64_t o0, int64_t count, int64_t i, int64_t j, const uint64_t* v,
                           int64_t v_nw) {
    GRID_STRIDE(t, count) {
        int64_t o = o0 + t;
        w[o] = detail::rep_word(w[o], o, i, j, v, v_nw);
    }
}

// ROW(i, T): word o of the row gathers bit i of columns 64 o .. 64 o + 63.
__global__ void row_kernel(uint64_t* out, int64_t out_nw, const uint64_t* t, int64_t ld, int64_t cols, int64_t i) {
    const int64_t wi = i >> 6;
    const int sh = static_cast<int>(i & 63);
    GRID_STRIDE(o, out_nw) {
        uint64_t acc = 0;
        int64_t c0 = o * 64;
        int64_t c1 = c0 + 64 < cols ? c0 + 64 : cols;
        for (int64_t c = c0; c < c1; ++c) acc |= ((t[c * ld + wi] >> sh) & 1ULL) << (c - c0);
        out[o] = acc;
    }
}

// set ROW(i, T) = w: one thread per column (each column's word is its own).
__global__ void set_row_kernel(uint64_t* t, int64_t ld, int64_t cols, int64_t i, const uint64_t* w) {
    const int64_t wi = i >> 6;
    const uint64_t m = 1ULL << (i & 63);
    GRID_STRIDE(c, cols) {
        uint64_t& dst = t[c * ld + wi];
        if ((w[c >> 6] >> (c & 63)) & 1)
            dst |= m;
        else
            dst &= ~m;
    }
}

// or_cols_where: thread per (column, word); columns whose bit in w is 0 stay.
__global__ void or_where_kernel(uint64_t* t, int64_t ld, int64_t cols, int64_t nw, const uint64_t* w,
                                const uint64_t* x) {
    GRID_STRIDE(idx, cols * nw) {
        int64_t c = idx / nw, r = idx - c * nw;
        if ((w[c >> 6] >> (c & 63)) & 1) t[c * ld + r] |= x[r];
    }
}

// index of a word's first 1 (kNone for a zero word), for FND
struct FirstOne {
    const uint64_t* w;
    __device__ int64_t operator()(int64_t i) const {
        uint64_t v = w[i];
        return v ? i * 64 + __ffsll(static_cast<long long>(v)) - 1 : kNone;
    }
};
struct PopCount {
    __device__ int64_t operator()(uint64_t v) const { return __popcll(v); }
};
struct NonZero {
    __device__ int operator()(uint64_t v) const { return v != 0; }
};

class GpuMachine final : public Machine {
public:
    explicit GpuMachine(const ExecContext& ctx) : ctx_(ctx) {}

    Status init() {
        APPROX_TRY(gpu::begin(ctx_, s_));
        APPROX_TRY(scalars_.alloc(ctx_, 4));
        APPROX_TRY(host_.alloc(4));
        return Status::Ok();
    }

    Device device() const override { return Device::Gpu; }

    Status new_slice(int64_t n, Slice& out) override {
        APPROX_TRY(detail::check_size(n, 1));
        uint64_t* p = nullptr;
        APPROX_TRY(alloc(words_for(n), p));
        out = Slice{p, n};
        return Status::Ok();
    }
    Status new_table(int64_t rows, int64_t cols, Table& out) override {
        APPROX_TRY(detail::check_size(rows, cols));
        int64_t ld = words_for(rows);
        uint64_t* p = nullptr;
        APPROX_TRY(alloc(ld * cols, p));
        out = Table{p, rows, cols, ld};
        return Status::Ok();
    }
    Status load(Slice x, const uint64_t* host) override {
        int64_t nw = x.words();
        if (nw == 0) return Status::Ok();
        APPROX_CUDA(cudaMemcpyAsync(x.w, host, nw * 8, cudaMemcpyHostToDevice, s_));
        if (x.n % 64) {
            mask_tails_kernel<<<1, 1, 0, s_>>>(x.w, nw, 1, nw - 1, tail_mask(x.n));
            APPROX_CUDA_LAUNCHED();
        }
        return Status::Ok();
    }
    Status store(Slice x, uint64_t* host) override {
        if (x.words() == 0) return Status::Ok();
        APPROX_CUDA(cudaMemcpyAsync(host, x.w, x.words() * 8, cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        return Status::Ok();
    }
    Status load_table(const Table& t, const uint64_t* host) override {
        if (t.ld * t.cols == 0) return Status::Ok();
        APPROX_CUDA(cudaMemcpyAsync(t.w, host, t.ld * t.cols * 8, cudaMemcpyHostToDevice, s_));
        if (t.rows % 64) {
            mask_tails_kernel<<<grid_for(t.cols, kThreads), kThreads, 0, s_>>>(t.w, t.ld, t.cols, t.ld - 1,
                                                                               tail_mask(t.rows));
            APPROX_CUDA_LAUNCHED();
        }
        return Status::Ok();
    }
    Status store_table(const Table& t, uint64_t* host) override {
        if (t.ld * t.cols == 0) return Status::Ok();
        APPROX_CUDA(cudaMemcpyAsync(host, t.w, t.ld * t.cols * 8, cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        return Status::Ok();
    }
    Status sync() override {
        APPROX_CUDA(cudaStreamSynchronize(s_));
        return Status::Ok();
    }

    Status set(Slice x) override { return fill(x, ~0ULL); }
    Status clr(Slice x) override {
        if (x.words() == 0) return Status::Ok();
        APPROX_CUDA(cudaMemsetAsync(x.w, 0, x.words() * 8, s_));
        return Status::Ok();
    }
    Status copy(Slice z, Slice x) override {
        APPROX_TRY(detail::check_same(z, x, "copy"));
        if (z.words() == 0 || z.w == x.w) return Status::Ok();
        APPROX_CUDA(cudaMemcpyAsync(z.w, x.w, z.words() * 8, cudaMemcpyDeviceToDevice, s_));
        return Status::Ok();
    }
    Status and_(Slice z, Slice y) override { return binop<Op::And>(z, y, "AND"); }
    Status or_(Slice z, Slice y) override { return binop<Op::Or>(z, y, "OR"); }
    Status xor_(Slice z, Slice y) override { return binop<Op::Xor>(z, y, "XOR"); }
    Status not_(Slice z) override {
        if (z.words() == 0) return Status::Ok();
        not_kernel<<<grid_for(z.words(), kThreads), kThreads, 0, s_>>>(z.w, z.words(), tail_mask(z.n));
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    Status get(Slice x, int64_t i, bool& bit) override {
        APPROX_TRY(detail::check_bit(x, i, "Y(i)"));
        APPROX_CUDA(cudaMemcpyAsync(host_.get(), x.w + (i >> 6), 8, cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        bit = (static_cast<uint64_t>(host_.get()[0]) >> (i & 63)) & 1;
        return Status::Ok();
    }
    Status put(Slice x, int64_t i, bool bit) override {
        APPROX_TRY(detail::check_bit(x, i, "Y(i)"));
        put_kernel<<<1, 1, 0, s_>>>(x.w, i, bit ? 1 : 0);
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    Status fnd(Slice x, int64_t& i) override {
        APPROX_TRY(first_one(x));
        return read_index(i);
    }
    Status step(Slice x, int64_t& i) override {
        APPROX_TRY(first_one(x));
        if (x.words() > 0) {
            clear_found_kernel<<<1, 1, 0, s_>>>(x.w, scalars_.get());
            APPROX_CUDA_LAUNCHED();
        }
        return read_index(i);
    }
    Status some(Slice x, bool& any) override {
        any = false;
        if (x.words() == 0) return Status::Ok();
        int* out = reinterpret_cast<int*>(scalars_.get());
        const uint64_t* w = x.w;
        int64_t nw = x.words();
        APPROX_TRY(tmp_.run(ctx_, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::TransformReduce(p, bytes, w, out, nw, cuda::maximum<>{}, NonZero{}, 0, s_);
        }));
        int result = 0;
        APPROX_CUDA(cudaMemcpyAsync(&result, out, sizeof(int), cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        any = result != 0;
        return Status::Ok();
    }
    Status numb(Slice x, int64_t& count) override {
        count = 0;
        if (x.words() == 0) return Status::Ok();
        int64_t* out = scalars_.get();
        const uint64_t* w = x.w;
        int64_t nw = x.words();
        APPROX_TRY(tmp_.run(ctx_, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::TransformReduce(p, bytes, w, out, nw, cuda::std::plus<>{}, PopCount{}, int64_t(0),
                                                      s_);
        }));
        APPROX_CUDA(cudaMemcpyAsync(host_.get(), out, 8, cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        count = host_.get()[0];
        return Status::Ok();
    }
    Status frst(Slice x) override {
        if (x.words() == 0) return Status::Ok();
        APPROX_TRY(first_one(x));
        keep_found_kernel<<<grid_for(x.words(), kThreads), kThreads, 0, s_>>>(x.w, x.words(), scalars_.get());
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    Status trim(int64_t i, int64_t j, Slice w, Slice out) override {
        APPROX_TRY(detail::check_trim(i, j, w, out));
        trim_kernel<<<grid_for(out.words(), kThreads), kThreads, 0, s_>>>(out.w, out.words(), tail_mask(out.n), w.w,
                                                                          w.words(), i);
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    Status rep(int64_t i, int64_t j, Slice v, Slice w) override {
        APPROX_TRY(detail::check_rep(i, j, v, w));
        int64_t o0 = i >> 6, count = (j >> 6) - o0 + 1;
        rep_kernel<<<grid_for(count, kThreads), kThreads, 0, s_>>>(w.w, o0, count, i, j, v.w, v.words());
        APPROX_CUDA_LAUNCHED();
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
        row_kernel<<<grid_for(out.words(), kThreads), kThreads, 0, s_>>>(out.w, out.words(), t.w, t.ld, t.cols, i);
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    Status set_row(const Table& t, int64_t i, Slice w) override {
        APPROX_TRY(detail::check_row(t, i, w, "set ROW"));
        set_row_kernel<<<grid_for(t.cols, kThreads), kThreads, 0, s_>>>(t.w, t.ld, t.cols, i, w.w);
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    Status or_cols_where(const Table& t, Slice w, Slice x) override {
        APPROX_TRY(detail::check_where(t, w, x));
        int64_t nw = x.words();
        if (nw == 0 || t.cols == 0) return Status::Ok();
        or_where_kernel<<<grid_for(t.cols * nw, kThreads), kThreads, 0, s_>>>(t.w, t.ld, t.cols, nw, w.w, x.w);
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }

private:
    Status alloc(int64_t words, uint64_t*& p) {
        DeviceBuffer<uint64_t> buf;
        APPROX_TRY(buf.alloc(ctx_, static_cast<size_t>(words > 0 ? words : 1)));
        APPROX_CUDA(cudaMemsetAsync(buf.get(), 0, buf.bytes(), s_));
        p = buf.get();
        store_.push_back(std::move(buf));
        return Status::Ok();
    }
    Status fill(Slice x, uint64_t value) {
        if (x.words() == 0) return Status::Ok();
        fill_kernel<<<grid_for(x.words(), kThreads), kThreads, 0, s_>>>(x.w, x.words(), value, tail_mask(x.n));
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    template <Op op>
    Status binop(Slice z, Slice y, const char* name) {
        APPROX_TRY(detail::check_same(z, y, name));
        if (z.words() == 0) return Status::Ok();
        binop_kernel<op><<<grid_for(z.words(), kThreads), kThreads, 0, s_>>>(z.w, y.w, z.words());
        APPROX_CUDA_LAUNCHED();
        return Status::Ok();
    }
    // FND into scalars_[0] on the device (kNone when X has no 1).
    Status first_one(Slice x) {
        int64_t* out = scalars_.get();
        int64_t nw = x.words();
        if (nw == 0) {
            int64_t none = kNone;
            APPROX_CUDA(cudaMemcpyAsync(out, &none, 8, cudaMemcpyHostToDevice, s_));
            return Status::Ok();
        }
        FirstOne op{x.w};
        thrust::counting_iterator<int64_t> idx(0);
        return tmp_.run(ctx_, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::TransformReduce(p, bytes, idx, out, nw, cuda::minimum<>{}, op, kNone, s_);
        });
    }
    Status read_index(int64_t& i) {
        APPROX_CUDA(cudaMemcpyAsync(host_.get(), scalars_.get(), 8, cudaMemcpyDeviceToHost, s_));
        APPROX_CUDA(cudaStreamSynchronize(s_));
        int64_t f = host_.get()[0];
        i = f == kNone ? -1 : f;
        return Status::Ok();
    }

    const ExecContext& ctx_;
    cudaStream_t s_ = nullptr;
    std::vector<DeviceBuffer<uint64_t>> store_;
    DeviceBuffer<int64_t> scalars_;
    PinnedBuffer<int64_t> host_;
    CubTemp tmp_;
};

}  // namespace

Status make_gpu_machine(const ExecContext& ctx, std::unique_ptr<Machine>& out) {
    return guarded([&]() -> Status {
        std::unique_ptr<GpuMachine> m(new GpuMachine(ctx));
        APPROX_TRY(m->init());
        out = std::move(m);
        return Status::Ok();
    });
}

}  // namespace approx::bitslice
