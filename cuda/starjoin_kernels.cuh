// The star-join engine's device code (cuda/starjoin.cu): the key-map probe,
// the flags a pass reports, and the kernels -- dimension rows, dense maps,
// key extraction for the cuckoo table, and the fact passes (domains, packed
// keys, groups, moments). Each fact kernel runs the shared per-row code of
// core/starjoin/starjoin_internal.hpp. Internal to cuda/starjoin.cu.
#pragma once

#include "common.cuh"
#include "core/starjoin/starjoin_internal.hpp"
#include "hashjoin_table.cuh"

namespace approx::starjoin {

namespace {

constexpr uint64_t kReject = ~uint64_t(0);

struct DevMap {
    int32_t dense = 1;
    int64_t min = 0;
    uint64_t range = 0;
    const int32_t* slot = nullptr;
    hashjoin::TableView table{};
};

struct DevProbe {
    DevMap maps[kMaxDims];
    __host__ __device__ int64_t operator()(int32_t d, int64_t k) const {
        const DevMap& m = maps[d];
        if (m.dense) {
            uint64_t i = static_cast<uint64_t>(k) - static_cast<uint64_t>(m.min);
            return i < m.range ? m.slot[i] : -1;
        }
        int64_t v = -1;
        return hashjoin::lookup(m.table.slots, m.table.meta, m.table.buckets, m.table.seed, k, v) ? v : -1;
    }
};

// Counters and flags a pass reports back (one small copy).
struct Flags {
    unsigned long long error;
    unsigned long long count;
    long long dup_key;
    int dup;
    long long min[kMaxGroupParts];
    long long max[kMaxGroupParts];
    int has_null[kMaxGroupParts];
};

// Warp-wide min / max / sum (every lane of the warp must call): the passes'
// per-thread totals meet in one atomic per warp, not one per thread.
__device__ __forceinline__ long long warp_min(long long v) {
    for (int o = 16; o > 0; o >>= 1) {
        long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}
__device__ __forceinline__ long long warp_max(long long v) {
    for (int o = 16; o > 0; o >>= 1) {
        long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ bool lane0() { return (threadIdx.x & 31) == 0; }

struct DimArgs {
    const Instr* code;
    const int64_t* pool;
    const ColumnView* cols;
    int64_t rows;
    ProgramRef filter;
    int32_t n_out;
    ProgramRef outputs[kMaxDimOutputs];
    int32_t key_col;
};

__global__ void dim_eval_kernel(DimArgs a, int32_t* status, Val* vals, Flags* flags) {
    unsigned long long passing = 0;
    long long kmin = kInt64Max, kmax = kInt64Min;
    GRID_STRIDE(r, a.rows) {
        RowEnv env{a.cols, r, nullptr};
        Val k = load_column(a.cols[a.key_col], r);
        if (!k.null) {
            kmin = k.i < kmin ? k.i : kmin;
            kmax = k.i > kmax ? k.i : kmax;
        }
        bool pass;
        int32_t e = eval_filter(a.code + a.filter.first, a.filter.length, a.pool, env, pass);
        if (e != kEvalOk) {
            atomicMin(&flags->error, static_cast<unsigned long long>(error_word(r, e)));
            pass = false;
        }
        int32_t st = kFiltered;
        if (pass) {
            ++passing;
            st = kEvalOk;
            for (int32_t o = 0; o < a.n_out && st == kEvalOk; ++o)
                st = eval(a.code + a.outputs[o].first, a.outputs[o].length, a.pool, env, vals[r * a.n_out + o]);
        }
        status[r] = st;
    }
    passing = warp_sum(passing);
    kmin = warp_min(kmin);
    kmax = warp_max(kmax);
    if (lane0()) {
        if (passing) atomicAdd(&flags->count, passing);
        if (kmin <= kmax) {
            atomicMin(&flags->min[0], kmin);
            atomicMax(&flags->max[0], kmax);
        }
    }
}

__global__ void dense_fill_kernel(ColumnView key, int64_t rows, int64_t min, int32_t* slot, Flags* flags) {
    GRID_STRIDE(r, rows) {
        Val k = load_column(key, r);
        if (k.null) continue;
        int32_t old = atomicCAS(&slot[static_cast<uint64_t>(k.i) - static_cast<uint64_t>(min)], -1, static_cast<int32_t>(r));
        if (old != -1 && atomicExch(&flags->dup, 1) == 0) flags->dup_key = k.i;
    }
}

__global__ void key_extract_kernel(ColumnView key, int64_t rows, int64_t* keys, int64_t* row_of,
                                   unsigned long long* counter) {
    // every lane of a warp makes the same number of turns: warp_append is warp-wide
    const int64_t padded = (rows + 31) / 32 * 32;
    GRID_STRIDE(r, padded) {
        bool have = false;
        Val k;
        k.i = 0;
        if (r < rows) {
            k = load_column(key, r);
            have = !k.null;
        }
        unsigned long long at = gpu::warp_append(have, counter);
        if (have) {
            keys[at] = k.i;
            row_of[at] = r;
        }
    }
}

__global__ void domain_kernel(FactView v, DevProbe probe, int64_t n, Flags* flags) {
    long long mn[kMaxGroupParts], mx[kMaxGroupParts];
    int nul[kMaxGroupParts];
    for (int p = 0; p < v.n_parts; ++p) {
        mn[p] = kInt64Max;
        mx[p] = kInt64Min;
        nul[p] = 0;
    }
    unsigned long long joined = 0;
    GRID_STRIDE(r, n) {
        const Val* dv[kMaxDims];
        Val parts[kMaxGroupParts];
        bool pass;
        int32_t s = 0, e = join_row(v, r, probe, dv, pass);
        if (e == kEvalOk && pass) e = row_parts(v, r, dv, parts, s);
        if (e != kEvalOk) {
            atomicMin(&flags->error, static_cast<unsigned long long>(error_word(r, e)));
            continue;
        }
        if (!pass) continue;
        ++joined;
        for (int p = 0; p < v.n_parts; ++p) {
            if (parts[p].null) {
                nul[p] = 1;
            } else {
                mn[p] = parts[p].i < mn[p] ? parts[p].i : mn[p];
                mx[p] = parts[p].i > mx[p] ? parts[p].i : mx[p];
            }
        }
    }
    joined = warp_sum(joined);
    if (lane0() && joined) atomicAdd(&flags->count, joined);
    for (int p = 0; p < v.n_parts; ++p) {
        const long long lo = warp_min(mn[p]), hi = warp_max(mx[p]);
        if (lane0() && lo <= hi) {
            atomicMin(&flags->min[p], lo);
            atomicMax(&flags->max[p], hi);
        }
        if (nul[p]) flags->has_null[p] = 1;
    }
}

__global__ void pack_kernel(FactView v, DevProbe probe, int64_t n, GroupLayout g, uint64_t* key) {
    GRID_STRIDE(r, n) {
        const Val* dv[kMaxDims];
        Val parts[kMaxGroupParts];
        bool pass;
        int32_t s = 0;
        join_row(v, r, probe, dv, pass);
        uint64_t k = kReject;
        if (pass) {
            row_parts(v, r, dv, parts, s);
            k = pack_key(g, parts);
        }
        key[r] = k;
    }
}

__global__ void group_of_kernel(int64_t n, hashjoin::TableView t, uint64_t* key) {
    GRID_STRIDE(r, n) {
        if (key[r] == kReject) continue;
        int64_t gid = 0;
        hashjoin::lookup(t.slots, t.meta, t.buckets, t.seed, static_cast<int64_t>(key[r]), gid);
        key[r] = static_cast<uint64_t>(gid);
    }
}

struct NotRejected {
    __host__ __device__ bool operator()(uint64_t k) const { return k != kReject; }
};

// pass 0: rows, n, sum, nonzero; pass 1: central sums about mean.
__global__ void moments_kernel(FactView v, DevProbe probe, int64_t n, const uint64_t* gid, int pass, Acc* acc,
                               unsigned long long* rows, const double* mean, Flags* flags) {
    const int32_t M = v.n_measures;
    GRID_STRIDE(r, n) {
        const uint64_t k = gid[r];
        if (k == kReject) continue;
        const Val* dv[kMaxDims];
        const uint64_t cell = grouped_cell(v, r, probe, k, dv);
        if (pass == 0) atomicAdd(&rows[cell], 1ull);
        for (int32_t m = 0; m < M; ++m) {
            Val y;
            int32_t e = measure_value(v, m, r, dv, y);
            if (e != kEvalOk) {
                atomicMin(&flags->error, static_cast<unsigned long long>(error_word(r, e)));
                break;
            }
            if (y.null) continue;
            Acc* c = acc + cell * static_cast<uint64_t>(M) + static_cast<uint64_t>(m);
            if (pass == 0) {
                atomicAdd(&c->n, 1.0);
                atomicAdd(&c->sum, y.f);
                if (y.f != 0) atomicAdd(&c->nonzero, 1.0);
            } else {
                const double d = y.f - mean[cell * static_cast<uint64_t>(M) + static_cast<uint64_t>(m)], d2 = d * d;
                atomicAdd(&c->m2, d2);
                atomicAdd(&c->m3, d2 * d);
                atomicAdd(&c->m4, d2 * d2);
            }
        }
    }
}

__global__ void mean_kernel(const Acc* acc, size_t cells, double* mean) {
    GRID_STRIDE(i, static_cast<int64_t>(cells)) mean[i] = acc[i].n > 0 ? acc[i].sum / acc[i].n : 0;
}

}  // namespace

}  // namespace approx::starjoin
