// Transitive closure, CPU engine and the pieces both engines share: id
// mapping, Tarjan's condensation, the blocked bit-matrix closure, counting,
// row-wise output, breadth-first reachability (see closure.hpp).
#include "closure.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "bitslice.hpp"
#include "closure_internal.hpp"
#include "service.hpp"

namespace approx::closure {

namespace {

inline int64_t words_for(int64_t bits) { return (bits + 63) / 64; }
inline bool test_bit(const uint64_t* row, int64_t j) { return (row[j >> 6] >> (j & 63)) & 1; }
inline void set_bit(uint64_t* row, int64_t j) { row[j >> 6] |= 1ULL << (j & 63); }

}  // namespace

// ---- shared helpers -----------------------------------------------------------------------

Status check_vertices(int64_t vertices) {
    if (vertices > kMaxVertices)
        return Status::Error(StatusCode::ProgramLimit, "the graph has %lld vertices; at most %lld are supported",
                             static_cast<long long>(vertices), static_cast<long long>(kMaxVertices));
    return Status::Ok();
}

Status check_matrix_bytes(int64_t items, int64_t rows, int64_t words, bool condensed, const Options& opt) {
    // rows, words <= 2^31: the product fits in int64 and so does * 8.
    double bytes = static_cast<double>(rows) * static_cast<double>(words) * 8.0;
    if (bytes <= static_cast<double>(opt.max_bytes)) return Status::Ok();
    char human[48] = "";
    if (bytes >= 1024.0 * 1048576.0)
        std::snprintf(human, sizeof human, " (%.1f GB)", bytes / (1024.0 * 1048576.0));
    else if (bytes >= 1048576.0)
        std::snprintf(human, sizeof human, " (%.1f MB)", bytes / 1048576.0);
    return Status::Error(StatusCode::ProgramLimit,
                         "the closure bit matrix of %lld %s needs %.0f bytes%s, more than "
                         "approx_gpu.closure_max_memory (%lld bytes)",
                         static_cast<long long>(items), condensed ? "strongly connected components" : "vertices", bytes,
                         human, static_cast<long long>(opt.max_bytes));
}

void add_stats(const ExecContext& ctx, int64_t vertices, int64_t comps, int64_t dag_edges, bool condensed,
               int64_t matrix_bytes) {
    if (!ctx.stats) return;
    ctx.stats->add("vertices", static_cast<double>(vertices));
    ctx.stats->add("components", static_cast<double>(comps));
    ctx.stats->add("condensed", condensed ? 1 : 0);
    if (condensed) ctx.stats->add("dag_edges", static_cast<double>(dag_edges));
    ctx.stats->add("matrix_bytes", static_cast<double>(matrix_bytes));
}

Status map_ids_cpu(const int64_t* src, const int64_t* dst, size_t n, Mapped& out) {
    out.ids.resize(2 * n);
    std::memcpy(out.ids.data(), src, n * sizeof(int64_t));
    std::memcpy(out.ids.data() + n, dst, n * sizeof(int64_t));
    std::sort(out.ids.begin(), out.ids.end());
    out.ids.erase(std::unique(out.ids.begin(), out.ids.end()), out.ids.end());
    out.ids.shrink_to_fit();
    APPROX_TRY(check_vertices(static_cast<int64_t>(out.ids.size())));
    out.u.resize(n);
    out.v.resize(n);
    auto index = [&](int64_t id) {
        return static_cast<int32_t>(std::lower_bound(out.ids.begin(), out.ids.end(), id) - out.ids.begin());
    };
    for (size_t e = 0; e < n; ++e) {
        out.u[e] = index(src[e]);
        out.v[e] = index(dst[e]);
    }
    return Status::Ok();
}

void identity_groups(int64_t vertices, std::vector<int32_t>& comp_start, std::vector<int32_t>& members) {
    comp_start.resize(static_cast<size_t>(vertices) + 1);
    members.resize(static_cast<size_t>(vertices));
    for (int64_t i = 0; i <= vertices; ++i) comp_start[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < vertices; ++i) members[i] = static_cast<int32_t>(i);
}

// Tarjan's strongly connected components, iteratively (no recursion depth
// limit), then the DAG of distinct component edges and its levels.
Status condense(int64_t vertices, const int32_t* u, const int32_t* v, size_t n_edges, const ExecContext& ctx,
                Dag& out) {
    const int64_t V = vertices;
    out.vertices = V;
    // CSR of the graph
    std::vector<int64_t> off(V + 1, 0);
    for (size_t e = 0; e < n_edges; ++e) ++off[u[e] + 1];
    for (int64_t i = 0; i < V; ++i) off[i + 1] += off[i];
    std::vector<int32_t> adj(n_edges);
    {
        std::vector<int64_t> pos(off.begin(), off.end() - 1);
        for (size_t e = 0; e < n_edges; ++e) adj[pos[u[e]]++] = v[e];
    }
    if (ctx.cancelled()) return cancelled_status();

    std::vector<int32_t> index(V, -1), low(V, 0);
    std::vector<uint8_t> on_stack(V, 0);
    std::vector<int32_t> stack;
    struct Frame {
        int32_t vertex;
        int64_t pos;
    };
    std::vector<Frame> calls;
    out.comp.assign(V, -1);
    int32_t counter = 0;
    int32_t comps = 0;
    for (int64_t s = 0; s < V; ++s) {
        if (index[s] != -1) continue;
        if ((s & 4095) == 0 && ctx.cancelled()) return cancelled_status();
        index[s] = low[s] = counter++;
        stack.push_back(static_cast<int32_t>(s));
        on_stack[s] = 1;
        calls.push_back(Frame{static_cast<int32_t>(s), off[s]});
        while (!calls.empty()) {
            Frame& f = calls.back();
            int32_t x = f.vertex;
            if (f.pos < off[x + 1]) {
                int32_t y = adj[f.pos++];
                if (index[y] == -1) {
                    index[y] = low[y] = counter++;
                    stack.push_back(y);
                    on_stack[y] = 1;
                    calls.push_back(Frame{y, off[y]});  // invalidates f
                } else if (on_stack[y]) {
                    low[x] = std::min(low[x], index[y]);
                }
                continue;
            }
            calls.pop_back();
            if (low[x] == index[x]) {
                int32_t y;
                do {
                    y = stack.back();
                    stack.pop_back();
                    on_stack[y] = 0;
                    out.comp[y] = comps;
                } while (y != x);
                ++comps;
            }
            if (!calls.empty()) {
                int32_t p = calls.back().vertex;
                low[p] = std::min(low[p], low[x]);
            }
        }
    }
    out.comps = comps;
    const int64_t C = comps;

    // members grouped by component (ascending vertex index within one)
    out.comp_start.assign(C + 1, 0);
    for (int64_t x = 0; x < V; ++x) ++out.comp_start[out.comp[x] + 1];
    for (int64_t c = 0; c < C; ++c) out.comp_start[c + 1] += out.comp_start[c];
    out.members.resize(V);
    {
        std::vector<int32_t> pos(out.comp_start.begin(), out.comp_start.end() - 1);
        for (int64_t x = 0; x < V; ++x) out.members[pos[out.comp[x]]++] = static_cast<int32_t>(x);
    }
    // cyclic: more than one member, or a self-loop
    out.cyclic.assign(C, 0);
    for (int64_t c = 0; c < C; ++c)
        if (out.comp_start[c + 1] - out.comp_start[c] > 1) out.cyclic[c] = 1;
    for (size_t e = 0; e < n_edges; ++e)
        if (u[e] == v[e]) out.cyclic[out.comp[u[e]]] = 1;
    if (ctx.cancelled()) return cancelled_status();

    // distinct edges between components
    std::vector<uint64_t> keys;
    keys.reserve(n_edges / 2 + 16);
    for (size_t e = 0; e < n_edges; ++e) {
        uint32_t a = static_cast<uint32_t>(out.comp[u[e]]), b = static_cast<uint32_t>(out.comp[v[e]]);
        if (a != b) keys.push_back((static_cast<uint64_t>(a) << 32) | b);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    out.off.assign(C + 1, 0);
    out.succ.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        ++out.off[(keys[i] >> 32) + 1];
        out.succ[i] = static_cast<int32_t>(keys[i] & 0xffffffffu);
    }
    for (int64_t c = 0; c < C; ++c) out.off[c + 1] += out.off[c];

    // levels: successors have lower component ids, so one ascending pass
    std::vector<int32_t> level(C, 0);
    int32_t levels = 0;
    for (int64_t c = 0; c < C; ++c) {
        int32_t l = 0;
        for (int64_t e = out.off[c]; e < out.off[c + 1]; ++e) l = std::max(l, level[out.succ[e]] + 1);
        level[c] = l;
        levels = std::max(levels, l + 1);
    }
    out.level_start.assign(static_cast<size_t>(levels) + 1, 0);
    for (int64_t c = 0; c < C; ++c) ++out.level_start[level[c] + 1];
    for (int32_t l = 0; l < levels; ++l) out.level_start[l + 1] += out.level_start[l];
    out.by_level.resize(C);
    {
        std::vector<int32_t> pos(out.level_start.begin(), out.level_start.end() - 1);
        for (int64_t c = 0; c < C; ++c) out.by_level[pos[level[c]]++] = static_cast<int32_t>(c);
    }
    return Status::Ok();
}

Status count_matrix_pairs(const uint64_t* bits, int64_t rows, int64_t ld, const int32_t* comp_start,
                          const ExecContext& ctx, int64_t& pairs) {
    const int64_t W = words_for(rows);
    const int64_t chunk = 1024;
    size_t tasks = static_cast<size_t>((rows + chunk - 1) / chunk);
    std::vector<int64_t> partial(tasks, 0);
    APPROX_TRY(parallel_for(ctx, tasks, [&](size_t t, size_t) {
        int64_t r0 = static_cast<int64_t>(t) * chunk, r1 = std::min(rows, r0 + chunk);
        int64_t sum = 0;
        for (int64_t r = r0; r < r1; ++r) {
            const uint64_t* row = bits + r * ld;
            if (comp_start == nullptr) {
                for (int64_t w = 0; w < W; ++w) sum += __builtin_popcountll(row[w]);
                continue;
            }
            int64_t s = 0;
            for (int64_t w = 0; w < W; ++w)
                for (uint64_t x = row[w]; x; x &= x - 1) {
                    int64_t b = w * 64 + __builtin_ctzll(x);
                    s += comp_start[b + 1] - comp_start[b];
                }
            sum += s * (comp_start[r + 1] - comp_start[r]);
        }
        partial[t] = sum;
        return Status::Ok();
    }));
    pairs = 0;
    for (int64_t p : partial) pairs += p;
    return Status::Ok();
}

// ---- the blocked bit-matrix closure on the CPU ------------------------------------------

namespace {

// rows [i0, i1) of the matrix: for every k in [k0, k1) with bit k set in the
// row, OR row k's words [w0, w1) into it.
inline void or_rows(uint64_t* bits, int64_t ld, int64_t i0, int64_t i1, int64_t k0, int64_t k1, int64_t w0,
                    int64_t w1) {
    for (int64_t i = i0; i < i1; ++i) {
        uint64_t* __restrict ri = bits + i * ld;
        for (int64_t k = k0; k < k1; ++k) {
            if (!test_bit(ri, k)) continue;
            const uint64_t* __restrict rk = bits + k * ld;
            for (int64_t w = w0; w < w1; ++w) ri[w] |= rk[w];
        }
    }
}

// Blocked Floyd-Warshall over k-tiles K of kTile vertices. After tile K every
// bit (i, j) holds whether a path i -> j exists with inner vertices < K's end.
//  1. the diagonal tile D = R[K, K]: Warshall inside it (sequential);
//  2. the row panel R[K, J] |= D . R[K, J] and the column panel
//     R[I, K] |= R[I, K] . D (I, J outside K), in parallel chunks;
//  3. the rest R[I, J] |= R[I, K] . R[K, J], in parallel tiles.
// Updating a panel in place reads rows that may already be updated; since D is
// transitively closed this adds nothing new, so the result is deterministic.
Status close_matrix_cpu(uint64_t* bits, int64_t n, int64_t ld, const ExecContext& ctx) {
    const int64_t W = words_for(n);
    const int64_t kRowChunk = 64, kWordChunk = 64;
    for (int64_t k0 = 0; k0 < n; k0 += kTile) {
        if (ctx.cancelled()) return cancelled_status();
        const int64_t k1 = std::min(n, k0 + kTile);
        const int64_t kw0 = k0 / 64, kw1 = words_for(k1);
        // 1. diagonal tile, in Warshall's order
        for (int64_t k = k0; k < k1; ++k) {
            const uint64_t* rk = bits + k * ld;
            for (int64_t i = k0; i < k1; ++i) {
                uint64_t* ri = bits + i * ld;
                if (test_bit(ri, k))
                    for (int64_t w = kw0; w < kw1; ++w) ri[w] |= rk[w];
            }
        }
        // 2. panels: word chunks of the row panel, row chunks of the column panel
        std::vector<int64_t> word_chunks, row_chunks;  // chunk starts
        for (int64_t w = 0; w < kw0; w += kWordChunk) word_chunks.push_back(w);
        for (int64_t w = kw1; w < W; w += kWordChunk) word_chunks.push_back(w);
        for (int64_t i = 0; i < k0; i += kRowChunk) row_chunks.push_back(i);
        for (int64_t i = k1; i < n; i += kRowChunk) row_chunks.push_back(i);
        auto word_end = [&](int64_t w) { return std::min(w + kWordChunk, w < kw0 ? kw0 : W); };
        auto row_end = [&](int64_t i) { return std::min(i + kRowChunk, i < k0 ? k0 : n); };
        size_t nwc = word_chunks.size(), nrc = row_chunks.size();
        APPROX_TRY(parallel_for(ctx, nwc + nrc, [&](size_t t, size_t) {
            if (t < nwc) {
                int64_t w = word_chunks[t];
                or_rows(bits, ld, k0, k1, k0, k1, w, word_end(w));
            } else {
                int64_t i = row_chunks[t - nwc];
                or_rows(bits, ld, i, row_end(i), k0, k1, kw0, kw1);
            }
            return Status::Ok();
        }));
        // 3. everything else
        APPROX_TRY(parallel_for(ctx, nwc * nrc, [&](size_t t, size_t) {
            int64_t i = row_chunks[t / nwc], w = word_chunks[t % nwc];
            or_rows(bits, ld, i, row_end(i), k0, k1, w, word_end(w));
            return Status::Ok();
        }));
    }
    return Status::Ok();
}

// Rows of the component DAG, sinks first, one level at a time: a row is the
// OR of its successors' rows and their own bits (and its own bit when cyclic).
Status propagate_cpu(const Dag& dag, uint64_t* bits, int64_t ld, const ExecContext& ctx) {
    const int64_t W = words_for(dag.comps);
    int64_t levels = static_cast<int64_t>(dag.level_start.size()) - 1;
    for (int64_t l = 0; l < levels; ++l) {
        if (ctx.cancelled()) return cancelled_status();
        int64_t c0 = dag.level_start[l], c1 = dag.level_start[l + 1];
        const int64_t chunk = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, W));
        size_t tasks = static_cast<size_t>((c1 - c0 + chunk - 1) / chunk);
        auto body = [&](size_t t, size_t) {
            int64_t a0 = c0 + static_cast<int64_t>(t) * chunk, a1 = std::min(c1, a0 + chunk);
            for (int64_t x = a0; x < a1; ++x) {
                int64_t a = dag.by_level[x];
                uint64_t* __restrict row = bits + a * ld;
                for (int64_t e = dag.off[a]; e < dag.off[a + 1]; ++e) {
                    int64_t b = dag.succ[e];
                    const uint64_t* __restrict rb = bits + b * ld;
                    for (int64_t w = 0; w < W; ++w) row[w] |= rb[w];
                    set_bit(row, b);
                }
                if (dag.cyclic[a]) set_bit(row, a);
            }
            return Status::Ok();
        };
        if (tasks == 1) {
            APPROX_TRY(body(0, 0));
        } else {
            APPROX_TRY(parallel_for(ctx, tasks, body));
        }
    }
    return Status::Ok();
}

