// The strata of a table synopsis build (synopsis_build.h). The relation
// reader reads the table twice (readers/relation_strata.cpp: parallel
// workers beside the leader, the statement's snapshot): first the rows per
// binary stratum key (the leaf, then the stratify columns' bytes) and the
// census candidates, then, after a congressional allocation of the sample
// over the strata (Acharya, Gibbons & Poosala 2000), each stratum's alloc
// rows of smallest hash(seed, leaf, TID) (for a census of one table without
// stratify columns the first pass's uniform sample rows give them, when
// they hold enough: from_bottom). Between the passes the leader
// turns each binary key into the key the strata have always had (the
// leaf, then the stratify columns' output strings): binary keys whose
// strings are equal are one stratum, the strata are ordered by those
// strings, and no worker runs an output function. (Its census:
// synopsis_census.cpp; the leaves it reads: synopsis_leaves.cpp.)
#include "synopsis/synopsis_build.h"

#include <algorithm>

extern "C" {
#include "common/hashfn.h"
#include "access/htup_details.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace synopsis_glue {

namespace {

constexpr int64 kStratumFloor = 100;  // congressional allocation: rows every stratum keeps (or all it has)

uint32 key_hash(const void* key, Size) { return string_hash(*static_cast<char* const*>(key), 0); }
int key_match(const void* a, const void* b, Size) {
    return strcmp(*static_cast<char* const*>(a), *static_cast<char* const*>(b));
}
void* key_copy(void* dest, const void* src, Size) {
    *static_cast<char**>(dest) = MemoryContextStrdup(TopTransactionContext, *static_cast<char* const*>(src));
    return dest;
}

int cmp_entry(const void* a, const void* b) {
    return strcmp((*static_cast<StratumEntry* const*>(a))->key, (*static_cast<StratumEntry* const*>(b))->key);
}

// The columns the reader reads (each once, in the parent's layout): the
// synopsis columns that may hold NaN or infinities (checked), the stratify
// columns (the key), the census measures; then each leaf's attnums.
void plan_read(Strata* s, Relation rel, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d,
               int n_stratify, const int* stratify, const CensusPass& c, const char* relname, const char* fn) {
    StrataRead& r = s->read;
    const int natts = desc->natts;
    int16* index_of = static_cast<int16*>(palloc(sizeof(int16) * (natts + 1)));
    for (int a = 0; a <= natts; ++a) index_of[a] = -1;
    AttrNumber* att = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * Max(natts, 1)));
    Oid* types = static_cast<Oid*>(palloc(sizeof(Oid) * Max(natts, 1)));
    const char** names = static_cast<const char**>(palloc(sizeof(char*) * Max(natts, 1)));
    uint8* roles = static_cast<uint8*>(palloc0(Max(natts, 1)));
    int ncols = 0;
    auto col = [&](AttrNumber a, Oid type, const char* name) {
        if (index_of[a] < 0) {
            index_of[a] = static_cast<int16>(ncols);
            att[ncols] = a;
            types[ncols] = type;
            names[ncols++] = name;
        }
        return index_of[a];
    };
    for (int j = 0; j < d; ++j)
        if (column_may_be_non_finite(cols[j].type)) roles[col(cols[j].attnum, cols[j].type, cols[j].name)] |= kStrataCheck;
    int16* keycols = static_cast<int16*>(palloc(sizeof(int16) * Max(n_stratify, 1)));
    int16* keylen = static_cast<int16*>(palloc(sizeof(int16) * Max(n_stratify, 1)));
    bool* keybyval = static_cast<bool*>(palloc(sizeof(bool) * Max(n_stratify, 1)));
    for (int k = 0; k < n_stratify; ++k) {
        const ColumnPlan& p = cols[stratify[k]];
        keycols[k] = col(p.attnum, p.type, p.name);
        get_typlenbyval(p.type, &keylen[k], &keybyval[k]);
    }
    const int nmeasures = c.t > 0 ? c.n_measures : 0;
    int16* measurecols = static_cast<int16*>(palloc(sizeof(int16) * Max(nmeasures, 1)));
    for (int m = 0; m < nmeasures; ++m) measurecols[m] = col(c.attnum[m], c.type[m], c.name[m]);
    AttrNumber* attnums = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * Max(leaves->n * ncols, 1)));
    for (int l = 0; l < leaves->n; ++l)
        for (int j = 0; j < ncols; ++j) {
            const TupleConversionMap* map = leaves->maps[l];
            const AttrNumber a = map != nullptr ? map->attrMap->attnums[att[j] - 1] : att[j];
            if (a <= 0)
                ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                                errmsg("%s: column \"%s\" is missing in %s", fn, names[j],
                                       RelationGetRelationName(leaves->rels[l]))));
            attnums[l * ncols + j] = a;
        }
    r.fn = fn;
    r.relname = relname;
    r.top = rel;
    r.nrels = leaves->n;
    r.rels = leaves->rels;
    r.ncols = ncols;
    r.attnums = attnums;
    r.types = types;
    r.names = names;
    r.roles = roles;
    r.nkeys = n_stratify;
    r.keycols = keycols;
    r.keylen = keylen;
    r.keybyval = keybyval;
    r.nmeasures = nmeasures;
    r.measurecols = measurecols;
    r.census_on = c.mode == CensusMode::On;
    r.census_room = c.room;
    s->read_att = att;
}

}  // namespace

