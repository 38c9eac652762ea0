// Engine calls sent to the GPU service: one process that owns the CUDA
// context for every backend (the glue is src/service/).
//
// A call the service can run is described as a Request: an operation and its
// input and output blobs (the first input is the operation's parameter
// struct). The backend's transport copies the inputs once into the service's
// shared staging area; the service runs the same engine function on them --
// the GPU engine, or the CPU engine under the CI test setting -- and writes
// the outputs back into that area. Blobs are plain bytes: every parameter
// struct is trivially copyable, and the service rebuilds its pointers from
// the blobs that follow it.
//
// An engine opts in at its public function, through try_run():
//     ExecContext ctx = caller;
//     Status st;
//     if (service::try_run(ctx, rows, st, [&](const ExecContext& c) { return f_in_service(..., c); }))
//         return st;  // answered by the service (success or an error to raise)
//     ... dispatch(ctx, ...)  // in the backend, as without a service
// Building the request and reading the reply (f_in_service) and the service's
// side (serve_f) live in core/<feature>_served.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "exec.hpp"

namespace approx::service {

enum class Op : uint32_t {
    None = 0,
    SynopsisEvaluate,  // synopsis::evaluate (approx_count_many, the GROUP BY answers, ...)
    TopkSelect,        // topk::select
    KdeBandwidth,      // kde::bandwidth / plugin_bandwidth / lscv / lscv_objective
    HashjoinCount,     // hashjoin::join_count
    MovingIndex,       // a moving-object index held by the service (moving_served.cpp)
    Closure,           // closure::count_pairs / reachable / compute and its rows (closure_served.cpp)
    StarJoin,          // starjoin::run (starjoin/starjoin_served.cpp)
    Count
};
const char* op_name(Op op);

constexpr int kMaxIn = 8;
constexpr int kMaxOut = 4;
constexpr size_t kMaxParamBytes = 8192;
constexpr int kMaxCached = kMaxResident;  // cacheable inputs per request

// The backend's side of one call.
struct Request {
    Op op = Op::None;
    int64_t rows = 0;  // input rows (statistics)
    int n_in = 0, n_out = 0;
    const void* in[kMaxIn] = {};
    size_t in_bytes[kMaxIn] = {};
    void* out[kMaxOut] = {};
    size_t out_bytes[kMaxOut] = {};  // capacity; the service writes exactly this much
    // Cacheable inputs, k < n_cached: in[cache_in[k]] may stay resident in
    // the service under cache_key[k] (a hash of its bytes), so that later
    // calls with the same bytes skip the copy. Each is omitted or sent on its own.
    int n_cached = 0;
    int cache_in[kMaxCached] = {-1, -1};
    uint64_t cache_key[kMaxCached] = {};
    // in[cache_in[k]] was never read: the caller found cache_key[k] in the
    // service's resident directory (add_resident_input). The transport sends
    // the request without it; a service that no longer holds it answers
    // NotServed, and the caller reads the input and asks again.
    bool cache_absent[kMaxCached] = {};
    // Only the executor of this device may run it (-1: any): a request on
    // state the service holds for the backend (a moving-object index).
    int device = -1;
    // Queue it and return at once (no answer, no outputs): freeing what the
    // service keeps, from code that must not wait (an abort's cleanup).
    bool detached = false;
    alignas(16) unsigned char params[kMaxParamBytes];

