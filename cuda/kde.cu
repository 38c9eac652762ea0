// GPU engine of the KDE pair sums (src/core/kde_internal.hpp).
//
// The data arrive centred and scaled (or whitened) in fp64, so the pair
// arithmetic runs in fp32: one fp32 upload, square tiles of pairs with the
// column tile in shared memory, only tiles with I <= J (symmetry), fp32 sums
// inside a tile promoted to fp64 per thread, per-block fp64 partials, and CUB
// for the final reductions. Blocks are persistent (a grid-stride loop over the
// tiles of a chunk) and every partial slot has one writer, so results are
// deterministic. Work is launched in chunks of tiles; the cancel callback is
// polled between chunks, with at most two chunks in flight.
//
//   plug-in  psi_kernel:       sorted data (tiles whose every pair underflows
//                              are skipped), Hermite polynomial with exact
//                              coefficients.
//   LSCV     lscv_grid_kernel: many h per pass; a 64 x 64 tile of Y_ij is
//                              computed once into shared memory and each lane
//                              owns h values, so every Y feeds all of them.
//            lscv_pass_kernel: one or two h per pass (golden section), Y
//                              computed in registers.
//            lscv_precise_kernel: one h in fp64 (Y and exp), over an fp64
//                              copy of the points: the reported objective.
//   Exponentials: the plug-in uses exp2_neg_split
//   (FMA-pipe polynomial, no systematic error); the LSCV search passes use the
//   SFU's ex2.approx (biased by ~5e-8, harmless where only comparisons count).
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "common.cuh"
#include "core/kde_internal.hpp"