// The CPU engine for the graph-level calls: a HostResult with the closure.
Status cpu_closure(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& ctx,
                   HostResult& r) {
    Mapped m;
    APPROX_TRY(map_ids_cpu(src, dst, n_edges, m));
    const int64_t V = static_cast<int64_t>(m.ids.size());
    const bool condensed = opt.algorithm != Algorithm::Blocked;
    if (!condensed) {
        const int64_t W = words_for(V);
        APPROX_TRY(check_matrix_bytes(V, V, W, false, opt));
        add_stats(ctx, V, V, 0, false, V * W * 8);
        r.bits.assign(static_cast<size_t>(V * W), 0);
        r.ld = W;
        for (size_t e = 0; e < n_edges; ++e) set_bit(r.bits.data() + m.u[e] * W, m.v[e]);
        APPROX_TRY(close_matrix_cpu(r.bits.data(), V, W, ctx));
        r.comps = V;
        identity_groups(V, r.comp_start, r.members);
        APPROX_TRY(count_matrix_pairs(r.bits.data(), V, W, nullptr, ctx, r.pairs));
    } else {
        Dag dag;
        APPROX_TRY(condense(V, m.u.data(), m.v.data(), n_edges, ctx, dag));
        m.u = std::vector<int32_t>();
        m.v = std::vector<int32_t>();
        const int64_t C = dag.comps, W = words_for(C);
        APPROX_TRY(check_matrix_bytes(C, C, W, true, opt));
        add_stats(ctx, V, C, static_cast<int64_t>(dag.succ.size()), true, C * W * 8);
        if (ctx.stats) ctx.stats->add("dag_levels", static_cast<double>(dag.level_start.size() - 1));
        r.bits.assign(static_cast<size_t>(C * W), 0);
        r.ld = W;
        APPROX_TRY(propagate_cpu(dag, r.bits.data(), W, ctx));
        r.comps = C;
        r.comp_start = std::move(dag.comp_start);
        r.members = std::move(dag.members);
        APPROX_TRY(count_matrix_pairs(r.bits.data(), C, W, dag.trivial() ? nullptr : r.comp_start.data(), ctx,
                                      r.pairs));
    }
    r.ids = std::move(m.ids);
    return Status::Ok();
}

