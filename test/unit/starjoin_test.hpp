// A random star schema and its plans for the star-join tests (CPU:
// starjoin_test.cpp; GPU vs CPU: starjoin_gpu_test.cpp), and an independent
// scalar reference: a nested loop in plain C++ with std::map, the
// expressions written out by hand, moments by sample::add one value at a time.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "core/starjoin/interp.hpp"
#include "core/starjoin/starjoin.hpp"
#include "starjoin_builder.hpp"

namespace sjtest {

using namespace approx::starjoin;

inline void set_null(std::vector<uint8_t>& bm, size_t r) { bm[r >> 3] |= static_cast<uint8_t>(1u << (r & 7)); }
inline bool is_null(const std::vector<uint8_t>& bm, size_t r) { return bm.empty() ? false : (bm[r >> 3] >> (r & 7)) & 1; }

// Fact: 0 fk1 int32 (NULLs), 1 fk2 int64, 2 x float64 (NULLs), 3 q int16, 4 stratum int32, 5 day date.
// Dim 1 (dense keys): 0 key int32, 1 a int32 (NULLs), 2 w float64.
// Dim 2 (sparse keys): 0 key int64, 1 code (10 values).
struct Star {
    int64_t n = 0, n1 = 0, n2 = 0;
    int32_t strata = 1;
    std::vector<int32_t> fk1, stratum, day, a1, key1;
    std::vector<int64_t> fk2, key2;
    std::vector<double> x, w1;
    std::vector<int16_t> q;
    std::vector<int32_t> code2;
    std::vector<uint8_t> fk1_nulls, x_nulls, a1_nulls;
    std::vector<Column> fact_cols, d1_cols, d2_cols;

    Star(int64_t n_, int64_t n1_, int64_t n2_, int32_t strata_, uint64_t seed) : n(n_), n1(n1_), n2(n2_), strata(strata_) {
        std::mt19937_64 rng(seed);
        auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
        std::normal_distribution<double> nd(50, 30);
        key1.resize(n1);
        a1.resize(n1);
        w1.resize(n1);
        a1_nulls.assign((n1 + 7) / 8, 0);
        for (int64_t i = 0; i < n1; ++i) key1[i] = static_cast<int32_t>(1000 + i);
        std::shuffle(key1.begin(), key1.end(), rng);
        for (int64_t i = 0; i < n1; ++i) {
            a1[i] = static_cast<int32_t>(uni(0, 99));
            if (uni(0, 19) == 0) set_null(a1_nulls, i);
            w1[i] = uni(0, 1000) / 1000.0;
        }
        key2.resize(n2);
        code2.resize(n2);
        for (int64_t i = 0; i < n2; ++i) {
            key2[i] = static_cast<int64_t>(rng() >> 4) - (int64_t(1) << 58);  // sparse
            code2[i] = static_cast<int32_t>(uni(0, 9));
        }
        fk1.resize(n);
        fk2.resize(n);
        x.resize(n);
        q.resize(n);
        stratum.resize(n);
        day.resize(n);
        fk1_nulls.assign((n + 7) / 8, 0);
        x_nulls.assign((n + 7) / 8, 0);
        for (int64_t r = 0; r < n; ++r) {
            fk1[r] = static_cast<int32_t>(uni(0, 49) == 0 ? 5 : key1[uni(0, n1 - 1)]);  // 5: a miss
            if (uni(0, 49) == 0) set_null(fk1_nulls, r);
            fk2[r] = uni(0, 49) == 0 ? 12345 : key2[uni(0, n2 - 1)];
            x[r] = nd(rng);
            if (uni(0, 9) == 0) set_null(x_nulls, r);
            q[r] = static_cast<int16_t>(uni(0, 49));
            stratum[r] = static_cast<int32_t>(uni(0, strata - 1));
            day[r] = static_cast<int32_t>(uni(-2922, -2922 + 7 * 365));  // 1992 .. 1998
        }
        fact_cols = {{ColType::Int32, fk1.data(), fk1_nulls.data()}, {ColType::Int64, fk2.data()},
                     {ColType::Float64, x.data(), x_nulls.data()},   {ColType::Int16, q.data()},
                     {ColType::Int32, stratum.data()},               {ColType::Date, day.data()}};
        d1_cols = {{ColType::Int32, key1.data()}, {ColType::Int32, a1.data(), a1_nulls.data()},
                   {ColType::Float64, w1.data()}};
        d2_cols = {{ColType::Int64, key2.data()}, {ColType::Code, code2.data()}};
    }