namespace approx::kde::detail {

namespace {

using gpu::CubTemp;
using gpu::DeviceBuffer;

constexpr int kBlock = 256;
constexpr double kLog2e = 1.4426950408889634074;
// Pairs per chunk of work between cancel polls (a few ms on an H100).
constexpr double kPairsPerChunk = 17179869184.0;  // 2^34

// ---- device helpers ------------------------------------------------------------

// 2^x by the special-function unit (about 2 ulp; 0 below 2^-126).
__device__ __forceinline__ float ex2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// 2^-(y (hi + lo)) for 0 <= y (hi + lo) <= 125, to about 1 ulp and without
// a systematic error (the SFU's ex2.approx is biased by about -5e-8, varying
// with the fraction, and the plug-in pair sums cancel enough to show it).
// hi + lo is a constant split in two floats, so that its rounding does not
// bias every term either. Round-to-nearest range reduction by the 1.5*2^23
// trick, f = k - y (hi + lo) in [-1/2, 1/2], a degree-7 Taylor polynomial
// for 2^f (truncation < 6e-9 relative), exact scaling by 2^-k through the
// exponent bits (bits(kf) << 23 == k << 23 mod 2^32 for kf = 1.5*2^23 + k).
__device__ __forceinline__ float exp2_neg_split(float y, float hi, float lo) {
    constexpr float kMagic = 12582912.0f;
    const float kf = fmaf(y, hi, kMagic);
    float f = fmaf(y, -hi, kf - kMagic);
    f = fmaf(y, -lo, f);
    float p = 1.5252733804059841e-05f;  // ln2^7 / 7!
    p = fmaf(p, f, 1.5403530393381609e-04f);
    p = fmaf(p, f, 1.3333558146428443e-03f);
    p = fmaf(p, f, 9.6181291076284772e-03f);
    p = fmaf(p, f, 5.5504108664821580e-02f);
    p = fmaf(p, f, 2.4022650695910071e-01f);
    p = fmaf(p, f, 6.9314718055994531e-01f);
    p = fmaf(p, f, 1.0f);
    // p in [0.7, 1.5]: subtracting k <= 125 from its exponent stays normal
    // (unsigned, wrapping: one IMAD, bits(p) + bits(kf) * -2^23)
    const unsigned bits = static_cast<unsigned>(__float_as_int(p)) +
                          static_cast<unsigned>(__float_as_int(kf)) * 0xFF800000u;
    return __int_as_float(static_cast<int>(bits));
}

// Tile pairs (I, J), I <= J < nt, numbered row by row: row I starts at
// I*nt - I*(I-1)/2.
__device__ __forceinline__ void decode_tile(long long b, long long nt, long long& I, long long& J) {
    const double B = 2.0 * static_cast<double>(nt) + 1.0;
    long long i = static_cast<long long>((B - sqrt(B * B - 8.0 * static_cast<double>(b))) * 0.5);
    if (i < 0) i = 0;
    if (i > nt - 1) i = nt - 1;
    while (i > 0 && i * nt - i * (i - 1) / 2 > b) --i;
    while (i + 1 < nt && (i + 1) * nt - (i + 1) * i / 2 <= b) ++i;
    I = i;
    J = i + (b - (i * nt - i * (i - 1) / 2));
}

// Hermite factor of K_r in t2 = t^2; integer coefficients, exact in fp32
// (rounded coefficients bias every term, and the pair sums cancel heavily).
template <int R>
__device__ __forceinline__ float hermite(float t2) {
    if (R == 6) return fmaf(fmaf(t2 - 15.0f, t2, 45.0f), t2, -15.0f);
    if (R == 4) return fmaf(t2 - 6.0f, t2, 3.0f);
    return t2 - 1.0f;
}

// Columns per fp32 partial sum: short runs, then fp64 (long fp32 runs over
// sorted data lose 5e-8 and more of a cancelling sum).
constexpr int kRun = 32;

// ---- plug-in -------------------------------------------------------------------

__global__ void scale_to_float_kernel(const double* __restrict__ z, long long n, double scale, float* __restrict__ u) {
    long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < n) u[i] = static_cast<float>(z[i] * scale);
}

// a[k] += He_r(t^2) exp(-t^2/2) for t = r[k] - v, with exp(-t^2/2) =
// 2^-(t^2 (khi + klo)). t^2 is capped at 173 (exponent 124.8): beyond it the
// true term is below 1e-30 and so is the capped one.
template <int R, int RPT>
__device__ __forceinline__ void psi_step(const float (&r)[RPT], float (&a)[RPT], float v, float khi, float klo) {
#pragma unroll
    for (int k = 0; k < RPT; ++k) {
        const float t = r[k] - v;
        const float t2 = fminf(t * t, 173.0f);
        a[k] = fmaf(hermite<R>(t2), exp2_neg_split(t2, khi, klo), a[k]);
    }
}

// u: sorted, u = z / g. Tile T = kBlock * RPT. Diagonal tiles cover their full
// square (i = j included) with weight 1, the others weight 2.
template <int R, int RPT>
__global__ void __launch_bounds__(kBlock)
    psi_kernel(const float* __restrict__ u, long long n, long long nt, long long t_begin, long long t_end, float cut,
               float khi, float klo, double* __restrict__ partial) {
    constexpr int T = kBlock * RPT;
    __shared__ __align__(16) float s_col[T];
    const int tid = threadIdx.x;
    double acc = 0;
    for (long long b = t_begin + blockIdx.x; b < t_end; b += gridDim.x) {
        long long I, J;
        decode_tile(b, nt, I, J);
        const long long row0 = I * T, col0 = J * T;
        // Sorted data: skip a tile whose smallest difference is beyond the
        // cut (block-uniform).
        if (J > I && u[col0] - u[min(row0 + T, n) - 1] > cut) continue;
        const int cols = static_cast<int>(min(static_cast<long long>(T), n - col0));
        __syncthreads();  // the previous tile's readers are done
        for (int q = tid; q < cols; q += kBlock) s_col[q] = u[col0 + q];
        __syncthreads();
        float r[RPT], m[RPT];
#pragma unroll
        for (int k = 0; k < RPT; ++k) {
            const long long row = row0 + k * kBlock + tid;
            r[k] = u[row < n ? row : n - 1];
            m[k] = row < n ? 1.0f : 0.0f;
        }
        const double wt = I == J ? 1.0 : 2.0;
        const float4* s4 = reinterpret_cast<const float4*>(s_col);
        int c = 0;
        for (; c + kRun <= cols; c += kRun) {
            float a[RPT];
#pragma unroll
            for (int k = 0; k < RPT; ++k) a[k] = 0.0f;
#pragma unroll
            for (int q = 0; q < kRun / 4; ++q) {
                const float4 v = s4[(c >> 2) + q];
                psi_step<R, RPT>(r, a, v.x, khi, klo);
                psi_step<R, RPT>(r, a, v.y, khi, klo);
                psi_step<R, RPT>(r, a, v.z, khi, klo);
                psi_step<R, RPT>(r, a, v.w, khi, klo);
            }
            float ts = 0.0f;
#pragma unroll
            for (int k = 0; k < RPT; ++k) ts = fmaf(m[k], a[k], ts);
            acc += wt * static_cast<double>(ts);
        }
        if (c < cols) {
            float a[RPT];
#pragma unroll
            for (int k = 0; k < RPT; ++k) a[k] = 0.0f;
            for (; c < cols; ++c) psi_step<R, RPT>(r, a, s_col[c], khi, klo);
            float ts = 0.0f;
#pragma unroll
            for (int k = 0; k < RPT; ++k) ts = fmaf(m[k], a[k], ts);
            acc += wt * static_cast<double>(ts);
        }
    }
    using BlockReduce = cub::BlockReduce<double, kBlock>;
    __shared__ typename BlockReduce::TempStorage tmp;
    const double total = BlockReduce(tmp).Sum(acc);
    if (tid == 0) partial[blockIdx.x] += total;
}

// ---- LSCV: many h per pass -----------------------------------------------------

constexpr int kGridTile = 64;      // points per tile side: 4096 Y per tile
constexpr int kGridMaxGroups = 8;  // h groups of 32 (one per lane): 256 h per launch
constexpr int kWarps = kBlock / 32;

// z: n x DP fp32, zero-padded. coef[k] = log2(e) / (4 h_k^2) as a (hi, lo)
// pair of floats, so that no rounding of it biases every term. Lane l of every
// warp owns h_{32g + l} (g < hgroups); warp w owns slice w of the Y tile.
// Pairs other than i < j < n get Y = 1e30 (their exponentials are 0; not
// +inf, which times a negative lo coefficient would give NaN).
// partial[(q) * P + blockIdx.x * kWarps + warp], q < nh for s4, nh + k for s2.
template <int DP>
__global__ void __launch_bounds__(kBlock, 4)
    lscv_grid_kernel(const float* __restrict__ z, long long n, long long nt, long long t_begin, long long t_end,
                     const float2* __restrict__ coef, int nh, int hgroups, double* __restrict__ partial, long long P) {
    constexpr int T = kGridTile, S = DP + 1, SLICE = T * T / kWarps;
    __shared__ float sA[T * S];
    __shared__ float sB[T * S];
    __shared__ __align__(16) float sY[T * T];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    double a4[kGridMaxGroups], a2[kGridMaxGroups];
#pragma unroll
    for (int g = 0; g < kGridMaxGroups; ++g) a4[g] = a2[g] = 0.0;
    for (long long b = t_begin + blockIdx.x; b < t_end; b += gridDim.x) {
        long long I, J;
        decode_tile(b, nt, I, J);
        const long long i0 = I * T, j0 = J * T;
        __syncthreads();
        for (int q = tid; q < T * DP; q += kBlock) {
            const int p = q / DP, k = q - p * DP;
            sA[p * S + k] = i0 + p < n ? z[(i0 + p) * DP + k] : 0.0f;
            sB[p * S + k] = j0 + p < n ? z[(j0 + p) * DP + k] : 0.0f;
        }
        __syncthreads();
        for (int q = tid; q < T * T; q += kBlock) {
            const int i = q & (T - 1), j = q / T;
            float y = 1e30f;
            if (i0 + i < j0 + j && j0 + j < n) {
                y = 0.0f;
#pragma unroll
                for (int k = 0; k < DP; ++k) {
                    const float t = sA[i * S + k] - sB[j * S + k];
                    y = fmaf(t, t, y);
                }
            }
            sY[q] = y;
        }
        __syncthreads();
        const float4* y4 = reinterpret_cast<const float4*>(sY + warp * SLICE);
#pragma unroll
        for (int g = 0; g < kGridMaxGroups; ++g) {
            if (g >= hgroups) break;
            const int idx = g * 32 + lane;
            const float2 cg = idx < nh ? coef[idx] : make_float2(1.0f, 0.0f);  // L1-cached reload per tile
            const float hi = cg.x, lo = cg.y;
            for (int q0 = 0; q0 < SLICE / 4; q0 += 2 * kRun / 4) {
                float f4 = 0.0f, f2 = 0.0f;
#pragma unroll 4
                for (int q = q0; q < q0 + 2 * kRun / 4; ++q) {
                    const float4 v = y4[q];
                    const float e0 = ex2_approx(-fmaf(v.x, hi, v.x * lo)), e1 = ex2_approx(-fmaf(v.y, hi, v.y * lo));
                    const float e2 = ex2_approx(-fmaf(v.z, hi, v.z * lo)), e3 = ex2_approx(-fmaf(v.w, hi, v.w * lo));
                    f4 += (e0 + e1) + (e2 + e3);
                    f2 = fmaf(e0, e0, fmaf(e1, e1, fmaf(e2, e2, fmaf(e3, e3, f2))));
                }
                a4[g] += f4;
                a2[g] += f2;
            }
        }
    }
    const long long slot = static_cast<long long>(blockIdx.x) * kWarps + warp;
#pragma unroll
    for (int g = 0; g < kGridMaxGroups; ++g) {
        const int idx = g * 32 + lane;
        if (g < hgroups && idx < nh) {
            partial[idx * P + slot] += a4[g];
            partial[(nh + idx) * P + slot] += a2[g];
        }
    }
}

// ---- LSCV: one or two h per pass -----------------------------------------------

// Square tiles of kBlock points; thread t owns row I*kBlock + t, the column
// tile is in shared memory. Diagonal tiles keep only columns c > t (i < j):
// counting i = j there would add 1 per point to sums that can be far smaller.
// coef = (hi_0, lo_0, hi_1, lo_1): log2(e)/(4 h^2) split into two floats.
// partial[q * P + blockIdx.x], q < NH for s4, NH + k for s2.
template <int DP, int NH, bool PRECISE, bool DIAG>
__device__ __forceinline__ void lscv_pass_run(const float (&zr)[DP], const float* s_col, int c0, int c1, int tid,
                                              const float (&chi)[2], const float (&clo)[2], const float (&ymax)[2],
                                              float (&f4)[NH], float (&f2)[NH]) {
#pragma unroll 2
    for (int c = c0; c < c1; ++c) {
        float y = 0.0f;
        if (DP % 4 == 0) {
            const float4* v4 = reinterpret_cast<const float4*>(s_col + c * DP);
#pragma unroll
            for (int k = 0; k < DP / 4; ++k) {
                const float4 v = v4[k];
                float t = zr[4 * k] - v.x;
                y = fmaf(t, t, y);
                t = zr[4 * k + 1] - v.y;
                y = fmaf(t, t, y);
                t = zr[4 * k + 2] - v.z;
                y = fmaf(t, t, y);
                t = zr[4 * k + 3] - v.w;
                y = fmaf(t, t, y);
            }
        } else {
#pragma unroll
            for (int k = 0; k < DP; ++k) {
                const float t = zr[k] - s_col[c * DP + k];
                y = fmaf(t, t, y);
            }
        }
#pragma unroll
        for (int h = 0; h < NH; ++h) {
            float e = PRECISE ? exp2_neg_split(fminf(y, ymax[h]), chi[h], clo[h])
                              : ex2_approx(-fmaf(y, chi[h], y * clo[h]));
            if (DIAG && c <= tid) e = 0.0f;
            f4[h] += e;
            f2[h] = fmaf(e, e, f2[h]);
        }
    }
}

template <int DP, int NH, bool PRECISE>
__global__ void __launch_bounds__(kBlock)
    lscv_pass_kernel(const float* __restrict__ z, long long n, long long nt, long long t_begin, long long t_end,
                     float4 coef, double* __restrict__ partial, long long P) {
    __shared__ __align__(16) float s_col[kBlock * DP];
    const int tid = threadIdx.x;
    const float chi[2] = {coef.x, coef.z}, clo[2] = {coef.y, coef.w};
    // exponents capped at about 125 (the precise exp's range; such terms are < 1e-37)
    const float ymax[2] = {125.0f / coef.x, coef.z > 0.0f ? 125.0f / coef.z : 0.0f};
    double acc4[NH], acc2[NH];
#pragma unroll
    for (int h = 0; h < NH; ++h) acc4[h] = acc2[h] = 0.0;
    for (long long b = t_begin + blockIdx.x; b < t_end; b += gridDim.x) {
        long long I, J;
        decode_tile(b, nt, I, J);
        const long long row = I * kBlock + tid, col0 = J * kBlock;
        const int cols = static_cast<int>(min(static_cast<long long>(kBlock), n - col0));
        float zr[DP];
        const long long rr = row < n ? row : n - 1;
#pragma unroll
        for (int k = 0; k < DP; ++k) zr[k] = z[rr * DP + k];
        const double w = row < n ? 1.0 : 0.0;
        __syncthreads();
        for (int q = tid; q < cols * DP; q += kBlock) s_col[q] = z[col0 * DP + q];
        __syncthreads();
        for (int c = 0; c < cols; c += kRun) {
            const int c1 = min(c + kRun, cols);
            float f4[NH], f2[NH];
#pragma unroll
            for (int h = 0; h < NH; ++h) f4[h] = f2[h] = 0.0f;
            if (I == J)
                lscv_pass_run<DP, NH, PRECISE, true>(zr, s_col, c, c1, tid, chi, clo, ymax, f4, f2);
            else
                lscv_pass_run<DP, NH, PRECISE, false>(zr, s_col, c, c1, tid, chi, clo, ymax, f4, f2);
#pragma unroll
            for (int h = 0; h < NH; ++h) {
                acc4[h] += w * static_cast<double>(f4[h]);
                acc2[h] += w * static_cast<double>(f2[h]);
            }
        }
    }
    using BlockReduce = cub::BlockReduce<double, kBlock>;
    __shared__ typename BlockReduce::TempStorage tmp;
#pragma unroll
    for (int q = 0; q < 2 * NH; ++q) {
        const double total = BlockReduce(tmp).Sum(q < NH ? acc4[q] : acc2[q - NH]);
        if (tid == 0) partial[q * P + blockIdx.x] += total;
        __syncthreads();  // tmp is reused
    }
}

// ---- LSCV: the reported objective, fp64 -----------------------------------------

// One h, Y and exp in double over an fp64 copy of the points (n x DP,
// zero-padded): the reported objective must match the CPU's to 1e-6, which
// fp32 Y (rounding ~DP ulp per pair) does not reach. c = 1 / (4 h^2).
// Same tiles as lscv_pass_kernel; the column tile goes through shared memory
// in chunks of CT columns (16 KiB). partial[blockIdx.x] (s4), [P + blockIdx.x] (s2).
template <int DP>
__global__ void __launch_bounds__(kBlock)
    lscv_precise_kernel(const double* __restrict__ z, long long n, long long nt, long long t_begin, long long t_end,
                        double c, double* __restrict__ partial, long long P) {
    constexpr int CT = 2048 / DP < kBlock ? 2048 / DP : kBlock;
    __shared__ double s_col[CT * DP];
    const int tid = threadIdx.x;
    double acc4 = 0.0, acc2 = 0.0;
    for (long long b = t_begin + blockIdx.x; b < t_end; b += gridDim.x) {
        long long I, J;
        decode_tile(b, nt, I, J);
        const long long row = I * kBlock + tid, col0 = J * kBlock;
        const int cols = static_cast<int>(min(static_cast<long long>(kBlock), n - col0));
        double zr[DP];
        const long long rr = row < n ? row : n - 1;
#pragma unroll
        for (int k = 0; k < DP; ++k) zr[k] = z[rr * DP + k];
        for (int c0 = 0; c0 < cols; c0 += CT) {
            const int cc = min(CT, cols - c0);
            __syncthreads();  // the previous chunk's readers are done
            for (int q = tid; q < cc * DP; q += kBlock) s_col[q] = z[(col0 + c0) * DP + q];
            __syncthreads();
            // only pairs i < j < n: on diagonal tiles columns c0 + q > tid
            int q0 = I == J ? max(0, tid + 1 - c0) : 0;
            if (row >= n) q0 = cc;
            for (int q = q0; q < cc; ++q) {
                double y = 0.0;
#pragma unroll
                for (int k = 0; k < DP; ++k) {
                    const double t = zr[k] - s_col[q * DP + k];
                    y = fma(t, t, y);
                }
                const double e = exp(-y * c);
                acc4 += e;
                acc2 = fma(e, e, acc2);
            }
        }
    }
    using BlockReduce = cub::BlockReduce<double, kBlock>;
    __shared__ typename BlockReduce::TempStorage tmp;
    const double t4 = BlockReduce(tmp).Sum(acc4);
    __syncthreads();  // tmp is reused
    const double t2 = BlockReduce(tmp).Sum(acc2);
    if (tid == 0) {
        partial[blockIdx.x] += t4;
        partial[P + blockIdx.x] += t2;
    }
}

// ---- host helpers --------------------------------------------------------------

// Two events for throttling: at most two chunks in flight, so that a cancel
// stops the work within about two chunks.
class EventPair {
public:
    EventPair() = default;
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
    ~EventPair() {
        for (cudaEvent_t e : ev_)
            if (e) cudaEventDestroy(e);
    }
    Status create() {
        for (cudaEvent_t& e : ev_)
            if (!e) APPROX_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        return Status::Ok();
    }
    cudaEvent_t operator[](long long i) const { return ev_[i & 1]; }

private:
    cudaEvent_t ev_[2] = {nullptr, nullptr};
};

// Runs launch(t_begin, t_end) over [0, tiles) in chunks of chunk_tiles,
// polling the cancel callback before each chunk.
template <class Launch>
Status run_chunks(const ExecContext& ctx, cudaStream_t stream, EventPair& events, long long tiles,
                  long long chunk_tiles, Launch&& launch) {
    long long c = 0;
    for (long long t0 = 0; t0 < tiles; t0 += chunk_tiles, ++c) {
        if (c >= 2) APPROX_CUDA(cudaEventSynchronize(events[c]));
        if (ctx.cancelled()) {
            cudaStreamSynchronize(stream);
            return cancelled_status();
        }
        APPROX_TRY(launch(t0, std::min(tiles, t0 + chunk_tiles)));
        APPROX_CUDA_LAUNCHED();
        APPROX_CUDA(cudaEventRecord(events[c], stream));
    }
    return Status::Ok();
}

// log2(e) / (4 h^2) as hi + lo floats: exp(-Y / (4 h^2)) = 2^-(Y hi + Y lo).
float2 split_coef(double h) {
    const double c = kLog2e / (4 * h * h);
    const float hi = static_cast<float>(c);
    return make_float2(hi, static_cast<float>(c - static_cast<double>(hi)));
}

long long tile_pairs(long long nt) { return nt * (nt + 1) / 2; }

long long chunk_tiles_for(double pairs_per_tile, long long grid) {
    double c = kPairsPerChunk / pairs_per_tile;
    return std::max(grid, static_cast<long long>(c));
}

// Resident blocks per SM times SMs.
template <class Kernel>
Status query_resident_blocks(Kernel kernel, long long& blocks) {
    int sms = gpu::sm_count();
    int per_sm = 0;
    APPROX_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, 0));
    blocks = static_cast<long long>(std::max(1, per_sm)) * std::max(1, sms);
    return Status::Ok();
}

