// The participants of a stratified, census or partitioned-parent table
// synopsis build (relation_reader.h: strata_count, strata_sample;
// relation_scan.h describes the strata modes): each one's table of binary
// stratum keys, its counts and census heaps (counting) or per-stratum
// bottom-k heaps (sampling), and a worker's keys handed to the leader in a
// DSA area (the leader's side: relation_strata_leader.cpp). Plain C-style
// code, as in relation_reader.cpp.
#include "readers/relation_strata.h"

#include "synopsis/synopsis_codec.h"

extern "C" {
#include "access/tupmacs.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/memutils.h"
}

#include <algorithm>

#include "core/hash_mix.hpp"

using namespace relscan;
namespace sample = approx::sample;

namespace relscan {

template <class T>
T* grow(T* p, int64 n) {
    return static_cast<T*>(repalloc_huge(p, sizeof(T) * static_cast<Size>(n)));
}

void kt_init(KeyTable* t) {
    memset(t, 0, sizeof *t);
    t->cxt = CurrentMemoryContext;
    t->cap = 256;
    t->ecap = 128;
    t->acap = 8192;
    t->slots = static_cast<int64*>(palloc0(sizeof(int64) * t->cap));
    t->hash = static_cast<uint64*>(palloc(sizeof(uint64) * t->ecap));
    t->count = static_cast<int64*>(palloc(sizeof(int64) * t->ecap));
    t->value = static_cast<int64*>(palloc(sizeof(int64) * t->ecap));
    t->off = static_cast<uint64*>(palloc(sizeof(uint64) * t->ecap));
    t->len = static_cast<uint32*>(palloc(sizeof(uint32) * t->ecap));
    t->arena = static_cast<char*>(palloc(t->acap));
}

int64 kt_find(const KeyTable* t, const char* key, uint32 len, uint64 h) {
    const int64 mask = t->cap - 1;
    for (int64 i = static_cast<int64>(h) & mask;; i = (i + 1) & mask) {
        const int64 e = t->slots[i] - 1;
        if (e < 0) return -1;
        if (t->hash[e] == h && t->len[e] == len && memcmp(t->arena + t->off[e], key, len) == 0) return e;
    }
}

void kt_place(KeyTable* t, int64 e) {
    const int64 mask = t->cap - 1;
    int64 i = static_cast<int64>(t->hash[e]) & mask;
    while (t->slots[i] != 0) i = (i + 1) & mask;
    t->slots[i] = e + 1;
}

// A new key (not in the table); its entry.
int64 kt_add(KeyTable* t, const char* key, uint32 len, uint64 h) {
    if (t->n == t->ecap) {
        t->ecap *= 2;
        t->hash = grow(t->hash, t->ecap);
        t->count = grow(t->count, t->ecap);
        t->value = grow(t->value, t->ecap);
        t->off = grow(t->off, t->ecap);
        t->len = grow(t->len, t->ecap);
    }
    if (t->used + len > t->acap) {
        while (t->used + len > t->acap) t->acap *= 2;
        t->arena = grow(t->arena, static_cast<int64>(t->acap));
    }
    if ((t->n + 1) * 2 > t->cap) {
        pfree(t->slots);
        t->cap *= 2;
        t->slots = static_cast<int64*>(MemoryContextAllocHuge(t->cxt, sizeof(int64) * t->cap));
        memset(t->slots, 0, sizeof(int64) * t->cap);
        for (int64 e = 0; e < t->n; ++e) kt_place(t, e);
    }
    const int64 e = t->n++;
    t->hash[e] = h;
    t->count[e] = 0;
    t->value[e] = -1;
    t->off[e] = t->used;
    t->len[e] = len;
    memcpy(t->arena + t->used, key, len);
    t->used += len;
    kt_place(t, e);
    return e;
}

int64 kt_enter(KeyTable* t, const char* key, uint32 len) {
    const uint64 h = key_hash64(key, len);
    const int64 e = kt_find(t, key, len, h);
    return e >= 0 ? e : kt_add(t, key, len, h);
}

// Room for `need` bytes in *buf (repalloc keeps its context; a first
// allocation goes to the current one).
void key_room(char** buf, Size* cap, Size need) {
    if (need <= *cap) return;
    Size c = Max(*cap * 2, need);
    *buf = static_cast<char*>(*buf ? repalloc_huge(*buf, c) : MemoryContextAllocHuge(CurrentMemoryContext, c));
    *cap = c;
}

// The key: the leaf's index, then per stratify column a NULL flag and its
// bytes (fixed length: typlen bytes; varlena: uint32 length, then the
// detoasted data; cstring: its bytes and NUL).
uint32 build_key(int leaf, int nkeys, const int16* keycols, const int16* keylen, const bool* keybyval,
                 const Datum* values, const bool* isnull, char** buf, Size* cap) {
    Size at = 0;
    key_room(buf, cap, 64);
    int32 l = leaf;
    memcpy(*buf, &l, sizeof l);
    at = sizeof l;
    for (int k = 0; k < nkeys; ++k) {
        const int c = keycols[k];
        key_room(buf, cap, at + 1 + 8);
        if (isnull[c]) {
            (*buf)[at++] = 0;
            continue;
        }
        (*buf)[at++] = 1;
        const int16 typlen = keylen[k];
        if (typlen > 0 && keybyval[k]) {
            store_att_byval(*buf + at, values[c], typlen);
            at += typlen;
        } else if (typlen > 0) {
            key_room(buf, cap, at + typlen);
            memcpy(*buf + at, DatumGetPointer(values[c]), typlen);
            at += typlen;
        } else if (typlen == -1) {
            struct varlena* v = pg_detoast_datum_packed(reinterpret_cast<struct varlena*>(DatumGetPointer(values[c])));
            const uint32 n = VARSIZE_ANY_EXHDR(v);
            key_room(buf, cap, at + 4 + n);
            memcpy(*buf + at, &n, 4);
            memcpy(*buf + at + 4, VARDATA_ANY(v), n);
            at += 4 + n;
        } else {
            const char* s = DatumGetCString(values[c]);
            const Size n = strlen(s) + 1;
            key_room(buf, cap, at + n);
            memcpy(*buf + at, s, n);
            at += n;
        }
    }
    return static_cast<uint32>(at);
}

[[noreturn]] void unseen_stratum(const char* fn) {
    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: a row of a stratum the first pass did not see", fn)));
}


uint64 key_hash64(const char* key, uint32 len) {
    return hash_bytes_extended(reinterpret_cast<const unsigned char*>(key), static_cast<int>(len), 0);
}

}  // namespace relscan