    Inputs inputs() const {
        Inputs in;
        in.fact = {fact_cols.data(), static_cast<int32_t>(fact_cols.size()), n};
        in.dims[0] = {d1_cols.data(), static_cast<int32_t>(d1_cols.size()), n1};
        in.dims[1] = {d2_cols.data(), static_cast<int32_t>(d2_cols.size()), n2};
        return in;
    }
};

// A plan over Star. Variants: lo1 > hi1 rejects every dimension-1 row;
// no_filter1: dimension 1 keeps every row (NULL group keys from a);
// dim_filter: the fact filter reads a dimension output; groups 0..3 pick the
// GROUP BY (0: none, 1: a % 7, 2: a % 7, code, q, 3: year(day), q % 3).
struct Knobs {
    int32_t lo1 = 10, hi1 = 80;
    bool no_filter1 = false;
    int qcut = 40;
    bool dim_filter = false;
    int groups = 2;
    std::vector<int64_t> codes_pass = {1, 0, 1, 1, 0, 1, 1, 1, 0, 1};
};

inline Plan make_plan(const Star& s, const Knobs& k) {
    Plan p;
    Builder b{p};
    p.n_dims = 2;
    DimensionPlan& d1 = p.dims[0];
    d1.key_column = 0;
    d1.fact_column = 0;
    if (!k.no_filter1)
        d1.filter = b.add({I(Op::Col, Kind::Int, 1), I(Op::ConstInt, Kind::Int, 0, k.lo1),
                           I(Op::ConstInt, Kind::Int, 0, k.hi1), I(Op::Between)});
    d1.n_outputs = 2;
    d1.output_kinds[0] = Kind::Int;
    d1.outputs[0] = b.add({I(Op::Col, Kind::Int, 1), I(Op::ConstInt, Kind::Int, 0, 7), I(Op::Mod, Kind::Int, 0, 0, 0, 4)});
    d1.output_kinds[1] = Kind::Float;
    d1.outputs[1] = b.add({I(Op::Col, Kind::Float, 2)});
    DimensionPlan& d2 = p.dims[1];
    d2.key_column = 0;
    d2.fact_column = 1;
    int32_t t = b.pool(k.codes_pass);
    d2.filter = b.add({I(Op::Col, Kind::Int, 1), I(Op::Lookup, Kind::Bool, t, 10)});
    d2.n_outputs = 1;
    d2.output_kinds[0] = Kind::Int;
    d2.outputs[0] = b.add({I(Op::Col, Kind::Int, 1)});
    // q < qcut OR x IS NULL   [AND w > 0.2 when dim_filter]
    std::vector<Instr> f = {I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, k.qcut),
                            I(Op::Cmp, Kind::Int, 0, 0, static_cast<uint8_t>(CmpOp::Lt)), I(Op::Col, Kind::Float, 2),
                            I(Op::IsNull), I(Op::Or, Kind::Bool)};
    if (k.dim_filter) {
        f.push_back(I(Op::DimOut, Kind::Float, 0, 1));
        f.push_back(I(Op::ConstFloat, Kind::Float, 0, float_bits(0.2)));
        f.push_back(I(Op::Cmp, Kind::Float, 0, 0, static_cast<uint8_t>(CmpOp::Gt)));
        f.push_back(I(Op::And, Kind::Bool));
    }
    p.fact_filter = b.add(f);
    if (k.groups == 1 || k.groups == 2) p.group_parts[p.n_group_parts++] = b.add({I(Op::DimOut, Kind::Int, 0, 0)});
    if (k.groups == 2) {
        p.group_parts[p.n_group_parts++] = b.add({I(Op::DimOut, Kind::Int, 1, 0)});
        p.group_parts[p.n_group_parts++] = b.add({I(Op::Col, Kind::Int, 3)});
    }
    if (k.groups == 3) {
        p.group_parts[p.n_group_parts++] = b.add({I(Op::Col, Kind::Int, 5), I(Op::DatePart, Kind::Int, 0, 0, 0)});
        p.group_parts[p.n_group_parts++] =
            b.add({I(Op::Col, Kind::Int, 3), I(Op::ConstInt, Kind::Int, 0, 3), I(Op::Mod, Kind::Int, 0, 0, 0, 2)});
    }
    p.n_measures = 3;
    p.measures[0] = ProgramRef{};  // COUNT(*)
    p.measures[1] = b.add({I(Op::Col, Kind::Float, 2)});
    p.measures[2] = b.add({I(Op::Col, Kind::Float, 2), I(Op::DimOut, Kind::Float, 0, 1), I(Op::Mul, Kind::Float)});
    p.stratum_column = 4;
    p.n_strata = s.strata;
    return p;
}