// Persistent grid size, cached per kernel.
template <auto Kernel>
Status resident_blocks(long long& blocks) {
    // Atomic: the GPU service runs one executor thread per GPU (same model:
    // the same value, computed at most once per thread).
    static std::atomic<long long> cached{0};
    long long b = cached.load(std::memory_order_relaxed);
    if (b == 0) {
        APPROX_TRY(query_resident_blocks(Kernel, b));
        cached.store(b, std::memory_order_relaxed);
    }
    blocks = b;
    return Status::Ok();
}

struct StrideOffset {
    long long stride;
    __host__ __device__ long long operator()(long long q) const { return q * stride; }
};

// Sums of `segments` consecutive runs of `stride` doubles (CUB segmented
// reduce), copied to the host.
class SegmentSums {
public:
    Status run(const ExecContext& ctx, cudaStream_t stream, const double* in, int segments, long long stride,
               double* host_out) {
        if (out_.size() < static_cast<size_t>(segments)) APPROX_TRY(out_.alloc(ctx, static_cast<size_t>(segments)));
        auto offsets = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), StrideOffset{stride});
        double* out = out_.get();
        APPROX_TRY(temp_.run(ctx, [&](void* p, size_t& bytes) {
            return cub::DeviceSegmentedReduce::Sum(p, bytes, in, out, segments, offsets, offsets + 1, stream);
        }));
        APPROX_CUDA(cudaMemcpyAsync(host_out, out, sizeof(double) * segments, cudaMemcpyDeviceToHost, stream));
        APPROX_CUDA(cudaStreamSynchronize(stream));
        return Status::Ok();
    }

