// Engine tests for the STAR machine (bitslice) and the transitive closure,
// against plain references written here: a vector<bool> model of every STAR
// operation, and breadth-first search / a boolean Floyd-Warshall for the
// closures. Fixed seeds; CPU always, GPU when one is usable (skipped with a
// message otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "core/bitslice.hpp"
#include "core/closure.hpp"
#include "core/gpu.hpp"
#include "../ref/warshall_sequential.hpp"

using approx::Device;
using approx::DeviceMode;
using approx::ExecContext;
using approx::Status;
using approx::StatusCode;
namespace bs = approx::bitslice;
namespace cl = approx::closure;

namespace {

bool gpu_usable() {
    char why[256];
    return approx::gpu::available(why, sizeof why);
}

#define SKIP_WITHOUT_GPU()                                                                  \
    do {                                                                                    \
        char why_[256];                                                                     \
        if (!approx::gpu::available(why_, sizeof why_)) GTEST_SKIP() << "no GPU: " << why_; \
    } while (0)

ExecContext cpu_ctx(int threads = 2) {
    ExecContext c;
    c.mode = DeviceMode::Cpu;
    c.cpu_threads = threads;
    return c;
}

ExecContext gpu_ctx() {
    ExecContext c;
    c.mode = DeviceMode::Gpu;
    c.gpu_min_rows = 0;
    c.cpu_threads = 2;
    return c;
}

using Bits = std::vector<bool>;

Bits random_bits(std::mt19937_64& rng, int64_t n, double p) {
    std::bernoulli_distribution b(p);
    Bits x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = b(rng);
    return x;
}

std::vector<uint64_t> pack(const Bits& x) {
    std::vector<uint64_t> w(bs::words_for(static_cast<int64_t>(x.size())), 0);
    for (size_t i = 0; i < x.size(); ++i)
        if (x[i]) w[i / 64] |= 1ULL << (i % 64);
    return w;
}

// Reads a slice back and checks it against the model, tail bits included.
::testing::AssertionResult same(bs::Machine& m, bs::Slice s, const Bits& model) {
    std::vector<uint64_t> w(s.words() + 1, 0xdeadbeefULL);
    Status st = m.store(s, w.data());
    if (!st.ok()) return ::testing::AssertionFailure() << "store: " << st.message;
    if (s.n != static_cast<int64_t>(model.size()))
        return ::testing::AssertionFailure() << "length " << s.n << " vs " << model.size();
    std::vector<uint64_t> want = pack(model);
    for (int64_t i = 0; i < s.words(); ++i)
        if (w[i] != want[i])
            return ::testing::AssertionFailure()
                   << "word " << i << " of " << s.n << " bits: " << std::hex << w[i] << " vs " << want[i];
    return ::testing::AssertionSuccess();
}

int64_t model_first(const Bits& x) {
    for (size_t i = 0; i < x.size(); ++i)
        if (x[i]) return static_cast<int64_t>(i);
    return -1;
}

// ---- STAR machine: every operation against the vector<bool> model ------------------------

void star_operations(Device device) {
    ExecContext ctx = device == Device::Cpu ? cpu_ctx() : gpu_ctx();
    std::unique_ptr<bs::Machine> m;
    ASSERT_TRUE(bs::make_machine(device, ctx, m).ok());
    std::mt19937_64 rng(20240611);
    for (int64_t n : {1, 2, 63, 64, 65, 127, 128, 129, 200, 1000, 4097, 70001}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        for (double p : {0.0, 0.001, 0.3, 1.0}) {
            SCOPED_TRACE("p = " + std::to_string(p));
            Bits a = random_bits(rng, n, p), b = random_bits(rng, n, 0.5);
            bs::Slice x, y, z;
            ASSERT_TRUE(m->new_slice(n, x).ok());
            ASSERT_TRUE(m->new_slice(n, y).ok());
            ASSERT_TRUE(m->new_slice(n, z).ok());
            ASSERT_TRUE(same(*m, x, Bits(n, false)));  // new slices are zero
            ASSERT_TRUE(m->load(x, pack(a).data()).ok());
            ASSERT_TRUE(m->load(y, pack(b).data()).ok());
            ASSERT_TRUE(same(*m, x, a));

            // SET, CLR, copy
            ASSERT_TRUE(m->set(z).ok());
            ASSERT_TRUE(same(*m, z, Bits(n, true)));
            ASSERT_TRUE(m->clr(z).ok());
            ASSERT_TRUE(same(*m, z, Bits(n, false)));
            ASSERT_TRUE(m->copy(z, x).ok());
            ASSERT_TRUE(same(*m, z, a));
            // AND, OR, XOR, NOT
            Bits e(n);
            ASSERT_TRUE(m->and_(z, y).ok());
            for (int64_t i = 0; i < n; ++i) e[i] = a[i] && b[i];
            ASSERT_TRUE(same(*m, z, e));
            ASSERT_TRUE(m->copy(z, x).ok());
            ASSERT_TRUE(m->or_(z, y).ok());
            for (int64_t i = 0; i < n; ++i) e[i] = a[i] || b[i];
            ASSERT_TRUE(same(*m, z, e));
            ASSERT_TRUE(m->copy(z, x).ok());
            ASSERT_TRUE(m->xor_(z, y).ok());
            for (int64_t i = 0; i < n; ++i) e[i] = a[i] != b[i];
            ASSERT_TRUE(same(*m, z, e));
            ASSERT_TRUE(m->copy(z, x).ok());
            ASSERT_TRUE(m->not_(z).ok());
            for (int64_t i = 0; i < n; ++i) e[i] = !a[i];
            ASSERT_TRUE(same(*m, z, e));

            // Y(i) read and write
            for (int64_t i : {int64_t(0), n / 2, n - 1}) {
                bool bit = false;
                ASSERT_TRUE(m->get(x, i, bit).ok());
                EXPECT_EQ(bit, static_cast<bool>(a[i]));
            }
            Bits c = a;
            for (int64_t i : {n - 1, int64_t(0), n / 3}) {
                ASSERT_TRUE(m->put(z, i, true).ok());  // z = NOT a
                ASSERT_TRUE(m->put(x, i, !c[i]).ok());
                c[i] = !c[i];
            }
            ASSERT_TRUE(same(*m, x, c));
            ASSERT_TRUE(m->load(x, pack(a).data()).ok());

            // NUMB, SOME, FND
            int64_t count = -1, first = -2;
            bool any = false;
            ASSERT_TRUE(m->numb(x, count).ok());
            EXPECT_EQ(count, static_cast<int64_t>(std::count(a.begin(), a.end(), true)));
            ASSERT_TRUE(m->some(x, any).ok());
            EXPECT_EQ(any, count > 0);
            ASSERT_TRUE(m->fnd(x, first).ok());
            EXPECT_EQ(first, model_first(a));
            ASSERT_TRUE(same(*m, x, a));  // FND leaves X alone

            // STEP: a few times (all of them for sparse slices)
            Bits s = a;
            int steps = count <= 200 ? static_cast<int>(count) + 1 : 20;
            for (int t = 0; t < steps; ++t) {
                int64_t i = -2;
                ASSERT_TRUE(m->step(x, i).ok());
                int64_t want = model_first(s);
                ASSERT_EQ(i, want);
                if (want >= 0) s[want] = false;
            }
            ASSERT_TRUE(same(*m, x, s));

            // FRST
            ASSERT_TRUE(m->load(x, pack(a).data()).ok());
            ASSERT_TRUE(m->frst(x).ok());
            Bits f(n, false);
            if (first >= 0) f[first] = true;
            ASSERT_TRUE(same(*m, x, f));
            ASSERT_TRUE(m->load(x, pack(a).data()).ok());

            // TRIM and REP over several ranges
            std::uniform_int_distribution<int64_t> pos(0, n - 1);
            for (int t = 0; t < 6; ++t) {
                int64_t i = pos(rng), j = pos(rng);
                if (t == 0) i = 0, j = n - 1;
                if (i > j) std::swap(i, j);
                int64_t len = j - i + 1;
                bs::Slice tr;
                ASSERT_TRUE(m->new_slice(len, tr).ok());
                ASSERT_TRUE(m->trim(i, j, x, tr).ok());
                ASSERT_TRUE(same(*m, tr, Bits(a.begin() + i, a.begin() + j + 1)));
                // REP(i, j, v, w): replace w[i..j] (w = y) with v = a random word
                Bits v = random_bits(rng, len + (t % 2), 0.5);
                bs::Slice vs;
                ASSERT_TRUE(m->new_slice(static_cast<int64_t>(v.size()), vs).ok());
                ASSERT_TRUE(m->load(vs, pack(v).data()).ok());
                ASSERT_TRUE(m->load(y, pack(b).data()).ok());
                ASSERT_TRUE(m->rep(i, j, vs, y).ok());
                Bits r = b;
                for (int64_t q = i; q <= j; ++q) r[q] = v[q - i];
                ASSERT_TRUE(same(*m, y, r));
            }

            // bad arguments are errors, not crashes
            bool bit;
            int64_t idx;
            EXPECT_EQ(m->get(x, n, bit).code, StatusCode::InvalidArgument);
            EXPECT_EQ(m->put(x, -1, true).code, StatusCode::InvalidArgument);
            bs::Slice other;
            ASSERT_TRUE(m->new_slice(n + 1, other).ok());
            EXPECT_EQ(m->or_(x, other).code, StatusCode::InvalidArgument);
            EXPECT_EQ(m->trim(0, n, x, other).code, StatusCode::InvalidArgument);
            (void)idx;
        }
    }
}

// COL / ROW read and write, and or_cols_where, on random tables.
void star_tables(Device device) {
    ExecContext ctx = device == Device::Cpu ? cpu_ctx() : gpu_ctx();
    std::unique_ptr<bs::Machine> m;
    ASSERT_TRUE(bs::make_machine(device, ctx, m).ok());
    std::mt19937_64 rng(77);
    const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {1, 70}, {70, 1}, {64, 64}, {65, 130}, {200, 63}, {513, 300}};
    for (auto [rows, cols] : shapes) {
        SCOPED_TRACE("table " + std::to_string(rows) + " x " + std::to_string(cols));
        std::vector<Bits> colm(cols);  // model: column j
        bs::Table t;
        ASSERT_TRUE(m->new_table(rows, cols, t).ok());
        std::vector<uint64_t> host(t.ld * cols, 0);
        for (int64_t j = 0; j < cols; ++j) {
            colm[j] = random_bits(rng, rows, 0.4);
            std::vector<uint64_t> w = pack(colm[j]);
            std::copy(w.begin(), w.end(), host.begin() + j * t.ld);
        }
        ASSERT_TRUE(m->load_table(t, host.data()).ok());
        bs::Slice c, r;
        ASSERT_TRUE(m->new_slice(rows, c).ok());
        ASSERT_TRUE(m->new_slice(cols, r).ok());
        for (int64_t j : {int64_t(0), cols / 2, cols - 1}) {
            ASSERT_TRUE(m->col(t, j, c).ok());
            ASSERT_TRUE(same(*m, c, colm[j]));
        }
        for (int64_t i : {int64_t(0), rows / 2, rows - 1}) {
            Bits want(cols);
            for (int64_t j = 0; j < cols; ++j) want[j] = colm[j][i];
            ASSERT_TRUE(m->row(t, i, r).ok());
            ASSERT_TRUE(same(*m, r, want));
        }
        // write a row and a column
        Bits nr = random_bits(rng, cols, 0.5), nc = random_bits(rng, rows, 0.5);
        int64_t ri = rows - 1, cj = cols / 3;
        ASSERT_TRUE(m->load(r, pack(nr).data()).ok());
        ASSERT_TRUE(m->set_row(t, ri, r).ok());
        for (int64_t j = 0; j < cols; ++j) colm[j][ri] = nr[j];
        ASSERT_TRUE(m->load(c, pack(nc).data()).ok());
        ASSERT_TRUE(m->set_col(t, cj, c).ok());
        colm[cj] = nc;
        // or_cols_where: columns selected by a word get OR x
        Bits sel = random_bits(rng, cols, 0.5), x = random_bits(rng, rows, 0.3);
        ASSERT_TRUE(m->load(r, pack(sel).data()).ok());
        ASSERT_TRUE(m->load(c, pack(x).data()).ok());
        ASSERT_TRUE(m->or_cols_where(t, r, c).ok());
        for (int64_t j = 0; j < cols; ++j)
            if (sel[j])
                for (int64_t i = 0; i < rows; ++i) colm[j][i] = colm[j][i] || x[i];
        std::vector<uint64_t> back(t.ld * cols, 0);
        ASSERT_TRUE(m->store_table(t, back.data()).ok());
        for (int64_t j = 0; j < cols; ++j) {
            std::vector<uint64_t> w = pack(colm[j]);
            for (int64_t q = 0; q < t.ld; ++q) ASSERT_EQ(back[j * t.ld + q], w[q]) << "column " << j << " word " << q;
        }
        // errors
        EXPECT_EQ(m->col(t, cols, c).code, StatusCode::InvalidArgument);
        EXPECT_EQ(m->row(t, rows, r).code, StatusCode::InvalidArgument);
        EXPECT_EQ(m->or_cols_where(t, r, t.col(0)).code, StatusCode::InvalidArgument);
    }
}

