// The first pass of a stratified table synopsis build (synopsis_build.h):
// rows per stratum key (the leaf, then the stratify columns' output
// strings), a congressional allocation of the sample over the strata
// (Acharya, Gibbons & Poosala 2000) and one reservoir per stratum for the
// second pass (its census: synopsis_census.cpp; the leaves it reads:
// synopsis_leaves.cpp).
#include "synopsis/synopsis_build.h"

extern "C" {
#include "common/hashfn.h"
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

}  // namespace

// The stratum key of a row: each stratify column as "N" (NULL) or
// "<length>:<output string>", so that distinct value tuples never collide.
// A parent's leaf comes first ("P<oid>|"), so that a leaf's rows are
// strata of their own.
void stratum_key(TupleTableSlot* slot, Oid leaf, const ColumnPlan* cols, int n_stratify, const int* stratify,
                 StringInfo key) {
    resetStringInfo(key);
    if (OidIsValid(leaf)) appendStringInfo(key, "P%010u|", leaf);
    for (int s = 0; s < n_stratify; ++s) {
        const ColumnPlan& c = cols[stratify[s]];
        if (slot->tts_isnull[c.attnum - 1]) {
            appendStringInfoString(key, "N|");
            continue;
        }
        char* v = OidOutputFunctionCall(c.out_fn, slot->tts_values[c.attnum - 1]);
        appendStringInfo(key, "%zu:%s|", strlen(v), v);
        pfree(v);
    }
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

void count_strata(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d, AttrNumber max_att,
                  int n_stratify, const int* stratify, int32 sample_size, CensusMode census, const char* relname,
                  const char* fn) {
    initStringInfo(&s->key);
    s->census = nullptr;
    CensusPass c;
    census_begin(&c, census, leaves->relid, desc, cols, d, n_stratify, stratify, sample_size, max_att, fn);
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
    int64 total = 0;  // rows read
    Scan scan = begin_scan(leaves, desc);
    while (scan_next(scan)) {
        CHECK_FOR_INTERRUPTS();
        slot_getsomeattrs(scan.slot, c.read_att);
        stratum_key(scan.slot, scan_leaf(scan), cols, n_stratify, stratify, &s->key);
        ++enter_stratum(s->table, s->key.data)->rows;
        ++total;
        if (c.t > 0) census_offer_row(&c, scan, relname, fn);
    }
    end_scan(scan);
    census_decide(&c, total, sample_size);
    if (c.t > 0) place_census(s, leaves, desc, cols, max_att, n_stratify, stratify, c, fn);
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
    uint64 seed = random_seed_for_call();
    for (int64 i = 0; i < n_groups; ++i) {
        groups[i]->begin = capacity;
        groups[i]->alloc = alloc[i];
        syn::reservoir_init(groups[i]->res, alloc[i], seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64>(i));
        capacity += alloc[i];
    }
    check_size(capacity, d, true, fn);
    s->groups = groups;
    s->capacity = capacity;
}

StratumEntry* row_stratum(Strata* s, const Scan& scan, const ColumnPlan* cols, int n_stratify, const int* stratify,
                          const char* fn) {
    if (s->census != nullptr) {
        const int64 id = census_row_id(scan);
        CensusRow* c = static_cast<CensusRow*>(hash_search(s->census, &id, HASH_FIND, nullptr));
        if (c != nullptr) return c->stratum;
    }
    stratum_key(scan.slot, scan_leaf(scan), cols, n_stratify, stratify, &s->key);
    char* k = s->key.data;
    StratumEntry* e = static_cast<StratumEntry*>(hash_search(s->table, &k, HASH_FIND, nullptr));
    if (e == nullptr)  // same snapshot, same rows: cannot happen
        elog(ERROR, "%s: a row of a stratum the first pass did not see", fn);
    return e;
}

syn::Stratum* strata_of(const Strata* s) {
    syn::Stratum* out = static_cast<syn::Stratum*>(palloc(sizeof(syn::Stratum) * Max(s->n_groups, 1)));
    for (int64 i = 0; i < s->n_groups; ++i) {
        out[i].n_rows = s->groups[i]->rows;
        out[i].begin = s->groups[i]->begin;
        out[i].end = s->groups[i]->begin + s->groups[i]->res.size;  // = alloc (alloc <= rows)
    }
    return out;
}

}  // namespace synopsis_glue