StrataParticipant* relscan::strata_participant(const ReaderShared* sh, int participant) {
    StrataParticipant* p = static_cast<StrataParticipant*>(palloc0(sizeof(StrataParticipant)));
    p->sh = sh;
    char* slot = at<char>(sh, sh->off_strata + sh->strata_slot_bytes * participant);
    p->slot = reinterpret_cast<StrataSlot*>(slot);
    p->cols = at<StrataCol>(sh, sh->off_cols);
    p->keycols = at<int16>(sh, sh->off_keycols);
    p->keylen = p->keycols + sh->nkeys;
    p->keybyval = reinterpret_cast<const bool*>(p->keylen + sh->nkeys);
    p->measurecols = at<int16>(sh, sh->off_measurecols);
    kt_init(&p->keys);
    p->kcap = 256;
    p->kbuf = static_cast<char*>(palloc(p->kcap));  // grown by repalloc: stays in this context
    char* body = slot + MAXALIGN(sizeof(StrataSlot));
    if (sh->strata_mode == 1) {
        const CountLayout l = count_layout(sh->nmeasures, sh->census_room, sh->strata_bottom);
        p->spread = reinterpret_cast<sample::CensusSpread*>(body);
        p->heap_n = reinterpret_cast<int64_t*>(body + l.heap_n);
        p->heap = reinterpret_cast<sample::CensusEntry*>(body + l.heap);
        p->bsize = reinterpret_cast<int64*>(body + l.bottom);
        p->bpri = reinterpret_cast<uint64*>(p->bsize + 1);
        p->btid = p->bpri + sh->strata_bottom;
        return p;
    }
    p->size = reinterpret_cast<int64*>(body);
    p->pri = reinterpret_cast<uint64*>(body + MAXALIGN(sizeof(int64) * sh->nstrata));
    p->tid = p->pri + sh->capacity;
    p->alloc = at<int64>(sh, sh->off_alloc);
    p->begin = p->alloc + sh->nstrata;
    p->census_ids = at<uint64>(sh, sh->off_census_ids);
    // The counting pass's keys and their strata.
    const char* r = at<char>(sh, sh->off_keylist);
    for (int64 i = 0; i < sh->nkeylist; ++i) {
        int64 stratum;
        uint32 len;
        memcpy(&stratum, r, 8);
        memcpy(&len, r + 8, 4);
        const int64 e = kt_enter(&p->keys, r + 12, len);  // (it may move the arrays)
        p->keys.value[e] = stratum;
        r += 12 + len;
    }
    return p;
}