    Request(Op o, int64_t r) : op(o), rows(r) {}
    void add_in(const void* p, size_t bytes) {
        in[n_in] = p;
        in_bytes[n_in++] = p ? bytes : 0;
    }
    // The operation's parameters, copied (the argument may be a temporary).
    template <class T>
    void add_param(const T& v) {
        static_assert(std::is_trivially_copyable<T>::value, "parameters travel as bytes");
        static_assert(sizeof(T) <= kMaxParamBytes, "parameters too large");
        std::memcpy(params, &v, sizeof v);
        add_in(params, sizeof v);
    }
    void add_out(void* p, size_t bytes) {
        out[n_out] = p;
        out_bytes[n_out++] = p ? bytes : 0;
    }
    // Marks the input just added as cacheable; key = its content_hash when the
    // caller has it already (0: computed here). False, and the input is sent
    // as a plain one, when it is empty or kMaxCached inputs are cacheable already.
    bool cache_last_input(uint64_t key = 0);
    // Adds the cacheable input as absent (cache_absent): resident under key.
    // False, and nothing added, when kMaxCached inputs are cacheable already:
    // the caller then reads the input and add_in()s it.
    bool add_resident_input(uint64_t key);
};

// The service's view of a request: pointers into the staging area (or the
// resident cache). Every accessor checks the size it is told, so a request
// that does not match its operation is an error, never a stray read.
struct Served {
    Op op = Op::None;
    uint64_t owner = 0;        // the requesting session (0: unknown); ends when its backend exits
    uint32_t incarnation = 0;  // the service's start number
    int device = -1;           // the executor's device (-1: the CPU engines)
    int n_in = 0, n_out = 0;
    const void* in[kMaxIn] = {};
    size_t in_bytes[kMaxIn] = {};
    void* out[kMaxOut] = {};
    size_t out_bytes[kMaxOut] = {};

