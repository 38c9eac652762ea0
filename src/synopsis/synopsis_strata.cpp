// The first pass of a stratified table synopsis build (synopsis_build.h):
// rows per stratum key (the leaf, then the stratify columns' output
// strings), a congressional allocation of the sample over the strata
// (Acharya, Gibbons & Poosala 2000) and one reservoir per stratum for the
// second pass. Also the leaves of a partitioned table or inheritance parent
// and the scan that reads them all in the parent's layout.
#include "synopsis/synopsis_build.h"

extern "C" {
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
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

int cmp_entry(const void* a, const void* b) {
    return strcmp((*static_cast<StratumEntry* const*>(a))->key, (*static_cast<StratumEntry* const*>(b))->key);
}

}  // namespace

void count_strata(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d, AttrNumber max_att,
                  int n_stratify, const int* stratify, int32 sample_size, const char* fn) {
    initStringInfo(&s->key);
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
    Scan scan = begin_scan(leaves, desc);
    while (scan_next(scan)) {
        CHECK_FOR_INTERRUPTS();
        slot_getsomeattrs(scan.slot, max_att);
        stratum_key(scan.slot, scan_leaf(scan), cols, n_stratify, stratify, &s->key);
        char* k = s->key.data;
        bool found;
        StratumEntry* e = static_cast<StratumEntry*>(hash_search(s->table, &k, HASH_ENTER, &found));
        if (!found) e->rows = 0;
        ++e->rows;
    }
    end_scan(scan);
    s->n_groups = hash_get_num_entries(s->table);
    if (s->n_groups == 0) return;
    const int64 n_groups = s->n_groups;
    StratumEntry** groups = static_cast<StratumEntry**>(palloc(sizeof(StratumEntry*) * n_groups));
    HASH_SEQ_STATUS it;
    hash_seq_init(&it, s->table);
    int64 g = 0;
    for (StratumEntry* e; (e = static_cast<StratumEntry*>(hash_seq_search(&it))) != nullptr;) groups[g++] = e;
    qsort(groups, n_groups, sizeof(StratumEntry*), cmp_entry);
    int64* rows = static_cast<int64*>(palloc(sizeof(int64) * n_groups));
    int64* alloc = static_cast<int64*>(palloc(sizeof(int64) * n_groups));
    for (int64 i = 0; i < n_groups; ++i) rows[i] = groups[i]->rows;
    approx::Status st = approx::guarded([&] {
        return syn::congressional_allocation(rows, n_groups, sample_size, kStratumFloor, alloc);
    });
    check_engine_result(st, fn);
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

StratumEntry* row_stratum(Strata* s, TupleTableSlot* slot, Oid leaf, const ColumnPlan* cols, int n_stratify,
                          const int* stratify, const char* fn) {
    stratum_key(slot, leaf, cols, n_stratify, stratify, &s->key);
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

// The members as ANALYZE of a parent finds them (acquire_inherited_sample_rows,
// commands/analyze.c): find_all_inheritors locks each, partitioned members
// hold no rows, a leaf's rows are converted to the parent's layout by column
// name (convert_tuples_by_name, access/common/tupconvert.c). A parent of a
// relkind with rows keeps its own rows (inheritance). Foreign and temporary
// leaves are refused: the synopsis would not hold their rows for every session.
void open_leaves(Leaves* l, Relation rel, const char* relname, const char* fn) {
    memset(l, 0, sizeof *l);
    const Oid relid = RelationGetRelid(rel);
    const bool partitioned = rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
    List* members = partitioned || has_subclass(relid) ? find_all_inheritors(relid, AccessShareLock, nullptr) : NIL;
    l->parent = partitioned || list_length(members) > 1;
    if (!l->parent) {
        l->n = 1;
        l->rels = static_cast<Relation*>(palloc(sizeof(Relation)));
        l->maps = static_cast<TupleConversionMap**>(palloc0(sizeof(TupleConversionMap*)));
        l->rels[0] = rel;
        return;
    }
    l->members = members;
    l->rels = static_cast<Relation*>(palloc(sizeof(Relation) * list_length(members)));
    l->maps = static_cast<TupleConversionMap**>(palloc0(sizeof(TupleConversionMap*) * list_length(members)));
    ListCell* lc;
    foreach (lc, members) {
        Oid oid = lfirst_oid(lc);
        Relation leaf = oid == relid ? rel : table_open(oid, NoLock);  // locked by find_all_inheritors
        char kind = leaf->rd_rel->relkind;
        if (kind == RELKIND_PARTITIONED_TABLE) {
            if (leaf != rel) table_close(leaf, NoLock);
            continue;
        }
        if (kind == RELKIND_FOREIGN_TABLE || leaf->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: %s of %s is a %s; a synopsis of the parent needs every leaf to be a table of "
                                   "its own database, the same for every session",
                                   fn, RelationGetRelationName(leaf), relname,
                                   kind == RELKIND_FOREIGN_TABLE ? "foreign table" : "temporary table")));
        if (kind != RELKIND_RELATION)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: %s of %s is not a table", fn, RelationGetRelationName(leaf), relname)));
        if (leaf != rel)
            l->maps[l->n] = convert_tuples_by_name(RelationGetDescr(leaf), RelationGetDescr(rel));
        l->rels[l->n++] = leaf;
    }
}

void close_leaves(Leaves* l, Relation rel) {
    for (int i = 0; i < l->n; ++i)
        if (l->rels[i] != rel) table_close(l->rels[i], NoLock);  // locks are kept until the end of the transaction
    l->n = 0;
}

namespace {
void open_leaf_scan(Scan& s) {
    Relation leaf = s.leaves->rels[s.leaf];
    if (s.leaf_slot != nullptr) ExecDropSingleTupleTableSlot(s.leaf_slot);
    s.leaf_slot = table_slot_create(leaf, nullptr);
    s.scan = table_beginscan(leaf, GetActiveSnapshot(), 0, nullptr);
    s.slot = s.leaves->maps[s.leaf] != nullptr ? s.parent_slot : s.leaf_slot;
}
}  // namespace

Scan begin_scan(const Leaves* leaves, TupleDesc desc) {
    Scan s;
    memset(&s, 0, sizeof s);
    s.leaves = leaves;
    s.parent_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
    if (leaves->n > 0) open_leaf_scan(s);
    return s;
}

bool scan_next(Scan& s) {
    while (s.leaf < s.leaves->n) {
        if (table_scan_getnextslot(s.scan, ForwardScanDirection, s.leaf_slot)) {
            TupleConversionMap* map = s.leaves->maps[s.leaf];
            if (map != nullptr) execute_attr_map_slot(map->attrMap, s.leaf_slot, s.parent_slot);
            return true;
        }
        table_endscan(s.scan);
        s.scan = nullptr;
        if (++s.leaf < s.leaves->n) open_leaf_scan(s);
    }
    return false;
}

void end_scan(Scan& s) {
    if (s.scan != nullptr) table_endscan(s.scan);
    if (s.leaf_slot != nullptr) ExecDropSingleTupleTableSlot(s.leaf_slot);
    ExecDropSingleTupleTableSlot(s.parent_slot);
    s.scan = nullptr;
    s.leaf_slot = s.parent_slot = s.slot = nullptr;
}

}  // namespace synopsis_glue
