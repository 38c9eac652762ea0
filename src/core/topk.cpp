// Top-k CPU engine and the engine API: selection (chunked partial selection on
// parallel_for, then a merge), in-place pruning for aggregate states, and the
// NRA engine's CPU candidate bookkeeping (see topk.hpp). select()'s request
// to the GPU service is in topk_served.cpp.
#include <algorithm>
#include <cmath>
#include <memory>

#include "topk.hpp"
#include "service.hpp"
#include "topk_internal.hpp"

namespace approx::topk {

using detail::Entry;
using detail::entry_less;
using detail::NraShared;

namespace {

// The best kk entries of [lo, hi) into out (unordered): a buffer that is cut
// back to kk with nth_element whenever it fills; after the first cut, pairs
// that do not beat the worst kept one are skipped without touching their id.
void best_in_range(const int64_t* ids, const double* scores, size_t lo, size_t hi, size_t kk, Order order,
                   std::vector<Entry>& out) {
    size_t len = hi - lo;
    size_t cap = kk + std::max<size_t>(kk, 4096);
    out.clear();
    out.reserve(std::min(len, cap));
    bool have = false;
    Entry thr{0, 0, 0};
    for (size_t i = lo; i < hi; ++i) {
        uint64_t key = score_key(scores[i], order);
        if (have && key > thr.key) continue;
        Entry e{key, id_key(ids[i]), i};
        if (have && !entry_less(e, thr)) continue;
        out.push_back(e);
        if (out.size() == cap) {
            std::nth_element(out.begin(), out.begin() + (kk - 1), out.end(), entry_less);
            out.resize(kk);
            thr = out[kk - 1];
            have = true;
        }
    }
    if (out.size() > kk) {
        std::nth_element(out.begin(), out.begin() + (kk - 1), out.end(), entry_less);
        out.resize(kk);
    }
}

Status select_cpu_impl(const int64_t* ids, const double* scores, size_t n, size_t k, Order order,
                       const ExecContext& ctx, int64_t* out_ids, double* out_scores, size_t& out_n) {
    out_n = 0;
    size_t kk = std::min(k, n);
    if (kk == 0) return Status::Ok();
    const size_t min_chunk = size_t(1) << 16;
    size_t threads = ctx.cpu_threads < 1 ? 1 : static_cast<size_t>(ctx.cpu_threads);
    size_t n_tasks = std::max<size_t>(1, std::min(n / min_chunk, threads * 4));
    size_t chunk = (n + n_tasks - 1) / n_tasks;
    std::vector<std::vector<Entry>> parts(n_tasks);
    APPROX_TRY(parallel_for(ctx, n_tasks, [&](size_t t, size_t) {
        size_t lo = t * chunk, hi = std::min(n, lo + chunk);
        if (lo < hi) best_in_range(ids, scores, lo, hi, kk, order, parts[t]);
        return Status::Ok();
    }));
    std::vector<Entry> all;
    if (n_tasks == 1) {
        all.swap(parts[0]);
    } else {
        size_t total = 0;
        for (auto& p : parts) total += p.size();
        all.reserve(total);
        for (auto& p : parts) {
            all.insert(all.end(), p.begin(), p.end());
            std::vector<Entry>().swap(p);
        }
    }
    if (ctx.cancelled()) return cancelled_status();
    if (all.size() > kk) {
        std::nth_element(all.begin(), all.begin() + (kk - 1), all.end(), entry_less);
        all.resize(kk);
    }
    std::sort(all.begin(), all.end(), entry_less);
    for (size_t i = 0; i < kk; ++i) {
        out_ids[i] = ids[all[i].idx];
        out_scores[i] = scores[all[i].idx];
    }
    out_n = kk;
    return Status::Ok();
}

}  // namespace

Status select_cpu(const int64_t* ids, const double* scores, size_t n, size_t k, Order order, const ExecContext& ctx,
                  int64_t* out_ids, double* out_scores, size_t& out_n) noexcept {
    out_n = 0;
    return guarded([&] { return select_cpu_impl(ids, scores, n, k, order, ctx, out_ids, out_scores, out_n); });
}

Status select(const int64_t* ids, const double* scores, size_t n, size_t k, Order order, const ExecContext& caller,
              int64_t* out_ids, double* out_scores, size_t& out_n) noexcept {
    out_n = 0;
    if (caller.stats) caller.stats->rows = static_cast<int64_t>(n);
    if (n == 0 || k == 0) return Status::Ok();
    ExecContext ctx = caller;
    Status st;
    if (service::try_run(ctx, static_cast<int64_t>(n), st, [&](const ExecContext& c) {
            return detail::select_in_service(ids, scores, n, k, order, c, out_ids, out_scores, out_n);
        }))
        return st;
    return dispatch(
        ctx, static_cast<int64_t>(n),
        [&] { return select_cpu_impl(ids, scores, n, k, order, ctx, out_ids, out_scores, out_n); },
        APPROX_GPU(detail::select_gpu(ids, scores, n, k, order, ctx, out_ids, out_scores, out_n)));
}

Status prune(int64_t* ids, double* scores, size_t n, size_t k, Order order, size_t& kept, Threshold& thr) noexcept {
    kept = n;
    if (n <= k || k == 0) return Status::Ok();
    return guarded([&] {
        std::vector<Entry> e(n);
        for (size_t i = 0; i < n; ++i) e[i] = Entry{score_key(scores[i], order), id_key(ids[i]), i};
        std::nth_element(e.begin(), e.begin() + (k - 1), e.end(), entry_less);
        std::vector<int64_t> keep_ids(k);
        std::vector<double> keep_scores(k);
        for (size_t i = 0; i < k; ++i) {
            keep_ids[i] = ids[e[i].idx];
            keep_scores[i] = scores[e[i].idx];
        }
        std::copy(keep_ids.begin(), keep_ids.end(), ids);
        std::copy(keep_scores.begin(), keep_scores.end(), scores);
        thr.valid = true;
        thr.key = e[k - 1].key;
        thr.id = e[k - 1].id;
        kept = k;
        return Status::Ok();
    });
}

Status combine(Threshold& thr, const Threshold& other_thr, const int64_t* other_ids, const double* other_scores,
               size_t other_n, Order order, int64_t* out_ids, double* out_scores, size_t& appended) noexcept {
    appended = 0;
    if (other_n > 0 && (other_ids == nullptr || other_scores == nullptr || out_ids == nullptr || out_scores == nullptr))
        return Status::Error(StatusCode::Internal, "combine: pairs without data");
    thr = better_threshold(thr, other_thr);
    size_t a = 0;
    for (size_t i = 0; i < other_n; ++i) {
        if (!reaches(other_scores[i], other_ids[i], order, thr)) continue;  // ranks after k kept pairs
        out_ids[a] = other_ids[i];
        out_scores[a] = other_scores[i];
        ++a;
    }
    appended = a;
    return Status::Ok();
}

namespace {

Status sum_out_of_range(int64_t id) {
    return Status::Error(StatusCode::OutOfRange, "sum of scores of id %lld is out of range for double precision",
                         static_cast<long long>(id));
}

}  // namespace

Status check_sums(const int64_t* ids, const double* values, size_t n, int m) noexcept {
    if (m < 1) return Status::Error(StatusCode::InvalidArgument, "check_sums: m must be positive");
    for (size_t i = 0; i < n; ++i)
        if (std::isinf(nra_sum(values + i * static_cast<size_t>(m), m))) return sum_out_of_range(ids[i]);
    return Status::Ok();
}

Status rank_by_sum(const int64_t* ids, const double* values, size_t n, int m, size_t k, const ExecContext& ctx,
                   int64_t* out_ids, double* out_totals, size_t& out_n) noexcept {
    out_n = 0;
    return guarded([&] {
        if (m < 1) return Status::Error(StatusCode::InvalidArgument, "rank_by_sum: m must be positive");
        std::vector<double> totals(n);
        bool overflow = false;
        int64_t first = 0;  // the smallest id whose total overflows (the values are finite)
        for (size_t i = 0; i < n; ++i) {
            totals[i] = nra_sum(values + i * static_cast<size_t>(m), m);
            if (std::isinf(totals[i]) && (!overflow || ids[i] < first)) {
                overflow = true;
                first = ids[i];
            }
        }
        if (overflow) return sum_out_of_range(first);
        ExecContext one = ctx;
        one.cpu_threads = 1;
        one.stats = nullptr;
        return select_cpu_impl(ids, totals.data(), n, k, Order::Desc, one, out_ids, out_totals, out_n);
    });
}

// ---- NRA: CPU candidate bookkeeping ----------------------------------------------------

namespace {

constexpr uint32_t kNone = 0xffffffffu;

// id -> candidate index, open addressing (linear probing, load <= 1/2); key
// and value share a slot, so a probe touches one cache line.
class IdHash {
public:
    uint32_t find(int64_t id) const {
        if (slots_.empty()) return kNone;
        for (size_t p = mix(id) & mask_;; p = (p + 1) & mask_) {
            const Slot& s = slots_[p];
            if (s.val == kNone) return kNone;
            if (s.key == id) return s.val;
        }
    }
    void insert(int64_t id, uint32_t v) {  // id must be absent
        if ((size_ + 1) * 2 > slots_.size()) grow();
        place(id, v);
        ++size_;
    }

private:
    struct Slot {
        int64_t key;
        uint32_t val;
    };
    static uint64_t mix(int64_t id) {
        uint64_t x = static_cast<uint64_t>(id) + 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }
    void place(int64_t id, uint32_t v) {
        size_t p = mix(id) & mask_;
        while (slots_[p].val != kNone) p = (p + 1) & mask_;
        slots_[p] = Slot{id, v};
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        size_t cap = old.empty() ? 1024 : old.size() * 2;
        slots_.assign(cap, Slot{0, kNone});
        mask_ = cap - 1;
        for (const Slot& s : old)
            if (s.val != kNone) place(s.key, s.val);
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

}  // namespace

class NraCpu {
public:
    explicit NraCpu(const NraShared& sh) : m_(sh.m), k_(static_cast<size_t>(sh.k)) {}

