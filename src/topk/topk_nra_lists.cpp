// topk_nra's relation and sorted lists (topk_nra.h): the relation's columns
// and indexes checked once, then one reader per list in descending score
// order -- a backward scan of a B-tree index on the column (index_reader.h;
// index-only when the index also holds the id column), else an SPI cursor
// (ORDER BY col DESC: PostgreSQL sorts) when the column has no such index,
// row-level security applies, or the table has inheritance children.
#include "topk/topk_nra.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include <cmath>

// Writes a cursor's (id int8, score float8) rows into the current list buffer.
struct ListReceiver {
    DestReceiver pub;  // must be first
    const char* column;
    int64* ids;
    double* scores;
    int64 n;
    int64 cap;
};

namespace {

bool list_receive(TupleTableSlot* slot, DestReceiver* self) {
    ListReceiver* r = reinterpret_cast<ListReceiver*>(self);
    slot_getsomeattrs(slot, 2);
    if (r->n >= r->cap || slot->tts_isnull[0] || slot->tts_isnull[1])
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR), errmsg("topk_nra: unexpected row from column \"%s\"", r->column)));
    double v = DatumGetFloat8(slot->tts_values[1]);
    if (std::isnan(v) || std::isinf(v))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("topk_nra: column \"%s\" contains %s", r->column, std::isnan(v) ? "NaN" : "an infinite value"),
                 errdetail("Scores are summed; they must be finite.")));
    r->ids[r->n] = DatumGetInt64(slot->tts_values[0]);
    r->scores[r->n] = v;
    ++r->n;
    return true;
}

void list_startup(DestReceiver*, int, TupleDesc) {}
void list_shutdown(DestReceiver*) {}
void list_destroy(DestReceiver*) {}

bool is_int_type(Oid t) { return t == INT2OID || t == INT4OID || t == INT8OID; }
bool is_score_type(Oid t) { return is_int_type(t) || t == FLOAT4OID || t == FLOAT8OID; }

AttrNumber column_attnum(Oid relid, const char* relname, const char* column) {
    AttrNumber a = get_attnum(relid, column);
    if (a == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("topk_nra: column \"%s\" of relation \"%s\" does not exist", column, relname)));
    if (a < 0)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("topk_nra: system column \"%s\" cannot be used", column)));
    return a;
}

// A valid, non-partial unique index on exactly this column.
bool has_unique_index(Relation rel, AttrNumber attnum) {
    List* indexes = RelationGetIndexList(rel);
    ListCell* lc;
    bool found = false;
    foreach (lc, indexes) {
        Oid index_oid = lfirst_oid(lc);
        HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
        if (!HeapTupleIsValid(tup)) continue;
        Form_pg_index ix = reinterpret_cast<Form_pg_index>(GETSTRUCT(tup));
        if (ix->indisunique && ix->indisvalid && ix->indnkeyatts == 1 && ix->indkey.values[0] == attnum &&
            heap_attisnull(tup, Anum_pg_index_indpred, nullptr) && heap_attisnull(tup, Anum_pg_index_indexprs, nullptr))
            found = true;
        ReleaseSysCache(tup);
        if (found) break;
    }
    list_free(indexes);
    return found;
}

// Whether the lists may be read by index scans of our own: a plain table (or
// materialized view) without inheritance children (the cursors read those
// too), no row-level security for the caller (an index read would bypass
// the policies) and SELECT on the id column and every score column (else the
// cursors raise the error the caller should see).
bool nra_may_read_indexes(Relation rel, AttrNumber id_att, const AttrNumber* att, int m) {
    const char kind = rel->rd_rel->relkind;
    if (kind != RELKIND_RELATION && kind != RELKIND_MATVIEW) return false;
    const Oid relid = RelationGetRelid(rel);
    // relhassubclass stays set after the last child is dropped: ask pg_inherits.
    if (rel->rd_rel->relhassubclass && find_inheritance_children(relid, NoLock) != NIL) return false;
    if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED) return false;
    const Oid user = GetUserId();
    if (pg_class_aclcheck(relid, user, ACL_SELECT) == ACLCHECK_OK) return true;
    if (pg_attribute_aclcheck(relid, id_att, user, ACL_SELECT) != ACLCHECK_OK) return false;
    for (int j = 0; j < m; ++j)
        if (pg_attribute_aclcheck(relid, att[j], user, ACL_SELECT) != ACLCHECK_OK) return false;
    return true;
}

}  // namespace