// ---- graphs and references ---------------------------------------------------------------

struct Graph {
    int64_t n = 0;  // vertices 0..n-1
    std::vector<std::pair<int, int>> edges;
};

Graph random_graph(std::mt19937_64& rng, int64_t n, double mean_out_degree, bool dag = false) {
    Graph g;
    g.n = n;
    if (n == 0) return g;
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    int64_t m = static_cast<int64_t>(mean_out_degree * n);
    for (int64_t e = 0; e < m; ++e) {
        int a = static_cast<int>(pick(rng)), b = static_cast<int>(pick(rng));
        if (dag) {
            if (a == b) continue;
            if (a > b) std::swap(a, b);
        }
        g.edges.push_back({a, b});
    }
    return g;
}

// reach[u][v]: a path of length >= 1 (breadth-first search from every vertex)
std::vector<Bits> reference_closure(const Graph& g) {
    std::vector<std::vector<int>> adj(g.n);
    for (auto [a, b] : g.edges) adj[a].push_back(b);
    std::vector<Bits> reach(g.n, Bits(g.n, false));
    for (int64_t s = 0; s < g.n; ++s) {
        std::vector<int> queue(adj[s].begin(), adj[s].end());
        for (int v : adj[s]) reach[s][v] = true;
        queue.assign(adj[s].begin(), adj[s].end());
        std::vector<int> q2;
        for (size_t h = 0; h < queue.size(); ++h)
            for (int v : adj[queue[h]])
                if (!reach[s][v]) {
                    reach[s][v] = true;
                    queue.push_back(v);
                }
    }
    return reach;
}