    size_t candidates() const { return id_.size(); }

    // Adds this round's entries (the positions in sh are already advanced).
    Status apply(const NraShared& sh, const NraList* lists) {
        ++stamp_;
        touched_.clear();
        for (int j = 0; j < m_; ++j) {
            const NraList& l = lists[j];
            const uint32_t bit = 1u << j;
            for (size_t e = 0; e < l.n; ++e) {
                uint32_t idx = hash_.find(l.ids[e]);
                if (idx == kNone) {
                    if (sh.phase2) continue;  // cannot reach the answer any more
                    idx = add(sh, l.ids[e]);
                }
                if (dead_[idx]) continue;
                if (seen_[idx] & bit)
                    return Status::Error(StatusCode::InvalidArgument, "list %d holds id %lld more than once", j + 1,
                                         static_cast<long long>(l.ids[e]));
                sc_[static_cast<size_t>(idx) * m_ + j] = l.scores[e];
                seen_[idx] |= bit;
                if (stamp_of_[idx] != stamp_) {
                    stamp_of_[idx] = stamp_;
                    touched_.push_back(idx);
                }
            }
        }
        for (uint32_t idx : touched_) update_lower(sh, idx);
        return Status::Ok();
    }

    Status add_unlisted(const NraShared& sh, const int64_t* ids, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            if (hash_.find(ids[i]) != kNone)
                return Status::Error(StatusCode::InvalidArgument, "object %lld is in a list, not unlisted",
                                     static_cast<long long>(ids[i]));
            uint32_t idx = add(sh, ids[i]);
            update_lower(sh, idx);
        }
        return Status::Ok();
    }

