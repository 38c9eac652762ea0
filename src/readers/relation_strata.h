// The strata modes' shared pieces (relation_scan.h describes them): the
// shared block's column table and participant slots, the table of distinct
// binary keys, the key itself and one participant's state. Used by
// relation_strata.cpp (the participants) and relation_strata_leader.cpp (the
// leader's merge).
#pragma once

#include "readers/relation_reader.h"
#include "readers/relation_scan.h"

namespace relscan {

// A column of a strata read, in the shared block.
struct StrataCol {
    NameData name;
    Oid type;
    uint8 role;
};

// A participant's slot: its rows, then (counting, workers) its keys in the
// DSA area, then the census (counting) or the per-stratum heaps (sampling).
struct StrataSlot {
    int64 rows;
    int64 nkeys;
    dsa_pointer keys;  // nkeys x (int64 count, uint32 len, len bytes)
    uint64 keys_bytes;
};

constexpr Size kMaxSlotBytes = Size(1) << 30;  // as sample_relation: past this, fewer workers

// Where a counting slot's parts start, after its StrataSlot: the spreads,
// the heaps' sizes, the heaps, the bottom rows' size, priorities and ids.
struct CountLayout {
    Size heap_n, heap, bottom, end;
};
inline CountLayout count_layout(int nmeasures, int64 room, int64 bottom) {
    CountLayout l;
    l.heap_n = MAXALIGN(sizeof(approx::sample::CensusSpread) * nmeasures);
    l.heap = l.heap_n + MAXALIGN(sizeof(int64_t) * nmeasures);
    l.bottom = l.heap + MAXALIGN(sizeof(approx::sample::CensusEntry) * static_cast<Size>(room) * nmeasures);
    l.end = l.bottom + sizeof(int64) + sizeof(uint64) * 2 * static_cast<Size>(bottom);
    return l;
}

// Distinct binary keys: open addressing over entry indexes, the keys in an arena.
struct KeyTable {
    int64 n, cap, ecap;
    int64* slots;  // entry + 1; 0: empty
    uint64* hash;
    int64* count;
    int64* value;
    uint64* off;
    uint32* len;
    char* arena;
    uint64 used, acap;
    MemoryContext cxt;  // where it grows (rows are read in a context reset after each page)
};


void kt_init(KeyTable* t);
int64 kt_find(const KeyTable* t, const char* key, uint32 len, uint64 h);
// The entry of a key, added (count 0, value -1) when new.
int64 kt_enter(KeyTable* t, const char* key, uint32 len);
uint64 key_hash64(const char* key, uint32 len);
// The key: the leaf's index, then per stratify column a NULL flag and its
// bytes (fixed length: typlen bytes; varlena: uint32 length, then the
// detoasted data; cstring: its bytes and NUL); *buf grows as needed.
uint32 build_key(int leaf, int nkeys, const int16* keycols, const int16* keylen, const bool* keybyval,
                 const Datum* values, const bool* isnull, char** buf, Size* cap);

// One participant's state.
struct StrataParticipant {
    const ReaderShared* sh;
    StrataSlot* slot;
    KeyTable keys;
    char* kbuf;
    Size kcap;
    const StrataCol* cols;
    const int16* keycols;
    const int16* keylen;
    const bool* keybyval;
    const int16* measurecols;
    approx::sample::CensusSpread* spread;  // counting: nmeasures
    int64_t* heap_n;
    approx::sample::CensusEntry* heap;  // nmeasures x census_room
    int64* bsize;                       // counting with strata_bottom: its heap
    uint64* bpri;
    uint64* btid;
    int64* size;                // sampling: nstrata, then the heaps
    uint64* pri;
    uint64* tid;
    const int64* alloc;
    const int64* begin;
    const uint64* census_ids;
};

}  // namespace relscan