// Row-major bit matrix of the adjacency (rows of ld words).
std::vector<uint64_t> row_matrix(const Graph& g, int64_t ld) {
    std::vector<uint64_t> m(g.n * ld, 0);
    for (auto [a, b] : g.edges) m[a * ld + b / 64] |= 1ULL << (b % 64);
    return m;
}

::testing::AssertionResult matrix_equals(const std::vector<uint64_t>& m, int64_t ld, const std::vector<Bits>& ref) {
    int64_t n = static_cast<int64_t>(ref.size());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t w = 0; w < ld; ++w) {
            uint64_t want = 0;
            for (int b = 0; b < 64 && w * 64 + b < n; ++b)
                if (ref[i][w * 64 + b]) want |= 1ULL << b;
            if (m[i * ld + w] != want)
                return ::testing::AssertionFailure()
                       << "row " << i << " word " << w << ": " << std::hex << m[i * ld + w] << " vs " << want;
        }
    return ::testing::AssertionSuccess();
}

// The three Warshall variants on a STAR machine: T(i, j) = edge i -> j, so
// column j holds the predecessors of j.
void warshall_variants(Device device) {
    ExecContext ctx = device == Device::Cpu ? cpu_ctx() : gpu_ctx();
    std::unique_ptr<bs::Machine> m;
    ASSERT_TRUE(bs::make_machine(device, ctx, m).ok());
    std::mt19937_64 rng(4242);
    for (int64_t n : {1, 2, 5, 63, 64, 65, 130, 257}) {
        for (double deg : {0.5, 1.5, 6.0}) {
            for (bool dag : {false, true}) {
                SCOPED_TRACE("n = " + std::to_string(n) + ", degree " + std::to_string(deg) + (dag ? ", DAG" : ""));
                Graph g = random_graph(rng, n, deg, dag);
                if (n > 2 && !dag) g.edges.push_back({1, 1});  // a self-loop
                std::vector<Bits> ref = reference_closure(g);
                using Fn = Status (*)(bs::Machine&, const bs::Table&, const ExecContext&);
                const std::pair<const char*, Fn> variants[] = {{"WARSHALL", bs::warshall_rows},
                                                               {"WARSHALL-C", bs::warshall_cols},
                                                               {"WARSHALL-adapt", bs::warshall_adapt}};
                for (auto [name, fn] : variants) {
                    SCOPED_TRACE(name);
                    bs::Table t;
                    ASSERT_TRUE(m->new_table(n, n, t).ok());
                    std::vector<uint64_t> host(t.ld * n, 0);
                    for (auto [a, b] : g.edges) host[b * t.ld + a / 64] |= 1ULL << (a % 64);  // column b, row a
                    ASSERT_TRUE(m->load_table(t, host.data()).ok());
                    ASSERT_TRUE(fn(*m, t, ctx).ok());
                    ASSERT_TRUE(m->store_table(t, host.data()).ok());
                    for (int64_t i = 0; i < n; ++i)
                        for (int64_t j = 0; j < n; ++j)
                            ASSERT_EQ((host[j * t.ld + i / 64] >> (i % 64)) & 1, ref[i][j] ? 1u : 0u)
                                << "pair " << i << " -> " << j;
                }
            }
        }
    }
}