private:
    DeviceBuffer<double> out_;
    CubTemp temp_;
};

using gpu::ensure;  // never shrinks: passes reuse the buffers

// ---- plug-in engine ------------------------------------------------------------

class GpuPsi final : public PsiSums {
public:
    GpuPsi(const ExecContext& ctx, size_t n) : ctx_(ctx), n_(static_cast<long long>(n)) {}

    Status init(const double* z) {
        APPROX_TRY(gpu::begin(ctx_, stream_));
        APPROX_TRY(events_.create());
        Stopwatch sw;
        DeviceBuffer<double> unsorted;
        APPROX_TRY(unsorted.alloc(ctx_, n_));
        APPROX_TRY(z_.alloc(ctx_, n_));
        APPROX_CUDA(cudaMemcpyAsync(unsorted.get(), z, sizeof(double) * n_, cudaMemcpyHostToDevice, stream_));
        APPROX_CUDA(cudaStreamSynchronize(stream_));
        gpu::add_transfer_ms(ctx_, sw.ms());
        // Sorted, so that tiles far apart can be skipped (the sum is order-free).
        {
            CubTemp tmp;
            const double* in = unsorted.get();
            double* out = z_.get();
            const long long n = n_;
            APPROX_TRY(tmp.run(ctx_, [&](void* p, size_t& bytes) {
                return cub::DeviceRadixSort::SortKeys(p, bytes, in, out, n, 0, 64, stream_);
            }));
            APPROX_CUDA(cudaStreamSynchronize(stream_));
        }
        unsorted.reset();
        APPROX_TRY(u_.alloc(ctx_, n_));
        return Status::Ok();
    }

