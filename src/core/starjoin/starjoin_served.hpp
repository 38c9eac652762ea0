// The star join through the GPU service (core/service.hpp, Op::StarJoin):
// tables travel as one blob each, run() runs in the service on the blobs,
// and the Result comes back in a fixed head and a body. The fact table's
// blob is the request's cacheable input: a backend that finds its key in the
// service's resident directory sends the request without it (and need not
// read the fact table at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/starjoin/starjoin.hpp"

namespace approx::starjoin {

// A table as one blob: a head (magic, columns, rows, the blob's bytes), per
// column its type and where its values and NULL bitmap lie (0: none), then
// the values (rows x the type's width) and bitmaps, each 8-byte aligned.
size_t table_blob_bytes(const Table& t);
void pack_table(const Table& t, uint8_t* out);  // writes table_blob_bytes(t) bytes
// The table a blob holds: t.columns points into cols, the values into the
// blob. Checks every size against n; *used: the blob's bytes (blobs may follow).
Status unpack_table(const uint8_t* bytes, size_t n, std::vector<Column>& cols, Table& t, size_t* used = nullptr);

// What run_in_service sends besides the plan.
struct ServedInputs {
    const uint8_t* fact = nullptr;  // pack_table() of the fact table; null: not read (resident under fact_key)
    size_t fact_bytes = 0;
    uint64_t fact_key = 0;  // the fact blob's key in the service's resident cache (0: not cached)
    int64_t fact_rows = 0;  // the fact's rows, or an estimate when it was not read (statistics)
    const Table* dims = nullptr;  // plan.n_dims tables (packed here when dims_blob and dims_key are unset)
    // The dimensions as one blob (pack_dims()), cacheable like the fact under
    // dims_key (0: not cached); null with dims_key set: resident under it.
    const uint8_t* dims_blob = nullptr;
    size_t dims_bytes = 0;
    uint64_t dims_key = 0;
};

// The dimensions' blobs one after another (unpack_table reads them in turn).
size_t dims_blob_bytes(const Table* dims, int32_t n);
void pack_dims(const Table* dims, int32_t n, uint8_t* out);  // writes dims_blob_bytes(dims, n) bytes

// run() in the GPU service. NotServed: the caller runs it itself -- the
// request is larger than the staging area, or `fact` or `dims_blob` was null
// and the service no longer holds it (pack both and call again).
Status run_in_service(const Plan& plan, const ServedInputs& in, const ExecContext& ctx, Result& out);

}  // namespace approx::starjoin
