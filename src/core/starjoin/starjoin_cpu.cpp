// The star-join engine on the CPU (starjoin.hpp): key maps per dimension
// (dense array or open addressing), then the fact passes over chunks of rows
// on ctx.cpu_threads threads, each with its own state merged at the end:
// 1. domains of the group parts (and the first error), 2. each row's group,
// 3. n / sum / nonzero per cell, 4. central sums about the cells' means.
// The per-row logic is starjoin_internal.hpp's, the GPU's too.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/hash_mix.hpp"
#include "core/starjoin/starjoin_internal.hpp"

namespace approx::starjoin {

namespace {

constexpr int64_t kChunk = 1 << 15;
constexpr uint64_t kReject = ~uint64_t(0);

size_t chunks(int64_t rows) { return static_cast<size_t>((rows + kChunk - 1) / kChunk); }

// key -> dimension row.
struct DimMap {
    bool dense = true;
    int64_t min = 0;
    std::vector<int32_t> slot;  // dense: row of key min + i, or -1
    std::vector<int64_t> hkeys;  // open addressing (linear probing)
    std::vector<int32_t> hrows;  // -1: empty
    uint64_t mask = 0;
    std::vector<int32_t> status;  // per dimension row
    std::vector<Val> vals;        // per dimension row, n_out values