    Status sum(int r, double g, double& out) override {
        switch (r) {
            case 2: return run<2>(g, out);
            case 4: return run<4>(g, out);
            case 6: return run<6>(g, out);
        }
        return Status::Error(StatusCode::Internal, "psi order %d not supported", r);
    }

private:
    template <int R>
    Status run(double g, double& out) {
        // Large inputs: 4 rows per thread (fewer, larger tiles); small ones:
        // 1, so that there are enough tiles for every SM.
        return n_ >= (1 << 17) ? run<R, 4>(g, out) : run<R, 1>(g, out);
    }

    template <int R, int RPT>
    Status run(double g, double& out) {
        constexpr int T = kBlock * RPT;
        const long long n = n_;
        // u = z / g: t = u_i - u_j in units of g
        scale_to_float_kernel<<<gpu::blocks_for(n, kBlock), kBlock, 0, stream_>>>(z_.get(), n, 1.0 / g, u_.get());
        APPROX_CUDA_LAUNCHED();
        const float khi = static_cast<float>(kLog2e / 2);
        const float klo = static_cast<float>(kLog2e / 2 - static_cast<double>(khi));
        long long grid;
        APPROX_TRY((resident_blocks<psi_kernel<R, RPT>>(grid)));
        const long long nt = (n + T - 1) / T, tiles = tile_pairs(nt);
        grid = std::min(grid, tiles);
        APPROX_TRY(ensure(partial_, ctx_, grid));
        APPROX_CUDA(cudaMemsetAsync(partial_.get(), 0, sizeof(double) * grid, stream_));
        // Tiles whose every |t| > 10.5 are skipped: such a term is below
        // |He_6(110)| e^-55 < 2e-18 (n^2 of them stay below 1e-13 of the sum).
        const float cut = 10.5f;
        const float* u = u_.get();
        double* partial = partial_.get();
        APPROX_TRY(run_chunks(ctx_, stream_, events_, tiles, chunk_tiles_for(double(T) * T, grid),
                              [&](long long t0, long long t1) -> Status {
                                  unsigned blocks = static_cast<unsigned>(std::min(grid, t1 - t0));
                                  psi_kernel<R, RPT>
                                      <<<blocks, kBlock, 0, stream_>>>(u, n, nt, t0, t1, cut, khi, klo, partial);
                                  return Status::Ok();
                              }));
        double total = 0;
        APPROX_TRY(sums_.run(ctx_, stream_, partial, 1, grid, &total));
        out = total * kPhi0;
        return Status::Ok();
    }