    // The stopping rule at the current positions (sets sh.phase2).
    void check(NraShared& sh, NraProgress& p) {
        p = NraProgress();
        bool all_ex = sh.all_exhausted();
        if (heap_.size() < k_) {
            p.need_unlisted = all_ex;
            return;
        }
        const uint32_t kth = heap_[0];  // the worst of the k best
        double wk = w_[kth];
        int64_t idk = id_[kth];
        if (!(wk > sh.threshold())) {
            p.need_unlisted = all_ex;
            return;
        }
        sh.phase2 = true;
        double b[kMaxNraLists];
        sh.bounds(b);
        const uint32_t ex = sh.exhausted_mask(), full = sh.full_mask();
        bool blocked = false;
        double v[kMaxNraLists];
        for (size_t a = 0; a < alive_.size();) {
            uint32_t idx = alive_[a];
            if (pos_[idx] != kNone) {
                ++a;
                continue;
            }
            const double* s = &sc_[static_cast<size_t>(idx) * m_];
            for (int j = 0; j < m_; ++j) v[j] = (seen_[idx] >> j & 1u) ? s[j] : b[j];
            double ub = nra_sum(v, m_);
            if (ub < wk) {  // can never reach the answer again: B only falls, W_k only rises
                dead_[idx] = 1;
                alive_[a] = alive_.back();
                alive_.pop_back();
                continue;
            }
            bool exact = (seen_[idx] | ex) == full;
            if (!(ub == wk && exact && id_[idx] > idk)) blocked = true;
            ++a;
        }
        p.done = !blocked;
    }