    int64_t lookup(int64_t k) const {
        if (dense) {
            uint64_t i = static_cast<uint64_t>(k) - static_cast<uint64_t>(min);
            return i < slot.size() ? slot[i] : -1;
        }
        for (uint64_t h = mix64(static_cast<uint64_t>(k)) & mask;; h = (h + 1) & mask) {
            if (hrows[h] < 0) return -1;
            if (hkeys[h] == k) return hrows[h];
        }
    }
    // false: k is already there
    bool insert(int64_t k, int32_t row) {
        if (dense) {
            int32_t& s = slot[static_cast<uint64_t>(k) - static_cast<uint64_t>(min)];
            if (s >= 0) return false;
            s = row;
            return true;
        }
        for (uint64_t h = mix64(static_cast<uint64_t>(k)) & mask;; h = (h + 1) & mask) {
            if (hrows[h] < 0) {
                hkeys[h] = k;
                hrows[h] = row;
                return true;
            }
            if (hkeys[h] == k) return false;
        }
    }
};

struct Probe {
    const DimMap* maps;
    int64_t operator()(int32_t d, int64_t k) const { return maps[d].lookup(k); }
};

std::vector<ColumnView> views(const Table& t) {
    std::vector<ColumnView> v(static_cast<size_t>(t.n_columns));
    for (int32_t c = 0; c < t.n_columns; ++c) v[static_cast<size_t>(c)] = {t.columns[c].data, t.columns[c].nulls, t.columns[c].type};
    return v;
}

void keep_first(std::atomic<uint64_t>& first, uint64_t word) {
    uint64_t cur = first.load();
    while (word < cur && !first.compare_exchange_weak(cur, word)) {
    }
}

Status build_map(const Plan& plan, const DimensionPlan& dp, const Table& t, const ExecContext& ctx, int32_t d,
                 DimMap& m, DimensionInfo& info) {
    const std::vector<ColumnView> cols = views(t);
    const int64_t n = t.rows;
    if (n > INT32_MAX) return Status::Error(StatusCode::ProgramLimit, "dimension %d: more than 2^31 rows", d);
    const size_t nout = static_cast<size_t>(dp.n_outputs);
    m.status.assign(static_cast<size_t>(n), kFiltered);
    m.vals.resize(static_cast<size_t>(n) * nout);
    std::atomic<uint64_t> first{kNoError};
    std::atomic<int64_t> passing{0};
    APPROX_TRY(parallel_for(ctx, chunks(n), [&](size_t c, size_t) {
        const int64_t lo = static_cast<int64_t>(c) * kChunk, hi = std::min(n, lo + kChunk);
        int64_t pass_n = 0;
        for (int64_t r = lo; r < hi; ++r) {
            RowEnv env{cols.data(), r, nullptr};
            bool pass;
            int32_t e = eval_filter(plan.code.data() + dp.filter.first, dp.filter.length, plan.pool.data(), env, pass);
            if (e != kEvalOk) {
                keep_first(first, error_word(r, e));
                break;
            }
            if (!pass) continue;
            int32_t st = kEvalOk;
            for (size_t o = 0; o < nout && st == kEvalOk; ++o)
                st = eval(plan.code.data() + dp.outputs[o].first, dp.outputs[o].length, plan.pool.data(), env,
                          m.vals[static_cast<size_t>(r) * nout + o]);
            m.status[static_cast<size_t>(r)] = st;
            ++pass_n;
        }
        passing += pass_n;
        return Status::Ok();
    }));
    char where[48];
    std::snprintf(where, sizeof where, "dimension %d", d);
    APPROX_TRY(error_word_status(first.load(), where));
    int64_t kmin = kInt64Max, kmax = kInt64Min;
    const ColumnView& key = cols[static_cast<size_t>(dp.key_column)];
    for (int64_t r = 0; r < n; ++r) {
        Val k = load_column(key, r);
        if (k.null) continue;
        kmin = std::min(kmin, k.i);
        kmax = std::max(kmax, k.i);
    }
    m.dense = dense_keys(kmin, kmax, n);
    m.min = kmin;
    if (m.dense) {
        m.slot.assign(kmax >= kmin ? static_cast<size_t>(static_cast<uint64_t>(kmax) - static_cast<uint64_t>(kmin) + 1) : 0,
                      -1);
    } else {
        size_t cap = 16;
        while (cap < static_cast<size_t>(2 * n)) cap <<= 1;
        m.hkeys.assign(cap, 0);
        m.hrows.assign(cap, -1);
        m.mask = cap - 1;
    }
    for (int64_t r = 0; r < n; ++r) {
        Val k = load_column(key, r);
        if (!k.null && !m.insert(k.i, static_cast<int32_t>(r)))
            return Status::Error(StatusCode::InvalidArgument, "dimension %d: key %lld is not unique", d,
                                 static_cast<long long>(k.i));
    }
    info.rows = n;
    info.passing = passing.load();
    info.dense = m.dense;
    info.key_min = kmax >= kmin ? kmin : 0;
    info.key_max = kmax >= kmin ? kmax : 0;
    return Status::Ok();
}

// Runs body(row, dv) over the fact rows on the threads, per worker.
template <class Body>
Status each_chunk(const ExecContext& ctx, int64_t n, Body&& body) {
    return parallel_for(ctx, chunks(n), [&](size_t c, size_t w) {
        const int64_t lo = static_cast<int64_t>(c) * kChunk;
        return body(lo, std::min(n, lo + kChunk), w);
    });
}

}  // namespace

Status cpu_run(const Plan& plan, const Inputs& in, const Prepared& prep, const ExecContext& ctx, Result& out) {
    std::vector<DimMap> maps(static_cast<size_t>(plan.n_dims));
    for (int32_t d = 0; d < plan.n_dims; ++d)
        APPROX_TRY(build_map(plan, plan.dims[d], in.dims[d], ctx, d, maps[static_cast<size_t>(d)], out.dims[d]));
    if (ctx.cancelled()) return cancelled_status();
    const std::vector<ColumnView> cols = views(in.fact);
    FactView v;
    fill_fact_view(plan, prep, plan.code.data(), plan.pool.data(), cols.data(),
                   [&](int32_t d, const int32_t*& status, const Val*& vals) {
                       status = maps[static_cast<size_t>(d)].status.data();
                       vals = maps[static_cast<size_t>(d)].vals.data();
                   },
                   v);
    const Probe probe{maps.data()};
    const int64_t n = in.fact.rows;
    const int32_t P = plan.n_group_parts, S = plan.n_strata, M = plan.n_measures;

    // 1. Domains of the group parts over the joined rows; the first error.
    std::atomic<uint64_t> first{kNoError};
    std::mutex lock;
    PartDomain dom[kMaxGroupParts];
    int64_t joined = 0;
    APPROX_TRY(each_chunk(ctx, n, [&](int64_t lo, int64_t hi, size_t) {
        PartDomain local[kMaxGroupParts];
        int64_t j = 0;
        for (int64_t r = lo; r < hi; ++r) {
            const Val* dv[kMaxDims];
            Val parts[kMaxGroupParts];
            bool pass;
            int32_t s = 0, e = join_row(v, r, probe, dv, pass);
            if (e == kEvalOk && pass) e = row_parts(v, r, dv, parts, s);
            if (e != kEvalOk) {
                keep_first(first, error_word(r, e));
                break;
            }
            if (!pass) continue;
            ++j;
            for (int32_t p = 0; p < P; ++p) {
                if (parts[p].null) {
                    local[p].has_null = 1;
                } else {
                    local[p].min = std::min(local[p].min, parts[p].i);
                    local[p].max = std::max(local[p].max, parts[p].i);
                }
            }
        }
        std::lock_guard<std::mutex> g(lock);
        joined += j;
        for (int32_t p = 0; p < P; ++p) {
            dom[p].min = std::min(dom[p].min, local[p].min);
            dom[p].max = std::max(dom[p].max, local[p].max);
            dom[p].has_null |= local[p].has_null;
        }
        return Status::Ok();
    }));
    APPROX_TRY(error_word_status(first.load(), "fact"));
    if (ctx.cancelled()) return cancelled_status();
    GroupLayout g;
    APPROX_TRY(choose_layout(plan, dom, joined, g));

    // 2. Each row's packed key, then its group.
    std::vector<uint64_t> gid(static_cast<size_t>(n), kReject);
    APPROX_TRY(each_chunk(ctx, n, [&](int64_t lo, int64_t hi, size_t) {
        for (int64_t r = lo; r < hi; ++r) {
            const Val* dv[kMaxDims];
            Val parts[kMaxGroupParts];
            bool pass;
            int32_t s = 0;
            join_row(v, r, probe, dv, pass);
            if (!pass) continue;
            row_parts(v, r, dv, parts, s);
            gid[static_cast<size_t>(r)] = pack_key(g, parts);
        }
        return Status::Ok();
    }));
    std::vector<uint64_t> keys;  // the groups' packed keys (sorted keys: not dense)
    uint64_t groups = g.product;
    if (!g.dense) {
        keys.reserve(static_cast<size_t>(joined));
        for (uint64_t k : gid)
            if (k != kReject) keys.push_back(k);
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        groups = keys.size();
        APPROX_TRY(check_budget(plan, groups, "distinct"));
        APPROX_TRY(each_chunk(ctx, n, [&](int64_t lo, int64_t hi, size_t) {
            for (int64_t r = lo; r < hi; ++r) {
                uint64_t& k = gid[static_cast<size_t>(r)];
                if (k != kReject) k = static_cast<uint64_t>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
            }
            return Status::Ok();
        }));
    }
    if (ctx.cancelled()) return cancelled_status();

    // 3. and 4.: per worker state (as many workers as the budget holds copies).
    const uint64_t one = state_bytes(plan, groups);
    ExecContext wctx = ctx;
    const uint64_t copies = one == 0 ? 1 : static_cast<uint64_t>(plan.state_budget) / one;
    wctx.cpu_threads = static_cast<int>(std::max<uint64_t>(1, std::min<uint64_t>(copies, std::max(1, ctx.cpu_threads))));
    const size_t W = static_cast<size_t>(std::max(1, wctx.cpu_threads));
    const size_t cells = static_cast<size_t>(groups) * static_cast<size_t>(S);
    std::vector<std::vector<Acc>> acc(W);
    std::vector<std::vector<int64_t>> rows(W);
    for (size_t w = 0; w < W; ++w) acc[w].assign(cells * static_cast<size_t>(M), Acc{0, 0, 0, 0, 0, 0});
    rows[0].assign(cells, 0);
    std::vector<double> mean;
    for (int pass = 0; pass < 2; ++pass) {
        APPROX_TRY(each_chunk(wctx, n, [&](int64_t lo, int64_t hi, size_t w) {
            Acc* a = acc[w].data();
            for (int64_t r = lo; r < hi; ++r) {
                const uint64_t k = gid[static_cast<size_t>(r)];
                if (k == kReject) continue;
                const Val* dv[kMaxDims];
                const size_t cell = static_cast<size_t>(grouped_cell(v, r, probe, k, dv));
                for (int32_t m = 0; m < M; ++m) {
                    Val y;
                    int32_t e = measure_value(v, m, r, dv, y);
                    if (e != kEvalOk) {
                        keep_first(first, error_word(r, e));
                        return Status::Ok();
                    }
                    if (y.null) continue;
                    Acc& c = a[cell * static_cast<size_t>(M) + static_cast<size_t>(m)];
                    if (pass == 0) {
                        c.n += 1;
                        c.sum += y.f;
                        c.nonzero += y.f != 0 ? 1 : 0;
                    } else {
                        const double dlt = y.f - mean[cell * static_cast<size_t>(M) + static_cast<size_t>(m)], d2 = dlt * dlt;
                        c.m2 += d2;
                        c.m3 += d2 * dlt;
                        c.m4 += d2 * d2;
                    }
                }
            }
            return Status::Ok();
        }));
        APPROX_TRY(error_word_status(first.load(), "fact"));
        if (ctx.cancelled()) return cancelled_status();
        for (size_t w = 1; w < W; ++w)
            for (size_t i = 0; i < acc[0].size(); ++i) {
                Acc& t = acc[0][i];
                const Acc& o = acc[w][i];
                t.n += o.n, t.sum += o.sum, t.nonzero += o.nonzero, t.m2 += o.m2, t.m3 += o.m3, t.m4 += o.m4;
            }
        if (pass == 0) {
            mean.resize(acc[0].size());
            for (size_t i = 0; i < mean.size(); ++i) mean[i] = acc[0][i].n > 0 ? acc[0][i].sum / acc[0][i].n : 0;
            for (size_t w = 1; w < W; ++w) std::fill(acc[w].begin(), acc[w].end(), Acc{0, 0, 0, 0, 0, 0});
        }
    }
    // Joined rows per (group, stratum): one sequential sweep.
    for (int64_t r = 0; r < n; ++r) {
        const uint64_t k = gid[static_cast<size_t>(r)];
        if (k == kReject) continue;
        int32_t s = 0;
        if (plan.stratum_column >= 0) s = static_cast<int32_t>(load_column(cols[static_cast<size_t>(plan.stratum_column)], r).i);
        ++rows[0][static_cast<size_t>(k) * static_cast<size_t>(S) + static_cast<size_t>(s)];
    }
    finish_groups(plan, g, g.dense ? nullptr : keys.data(), groups, rows[0], acc[0], out);
    return Status::Ok();
}

}  // namespace approx::starjoin
