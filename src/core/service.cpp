// The engine side of the GPU service: requests, the fallback rule and the
// resident cache (service.hpp). No PostgreSQL here; the queue, the process
// and the shared memory are the glue's (src/service/).
#include "service.hpp"

#include <cstdio>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "gpu.hpp"
#include "hash_mix.hpp"

namespace approx::service {

const char* op_name(Op op) {
    switch (op) {
        case Op::SynopsisEvaluate: return "synopsis evaluate";
        case Op::TopkSelect: return "topk select";
        case Op::KdeBandwidth: return "kde bandwidth";
        case Op::HashjoinCount: return "hash join count";
        case Op::MovingIndex: return "moving-object index";
        case Op::Closure: return "transitive closure";
        case Op::StarJoin: return "star join";
        case Op::None:
        case Op::Count: break;
    }
    return "unknown";
}

bool Request::cache_last_input(uint64_t key) {
    if (n_in == 0 || in_bytes[n_in - 1] == 0 || n_cached >= kMaxCached) return false;
    const int i = n_in - 1;
    cache_in[n_cached] = i;
    cache_key[n_cached] = key != 0 ? key : content_hash(in[i], in_bytes[i]);
    cache_absent[n_cached++] = false;
    return true;
}

bool Request::add_resident_input(uint64_t key) {
    if (n_cached >= kMaxCached) return false;
    add_in(nullptr, 0);
    cache_in[n_cached] = n_in - 1;
    cache_key[n_cached] = key;
    cache_absent[n_cached++] = true;
    return true;
}

Status Served::check_in(int i, size_t bytes) const {
    if (i < 0 || i >= n_in || in_bytes[i] != bytes || (bytes > 0 && in[i] == nullptr))
        return Status::Error(StatusCode::Internal, "GPU service: %s request input %d has %zu bytes, expected %zu",
                             op_name(op), i, i >= 0 && i < n_in ? in_bytes[i] : size_t(0), bytes);
    return Status::Ok();
}

Status Served::check_out(int i, size_t bytes) const {
    if (i < 0 || i >= n_out || out_bytes[i] != bytes || (bytes > 0 && out[i] == nullptr))
        return Status::Error(StatusCode::Internal, "GPU service: %s request output %d has %zu bytes, expected %zu",
                             op_name(op), i, i >= 0 && i < n_out ? out_bytes[i] : size_t(0), bytes);
    return Status::Ok();
}

bool wanted(const ExecContext& ctx, int64_t rows) {
    if (ctx.service == nullptr || ctx.mode == DeviceMode::Cpu) return false;
    return ctx.mode == DeviceMode::Gpu || rows >= ctx.gpu_min_rows;
}

Status call(const ExecContext& ctx, Request& req) {
    if (ctx.service == nullptr) return Status::Error(StatusCode::NotServed, "no GPU service");
    return ctx.service(ctx, req);
}

bool fall_back(const ExecContext& ctx, const Status& st, ExecContext& local) {
    local = ctx;
    local.service = nullptr;
    if (st.code == StatusCode::NotServed) return true;
    if (ctx.mode != DeviceMode::Auto || (st.code != StatusCode::ServiceBusy && st.code != StatusCode::ServiceDown))
        return false;
    local.mode = DeviceMode::Cpu;
    if (ctx.stats) {
        std::snprintf(ctx.stats->notice, sizeof ctx.stats->notice, "%.200s; ran on the CPU instead", st.message);
        ctx.stats->device = Device::Cpu;
        ctx.stats->cpu_threads = ctx.cpu_threads;
    }
    return true;
}

Status serve(const ExecContext& ctx, const Served& req) {
    return guarded([&]() -> Status {
        switch (req.op) {
            case Op::SynopsisEvaluate: return synopsis::serve_evaluate(ctx, req);
            case Op::TopkSelect: return topk::serve_select(ctx, req);
            case Op::KdeBandwidth: return kde::serve_bandwidth(ctx, req);
            case Op::HashjoinCount: return hashjoin::serve_join_count(ctx, req);
            case Op::MovingIndex: return moving::serve_index(ctx, req);
            case Op::Closure: return closure::serve_closure(ctx, req);
            case Op::StarJoin: return starjoin::serve_star_join(ctx, req);
            case Op::None:
            case Op::Count: break;
        }
        return Status::Error(StatusCode::Internal, "GPU service: unknown operation %u", static_cast<unsigned>(req.op));
    });
}

uint64_t content_hash(const void* p, size_t bytes) {
    // Four independent lanes of 8-byte words (a few GB/s), then the tail.
    const unsigned char* b = static_cast<const unsigned char*>(p);
    uint64_t lane[4] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull};
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32)
        for (int k = 0; k < 4; ++k) {
            uint64_t w;
            std::memcpy(&w, b + i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * 0xff51afd7ed558ccdull;
            lane[k] ^= lane[k] >> 29;
        }
    uint64_t h = bytes;
    for (int k = 0; k < 4; ++k) h = mix64(h ^ lane[k]);
    for (; i < bytes; ++i) h = mix64(h ^ b[i]);
    return h == 0 ? 1 : h;  // 0 means "no key"
}