void blocked_matrix(Device device, std::initializer_list<int64_t> sizes) {
    ExecContext ctx = device == Device::Cpu ? cpu_ctx() : gpu_ctx();
    std::mt19937_64 rng(99);
    for (int64_t n : sizes) {
        for (double deg : {0.3, 1.0, 2.0, 20.0}) {
            SCOPED_TRACE("n = " + std::to_string(n) + ", degree " + std::to_string(deg));
            Graph g = random_graph(rng, n, deg);
            if (n > 3) g.edges.push_back({2, 2});
            std::vector<Bits> ref = reference_closure(g);
            int64_t ld = bs::words_for(n) + (n % 3);  // a wider stride than needed, sometimes
            std::vector<uint64_t> m = row_matrix(g, ld);
            ASSERT_TRUE(cl::close_matrix(m.data(), n, ld, ctx).ok());
            ASSERT_TRUE(matrix_equals(m, ld, ref));
        }
    }
}

// Graph-level calls on arbitrary int64 ids against the reference.
struct IdGraph {
    std::vector<int64_t> src, dst;
    std::set<std::pair<int64_t, int64_t>> closure;
};

IdGraph with_ids(const Graph& g, std::mt19937_64& rng) {
    std::vector<int64_t> id(g.n);
    std::set<int64_t> used;
    std::uniform_int_distribution<int64_t> any(INT64_MIN, INT64_MAX);
    for (int64_t i = 0; i < g.n; ++i) {
        int64_t v;
        do v = (i % 3 == 0) ? any(rng) : static_cast<int64_t>(rng() % 100000) - 50000;
        while (!used.insert(v).second);
        id[i] = v;
    }
    if (g.n > 1) id[0] = INT64_MIN;
    if (g.n > 2) id[1] = INT64_MAX;
    IdGraph r;
    for (auto [a, b] : g.edges) {
        r.src.push_back(id[a]);
        r.dst.push_back(id[b]);
    }
    std::vector<Bits> ref = reference_closure(g);
    for (int64_t i = 0; i < g.n; ++i)
        for (int64_t j = 0; j < g.n; ++j)
            if (ref[i][j]) r.closure.insert({id[i], id[j]});
    return r;
}