    template <class T>
    Status param(int i, T& v) const {
        static_assert(std::is_trivially_copyable<T>::value, "parameters travel as bytes");
        APPROX_TRY(check_in(i, sizeof v));
        std::memcpy(&v, in[i], sizeof v);
        return Status::Ok();
    }
    // in[i] as count values of T (count = 0: may be null).
    template <class T>
    Status input(int i, size_t count, const T*& p) const {
        APPROX_TRY(check_in(i, count * sizeof(T)));
        p = count ? static_cast<const T*>(in[i]) : nullptr;
        return Status::Ok();
    }
    template <class T>
    Status output(int i, size_t count, T*& p) const {
        APPROX_TRY(check_out(i, count * sizeof(T)));
        p = count ? static_cast<T*>(out[i]) : nullptr;
        return Status::Ok();
    }
    Status check_in(int i, size_t bytes) const;
    Status check_out(int i, size_t bytes) const;
};

// True when this call should go to the service: a transport is set, the
// device setting is not cpu, and `auto` would pick the GPU for `rows`.
bool wanted(const ExecContext& ctx, int64_t rows);

// Sends the request (ctx.service) and merges the service's statistics into
// ctx.stats. NotServed when it cannot be sent (too large for the staging area).
Status call(const ExecContext& ctx, Request& req);

// After call(): false when st is the answer (success or an error to raise).
// True when the caller should run the call itself: NotServed (in the backend,
// as without a service), or under `auto` a busy or exited service (then on the
// CPU, with a notice in ctx.stats). `local` is the context to run with.
bool fall_back(const ExecContext& ctx, const Status& st, ExecContext& local);

// wanted() -> send -> fall_back() for an engine's public function. ctx is the
// caller's context; when wanted(ctx, rows), send(ctx) makes the call in the
// service (a Status, normally through call()). Returns true when st is the
// answer. False when the caller runs the call itself with ctx: unchanged when
// the service was not wanted, fall_back()'s local context when it did not take
// the call.
template <class Send>
bool try_run(ExecContext& ctx, int64_t rows, Status& st, Send&& send) {
    if (!wanted(ctx, rows)) return false;
    st = send(static_cast<const ExecContext&>(ctx));
    ExecContext local;
    if (!fall_back(ctx, st, local)) return true;
    ctx = local;
    return false;
}

// ---- the service's side -----------------------------------------------------------

// Runs one request under ctx (the service's engine settings, the request's
// cancel flag). Outputs are written into req.out.
Status serve(const ExecContext& ctx, const Served& req);

// 64-bit hash of a byte range (the resident cache's key).
uint64_t content_hash(const void* p, size_t bytes);

// Resident inputs, per device, least recently used first out. The service's
// executor threads share it. In the CPU-engine mode (no GPU) entries hold the
// host copy only, so the cache's bookkeeping runs the same way.
struct CacheStats {
    int64_t entries = 0;
    int64_t bytes = 0;
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t evictions = 0;
};
void cache_configure(int64_t limit_bytes, bool on_device);
// A pinned entry for key, or null (a miss). While pinned it is not evicted.
struct CacheEntry;
const CacheEntry* cache_find(int device, uint64_t key, ResidentInput& out);
// Copies bytes into a new entry (host copy, and the device copy when on_device).
// Fails (and the caller goes on without the cache) when it cannot fit.
Status cache_insert(const ExecContext& ctx, int device, uint64_t key, const void* bytes, size_t n,
                    const CacheEntry*& entry, ResidentInput& out);
void cache_unpin(const CacheEntry* e);

// The executor's side of a request's cacheable inputs (in[k], key[k],
// omitted[k]: not sent, the backend saw it resident). Each one resident is
// pinned and read from the cache (a hit); each one sent and not resident is
// copied into it when it fits. Either way a pinned one is in ctx.resident.
// NotServed when an omitted one is not resident. Unpinned by unpin() or the
// destructor, also after an error.
struct CachedInputs {
    const CacheEntry* pinned[kMaxCached] = {};
    bool hit[kMaxCached] = {};
    int looked = 0;  // inputs looked up (hit[k] for k < looked: a hit or a miss)
    CachedInputs() = default;
    CachedInputs(const CachedInputs&) = delete;
    CachedInputs& operator=(const CachedInputs&) = delete;
    ~CachedInputs() { unpin(); }
    void unpin();
};
Status pin_cached(ExecContext& ctx, int device, int n, const int* in, const uint64_t* key, const bool* omitted,
                  Served& req, CachedInputs& pins);
CacheStats cache_stats();
// Keys currently resident (for the backends' shared directory); returns how many.
int cache_keys(uint64_t* keys, int max);
// Drops every unpinned entry of `device` (from that device's executor thread).
void cache_clear(int device);

// ---- what the service keeps for a session between requests -----------------------------

// A moving-object index, a closure's result: kept by handle for the session
// that made it, on the device that made it. Freed when the session asks,
// when it ends (reap_held) or with the service.
struct Held {
    virtual ~Held() = default;
    Op kind = Op::None;
    uint64_t owner = 0;
    int device = -1;
};
// Keeps h for req's session and device; handle = (incarnation << 32) | counter.
Status hold(const Served& req, std::shared_ptr<Held> h, uint64_t& handle);
// What handle names if it is req's session's, of this kind, on this device;
// else null (lost_held() is the error to answer).
std::shared_ptr<Held> held(const Served& req, uint64_t handle, Op kind);
void unhold(uint64_t handle);
Status lost_held();
// Frees what `device` keeps for sessions that ended (alive(owner) false); the
// device's executor calls it. Returns how many objects the service keeps.
int64_t reap_held(int device, bool (*alive)(uint64_t owner));

}  // namespace approx::service

// The operations' service entry points, in core/<feature>_served.cpp (serve()
// dispatches on Request::op to them).
namespace approx::synopsis {
Status serve_evaluate(const ExecContext& ctx, const service::Served& req);
}
namespace approx::topk {
Status serve_select(const ExecContext& ctx, const service::Served& req);
}
namespace approx::kde {
Status serve_bandwidth(const ExecContext& ctx, const service::Served& req);
}
namespace approx::hashjoin {
Status serve_join_count(const ExecContext& ctx, const service::Served& req);
}
namespace approx::moving {
Status serve_index(const ExecContext& ctx, const service::Served& req);
}
namespace approx::closure {
Status serve_closure(const ExecContext& ctx, const service::Served& req);
}
namespace approx::starjoin {
Status serve_star_join(const ExecContext& ctx, const service::Served& req);
}
