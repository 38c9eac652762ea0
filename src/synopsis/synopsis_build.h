// The pieces of a table synopsis build shared by the build itself
// (synopsis_build.cpp), its stratified first pass (synopsis_strata.cpp), the
// census of that pass (synopsis_census.cpp) and the leaves it reads
// (synopsis_leaves.cpp).
#pragma once

#include "core/sample_census.hpp"
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
// (synopsis_leaves.cpp). Each leaf is a stratum of its own (times the
// stratify columns), so that its rows carry their own weight.
struct Leaves {
    Oid relid;                  // the relation the synopsis is of
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
// that are not stratify columns. Auto: every numeric column of the table
// the builder may SELECT,
// only those census_pays accepts over every row the pass read, sharing the
// census' tenth (none when the table has no more rows than sample_size:
// the sample holds them all); s->census stays nullptr when none takes it.
void count_strata(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d, AttrNumber max_att,
                  int n_stratify, const int* stratify, int32 sample_size, CensusMode census, const char* relname,
                  const char* fn);
struct Scan;
// The stratum key of a row (the leaf, then each stratify column's output
// string) and its entry in the strata table (rows 0 when new).
void stratum_key(TupleTableSlot* slot, Oid leaf, const ColumnPlan* cols, int n_stratify, const int* stratify,
                 StringInfo key);
StratumEntry* enter_stratum(HTAB* table, char* key);
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

// The census while the first pass counts (synopsis_census.cpp): the
// candidate measures, each one's top rows and the spread of all its values
// (palloc'd arrays: the scan may longjmp); t the census rows per measure (0:
// no census), room what each heap keeps until the default decides.
struct CensusPass {
    CensusMode mode;
    int n_measures;
    AttrNumber* attnum;  // the measure's column in the table's (the parent's) layout
    Oid* type;
    const char** name;
    approx::sample::CensusEntry** heap;
    int64_t* n;
    approx::sample::CensusSpread* spread;  // every row's, for census_pays (Auto)
    int64 t;
    int64 room;
    AttrNumber read_att;  // the last column the pass must deform (max_att and the measures)
};
// The measures (On: the synopsis' Number columns; Auto: every numeric
// column of relid the builder may SELECT; neither stratify columns nor
// dropped ones) and their heaps; On without a measure is an ERROR.
void census_begin(CensusPass* c, CensusMode census, Oid relid, TupleDesc desc, const ColumnPlan* cols, int d, int n_stratify,
                  const int* stratify, int32 sample_size, AttrNumber max_att, const char* fn);
// Offers the scan's row to every measure's heap (c->t > 0).
void census_offer_row(CensusPass* c, const Scan& scan, const char* relname, const char* fn);
// Auto: keeps the measures census_pays accepts, sharing the census' tenth
// among them; none (c->t = 0) when none does or the pass read no more rows
// than sample_size.
void census_decide(CensusPass* c, int64 rows_read, int32 sample_size);
// A row's census id: its leaf's index, then its TID.
int64 census_row_id(const Scan& scan);
// The census rows out of their strata into a take-all stratum per leaf.
void place_census(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, AttrNumber max_att,
                  int n_stratify, const int* stratify, const CensusPass& h, const char* fn);

}  // namespace synopsis_glue