    void winners(int64_t* ids, size_t cap, size_t& n) const {
        std::vector<uint32_t> best(heap_);
        std::sort(best.begin(), best.end(), [&](uint32_t a, uint32_t b) { return worse(b, a); });
        n = std::min(cap, best.size());
        for (size_t i = 0; i < n; ++i) ids[i] = id_[best[i]];
    }

    // Takes over candidates from the GPU engine.
    Status import(const NraShared& sh, const std::vector<int64_t>& ids, const std::vector<uint32_t>& seen,
                  const std::vector<double>& scores) {
        for (size_t i = 0; i < ids.size(); ++i) {
            uint32_t idx = add(sh, ids[i]);
            seen_[idx] = seen[i];
            std::copy(scores.begin() + static_cast<std::ptrdiff_t>(i * m_),
                      scores.begin() + static_cast<std::ptrdiff_t>((i + 1) * m_), sc_.begin() + idx * m_);
            update_lower(sh, idx);
        }
        return Status::Ok();
    }

private:
    uint32_t add(const NraShared& sh, int64_t id) {
        uint32_t idx = static_cast<uint32_t>(id_.size());
        id_.push_back(id);
        seen_.push_back(0);
        sc_.resize(sc_.size() + m_, 0.0);
        w_.push_back(-std::numeric_limits<double>::infinity());
        pos_.push_back(kNone);
        dead_.push_back(0);
        stamp_of_.push_back(0);
        alive_.push_back(idx);
        hash_.insert(id, idx);
        return idx;
    }

    // a ranks after b under (W DESC, id ASC)
    bool worse(uint32_t a, uint32_t b) const { return w_[a] < w_[b] || (w_[a] == w_[b] && id_[a] > id_[b]); }

    void heap_set(size_t at, uint32_t idx) {
        heap_[at] = idx;
        pos_[idx] = static_cast<uint32_t>(at);
    }
    void sift_up(size_t at) {
        uint32_t idx = heap_[at];
        while (at > 0) {
            size_t parent = (at - 1) / 2;
            if (!worse(idx, heap_[parent])) break;
            heap_set(at, heap_[parent]);
            at = parent;
        }
        heap_set(at, idx);
    }
    void sift_down(size_t at) {
        uint32_t idx = heap_[at];
        const size_t n = heap_.size();
        for (;;) {
            size_t c = 2 * at + 1;
            if (c >= n) break;
            if (c + 1 < n && worse(heap_[c + 1], heap_[c])) ++c;
            if (!worse(heap_[c], idx)) break;
            heap_set(at, heap_[c]);
            at = c;
        }
        heap_set(at, idx);
    }

    // Recomputes W of idx and keeps heap_ = the k best candidates by (W DESC,
    // id ASC), the worst of them at the root. W only rises, so a member only
    // moves away from the root, and a non-member enters by replacing the root.
    void update_lower(const NraShared& sh, uint32_t idx) {
        double v[kMaxNraLists];
        const double* s = &sc_[static_cast<size_t>(idx) * m_];
        for (int j = 0; j < m_; ++j) v[j] = (seen_[idx] >> j & 1u) ? s[j] : sh.min[j];
        w_[idx] = nra_sum(v, m_);
        if (pos_[idx] != kNone) {
            sift_down(pos_[idx]);
        } else if (heap_.size() < k_) {
            heap_.push_back(idx);
            sift_up(heap_.size() - 1);
        } else if (worse(heap_[0], idx)) {
            pos_[heap_[0]] = kNone;
            heap_set(0, idx);
            sift_down(0);
        }
    }

