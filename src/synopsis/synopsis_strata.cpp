// The first pass of a stratified table synopsis build (synopsis_build.h):
// rows per stratum key (the leaf, then the stratify columns' output
// strings), a congressional allocation of the sample over the strata
// (Acharya, Gibbons & Poosala 2000) and one reservoir per stratum for the
// second pass. Also the leaves of a partitioned table or inheritance parent
// and the scan that reads them all in the parent's layout.
#include "synopsis/synopsis_build.h"

#include "core/sample_census.hpp"

#include <algorithm>

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

// The census' top rows per measure while counting (palloc'd arrays of
// n_measures: the scan may longjmp).
struct CensusHeaps {
    int n_measures;
    AttrNumber* attnum;  // the measure's column in the table's (the parent's) layout
    Oid* type;
    const char** name;
    approx::sample::CensusEntry** heap;
    int64_t* n;
    approx::sample::CensusSpread* spread;  // every row's, for census_pays (Auto)
};

// Census measures: On, the synopsis' Number columns; Auto, every numeric
// column of the table (the sample path aggregates any column of the sample
// relation, not only those the synopsis names); both without stratify
// columns and dropped ones.
void census_measures(CensusHeaps* h, CensusMode census, TupleDesc desc, const ColumnPlan* cols, int d,
                     int n_stratify, const int* stratify) {
    const int cap = census == CensusMode::On ? d : desc->natts;
    h->attnum = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * Max(cap, 1)));
    h->type = static_cast<Oid*>(palloc(sizeof(Oid) * Max(cap, 1)));
    h->name = static_cast<const char**>(palloc(sizeof(char*) * Max(cap, 1)));
    h->n_measures = 0;
    auto stratifies = [&](AttrNumber att) {
        for (int k = 0; k < n_stratify; ++k)
            if (cols[stratify[k]].attnum == att) return true;
        return false;
    };
    if (census == CensusMode::On) {
        for (int j = 0; j < d; ++j)
            if (cols[j].encoding == ValueEncoding::Number && !stratifies(cols[j].attnum)) {
                h->attnum[h->n_measures] = cols[j].attnum;
                h->type[h->n_measures] = cols[j].type;
                h->name[h->n_measures++] = cols[j].name;
            }
    } else {
        for (int a = 1; a <= desc->natts; ++a) {
            Form_pg_attribute att = TupleDescAttr(desc, a - 1);
            if (att->attisdropped || !is_measure_type(att->atttypid) || stratifies(a)) continue;
            h->attnum[h->n_measures] = a;
            h->type[h->n_measures] = att->atttypid;
            h->name[h->n_measures++] = NameStr(att->attname);
        }
    }
    h->heap = static_cast<approx::sample::CensusEntry**>(palloc0(sizeof(void*) * Max(h->n_measures, 1)));
    h->n = static_cast<int64_t*>(palloc0(sizeof(int64_t) * Max(h->n_measures, 1)));
    h->spread = static_cast<approx::sample::CensusSpread*>(
        palloc0(sizeof(approx::sample::CensusSpread) * Max(h->n_measures, 1)));
}

// The heap memory the default's candidates may take (it keeps a tenth of
// the budget per measure until it knows how many measures take a census).
constexpr Size kAutoHeapBytes = Size(64) << 20;