// The relation, its columns, the unique index on id_column and the index of
// each list (into c->qrel, c->qid, c->qcol, c->rows_hint, c->relid,
// c->id_att, c->att and c->index_oid). A regclass argument can hold any OID
// (0::oid::regclass): open by try.
void nra_resolve_relation(Oid relid, const char* id_column, NraCall* c) {
    const char* fn = c->fn;
    Relation rel = try_relation_open(relid, AccessShareLock);
    if (rel == NULL)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("%s: relation with OID %u does not exist", fn, relid)));
    const char* relname = RelationGetRelationName(rel);
    char* qrel = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)), relname);
    AttrNumber id_att = column_attnum(relid, relname, id_column);
    Oid id_type = get_atttype(relid, id_att);
    if (!is_int_type(id_type))
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("%s: id_column \"%s\" must be smallint, integer or bigint, not %s", fn, id_column,
                               format_type_be(id_type))));
    const char** qcol = static_cast<const char**>(palloc(sizeof(char*) * c->m));
    AttrNumber* att = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * c->m));
    for (int j = 0; j < c->m; ++j) {
        AttrNumber a = column_attnum(relid, relname, c->col[j]);
        att[j] = a;
        Oid t = get_atttype(relid, a);
        if (!is_score_type(t))
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: score column \"%s\" must be double precision, real, smallint, integer or "
                                   "bigint, not %s",
                                   fn, c->col[j], format_type_be(t))));
        qcol[j] = psprintf("r.%s", quote_identifier(c->col[j]));
    }
    if (!has_unique_index(rel, id_att))
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("%s: id_column \"%s\" of relation \"%s\" has no unique index", fn, id_column, relname),
                        errhint("NRA needs each object once per list: CREATE UNIQUE INDEX ON %s (%s).", qrel,
                                quote_identifier(id_column))));
    c->rows_hint = rel->rd_rel->reltuples > 0 ? static_cast<int64>(rel->rd_rel->reltuples) : 0;
    c->index_oid = static_cast<Oid*>(palloc0(sizeof(Oid) * c->m));
    if (nra_may_read_indexes(rel, id_att, att, c->m)) {
        for (int j = 0; j < c->m; ++j) {
            bool holds_id;
            c->index_oid[j] = index_reader_find(rel, att[j], id_att, &holds_id);
        }
    }
    relation_close(rel, NoLock);
    c->relid = relid;
    c->id_att = id_att;
    c->att = att;
    c->qrel = qrel;
    c->qcol = qcol;
}

// One reader per list, in descending order: an index reader where the column
// has a usable B-tree index (found by nra_resolve_relation), else a cursor
// (PostgreSQL picks the plan; without an index it sorts the whole column).
// The index readers see the rows the cursors would: the active snapshot.
void nra_open_lists(NraCall* c) {
    c->portals = static_cast<Portal*>(MemoryContextAllocZero(c->work, sizeof(Portal) * c->m));
    c->readers = static_cast<IndexReader**>(MemoryContextAllocZero(c->work, sizeof(IndexReader*) * c->m));
    c->read_kind = static_cast<int8*>(MemoryContextAllocZero(c->work, sizeof(int8) * c->m));
    c->recv = static_cast<ListReceiver*>(MemoryContextAllocZero(c->work, sizeof(ListReceiver)));
    c->recv->pub.receiveSlot = list_receive;
    c->recv->pub.rStartup = list_startup;
    c->recv->pub.rShutdown = list_shutdown;
    c->recv->pub.rDestroy = list_destroy;
    c->recv->pub.mydest = DestNone;
    StringInfoData q;
    initStringInfo(&q);
    for (int j = 0; j < c->m; ++j) {
        if (OidIsValid(c->index_oid[j])) {
            if (c->heap == nullptr) {
                c->heap = relation_open(c->relid, AccessShareLock);
                c->snapshot = RegisterSnapshot(GetActiveSnapshot());
            }
            c->readers[j] = index_reader_open(c->heap, c->index_oid[j], c->att[j], c->id_att, c->snapshot);
            c->read_kind[j] = index_reader_index_only(c->readers[j]) ? 2 : 1;
            continue;
        }
        resetStringInfo(&q);
        appendStringInfo(&q,
                         "SELECT %s::pg_catalog.int8, %s::pg_catalog.float8 FROM %s AS r "
                         "WHERE %s IS NOT NULL AND %s IS NOT NULL ORDER BY %s DESC",
                         c->qid, c->qcol[j], c->qrel, c->qcol[j], c->qid, c->qcol[j]);
        SPIPlanPtr plan = SPI_prepare_cursor(q.data, 0, nullptr, CURSOR_OPT_FAST_PLAN | CURSOR_OPT_NO_SCROLL);
        if (plan == nullptr)
            ereport(ERROR,
                    (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s: cannot prepare the cursor of column \"%s\": %s",
                                                             c->fn, c->col[j], SPI_result_code_string(SPI_result))));
        c->portals[j] = SPI_cursor_open(nullptr, plan, nullptr, nullptr, true);
    }
}

int64 nra_read_list(NraCall* c, int j, int64* ids, double* scores) {
    if (c->readers[j] == nullptr) {  // a cursor: through the receiver
        ListReceiver* r = c->recv;
        r->column = c->col[j];
        r->ids = ids;
        r->scores = scores;
        r->n = 0;
        r->cap = c->batch;
        PortalRunFetch(c->portals[j], FETCH_FORWARD, c->batch, &r->pub);
        return r->n;
    }
    const int64 n = index_reader_read(c->readers[j], ids, scores, c->batch);
    for (int64 i = 0; i < n; ++i)
        if (std::isnan(scores[i]) || std::isinf(scores[i]))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" contains %s", c->fn, c->col[j],
                                   std::isnan(scores[i]) ? "NaN" : "an infinite value"),
                            errdetail("Scores are summed; they must be finite.")));
    return n;
}

// Ends the index readers and the cursors (an ERROR leaves the scans, the
// relation and the snapshot to the resource owner's cleanup at abort).
void nra_close_lists(NraCall* c) {
    for (int j = 0; j < c->m; ++j) {
        if (c->readers[j] != nullptr) {
            c->heap_fetches += index_reader_heap_fetches(c->readers[j]);
            index_reader_close(c->readers[j]);
            c->readers[j] = nullptr;
        }
        if (c->portals[j] != nullptr) SPI_cursor_close(c->portals[j]);
        c->portals[j] = nullptr;
    }
    if (c->snapshot != nullptr) UnregisterSnapshot(c->snapshot);
    c->snapshot = nullptr;
    if (c->heap != nullptr) relation_close(c->heap, NoLock);
    c->heap = nullptr;
}
