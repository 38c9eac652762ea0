// Building a synopsis from a table: the caller's privileges and row-level
// security are checked as the real query would check them, the relation is
// read through its table access method with the active snapshot, every row
// counts (NULL = NaN), text-like columns become dictionary codes after
// sampling (values become numbers and codes through synopsis_codec.h). The
// relation reader's parallel workers and the backend draw the sample: one
// pass of the rows of smallest hash(seed, TID) (sample_relation); or, for a
// stratified build or a partitioned table or inheritance parent (each leaf
// its own strata, synopsis_leaves.cpp), two: rows per stratum and census
// candidates, then per stratum the rows of smallest hash(seed, leaf, TID)
// of a congressional allocation (synopsis_strata.cpp); a census of one
// table, one (the first pass keeps the uniform sample's rows too). The
// sampled rows are then fetched by TID with the same snapshot.
#include "synopsis/synopsis_build.h"

#include "readers/relation_reader.h"

extern "C" {
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
}

#include <algorithm>
#include <cmath>

namespace synopsis_glue {

Relation open_synopsis_table(Oid relid, const char* fn) {
    const char* before = get_rel_name(relid);
    Relation rel = try_relation_open(relid, AccessShareLock);
    if (rel == nullptr && before != nullptr)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("%s: relation \"%s\" was dropped while this call waited for its lock", fn, before)));
    if (rel == nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("%s: relation with OID %u does not exist", fn, relid)));
    return rel;
}

