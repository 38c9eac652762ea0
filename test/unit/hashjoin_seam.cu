// The GPU half of hashjoin_seam.hpp: gpu_build_table() with a backend that
// refuses bucket attempts (test-only; linked into build/unit_tests, never
// into approx_gpu.so).
#include "cuda/hashjoin_table.cuh"
#include "hashjoin_seam.hpp"

namespace approx::hashjoin::test {

template <int N>
Status gpu_build_refusing(const int64_t* keys, const int64_t* values, size_t n, const ExecContext& ctx,
                          const BuildOptions& o, std::unique_ptr<TableStorage>& out, TableInfo& info) {
    using Backend = FirstBuildRefuses<GpuBuild<RefuseBelow>, N>;
    return guarded([&] { return build_gpu_table<Backend>(keys, values, n, ctx, o, out, info); });
}

template Status gpu_build_refusing<3>(const int64_t*, const int64_t*, size_t, const ExecContext&, const BuildOptions&,
                                      std::unique_ptr<TableStorage>&, TableInfo&);
template Status gpu_build_refusing<4>(const int64_t*, const int64_t*, size_t, const ExecContext&, const BuildOptions&,
                                      std::unique_ptr<TableStorage>&, TableInfo&);

}  // namespace approx::hashjoin::test