// A row's census id: its leaf's index, then its TID (block << 16 | offset).
int64 census_row_id(const Scan& scan) {
    const ItemPointer tid = &scan.leaf_slot->tts_tid;
    return (static_cast<int64>(scan.leaf) << 48) | (static_cast<int64>(ItemPointerGetBlockNumber(tid)) << 16) |
           ItemPointerGetOffsetNumber(tid);
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

// The census rows out of their strata into a take-all stratum of their
// leaf ("[P<leaf>|]C|": no ordinary key starts with C). Each row is fetched
// by TID to find its ordinary stratum (the first pass kept only the ids);
// a stratum left empty goes.
void place_census(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, AttrNumber max_att,
                  int n_stratify, const int* stratify, const CensusHeaps& h, const char* fn) {
    HASHCTL ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.keysize = sizeof(int64);
    ctl.entrysize = sizeof(CensusRow);
    ctl.hcxt = CurrentMemoryContext;
    s->census = hash_create("approx_gpu census", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    TupleTableSlot** slots = static_cast<TupleTableSlot**>(palloc0(sizeof(TupleTableSlot*) * leaves->n));
    TupleTableSlot* parent_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
    for (int j = 0; j < h.n_measures; ++j)
        for (int64 i = 0; i < h.n[j]; ++i) {
            const int64 id = h.heap[j][i].row;
            bool found;
            CensusRow* c = static_cast<CensusRow*>(hash_search(s->census, &id, HASH_ENTER, &found));
            if (found) continue;  // the top of another measure too
            const int leaf = static_cast<int>(id >> 48);
            Relation rel = leaves->rels[leaf];
            if (slots[leaf] == nullptr) slots[leaf] = table_slot_create(rel, nullptr);
            ItemPointerData tid;
            ItemPointerSet(&tid, static_cast<BlockNumber>((id >> 16) & 0xFFFFFFFF),
                           static_cast<OffsetNumber>(id & 0xFFFF));
            if (!table_tuple_fetch_row_version(rel, &tid, GetActiveSnapshot(), slots[leaf]))
                elog(ERROR, "%s: a census row is not visible to the snapshot that read it", fn);
            TupleTableSlot* slot = slots[leaf];
            if (leaves->maps[leaf] != nullptr) {
                execute_attr_map_slot(leaves->maps[leaf]->attrMap, slot, parent_slot);
                slot = parent_slot;
            }
            slot_getsomeattrs(slot, max_att);
            const Oid leaf_oid = leaves->parent ? RelationGetRelid(rel) : InvalidOid;
            stratum_key(slot, leaf_oid, cols, n_stratify, stratify, &s->key);
            char* k = s->key.data;
            StratumEntry* from = static_cast<StratumEntry*>(hash_search(s->table, &k, HASH_FIND, nullptr));
            if (from == nullptr || from->census)
                elog(ERROR, "%s: a census row of a stratum the first pass did not see", fn);
            if (--from->rows == 0) hash_search(s->table, &k, HASH_REMOVE, nullptr);
            resetStringInfo(&s->key);
            if (OidIsValid(leaf_oid)) appendStringInfo(&s->key, "P%010u|", leaf_oid);
            appendStringInfoString(&s->key, "C|");
            c->stratum = enter_stratum(s->table, s->key.data);
            c->stratum->census = true;
            ++c->stratum->rows;
        }
    for (int l = 0; l < leaves->n; ++l)
        if (slots[l] != nullptr) ExecDropSingleTupleTableSlot(slots[l]);
    ExecDropSingleTupleTableSlot(parent_slot);
}

}  // namespace

void count_strata(Strata* s, const Leaves* leaves, TupleDesc desc, const ColumnPlan* cols, int d, AttrNumber max_att,
                  int n_stratify, const int* stratify, int32 sample_size, CensusMode census, const char* relname,
                  const char* fn) {
    initStringInfo(&s->key);
    s->census = nullptr;
    // The census' measures, one heap each. On: census_size rows of each.
    // Auto: room for more (a measure's share grows when others decline),
    // decided at the smallest share, census_size over every candidate.
    CensusHeaps h{};
    int64 t = 0, room = 0;
    AttrNumber read_att = max_att;
    if (census != CensusMode::Off) {
        census_measures(&h, census, desc, cols, d, n_stratify, stratify);
        if (h.n_measures == 0 && census == CensusMode::On)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: census needs a numeric column (int2, int4, int8, float4, float8, numeric) "
                                   "that is not a stratify column",
                                   fn)));
        t = approx::sample::census_size(sample_size, h.n_measures);
        room = t;
        if (census == CensusMode::Auto && t > 0) {
            const int64 most = approx::sample::census_size(sample_size, 1);
            const int64 fits = static_cast<int64>(kAutoHeapBytes / sizeof(approx::sample::CensusEntry) / h.n_measures);
            room = Max(t, Min(most, fits));
        }
        for (int m = 0; m < h.n_measures; ++m) {
            h.heap[m] = static_cast<approx::sample::CensusEntry*>(
                palloc_extended(sizeof(approx::sample::CensusEntry) * Max(room, 1), MCXT_ALLOC_HUGE));
            read_att = Max(read_att, h.attnum[m]);
        }
    }
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
        slot_getsomeattrs(scan.slot, read_att);
        stratum_key(scan.slot, scan_leaf(scan), cols, n_stratify, stratify, &s->key);
        ++enter_stratum(s->table, s->key.data)->rows;
        ++total;
        if (t == 0) continue;
        // Ties by a key of the TID and the leaf: the same rows whatever the order.
        const int64 id = census_row_id(scan);
        const uint64 key = approx::sample::census_key(static_cast<uint64>(id),
                                                      RelationGetRelid(leaves->rels[scan.leaf]));
        for (int m = 0; m < h.n_measures; ++m) {
            const AttrNumber att = h.attnum[m];
            if (scan.slot->tts_isnull[att - 1]) continue;
            double v;
            if (census == CensusMode::On)  // a synopsis column: NaN and infinities are an ERROR
                v = column_number(scan.slot->tts_values[att - 1], h.type[m], fn, h.name[m], relname);
            else if (!measure_number(scan.slot->tts_values[att - 1], h.type[m], &v))
                continue;  // not a synopsis column: a value no census can hold is left out
            approx::sample::census_offer(h.heap[m], h.n[m], room, v, key, id);
            h.spread[m].add(v);
        }
    }
    end_scan(scan);
    if (t > 0 && census == CensusMode::Auto) {
        // Only the measures whose top rows hold more of their spread than
        // the census costs; none where the sample keeps every row anyway.
        // Decided at the smallest share t (each measure's top t rows), then
        // the census' tenth of the budget is shared by those that take it
        // (their top rows hold still more of the spread at a larger share).
        int taking = 0;
        for (int m = 0; m < h.n_measures; ++m) {
            approx::sample::census_sort(h.heap[m], h.n[m]);
            const bool pays = total > sample_size &&
                              approx::sample::census_pays(h.spread[m], h.heap[m], std::min<int64>(h.n[m], t));
            if (!pays) h.n[m] = 0;
            taking += pays;
        }
        if (taking == 0)
            t = 0;
        else
            for (int m = 0; m < h.n_measures; ++m)
                h.n[m] = std::min<int64>(h.n[m], std::min<int64>(room, approx::sample::census_size(sample_size, taking)));
    }
    if (t > 0) place_census(s, leaves, desc, cols, max_att, n_stratify, stratify, h, fn);
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
