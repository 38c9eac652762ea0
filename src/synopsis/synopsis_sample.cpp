// The sample relation of a table synopsis (docs/synopsis.md "Storage"): the
// model's sample rows with every live column of the table its builder may
// SELECT and the stratum number last, an UNLOGGED table of approx_gpu_samples
// owned by the extension's owner and a member of the extension (DROP EXTENSION drops it,
// pg_dump skips it, a user's DROP TABLE of it is refused). Made by a build,
// dropped by refresh / drop_synopsis and, for a dropped table, by the
// sql_drop event trigger (synopses_drop_samples): a DROP TABLE cannot
// cascade to an extension member.
#include "synopsis/synopsis.h"

extern "C" {
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include <cinttypes>
#include <cstdio>

namespace synopsis_glue {

namespace {

constexpr const char* kSamplesSchema = "approx_gpu_samples";

// "s<relid>_": every sample relation of relid starts so.
char* name_prefix(Oid relid) { return psprintf("s%u_", relid); }

// A column name the table does not use, for the stratum number.
const char* stratum_name(TupleDesc desc) {
    for (int k = 0;; ++k) {
        const char* name = k == 0 ? "approx_stratum" : psprintf("approx_stratum_%d", k);
        bool used = false;
        for (int a = 0; a < desc->natts && !used; ++a) {
            Form_pg_attribute att = TupleDescAttr(desc, a);
            used = !att->attisdropped && strcmp(NameStr(att->attname), name) == 0;
        }
        if (!used) return name;
    }
}

// COLLATE clause of a column (qualified: the statement runs with
// search_path = pg_catalog, pg_temp).
const char* collate_clause(Oid coll, Oid type) {
    if (!OidIsValid(coll) || coll == get_typcollation(type)) return "";
    HeapTuple tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(coll));
    if (!HeapTupleIsValid(tup)) elog(ERROR, "cache lookup failed for collation %u", coll);
    Form_pg_collation c = reinterpret_cast<Form_pg_collation>(GETSTRUCT(tup));
    const char* out = psprintf(" COLLATE %s", quote_qualified_identifier(get_namespace_name(c->collnamespace),
                                                                         NameStr(c->collname)));
    ReleaseSysCache(tup);
    return out;
}

void read_int8(void* ctx, HeapTuple tup, TupleDesc desc) {
    bool isnull;
    *static_cast<int64*>(ctx) = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
}

struct Found {
    int n, cap;
    Oid* oids;
    Oid* tables;
};

void collect_sample(void* ctx, HeapTuple tup, TupleDesc desc) {
    Found* f = static_cast<Found*>(ctx);
    bool isnull;
    Oid oid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
    char* name = SPI_getvalue(tup, desc, 2);
    unsigned table;
    if (name == nullptr || sscanf(name, "s%u_", &table) != 1) return;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 8;
        f->oids = static_cast<Oid*>(f->oids ? repalloc(f->oids, sizeof(Oid) * f->cap) : palloc(sizeof(Oid) * f->cap));
        f->tables =
            static_cast<Oid*>(f->tables ? repalloc(f->tables, sizeof(Oid) * f->cap) : palloc(sizeof(Oid) * f->cap));
    }
    f->oids[f->n] = oid;
    f->tables[f->n++] = static_cast<Oid>(table);
}

}  // namespace

Oid samples_namespace(void) { return get_namespace_oid(kSamplesSchema, true); }

// Made by make_sample_relation for relid: in approx_gpu_samples, named
// s<relid>_<n>, a plain table, a member of this extension. A metadata row's
// OID is checked so before it is trusted (a restore by a superuser keeps the
// source's OIDs, which may name anything here).
bool is_sample_relation(Oid sample, Oid relid) {
    Oid nsp = samples_namespace();
    if (!OidIsValid(sample) || !OidIsValid(nsp)) return false;
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(sample));
    if (!HeapTupleIsValid(tup)) return false;
    Form_pg_class c = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup));
    const char* prefix = name_prefix(relid);
    bool ok = c->relnamespace == nsp && c->relkind == RELKIND_RELATION &&
              strncmp(NameStr(c->relname), prefix, strlen(prefix)) == 0;
    ReleaseSysCache(tup);
    return ok && getExtensionOfObject(RelationRelationId, sample) == get_extension_oid("approx_gpu", true);
}

