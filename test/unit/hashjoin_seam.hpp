// Test-only seam of the hash-table build (never linked into approx_gpu.so):
// both engines' backends of build_table() (hashjoin_build.hpp) are templates
// over a gate that decides which converged bucket attempts stand; the product
// uses EveryAttempt, the tests below a gate that refuses the first attempts
// of every bucket in the first table build, as if their cuckoo insertion had
// not converged. The CPU build is instantiated here, the GPU build in
// hashjoin_seam.cu (compiled with nvcc into build/unit_tests only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/hashjoin_cpu.hpp"
#include "core/hashjoin_internal.hpp"

namespace approx::hashjoin::test {

// Refuses attempts below `below`.
struct RefuseBelow {
    int below = 0;
    HJ_HD bool accepts(int attempt) const { return attempt >= below; }
};

// Backend B (a CpuBuild / GpuBuild over RefuseBelow) whose first table build
// refuses the first N attempts of every bucket; later builds refuse none.
template <class B, int N>
class FirstBuildRefuses : public B {
public:
    using B::B;
    Status build_buckets(uint64_t seed, BucketsResult& r) {
        this->gate.below = builds_++ == 0 ? N : 0;
        return B::build_buckets(seed, r);
    }

private:
    int builds_ = 0;
};

// cpu_build_table() / gpu_build_table() with that backend.
template <int N>
Status cpu_build_refusing(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                          const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info) {
    using Backend = FirstBuildRefuses<cpu::CpuBuild<RefuseBelow>, N>;
    std::unique_ptr<cpu::CpuStorage> st(new cpu::CpuStorage);
    APPROX_TRY(cpu::build_cpu_storage<Backend>(keys, values, n, ctx, o, true, *st, info));
    out = std::move(st);
    return Status::Ok();
}

#ifdef APPROX_WITH_CUDA
template <int N>
Status gpu_build_refusing(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                          const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info);
extern template Status gpu_build_refusing<3>(const int64_t*, const int64_t*, size_t, const ExecContext&,
                                             const BuildOptions&, std::unique_ptr<TableStorage>&, TableInfo&);
extern template Status gpu_build_refusing<4>(const int64_t*, const int64_t*, size_t, const ExecContext&,
                                             const BuildOptions&, std::unique_ptr<TableStorage>&, TableInfo&);
#endif

}  // namespace approx::hashjoin::test