// The STAR engine (Algorithm::Star): WARSHALL-adapt on a STAR machine of
// `device` (bitslice.hpp). The machine's table is column-major (column j holds
// the predecessors of j), so the edges are loaded transposed and the closed
// table is transposed back into the row bit matrix of a HostResult.
Status star_closure(Device device, const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt,
                    const ExecContext& ctx, HostResult& r) {
    Mapped m;
    APPROX_TRY(map_ids_cpu(src, dst, n_edges, m));
    const int64_t V = static_cast<int64_t>(m.ids.size());
    const int64_t W = words_for(V);
    APPROX_TRY(check_matrix_bytes(V, V, W, false, opt));
    add_stats(ctx, V, V, 0, false, V * W * 8);
    std::vector<uint64_t> cols(static_cast<size_t>(V * W), 0);  // column j: bit i = edge i -> j
    for (size_t e = 0; e < n_edges; ++e) set_bit(cols.data() + m.v[e] * W, m.u[e]);
    m.u = std::vector<int32_t>();
    m.v = std::vector<int32_t>();
    {
        std::unique_ptr<bitslice::Machine> machine;
        APPROX_TRY(bitslice::make_machine(device, ctx, machine));
        bitslice::Table t;
        APPROX_TRY(machine->new_table(V, V, t));
        if (t.ld != W)
            return Status::Error(StatusCode::Internal, "STAR table of %lld words per column, not %lld",
                                 static_cast<long long>(t.ld), static_cast<long long>(W));
        APPROX_TRY(machine->load_table(t, cols.data()));
        APPROX_TRY(bitslice::warshall_adapt(*machine, t, ctx));
        APPROX_TRY(machine->store_table(t, cols.data()));
        APPROX_TRY(machine->sync());
    }
    r.bits.assign(static_cast<size_t>(V * W), 0);
    r.ld = W;
    for (int64_t j = 0; j < V; ++j) {
        const uint64_t* col = cols.data() + j * W;
        for (int64_t w = 0; w < W; ++w)
            for (uint64_t x = col[w]; x; x &= x - 1) set_bit(r.bits.data() + (w * 64 + __builtin_ctzll(x)) * W, j);
    }
    r.comps = V;
    identity_groups(V, r.comp_start, r.members);
    APPROX_TRY(count_matrix_pairs(r.bits.data(), V, W, nullptr, ctx, r.pairs));
    r.ids = std::move(m.ids);
    return Status::Ok();
}