SampleRelation make_sample_relation(Relation rel, HeapTuple* rows, int64 m, const syn::Stratum* strata, int n_strata,
                                    const char* fn) {
    SampleRelation out = {InvalidOid, 0, nullptr};
    Oid nsp = samples_namespace();
    Oid ext = get_extension_oid("approx_gpu", true);
    if (!OidIsValid(nsp) || !OidIsValid(ext)) return out;  // objects older than 0.7.0: no sample relation
    Oid relid = RelationGetRelid(rel);
    TupleDesc desc = RelationGetDescr(rel);
    int64 number = 0;
    as_table_owner("SELECT pg_catalog.nextval('approx_gpu_samples.sample_names')", 0, nullptr, nullptr, nullptr,
                   nullptr, nullptr, 0, false, read_int8, &number);
    char* name = psprintf("%s%" PRId64, name_prefix(relid), number);

    // The table's live columns the builder may SELECT (every synopsis column
    // is one), in attnum order: names, types, typmods, collations.
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "CREATE UNLOGGED TABLE approx_gpu_samples.%s (", quote_identifier(name));
    AttrNumber* attnum = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * Max(desc->natts, 1)));
    int natts = 0;
    for (int a = 0; a < desc->natts; ++a) {
        Form_pg_attribute att = TupleDescAttr(desc, a);
        if (att->attisdropped || !table_column_readable(relid, att->attnum, GetUserId())) continue;
        appendStringInfo(&sql, "%s %s%s, ", quote_identifier(NameStr(att->attname)),
                         format_type_extended(att->atttypid, att->atttypmod,
                                              FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY),
                         collate_clause(att->attcollation, att->atttypid));
        attnum[natts++] = att->attnum;
    }
    // The rows never change after the fill: no autovacuum (ANALYZE below).
    appendStringInfo(&sql, "%s pg_catalog.int4 NOT NULL) WITH (autovacuum_enabled = false)",
                     quote_identifier(stratum_name(desc)));
    as_table_owner(sql.data, 0, nullptr, nullptr, nullptr, nullptr, nullptr, 0);
    Oid sample = get_relname_relid(name, nsp);
    if (!OidIsValid(sample)) elog(ERROR, "%s: sample relation %s was not created", fn, name);
    ObjectAddress self = {RelationRelationId, sample, 0};
    ObjectAddress owner_ext = {ExtensionRelationId, ext, 0};
    recordDependencyOn(&self, &owner_ext, DEPENDENCY_EXTENSION);

    // The rows as COPY inserts them (commands/copyfrom.c: a BulkInsertState,
    // table_tuple_insert); values the table keeps out of line are detoasted
    // by the insert (heap_toast_insert_or_update).
    Relation srel = table_open(sample, NoLock);  // CREATE TABLE holds its AccessExclusiveLock
    TupleTableSlot* from = MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);  // the kept copies
    TupleTableSlot* to = table_slot_create(srel, nullptr);
    BulkInsertState bis = GetBulkInsertState();
    CommandId cid = GetCurrentCommandId(true);
    int g = 0;
    for (int64 i = 0; i < m; ++i) {
        if ((i & 1023) == 0) CHECK_FOR_INTERRUPTS();
        if (rows[i] == nullptr) elog(ERROR, "%s: sample row " INT64_FORMAT " was not kept", fn, i);
        // slot_getallattrs: columns added after the row was written read as
        // their missing value, as the table shows them
        ExecStoreHeapTuple(rows[i], from, false);
        slot_getallattrs(from);
        ExecClearTuple(to);
        for (int k = 0; k < natts; ++k) {
            to->tts_values[k] = from->tts_values[attnum[k] - 1];
            to->tts_isnull[k] = from->tts_isnull[attnum[k] - 1];
        }
        while (n_strata > 0 && g + 1 < n_strata && i >= strata[g].end) ++g;
        to->tts_values[natts] = Int32GetDatum(n_strata > 0 ? g + 1 : 1);
        to->tts_isnull[natts] = false;
        ExecStoreVirtualTuple(to);
        table_tuple_insert(srel, to, cid, 0, bis);
        ExecClearTuple(from);
    }
    FreeBulkInsertState(bis);
    table_finish_bulk_insert(srel, 0);
    ExecDropSingleTupleTableSlot(to);
    ExecDropSingleTupleTableSlot(from);
    table_close(srel, NoLock);
    // Statistics for the plans that join it (as its owner).
    as_table_owner(psprintf("ANALYZE approx_gpu_samples.%s", quote_identifier(name)), 0, nullptr, nullptr, nullptr,
                   nullptr, nullptr, 0);
    out.relid = sample;
    out.natts = natts;
    out.attnum = attnum;
    return out;
}

