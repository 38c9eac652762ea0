// The star join through the GPU service (issue 39): when the session's
// engine calls go to the service, the Approx Star Join node sends the plan,
// the sample relation's columns and the dimensions as one request
// (core/starjoin/starjoin_served.hpp), so no backend opens a GPU context of
// its own. The fact's columns and the dimensions stay resident in the
// service, each under the key of its version (cache.cpp,
// readers/relation_version.h: a sample relation's storage and size -- only
// a build writes it, and a build makes a new relation; any other table's
// all-visible pages and VACUUM history) and the columns read, so a key never
// names stale columns. A backend that finds the fact's key in the service's
// resident directory does not read it at all. The service evicts least
// recently used entries first (approx_gpu.service_cache_size); a request
// sent without columns the service no longer holds is answered NotServed,
// and the backend reads and sends them (one retry).
#include "starjoin/starjoin_glue.h"

extern "C" {
#include "access/table.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "core/service.hpp"
#include "core/starjoin/starjoin_served.hpp"

namespace sj = approx::starjoin;

// The resident key of the dimensions: their versions' keys (cache.cpp: each
// the table's version and the columns read) in the plan's order; 0 when
// some dimension has no version (its rows are this statement's read).
static uint64 dims_key(const uint64* dim_keys, int n_dims) {
    struct {
        uint32 magic;
        int32 n_dims;
        uint64 keys[sj::kMaxDims];
    } k;
    memset(&k, 0, sizeof k);
    k.magic = 0x44534a53u;  // "SJSD"
    k.n_dims = n_dims;
    for (int d = 0; d < n_dims; ++d) {
        if (dim_keys[d] == 0) return 0;
        k.keys[d] = dim_keys[d];
    }
    return n_dims > 0 ? approx::service::content_hash(&k, sizeof k) : 0;
}

// Packs the dimensions into one blob for the request.
static void pack_dims(const sj::Inputs* in, int n_dims, sj::ServedInputs* si) {
    const size_t n = sj::dims_blob_bytes(in->dims, n_dims);
    uint8* blob = static_cast<uint8*>(palloc_extended(Max(n, 1), MCXT_ALLOC_HUGE));
    sj::pack_dims(in->dims, n_dims, blob);
    si->dims_blob = blob;
    si->dims_bytes = n;
}

// Reads the fact columns (read) and packs them into one blob for the request.
static void read_and_pack(StarJoinReadFact read, void* arg, sj::Inputs* in, sj::ServedInputs* si) {
    read(arg, &in->fact);
    const size_t n = sj::table_blob_bytes(in->fact);
    uint8* blob = static_cast<uint8*>(palloc_extended(n, MCXT_ALLOC_HUGE));
    sj::pack_table(in->fact, blob);
    si->fact = blob;
    si->fact_bytes = n;
    si->fact_rows = in->fact.rows;
}

bool starjoin_run_served(const StarJoinTable* fact, uint64 key, const sj::Plan* plan, sj::Inputs* in,
                         const uint64* dim_keys, StarJoinReadFact read, void* arg, approx::ExecContext* ctx,
                         sj::Result* out, approx::Status* status) {
    if (ctx->service == nullptr || ctx->mode == approx::DeviceMode::Cpu) return false;
    Relation rel = table_open(fact->relid, AccessShareLock);
    const BlockNumber blocks = RelationGetNumberOfBlocks(rel);
    // The rows for the device choice under auto, before any is read: the
    // relation's statistics, else its blocks at a row of 32 bytes or more.
    const double reltuples = rel->rd_rel->reltuples;
    const int64 rows = reltuples >= 0 ? static_cast<int64>(reltuples) : static_cast<int64>(blocks) * (BLCKSZ / 32);
    table_close(rel, NoLock);
    if (!approx::service::wanted(*ctx, rows)) return false;

    sj::ServedInputs si;
    si.fact_key = key;
    si.fact_rows = rows;
    const GpuServiceHooks& hooks = gpu_service_hooks();
    // Read already (a text column: its codes are this read's): send them.
    const bool resident = in->fact.columns == nullptr && hooks.resident != nullptr && hooks.resident(key);
    if (!resident) read_and_pack(read, arg, in, &si);
    si.dims_key = dims_key(dim_keys, plan->n_dims);
    const bool dims_resident = si.dims_key != 0 && hooks.resident != nullptr && hooks.resident(si.dims_key);
    if (!dims_resident) pack_dims(in, plan->n_dims, &si);
    approx::Status st = approx::guarded([&] { return sj::run_in_service(*plan, si, *ctx, *out); });
    bool sent = !resident;
    if ((resident || dims_resident) && st.code == approx::StatusCode::NotServed) {  // evicted since the directory said so
        if (si.fact == nullptr) read_and_pack(read, arg, in, &si);
        if (si.dims_blob == nullptr) pack_dims(in, plan->n_dims, &si);
        st = approx::guarded([&] { return sj::run_in_service(*plan, si, *ctx, *out); });
        sent = true;
    }
    approx::ExecContext local;
    if (!approx::service::fall_back(*ctx, st, local)) {
        *status = st;
        aqp_sample_note_star_join_service(sent ? 1 : 2);
        return true;
    }
    *ctx = local;  // in the backend: too large for the staging area, or (auto) a busy or stopped service
    aqp_sample_note_star_join_service(0);
    return false;
}