Status cpu_reachable(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source, const ExecContext& ctx,
                     int64_t* out, size_t cap, size_t& n) {
    n = 0;
    Mapped m;
    APPROX_TRY(map_ids_cpu(src, dst, n_edges, m));
    const int64_t V = static_cast<int64_t>(m.ids.size());
    auto it = std::lower_bound(m.ids.begin(), m.ids.end(), source);
    if (it == m.ids.end() || *it != source) return Status::Ok();
    const int32_t s = static_cast<int32_t>(it - m.ids.begin());
    std::vector<int64_t> off(V + 1, 0);
    for (size_t e = 0; e < n_edges; ++e) ++off[m.u[e] + 1];
    for (int64_t i = 0; i < V; ++i) off[i + 1] += off[i];
    std::vector<int32_t> adj(n_edges);
    {
        std::vector<int64_t> pos(off.begin(), off.end() - 1);
        for (size_t e = 0; e < n_edges; ++e) adj[pos[m.u[e]]++] = m.v[e];
    }
    std::vector<uint8_t> seen(V, 0);
    std::vector<int32_t> queue;
    queue.reserve(V + 1);
    queue.push_back(s);
    for (size_t head = 0; head < queue.size(); ++head) {
        if ((head & 65535) == 0 && ctx.cancelled()) return cancelled_status();
        int32_t x = queue[head];
        for (int64_t e = off[x]; e < off[x + 1]; ++e) {
            int32_t y = adj[e];
            if (!seen[y]) {
                seen[y] = 1;
                queue.push_back(y);
            }
        }
    }
    for (int64_t x = 0; x < V; ++x) {
        if (!seen[x]) continue;
        if (n == cap) return Status::Error(StatusCode::Internal, "reachable: output buffer too small");
        out[n++] = m.ids[x];
    }
    return Status::Ok();
}

}  // namespace