    const ExecContext& ctx_;
    long long n_;
    cudaStream_t stream_ = nullptr;
    EventPair events_;
    DeviceBuffer<double> z_;  // sorted
    DeviceBuffer<float> u_;   // scaled for the current g
    DeviceBuffer<double> partial_;
    SegmentSums sums_;
};

// ---- LSCV engine ---------------------------------------------------------------

class GpuLscv final : public LscvSums {
public:
    GpuLscv(const ExecContext& ctx, size_t n, int d) : ctx_(ctx), n_(static_cast<long long>(n)), d_(d) {
        dp_ = d <= 1 ? 1 : d <= 2 ? 2 : d <= 4 ? 4 : d <= 8 ? 8 : d <= 16 ? 16 : 32;
    }

    Status init(const double* z) {
        if (d_ < 1 || d_ > 32) return Status::Error(StatusCode::Internal, "GPU LSCV: d = %d not supported", d_);
        APPROX_TRY(gpu::begin(ctx_, stream_));
        APPROX_TRY(events_.create());
        Stopwatch sw;
        // fp32, zero-padded to dp_ columns (zeros add nothing to Y)
        std::vector<float> host(static_cast<size_t>(n_) * dp_, 0.0f);
        for (long long i = 0; i < n_; ++i)
            for (int k = 0; k < d_; ++k) host[i * dp_ + k] = static_cast<float>(z[i * d_ + k]);
        APPROX_TRY(z_.alloc(ctx_, host.size()));
        APPROX_CUDA(cudaMemcpyAsync(z_.get(), host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice,
                                    stream_));
        // fp64, same layout, for the precise pass
        std::vector<double> host64(static_cast<size_t>(n_) * dp_, 0.0);
        for (long long i = 0; i < n_; ++i)
            for (int k = 0; k < d_; ++k) host64[i * dp_ + k] = z[i * d_ + k];
        APPROX_TRY(z64_.alloc(ctx_, host64.size()));
        APPROX_CUDA(cudaMemcpyAsync(z64_.get(), host64.data(), sizeof(double) * host64.size(), cudaMemcpyHostToDevice,
                                    stream_));
        APPROX_CUDA(cudaStreamSynchronize(stream_));
        gpu::add_transfer_ms(ctx_, sw.ms());
        return Status::Ok();
    }

