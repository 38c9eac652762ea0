// The pieces of a table synopsis build shared by the build itself
// (synopsis_build.cpp), its strata (synopsis_strata.cpp), the census of its
// first pass (synopsis_census.cpp) and the leaves it reads
// (synopsis_leaves.cpp).
#pragma once

#include "core/sample_census.hpp"
#include "readers/relation_reader.h"
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

// One stratum while building: its key (the leaf, then the stratify columns'
// output strings), rows, place in the sample and allocated sample rows.
struct StratumEntry {
    char* key;  // hash key: must be first
    int64 rows;
    int64 begin;
    int64 alloc;
    int64 index;  // in Strata::groups
    bool census;  // a census (take-all) stratum: alloc = rows
};

// A stratified build's strata: the hash table of StratumEntry by key, the
// groups sorted by key, and `capacity` = the sample rows allocated to them;
// what the relation reader reads and counted (readers/relation_reader.h:
// strata_count), each binary key's stratum (nullptr: every row of it is a
// census row) and the census rows (ids sorted, each one's stratum).
struct Strata {
    HTAB* table;  // nullptr: not stratified
    StratumEntry** groups;
    int64 n_groups;
    int64 capacity;
    StrataRead read;
    AttrNumber* read_att;  // the read's columns in the parent's layout
    StrataCounts counts;
    StratumEntry** of_key;
    uint64* census_ids;
    StratumEntry** census_of;
    int64 ncensus;
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

// The first pass, through the relation reader: rows per stratum key (the
// leaf, then the stratify columns), then a congressional allocation of
// sample_size over the strata (each keeps min(its rows, 100) at least).
// census: the rows of each measure's census_size largest |values| become a
// take-all stratum per leaf, kept whole; the other strata share what is
// left of sample_size. On: the measures are the synopsis' Number columns
// that are not stratify columns. Auto: every numeric column of the table
// the builder may SELECT,
// only those census_pays accepts over every row the pass read, sharing the
// census' tenth (none when the table has no more rows than sample_size:
// the sample holds them all); s->ncensus stays 0 when none takes it.
// Every synopsis column that may hold NaN or infinities is checked here.
// bottom: also keep the uniform sample's rows (counts.bottom_ids), seed `seed`.
void count_strata(Strata* s, Relation rel, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d,
                  int n_stratify, const int* stratify, int32 sample_size, CensusMode census, uint64 seed, bool bottom,
                  const char* relname, const char* fn);
// The second pass: each stratum's alloc rows of smallest hash(seed, leaf,
// TID), the census rows as they are; row ids (leaf << 48 | TID) at each
// stratum's begin, in id order, `capacity` of them. Where the first pass
// kept the uniform sample's rows and they hold the one other stratum's,
// no second pass (stats->read_path nullptr).
uint64* sample_strata(const Strata* s, uint64 seed, StrataReadStats* stats, const char* fn);
StratumEntry* enter_stratum(HTAB* table, char* key);
// The strata as the synopsis stores them.
syn::Stratum* strata_of(const Strata* s);

// The census while the first pass counts (synopsis_census.cpp): the
// candidate measures, each one's top rows and the spread of all its values
// (the reader's merged heaps); t the census rows per measure (0: no census),
// room what each heap keeps until the default decides.
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
};
// The measures (On: the synopsis' Number columns; Auto: every numeric
// column of relid the builder may SELECT; neither stratify columns nor
// dropped ones); On without a measure is an ERROR.
void census_begin(CensusPass* c, CensusMode census, Oid relid, TupleDesc desc, const ColumnPlan* cols, int d, int n_stratify,
                  const int* stratify, int32 sample_size, const char* fn);
// Auto: keeps the measures census_pays accepts, sharing the census' tenth
// among them; none (c->t = 0) when none does or the pass read no more rows
// than sample_size.
void census_decide(CensusPass* c, int64 rows_read, int32 sample_size);
// The census rows out of their strata (krows: rows per binary key) into a
// take-all stratum per leaf: s->census_ids, s->census_of.
void place_census(Strata* s, const Leaves* leaves, TupleDesc desc, int64* krows, const CensusPass& h, const char* fn);
// The stratum key string of binary key i (the old key: "[P<leaf>|]" then
// per stratify column "N|" or "<length>:<output string>|").
void stratum_key(const Strata* s, const Leaves* leaves, const ColumnPlan* cols, int n_stratify, const int* stratify,
                 int64 i, StringInfo key);

}  // namespace synopsis_glue