// ---- public API ----------------------------------------------------------------------------

Status close_matrix(uint64_t* bits, int64_t n, int64_t ld, const ExecContext& ctx) {
    if (n < 0 || ld < words_for(n))
        return Status::Error(StatusCode::InvalidArgument, "close_matrix: %lld rows need at least %lld words per row",
                             static_cast<long long>(n), static_cast<long long>(words_for(n)));
    if (n == 0) return Status::Ok();
    return dispatch(
        ctx, n * 64, [&] { return close_matrix_cpu(bits, n, ld, ctx); },
        APPROX_GPU(gpu::close_matrix(bits, n, ld, ctx)));
}

Status count_pairs(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt,
                   const ExecContext& caller, int64_t& pairs) {
    pairs = 0;
    if (caller.stats) caller.stats->rows = static_cast<int64_t>(n_edges);
    if (n_edges == 0) return Status::Ok();
    ExecContext ctx = caller;
    Status st;
    if (service::try_run(ctx, static_cast<int64_t>(n_edges), st, [&](const ExecContext& c) {
            return count_pairs_in_service(src, dst, n_edges, opt, c, pairs);
        }))
        return st;
    auto cpu = [&]() -> Status {
        HostResult r;
        APPROX_TRY(cpu_closure(src, dst, n_edges, opt, ctx, r));
        pairs = r.pairs;
        return Status::Ok();
    };
    auto star = [&](Device device) -> Status {
        HostResult r;
        APPROX_TRY(star_closure(device, src, dst, n_edges, opt, ctx, r));
        pairs = r.pairs;
        return Status::Ok();
    };
    st = opt.algorithm == Algorithm::Star
             ? dispatch(
                   ctx, static_cast<int64_t>(n_edges), [&] { return star(Device::Cpu); }, APPROX_GPU(star(Device::Gpu)))
             : dispatch(ctx, static_cast<int64_t>(n_edges), cpu,
                        APPROX_GPU(gpu::count_pairs(src, dst, n_edges, opt, ctx, pairs)));
    if (st.ok() && ctx.stats) ctx.stats->add("pairs", static_cast<double>(pairs));
    return st;
}