// ---- the resident cache ---------------------------------------------------------------

struct CacheEntry {
    int device = 0;
    uint64_t key = 0;
    std::vector<unsigned char> host;
    void* dev = nullptr;
    int pins = 0;
};

namespace {

struct Cache {
    std::mutex lock;
    int64_t limit = 0;
    bool on_device = false;
    std::list<CacheEntry> lru;                                            // front: most recently used
    std::unordered_map<uint64_t, std::list<CacheEntry>::iterator> index;  // (device, key) folded
    CacheStats stats;
};
Cache cache;

uint64_t slot_key(int device, uint64_t key) { return mix64(key ^ (static_cast<uint64_t>(device) << 56)); }

// Frees unpinned entries of `device` (the calling thread's: device memory is
// freed on its own stream) from the back until `need` more bytes fit. Caller
// holds the lock.
void evict_for(int device, int64_t need) {
    for (auto it = cache.lru.end(); it != cache.lru.begin() && cache.stats.bytes + need > cache.limit;) {
        --it;
        if (it->pins > 0 || it->device != device) continue;
        if (it->dev) gpu::resident_free(it->dev, it->host.size());
        cache.stats.bytes -= static_cast<int64_t>(it->host.size());
        cache.stats.entries -= 1;
        cache.stats.evictions += 1;
        cache.index.erase(slot_key(it->device, it->key));
        it = cache.lru.erase(it);
    }
}

}  // namespace

void cache_configure(int64_t limit_bytes, bool on_device) {
    std::lock_guard<std::mutex> g(cache.lock);
    cache.limit = limit_bytes;
    cache.on_device = on_device;
}

const CacheEntry* cache_find(int device, uint64_t key, ResidentInput& out) {
    out = ResidentInput();
    std::lock_guard<std::mutex> g(cache.lock);
    auto f = cache.index.find(slot_key(device, key));
    if (f == cache.index.end() || f->second->key != key || f->second->device != device) {
        cache.stats.misses += 1;
        return nullptr;
    }
    cache.lru.splice(cache.lru.begin(), cache.lru, f->second);
    CacheEntry& e = *f->second;
    e.pins += 1;
    cache.stats.hits += 1;
    out.host = e.host.data();
    out.device = e.dev;
    out.bytes = e.host.size();
    return &e;
}

Status cache_insert(const ExecContext&, int device, uint64_t key, const void* bytes, size_t n, const CacheEntry*& entry,
                    ResidentInput& out) {
    entry = nullptr;
    out = ResidentInput();
    return guarded([&]() -> Status {
        std::lock_guard<std::mutex> g(cache.lock);
        if (cache.limit <= 0 || static_cast<int64_t>(n) > cache.limit)
            return Status::Error(StatusCode::GpuOutOfMemory, "larger than the resident cache");
        if (cache.index.count(slot_key(device, key))) return Status::Error(StatusCode::Internal, "already resident");
        evict_for(device, static_cast<int64_t>(n));
        if (cache.stats.bytes + static_cast<int64_t>(n) > cache.limit)
            return Status::Error(StatusCode::GpuOutOfMemory, "the resident cache is full of inputs in use");
        CacheEntry e;
        e.device = device;
        e.key = key;
        e.host.assign(static_cast<const unsigned char*>(bytes), static_cast<const unsigned char*>(bytes) + n);
        if (cache.on_device) APPROX_TRY(gpu::resident_upload(e.host.data(), n, e.dev));
        e.pins = 1;
        cache.lru.push_front(std::move(e));
        cache.index[slot_key(device, key)] = cache.lru.begin();
        cache.stats.bytes += static_cast<int64_t>(n);
        cache.stats.entries += 1;
        CacheEntry& in = cache.lru.front();
        out.host = in.host.data();
        out.device = in.dev;
        out.bytes = n;
        entry = &in;
        return Status::Ok();
    });
}

void cache_unpin(const CacheEntry* e) {
    if (e == nullptr) return;
    std::lock_guard<std::mutex> g(cache.lock);
    const_cast<CacheEntry*>(e)->pins -= 1;
}