void graph_calls(DeviceMode mode, cl::Algorithm algorithm, cl::DagClosure dag = cl::DagClosure::Auto) {
    ExecContext ctx = mode == DeviceMode::Cpu ? cpu_ctx() : gpu_ctx();
    cl::Options opt;
    opt.algorithm = algorithm;
    opt.dag_closure = dag;
    std::mt19937_64 rng(1234);
    std::vector<Graph> graphs;
    graphs.push_back(Graph{});                                             // empty
    graphs.push_back(Graph{1, {{0, 0}}});                                  // one self-loop
    graphs.push_back(Graph{2, {{0, 1}, {0, 1}, {0, 1}}});                  // duplicates
    graphs.push_back(Graph{5, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}}});  // a cycle
    graphs.push_back(Graph{6, {{0, 1}, {1, 0}, {2, 3}, {4, 4}, {5, 4}}});  // pieces
    for (int64_t n : {10, 100, 400})
        for (double deg : {0.5, 1.0, 2.0, 8.0})
            for (bool dag : {false, true}) graphs.push_back(random_graph(rng, n, deg, dag));
    {
        Graph chain;  // a long path: deep recursion for a naive Tarjan
        chain.n = 1200;
        for (int i = 0; i + 1 < 1200; ++i) chain.edges.push_back({i, i + 1});
        chain.edges.push_back({1199, 600});
        graphs.push_back(chain);
    }
    for (size_t gi = 0; gi < graphs.size(); ++gi) {
        SCOPED_TRACE("graph " + std::to_string(gi) + " with " + std::to_string(graphs[gi].n) + " vertices, " +
                     std::to_string(graphs[gi].edges.size()) + " edges");
        IdGraph ig = with_ids(graphs[gi], rng);
        size_t ne = ig.src.size();
        int64_t pairs = -1;
        Status st = cl::count_pairs(ig.src.data(), ig.dst.data(), ne, opt, ctx, pairs);
        ASSERT_TRUE(st.ok()) << st.message;
        EXPECT_EQ(pairs, static_cast<int64_t>(ig.closure.size()));

        cl::Result* r = nullptr;
        st = cl::compute(ig.src.data(), ig.dst.data(), ne, opt, ctx, &r);
        ASSERT_TRUE(st.ok()) << st.message;
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(cl::result_pairs(r), static_cast<int64_t>(ig.closure.size()));
        std::set<std::pair<int64_t, int64_t>> got;
        std::vector<int64_t> a(97), b(97);  // an odd chunk size on purpose
        size_t total = 0;
        for (;;) {
            size_t n = 0;
            st = cl::next_pairs(r, a.data(), b.data(), a.size(), n);
            ASSERT_TRUE(st.ok()) << st.message;
            if (n == 0) break;
            for (size_t i = 0; i < n; ++i) got.insert({a[i], b[i]});
            total += n;
        }
        cl::release(r);
        EXPECT_EQ(total, ig.closure.size()) << "no pair twice";
        EXPECT_TRUE(got == ig.closure);

        // reachable() from a few sources, and from an id that is not a vertex
        std::vector<int64_t> sources(ig.src.begin(), ig.src.begin() + std::min<size_t>(ne, 4));
        sources.push_back(42424242);
        std::vector<int64_t> out(2 * ne + 1);
        for (int64_t s : sources) {
            size_t n = 0;
            st = cl::reachable(ig.src.data(), ig.dst.data(), ne, s, ctx, out.data(), out.size(), n);
            ASSERT_TRUE(st.ok()) << st.message;
            std::vector<int64_t> want;
            for (auto it = ig.closure.lower_bound({s, INT64_MIN}); it != ig.closure.end() && it->first == s; ++it)
                want.push_back(it->second);
            EXPECT_EQ(std::vector<int64_t>(out.begin(), out.begin() + n), want) << "source " << s;
        }
    }
}

}  // namespace

// ---- the tests ---------------------------------------------------------------------------

TEST(ClosureBitslice, CpuOperationsMatchModel) { star_operations(Device::Cpu); }
TEST(ClosureBitslice, GpuOperationsMatchModel) {
    SKIP_WITHOUT_GPU();
    star_operations(Device::Gpu);
}
TEST(ClosureBitslice, CpuTables) { star_tables(Device::Cpu); }
TEST(ClosureBitslice, GpuTables) {
    SKIP_WITHOUT_GPU();
    star_tables(Device::Gpu);
}