struct RefCell {
    int64_t rows = 0;
    std::vector<double> vals[3];
};
using RefKey = std::vector<std::pair<int, int64_t>>;  // (is NULL, value): NULL after values

// The reference answer of make_plan(s, k): group -> per stratum the values.
inline std::map<RefKey, std::vector<RefCell>> reference(const Star& s, const Knobs& k) {
    std::map<RefKey, std::vector<RefCell>> out;
    for (int64_t r = 0; r < s.n; ++r) {
        if (is_null(s.fk1_nulls, r)) continue;
        int64_t row1 = -1, row2 = -1;
        for (int64_t i = 0; i < s.n1; ++i)
            if (s.key1[i] == s.fk1[r]) row1 = i;
        if (row1 < 0) continue;
        bool a_null = is_null(s.a1_nulls, row1);
        if (!k.no_filter1 && (a_null || s.a1[row1] < k.lo1 || s.a1[row1] > k.hi1)) continue;
        for (int64_t i = 0; i < s.n2; ++i)
            if (s.key2[i] == s.fk2[r]) row2 = i;
        if (row2 < 0 || !k.codes_pass[s.code2[row2]]) continue;
        bool x_null = is_null(s.x_nulls, r);
        if (!(s.q[r] < k.qcut || x_null)) continue;
        if (k.dim_filter && !(s.w1[row1] > 0.2)) continue;
        RefKey key;
        if (k.groups == 1 || k.groups == 2) key.push_back(a_null ? std::make_pair(1, int64_t(0)) : std::make_pair(0, int64_t(s.a1[row1] % 7)));
        if (k.groups == 2) {
            key.push_back({0, s.code2[row2]});
            key.push_back({0, s.q[r]});
        }
        if (k.groups == 3) {
            int y, m, d;
            j2date(s.day[r] + kPostgresEpochJdate, y, m, d);
            key.push_back({0, y});
            key.push_back({0, s.q[r] % 3});
        }
        std::vector<RefCell>& cells = out[key];
        cells.resize(static_cast<size_t>(s.strata));
        RefCell& c = cells[static_cast<size_t>(s.stratum[r])];
        ++c.rows;
        c.vals[0].push_back(1.0);
        if (!x_null) {
            c.vals[1].push_back(s.x[r]);
            c.vals[2].push_back(s.x[r] * s.w1[row1]);
        }
    }
    return out;
}

}  // namespace sjtest
