// The pieces of a table synopsis build shared by the build itself
// (synopsis_build.cpp) and its stratified first pass (synopsis_strata.cpp).
#pragma once

#include "synopsis/synopsis.h"

extern "C" {
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "utils/hsearch.h"
#include "utils/snapmgr.h"
}

namespace synopsis_glue {

struct ColumnPlan {
    AttrNumber attnum;
    Oid type;
    ValueEncoding encoding;
    const char* name;
    Oid out_fn;  // type output (dictionary strings and stratum keys)
    bool out_varlena;
};

// One stratum while building: its key (the stratify columns' values), rows,
// allocated sample rows and reservoir.
struct StratumEntry {
    char* key;  // hash key: must be first
    int64 rows;
    int64 begin;
    int64 alloc;
    syn::Reservoir res;
};

// A stratified build's strata: the hash table of StratumEntry by key, the
// groups sorted by key, and `capacity` = the sample rows allocated to them.
struct Strata {
    HTAB* table;  // nullptr: not stratified
    StratumEntry** groups;
    int64 n_groups;
    int64 capacity;
    StringInfoData key;  // the key of the row being placed
};

// The first pass: rows per stratum key, then a congressional allocation of
// sample_size over the strata (each keeps min(its rows, 100) at least), with
// a reservoir per stratum.
void count_strata(Strata* s, Relation rel, const ColumnPlan* cols, int d, AttrNumber max_att, int n_stratify,
                  const int* stratify, int32 sample_size, const char* fn);
// The stratum of a row of the second pass (same snapshot: the first pass saw it).
StratumEntry* row_stratum(Strata* s, TupleTableSlot* slot, const ColumnPlan* cols, int n_stratify, const int* stratify,
                          const char* fn);
// The strata as the synopsis stores them.
syn::Stratum* strata_of(const Strata* s);

// The scan of the relation with the active snapshot, as the current user.
struct Scan {
    TableScanDesc scan;
    TupleTableSlot* slot;
};

inline Scan begin_scan(Relation rel) {
    Scan s;
    s.slot = table_slot_create(rel, nullptr);
    s.scan = table_beginscan(rel, GetActiveSnapshot(), 0, nullptr);
    return s;
}

inline void end_scan(Scan& s) {
    table_endscan(s.scan);
    ExecDropSingleTupleTableSlot(s.slot);
}

}  // namespace synopsis_glue