void CachedInputs::unpin() {
    for (const CacheEntry*& e : pinned) {
        cache_unpin(e);
        e = nullptr;
    }
}

Status pin_cached(ExecContext& ctx, int device, int n, const int* in, const uint64_t* key, const bool* omitted,
                  Served& req, CachedInputs& pins) {
    pins.unpin();
    pins.looked = 0;
    ctx.resident = ResidentInputs();
    if (n < 0 || n > kMaxCached) return Status::Error(StatusCode::Internal, "GPU service: %d cacheable inputs", n);
    for (int k = 0; k < n; ++k) {
        const int i = in[k];
        if (i < 0 || i >= req.n_in) return Status::Error(StatusCode::Internal, "GPU service: cacheable input %d", i);
        ResidentInput r;
        pins.looked = k + 1;
        pins.pinned[k] = cache_find(device, key[k], r);
        pins.hit[k] = pins.pinned[k] != nullptr;
        if (pins.hit[k]) {
            req.in[i] = r.host;
            req.in_bytes[i] = r.bytes;
        } else if (omitted[k]) {
            pins.unpin();
            ctx.resident = ResidentInputs();
            return Status::Error(StatusCode::NotServed, "resident input evicted");
        } else if (cache_insert(ctx, device, key[k], req.in[i], req.in_bytes[i], pins.pinned[k], r).ok()) {
            req.in[i] = r.host;
        }  // else it does not fit: the staged copy serves, not resident
        if (pins.pinned[k]) ctx.resident.add(r);
    }
    return Status::Ok();
}

CacheStats cache_stats() {
    std::lock_guard<std::mutex> g(cache.lock);
    return cache.stats;
}

int cache_keys(uint64_t* keys, int max) {
    std::lock_guard<std::mutex> g(cache.lock);
    int n = 0;
    for (const CacheEntry& e : cache.lru) {
        if (n >= max) break;
        keys[n++] = e.key;
    }
    return n;
}

void cache_clear(int device) {
    std::lock_guard<std::mutex> g(cache.lock);
    evict_for(device, cache.limit + 1);
}

// ---- what the service keeps for sessions ------------------------------------------------

namespace {

struct HeldRegistry {
    std::mutex lock;
    std::unordered_map<uint64_t, std::shared_ptr<Held>> objects;
    uint32_t counter = 0;
};
HeldRegistry registry;

}  // namespace

Status hold(const Served& req, std::shared_ptr<Held> h, uint64_t& handle) {
    handle = 0;
    if (req.owner == 0)  // not a registered session: the caller runs it in its backend
        return Status::Error(StatusCode::NotServed, "only a session may keep state in the GPU service");
    h->kind = req.op;
    h->owner = req.owner;
    h->device = req.device;
    return guarded([&] {
        std::lock_guard<std::mutex> g(registry.lock);
        handle = (uint64_t(req.incarnation) << 32) | ++registry.counter;
        registry.objects[handle] = std::move(h);
        return Status::Ok();
    });
}

std::shared_ptr<Held> held(const Served& req, uint64_t handle, Op kind) {
    std::lock_guard<std::mutex> g(registry.lock);
    auto f = registry.objects.find(handle);
    if (f == registry.objects.end()) return nullptr;
    const Held& h = *f->second;
    if (h.owner != req.owner || h.kind != kind || h.device != req.device) return nullptr;
    return f->second;
}

void unhold(uint64_t handle) {
    std::shared_ptr<Held> last;  // freed after the lock, on the calling (the device's) thread
    std::lock_guard<std::mutex> g(registry.lock);
    auto f = registry.objects.find(handle);
    if (f == registry.objects.end()) return;
    last = std::move(f->second);
    registry.objects.erase(f);
}

Status lost_held() {
    return Status::Error(StatusCode::ServiceDown,
                         "the GPU service restarted since this was made there, and it is gone; make it again "
                         "(a moving-object index: mo_drop, then mo_create)");
}

int64_t reap_held(int device, bool (*alive)(uint64_t owner)) {
    std::vector<std::shared_ptr<Held>> gone;  // freed below, outside the lock
    int64_t left = 0;
    {
        std::lock_guard<std::mutex> g(registry.lock);
        try {
            for (auto it = registry.objects.begin(); it != registry.objects.end();) {
                if (it->second->device == device && !alive(it->second->owner)) {
                    gone.push_back(std::move(it->second));
                    it = registry.objects.erase(it);
                } else {
                    ++it;
                }
            }
        } catch (...) {
            // A failed push_back: the rest go on the next call.
        }
        left = static_cast<int64_t>(registry.objects.size());
    }
    return left;
}

}  // namespace approx::service