    int m_;
    size_t k_;
    IdHash hash_;
    std::vector<int64_t> id_;
    std::vector<uint32_t> seen_;
    std::vector<double> sc_;  // row-major candidates x m
    std::vector<double> w_;
    std::vector<uint8_t> dead_;
    std::vector<uint32_t> pos_;  // position in heap_, kNone when not among the k best
    std::vector<uint32_t> stamp_of_;
    uint32_t stamp_ = 0;
    std::vector<uint32_t> touched_;
    std::vector<uint32_t> alive_;  // candidates not yet ruled out (checked in phase 2)
    std::vector<uint32_t> heap_;   // the k best by (W DESC, id ASC), worst at the root
};

struct Nra {
    NraShared sh;
    Device device = Device::Cpu;
    std::unique_ptr<NraCpu> cpu;
#ifdef APPROX_WITH_CUDA
    detail::NraGpu* gpu = nullptr;
#endif
    ~Nra() {
#ifdef APPROX_WITH_CUDA
        if (gpu) detail::nra_gpu_destroy(gpu);
#endif
    }
};

namespace {

// Validates a round's entries and advances the lists' positions.
Status nra_advance(NraShared& sh, const NraList* lists) {
    for (int j = 0; j < sh.m; ++j) {
        const NraList& l = lists[j];
        if (l.n > 0 && (l.ids == nullptr || l.scores == nullptr))
            return Status::Error(StatusCode::InvalidArgument, "list %d: entries without data", j + 1);
        if (sh.exhausted[j] && l.n > 0)
            return Status::Error(StatusCode::InvalidArgument, "list %d: entries after its end", j + 1);
        double prev = sh.depth[j] > 0 ? sh.last[j] : std::numeric_limits<double>::infinity();
        for (size_t e = 0; e < l.n; ++e) {
            double s = l.scores[e];
            if (!(s <= prev) || !(s >= sh.min[j]) || std::isinf(s))
                return Status::Error(StatusCode::InvalidArgument,
                                     "list %d: score %g at depth %lld breaks the descending order, the list's "
                                     "minimum %g or finiteness",
                                     j + 1, s, static_cast<long long>(sh.depth[j] + static_cast<int64_t>(e) + 1),
                                     sh.min[j]);
            prev = s;
        }
    }
    for (int j = 0; j < sh.m; ++j) {
        const NraList& l = lists[j];
        if (l.n > 0) sh.last[j] = l.scores[l.n - 1];
        sh.depth[j] += static_cast<int64_t>(l.n);
        if (l.exhausted) sh.exhausted[j] = true;
    }
    ++sh.rounds;
    return Status::Ok();
}

void add_compute_ms(const ExecContext& ctx, double ms) {
    if (ctx.stats) ctx.stats->ms_compute += ms;
}

#ifdef APPROX_WITH_CUDA
// After a GPU allocation failure under `auto`: move the candidates to the CPU
// engine and go on there.
Status nra_move_to_cpu(Nra* nra, const ExecContext& ctx, const Status& why) {
    std::vector<int64_t> ids;
    std::vector<uint32_t> seen;
    std::vector<double> scores;
    APPROX_TRY(detail::nra_gpu_export(nra->gpu, nra->sh, ids, seen, scores));
    auto cpu = std::make_unique<NraCpu>(nra->sh);
    APPROX_TRY(cpu->import(nra->sh, ids, seen, scores));
    detail::nra_gpu_destroy(nra->gpu);
    nra->gpu = nullptr;
    nra->cpu = std::move(cpu);
    nra->device = Device::Cpu;
    if (ctx.stats) {
        std::snprintf(ctx.stats->notice, sizeof ctx.stats->notice,
                      "GPU allocation failed (%.170s); continued on the CPU", why.message);
        ctx.stats->device = Device::Cpu;
        ctx.stats->cpu_threads = 1;
    }
    return Status::Ok();
}
#endif

}  // namespace

Status nra_create(const NraConfig& config, const ExecContext& ctx, Nra*& out) noexcept {
    out = nullptr;
    if (config.m < 1 || config.m > kMaxNraLists)
        return Status::Error(StatusCode::ProgramLimit, "between 1 and %d lists are supported, not %d", kMaxNraLists,
                             config.m);
    if (config.k < 1) return Status::Error(StatusCode::InvalidArgument, "k must be positive");
    if (config.k > 0x7fffffffLL) return Status::Error(StatusCode::ProgramLimit, "k must be below 2^31");
    for (int j = 0; j < config.m; ++j)
        if (config.min_score == nullptr || !std::isfinite(config.min_score[j]))
            return Status::Error(StatusCode::InvalidArgument, "the minimum of list %d must be finite", j + 1);
    Nra* nra = nullptr;
    Status st = guarded([&] {
        nra = new Nra();
        return Status::Ok();
    });
    if (!st.ok()) return st;
    nra->sh.m = config.m;
    nra->sh.k = config.k;
    for (int j = 0; j < config.m; ++j) nra->sh.min[j] = config.min_score[j];
    st = dispatch(
        ctx, config.rows_hint,
        [&] {
            nra->device = Device::Cpu;
            nra->cpu = std::make_unique<NraCpu>(nra->sh);
            return Status::Ok();
        },
        APPROX_GPU([&] {
            nra->device = Device::Gpu;
            return detail::nra_gpu_create(nra->sh, ctx, nra->gpu);
        }()));
    if (!st.ok()) {
        delete nra;
        return st;
    }
    if (ctx.stats) ctx.stats->rows = 0;
    out = nra;
    return Status::Ok();
}

Status nra_round(Nra* nra, const NraList* lists, const ExecContext& ctx, NraProgress& progress) noexcept {
    progress = NraProgress();
    if (nra == nullptr) return Status::Error(StatusCode::Internal, "no NRA state");
    return guarded([&] {
        Stopwatch sw;
        APPROX_TRY(nra_advance(nra->sh, lists));
        if (ctx.stats)
            for (int j = 0; j < nra->sh.m; ++j) ctx.stats->rows += static_cast<int64_t>(lists[j].n);
#ifdef APPROX_WITH_CUDA
        if (nra->device == Device::Gpu) {
            bool applied = false;
            Status st = detail::nra_gpu_round(nra->gpu, nra->sh, lists, ctx, progress, applied);
            if (st.ok() || st.code != StatusCode::GpuOutOfMemory || ctx.mode != DeviceMode::Auto) {
                add_compute_ms(ctx, sw.ms());
                return st;
            }
            APPROX_TRY(nra_move_to_cpu(nra, ctx, st));
            if (!applied) APPROX_TRY(nra->cpu->apply(nra->sh, lists));
            nra->cpu->check(nra->sh, progress);
            add_compute_ms(ctx, sw.ms());
            return Status::Ok();
        }
#endif
        APPROX_TRY(nra->cpu->apply(nra->sh, lists));
        nra->cpu->check(nra->sh, progress);
        add_compute_ms(ctx, sw.ms());
        return Status::Ok();
    });
}

Status nra_add_unlisted(Nra* nra, const int64_t* ids, size_t n, const ExecContext& ctx) noexcept {
    if (nra == nullptr) return Status::Error(StatusCode::Internal, "no NRA state");
    if (!nra->sh.all_exhausted())
        return Status::Error(StatusCode::Internal, "unlisted objects are only known once every list is exhausted");
    return guarded([&] {
        Stopwatch sw;
#ifdef APPROX_WITH_CUDA
        if (nra->device == Device::Gpu) {
            Status st = detail::nra_gpu_add_unlisted(nra->gpu, nra->sh, ids, n, ctx);
            if (st.ok() || st.code != StatusCode::GpuOutOfMemory || ctx.mode != DeviceMode::Auto) {
                add_compute_ms(ctx, sw.ms());
                return st;
            }
            // The device state is unchanged when an allocation fails before the insert.
            APPROX_TRY(nra_move_to_cpu(nra, ctx, st));
        }
#endif
        APPROX_TRY(nra->cpu->add_unlisted(nra->sh, ids, n));
        add_compute_ms(ctx, sw.ms());
        return Status::Ok();
    });
}

Status nra_winners(Nra* nra, const ExecContext& ctx, int64_t* ids, size_t cap, size_t& n) noexcept {
    n = 0;
    if (nra == nullptr) return Status::Error(StatusCode::Internal, "no NRA state");
    return guarded([&] {
        Stopwatch sw;
#ifdef APPROX_WITH_CUDA
        if (nra->device == Device::Gpu) {
            Status st = detail::nra_gpu_winners(nra->gpu, nra->sh, ctx, ids, cap, n);
            if (st.ok() || st.code != StatusCode::GpuOutOfMemory || ctx.mode != DeviceMode::Auto) {
                add_compute_ms(ctx, sw.ms());
                return st;
            }
            APPROX_TRY(nra_move_to_cpu(nra, ctx, st));
        }
#endif
        nra->cpu->winners(ids, cap, n);
        add_compute_ms(ctx, sw.ms());
        return Status::Ok();
    });
}

void nra_destroy(Nra* nra) noexcept { delete nra; }

NraInfo nra_info(const Nra* nra) noexcept {
    NraInfo info;
    if (nra == nullptr) return info;
    info.device = nra->device;
    info.rounds = nra->sh.rounds;
    info.phase2 = nra->sh.phase2;
    for (int j = 0; j < nra->sh.m; ++j) info.depth[j] = nra->sh.depth[j];
#ifdef APPROX_WITH_CUDA
    if (nra->device == Device::Gpu) {
        info.candidates = detail::nra_gpu_candidates(nra->gpu);
        return info;
    }
#endif
    info.candidates = nra->cpu ? static_cast<int64_t>(nra->cpu->candidates()) : 0;
    return info;
}

}  // namespace approx::topk