TEST(ClosureWarshall, CpuVariantsMatchReference) { warshall_variants(Device::Cpu); }
TEST(ClosureWarshall, GpuVariantsMatchReference) {
    SKIP_WITHOUT_GPU();
    warshall_variants(Device::Gpu);
}
TEST(ClosureWarshall, SequentialMatchesReference) {
    std::mt19937_64 rng(5);
    ExecContext ctx = cpu_ctx();
    for (int64_t n : {1, 7, 100, 333}) {
        Graph g = random_graph(rng, n, 1.2);
        std::vector<uint8_t> a(n * n, 0);
        for (auto [u, v] : g.edges) a[u * n + v] = 1;
        ASSERT_TRUE(cl::warshall_sequential(a.data(), n, ctx).ok());
        std::vector<Bits> ref = reference_closure(g);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j) ASSERT_EQ(a[i * n + j] != 0, static_cast<bool>(ref[i][j]));
    }
}

TEST(ClosureBlocked, CpuMatchesReference) {
    blocked_matrix(Device::Cpu, {1, 2, 63, 64, 65, 255, 256, 257, 511, 600, 1000});
}
TEST(ClosureBlocked, CpuOneThreadEqualsManyThreads) {
    std::mt19937_64 rng(8);
    Graph g = random_graph(rng, 1500, 1.3);
    int64_t ld = bs::words_for(g.n);
    std::vector<uint64_t> a = row_matrix(g, ld), b = a;
    ASSERT_TRUE(cl::close_matrix(a.data(), g.n, ld, cpu_ctx(1)).ok());
    ASSERT_TRUE(cl::close_matrix(b.data(), g.n, ld, cpu_ctx(4)).ok());
    EXPECT_TRUE(a == b);
}
TEST(ClosureBlocked, GpuMatchesReference) {
    SKIP_WITHOUT_GPU();
    blocked_matrix(Device::Gpu, {1, 2, 63, 64, 65, 255, 256, 257, 511, 600, 1000, 1300});
}
TEST(ClosureBlocked, GpuEqualsCpuLarge) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 rng(31);
    for (int64_t n : {2049, 5000}) {
        for (double deg : {0.6, 2.0}) {
            Graph g = random_graph(rng, n, deg);
            int64_t ld = bs::words_for(n);
            std::vector<uint64_t> a = row_matrix(g, ld), b = a;
            ASSERT_TRUE(cl::close_matrix(a.data(), n, ld, cpu_ctx(4)).ok());
            ASSERT_TRUE(cl::close_matrix(b.data(), n, ld, gpu_ctx()).ok());
            EXPECT_TRUE(a == b) << "n = " << n << ", degree " << deg;
        }
    }
}
TEST(ClosureBlocked, AgreesWithWarshallVariants) {
    // the same random graph through WARSHALL-C, WARSHALL-adapt (CPU machine)
    // and the blocked closure
    std::mt19937_64 rng(2718);
    Graph g = random_graph(rng, 700, 1.1);
    ExecContext ctx = cpu_ctx();
    int64_t ld = bs::words_for(g.n);
    std::vector<uint64_t> rows = row_matrix(g, ld);
    ASSERT_TRUE(cl::close_matrix(rows.data(), g.n, ld, ctx).ok());
    std::unique_ptr<bs::Machine> m;
    ASSERT_TRUE(bs::make_machine(Device::Cpu, ctx, m).ok());
    for (auto fn : {bs::warshall_cols, bs::warshall_adapt}) {
        bs::Table t;
        ASSERT_TRUE(m->new_table(g.n, g.n, t).ok());
        // the table of A is the row matrix of A transposed: load A^T's rows as columns
        std::vector<uint64_t> host(t.ld * g.n, 0);
        for (auto [a, b] : g.edges) host[b * t.ld + a / 64] |= 1ULL << (a % 64);
        ASSERT_TRUE(m->load_table(t, host.data()).ok());
        ASSERT_TRUE(fn(*m, t, ctx).ok());
        ASSERT_TRUE(m->store_table(t, host.data()).ok());
        for (int64_t i = 0; i < g.n; ++i)
            for (int64_t j = 0; j < g.n; ++j)
                ASSERT_EQ((host[j * t.ld + i / 64] >> (i % 64)) & 1, (rows[i * ld + j / 64] >> (j % 64)) & 1);
    }
}

TEST(ClosureGraph, CpuAuto) { graph_calls(DeviceMode::Cpu, cl::Algorithm::Auto); }
TEST(ClosureGraph, CpuBlocked) { graph_calls(DeviceMode::Cpu, cl::Algorithm::Blocked); }
TEST(ClosureGraph, CpuCondensed) { graph_calls(DeviceMode::Cpu, cl::Algorithm::Condensed); }
TEST(ClosureGraph, GpuAuto) {
    SKIP_WITHOUT_GPU();
    graph_calls(DeviceMode::Gpu, cl::Algorithm::Auto);
}
TEST(ClosureGraph, GpuBlocked) {
    SKIP_WITHOUT_GPU();
    graph_calls(DeviceMode::Gpu, cl::Algorithm::Blocked);
}
TEST(ClosureGraph, GpuCondensedLevels) {
    SKIP_WITHOUT_GPU();
    graph_calls(DeviceMode::Gpu, cl::Algorithm::Condensed, cl::DagClosure::Levels);
}
TEST(ClosureGraph, GpuCondensedBlockedDag) {
    SKIP_WITHOUT_GPU();
    graph_calls(DeviceMode::Gpu, cl::Algorithm::Condensed, cl::DagClosure::Blocked);
}

