// The star join through the GPU service (starjoin_served.hpp): one request,
// Op::StarJoin. Inputs: the parameters, the serialized plan, the fact
// table's blob (cacheable: resident in the service under the caller's key,
// or absent when the caller saw that key resident) and the dimensions'
// blobs. Outputs: a fixed head and a body of the capacity the caller gives;
// a result larger than that writes the head alone, with the bytes it needs,
// and the caller asks once more with that capacity (the fact is resident by
// then, so only the small request travels again).
#include "core/starjoin/starjoin_served.hpp"

#include <algorithm>
#include <cstring>

#include "core/service.hpp"

namespace approx::starjoin {

namespace {

constexpr uint32_t kTableMagic = 0x31544a53u;  // "SJT1"

struct BlobHead {
    uint32_t magic;
    int32_t n_columns;
    int64_t rows;
    uint64_t bytes;  // the whole blob
};
struct BlobColumn {
    uint8_t type;
    uint8_t pad[7];
    uint64_t data_off, nulls_off;  // from the blob's start; 0: none
};

size_t align8(size_t v) { return (v + 7) & ~size_t(7); }
size_t values_bytes(const Table& t, int32_t c) {
    return static_cast<size_t>(t.rows) * static_cast<size_t>(column_width(t.columns[c].type));
}
size_t bitmap_bytes(int64_t rows) { return static_cast<size_t>((rows + 7) / 8); }

struct Params {
    uint64_t plan_bytes = 0, body_capacity = 0;
    int32_t n_dims = 0;
};

// What the service answers besides the body: the Result's scalars and the
// sizes of its four arrays (body: keys, rows, moments, key_nulls, in that
// order). body_bytes > the capacity: the body was not written.
struct Head {
    int32_t n_parts = 0, n_strata = 0, n_measures = 0, dense_groups = 0;
    int64_t groups = 0, joined_rows = 0;
    uint64_t n_keys = 0, n_rows = 0, n_moments = 0, n_key_nulls = 0;
    uint64_t body_bytes = 0;
    DimensionInfo dims[kMaxDims];
};

uint64_t body_bytes(const Head& h) {
    return align8(h.n_keys * sizeof(int64_t)) + align8(h.n_rows * sizeof(int64_t)) +
           align8(h.n_moments * sizeof(sample::Moments)) + align8(h.n_key_nulls);
}

// The first answer's body: enough for thousands of groups; more asks again.
constexpr uint64_t kFirstBodyBytes = uint64_t(1) << 20;

}  // namespace

// ---- tables as blobs -------------------------------------------------------------------

size_t table_blob_bytes(const Table& t) {
    size_t n = sizeof(BlobHead) + sizeof(BlobColumn) * static_cast<size_t>(std::max(t.n_columns, 0));
    for (int32_t c = 0; c < t.n_columns; ++c) {
        if (t.columns[c].data) n += align8(values_bytes(t, c));
        if (t.columns[c].nulls) n += align8(bitmap_bytes(t.rows));
    }
    return n;
}

void pack_table(const Table& t, uint8_t* out) {
    const size_t total = table_blob_bytes(t);
    std::memset(out, 0, total);
    BlobHead h{kTableMagic, t.n_columns, t.rows, total};
    std::memcpy(out, &h, sizeof h);
    size_t at = sizeof(BlobHead) + sizeof(BlobColumn) * static_cast<size_t>(std::max(t.n_columns, 0));
    for (int32_t c = 0; c < t.n_columns; ++c) {
        const Column& col = t.columns[c];
        BlobColumn bc{};
        bc.type = static_cast<uint8_t>(col.type);
        if (col.data) {
            bc.data_off = at;
            std::memcpy(out + at, col.data, values_bytes(t, c));
            at += align8(values_bytes(t, c));
        }
        if (col.nulls) {
            bc.nulls_off = at;
            std::memcpy(out + at, col.nulls, bitmap_bytes(t.rows));
            at += align8(bitmap_bytes(t.rows));
        }
        std::memcpy(out + sizeof(BlobHead) + sizeof(BlobColumn) * static_cast<size_t>(c), &bc, sizeof bc);
    }
}

Status unpack_table(const uint8_t* bytes, size_t n, std::vector<Column>& cols, Table& t, size_t* used) {
    t = Table();
    BlobHead h;
    if (bytes == nullptr || n < sizeof h) return Status::Error(StatusCode::Internal, "star join: table blob too short");
    std::memcpy(&h, bytes, sizeof h);
    if (h.magic != kTableMagic || h.n_columns < 0 || h.n_columns > 4096 || h.rows < 0 || h.bytes > n ||
        h.bytes < sizeof h + sizeof(BlobColumn) * static_cast<size_t>(h.n_columns))
        return Status::Error(StatusCode::Internal, "star join: bad table blob (%zu bytes)", n);
    cols.assign(static_cast<size_t>(h.n_columns), Column());
    t.n_columns = h.n_columns;
    t.rows = h.rows;
    for (int32_t c = 0; c < h.n_columns; ++c) {
        BlobColumn bc;
        std::memcpy(&bc, bytes + sizeof h + sizeof bc * static_cast<size_t>(c), sizeof bc);
        if (bc.type > static_cast<uint8_t>(ColType::Bool))
            return Status::Error(StatusCode::Internal, "star join: table blob column %d has type %u", c, bc.type);
        Column& col = cols[static_cast<size_t>(c)];
        col.type = static_cast<ColType>(bc.type);
        const uint64_t vb = static_cast<uint64_t>(h.rows) * static_cast<uint64_t>(column_width(col.type));
        const uint64_t nb = bitmap_bytes(h.rows);
        if ((bc.data_off && (bc.data_off % 8 || bc.data_off > h.bytes || vb > h.bytes - bc.data_off)) ||
            (bc.nulls_off && (bc.nulls_off > h.bytes || nb > h.bytes - bc.nulls_off)))
            return Status::Error(StatusCode::Internal, "star join: table blob column %d lies outside it", c);
        if (bc.data_off) col.data = bytes + bc.data_off;
        if (bc.nulls_off) col.nulls = bytes + bc.nulls_off;
    }
    t.columns = cols.empty() ? nullptr : cols.data();
    if (used) *used = static_cast<size_t>(h.bytes);
    return Status::Ok();
}

size_t dims_blob_bytes(const Table* dims, int32_t n) {
    size_t bytes = 0;
    for (int32_t d = 0; d < n; ++d) bytes += table_blob_bytes(dims[d]);
    return bytes;
}

void pack_dims(const Table* dims, int32_t n, uint8_t* out) {
    for (int32_t d = 0; d < n; ++d) {
        pack_table(dims[d], out);
        out += table_blob_bytes(dims[d]);
    }
}

// ---- the backend's side ----------------------------------------------------------------

Status run_in_service(const Plan& plan, const ServedInputs& in, const ExecContext& ctx, Result& out) {
    out = Result();
    std::vector<uint8_t> plan_bytes, dims, body;
    const int32_t n_dims = std::max(0, std::min(plan.n_dims, kMaxDims));
    const bool dims_absent = in.dims_blob == nullptr && in.dims_key != 0;  // resident under dims_key
    const uint8_t* dims_blob = in.dims_blob;
    size_t dims_n = in.dims_bytes;
    APPROX_TRY(guarded([&] {
        serialize(plan, plan_bytes);
        if (dims_blob == nullptr && !dims_absent) {  // not cached: packed here
            dims_n = dims_blob_bytes(in.dims, n_dims);
            dims.resize(dims_n);
            pack_dims(in.dims, n_dims, dims.data());
            dims_blob = dims.data();
        }
        return Status::Ok();
    }));
    Head head;
    uint64_t capacity = kFirstBodyBytes;
    for (int attempt = 0; attempt < 2; ++attempt) {
        APPROX_TRY(guarded([&] {
            body.resize(static_cast<size_t>(capacity));
            return Status::Ok();
        }));
        service::Request r(service::Op::StarJoin, in.fact_rows);
        Params p;
        p.plan_bytes = plan_bytes.size();
        p.body_capacity = capacity;
        p.n_dims = n_dims;
        r.add_param(p);
        r.add_in(plan_bytes.data(), plan_bytes.size());
        if (in.fact == nullptr) {
            r.add_resident_input(in.fact_key);
        } else {
            r.add_in(in.fact, in.fact_bytes);
            if (in.fact_key != 0) r.cache_last_input(in.fact_key);
        }
        if (dims_absent) {
            r.add_resident_input(in.dims_key);
        } else {
            r.add_in(dims_blob, dims_n);
            if (in.dims_key != 0) r.cache_last_input(in.dims_key);
        }
        r.add_out(&head, sizeof head);
        r.add_out(body.data(), body.size());
        APPROX_TRY(service::call(ctx, r));
        if (head.body_bytes <= capacity) break;
        capacity = head.body_bytes;  // a larger result: once more with room for it
    }
    if (head.body_bytes > capacity || head.body_bytes != body_bytes(head))
        return Status::Error(StatusCode::Internal, "GPU service: star join answer of %llu bytes",
                             static_cast<unsigned long long>(head.body_bytes));
    return guarded([&] {
        out.n_parts = head.n_parts;
        out.n_strata = head.n_strata;
        out.n_measures = head.n_measures;
        out.groups = head.groups;
        out.joined_rows = head.joined_rows;
        out.dense_groups = head.dense_groups != 0;
        std::copy(head.dims, head.dims + kMaxDims, out.dims);
        const uint8_t* b = body.data();
        auto take = [&b](auto& v, uint64_t count) {
            v.resize(static_cast<size_t>(count));
            const size_t bytes = static_cast<size_t>(count) * sizeof(v[0]);
            if (bytes) std::memcpy(v.data(), b, bytes);
            b += align8(bytes);
        };
        take(out.keys, head.n_keys);
        take(out.rows, head.n_rows);
        take(out.moments, head.n_moments);
        take(out.key_nulls, head.n_key_nulls);
        return Status::Ok();
    });
}

// ---- the service's side ----------------------------------------------------------------

Status serve_star_join(const ExecContext& ctx, const service::Served& req) {
    Params p;
    APPROX_TRY(req.param(0, p));
    if (p.n_dims < 0 || p.n_dims > kMaxDims)
        return Status::Error(StatusCode::Internal, "GPU service: star join with %d dimensions", p.n_dims);
    const uint8_t *plan_bytes = nullptr, *dims = nullptr;
    APPROX_TRY(req.input(1, static_cast<size_t>(p.plan_bytes), plan_bytes));
    // The fact and the dimensions: their blobs say their sizes (either may be resident).
    APPROX_TRY(req.check_in(2, req.n_in > 2 ? req.in_bytes[2] : 0));
    APPROX_TRY(req.check_in(3, req.n_in > 3 ? req.in_bytes[3] : 0));
    dims = static_cast<const uint8_t*>(req.in[3]);
    const size_t dims_n = req.in_bytes[3];
    Head* head = nullptr;
    uint8_t* body = nullptr;
    APPROX_TRY(req.output(0, 1, head));
    APPROX_TRY(req.output(1, static_cast<size_t>(p.body_capacity), body));
    *head = Head();

    Plan plan;
    APPROX_TRY(deserialize(plan_bytes, static_cast<size_t>(p.plan_bytes), plan));
    Inputs in;
    std::vector<Column> fact_cols, dim_cols[kMaxDims];
    const uint8_t* fact = static_cast<const uint8_t*>(req.in[2]);
    APPROX_TRY(unpack_table(fact, req.in_bytes[2], fact_cols, in.fact));
    size_t at = 0;
    for (int32_t d = 0; d < p.n_dims; ++d) {
        size_t used = 0;
        APPROX_TRY(unpack_table(dims + at, dims_n - at, dim_cols[d], in.dims[d], &used));
        at += used;
    }
    // Resident on this device: the GPU engine reads the device copies.
    auto on_device = [&ctx](const uint8_t* blob, std::vector<Column>& cols) {
        const ResidentInput* res = ctx.resident.find(blob);
        if (res == nullptr || res->device == nullptr) return;
        const char* dev = static_cast<const char*>(res->device);
        for (Column& c : cols) {
            if (c.data) c.device = dev + (static_cast<const uint8_t*>(c.data) - blob);
            if (c.nulls) c.device_nulls = reinterpret_cast<const uint8_t*>(dev + (c.nulls - blob));
        }
    };
    on_device(fact, fact_cols);
    for (int32_t d = 0; d < p.n_dims; ++d) on_device(dims, dim_cols[d]);

    Result r;
    APPROX_TRY(run(plan, in, ctx, r));
    head->n_parts = r.n_parts;
    head->n_strata = r.n_strata;
    head->n_measures = r.n_measures;
    head->dense_groups = r.dense_groups ? 1 : 0;
    head->groups = r.groups;
    head->joined_rows = r.joined_rows;
    head->n_keys = r.keys.size();
    head->n_rows = r.rows.size();
    head->n_moments = r.moments.size();
    head->n_key_nulls = r.key_nulls.size();
    std::copy(r.dims, r.dims + kMaxDims, head->dims);
    head->body_bytes = body_bytes(*head);
    if (head->body_bytes > p.body_capacity) return Status::Ok();  // the caller asks again with room
    uint8_t* b = body;
    auto put = [&b](const auto& v) {
        const size_t bytes = v.size() * sizeof(v[0]);
        if (bytes) std::memcpy(b, v.data(), bytes);
        b += align8(bytes);
    };
    put(r.keys);
    put(r.rows);
    put(r.moments);
    put(r.key_nulls);
    return Status::Ok();
}

}  // namespace approx::starjoin