// The extension's membership first (as ALTER EXTENSION ... DROP does,
// commands/extension.c), since dependency.c refuses to drop a member alone;
// then the relation, as an internal deletion.
void drop_sample_relation(Oid sample, Oid relid) {
    if (!is_sample_relation(sample, relid)) return;
    deleteDependencyRecordsForSpecific(RelationRelationId, sample, DEPENDENCY_EXTENSION, ExtensionRelationId,
                                       get_extension_oid("approx_gpu", false));
    CommandCounterIncrement();
    ObjectAddress self = {RelationRelationId, sample, 0};
    performDeletion(&self, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
}

// approx_gpu.max_synopsis_rows_per_role (synopsis.cpp). A role's table
// synopses write sample relations owned by the extension's owner, outside
// any accounting of the role; on a table it does not own (a SELECT-only
// role, say) the sample rows of all such synopses of the role together are
// bounded. The table's owner (and roles with its privileges, superusers)
// are not: they may store what they like beside their own table.
int synopsis_max_rows_per_role = 10000000;

void check_role_sample_rows(Oid relid, const char* name, int64 adding, const char* fn) {
    const Oid role = GetUserId();
    if (synopsis_max_rows_per_role < 0 || pg_class_ownercheck(relid, role)) return;
    // The other synopses of the role on tables it does not own: their
    // sample relations' rows (analyzed at the build).
    Oid types[2] = {OIDOID, TEXTOID};
    Datum args[2] = {ObjectIdGetDatum(role), CStringGetTextDatum(name)};
    Datum held = Int64GetDatum(0);
    bool held_null = true;
    as_table_owner(approx_gpu_sql(
                       "SELECT pg_catalog.sum(GREATEST(c.reltuples, 0::pg_catalog.float4))::pg_catalog.int8 "
                       "FROM @extschema@.synopses s JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.sample_relid "
                       "JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) s.relation::pg_catalog.oid "
                       "WHERE s.owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.<>) $2 "
                       "AND NOT pg_catalog.pg_has_role($1, t.relowner, 'USAGE')"),
                   2, types, args, nullptr, &held, &held_null, 1, true);
    const int64 used = held_null ? 0 : DatumGetInt64(held);
    if (used + adding <= synopsis_max_rows_per_role) return;
    ereport(ERROR,
            (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
             errmsg("%s: role \"%s\" may keep at most %d sample rows in synopses of tables it does not own "
                    "(approx_gpu.max_synopsis_rows_per_role); its other synopses hold %" PRId64 " and this one %s %" PRId64,
                    fn, GetUserNameFromId(role, false), synopsis_max_rows_per_role, used,
                    adding > 1 ? "would add" : "needs at least", adding),
             errhint("Drop some of its synopses, build a smaller sample, or ask a superuser to raise the setting.")));
}

}  // namespace synopsis_glue

// The sql_drop event trigger's part: the sample relations whose table no
// longer exists (only those: a sample of a live table belongs to a row
// another transaction may be writing).
APPROX_FUNCTION(approx_gpu_synopses_drop_samples) {
    using namespace synopsis_glue;
    Oid nsp = samples_namespace();
    if (!OidIsValid(nsp)) PG_RETURN_VOID();
    Found f = {0, 0, nullptr, nullptr};
    Oid types[1] = {OIDOID};
    Datum args[1] = {ObjectIdGetDatum(nsp)};
    as_table_owner("SELECT c.oid, c.relname FROM pg_catalog.pg_class c "
                   "WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 AND c.relkind OPERATOR(pg_catalog.=) 'r'",
                   1, types, args, nullptr, nullptr, nullptr, 0, true, collect_sample, &f);
    for (int i = 0; i < f.n; ++i)
        if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(f.tables[i]))) drop_sample_relation(f.oids[i], f.tables[i]);
    PG_RETURN_VOID();
}