    Status sums(const double* h, int nh, double* s4, double* s2) override {
        if (nh <= 0) return Status::Ok();
        if (nh == 1) return pass_dp<1, false>(h, s4, s2);
        if (nh == 2) return pass_dp<2, false>(h, s4, s2);
        for (int k0 = 0; k0 < nh; k0 += 32 * kGridMaxGroups) {
            int m = std::min(32 * kGridMaxGroups, nh - k0);
            APPROX_TRY(grid_dp(h + k0, m, s4 + k0, s2 + k0));
        }
        return Status::Ok();
    }

    Status precise_sums(double h, double& s4, double& s2) override {
        switch (dp_) {
            case 1: return precise<1>(h, s4, s2);
            case 2: return precise<2>(h, s4, s2);
            case 4: return precise<4>(h, s4, s2);
            case 8: return precise<8>(h, s4, s2);
            case 16: return precise<16>(h, s4, s2);
            default: return precise<32>(h, s4, s2);
        }
    }

private:
    template <int NH, bool PRECISE>
    Status pass_dp(const double* h, double* s4, double* s2) {
        switch (dp_) {
            case 1: return pass<1, NH, PRECISE>(h, s4, s2);
            case 2: return pass<2, NH, PRECISE>(h, s4, s2);
            case 4: return pass<4, NH, PRECISE>(h, s4, s2);
            case 8: return pass<8, NH, PRECISE>(h, s4, s2);
            case 16: return pass<16, NH, PRECISE>(h, s4, s2);
            default: return pass<32, NH, PRECISE>(h, s4, s2);
        }
    }

    Status grid_dp(const double* h, int nh, double* s4, double* s2) {
        switch (dp_) {
            case 1: return grid<1>(h, nh, s4, s2);
            case 2: return grid<2>(h, nh, s4, s2);
            case 4: return grid<4>(h, nh, s4, s2);
            case 8: return grid<8>(h, nh, s4, s2);
            case 16: return grid<16>(h, nh, s4, s2);
            default: return grid<32>(h, nh, s4, s2);
        }
    }

    template <int DP, int NH, bool PRECISE>
    Status pass(const double* h, double* s4, double* s2) {
        const long long n = n_;
        const float2 c0 = split_coef(h[0]), c1 = NH > 1 ? split_coef(h[NH - 1]) : make_float2(0.0f, 0.0f);
        const float4 coef = make_float4(c0.x, c0.y, c1.x, c1.y);
        long long grid;
        APPROX_TRY((resident_blocks<lscv_pass_kernel<DP, NH, PRECISE>>(grid)));
        const long long nt = (n + kBlock - 1) / kBlock, tiles = tile_pairs(nt);
        grid = std::min(grid, tiles);
        APPROX_TRY(ensure(partial_, ctx_, 2 * NH * grid));
        APPROX_CUDA(cudaMemsetAsync(partial_.get(), 0, sizeof(double) * 2 * NH * grid, stream_));
        const float* z = z_.get();
        double* partial = partial_.get();
        APPROX_TRY(run_chunks(ctx_, stream_, events_, tiles, chunk_tiles_for(double(kBlock) * kBlock * DP / 8, grid),
                              [&](long long t0, long long t1) -> Status {
                                  unsigned blocks = static_cast<unsigned>(std::min(grid, t1 - t0));
                                  lscv_pass_kernel<DP, NH, PRECISE>
                                      <<<blocks, kBlock, 0, stream_>>>(z, n, nt, t0, t1, coef, partial, grid);
                                  return Status::Ok();
                              }));
        double out[2 * NH];
        APPROX_TRY(sums_.run(ctx_, stream_, partial, 2 * NH, grid, out));
        for (int k = 0; k < NH; ++k) {
            s4[k] = out[k];
            s2[k] = out[NH + k];
        }
        return Status::Ok();
    }