void stratum_key(const Strata* s, const Leaves* leaves, const ColumnPlan* cols, int n_stratify, const int* stratify,
                 int64 i, StringInfo key) {
    Datum* v = static_cast<Datum*>(palloc(sizeof(Datum) * Max(n_stratify, 1)));
    bool* isnull = static_cast<bool*>(palloc(sizeof(bool) * Max(n_stratify, 1)));
    int leaf;
    strata_key_values(&s->read, s->counts.key[i], s->counts.len[i], &leaf, v, isnull);
    resetStringInfo(key);
    if (leaves->parent) appendStringInfo(key, "P%010u|", RelationGetRelid(leaves->rels[leaf]));
    for (int k = 0; k < n_stratify; ++k) {
        if (isnull[k]) {
            appendStringInfoString(key, "N|");
            continue;
        }
        char* o = OidOutputFunctionCall(cols[stratify[k]].out_fn, v[k]);
        appendStringInfo(key, "%zu:%s|", strlen(o), o);
        pfree(o);
    }
    pfree(v);
    pfree(isnull);
}

StratumEntry* enter_stratum(HTAB* table, char* key) {
    bool found;
    StratumEntry* e = static_cast<StratumEntry*>(hash_search(table, &key, HASH_ENTER, &found));
    if (!found) {
        e->rows = 0;
        e->census = false;
    }
    return e;
}

void count_strata(Strata* s, Relation rel, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d,
                  int n_stratify, const int* stratify, int32 sample_size, CensusMode census, uint64 seed, bool bottom,
                  const char* relname, const char* fn) {
    memset(s, 0, sizeof *s);
    s->capacity = sample_size;
    CensusPass c;
    census_begin(&c, census, leaves->relid, desc, cols, d, n_stratify, stratify, sample_size, fn);
    plan_read(s, rel, leaves, desc, cols, d, n_stratify, stratify, c, relname, fn);
    if (bottom) {  // no snapshot sees more rows than the pages hold (as sample_relation)
        const int64 most = static_cast<int64>(RelationGetNumberOfBlocks(rel)) * MaxHeapTuplesPerPage;
        s->read.bottom = std::max<int64>(1, std::min<int64>(sample_size, most));
        s->read.seed = seed;
    }
    s->counts = strata_count(&s->read);
    const StrataCounts& k = s->counts;
    if (c.t > 0) {
        c.heap = k.heap;
        c.n = k.heap_n;
        c.spread = k.spread;
    }
    census_decide(&c, k.rows, sample_size);
    HASHCTL ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.keysize = sizeof(char*);
    ctl.entrysize = sizeof(StratumEntry);
    ctl.hash = key_hash;
    ctl.match = key_match;
    ctl.keycopy = key_copy;
    ctl.hcxt = CurrentMemoryContext;
    s->table = hash_create("approx_gpu strata", 1024, &ctl,
                           HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_KEYCOPY | HASH_CONTEXT);
    int64* krows = static_cast<int64*>(palloc(sizeof(int64) * Max(k.nkeys, 1)));
    memcpy(krows, k.count, sizeof(int64) * k.nkeys);
    if (c.t > 0) place_census(s, leaves, desc, krows, c, fn);
    // Binary keys into strata: those whose key strings are equal are one.
    s->of_key = static_cast<StratumEntry**>(palloc0(sizeof(StratumEntry*) * Max(k.nkeys, 1)));
    StringInfoData key;
    initStringInfo(&key);
    for (int64 i = 0; i < k.nkeys; ++i) {
        if (krows[i] == 0) continue;  // every row a census row
        stratum_key(s, leaves, cols, n_stratify, stratify, i, &key);
        s->of_key[i] = enter_stratum(s->table, key.data);
        s->of_key[i]->rows += krows[i];
    }
    s->n_groups = hash_get_num_entries(s->table);
    if (s->n_groups == 0) return;
    const int64 n_groups = s->n_groups;
    StratumEntry** groups = static_cast<StratumEntry**>(palloc(sizeof(StratumEntry*) * n_groups));
    HASH_SEQ_STATUS it;
    hash_seq_init(&it, s->table);
    int64 g = 0;
    for (StratumEntry* e; (e = static_cast<StratumEntry*>(hash_seq_search(&it))) != nullptr;) groups[g++] = e;
    qsort(groups, n_groups, sizeof(StratumEntry*), cmp_entry);
    // Census strata keep every row; the others share the rest of the budget.
    int64* rows = static_cast<int64*>(palloc(sizeof(int64) * n_groups));
    int64* alloc = static_cast<int64*>(palloc(sizeof(int64) * n_groups));
    int64 n_sampled = 0, census_rows = 0;
    for (int64 i = 0; i < n_groups; ++i)
        if (groups[i]->census)
            census_rows += groups[i]->rows;
        else
            rows[n_sampled++] = groups[i]->rows;
    if (n_sampled > 0) {
        const int64 budget = Max(static_cast<int64>(sample_size) - census_rows, 1);
        approx::Status st = approx::guarded([&] {
            return syn::congressional_allocation(rows, n_sampled, budget, kStratumFloor, alloc);
        });
        check_engine_result(st, fn);
    }
    for (int64 i = n_groups - 1, o = n_sampled - 1; i >= 0; --i)
        alloc[i] = groups[i]->census ? groups[i]->rows : alloc[o--];
    int64 capacity = 0;
    for (int64 i = 0; i < n_groups; ++i) {
        groups[i]->index = i;
        groups[i]->begin = capacity;
        groups[i]->alloc = alloc[i];
        capacity += alloc[i];
    }
    check_size(capacity, d, true, fn);
    s->groups = groups;
    s->capacity = capacity;
}

