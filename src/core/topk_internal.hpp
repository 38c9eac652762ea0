// Pieces of the top-k engine shared by the CPU engine (topk.cpp), the GPU
// engine (cuda/topk.cu) and the GPU-service requests (topk_served.cpp). Not
// part of the API the glue sees.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "topk.hpp"

namespace approx::topk::detail {

// A pair under the composite order: (key, id) ascending = best first; idx is
// its position in the input.
struct Entry {
    uint64_t key;
    uint64_t id;
    uint64_t idx;
};

inline bool entry_less(const Entry& a, const Entry& b) { return a.key < b.key || (a.key == b.key && a.id < b.id); }

// The lists' positions and bounds, shared by both NRA engines (host memory).
struct NraShared {
    int m = 0;
    int64_t k = 0;
    double min[kMaxNraLists] = {0};   // missing-score value (and bound of an exhausted list)
    double last[kMaxNraLists] = {0};  // score of the last entry read
    bool exhausted[kMaxNraLists] = {false};
    int64_t depth[kMaxNraLists] = {0};
    int64_t rounds = 0;
    bool phase2 = false;  // W_k > T has held: no object seen from now on can enter the answer

    // Upper bound of an unseen score in list j.
    double bound(int j) const {
        if (exhausted[j]) return min[j];
        return depth[j] > 0 ? last[j] : std::numeric_limits<double>::infinity();
    }
    void bounds(double* b) const {
        for (int j = 0; j < m; ++j) b[j] = bound(j);
    }
    double threshold() const {
        double b[kMaxNraLists];
        bounds(b);
        return nra_sum(b, m);
    }
    bool all_exhausted() const {
        for (int j = 0; j < m; ++j)
            if (!exhausted[j]) return false;
        return true;
    }
    uint32_t exhausted_mask() const {
        uint32_t mask = 0;
        for (int j = 0; j < m; ++j)
            if (exhausted[j]) mask |= 1u << j;
        return mask;
    }
    uint32_t full_mask() const { return m == 32 ? 0xffffffffu : ((1u << m) - 1); }
};

// select() in the GPU service (topk_served.cpp): the request's status, for
// service::try_run; out_n is set only when it succeeds.
Status select_in_service(const int64_t* ids, const double* scores, size_t n, size_t k, Order order,
                         const ExecContext& ctx, int64_t* out_ids, double* out_scores, size_t& out_n);

#ifdef APPROX_WITH_CUDA
Status select_gpu(const int64_t* ids, const double* scores, size_t n, size_t k, Order order, const ExecContext& ctx,
                  int64_t* out_ids, double* out_scores, size_t& out_n);

struct NraGpu;
Status nra_gpu_create(const NraShared& sh, const ExecContext& ctx, NraGpu*& out);
// Applies a round's entries (applied = true once they are in the device
// state, so a failure after that point does not apply them twice) and checks
// the stopping rule.
Status nra_gpu_round(NraGpu* g, NraShared& sh, const NraList* lists, const ExecContext& ctx, NraProgress& progress,
                     bool& applied);
Status nra_gpu_add_unlisted(NraGpu* g, NraShared& sh, const int64_t* ids, size_t n, const ExecContext& ctx);
Status nra_gpu_winners(NraGpu* g, NraShared& sh, const ExecContext& ctx, int64_t* ids, size_t cap, size_t& n);
int64_t nra_gpu_candidates(const NraGpu* g);
// The candidates in host memory (ids, seen masks, scores row-major n x m),
// for continuing on the CPU after a GPU allocation failure.
Status nra_gpu_export(NraGpu* g, const NraShared& sh, std::vector<int64_t>& ids, std::vector<uint32_t>& seen,
                      std::vector<double>& scores);
void nra_gpu_destroy(NraGpu* g) noexcept;
#endif

}  // namespace approx::topk::detail
