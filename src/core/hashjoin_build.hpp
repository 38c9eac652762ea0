// The control flow of a hash-table build (hashjoin.hpp, "1. Table"), written
// once for both engines; the CPU engine (hashjoin.cpp) and the GPU engine
// (cuda/hashjoin.cu) supply the phases, as topk_radix.hpp does for top-k.
//
//   for each table build (at most max_table_builds):
//     phase 1: try seeds table_seed(o.seed, build, a) until no bucket passes
//              kBucketCapacity (at most max_phase1_attempts); the first
//              overflow is explained by a repeated key when there is one
//     phase 2: a cuckoo table per bucket; a repeated key is an error, a
//              bucket that failed every attempt rebuilds the whole table
//   then Internal ("could not build the hash table ...").
//
// The backend B supplies
//   Status spread(uint64_t seed, bool& overflow)
//       phase 1 with this seed; overflow = a bucket got more than kBucketCapacity keys
//   bool find_duplicate(int64_t& key)
//       a repeated input key, if the backend can look for one and there is one
//   Status build_buckets(uint64_t seed, BucketsResult& r)
//       phase 2 over the pairs of the last spread()
//   Status finish(uint64_t seed)   the table is complete (keep seed, stop clocks)
//   void abandon()                  every build failed (free the partial table)
#pragma once

#include <cstddef>
#include <cstdint>

#include "hashjoin_internal.hpp"

namespace approx::hashjoin {

// Which converged attempts of a bucket (phase 2) may stand. The engines'
// backends are templates over it and the product instantiates them with
// EveryAttempt only; the unit tests instantiate them with a gate that refuses
// some attempts to exercise the retries (test/unit/hashjoin_seam.hpp, never
// linked into approx_gpu.so).
struct EveryAttempt {
    HJ_HD bool accepts(int) const { return true; }
};

struct BucketsResult {
    bool failed = false;  // some bucket failed every attempt: rebuild the table
    bool dup = false;     // a repeated key was found (dup_key)
    int64_t dup_key = 0;
    int64_t restarts = 0;  // bucket attempts that failed
    int max_keys = 0;      // fullest bucket
};

template <class B>
Status build_table(B& backend, size_t n, uint32_t buckets, const ExecContext& ctx, const BuildOptions& o,
                   TableInfo& info) {
    bool dup_checked = false;
    for (int build = 0; build < o.max_table_builds; ++build) {
        ++info.table_builds;
        bool spread = false;
        uint64_t seed = 0;
        for (int a = 0; a < o.max_phase1_attempts && !spread; ++a) {
            if (ctx.cancelled()) return cancelled_status();
            seed = table_seed(o.seed, static_cast<uint32_t>(build), static_cast<uint32_t>(a));
            ++info.phase1_attempts;
            bool overflow = false;
            APPROX_TRY(backend.spread(seed, overflow));
            spread = !overflow;
            if (overflow && !dup_checked) {
                // Unique keys overflow a bucket almost never; many equal keys always.
                dup_checked = true;
                int64_t dup = 0;
                if (backend.find_duplicate(dup))
                    return Status::Error(StatusCode::InvalidArgument, "duplicate key %lld",
                                         static_cast<long long>(dup));
            }
        }
        if (!spread) continue;
        if (ctx.cancelled()) return cancelled_status();
        BucketsResult r;
        APPROX_TRY(backend.build_buckets(seed, r));
        info.bucket_restarts += r.restarts;
        if (r.dup)
            return Status::Error(StatusCode::InvalidArgument, "duplicate key %lld", static_cast<long long>(r.dup_key));
        if (r.failed) continue;  // rebuild the whole table with a new seed
        APPROX_TRY(backend.finish(seed));
        info.max_bucket_keys = r.max_keys;
        describe_table(info, n, buckets);
        return Status::Ok();
    }
    backend.abandon();
    return Status::Error(StatusCode::Internal, "could not build the hash table in %d table builds (%d phase-1 seeds)",
                         o.max_table_builds, info.phase1_attempts);
}

}  // namespace approx::hashjoin
