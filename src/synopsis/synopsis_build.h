// The pieces of a table synopsis build shared by the build itself
// (synopsis_build.cpp) and its stratified first pass (synopsis_strata.cpp).
#pragma once

#include "synopsis/synopsis.h"

extern "C" {
#include "access/tableam.h"
#include "access/tupconvert.h"
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
    bool census;  // a census (take-all) stratum: alloc = rows
    syn::Reservoir res;
};

// A census row of the second pass: its id (census_row_id) and stratum.
struct CensusRow {
    int64 id;  // hash key: must be first
    StratumEntry* stratum;
};

// A stratified build's strata: the hash table of StratumEntry by key, the
// groups sorted by key, and `capacity` = the sample rows allocated to them.
struct Strata {
    HTAB* table;  // nullptr: not stratified
    StratumEntry** groups;
    int64 n_groups;
    int64 capacity;
    StringInfoData key;  // the key of the row being placed
    HTAB* census;        // CensusRow by id; nullptr: no census
};

// The relations whose rows a synopsis of `rel` holds: rel itself, or for a
// partitioned table or an inheritance parent every member with storage
// (synopsis_strata.cpp). Each leaf is a stratum of its own (times the
// stratify columns), so that its rows carry their own weight.
struct Leaves {
    bool parent;                // rel has partitions or inheritance children
    int n;                      // leaves with storage
    Relation* rels;             // locked AccessShareLock to the end of the transaction
    TupleConversionMap** maps;  // a leaf's row in rel's layout (nullptr: same layout)
    List* members;              // parent: rel and every inheritor (freshness); NIL otherwise
};
void open_leaves(Leaves* l, Relation rel, const char* relname, const char* fn);
void close_leaves(Leaves* l, Relation rel);

// The first pass: rows per stratum key (the leaf, then the stratify
// columns), then a congressional allocation of sample_size over the strata
// (each keeps min(its rows, 100) at least), with a reservoir per stratum.
// census: the rows of each measure's census_size largest |values| become a
// take-all stratum per leaf, kept whole; the other strata share what is
// left of sample_size. On: the measures are the synopsis' Number columns
// that are not stratify columns. Auto: every numeric column of the table,
// only those census_pays accepts over every row the pass read, sharing the
// census' tenth (none when the table has no more rows than sample_size:
// the sample holds them all); s->census stays nullptr when none takes it.
void count_strata(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d, AttrNumber max_att,
                  int n_stratify, const int* stratify, int32 sample_size, CensusMode census, const char* relname,
                  const char* fn);
struct Scan;
// The stratum of the scan's row in the second pass (same snapshot: the
// first pass saw it).
StratumEntry* row_stratum(Strata* s, const Scan& scan, const ColumnPlan* cols, int n_stratify, const int* stratify,
                          const char* fn);
// The strata as the synopsis stores them.
syn::Stratum* strata_of(const Strata* s);

// A scan of every leaf in turn with the active snapshot, as the current
// user; `slot` holds the row in the parent's layout.
struct Scan {
    const Leaves* leaves;
    int leaf;  // the leaf `slot` came from
    TableScanDesc scan;
    TupleTableSlot* leaf_slot;
    TupleTableSlot* parent_slot;  // nullptr until a leaf needs a map
    TupleTableSlot* slot;
};
Scan begin_scan(const Leaves* leaves, TupleDesc desc);
bool scan_next(Scan& s);
void end_scan(Scan& s);
// The row's leaf for row_stratum.
inline Oid scan_leaf(const Scan& s) {
    return s.leaves->parent ? RelationGetRelid(s.leaves->rels[s.leaf]) : InvalidOid;
}

}  // namespace synopsis_glue
