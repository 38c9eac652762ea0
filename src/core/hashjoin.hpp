// Hashed joins (plain C++ API; CPU engine in hashjoin.cpp, GPU engine in
// cuda/hashjoin.cu). Source: Alcantara et al., "Real-time parallel hashing on
// the GPU" (hybrid FKS + cuckoo).
//
// 1. Table: a hash table of unique int64 keys -> int64 values.
//    Phase 1 spreads the pairs into buckets of at most kBucketCapacity keys by
//    a hash h(k) (count per bucket, exclusive prefix sum, scatter); a bucket
//    that overflows makes phase 1 start again with a new seed. Phase 2 builds,
//    per bucket, a cuckoo table of three sub-tables of kSubtableSlots slots
//    with hash functions g1..g3 (on the GPU: one thread block per bucket, in
//    shared memory); a bucket that fails starts again with new functions, and
//    after max_bucket_attempts the whole table is rebuilt with a new seed.
//    A lookup reads at most three slots. Every int64 is a valid key (0 and
//    all-ones included): an empty slot holds a key that its own g_j does not
//    send to that slot, so it can never compare equal to a key probed there.
//
//    Layout: buckets = ceil(n / target_bucket_load); each bucket has
//    3 x 192 = 576 slots of 16 bytes (key, value) and 32 bytes of hash
//    multipliers. With the default average of 409 keys per bucket (the
//    paper's choice, 80% of 512) the load factor is 409/576 = 0.71 and the
//    table takes (576*16 + 32) / (409*16) = 1.41 times the 16 bytes per input
//    pair (the paper: 1.42).
//
// 2. Join with duplicate keys: the build side sorted by key, each distinct
//    key stored once in a Table with its (offset, count) into the sorted
//    values; the probe side counts its matches, an exclusive scan places them,
//    and the pairs are emitted in chunks to a caller's sink (or only counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "exec.hpp"

namespace approx::hashjoin {

constexpr int kBucketCapacity = 512;  // keys per bucket at most
constexpr int kSubtables = 3;
constexpr int kSubtableSlots = 192;
constexpr int kBucketSlots = kSubtables * kSubtableSlots;  // 576
constexpr int kDefaultBucketLoad = 409;                    // average keys per bucket
// Keys per table: bucket offsets are 32-bit.
constexpr uint64_t kMaxTableKeys = 0xFFFFFFF0ull;

struct BuildOptions {
    uint64_t seed = 0x5eed0f3a1c2b4d6eull;        // first hash seed (later ones derive from it)
    int target_bucket_load = kDefaultBucketLoad;  // average keys per bucket, 1..kBucketCapacity
    int max_phase1_attempts = 8;                  // seeds tried by phase 1 in one table build
    int max_bucket_attempts = 16;                 // hash-function sets tried per bucket before a rebuild
    int max_table_builds = 4;                     // whole-table builds before giving up
    int max_cuckoo_rounds = 128;                  // eviction rounds per bucket attempt
};

// What a build did and what the table costs.
struct TableInfo {
    Device device = Device::Cpu;
    int64_t keys = 0;
    int64_t buckets = 0;
    int64_t slots = 0;            // buckets * kBucketSlots
    int table_builds = 0;         // 1 = no whole-table rebuild
    int phase1_attempts = 0;      // seeds tried by phase 1, over all table builds
    int64_t bucket_restarts = 0;  // bucket attempts that failed and were retried with new functions
    int max_bucket_keys = 0;      // fullest bucket of the final table
    double load_factor = 0;       // keys / slots
    double memory_ratio = 0;      // table bytes / (16 bytes * keys)
    int64_t table_bytes = 0;
};

class TableStorage;  // CPU or GPU storage (hashjoin_internal.hpp)

// A built table: lives on the device that built it (CPU memory or GPU memory).
class Table {
public:
    Table();
    ~Table();
    Table(Table&&) noexcept;
    Table& operator=(Table&&) noexcept;
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;

    // Builds from n unique keys; values may be nullptr (the value of keys[i]
    // is then i). The device follows ctx (dispatch). Errors: a repeated key ->
    // InvalidArgument naming it; n > kMaxTableKeys -> ProgramLimit; options
    // out of range -> InvalidArgument.
    Status build(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                 const BuildOptions& options = BuildOptions());

    // Looks up m keys on the table's device: values[i] = the value of keys[i]
    // and found[i] = 1, or values[i] = 0 and found[i] = 0.
    Status find(const int64_t* keys, size_t m, int64_t* values, uint8_t* found, const ExecContext& ctx) const;

    bool built() const { return storage_ != nullptr; }
    const TableInfo& info() const { return info_; }

private:
    std::unique_ptr<TableStorage> storage_;
    TableInfo info_;
};

// One side of a join: n rows of (key, value). values may be nullptr: each
// row's index (0-based) then stands in for its value in the output.
struct JoinSide {
    const int64_t* keys = nullptr;
    const int64_t* values = nullptr;
    size_t n = 0;
};

// Receives consecutive chunks of the join's output on the calling thread
// (a plain function pointer, so nothing C++ crosses into the caller). Returns
// true to go on; false stops the join, which then returns Cancelled.
using JoinSink = bool (*)(void* user, const int64_t* keys, const int64_t* build_values, const int64_t* probe_values,
                          size_t count);

struct JoinOptions {
    size_t chunk_rows = size_t(1) << 20;  // output rows per sink call at most
    BuildOptions table;
};

struct JoinInfo {
    int64_t matches = 0;        // output rows (the join's cardinality)
    int64_t distinct_keys = 0;  // distinct keys of the build side
    int64_t chunks = 0;         // sink calls
    double ms_emit = 0;         // time spent inside the sink
    TableInfo table;            // the table over the distinct build keys
};

// Cardinality of build JOIN probe USING (key), without materialising it.
Status join_count(const JoinSide& build, const JoinSide& probe, const ExecContext& ctx, JoinInfo& info,
                  const JoinOptions& options = JoinOptions());

// Every matching pair (key, build value, probe value), in probe-row order and,
// for one probe row, in build-row order; delivered to sink in chunks of at
// most options.chunk_rows rows. Both engines give the same sequence.
Status join(const JoinSide& build, const JoinSide& probe, JoinSink sink, void* user, const ExecContext& ctx,
            JoinInfo& info, const JoinOptions& options = JoinOptions());

}  // namespace approx::hashjoin