Status compute(const int64_t* src, const int64_t* dst, size_t n_edges, const Options& opt, const ExecContext& caller,
               Result** out) {
    *out = nullptr;
    if (caller.stats) caller.stats->rows = static_cast<int64_t>(n_edges);
    ExecContext ctx = caller;
    Status st;
    if (n_edges > 0 && service::try_run(ctx, static_cast<int64_t>(n_edges), st, [&](const ExecContext& c) {
            return compute_in_service(src, dst, n_edges, opt, c, out);
        })) {
        if (st.ok() && ctx.stats) ctx.stats->add("pairs", static_cast<double>(result_pairs(*out)));
        return st;
    }
    auto cpu = [&]() -> Status {
        std::unique_ptr<HostResult> r(new HostResult());
        if (n_edges > 0) APPROX_TRY(cpu_closure(src, dst, n_edges, opt, ctx, *r));
        *out = r.release();
        return Status::Ok();
    };
    auto star = [&](Device device) -> Status {
        std::unique_ptr<HostResult> r(new HostResult());
        APPROX_TRY(star_closure(device, src, dst, n_edges, opt, ctx, *r));
        *out = r.release();
        return Status::Ok();
    };
    if (n_edges == 0) return guarded(cpu);
    st = opt.algorithm == Algorithm::Star
             ? dispatch(
                   ctx, static_cast<int64_t>(n_edges), [&] { return star(Device::Cpu); }, APPROX_GPU(star(Device::Gpu)))
             : dispatch(ctx, static_cast<int64_t>(n_edges), cpu,
                        APPROX_GPU(gpu::compute(src, dst, n_edges, opt, ctx, out)));
    if (st.ok() && ctx.stats) ctx.stats->add("pairs", static_cast<double>(result_pairs(*out)));
    return st;
}