TEST(ClosureGraph, CpuStar) { graph_calls(DeviceMode::Cpu, cl::Algorithm::Star); }
TEST(ClosureGraph, GpuStar) {
    SKIP_WITHOUT_GPU();
    graph_calls(DeviceMode::Gpu, cl::Algorithm::Star);
}

// The closure's pairs by one algorithm (count_pairs and compute must agree).
std::set<std::pair<int64_t, int64_t>> closure_pairs(const IdGraph& ig, cl::Algorithm alg, const ExecContext& ctx) {
    cl::Options opt;
    opt.algorithm = alg;
    std::set<std::pair<int64_t, int64_t>> got;
    int64_t pairs = -1;
    Status st = cl::count_pairs(ig.src.data(), ig.dst.data(), ig.src.size(), opt, ctx, pairs);
    EXPECT_TRUE(st.ok()) << st.message;
    cl::Result* r = nullptr;
    st = cl::compute(ig.src.data(), ig.dst.data(), ig.src.size(), opt, ctx, &r);
    EXPECT_TRUE(st.ok()) << st.message;
    if (!st.ok() || r == nullptr) return got;
    std::vector<int64_t> a(1000), b(1000);
    for (;;) {
        size_t n = 0;
        st = cl::next_pairs(r, a.data(), b.data(), a.size(), n);
        EXPECT_TRUE(st.ok()) << st.message;
        if (!st.ok() || n == 0) break;
        for (size_t i = 0; i < n; ++i) got.insert({a[i], b[i]});
    }
    cl::release(r);
    EXPECT_EQ(pairs, static_cast<int64_t>(got.size()));
    return got;
}

TEST(ClosureGraph, StarEqualsBlockedAndCondensed) {
    // random graphs with cycles and self-loops (and their DAG versions), on
    // each engine: the STAR machine's closure is the blocked and the condensed one
    std::mt19937_64 rng(77);
    std::vector<Graph> graphs;
    for (int64_t n : {1, 7, 64, 65, 130, 300})
        for (double deg : {0.3, 1.5, 6.0})
            for (bool dag : {false, true}) {
                Graph g = random_graph(rng, n, deg, dag);
                if (!dag)
                    for (int64_t v = 0; v < n; v += 5) g.edges.push_back({int(v), int(v)});  // self-loops
                graphs.push_back(g);
            }
    for (DeviceMode mode : {DeviceMode::Cpu, DeviceMode::Gpu}) {
        if (mode == DeviceMode::Gpu && !gpu_usable()) continue;
        ExecContext ctx = mode == DeviceMode::Cpu ? cpu_ctx() : gpu_ctx();
        for (size_t gi = 0; gi < graphs.size(); ++gi) {
            SCOPED_TRACE(std::string(mode == DeviceMode::Cpu ? "cpu" : "gpu") + " graph " + std::to_string(gi) +
                         " with " + std::to_string(graphs[gi].n) + " vertices");
            IdGraph ig = with_ids(graphs[gi], rng);
            auto star = closure_pairs(ig, cl::Algorithm::Star, ctx);
            EXPECT_TRUE(star == closure_pairs(ig, cl::Algorithm::Blocked, ctx));
            EXPECT_TRUE(star == closure_pairs(ig, cl::Algorithm::Condensed, ctx));
            EXPECT_TRUE(star == ig.closure);
        }
    }
}

TEST(ClosureGraph, LongCycleAndLongPath) {
    // Tarjan without recursion: a 300000-vertex cycle is one component; a
    // 20000-vertex path is 20000 of them (n (n - 1) / 2 pairs)
    std::vector<int64_t> src, dst;
    const int64_t n = 300000;
    for (int64_t i = 0; i < n; ++i) {
        src.push_back(i * 3);
        dst.push_back(((i + 1) % n) * 3);
    }
    std::vector<ExecContext> ctxs = {cpu_ctx()};
    if (gpu_usable()) ctxs.push_back(gpu_ctx());
    for (const ExecContext& ctx : ctxs) {
        cl::Options opt;
        int64_t pairs = 0;
        ASSERT_TRUE(cl::count_pairs(src.data(), dst.data(), src.size(), opt, ctx, pairs).ok());
        EXPECT_EQ(pairs, n * n);
        std::vector<int64_t> ps, pd;
        const int64_t m = 20000;
        for (int64_t i = 0; i + 1 < m; ++i) {
            ps.push_back(m - i);
            pd.push_back(m - i - 1);
        }
        for (auto dagc : {cl::DagClosure::Auto, cl::DagClosure::Levels}) {
            opt.dag_closure = dagc;
            ASSERT_TRUE(cl::count_pairs(ps.data(), pd.data(), ps.size(), opt, ctx, pairs).ok());
            EXPECT_EQ(pairs, m * (m - 1) / 2);
        }
    }
}