namespace {

// The census rows whole, in id order.
void fill_census(const Strata* s, uint64* ids) {
    int64* filled = static_cast<int64*>(palloc0(sizeof(int64) * Max(s->n_groups, 1)));
    for (int64 i = 0; i < s->ncensus; ++i) {
        const StratumEntry* e = s->census_of[i];
        ids[e->begin + filled[e->index]++] = s->census_ids[i];
    }
}

// One table, no stratify columns: the stratum of the rows that are no
// census rows takes the first alloc of them from the uniform sample's rows
// of the first pass (smallest hash(seed, TID) first: the rows a second pass
// would keep), in id order. false where there are too few.
bool from_bottom(const Strata* s, uint64* ids) {
    const StrataCounts& k = s->counts;
    if (k.bottom_ids == nullptr) return false;
    for (int64 g = 0; g < s->n_groups; ++g) {
        const StratumEntry* e = s->groups[g];
        if (e->census) continue;
        int64 taken = 0;
        for (int64 i = 0; i < k.nbottom && taken < e->alloc; ++i)
            if (!std::binary_search(s->census_ids, s->census_ids + s->ncensus, k.bottom_ids[i]))
                ids[e->begin + taken++] = k.bottom_ids[i];
        if (taken < e->alloc) return false;
        std::sort(ids + e->begin, ids + e->begin + taken);
    }
    return true;
}

}  // namespace

uint64* sample_strata(const Strata* s, uint64 seed, StrataReadStats* stats, const char* fn) {
    const int64 n_groups = s->n_groups;
    int64* stratum = static_cast<int64*>(palloc(sizeof(int64) * Max(s->counts.nkeys, 1)));
    for (int64 i = 0; i < s->counts.nkeys; ++i) stratum[i] = s->of_key[i] ? s->of_key[i]->index : -1;
    int64* alloc = static_cast<int64*>(palloc(sizeof(int64) * Max(n_groups, 1)));
    for (int64 g = 0; g < n_groups; ++g) alloc[g] = s->groups[g]->census ? 0 : s->groups[g]->alloc;
    uint64* ids = static_cast<uint64*>(
        MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * std::max<int64>(s->capacity, 1)));
    memset(stats, 0, sizeof *stats);
    if (from_bottom(s, ids)) {
        fill_census(s, ids);
        return ids;
    }
    StrataSample drawn = strata_sample(&s->read, &s->counts, stratum, n_groups, alloc, s->census_ids, s->ncensus, seed);
    *stats = drawn.stats;
    for (int64 g = 0; g < n_groups; ++g) {
        if (s->groups[g]->census) continue;
        if (drawn.size[g] != alloc[g])  // alloc <= rows, same snapshot: cannot happen
            elog(ERROR, "%s: a stratum of " INT64_FORMAT " rows gave " INT64_FORMAT " of its " INT64_FORMAT
                 " sample rows", fn, s->groups[g]->rows, drawn.size[g], alloc[g]);
        memcpy(ids + s->groups[g]->begin, drawn.ids + drawn.begin[g], sizeof(uint64) * alloc[g]);
    }
    fill_census(s, ids);
    return ids;
}

syn::Stratum* strata_of(const Strata* s) {
    syn::Stratum* out = static_cast<syn::Stratum*>(palloc(sizeof(syn::Stratum) * Max(s->n_groups, 1)));
    for (int64 i = 0; i < s->n_groups; ++i) {
        out[i].n_rows = s->groups[i]->rows;
        out[i].begin = s->groups[i]->begin;
        out[i].end = s->groups[i]->begin + s->groups[i]->alloc;  // alloc <= rows
    }
    return out;
}

}  // namespace synopsis_glue
