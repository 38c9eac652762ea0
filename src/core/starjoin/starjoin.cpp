// The star-join engine's public call (dispatch), the plan's validation and
// serialisation, and what both engines share on the host: the group layout,
// the budget and the result's assembly. The engines: starjoin_cpu.cpp and
// cuda/starjoin.cu.
#include <algorithm>
#include <cstring>

#include "core/starjoin/starjoin_internal.hpp"

namespace approx::starjoin {

Status error_word_status(uint64_t word, const char* where) {
    if (word == kNoError) return Status::Ok();
    Status st = eval_error_status(static_cast<int32_t>(word & 0xff));
    if (st.ok()) return st;
    Status out = st;
    std::snprintf(out.message, sizeof out.message, "%.200s (%.40s row %llu)", st.message, where,
                  static_cast<unsigned long long>(word >> 8));
    return out;
}

namespace {

constexpr uint32_t kPlanMagic = 0x31504a53u;  // "SJP1"

void mark_columns(const Plan& plan, ProgramRef ref, std::vector<uint8_t>& used) {
    for (int32_t i = 0; i < ref.length; ++i) {
        const Instr& in = plan.code[static_cast<size_t>(ref.first + i)];
        if (in.op == Op::Col) used[static_cast<size_t>(in.a)] = 1;
    }
}

Status check_table(const Table& t, const char* what) {
    if (t.rows < 0 || t.n_columns < 0 || (t.n_columns > 0 && t.columns == nullptr))
        return Status::Error(StatusCode::InvalidArgument, "%s: bad table (rows %lld, columns %d)", what,
                             static_cast<long long>(t.rows), t.n_columns);
    for (int32_t c = 0; c < t.n_columns; ++c)
        if (static_cast<uint8_t>(t.columns[c].type) > static_cast<uint8_t>(ColType::Bool))
            return Status::Error(StatusCode::InvalidArgument, "%s: column %d has an unknown type", what, c);
    return Status::Ok();
}

bool int_column(const Table& t, int32_t c) {
    return c >= 0 && c < t.n_columns && column_kind(t.columns[c].type) == Kind::Int;
}

Status check_data(const Table& t, const std::vector<uint8_t>& used, bool host, const char* what) {
    if (t.rows == 0) return Status::Ok();
    for (int32_t c = 0; c < t.n_columns; ++c)
        if (used[static_cast<size_t>(c)] && t.columns[c].data == nullptr && (host || t.columns[c].device == nullptr))
            return Status::Error(StatusCode::InvalidArgument, "%s: column %d has no %s", what, c,
                                 host ? "host data (the CPU engine reads host columns)" : "data");
    return Status::Ok();
}

}  // namespace

Status prepare(const Plan& plan, const Inputs& in, bool host_data, Prepared& out) {
    const PlanShape& s = plan;
    if (s.n_dims < 0 || s.n_dims > kMaxDims || s.n_group_parts < 0 || s.n_group_parts > kMaxGroupParts ||
        s.n_measures < 0 || s.n_measures > kMaxMeasures || s.n_strata < 1 || s.n_strata > (1 << 24) ||
        s.state_budget < 0)
        return Status::Error(StatusCode::InvalidArgument,
                             "star join: %d dimensions (max %d), %d group parts (max %d), %d measures (max %d), "
                             "%d strata, budget %lld",
                             s.n_dims, kMaxDims, s.n_group_parts, kMaxGroupParts, s.n_measures, kMaxMeasures,
                             s.n_strata, static_cast<long long>(s.state_budget));
    if (plan.code.size() > (size_t(1) << 30) || plan.pool.size() > (size_t(1) << 30))
        return Status::Error(StatusCode::ProgramLimit, "star join: code or constant pool too large");
    const int32_t code_n = static_cast<int32_t>(plan.code.size()), pool_n = static_cast<int32_t>(plan.pool.size());
    APPROX_TRY(check_table(in.fact, "fact table"));
    const Table& f = in.fact;
    std::vector<ColType> fact_types(static_cast<size_t>(f.n_columns));
    for (int32_t c = 0; c < f.n_columns; ++c) fact_types[static_cast<size_t>(c)] = f.columns[c].type;
    out.fact_used.assign(static_cast<size_t>(f.n_columns), 0);
    out.dim_used.assign(static_cast<size_t>(s.n_dims), {});
    const Kind* out_kinds[kMaxDims] = {};
    int32_t n_out[kMaxDims] = {};
    for (int32_t d = 0; d < s.n_dims; ++d) {
        const DimensionPlan& dp = s.dims[d];
        const Table& t = in.dims[d];
        char what[64];
        std::snprintf(what, sizeof what, "dimension %d", d);
        APPROX_TRY(check_table(t, what));
        if (!int_column(t, dp.key_column) || !int_column(f, dp.fact_column))
            return Status::Error(StatusCode::InvalidArgument,
                                 "dimension %d: key column %d and fact column %d must be integer columns", d,
                                 dp.key_column, dp.fact_column);
        if (dp.n_outputs < 0 || dp.n_outputs > kMaxDimOutputs)
            return Status::Error(StatusCode::InvalidArgument, "dimension %d: %d outputs (max %d)", d, dp.n_outputs,
                                 kMaxDimOutputs);
        std::vector<ColType> types(static_cast<size_t>(t.n_columns));
        for (int32_t c = 0; c < t.n_columns; ++c) types[static_cast<size_t>(c)] = t.columns[c].type;
        ProgramScope scope;
        scope.columns = types.data();
        scope.n_columns = t.n_columns;
        std::snprintf(what, sizeof what, "dimension %d filter", d);
        APPROX_TRY(validate_program(plan.code.data(), code_n, plan.pool.data(), pool_n, dp.filter, scope, Kind::Bool,
                                    what));
        std::vector<uint8_t>& used = out.dim_used[static_cast<size_t>(d)];
        used.assign(static_cast<size_t>(t.n_columns), 0);
        used[static_cast<size_t>(dp.key_column)] = 1;
        mark_columns(plan, dp.filter, used);
        for (int32_t o = 0; o < dp.n_outputs; ++o) {
            if (static_cast<uint8_t>(dp.output_kinds[o]) > static_cast<uint8_t>(Kind::Bool) || dp.outputs[o].length == 0)
                return Status::Error(StatusCode::InvalidArgument, "dimension %d output %d: no program or bad kind", d, o);
            std::snprintf(what, sizeof what, "dimension %d output %d", d, o);
            APPROX_TRY(validate_program(plan.code.data(), code_n, plan.pool.data(), pool_n, dp.outputs[o], scope,
                                        dp.output_kinds[o], what));
            mark_columns(plan, dp.outputs[o], used);
        }
        APPROX_TRY(check_data(t, used, host_data, what));
        out_kinds[d] = dp.output_kinds;
        n_out[d] = dp.n_outputs;
        out.fact_used[static_cast<size_t>(dp.fact_column)] = 1;
    }
    ProgramScope scope;
    scope.columns = fact_types.data();
    scope.n_columns = f.n_columns;
    scope.dim_output_kinds = out_kinds;
    scope.dim_outputs = n_out;
    scope.n_dims = s.n_dims;
    bool uses_dims = false;
    APPROX_TRY(validate_program(plan.code.data(), code_n, plan.pool.data(), pool_n, s.fact_filter, scope, Kind::Bool,
                                "fact filter", &uses_dims));
    out.filter_first = !uses_dims;
    mark_columns(plan, s.fact_filter, out.fact_used);
    char what[64];
    for (int32_t p = 0; p < s.n_group_parts; ++p) {
        std::snprintf(what, sizeof what, "group part %d", p);
        if (s.group_parts[p].length == 0)
            return Status::Error(StatusCode::InvalidArgument, "%s: no program", what);
        APPROX_TRY(validate_program(plan.code.data(), code_n, plan.pool.data(), pool_n, s.group_parts[p], scope,
                                    Kind::Int, what));
        mark_columns(plan, s.group_parts[p], out.fact_used);
    }
    for (int32_t m = 0; m < s.n_measures; ++m) {
        std::snprintf(what, sizeof what, "measure %d", m);
        APPROX_TRY(validate_program(plan.code.data(), code_n, plan.pool.data(), pool_n, s.measures[m], scope,
                                    Kind::Float, what));
        mark_columns(plan, s.measures[m], out.fact_used);
    }
    if (s.stratum_column >= 0 || s.n_strata > 1) {
        const int32_t c = s.stratum_column;
        if (c < 0 || c >= f.n_columns ||
            (f.columns[c].type != ColType::Int32 && f.columns[c].type != ColType::Code))
            return Status::Error(StatusCode::InvalidArgument,
                                 "the stratum column %d must be an int32 fact column (with %d strata)", c, s.n_strata);
        out.fact_used[static_cast<size_t>(c)] = 1;
    }
    return check_data(f, out.fact_used, host_data, "fact table");
}

Status check_budget(const PlanShape& plan, uint64_t groups, const char* what) {
    const uint64_t per_group = state_bytes(plan, 1);
    if (groups > static_cast<uint64_t>(plan.state_budget) / per_group)
        return Status::Error(StatusCode::Declined,
                             "the star join's state (%llu %s groups x %d strata x %d measures) passes its budget of "
                             "%lld bytes",
                             static_cast<unsigned long long>(groups), what, plan.n_strata, plan.n_measures,
                             static_cast<long long>(plan.state_budget));
    return Status::Ok();
}

Status choose_layout(const PlanShape& plan, const PartDomain* dom, int64_t joined, GroupLayout& g) {
    g = GroupLayout();
    g.n_parts = plan.n_group_parts;
    constexpr uint64_t kMaxKeys = uint64_t(1) << 62;
    uint64_t product = 1;
    for (int32_t p = 0; p < g.n_parts; ++p) {
        uint64_t values = 0;
        g.min[p] = 0;
        if (dom[p].min <= dom[p].max) {
            uint64_t range = static_cast<uint64_t>(dom[p].max) - static_cast<uint64_t>(dom[p].min);
            if (range >= kMaxKeys)
                return Status::Error(StatusCode::Declined, "group part %d spans more than 2^62 values", p);
            values = range + 1;
            g.min[p] = dom[p].min;
        }
        g.has_null[p] = dom[p].has_null ? 1 : 0;
        g.span[p] = std::max<uint64_t>(1, values + g.has_null[p]);
        if (product > kMaxKeys / g.span[p])
            return Status::Error(StatusCode::Declined, "the group keys span more than 2^62 values");
        product *= g.span[p];
    }
    uint64_t mult = 1;
    for (int32_t p = g.n_parts - 1; p >= 0; --p) {
        g.mult[p] = mult;
        mult *= g.span[p];
    }
    g.product = product;
    g.dense = product <= static_cast<uint64_t>(4 * joined + 1024) && check_budget(plan, product, "dense").ok();
    return Status::Ok();
}

void fill_result(const PlanShape& plan, const GroupLayout& g, const std::vector<uint64_t>& packed,
                 const std::vector<int64_t>& rows, const std::vector<Acc>& acc, Result& out) {
    const size_t groups = packed.size(), parts = static_cast<size_t>(plan.n_group_parts);
    out.n_parts = plan.n_group_parts;
    out.n_strata = plan.n_strata;
    out.n_measures = plan.n_measures;
    out.groups = static_cast<int64_t>(groups);
    out.dense_groups = g.dense;
    out.keys.assign(groups * parts, 0);
    out.key_nulls.assign(groups * parts, 0);
    out.rows = rows;
    out.joined_rows = 0;
    for (int64_t r : rows) out.joined_rows += r;
    for (size_t i = 0; i < groups; ++i) {
        uint64_t k = packed[i];
        for (size_t p = 0; p < parts; ++p) {
            uint64_t digit = k / g.mult[p];
            k -= digit * g.mult[p];
            const bool null = g.has_null[p] && digit == g.span[p] - 1;
            out.key_nulls[i * parts + p] = null ? 1 : 0;
            out.keys[i * parts + p] = null ? 0 : static_cast<int64_t>(static_cast<uint64_t>(g.min[p]) + digit);
        }
    }
    out.moments.resize(acc.size());
    for (size_t i = 0; i < acc.size(); ++i) {
        sample::Moments& m = out.moments[i];
        const Acc& a = acc[i];
        m.n = a.n;
        m.sum = a.sum;
        m.mean = a.n > 0 ? a.sum / a.n : 0;
        m.m2 = a.m2;
        m.m3 = a.m3;
        m.m4 = a.m4;
        m.nonzero = a.nonzero;
    }
}

void finish_groups(const PlanShape& plan, const GroupLayout& g, const uint64_t* keys, uint64_t groups,
                   const std::vector<int64_t>& rows, const std::vector<Acc>& acc, Result& out) {
    const size_t S = static_cast<size_t>(plan.n_strata), M = static_cast<size_t>(plan.n_measures);
    std::vector<uint64_t> packed;
    std::vector<int64_t> grows;
    std::vector<Acc> gacc;
    for (uint64_t i = 0; i < groups; ++i) {
        const size_t c0 = static_cast<size_t>(i) * S;
        int64_t total = 0;
        for (size_t s = 0; s < S; ++s) total += rows[c0 + s];
        if (total == 0) continue;
        packed.push_back(keys ? keys[i] : i);
        grows.insert(grows.end(), rows.begin() + static_cast<std::ptrdiff_t>(c0),
                     rows.begin() + static_cast<std::ptrdiff_t>(c0 + S));
        gacc.insert(gacc.end(), acc.begin() + static_cast<std::ptrdiff_t>(c0 * M),
                    acc.begin() + static_cast<std::ptrdiff_t>((c0 + S) * M));
    }
    fill_result(plan, g, packed, grows, gacc, out);
}

void serialize(const Plan& plan, std::vector<uint8_t>& out) {
    const PlanShape& shape = plan;
    uint32_t head[4] = {kPlanMagic, static_cast<uint32_t>(sizeof(PlanShape)), static_cast<uint32_t>(plan.code.size()),
                        static_cast<uint32_t>(plan.pool.size())};
    const size_t n = sizeof head + sizeof shape + plan.code.size() * sizeof(Instr) + plan.pool.size() * 8;
    out.resize(n);
    uint8_t* p = out.data();
    std::memcpy(p, head, sizeof head);
    p += sizeof head;
    std::memcpy(p, &shape, sizeof shape);
    p += sizeof shape;
    if (!plan.code.empty()) std::memcpy(p, plan.code.data(), plan.code.size() * sizeof(Instr));
    p += plan.code.size() * sizeof(Instr);
    if (!plan.pool.empty()) std::memcpy(p, plan.pool.data(), plan.pool.size() * 8);
}

Status deserialize(const uint8_t* bytes, size_t n, Plan& plan) {
    uint32_t head[4];
    if (bytes == nullptr || n < sizeof head + sizeof(PlanShape))
        return Status::Error(StatusCode::InvalidArgument, "star join plan: %zu bytes is too short", n);
    std::memcpy(head, bytes, sizeof head);
    const size_t want = sizeof head + sizeof(PlanShape) + size_t(head[2]) * sizeof(Instr) + size_t(head[3]) * 8;
    if (head[0] != kPlanMagic || head[1] != sizeof(PlanShape) || n != want)
        return Status::Error(StatusCode::InvalidArgument, "star join plan: bad header or size (%zu bytes)", n);
    const uint8_t* p = bytes + sizeof head;
    std::memcpy(static_cast<PlanShape*>(&plan), p, sizeof(PlanShape));
    p += sizeof(PlanShape);
    plan.code.resize(head[2]);
    if (head[2]) std::memcpy(plan.code.data(), p, size_t(head[2]) * sizeof(Instr));
    p += size_t(head[2]) * sizeof(Instr);
    plan.pool.resize(head[3]);
    if (head[3]) std::memcpy(plan.pool.data(), p, size_t(head[3]) * 8);
    return Status::Ok();
}

Status run(const Plan& plan, const Inputs& in, const ExecContext& ctx, Result& out) {
    if (ctx.stats) ctx.stats->reset("starjoin");
    out = Result();
    Prepared prep;
    APPROX_TRY(guarded([&] { return prepare(plan, in, false, prep); }));
    if (ctx.stats) ctx.stats->rows = in.fact.rows;
    return dispatch(
        ctx, in.fact.rows,
        [&] {
            APPROX_TRY(prepare(plan, in, true, prep));
            return cpu_run(plan, in, prep, ctx, out);
        },
        APPROX_GPU(gpu_run(plan, in, prep, ctx, out)));
}

}  // namespace approx::starjoin
