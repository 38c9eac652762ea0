// Transitive closure, GPU engine (see src/core/closure.hpp).
//
// The bit matrix lives on the device padded to Np x Np bits, Np a multiple of
// the k-tile (256), so every tile is whole. Rows are Np / 32 32-bit words
// apart (the same bytes as the 64-bit words of the API; bit j of a row is bit
// j % 32 of word j / 32). Blocked Floyd-Warshall, per k-tile K:
//   diag_kernel    one block of 256 threads closes D = R[K, K] (Warshall,
//                  thread per row, row k handed over in shared memory, one
//                  barrier per k)
//   panels_kernel  (phase 2) R[K, J] |= D . R[K, J] and R[I, K] |= R[I, K] . D,
//   rest_kernel    (phase 3) R[I, J] |= R[I, K] . R[K, J], I, J outside K.
// One warp computes a (32 * RI) x 256-bit tile C |= A . B: A's rows
// (transposed) and B's 256 rows in shared memory, C in registers (RI rows x 8
// words per lane); for every k it reads B's row once (a broadcast) and ORs it
// into the rows whose bit k is set: 32 bits per instruction.
// Around it: ids mapped by CUB (radix sort + unique + binary search), edges
// set with atomicOr, the count by CUB TransformReduce over popc, component
// DAGs closed level by level, and a queue-based BFS for reachable().
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/functional>
#include <thrust/binary_search.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "core/closure.hpp"
#include "core/closure_internal.hpp"
#include "common.cuh"