void relscan::strata_row(RelScan* rs, const ItemPointerData* tid) {
    StrataParticipant* p = rs->strata;
    const ReaderShared* sh = p->sh;
    const Datum* values = rs->values;
    const bool* isnull = rs->isnull;
    const uint64 id = leaf_row_id(rs->index, tid);
    if (sh->strata_mode == 2 && sh->ncensus > 0 && std::binary_search(p->census_ids, p->census_ids + sh->ncensus, id))
        return;  // a census row: kept whole, known by id
    if (sh->strata_mode == 1)
        for (int c = 0; c < sh->ncols; ++c) {
            if (isnull[c] || !(p->cols[c].role & kStrataCheck)) continue;
            int bad = non_finite(values[c], p->cols[c].type);
            if (bad)
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("%s: column \"%s\" of table %s contains %s", sh->fn, NameStr(p->cols[c].name),
                                       sh->relname, bad == 1 ? "NaN" : "an infinite value"),
                                errhint("A synopsis needs finite values; NULL is fine.")));
        }
    const uint32 len = build_key(rs->index, sh->nkeys, p->keycols, p->keylen, p->keybyval, values, isnull, &p->kbuf,
                                 &p->kcap);
    ++p->slot->rows;
    if (sh->strata_mode == 1) {
        const int64 e = kt_enter(&p->keys, p->kbuf, len);  // (it may move the arrays)
        ++p->keys.count[e];
        if (sh->strata_bottom > 0) {  // for leaf 0 the uniform sample's priority (relation_scan.cpp, sample_row)
            const uint64 pr = approx::mix64(sh->sample_seed ^ approx::mix64(id + 0x9e3779b97f4a7c15ULL));
            bottom_offer(p->bpri, p->btid, p->bsize, sh->strata_bottom, pr, id);
        }
        if (sh->nmeasures == 0) return;
        // Ties by a key of the row's id and its leaf: the same rows whatever the order.
        const uint64 key = sample::census_key(id, relids(sh)[rs->index]);
        for (int m = 0; m < sh->nmeasures; ++m) {
            const int c = p->measurecols[m];
            if (isnull[c]) continue;
            double v;
            if (sh->census_on)  // a synopsis column: NaN and infinities are an ERROR
                v = synopsis_glue::column_number(values[c], p->cols[c].type, sh->fn, NameStr(p->cols[c].name), sh->relname);
            else if (!synopsis_glue::measure_number(values[c], p->cols[c].type, &v))
                continue;  // not a synopsis column: a value no census can hold is left out
            sample::census_offer(p->heap + m * sh->census_room, p->heap_n[m], sh->census_room, v, key,
                                 static_cast<int64_t>(id));
            p->spread[m].add(v);
        }
        return;
    }
    const uint64 h = key_hash64(p->kbuf, len);
    const int64 e = kt_find(&p->keys, p->kbuf, len, h);
    if (e < 0 || p->keys.value[e] < 0) unseen_stratum(sh->fn);
    const int64 s = p->keys.value[e];
    if (p->alloc[s] == 0) return;
    // For leaf 0 the uniform sample's priority (relation_scan.cpp, sample_row).
    const uint64 pr = approx::mix64(sh->sample_seed ^ approx::mix64(id + 0x9e3779b97f4a7c15ULL));
    bottom_offer(p->pri + p->begin[s], p->tid + p->begin[s], &p->size[s], p->alloc[s], pr, id);
}

void relscan::strata_publish(const ReaderShared* sh, StrataParticipant* p) {
    if (sh->strata_mode != 1) return;
    const KeyTable& t = p->keys;
    uint64 bytes = 0;
    for (int64 e = 0; e < t.n; ++e) bytes += 12 + t.len[e];
    dsa_area* area = dsa_attach(sh->area);
    dsa_pointer dp = dsa_allocate_extended(area, Max(bytes, 1), DSA_ALLOC_HUGE);
    char* w = static_cast<char*>(dsa_get_address(area, dp));
    for (int64 e = 0; e < t.n; ++e) {
        memcpy(w, &t.count[e], 8);
        memcpy(w + 8, &t.len[e], 4);
        memcpy(w + 12, t.arena + t.off[e], t.len[e]);
        w += 12 + t.len[e];
    }
    p->slot->keys = dp;
    p->slot->keys_bytes = bytes;
    p->slot->nkeys = t.n;
    dsa_detach(area);
}

uint32 strata_row_key(const StrataRead* r, int leaf, const Datum* values, const bool* isnull, char** buf, Size* cap) {
    return build_key(leaf, r->nkeys, r->keycols, r->keylen, r->keybyval, values, isnull, buf, cap);
}

void strata_key_values(const StrataRead* r, const char* key, uint32 len, int* leaf, Datum* values, bool* isnull) {
    int32 l;
    memcpy(&l, key, sizeof l);
    *leaf = l;
    const char* p = key + sizeof l;
    for (int k = 0; k < r->nkeys; ++k) {
        isnull[k] = *p++ == 0;
        values[k] = 0;
        if (isnull[k]) continue;
        const int16 typlen = r->keylen[k];
        if (typlen > 0 && r->keybyval[k]) {
            union {
                int64 i8;
                char b[8];
            } u;
            memcpy(u.b, p, typlen);
            values[k] = fetch_att(u.b, true, typlen);
            p += typlen;
        } else if (typlen > 0) {
            char* v = static_cast<char*>(palloc(typlen));
            memcpy(v, p, typlen);
            values[k] = PointerGetDatum(v);
            p += typlen;
        } else if (typlen == -1) {
            uint32 n;
            memcpy(&n, p, 4);
            struct varlena* v = static_cast<struct varlena*>(palloc(VARHDRSZ + n));
            SET_VARSIZE(v, VARHDRSZ + n);
            memcpy(VARDATA(v), p + 4, n);
            values[k] = PointerGetDatum(v);
            p += 4 + n;
        } else {
            values[k] = CStringGetDatum(pstrdup(p));
            p += strlen(p) + 1;
        }
    }
    Assert(p == key + len);
}
