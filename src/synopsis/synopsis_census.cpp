// The census (take-all) stratum of a table synopsis build's first pass
// (synopsis_build.h): the candidate measures (whose top rows and spread the
// relation reader's participants gather while they count, merged by the
// leader: readers/relation_strata.cpp), the default's decision
// (core/sample_census.hpp: census_pays), and the census rows moved out of
// their strata into a census stratum of their leaf.
#include "synopsis/synopsis_build.h"

#include <algorithm>

extern "C" {
#include "access/table.h"
#include "miscadmin.h"
#include "utils/rel.h"
}

namespace synopsis_glue {

namespace {

// Census measures: On, the synopsis' Number columns; Auto, every numeric
// column of the table the builder may SELECT (the sample path aggregates
// any column of the sample relation, not only those the synopsis names; a
// census of a column the builder may not read would tell it, through the
// rows that weigh 1, which rows hold that column's largest values); both
// without stratify columns and dropped ones.
void census_measures(CensusPass* h, CensusMode census, Oid relid, TupleDesc desc, const ColumnPlan* cols, int d,
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
            if (att->attisdropped || !is_measure_type(att->atttypid) || stratifies(a) ||
                !table_column_readable(relid, a, GetUserId()))
                continue;
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

}  // namespace

void census_begin(CensusPass* c, CensusMode census, Oid relid, TupleDesc desc, const ColumnPlan* cols, int d, int n_stratify,
                  const int* stratify, int32 sample_size, const char* fn) {
    memset(c, 0, sizeof *c);
    c->mode = census;
    if (census == CensusMode::Off) return;
    census_measures(c, census, relid, desc, cols, d, n_stratify, stratify);
    if (c->n_measures == 0 && census == CensusMode::On)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: census needs a numeric column (int2, int4, int8, float4, float8, numeric) "
                               "that is not a stratify column",
                               fn)));
    // On: census_size rows of each measure. Auto: room for more (a
    // measure's share grows when others decline), decided at the smallest
    // share, census_size over every candidate.
    c->t = approx::sample::census_size(sample_size, c->n_measures);
    c->room = c->t;
    if (census == CensusMode::Auto && c->t > 0) {
        const int64 most = approx::sample::census_size(sample_size, 1);
        const int64 fits = static_cast<int64>(kAutoHeapBytes / sizeof(approx::sample::CensusEntry) / c->n_measures);
        c->room = Max(c->t, Min(most, fits));
    }
}

void census_decide(CensusPass* c, int64 rows_read, int32 sample_size) {
    if (c->t == 0 || c->mode != CensusMode::Auto) return;
    // Only the measures whose top rows hold more of their spread than the
    // census costs; none where the sample keeps every row anyway. Decided
    // at the smallest share t (each measure's top t rows), then the
    // census' tenth of the budget is shared by those that take it (their
    // top rows hold still more of the spread at a larger share).
    int taking = 0;
    for (int m = 0; m < c->n_measures; ++m) {
        approx::sample::census_sort(c->heap[m], c->n[m]);
        const bool pays = rows_read > sample_size &&
                          approx::sample::census_pays(c->spread[m], c->heap[m], std::min<int64>(c->n[m], c->t));
        if (!pays) c->n[m] = 0;
        taking += pays;
    }
    if (taking == 0) {
        c->t = 0;
        return;
    }
    for (int m = 0; m < c->n_measures; ++m)
        c->n[m] = std::min<int64>(c->n[m], std::min<int64>(c->room, approx::sample::census_size(sample_size, taking)));
}

// The census rows out of their strata into a take-all stratum of their
// leaf ("[P<leaf>|]C|": no ordinary key starts with C). Each row is fetched
// by TID to find its ordinary stratum (the first pass kept only the ids).
void place_census(Strata* s, const Leaves* leaves, TupleDesc desc, int64* krows, const CensusPass& h, const char* fn) {
    int64 total = 0;
    for (int j = 0; j < h.n_measures; ++j) total += h.n[j];
    uint64* ids = static_cast<uint64*>(palloc(sizeof(uint64) * Max(total, 1)));
    int64 n = 0;
    for (int j = 0; j < h.n_measures; ++j)
        for (int64 i = 0; i < h.n[j]; ++i) ids[n++] = static_cast<uint64>(h.heap[j][i].row);
    std::sort(ids, ids + n);
    n = std::unique(ids, ids + n) - ids;  // the top of several measures once
    s->census_ids = ids;
    s->ncensus = n;
    s->census_of = static_cast<StratumEntry**>(palloc(sizeof(StratumEntry*) * Max(n, 1)));
    const StrataRead& r = s->read;
    TupleTableSlot** slots = static_cast<TupleTableSlot**>(palloc0(sizeof(TupleTableSlot*) * leaves->n));
    TupleTableSlot* parent_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
    Datum* values = static_cast<Datum*>(palloc0(sizeof(Datum) * Max(r.ncols, 1)));
    bool* isnull = static_cast<bool*>(palloc0(sizeof(bool) * Max(r.ncols, 1)));
    AttrNumber max_att = 0;
    for (int k = 0; k < r.nkeys; ++k) max_att = Max(max_att, s->read_att[r.keycols[k]]);
    char* buf = nullptr;
    Size cap = 0;
    StringInfoData key;
    initStringInfo(&key);
    for (int64 i = 0; i < n; ++i) {
        const int leaf = strata_id_leaf(ids[i]);
        Relation rel = leaves->rels[leaf];
        if (slots[leaf] == nullptr) slots[leaf] = table_slot_create(rel, nullptr);
        ItemPointerData tid;
        strata_id_tid(ids[i], &tid);
        if (!table_tuple_fetch_row_version(rel, &tid, GetActiveSnapshot(), slots[leaf]))
            elog(ERROR, "%s: a census row is not visible to the snapshot that read it", fn);
        TupleTableSlot* slot = slots[leaf];
        if (leaves->maps[leaf] != nullptr) {
            execute_attr_map_slot(leaves->maps[leaf]->attrMap, slot, parent_slot);
            slot = parent_slot;
        }
        slot_getsomeattrs(slot, max_att);
        for (int k = 0; k < r.nkeys; ++k) {
            const int c = r.keycols[k];
            values[c] = slot->tts_values[s->read_att[c] - 1];
            isnull[c] = slot->tts_isnull[s->read_att[c] - 1];
        }
        const uint32 len = strata_row_key(&r, leaf, values, isnull, &buf, &cap);
        const int64 k = strata_find_key(&s->counts, buf, len);
        if (k < 0 || krows[k] == 0) elog(ERROR, "%s: a census row of a stratum the first pass did not see", fn);
        --krows[k];
        resetStringInfo(&key);
        if (leaves->parent) appendStringInfo(&key, "P%010u|", RelationGetRelid(rel));
        appendStringInfoString(&key, "C|");
        StratumEntry* e = enter_stratum(s->table, key.data);
        e->census = true;
        ++e->rows;
        s->census_of[i] = e;
    }
    for (int l = 0; l < leaves->n; ++l)
        if (slots[l] != nullptr) ExecDropSingleTupleTableSlot(slots[l]);
    ExecDropSingleTupleTableSlot(parent_slot);
}

}  // namespace synopsis_glue