TEST(ClosureGraph, CpuEqualsGpuOnLargerGraphs) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 rng(777);
    for (auto [n, deg, dag] : {std::tuple<int64_t, double, bool>{20000, 1.0, false},
                               {20000, 3.0, true},
                               {4000, 30.0, true},
                               {3000, 2.0, false}}) {
        Graph g = random_graph(rng, n, deg, dag);
        IdGraph ig;
        for (auto [a, b] : g.edges) {
            ig.src.push_back(a * 7919LL - 100000);
            ig.dst.push_back(b * 7919LL - 100000);
        }
        for (auto alg : {cl::Algorithm::Auto, cl::Algorithm::Blocked}) {
            cl::Options opt;
            opt.algorithm = alg;
            int64_t c = -1, gcount = -2;
            ASSERT_TRUE(cl::count_pairs(ig.src.data(), ig.dst.data(), ig.src.size(), opt, cpu_ctx(4), c).ok());
            ASSERT_TRUE(cl::count_pairs(ig.src.data(), ig.dst.data(), ig.src.size(), opt, gpu_ctx(), gcount).ok());
            EXPECT_EQ(c, gcount) << "n = " << n << " degree " << deg;
        }
    }
}

TEST(ClosureGraph, MemoryLimitIsAnErrorNamingTheBytes) {
    std::vector<int64_t> src, dst;
    for (int i = 0; i < 1000; ++i) {
        src.push_back(i);
        dst.push_back((i + 1) % 1000);
    }
    cl::Options opt;
    opt.algorithm = cl::Algorithm::Blocked;
    opt.max_bytes = 100000;  // 1000 x 16 words x 8 = 128000 bytes
    int64_t pairs = 0;
    Status st = cl::count_pairs(src.data(), dst.data(), src.size(), opt, cpu_ctx(), pairs);
    EXPECT_EQ(st.code, StatusCode::ProgramLimit);
    EXPECT_NE(std::string(st.message).find("128000 bytes"), std::string::npos) << st.message;
    // condensed: the cycle is one component, 8 bytes
    opt.algorithm = cl::Algorithm::Auto;
    ASSERT_TRUE(cl::count_pairs(src.data(), dst.data(), src.size(), opt, cpu_ctx(), pairs).ok());
    EXPECT_EQ(pairs, 1000000);
    if (gpu_usable()) {
        opt.algorithm = cl::Algorithm::Blocked;
        st = cl::count_pairs(src.data(), dst.data(), src.size(), opt, gpu_ctx(), pairs);
        EXPECT_EQ(st.code, StatusCode::ProgramLimit) << st.message;
    }
}

namespace {
bool always_cancel() { return true; }
}  // namespace

TEST(ClosureGraph, CancelStopsTheEngines) {
    std::mt19937_64 rng(3);
    Graph g = random_graph(rng, 3000, 2.0);
    IdGraph ig = with_ids(Graph{0, {}}, rng);
    for (auto [a, b] : g.edges) {
        ig.src.push_back(a);
        ig.dst.push_back(b);
    }
    for (DeviceMode mode : {DeviceMode::Cpu, DeviceMode::Gpu}) {
        if (mode == DeviceMode::Gpu && !gpu_usable()) continue;
        ExecContext ctx = mode == DeviceMode::Cpu ? cpu_ctx() : gpu_ctx();
        ctx.cancel = always_cancel;
        for (auto alg : {cl::Algorithm::Auto, cl::Algorithm::Blocked}) {
            cl::Options opt;
            opt.algorithm = alg;
            int64_t pairs = 0;
            Status st = cl::count_pairs(ig.src.data(), ig.dst.data(), ig.src.size(), opt, ctx, pairs);
            EXPECT_EQ(st.code, StatusCode::Cancelled) << st.message;
        }
        int64_t ld = bs::words_for(g.n);
        std::vector<uint64_t> m = row_matrix(g, ld);
        EXPECT_EQ(cl::close_matrix(m.data(), g.n, ld, ctx).code, StatusCode::Cancelled);
    }
}

TEST(ClosureGraph, DenseRandomGraphCount) {
    // a dense graph: one big component; and its DAG version
    std::mt19937_64 rng(11);
    for (bool dag : {false, true}) {
        Graph g = random_graph(rng, 400, 60.0, dag);
        IdGraph ig = with_ids(g, rng);
        for (auto alg : {cl::Algorithm::Auto, cl::Algorithm::Blocked, cl::Algorithm::Condensed}) {
            cl::Options opt;
            opt.algorithm = alg;
            int64_t pairs = 0;
            ASSERT_TRUE(cl::count_pairs(ig.src.data(), ig.dst.data(), ig.src.size(), opt, cpu_ctx(), pairs).ok());
            EXPECT_EQ(pairs, static_cast<int64_t>(ig.closure.size()));
        }
    }
}
