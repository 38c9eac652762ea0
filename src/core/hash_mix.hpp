// 64-bit hash mixing shared by the engines, on the host and on the GPU.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define APPROX_HASH_HD __host__ __device__ __forceinline__
#else
#define APPROX_HASH_HD inline
#endif

namespace approx {

// MurmurHash3's 64-bit finalizer: a bijection in which every input bit
// affects every output bit (ids and keys are often sequential).
APPROX_HASH_HD uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

}  // namespace approx