TableBuild* build_table_synopsis(Oid relid, const char* name, int d, const AttrNumber* attnums, int n_stratify,
                                 const int* stratify, int32 sample_size, int method, int smoothing, CensusMode census,
                                 const char* fn) {
    // try_: refresh_synopsis reads the table's OID from the catalog row
    // before it waits for the lock, and the table may be dropped meanwhile.
    Relation rel = open_synopsis_table(relid, fn);
    const char* relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
                                                     RelationGetRelationName(rel));
    char relkind = rel->rd_rel->relkind;
    if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW && relkind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s: %s is a %s; table synopses are built on tables, partitioned tables and "
                               "materialized views",
                               fn, relname,
                               relkind == RELKIND_VIEW            ? "view"
                               : relkind == RELKIND_FOREIGN_TABLE ? "foreign table"
                                                                  : "relation of another kind")));
    if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("%s: %s is a temporary table; a table synopsis is stored for every session", fn, relname)));
    if (relkind == RELKIND_MATVIEW && !RelationIsPopulated(rel))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: materialized view %s has not been populated", fn, relname)));

    // Privileges as for SELECT of these columns, then row-level security:
    // the parent's only, as a query on the parent checks them (children
    // are read with the parent's privileges and policies).
    // Each column named by its argument (a stratify column is one of the
    // columns); what the build derives beyond them (the default census'
    // candidates, the sample relation's columns) is only what the builder
    // may read (docs/aqp.md "Security").
    Oid user = GetUserId();
    if (pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK)
        for (int j = 0; j < d; ++j)
            if (pg_attribute_aclcheck(relid, attnums[j], user, ACL_SELECT) != ACLCHECK_OK) {
                bool stratifies = false;
                for (int s = 0; s < n_stratify; ++s) stratifies |= stratify[s] == j;
                const char* col = get_attname(relid, attnums[j], true);
                ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                                errmsg("%s: permission denied for column \"%s\" of table %s (named in %s)", fn,
                                       col ? col : "?", relname, stratifies ? "stratify" : "columns")));
            }
    if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("%s: row-level security applies to table %s; a synopsis of it would count rows differently "
                        "for each role",
                        fn, relname)));

    // Freshness: the counters first, then the snapshot that reads the rows,
    // so that a change the counters miss is one the sample holds or one that
    // counts later as a change. Under READ COMMITTED a new snapshot (what a
    // volatile function's next query would get); a transaction snapshot
    // older than the counters makes the synopsis stale from birth.
    // The leaves are locked before the counters are read (their sum is the
    // parent's).
    Leaves leaves;
    open_leaves(&leaves, rel, relname, fn);
    // Each leaf is a stratum of its own: its rows' weights tell which leaf
    // holds them, i.e. their partition key (or tableoid).
    const AttrNumber key = leaves.parent ? leaf_strata_hidden(relid, user) : InvalidAttrNumber;
    if (key != InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("%s: permission denied for %s \"%s\" of table %s (a synopsis of a %s keeps a stratum "
                               "per %s)",
                               fn, key < 0 ? "column" : "partition key column", get_attname(relid, key, false), relname,
                               key < 0 ? "parent" : "partitioned table", key < 0 ? "child table" : "partition")));
    StatsMark mark;
    read_stats_mark(relid, &mark, leaves.members);
    const char* built_stale = build_snapshot_problem();
    bool own_snapshot = !IsolationUsesXactSnapshot();
    if (own_snapshot) PushActiveSnapshot(GetTransactionSnapshot());

    ColumnPlan* cols = static_cast<ColumnPlan*>(palloc0(sizeof(ColumnPlan) * d));
    TupleDesc desc = RelationGetDescr(rel);
    AttrNumber max_att = 0;
    bool any_dict = false;
    for (int j = 0; j < d; ++j) {
        if (attnums[j] < 1 || attnums[j] > desc->natts || TupleDescAttr(desc, attnums[j] - 1)->attisdropped)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("%s: column %d of table %s no longer exists", fn, attnums[j], relname)));
        Form_pg_attribute att = TupleDescAttr(desc, attnums[j] - 1);
        ColumnPlan& c = cols[j];
        c.attnum = attnums[j];
        c.type = att->atttypid;
        c.name = pstrdup(NameStr(att->attname));
        if (!column_encoding(c.type, &c.encoding))
            ereport(ERROR,
                    (errcode(ERRCODE_DATATYPE_MISMATCH),
                     errmsg("%s: column \"%s\" has type %s; a synopsis column must be int2, int4, int8, float4, "
                            "float8, numeric, date, timestamp, timestamptz, bool, text, varchar, char or an enum",
                            fn, c.name, format_type_be(c.type))));
        getTypeOutputInfo(c.type, &c.out_fn, &c.out_varlena);
        any_dict |= c.encoding == ValueEncoding::Dictionary;
        max_att = std::max(max_att, c.attnum);
    }
    check_size(sample_size, d, true, fn);
    check_role_sample_rows(relid, name, 1, fn);  // a role with no room left reads nothing

    // Stratified: rows per stratum key first, then each stratum's share.
    Strata strata;
    memset(&strata, 0, sizeof strata);
    strata.capacity = sample_size;
    // The default keeps no census in a stratified synopsis: its strata are
    // the groups the box path answers GROUP BY the stratify columns from,
    // one key value each, and a census stratum holds rows of many
    // (census => true still builds one; such groups are then found as an
    // unstratified synopsis' are).
    if (census == CensusMode::Auto && n_stratify > 0) census = CensusMode::Off;
    // A census needs the first pass (its rows are known only after it; Auto
    // decides there from every row). An unstratified build of one table
    // keeps the uniform sample's rows in that pass too (the rows of smallest
    // hash(seed, TID)): with no census they are the sample, the one it would
    // be without the pass; with one, the first of them that are no census
    // rows are the other stratum's (a second pass only where too few are).
    StrataReadStats counted;
    memset(&counted, 0, sizeof counted);
    RelationSample drawn;
    memset(&drawn, 0, sizeof drawn);
    int passes = 0;
    const uint64 seed = random_seed_for_call();
    if (n_stratify > 0 || leaves.parent || census != CensusMode::Off) {
        const bool one_table = n_stratify == 0 && !leaves.parent;
        count_strata(&strata, rel, &leaves, desc, cols, d, n_stratify, stratify, sample_size, census,
                     one_table ? seed : 0, one_table, relname, fn);
        counted = strata.counts.stats;
        ++passes;
        if (census == CensusMode::Auto && strata.ncensus == 0 && one_table) {
            const StrataCounts& k = strata.counts;  // the uniform sample, in TID order
            std::sort(k.bottom_ids, k.bottom_ids + k.nbottom);
            drawn.rows = k.rows;
            drawn.m = k.nbottom;
            drawn.tids = static_cast<ItemPointerData*>(
                MemoryContextAllocHuge(CurrentMemoryContext, sizeof(ItemPointerData) * Max(k.nbottom, 1)));
            for (int64 i = 0; i < k.nbottom; ++i) strata_id_tid(k.bottom_ids[i], &drawn.tids[i]);
            drawn.read_path = counted.read_path;
            drawn.read_workers = counted.read_workers;
            drawn.worker_rows = counted.worker_rows;
            hash_destroy(strata.table);
            memset(&strata, 0, sizeof strata);
            strata.capacity = sample_size;
        }
    }
    const int64 capacity = strata.capacity;

    // The sample: numbers now, dictionary values as strings until the end.
    double* sample = static_cast<double*>(MemoryContextAllocHuge(
        CurrentMemoryContext, std::max<Size>(1, static_cast<Size>(capacity) * d * sizeof(double))));
    char*** strs = static_cast<char***>(palloc0(sizeof(char**) * d));
    for (int j = 0; j < d; ++j)
        if (cols[j].encoding == ValueEncoding::Dictionary)
            strs[j] = static_cast<char**>(MemoryContextAllocExtended(
                CurrentMemoryContext, std::max<Size>(1, static_cast<Size>(capacity) * sizeof(char*)),
                MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
    int64 n_rows = 0;
    int64 m = 0;
    double row[kMaxDim];
    // The sampled rows whole, for the sample relation (0.7.0 objects only).
    const bool keep_rows = OidIsValid(samples_namespace());
    HeapTuple* kept = keep_rows ? static_cast<HeapTuple*>(MemoryContextAllocExtended(
                                      CurrentMemoryContext, std::max<Size>(1, static_cast<Size>(capacity) * sizeof(HeapTuple)),
                                      MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO))
                                : nullptr;
    // The values of a sampled row at `at` (dictionary values as strings).
    auto store = [&](TupleTableSlot* slot, int64 at) {
        for (int j = 0; j < d; ++j) {
            const ColumnPlan& c = cols[j];
            if (slot->tts_isnull[c.attnum - 1])
                row[j] = NAN;
            else if (c.encoding != ValueEncoding::Dictionary)
                row[j] = column_number(slot->tts_values[c.attnum - 1], c.type, fn, c.name, relname);
            else
                row[j] = 0;  // coded after sampling
        }
        memcpy(sample + at * d, row, sizeof(double) * d);
        if (keep_rows) {
            if (kept[at]) heap_freetuple(kept[at]);  // a replaced sample row
            kept[at] = ExecCopySlotHeapTuple(slot);
        }
        if (any_dict)
            for (int j = 0; j < d; ++j) {
                if (!strs[j]) continue;
                const ColumnPlan& c = cols[j];
                if (strs[j][at]) pfree(strs[j][at]);  // a replaced sample row
                strs[j][at] = slot->tts_isnull[c.attnum - 1]
                                  ? nullptr
                                  : dictionary_string(slot->tts_values[c.attnum - 1], c.out_fn);
            }
    };
    if (strata.table == nullptr) {
        // The relation reader draws the sample (parallel workers, every
        // number checked finite), then its rows are fetched by TID.
        AttrNumber check_att[kMaxDim];
        Oid check_type[kMaxDim];
        const char* check_name[kMaxDim];
        int ncheck = 0;
        for (int j = 0; j < d; ++j)
            if (column_may_be_non_finite(cols[j].type)) {
                check_att[ncheck] = cols[j].attnum;
                check_type[ncheck] = cols[j].type;
                check_name[ncheck++] = cols[j].name;
            }
        if (passes == 0) {
            drawn = sample_relation(fn, rel, ncheck, check_att, check_type, check_name, sample_size, seed);
            ++passes;
        }
        n_rows = drawn.rows;
        m = drawn.m;
        TupleTableSlot* slot = table_slot_create(rel, nullptr);
        Snapshot snapshot = GetActiveSnapshot();
        for (int64 i = 0; i < m; ++i) {
            if ((i & 1023) == 0) CHECK_FOR_INTERRUPTS();
            if (!table_tuple_fetch_row_version(rel, &drawn.tids[i], snapshot, slot))
                elog(ERROR, "%s: a sampled row of %s is not visible to the snapshot that read it", fn, relname);
            slot_getsomeattrs(slot, max_att);
            store(slot, i);
        }
        ExecDropSingleTupleTableSlot(slot);
    } else if (strata.n_groups > 0) {  // (none: no rows, an ERROR below)
        // The strata's rows by id (leaf, TID), each stratum's in id order.
        StrataReadStats sampled;
        const uint64* ids = sample_strata(&strata, seed, &sampled, fn);
        drawn.ms_read = sampled.ms_read;
        drawn.read_path = sampled.read_path ? sampled.read_path : counted.read_path;
        drawn.read_workers = sampled.read_workers;
        passes += sampled.read_path != nullptr;
        drawn.worker_rows = counted.worker_rows;
        n_rows = strata.counts.rows;
        m = capacity;
        TupleTableSlot** slots = static_cast<TupleTableSlot**>(palloc0(sizeof(TupleTableSlot*) * leaves.n));
        TupleTableSlot* parent_slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
        Snapshot snapshot = GetActiveSnapshot();
        for (int64 i = 0; i < m; ++i) {
            if ((i & 1023) == 0) CHECK_FOR_INTERRUPTS();
            const int leaf = strata_id_leaf(ids[i]);
            if (slots[leaf] == nullptr) slots[leaf] = table_slot_create(leaves.rels[leaf], nullptr);
            ItemPointerData tid;
            strata_id_tid(ids[i], &tid);
            if (!table_tuple_fetch_row_version(leaves.rels[leaf], &tid, snapshot, slots[leaf]))
                elog(ERROR, "%s: a sampled row of %s is not visible to the snapshot that read it", fn, relname);
            TupleTableSlot* slot = slots[leaf];
            if (leaves.maps[leaf] != nullptr) {
                execute_attr_map_slot(leaves.maps[leaf]->attrMap, slot, parent_slot);
                slot = parent_slot;
            }
            slot_getsomeattrs(slot, max_att);
            store(slot, i);
        }
        for (int l = 0; l < leaves.n; ++l)
            if (slots[l] != nullptr) ExecDropSingleTupleTableSlot(slots[l]);
        ExecDropSingleTupleTableSlot(parent_slot);
    }
    TableBuild* b = static_cast<TableBuild*>(palloc0(sizeof(TableBuild)));
    // A parent's storage: the fingerprint of the members that were read.
    b->relfilenode = leaves.parent ? storage_mark_of(leaves.members) : rel->rd_rel->relfilenode;
    for (int j = 0; j < d; ++j) {
        b->atttype[j] = cols[j].type;
        b->collation[j] = TupleDescAttr(desc, cols[j].attnum - 1)->attcollation;
        strlcpy(b->attname[j], cols[j].name, NAMEDATALEN);
    }
    if (own_snapshot) PopActiveSnapshot();
    if (n_rows == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: table %s has no rows; a synopsis needs at least one", fn, relname)));

    check_role_sample_rows(relid, name, m, fn);  // before anything is stored
    syn::Stratum* st_out = strata.table ? strata_of(&strata) : nullptr;

    // Dictionaries from the sampled values (sorted by strcmp), then codes.
    SynValue* v = new_value(CurrentMemoryContext);
    for (int j = 0; j < d; ++j) {
        v->encoding[j] = static_cast<uint8>(cols[j].encoding);
        strlcpy(v->names[j], cols[j].name, NAMEDATALEN);
        if (!strs[j]) continue;
        v->dict[j] = dictionary_encode(strs[j], m, sample, d, j, &v->dict_size[j]);
        v->s.cols[j].categorical = true;
    }
    for (int j = 0; j < d; ++j)
        for (int64 i = 0; i < m; ++i)
            if (std::isnan(sample[i * d + j])) ++v->s.cols[j].null_count;
    v->has_names = true;
    v->s.d = d;
    v->s.n_rows = n_rows;
    v->s.m = m;
    v->s.sample_size = sample_size;
    v->s.skipped = 0;
    v->s.sample = sample;
    v->sample = sample;
    v->s.n_strata = strata.table ? static_cast<int>(strata.n_groups) : 0;
    v->s.strata = st_out;
    v->strata = st_out;
    approx::Status st = run_engine(fn, 0, 0, [&](const approx::ExecContext& ctx) {
        ctx.stats->add("sample_rows", static_cast<double>(m));
        return syn::finalize(v->s, static_cast<syn::Bandwidth>(method), static_cast<syn::Smoothing>(smoothing), ctx);
    });
    check_engine_result(st, fn);
    {  // how the sample was read (last_run): a first pass (strata, census) and the sample's
        approx::RunStats& rs = last_run_stats();
        const double ms = counted.ms_read + drawn.ms_read;
        rs.ms_read = ms;
        rs.add("read_passes", passes);
        rs.add("read_workers", std::max(drawn.read_workers, counted.read_workers));
        rs.add("rows_read_by_workers", static_cast<double>(drawn.worker_rows));
        if (ms > 0) rs.add("rows_read_per_s", n_rows / (ms / 1000.0));
        last_run_set_read(drawn.read_path);
    }
    validate_value(v, ERRCODE_INTERNAL_ERROR, psprintf("%s result", fn));

    // The counters read before the snapshot, with this backend's own
    // unflushed counts (table_change_counters). Rows the build read that no
    // counter had seen (another session's load not flushed) arrive later as
    // inserts: pending_inserts, which the staleness check forgives.
    b->value = PointerGetDatum(value_to_bytes(v));
    b->rows_built = n_rows;
    b->changes_built = mark.changes;
    b->inserts_built = mark.inserts;
    b->pending_inserts = std::max<int64>(0, n_rows - mark.live);
    b->stats_reset = mark.stats_reset;
    b->cluster_stats_reset = mark.cluster_stats_reset;
    b->built_stale = built_stale;
    for (int j = 0; j < d; ++j) {
        b->label_hash[j] = 0;
        if (cols[j].encoding == ValueEncoding::Dictionary && type_is_enum(cols[j].type) &&
            !enum_label_hash(cols[j].type, v->dict_size[j], v->dict[j], &b->label_hash[j]))
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("%s: a label of enum column \"%s\" of %s changed during the build", fn, cols[j].name,
                                   relname)));
    }
    // The same rows as the value's sample, stratum by stratum.
    SampleRelation sr = {InvalidOid, 0, nullptr};
    if (keep_rows) sr = make_sample_relation(rel, kept, m, st_out, v->s.n_strata, fn);
    b->sample_relid = sr.relid;
    b->sample_natts = sr.natts;
    b->sample_attnum = sr.attnum;
    close_leaves(&leaves, rel);
    table_close(rel, NoLock);  // the lock is kept until the end of the transaction
    return b;
}

}  // namespace synopsis_glue