int64_t result_pairs(const Result* r) { return r ? r->pairs : 0; }
int64_t result_vertices(const Result* r) { return r ? static_cast<int64_t>(r->ids.size()) : 0; }

Status next_pairs(Result* r, int64_t* src_out, int64_t* dst_out, size_t cap, size_t& n) {
    n = 0;
    return guarded([&]() -> Status {
        const int64_t W = words_for(r->comps);
        while (n < cap && r->cur_comp < r->comps) {
            const int64_t a = r->cur_comp;
            if (!r->have_targets) {
                if (r->fetched == nullptr || a < r->fetched_first || a >= r->fetched_first + r->fetched_count) {
                    int64_t count = std::min(r->rows_per_fetch(), r->comps - a);
                    APPROX_TRY(r->rows(a, count, r->fetched, r->fetched_stride));
                    r->fetched_first = a;
                    r->fetched_count = count;
                }
                const uint64_t* row = r->fetched + (a - r->fetched_first) * r->fetched_stride;
                r->targets.clear();
                for (int64_t w = 0; w < W; ++w)
                    for (uint64_t x = row[w]; x; x &= x - 1) {
                        int64_t b = w * 64 + __builtin_ctzll(x);
                        for (int32_t m = r->comp_start[b]; m < r->comp_start[b + 1]; ++m)
                            r->targets.push_back(r->ids[r->members[m]]);
                    }
                r->have_targets = true;
                r->cur_member = 0;
                r->cur_target = 0;
            }
            const size_t m0 = static_cast<size_t>(r->comp_start[a]);
            const size_t members = static_cast<size_t>(r->comp_start[a + 1]) - m0;
            while (n < cap && r->cur_member < members) {
                const int64_t sid = r->ids[r->members[m0 + r->cur_member]];
                while (n < cap && r->cur_target < r->targets.size()) {
                    src_out[n] = sid;
                    dst_out[n] = r->targets[r->cur_target++];
                    ++n;
                }
                if (r->cur_target == r->targets.size()) {
                    ++r->cur_member;
                    r->cur_target = 0;
                }
            }
            if (r->cur_member == members) {
                ++r->cur_comp;
                r->have_targets = false;
            }
        }
        return Status::Ok();
    });
}

void release(Result* r) noexcept { delete r; }

Status reachable(const int64_t* src, const int64_t* dst, size_t n_edges, int64_t source, const ExecContext& caller,
                 int64_t* out, size_t cap, size_t& n) {
    n = 0;
    if (caller.stats) caller.stats->rows = static_cast<int64_t>(n_edges);
    if (n_edges == 0) return Status::Ok();
    ExecContext ctx = caller;
    Status st;
    if (service::try_run(ctx, static_cast<int64_t>(n_edges), st, [&](const ExecContext& c) {
            return reachable_in_service(src, dst, n_edges, source, c, out, cap, n);
        }))
        return st;
    return dispatch(
        ctx, static_cast<int64_t>(n_edges), [&] { return cpu_reachable(src, dst, n_edges, source, ctx, out, cap, n); },
        APPROX_GPU(gpu::reachable(src, dst, n_edges, source, ctx, out, cap, n)));
}

}  // namespace approx::closure
