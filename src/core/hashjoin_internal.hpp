// Internals shared by the CPU engine (hashjoin.cpp), the GPU engine
// (cuda/hashjoin.cu) and the unit tests: the table layout and the hash
// functions (host and device), and the engines' entry points.
#pragma once

#include <cstdint>
#include <memory>

#include "hash_mix.hpp"
#include "hashjoin.hpp"

#ifdef __CUDACC__
#define HJ_HD __host__ __device__ __forceinline__
#else
#define HJ_HD inline
#endif

namespace approx::hashjoin {

// One slot: 16 bytes, read by one vector load.
struct alignas(16) Slot {
    int64_t key;
    int64_t value;
};

// Per bucket: the odd multipliers of g1..g3 and the attempt that found them.
struct alignas(32) BucketMeta {
    uint64_t mul[kSubtables];
    uint32_t attempt;
    uint32_t keys;
};
static_assert(sizeof(Slot) == 16, "slot layout");
static_assert(sizeof(BucketMeta) == 32, "bucket metadata layout");

// ---- hash functions ---------------------------------------------------------------

HJ_HD uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A bijection of the key for a given seed (murmur3's finaliser after an xor):
// distinct keys never share u, so g1..g3 below separate any two keys with
// fresh multipliers.
HJ_HD uint64_t mix_key(int64_t key, uint64_t seed) { return mix64(static_cast<uint64_t>(key) ^ seed); }

// h(k): the bucket, from the high 32 bits of u (multiply-high range reduction).
HJ_HD uint32_t bucket_of(uint64_t u, uint32_t buckets) {
    return static_cast<uint32_t>(((u >> 32) * static_cast<uint64_t>(buckets)) >> 32);
}

// g_j(k): multiply-shift of u by the bucket's odd multiplier, reduced to a slot.
HJ_HD uint32_t slot_of(uint64_t u, uint64_t mul) {
    uint64_t h = (u * mul) >> 32;
    return static_cast<uint32_t>((h * static_cast<uint64_t>(kSubtableSlots)) >> 32);
}

// The seed of phase-1 attempt `attempt` in table build `build`.
HJ_HD uint64_t table_seed(uint64_t base, uint32_t build, uint32_t attempt) {
    if (build == 0 && attempt == 0) return base;
    return splitmix64(base ^ splitmix64((static_cast<uint64_t>(build) << 32) | attempt));
}

// Multiplier of g_j for a bucket's attempt.
HJ_HD uint64_t bucket_multiplier(uint64_t seed, uint32_t bucket, uint32_t attempt, int j) {
    uint64_t x = (static_cast<uint64_t>(bucket) << 32) | (attempt * 3u + static_cast<uint32_t>(j));
    return splitmix64(seed ^ splitmix64(x)) | 1u;
}

// Empty slots of sub-table j hold a key that g_j does not map to that slot:
// key 0 everywhere except at slot p0 = g_j(0), which holds `other`, a key
// with g_j(other) != p0. A probe of key k reads slot g_j(k), so an empty
// slot's key differs from k. Returns false when no such `other` was found
// among the first candidates (never seen; the bucket then takes new
// functions).
struct Filler {
    uint32_t p0;
    int64_t other;
};
HJ_HD bool make_filler(uint64_t seed, uint64_t mul, Filler& f) {
    f.p0 = slot_of(mix_key(0, seed), mul);
    for (int64_t c = 1; c <= 4096; ++c)
        if (slot_of(mix_key(c, seed), mul) != f.p0) {
            f.other = c;
            return true;
        }
    return false;
}
HJ_HD int64_t filler_key(const Filler& f, uint32_t slot) { return slot == f.p0 ? f.other : 0; }

// Lookup in a table laid out as above (host or device memory).
HJ_HD bool lookup(const Slot* slots, const BucketMeta* meta, uint32_t buckets, uint64_t seed, int64_t key,
                  int64_t& value) {
    uint64_t u = mix_key(key, seed);
    uint32_t b = bucket_of(u, buckets);
    const Slot* base = slots + static_cast<uint64_t>(b) * kBucketSlots;
    const BucketMeta* m = meta + b;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kSubtables; ++j) {
        Slot s = base[j * kSubtableSlots + slot_of(u, m->mul[j])];
        if (s.key == key) {
            value = s.value;
            return true;
        }
    }
    return false;
}

// ---- engines ------------------------------------------------------------------

class TableStorage {
public:
    virtual ~TableStorage() = default;
    virtual Status find(const int64_t* keys, size_t m, int64_t* values, uint8_t* found,
                        const ExecContext& ctx) const = 0;
};

// Options checked once for both engines.
Status check_options(const BuildOptions& o);

// Buckets for n keys under o (at least 1).
uint32_t bucket_count(size_t n, const BuildOptions& o);

Status cpu_build_table(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                       const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info);
// sink == nullptr: count only.
Status cpu_join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                JoinInfo& info, const JoinOptions& o);

#ifdef APPROX_WITH_CUDA
Status gpu_build_table(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                       const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info);
Status gpu_join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
                JoinInfo& info, const JoinOptions& o);
#endif

// Hands one chunk of output rows to the sink (both engines): its time goes
// to info.ms_emit, the chunk is counted, and a sink that asks to stop ends
// the join with Cancelled.
Status emit_chunk(JoinSink sink, void* user, const int64_t* keys, const int64_t* build_values,
                  const int64_t* probe_values, size_t len, JoinInfo& info);

// Fills the size fields of info for n keys in `buckets` buckets.
void describe_table(TableInfo& info, size_t n, uint32_t buckets);

// The first repeated key among keys[0..n) (host memory), if any.
bool find_duplicate(const int64_t* keys, size_t n, int64_t& dup);

}  // namespace approx::hashjoin