    template <int DP>
    Status precise(double h, double& s4, double& s2) {
        const long long n = n_;
        const double c = 1.0 / (4.0 * h * h);
        long long grid;
        APPROX_TRY((resident_blocks<lscv_precise_kernel<DP>>(grid)));
        const long long nt = (n + kBlock - 1) / kBlock, tiles = tile_pairs(nt);
        grid = std::min(grid, tiles);
        APPROX_TRY(ensure(partial_, ctx_, 2 * grid));
        APPROX_CUDA(cudaMemsetAsync(partial_.get(), 0, sizeof(double) * 2 * grid, stream_));
        const double* z = z64_.get();
        double* partial = partial_.get();
        // fp64 pairs cost several fp32 ones: smaller chunks
        APPROX_TRY(run_chunks(ctx_, stream_, events_, tiles, chunk_tiles_for(double(kBlock) * kBlock * (DP + 8), grid),
                              [&](long long t0, long long t1) -> Status {
                                  unsigned blocks = static_cast<unsigned>(std::min(grid, t1 - t0));
                                  lscv_precise_kernel<DP>
                                      <<<blocks, kBlock, 0, stream_>>>(z, n, nt, t0, t1, c, partial, grid);
                                  return Status::Ok();
                              }));
        double out[2];
        APPROX_TRY(sums_.run(ctx_, stream_, partial, 2, grid, out));
        s4 = out[0];
        s2 = out[1];
        return Status::Ok();
    }

    template <int DP>
    Status grid(const double* h, int nh, double* s4, double* s2) {
        const long long n = n_;
        const int hgroups = (nh + 31) / 32;
        std::vector<float2> cf(static_cast<size_t>(hgroups) * 32, make_float2(1.0f, 0.0f));
        for (int k = 0; k < nh; ++k) cf[k] = split_coef(h[k]);
        APPROX_TRY(ensure(coef_, ctx_, cf.size()));
        APPROX_CUDA(cudaMemcpyAsync(coef_.get(), cf.data(), sizeof(float2) * cf.size(), cudaMemcpyHostToDevice,
                                    stream_));
        long long blocks_max;
        APPROX_TRY((resident_blocks<lscv_grid_kernel<DP>>(blocks_max)));
        const long long nt = (n + kGridTile - 1) / kGridTile, tiles = tile_pairs(nt);
        blocks_max = std::min(blocks_max, tiles);
        const long long P = blocks_max * kWarps;
        APPROX_TRY(ensure(partial_, ctx_, 2 * static_cast<size_t>(nh) * P));
        APPROX_CUDA(cudaMemsetAsync(partial_.get(), 0, sizeof(double) * 2 * nh * P, stream_));
        const float* z = z_.get();
        const float2* coef = coef_.get();
        double* partial = partial_.get();
        const double pairs_per_tile = double(kGridTile) * kGridTile * std::max(nh, 8);
        APPROX_TRY(run_chunks(ctx_, stream_, events_, tiles, chunk_tiles_for(pairs_per_tile, blocks_max),
                              [&](long long t0, long long t1) -> Status {
                                  unsigned blocks = static_cast<unsigned>(std::min(blocks_max, t1 - t0));
                                  lscv_grid_kernel<DP>
                                      <<<blocks, kBlock, 0, stream_>>>(z, n, nt, t0, t1, coef, nh, hgroups, partial, P);
                                  return Status::Ok();
                              }));
        std::vector<double> out(2 * static_cast<size_t>(nh));
        APPROX_TRY(sums_.run(ctx_, stream_, partial, 2 * nh, P, out.data()));
        for (int k = 0; k < nh; ++k) {
            s4[k] = out[k];
            s2[k] = out[nh + k];
        }
        return Status::Ok();
    }

    const ExecContext& ctx_;
    long long n_;
    int d_, dp_;
    cudaStream_t stream_ = nullptr;
    EventPair events_;
    DeviceBuffer<float> z_;
    DeviceBuffer<double> z64_;  // the same points in fp64 (precise pass)
    DeviceBuffer<float2> coef_;
    DeviceBuffer<double> partial_;
    SegmentSums sums_;
};

}  // namespace

Status gpu_psi_sums(const double* z, size_t n, const ExecContext& ctx, std::unique_ptr<PsiSums>& out) {
    std::unique_ptr<GpuPsi> e(new GpuPsi(ctx, n));
    APPROX_TRY(e->init(z));
    out = std::move(e);
    return Status::Ok();
}

Status gpu_lscv_sums(const double* z, size_t n, int d, const ExecContext& ctx, std::unique_ptr<LscvSums>& out) {
    std::unique_ptr<GpuLscv> e(new GpuLscv(ctx, n, d));
    APPROX_TRY(e->init(z));
    out = std::move(e);
    return Status::Ok();
}

}  // namespace approx::kde::detail