namespace approx::closure::gpu {

namespace {

using approx::gpu::add_transfer_ms;
using approx::gpu::CubTemp;
using approx::gpu::DeviceBuffer;
using approx::gpu::grid_for;

constexpr unsigned kThreads = 256;
constexpr int kTileWords = kTile / 32;  // 8 32-bit words per tile row

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- blocked Floyd-Warshall kernels ---------------------------------------------------

// Phase 1: Warshall inside the diagonal tile. Thread t owns row k0 + t (its 8
// words of the tile). In step k, thread k publishes its row (as it stands
// after step k - 1) and every row with bit k set ORs it in. Two publication
// buffers: the one written in step k was last read in step k - 2, and every
// thread has passed step k - 1's barrier since.
__global__ void __launch_bounds__(kTile) diag_kernel(uint32_t* R, int64_t L, int kt) {
    __shared__ uint4 pub[2][2];
    const int t = threadIdx.x;
    const int64_t k0 = static_cast<int64_t>(kt) * kTile;
    uint4* p = reinterpret_cast<uint4*>(R + (k0 + t) * L + kt * kTileWords);
    uint4 lo = p[0], hi = p[1];
    uint32_t row[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int s = 0; s < 8; ++s) {
#pragma unroll 1
        for (int b = 0; b < 32; ++b) {
            const int k = s * 32 + b;
            if (t == k) {
                pub[k & 1][0] = make_uint4(row[0], row[1], row[2], row[3]);
                pub[k & 1][1] = make_uint4(row[4], row[5], row[6], row[7]);
            }
            __syncthreads();
            if ((row[s] >> b) & 1u) {
                uint4 a = pub[k & 1][0], c = pub[k & 1][1];
                row[0] |= a.x;
                row[1] |= a.y;
                row[2] |= a.z;
                row[3] |= a.w;
                row[4] |= c.x;
                row[5] |= c.y;
                row[6] |= c.z;
                row[7] |= c.w;
            }
        }
    }
    p[0] = make_uint4(row[0], row[1], row[2], row[3]);
    p[1] = make_uint4(row[4], row[5], row[6], row[7]);
}

// One warp: C (32 * RI rows x 256 bits, rows L words apart) |= A . B where
// A is 32 * RI rows x 256 bits (row stride L) and B 256 rows x 256 bits (row
// stride LB). Lane l owns rows l, l + 32, ... of C. A and C may be the same
// memory (A is read completely before C is written).
template <int RI>
struct TileShared {
    uint32_t a[kTileWords][32 * RI];  // A transposed: a[s][r] = bits 32 s .. 32 s + 31 of row r
    uint4 b[kTile][2];                // B's rows
};

template <int RI>
__device__ __forceinline__ void warp_product(TileShared<RI>& sm, uint32_t* C, const uint32_t* A, const uint32_t* B,
                                             int64_t L, int64_t LB) {
    const int lane = threadIdx.x & 31;
    // A, transposed into shared memory (bank = row % 32: conflict-free)
#pragma unroll
    for (int q = 0; q < RI; ++q) {
        const int r = lane + 32 * q;
        const uint4* ar = reinterpret_cast<const uint4*>(A + r * L);
        uint4 lo = ar[0], hi = ar[1];
        sm.a[0][r] = lo.x;
        sm.a[1][r] = lo.y;
        sm.a[2][r] = lo.z;
        sm.a[3][r] = lo.w;
        sm.a[4][r] = hi.x;
        sm.a[5][r] = hi.y;
        sm.a[6][r] = hi.z;
        sm.a[7][r] = hi.w;
    }
    // B's 256 rows
#pragma unroll
    for (int q = 0; q < kTile / 32; ++q) {
        const int k = lane + 32 * q;
        const uint4* br = reinterpret_cast<const uint4*>(B + k * LB);
        sm.b[k][0] = br[0];
        sm.b[k][1] = br[1];
    }
    // C into registers
    uint32_t acc[RI][8];
#pragma unroll
    for (int q = 0; q < RI; ++q) {
        const uint4* cr = reinterpret_cast<const uint4*>(C + (lane + 32 * q) * L);
        uint4 lo = cr[0], hi = cr[1];
        acc[q][0] = lo.x;
        acc[q][1] = lo.y;
        acc[q][2] = lo.z;
        acc[q][3] = lo.w;
        acc[q][4] = hi.x;
        acc[q][5] = hi.y;
        acc[q][6] = hi.z;
        acc[q][7] = hi.w;
    }
    __syncwarp();

#pragma unroll 1
    for (int s = 0; s < kTileWords; ++s) {
        uint32_t a[RI];
#pragma unroll
        for (int q = 0; q < RI; ++q) a[q] = sm.a[s][lane + 32 * q];
#pragma unroll 1
        for (int g = 0; g < 4; ++g) {
            uint32_t as[RI];
#pragma unroll
            for (int q = 0; q < RI; ++q) as[q] = a[q] >> (8 * g);
            const int kb = s * 32 + g * 8;
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const uint4 b0 = sm.b[kb + u][0];
                const uint4 b1 = sm.b[kb + u][1];
#pragma unroll
                for (int q = 0; q < RI; ++q) {
                    if (as[q] & (1u << u)) {
                        acc[q][0] |= b0.x;
                        acc[q][1] |= b0.y;
                        acc[q][2] |= b0.z;
                        acc[q][3] |= b0.w;
                        acc[q][4] |= b1.x;
                        acc[q][5] |= b1.y;
                        acc[q][6] |= b1.z;
                        acc[q][7] |= b1.w;
                    }
                }
            }
        }
    }

#pragma unroll
    for (int q = 0; q < RI; ++q) {
        uint4* cr = reinterpret_cast<uint4*>(C + (lane + 32 * q) * L);
        cr[0] = make_uint4(acc[q][0], acc[q][1], acc[q][2], acc[q][3]);
        cr[1] = make_uint4(acc[q][4], acc[q][5], acc[q][6], acc[q][7]);
    }
}

// Tile index t' in [0, nt - 1) of the tiles other than kt.
__device__ __forceinline__ int64_t skip_tile(int64_t t, int kt) { return t + (t >= kt ? 1 : 0); }

// Phase 2, one warp per block: blocks [0, (nt-1) G) take row-panel pieces
// (rows of K, a tile column J != K), the rest column-panel pieces (rows of a
// tile I != K, the columns of K). G = 256 / (32 RI) row groups per tile. B (the
// row panel, D included) comes from `slab`, a copy of rows K taken after phase 1.
template <int RI>
__global__ void __launch_bounds__(32) panels_kernel(uint32_t* R, int64_t L, const uint32_t* slab, int kt, int64_t nt) {
    __shared__ TileShared<RI> sm;
    constexpr int G = kTile / (32 * RI);
    const int64_t k0 = static_cast<int64_t>(kt) * kTile;
    const int64_t half = (nt - 1) * G;
    int64_t b = blockIdx.x;
    if (b < half) {
        const int64_t tj = skip_tile(b / G, kt);
        const int64_t r0 = k0 + (b % G) * 32 * RI;
        warp_product<RI>(sm, R + r0 * L + tj * kTileWords, R + r0 * L + kt * kTileWords, slab + tj * kTileWords, L, L);
    } else {
        b -= half;
        const int64_t ti = skip_tile(b / G, kt);
        const int64_t r0 = ti * kTile + (b % G) * 32 * RI;
        uint32_t* c = R + r0 * L + kt * kTileWords;
        warp_product<RI>(sm, c, c, slab + kt * kTileWords, L, L);
    }
}

// Phase 3: every tile (I, J) with I, J != K, G warps (blocks) per tile.
template <int RI>
__global__ void __launch_bounds__(32) rest_kernel(uint32_t* R, int64_t L, int kt, int64_t nt) {
    __shared__ TileShared<RI> sm;
    constexpr int G = kTile / (32 * RI);
    const int64_t k0 = static_cast<int64_t>(kt) * kTile;
    const int64_t tile = blockIdx.x / G;
    const int64_t ti = skip_tile(tile / (nt - 1), kt), tj = skip_tile(tile % (nt - 1), kt);
    const int64_t r0 = ti * kTile + (blockIdx.x % G) * 32 * RI;
    warp_product<RI>(sm, R + r0 * L + tj * kTileWords, R + r0 * L + kt * kTileWords, R + k0 * L + tj * kTileWords, L,
                     L);
}

template <int RI>
Status launch_panels(uint32_t* R, int64_t L, const uint32_t* slab, int kt, int64_t nt, cudaStream_t s) {
    constexpr int G = kTile / (32 * RI);
    panels_kernel<RI><<<static_cast<unsigned>(2 * (nt - 1) * G), 32, 0, s>>>(R, L, slab, kt, nt);
    APPROX_CUDA_LAUNCHED();
    return Status::Ok();
}

template <int RI>
Status launch_rest(uint32_t* R, int64_t L, int kt, int64_t nt, cudaStream_t s) {
    constexpr int G = kTile / (32 * RI);
    rest_kernel<RI><<<static_cast<unsigned>((nt - 1) * (nt - 1) * G), 32, 0, s>>>(R, L, kt, nt);
    APPROX_CUDA_LAUNCHED();
    return Status::Ok();
}

// Closes the Np x Np device matrix R (Np a multiple of kTile) in place. The
// host stays at most ~16 k-tiles ahead of the device, so a cancel is seen soon.
Status close_device(uint64_t* R64, int64_t Np, cudaStream_t s, const ExecContext& ctx) {
    if (Np == 0) return Status::Ok();
    uint32_t* R = reinterpret_cast<uint32_t*>(R64);
    const int64_t L = Np / 32;
    const int64_t nt = Np / kTile;
    DeviceBuffer<uint32_t> slab;
    APPROX_TRY(slab.alloc(ctx, static_cast<size_t>(kTile * L)));
    // warps per phase-3 launch: enough to fill the chip (132 SMs x 8) with the
    // largest per-lane tile
    const int64_t tiles3 = (nt - 1) * (nt - 1);
    const int ri3 = tiles3 >= 1024 ? 8 : tiles3 * 2 >= 1024 ? 4 : 2;
    cudaEvent_t marks[2] = {nullptr, nullptr};
    struct EventGuard {
        cudaEvent_t* e;
        ~EventGuard() {
            for (int i = 0; i < 2; ++i)
                if (e[i]) cudaEventDestroy(e[i]);
        }
    } guard{marks};
    APPROX_CUDA(cudaEventCreateWithFlags(&marks[0], cudaEventDisableTiming));
    APPROX_CUDA(cudaEventCreateWithFlags(&marks[1], cudaEventDisableTiming));
    for (int64_t kt = 0; kt < nt; ++kt) {
        if (kt % 8 == 0) {
            if (ctx.cancelled()) return cancelled_status();
            cudaEvent_t& m = marks[(kt / 8) & 1];
            if (kt >= 16) APPROX_CUDA(cudaEventSynchronize(m));  // the mark of 16 tiles ago
            APPROX_CUDA(cudaEventRecord(m, s));
        }
        const int k = static_cast<int>(kt);
        diag_kernel<<<1, kTile, 0, s>>>(R, L, k);
        APPROX_CUDA_LAUNCHED();
        if (nt == 1) break;
        APPROX_CUDA(cudaMemcpyAsync(slab.get(), R + kt * kTile * L, kTile * L * sizeof(uint32_t),
                                    cudaMemcpyDeviceToDevice, s));
        APPROX_TRY(launch_panels<2>(R, L, slab.get(), k, nt, s));
        if (ri3 == 8)
            APPROX_TRY(launch_rest<8>(R, L, k, nt, s));
        else if (ri3 == 4)
            APPROX_TRY(launch_rest<4>(R, L, k, nt, s));
        else
            APPROX_TRY(launch_rest<2>(R, L, k, nt, s));
    }
    APPROX_CUDA(cudaStreamSynchronize(s));
    return Status::Ok();
}

// ---- graph preparation on the device -------------------------------------------------

__global__ void set_edges_kernel(unsigned long long* R, int64_t ld, const int32_t* u, const int32_t* v, int64_t n) {
    GRID_STRIDE(e, n) {
        int64_t a = u[e], b = v[e];
        atomicOr(R + a * ld + (b >> 6), 1ULL << (b & 63));
    }
}

// Edge endpoints as vertex indices: uv[0..n) sources, uv[n..2n) targets.
struct DeviceGraph {
    int64_t V = 0;
    DeviceBuffer<int64_t> ids;  // V distinct ids, ascending
    DeviceBuffer<int32_t> uv;   // 2 n
};

Status map_ids_gpu(const ExecContext& ctx, cudaStream_t s, const int64_t* src, const int64_t* dst, size_t n,
                   DeviceGraph& g) {
    const int64_t n2 = static_cast<int64_t>(2 * n);
    DeviceBuffer<int64_t> keys, sorted;
    APPROX_TRY(keys.alloc(ctx, n2));
    double t0 = now_ms();
    APPROX_CUDA(cudaMemcpyAsync(keys.get(), src, n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    APPROX_CUDA(cudaMemcpyAsync(keys.get() + n, dst, n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    add_transfer_ms(ctx, now_ms() - t0);
    APPROX_TRY(sorted.alloc(ctx, n2));
    CubTemp tmp;
    {
        const int64_t* in = keys.get();
        int64_t* out = sorted.get();
        int num = static_cast<int>(n2);  // n2 <= 2^31 - 1 checked by the caller
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceRadixSort::SortKeys(p, bytes, in, out, num, 0, 64, s);
        }));
    }
    APPROX_TRY(g.ids.alloc(ctx, n2));
    DeviceBuffer<int64_t> count;
    APPROX_TRY(count.alloc(ctx, 1));
    {
        const int64_t* in = sorted.get();
        int64_t* out = g.ids.get();
        int64_t* num_out = count.get();
        int64_t num = n2;
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceSelect::Unique(p, bytes, in, out, num_out, num, s);
        }));
    }
    int64_t V = 0;
    APPROX_CUDA(cudaMemcpyAsync(&V, count.get(), sizeof V, cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    APPROX_TRY(check_vertices(V));
    g.V = V;
    sorted.reset();
    APPROX_TRY(g.uv.alloc(ctx, n2));
    // Vertex index of each endpoint: its position among the sorted distinct ids.
    thrust::lower_bound(thrust::cuda::par_nosync.on(s), g.ids.get(), g.ids.get() + V, keys.get(), keys.get() + n2,
                        g.uv.get());
    APPROX_CUDA_LAUNCHED();
    APPROX_CUDA(cudaStreamSynchronize(s));
    return Status::Ok();
}

Status check_edge_count(size_t n) {
    if (n > static_cast<size_t>((int64_t(1) << 30) - 1))
        return Status::Error(StatusCode::ProgramLimit, "the GPU engine takes at most %lld edges, not %zu",
                             static_cast<long long>((int64_t(1) << 30) - 1), n);
    return Status::Ok();
}

// ---- counting -------------------------------------------------------------------------

struct PopCount {
    __device__ int64_t operator()(uint64_t v) const { return __popcll(v); }
};

// Pairs contributed by word w of row a when rows are components: size(a) *
// the sizes of the components whose bits are set.
struct WeightedWord {
    const uint64_t* R;
    int64_t ld, W;
    const int32_t* comp_start;
    __device__ int64_t operator()(int64_t idx) const {
        int64_t a = idx / W, w = idx - a * W;
        uint64_t x = R[a * ld + w];
        if (x == 0) return 0;
        int64_t s = 0;
        while (x) {
            int64_t b = w * 64 + __ffsll(static_cast<long long>(x)) - 1;
            s += comp_start[b + 1] - comp_start[b];
            x &= x - 1;
        }
        return s * (comp_start[a + 1] - comp_start[a]);
    }
};

Status count_device(const ExecContext& ctx, cudaStream_t s, const uint64_t* R, int64_t rows, int64_t ld,
                    const int32_t* d_comp_start, int64_t& pairs) {
    pairs = 0;
    if (rows == 0) return Status::Ok();
    DeviceBuffer<int64_t> out;
    APPROX_TRY(out.alloc(ctx, 1));
    CubTemp tmp;
    int64_t* o = out.get();
    if (d_comp_start == nullptr) {
        // padding bits are zero: the whole rows x ld block counts
        int64_t n = rows * ld;
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::TransformReduce(p, bytes, R, o, n, cuda::std::plus<>{}, PopCount{}, int64_t(0),
                                                      s);
        }));
    } else {
        const int64_t W = (rows + 63) / 64;
        WeightedWord op{R, ld, W, d_comp_start};
        thrust::counting_iterator<int64_t> idx(0);
        int64_t n = rows * W;
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceReduce::TransformReduce(p, bytes, idx, o, n, cuda::std::plus<>{}, op, int64_t(0), s);
        }));
    }
    APPROX_CUDA(cudaMemcpyAsync(&pairs, o, sizeof pairs, cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    return Status::Ok();
}

// ---- component DAG, level by level -------------------------------------------------------

// Thread per (component of this level, word): the OR of its successors' rows
// and their bits, and its own bit when it is cyclic.
__global__ void propagate_kernel(uint64_t* R, int64_t ld, int64_t W, const int32_t* comps, int64_t count,
                                 const int64_t* off, const int32_t* succ, const uint8_t* cyclic) {
    GRID_STRIDE(idx, count * W) {
        int64_t x = idx / W, w = idx - x * W;
        int64_t a = comps[x];
        uint64_t acc = 0;
        for (int64_t e = off[a]; e < off[a + 1]; ++e) {
            int64_t b = succ[e];
            acc |= R[b * ld + w];
            if ((b >> 6) == w) acc |= 1ULL << (b & 63);
        }
        if (cyclic[a] && (a >> 6) == w) acc |= 1ULL << (a & 63);
        R[a * ld + w] = acc;
    }
}

// A host vector into a new device buffer (synchronously: the vector may go away next).
template <class T>
Status upload(const ExecContext& ctx, cudaStream_t s, const std::vector<T>& host, DeviceBuffer<T>& dev) {
    APPROX_TRY(dev.alloc(ctx, host.size() > 0 ? host.size() : 1));
    if (!host.empty()) {
        APPROX_CUDA(cudaMemcpyAsync(dev.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, s));
        APPROX_CUDA(cudaStreamSynchronize(s));
    }
    return Status::Ok();
}

Status propagate_device(const ExecContext& ctx, cudaStream_t s, const Dag& dag, uint64_t* R, int64_t ld) {
    const int64_t W = (dag.comps + 63) / 64;
    DeviceBuffer<int64_t> off;
    DeviceBuffer<int32_t> succ, by_level;
    DeviceBuffer<uint8_t> cyclic;
    double t0 = now_ms();
    APPROX_TRY(upload(ctx, s, dag.off, off));
    APPROX_TRY(upload(ctx, s, dag.succ, succ));
    APPROX_TRY(upload(ctx, s, dag.by_level, by_level));
    APPROX_TRY(upload(ctx, s, dag.cyclic, cyclic));
    APPROX_CUDA(cudaStreamSynchronize(s));
    add_transfer_ms(ctx, now_ms() - t0);
    const int64_t levels = static_cast<int64_t>(dag.level_start.size()) - 1;
    for (int64_t l = 0; l < levels; ++l) {
        if (l % 64 == 0) {
            if (ctx.cancelled()) return cancelled_status();
            if (l > 0) APPROX_CUDA(cudaStreamSynchronize(s));
        }
        int64_t c0 = dag.level_start[l], count = dag.level_start[l + 1] - c0;
        propagate_kernel<<<grid_for(count * W, kThreads), kThreads, 0, s>>>(R, ld, W, by_level.get() + c0, count,
                                                                            off.get(), succ.get(), cyclic.get());
        APPROX_CUDA_LAUNCHED();
    }
    APPROX_CUDA(cudaStreamSynchronize(s));
    return Status::Ok();
}

// Level-by-level propagation costs about levels launches plus E_c x W word
// reads; the blocked closure about Np^3 / 32 word operations at ~10^13 per
// second plus 3 launches per k-tile. Pick the cheaper (seconds, rough).
bool prefer_blocked(const Dag& dag, int64_t Np) {
    const double W = static_cast<double>((dag.comps + 63) / 64);
    const double levels = static_cast<double>(dag.level_start.size()) - 1;
    const double prop = levels * 4e-6 + static_cast<double>(dag.succ.size()) * W / 1.5e11;
    const double n = static_cast<double>(Np);
    const double blocked = n * n * n / 32.0 / 1.0e13 + (n / kTile) * 2e-5;
    return blocked < prop;
}

// ---- results ---------------------------------------------------------------------------------

struct DeviceResult final : Result {
    DeviceBuffer<uint64_t> R;
    int64_t ld = 0;  // 64-bit words per row on the device
    cudaStream_t stream = nullptr;
    std::vector<uint64_t> staging;
    Status rows(int64_t first, int64_t count, const uint64_t*& p, int64_t& stride) override {
        staging.resize(static_cast<size_t>(count * ld));
        APPROX_CUDA(cudaMemcpyAsync(staging.data(), R.get() + first * ld, count * ld * sizeof(uint64_t),
                                    cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        p = staging.data();
        stride = ld;
        return Status::Ok();
    }
    int64_t rows_per_fetch() const override {
        int64_t r = (int64_t(32) << 20) / (ld * 8 > 0 ? ld * 8 : 1);
        return r < 1 ? 1 : r;
    }
};

// The closure on the device: R (Np x Np padded, rows = components or
// vertices), the count, and what a Result needs on the host.
Status gpu_closure(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
                   bool want_result, int64_t& pairs, std::unique_ptr<DeviceResult>& result) {
    APPROX_TRY(check_edge_count(n_edges));
    cudaStream_t s;
    APPROX_TRY(approx::gpu::begin(ctx, s));
    std::unique_ptr<DeviceResult> r(new DeviceResult());
    r->stream = s;
    const bool condensed = opt.algorithm != Algorithm::Blocked;
    DeviceGraph g;
    APPROX_TRY(map_ids_gpu(ctx, s, src, dst, n_edges, g));
    const int64_t V = g.V;
    if (want_result) {
        r->ids.resize(static_cast<size_t>(V));
        APPROX_CUDA(cudaMemcpyAsync(r->ids.data(), g.ids.get(), V * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
        APPROX_CUDA(cudaStreamSynchronize(s));
    }
    g.ids.reset();

    DeviceBuffer<int32_t> d_comp_start;
    int64_t rows = V;
    if (!condensed) {
        const int64_t Np = round_up(V, kTile), ld = Np / 64;
        APPROX_TRY(check_matrix_bytes(V, Np, ld, false, opt));
        add_stats(ctx, V, V, 0, false, Np * ld * 8);
        APPROX_TRY(r->R.alloc(ctx, static_cast<size_t>(Np * ld)));
        r->ld = ld;
        APPROX_CUDA(cudaMemsetAsync(r->R.get(), 0, r->R.bytes(), s));
        const int64_t n = static_cast<int64_t>(n_edges);
        set_edges_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(reinterpret_cast<unsigned long long*>(r->R.get()),
                                                                    ld, g.uv.get(), g.uv.get() + n, n);
        APPROX_CUDA_LAUNCHED();
        g.uv.reset();
        APPROX_TRY(close_device(r->R.get(), Np, s, ctx));
        if (want_result) identity_groups(V, r->comp_start, r->members);
    } else {
        std::vector<int32_t> uv(2 * n_edges);
        double t0 = now_ms();
        APPROX_CUDA(cudaMemcpyAsync(uv.data(), g.uv.get(), uv.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
        APPROX_CUDA(cudaStreamSynchronize(s));
        add_transfer_ms(ctx, now_ms() - t0);
        g.uv.reset();
        Dag dag;
        APPROX_TRY(condense(V, uv.data(), uv.data() + n_edges, n_edges, ctx, dag));
        uv = std::vector<int32_t>();
        const int64_t C = dag.comps, Np = round_up(C, kTile), ld = Np / 64;
        APPROX_TRY(check_matrix_bytes(C, Np, ld, true, opt));
        add_stats(ctx, V, C, static_cast<int64_t>(dag.succ.size()), true, Np * ld * 8);
        if (ctx.stats) ctx.stats->add("dag_levels", static_cast<double>(dag.level_start.size() - 1));
        APPROX_TRY(r->R.alloc(ctx, static_cast<size_t>(Np * ld)));
        r->ld = ld;
        APPROX_CUDA(cudaMemsetAsync(r->R.get(), 0, r->R.bytes(), s));
        const bool blocked = opt.dag_closure == DagClosure::Auto ? prefer_blocked(dag, Np)
                                                                 : opt.dag_closure == DagClosure::Blocked;
        if (ctx.stats) ctx.stats->add("dag_blocked", blocked ? 1 : 0);
        if (blocked) {
            // the component DAG as a matrix (self-loops on cyclic components)
            std::vector<int32_t> eu, ev;
            eu.reserve(dag.succ.size() + C);
            ev.reserve(dag.succ.size() + C);
            for (int64_t a = 0; a < C; ++a) {
                for (int64_t e = dag.off[a]; e < dag.off[a + 1]; ++e) {
                    eu.push_back(static_cast<int32_t>(a));
                    ev.push_back(dag.succ[e]);
                }
                if (dag.cyclic[a]) {
                    eu.push_back(static_cast<int32_t>(a));
                    ev.push_back(static_cast<int32_t>(a));
                }
            }
            DeviceBuffer<int32_t> du, dv;
            APPROX_TRY(upload(ctx, s, eu, du));
            APPROX_TRY(upload(ctx, s, ev, dv));
            const int64_t n = static_cast<int64_t>(eu.size());
            if (n > 0) {
                set_edges_kernel<<<grid_for(n, kThreads), kThreads, 0, s>>>(
                    reinterpret_cast<unsigned long long*>(r->R.get()), ld, du.get(), dv.get(), n);
                APPROX_CUDA_LAUNCHED();
            }
            APPROX_TRY(close_device(r->R.get(), Np, s, ctx));
        } else {
            APPROX_TRY(propagate_device(ctx, s, dag, r->R.get(), ld));
        }
        rows = C;
        if (!dag.trivial()) APPROX_TRY(upload(ctx, s, dag.comp_start, d_comp_start));
        if (want_result) {
            r->comp_start = std::move(dag.comp_start);
            r->members = std::move(dag.members);
        }
    }
    APPROX_TRY(count_device(ctx, s, r->R.get(), rows, r->ld, d_comp_start.get(), pairs));
    if (want_result) {
        r->comps = rows;
        r->pairs = pairs;
        result = std::move(r);
    }
    return Status::Ok();
}

// ---- breadth-first search -------------------------------------------------------------------

// One BFS level: every vertex of the queue marks its unvisited successors and
// appends them to the next queue (each vertex enters it at most once).
__global__ void expand_kernel(const int32_t* queue, int64_t n, const int64_t* off, const int32_t* adj,
                              unsigned long long* visited, int32_t* next, unsigned long long* next_count) {
    GRID_STRIDE(i, n) {
        int32_t x = queue[i];
        for (int64_t e = off[x]; e < off[x + 1]; ++e) {
            int32_t y = adj[e];
            unsigned long long bit = 1ULL << (y & 63);
            unsigned long long old = atomicOr(visited + (y >> 6), bit);
            if (!(old & bit)) next[atomicAdd(next_count, 1ULL)] = y;
        }
    }
}

Status gpu_reachable(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source, const ExecContext& ctx,
                     int64_t* out, size_t cap, size_t& n_out) {
    n_out = 0;
    APPROX_TRY(check_edge_count(n_edges));
    cudaStream_t s;
    APPROX_TRY(approx::gpu::begin(ctx, s));
    DeviceGraph g;
    APPROX_TRY(map_ids_gpu(ctx, s, src, dst, n_edges, g));
    const int64_t V = g.V, n = static_cast<int64_t>(n_edges);
    std::vector<int64_t> ids(static_cast<size_t>(V));
    APPROX_CUDA(cudaMemcpyAsync(ids.data(), g.ids.get(), V * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    g.ids.reset();
    auto it = std::lower_bound(ids.begin(), ids.end(), source);
    if (it == ids.end() || *it != source) return Status::Ok();
    const int32_t start = static_cast<int32_t>(it - ids.begin());

    // CSR: edges sorted by source (radix sort over the bits V needs)
    DeviceBuffer<int32_t> us, adj;
    APPROX_TRY(us.alloc(ctx, n));
    APPROX_TRY(adj.alloc(ctx, n));
    int end_bit = 1;
    while (end_bit < 31 && (int64_t(1) << end_bit) < V) ++end_bit;
    CubTemp tmp;
    {
        const int32_t* ku = g.uv.get();
        const int32_t* kv = g.uv.get() + n;
        int32_t* ou = us.get();
        int32_t* ov = adj.get();
        int num = static_cast<int>(n);
        APPROX_TRY(tmp.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceRadixSort::SortPairs(p, bytes, ku, ou, kv, ov, num, 0, end_bit, s);
        }));
    }
    g.uv.reset();
    DeviceBuffer<int64_t> off;
    APPROX_TRY(off.alloc(ctx, V + 1));
    // off[x] = first edge of vertex x in the source-sorted edge list.
    thrust::lower_bound(thrust::cuda::par_nosync.on(s), us.get(), us.get() + n, thrust::counting_iterator<int64_t>(0),
                        thrust::counting_iterator<int64_t>(V + 1), off.get());
    APPROX_CUDA_LAUNCHED();
    us.reset();

    const int64_t words = (V + 63) / 64;
    DeviceBuffer<unsigned long long> visited, count;
    DeviceBuffer<int32_t> qa, qb;
    APPROX_TRY(visited.alloc(ctx, words));
    APPROX_TRY(count.alloc(ctx, 1));
    APPROX_TRY(qa.alloc(ctx, V + 1));
    APPROX_TRY(qb.alloc(ctx, V + 1));
    APPROX_CUDA(cudaMemsetAsync(visited.get(), 0, visited.bytes(), s));
    APPROX_CUDA(cudaMemcpyAsync(qa.get(), &start, sizeof start, cudaMemcpyHostToDevice, s));
    int64_t in = 1;
    int32_t* cur = qa.get();
    int32_t* next = qb.get();
    for (int64_t level = 0; in > 0; ++level) {
        if (ctx.cancelled()) return cancelled_status();
        APPROX_CUDA(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), s));
        expand_kernel<<<grid_for(in, kThreads), kThreads, 0, s>>>(cur, in, off.get(), adj.get(), visited.get(), next,
                                                                  count.get());
        APPROX_CUDA_LAUNCHED();
        unsigned long long got = 0;
        APPROX_CUDA(cudaMemcpyAsync(&got, count.get(), sizeof got, cudaMemcpyDeviceToHost, s));
        APPROX_CUDA(cudaStreamSynchronize(s));
        in = static_cast<int64_t>(got);
        std::swap(cur, next);
    }
    std::vector<uint64_t> seen(static_cast<size_t>(words));
    APPROX_CUDA(cudaMemcpyAsync(seen.data(), visited.get(), words * sizeof(uint64_t), cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    for (int64_t w = 0; w < words; ++w)
        for (uint64_t x = seen[w]; x; x &= x - 1) {
            if (n_out == cap) return Status::Error(StatusCode::Internal, "reachable: output buffer too small");
            out[n_out++] = ids[w * 64 + __builtin_ctzll(x)];
        }
    return Status::Ok();
}

}  // namespace

// ---- entry points (called through dispatch() in closure.cpp) ----------------------------------

Status close_matrix(uint64_t* bits, int64_t n, int64_t ld, const ExecContext& ctx) {
    cudaStream_t s;
    APPROX_TRY(approx::gpu::begin(ctx, s));
    const int64_t Np = round_up(n, kTile), dld = Np / 64, W = (n + 63) / 64;
    DeviceBuffer<uint64_t> R;
    APPROX_TRY(R.alloc(ctx, static_cast<size_t>(Np * dld)));
    double t0 = now_ms();
    APPROX_CUDA(cudaMemsetAsync(R.get(), 0, R.bytes(), s));
    APPROX_CUDA(cudaMemcpy2DAsync(R.get(), dld * 8, bits, ld * 8, W * 8, n, cudaMemcpyHostToDevice, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    add_transfer_ms(ctx, now_ms() - t0);

    cudaEvent_t e0 = nullptr, e1 = nullptr;
    struct Guard {
        cudaEvent_t *a, *b;
        ~Guard() {
            if (*a) cudaEventDestroy(*a);
            if (*b) cudaEventDestroy(*b);
        }
    } guard{&e0, &e1};
    APPROX_CUDA(cudaEventCreate(&e0));
    APPROX_CUDA(cudaEventCreate(&e1));
    APPROX_CUDA(cudaEventRecord(e0, s));
    APPROX_TRY(close_device(R.get(), Np, s, ctx));
    APPROX_CUDA(cudaEventRecord(e1, s));
    APPROX_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    APPROX_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    if (ctx.stats) ctx.stats->ms_compute = ms;

    t0 = now_ms();
    APPROX_CUDA(cudaMemcpy2DAsync(bits, ld * 8, R.get(), dld * 8, W * 8, n, cudaMemcpyDeviceToHost, s));
    APPROX_CUDA(cudaStreamSynchronize(s));
    add_transfer_ms(ctx, now_ms() - t0);
    return Status::Ok();
}

Status count_pairs(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
                   int64_t& pairs) {
    std::unique_ptr<DeviceResult> none;
    return gpu_closure(src, dst, n_edges, opt, ctx, false, pairs, none);
}

Status compute(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
               Result** out) {
    int64_t pairs = 0;
    std::unique_ptr<DeviceResult> r;
    APPROX_TRY(gpu_closure(src, dst, n_edges, opt, ctx, true, pairs, r));
    *out = r.release();
    return Status::Ok();
}

Status reachable(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source, const ExecContext& ctx,
                 int64_t* out, size_t cap, size_t& n) {
    return gpu_reachable(src, dst, n_edges, source, ctx, out, cap, n);
}

}  // namespace approx::closure::gpu
