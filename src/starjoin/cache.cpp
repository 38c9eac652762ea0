// The backend's cache of the star join's tables (issue 39, items 1 and 3):
// the columns a node read (starjoin/read.cpp) are kept for the session's
// next queries, so that a dimension is read once, not once per query -- the
// reads, not the join, were most of a query's time (SSB SF 1, part's
// 2·10^5 rows: two thirds of 180 ms on the CPU engine).
//
// A kept read is used only while its table's version proves that it holds
// what the statement's snapshot sees (readers/relation_version.h: the sample
// relation while its storage and size are unchanged; a dimension while every
// page stays all-visible and nothing vacuumed it since); otherwise the table
// is read as before. A version's hash also keys the tables the GPU service
// keeps resident (served.cpp).
//
// Memory: approx_gpu.star_join_cache_size per backend; least recently used
// first out. A read in use is pinned until its query's memory goes (an ERROR
// too), so an inner query that reads other tables cannot free it.
#include "starjoin/starjoin_glue.h"

extern "C" {
#include "access/table.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "readers/relation_version.h"

#include "core/service.hpp"

int starjoin_cache_size_mb = 256;

namespace sj = approx::starjoin;

namespace {

struct CachedTable {
    // what was read
    Oid relid;
    int n_columns;
    AttrNumber attnos[kStarJoinMaxColumns];
    Oid types[kStarJoinMaxColumns];
    AttrNumber extra_attno;
    uint64 key;  // its version's key (version_key)
    // the read
    MemoryContext cxt;
    int64 rows;
    sj::Column cols[kStarJoinMaxColumns + 1];
    StarJoinDictionary* dicts[kStarJoinMaxColumns + 1];
    Size bytes;
    int pins;
    uint64 used;  // the clock at the last use (least recently used first out)
};

constexpr int kCacheEntries = 64;
MemoryContext cache_cxt = nullptr;
CachedTable* entries[kCacheEntries];
uint64 clock_now = 0;

bool same_read(const CachedTable* e, const StarJoinTable& t, AttrNumber extra_attno) {
    if (e->relid != t.relid || e->n_columns != t.n_columns || e->extra_attno != extra_attno) return false;
    for (int i = 0; i < t.n_columns; ++i)
        if (e->attnos[i] != t.attnos[i] || e->types[i] != t.types[i]) return false;
    return true;
}

void free_entry(int i) {
    MemoryContextDelete(entries[i]->cxt);  // the entry lives in its own context
    entries[i] = nullptr;
}

Size cached_bytes() {
    Size n = 0;
    for (CachedTable* e : entries)
        if (e != nullptr) n += e->bytes;
    return n;
}

// Frees unpinned entries, least recently used first, until `need` more bytes
// fit the cap and a slot is free; false: they do not.
bool make_room(Size need) {
    const Size cap = static_cast<Size>(starjoin_cache_size_mb) * 1024 * 1024;
    for (;;) {
        int free_slot = -1, victim = -1;
        for (int i = 0; i < kCacheEntries; ++i) {
            if (entries[i] == nullptr) {
                if (free_slot < 0) free_slot = i;
            } else if (entries[i]->pins == 0 && (victim < 0 || entries[i]->used < entries[victim]->used)) {
                victim = i;
            }
        }
        if (free_slot >= 0 && cached_bytes() + need <= cap) return true;
        if (victim < 0) return false;
        free_entry(victim);
    }
}

void unpin(void* arg) { --static_cast<CachedTable*>(arg)->pins; }

// Hands out e's read.
void hand_out(const CachedTable* e, sj::Column* cols, int64* rows, StarJoinDictionary** dicts) {
    const int n = e->n_columns + (e->extra_attno != 0 ? 1 : 0);
    for (int i = 0; i < n; ++i) cols[i] = e->cols[i];
    for (int i = 0; i < e->n_columns; ++i) dicts[i] = e->dicts[i];
    *rows = e->rows;
}

// Pins e until the query's memory (cxt) goes, and hands out its read.
void use(CachedTable* e, MemoryContext query_cxt, sj::Column* cols, int64* rows, StarJoinDictionary** dicts) {
    MemoryContextCallback* cb =
        static_cast<MemoryContextCallback*>(MemoryContextAlloc(query_cxt, sizeof(MemoryContextCallback)));
    cb->func = unpin;
    cb->arg = e;
    ++e->pins;
    MemoryContextRegisterResetCallback(query_cxt, cb);
    e->used = ++clock_now;
    hand_out(e, cols, rows, dicts);
}

}  // namespace

// The key of t's read: its version and the columns read (0: no version
// proves the rows).
static uint64 version_key(const StarJoinTable& t, AttrNumber extra_attno) {
    RelationVersion v;
    Relation rel = table_open(t.relid, AccessShareLock);
    const bool known = relation_version(rel, extra_attno > 0, &v);
    table_close(rel, NoLock);
    if (!known) return 0;
    // The key of this read's content: the version and the columns read.
    struct {
        RelationVersion v;
        int32 n_columns;
        AttrNumber attnos[kStarJoinMaxColumns + 1];
        Oid types[kStarJoinMaxColumns];
    } k;
    memset(&k, 0, sizeof k);
    k.v = v;
    k.n_columns = t.n_columns;
    for (int i = 0; i < t.n_columns; ++i) {
        k.attnos[i] = t.attnos[i];
        k.types[i] = t.types[i];
    }
    k.attnos[t.n_columns] = extra_attno;
    const uint64 key = approx::service::content_hash(&k, sizeof k);
    return key != 0 ? key : 1;
}

// The kept read of t under key (nullptr: none); frees older versions'.
static CachedTable* find_kept(const StarJoinTable& t, AttrNumber extra_attno, uint64 key) {
    for (int i = 0; i < kCacheEntries; ++i) {
        CachedTable* e = entries[i];
        if (e == nullptr || !same_read(e, t, extra_attno)) continue;
        if (e->key == key) return e;
        if (e->pins == 0) free_entry(i);  // an older version: never used again
    }
    return nullptr;
}

uint64 starjoin_table_key(const StarJoinTable& t, AttrNumber extra_attno, bool* kept) {
    const uint64 key = version_key(t, extra_attno);
    if (kept != nullptr) *kept = key != 0 && find_kept(t, extra_attno, key) != nullptr;
    return key;
}

bool starjoin_read_table_cached(const StarJoinTable& t, uint64 key, Snapshot snapshot, AttrNumber extra_attno,
                                MemoryContext query_cxt, sj::Column* cols, int64* rows, StarJoinDictionary** dicts) {
    if (key == 0 || starjoin_cache_size_mb <= 0) {
        starjoin_read_table(t, snapshot, extra_attno, cols, rows, dicts);
        return false;
    }
    if (CachedTable* e = find_kept(t, extra_attno, key); e != nullptr) {
        use(e, query_cxt, cols, rows, dicts);
        return true;
    }
    // Read into a context of the query's until it is complete: an ERROR on
    // the way frees it with the query.
    MemoryContext cxt = AllocSetContextCreate(query_cxt, "approx star join kept table", ALLOCSET_DEFAULT_SIZES);
    MemoryContext old = MemoryContextSwitchTo(cxt);
    CachedTable* e = static_cast<CachedTable*>(palloc0(sizeof(CachedTable)));
    starjoin_read_table(t, snapshot, extra_attno, e->cols, &e->rows, e->dicts);
    MemoryContextSwitchTo(old);
    e->relid = t.relid;
    e->n_columns = t.n_columns;
    memcpy(e->attnos, t.attnos, sizeof e->attnos);
    memcpy(e->types, t.types, sizeof e->types);
    e->extra_attno = extra_attno;
    e->key = key;
    e->cxt = cxt;
    e->bytes = MemoryContextMemAllocated(cxt, true);
    if (cache_cxt == nullptr)
        cache_cxt = AllocSetContextCreate(TopMemoryContext, "approx star join table cache", ALLOCSET_SMALL_SIZES);
    if (make_room(e->bytes)) {
        MemoryContextSetParent(cxt, cache_cxt);
        for (int i = 0; i < kCacheEntries; ++i)
            if (entries[i] == nullptr) {
                entries[i] = e;
                break;
            }
    }
    // Kept or not (then it goes with the query), this query uses it.
    if (MemoryContextGetParent(cxt) == cache_cxt) {
        use(e, query_cxt, cols, rows, dicts);
        return false;
    }
    hand_out(e, cols, rows, dicts);
    return false;
}
