// Table synopses: create_synopsis over a relation's columns,
// refresh of a bound synopsis as its owner, and synopsis_status. The build
// itself is in synopsis_build.cpp, the per-backend cache in synopsis_cache.cpp.
#include "synopsis/synopsis_catalog.h"
#include "synopsis/synopsis_table.h"
#include "runtime/jsonb_builder.h"

extern "C" {
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_type.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <cstring>

using namespace synopsis_glue;

namespace {

bool is_integer_type(Oid t) { return t == INT2OID || t == INT4OID || t == INT8OID; }

bool is_dictionary_type(Oid t) {
    ValueEncoding e;
    return column_encoding(t, &e) && e == ValueEncoding::Dictionary;
}

// The names of a name[] argument (no NULL elements, one dimension).
int name_array_arg(FunctionCallInfo fcinfo, int argno, const char* fn, const char* arg, char (*out)[NAMEDATALEN]) {
    ArrayType* a = PG_GETARG_ARRAYTYPE_P(argno);
    if (ARR_NDIM(a) > 1)
        ereport(ERROR,
                (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR), errmsg("%s: %s must be a one-dimensional array", fn, arg)));
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(a, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &nulls, &n);
    if (n > kMaxDim)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: %s names %d columns; at most %d are supported", fn, arg, n, kMaxDim)));
    for (int i = 0; i < n; ++i) {
        if (nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: %s must not contain NULL", fn, arg)));
        strlcpy(out[i], NameStr(*DatumGetName(elems[i])), NAMEDATALEN);
        for (int k = 0; k < i; ++k)
            if (strcmp(out[k], out[i]) == 0)
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
                                errmsg("%s: column \"%s\" appears twice in %s", fn, out[i], arg)));
    }
    return n;
}

// The 0.6.0 catalog columns of a build (synopsis_freshness.cpp): attnames,
// inserts_built, system_identifier, database_oid, stats_reset,
// cluster_stats_reset, label_hashes, built_stale -- 8 parameters from types[0].
constexpr int kFreshnessArgs = 8;
void freshness_args(const TableBuild* b, int d, Oid* types, Datum* args, char* nulls) {
    Datum names[kMaxDim];
    Datum hashes[kMaxDim];
    for (int j = 0; j < d; ++j) {
        names[j] = PointerGetDatum(b->attname[j]);
        hashes[j] = Int64GetDatum(b->label_hash[j]);
    }
    const Oid t[kFreshnessArgs] = {NAMEARRAYOID,   INT8OID,        INT8OID,      OIDOID,
                                   TIMESTAMPTZOID, TIMESTAMPTZOID, INT8ARRAYOID, TEXTOID};
    memcpy(types, t, sizeof t);
    args[0] = PointerGetDatum(construct_array(names, d, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR));
    args[1] = Int64GetDatum(b->inserts_built);
    args[2] = Int64GetDatum(static_cast<int64>(GetSystemIdentifier()));
    args[3] = ObjectIdGetDatum(MyDatabaseId);
    args[4] = TimestampTzGetDatum(b->stats_reset);
    args[5] = TimestampTzGetDatum(b->cluster_stats_reset);
    args[6] = PointerGetDatum(construct_array(hashes, d, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
    args[7] = b->built_stale ? CStringGetTextDatum(b->built_stale) : (Datum)0;
    memset(nulls, ' ', kFreshnessArgs);
    if (b->stats_reset == 0) nulls[4] = 'n';  // never reset (pg_stat_database shows NULL)
    if (b->cluster_stats_reset == 0) nulls[5] = 'n';
    if (b->built_stale == nullptr) nulls[7] = 'n';
}

// The 0.7.0 catalog columns of a build: sample_size, bandwidth, smoothing,
// sample_relid, sample_attnums, census -- 6 parameters from types[0].
constexpr int kStorageArgs = 6;
void storage_args(const TableBuild* b, int32 sample_size, int method, int smoothing, CensusMode census, Oid* types,
                  Datum* args, char* nulls) {
    const Oid t[kStorageArgs] = {INT4OID, TEXTOID, TEXTOID, OIDOID, INT2ARRAYOID, BOOLOID};
    memcpy(types, t, sizeof t);
    args[0] = Int32GetDatum(sample_size);
    args[1] = CStringGetTextDatum(kBandwidthNames[method]);
    args[2] = CStringGetTextDatum(kSmoothingNames[smoothing]);
    args[3] = ObjectIdGetDatum(b->sample_relid);
    args[4] = OidIsValid(b->sample_relid) ? PointerGetDatum(int2_array_of(b->sample_attnum, b->sample_natts)) : (Datum)0;
    args[5] = BoolGetDatum(census == CensusMode::On);
    memset(nulls, ' ', kStorageArgs);
    if (!OidIsValid(b->sample_relid)) nulls[3] = nulls[4] = 'n';
    if (census == CensusMode::Auto) nulls[5] = 'n';  // NULL: decided at each build
}

void require_freshness_columns(const char* fn) {
    if (!freshness_columns_available())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the extension's objects in this database are older than its library", fn),
                        errhint("Run ALTER EXTENSION approx_gpu UPDATE.")));
}

// Stratify attnums -> 0-based synopsis column indexes.
int stratify_indexes(const NamedRow& row, int* out) {
    for (int s = 0; s < row.n_stratify; ++s)
        for (int j = 0; j < row.d; ++j)
            if (row.attnums[j] == row.stratify[s]) out[s] = j;
    return row.n_stratify;
}

}  // namespace

namespace synopsis_glue {

// Rebuilds a table synopsis from its table as its owner (a
// security-restricted operation: nothing the scan runs -- type output
// functions -- acts with the caller's privileges), same columns and settings.
Datum refresh_bound(const NamedRow& row, text* name, const char* fn) {
    require_freshness_columns(fn);
    require_storage(fn);
    int32 k;
    int method, smoothing;
    build_params(row, fn, &k, &method, &smoothing);
    int stratify[kMaxDim];
    int ns = stratify_indexes(row, stratify);  // by the stored numbers
    // The same columns by name (a restore moves numbers; a rename updated the
    // name); a row from before 0.6.0 by number.
    AttrNumber attnums[kMaxDim];
    for (int j = 0; j < row.d; ++j) {
        attnums[j] = row.has_attnames ? get_attnum(row.relation, row.attnames[j]) : row.attnums[j];
        if (attnums[j] == InvalidAttrNumber)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("%s: column \"%s\" of table %s no longer exists", fn, row.attnames[j],
                                   quote_qualified_identifier(get_namespace_name(get_rel_namespace(row.relation)),
                                                              get_rel_name(row.relation))),
                            errhint("Drop the synopsis and create it on the columns you mean.")));
    }
    AttrNumber satt[kMaxDim];
    for (int s = 0; s < ns; ++s) satt[s] = attnums[stratify[s]];
    Oid save_userid;
    int save_sec;
    GetUserIdAndSecContext(&save_userid, &save_sec);
    SetUserIdAndSecContext(row.owner, save_sec | SECURITY_RESTRICTED_OPERATION);
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                            false);
    TableBuild* b = build_table_synopsis(row.relation, text_to_cstring(name), row.d, attnums, ns, stratify, k, method, smoothing, row.census,
                                         fn);
    AtEOXact_GUC(true, nest);
    SetUserIdAndSecContext(save_userid, save_sec);
    constexpr int kArgs = 12 + kFreshnessArgs + kStorageArgs;
    Oid types[kArgs] = {synopsis_type_oid(), OIDARRAYOID, OIDARRAYOID, INT8OID, INT8OID, INT8OID,
                        OIDOID, OIDOID, TEXTOID, TEXTOID, INT2ARRAYOID, INT2ARRAYOID};
    Datum args[kArgs] = {b->value,
                                       PointerGetDatum(oid_array_of(b->atttype, row.d)),
                                       PointerGetDatum(oid_array_of(b->collation, row.d)),
                                       Int64GetDatum(b->rows_built),
                                       Int64GetDatum(b->changes_built),
                                       Int64GetDatum(b->pending_inserts),
                                       ObjectIdGetDatum(b->relfilenode),
                                       ObjectIdGetDatum(row.owner),
                                       PointerGetDatum(name),
                                       CStringGetTextDatum(row.ctid),
                                       PointerGetDatum(int2_array_of(attnums, row.d)),
                                       ns > 0 ? PointerGetDatum(int2_array_of(satt, ns)) : (Datum)0};
    char nulls[kArgs + 1];
    memset(nulls, ' ', 12);
    nulls[kArgs] = '\0';
    if (ns == 0) nulls[11] = 'n';
    freshness_args(b, row.d, types + 12, args + 12, nulls + 12);
    storage_args(b, k, method, smoothing, row.census, types + 12 + kFreshnessArgs, args + 12 + kFreshnessArgs,
                 nulls + 12 + kFreshnessArgs);
    // The metadata, then the value (a restored row has none yet).
    int64 updated = as_table_owner(
        approx_gpu_sql("WITH m AS (UPDATE @extschema@.synopses SET created = pg_catalog.clock_timestamp(), "
                       "atttypes = $2::pg_catalog.regtype[], collations = $3, rows_built = $4, changes_built = $5, "
                       "pending_inserts = $6, relfilenode = $7, attnums = $11, stratify = $12, attnames = $13, "
                       "inserts_built = $14, system_identifier = $15, database_oid = $16, stats_reset = $17, "
                       "cluster_stats_reset = $18, label_hashes = $19, built_stale = $20, sample_size = $21, bandwidth = $22, "
                       "smoothing = $23, sample_relid = $24, sample_attnums = $25, census = $26 "
                       "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $8 AND name OPERATOR(pg_catalog.=) $9 "
                       "AND ctid OPERATOR(pg_catalog.=) $10::pg_catalog.tid RETURNING owner, name) "
                       "INSERT INTO @internal@.synopsis_values (owner, name, synopsis) SELECT owner, name, $1 FROM m "
                       "ON CONFLICT (owner, name) DO UPDATE SET synopsis = EXCLUDED.synopsis"),
        kArgs, types, args, nulls, nullptr, nullptr, 0);
    if (updated != 1)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: synopsis \"%s\" was dropped or replaced while it was rebuilt", fn,
                               text_to_cstring(name))));
    // The old sample relation goes in the same transaction (the new one
    // replaces it; a restored row's OID is checked before anything is dropped).
    if (OidIsValid(row.sample_relid) && row.sample_relid != b->sample_relid)
        drop_sample_relation(row.sample_relid, row.relation);
    CacheInvalidateRelcacheByRelid(row.relation);
    return info_jsonb(stored_value(DatumGetByteaPP(b->value)));
}

}  // namespace synopsis_glue

APPROX_FUNCTION(approx_gpu_create_table_synopsis) {
    const char* fn = "create_synopsis";
    static const char* const kArgs[] = {"name", "relation", "columns", "sample_size", "bandwidth", "smoothing"};
    for (int a = 0; a < 6; ++a)  // stratify (6) and census (7) may be NULL
        if (PG_ARGISNULL(a))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: %s must not be NULL", fn, kArgs[a])));
    // census: NULL (the default) decides per measure (census_pays); the
    // 0.6.0 signature has no census and builds none, as 0.6.0 did.
    const CensusMode census = PG_NARGS() <= 7 ? CensusMode::Off
                              : PG_ARGISNULL(7) ? CensusMode::Auto
                              : PG_GETARG_BOOL(7) ? CensusMode::On
                                                  : CensusMode::Off;
    text* name = PG_GETARG_TEXT_PP(0);
    check_name(name, fn);
    Oid relid = PG_GETARG_OID(1);
    int32 k = sample_size_arg(fcinfo, 3, fn);
    int method = bandwidth_arg(fcinfo, 4, fn);
    int smoothing = smoothing_arg(fcinfo, 5, fn);
    require_current_table(fn);
    require_freshness_columns(fn);
    require_storage(fn);
    if (!table_synopses_available())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the extension's objects in this database are older than its library", fn),
                        errhint("Run ALTER EXTENSION approx_gpu UPDATE.")));
    // Lock first, then resolve: a table dropped (or a column changed) while
    // this call waited for the lock is seen here, not mid-build.
    Relation locked = open_synopsis_table(relid, fn);
    char* relname = pstrdup(RelationGetRelationName(locked));
    relation_close(locked, NoLock);

    char names[kMaxDim][NAMEDATALEN];
    int d = name_array_arg(fcinfo, 2, fn, "columns", names);
    if (d < 1)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: columns must name at least one column", fn)));
    AttrNumber attnums[kMaxDim];
    for (int j = 0; j < d; ++j) {
        attnums[j] = get_attnum(relid, names[j]);
        if (attnums[j] == InvalidAttrNumber || attnums[j] < 0)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("%s: column \"%s\" of relation \"%s\" does not exist", fn, names[j], relname)));
    }
    int stratify[kMaxDim];
    int ns = 0;
    if (!PG_ARGISNULL(6)) {
        char snames[kMaxDim][NAMEDATALEN];
        ns = name_array_arg(fcinfo, 6, fn, "stratify", snames);
        for (int s = 0; s < ns; ++s) {
            int j = 0;
            while (j < d && strcmp(names[j], snames[s]) != 0) ++j;
            if (j == d)
                ereport(ERROR,
                        (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                         errmsg("%s: stratify column \"%s\" is not one of the synopsis columns", fn, snames[s])));
            Oid t = get_atttype(relid, attnums[j]);
            if (!is_integer_type(t) && !is_dictionary_type(t))
                ereport(
                    ERROR,
                    (errcode(ERRCODE_DATATYPE_MISMATCH),
                     errmsg("%s: stratify column \"%s\" must be an integer, bool, text, varchar, char or enum column, "
                            "not %s",
                            fn, snames[s], format_type_be(t))));
            stratify[s] = j;
        }
    }
    Oid owner = GetUserId();
    refuse_taken_name(name, owner, fn);
    TableBuild* b = build_table_synopsis(relid, text_to_cstring(name), d, attnums, ns, stratify, k, method, smoothing, census, fn);
    AttrNumber satt[kMaxDim];
    for (int s = 0; s < ns; ++s) satt[s] = attnums[stratify[s]];
    constexpr int kRowArgs = 12 + kFreshnessArgs + kStorageArgs;
    Oid types[kRowArgs] = {TEXTOID,     OIDOID,      synopsis_type_oid(), OIDOID,  INT2ARRAYOID,
                        OIDARRAYOID, OIDARRAYOID, INT2ARRAYOID,        INT8OID, INT8OID,
                        INT8OID,     OIDOID};
    Datum args[kRowArgs] = {PointerGetDatum(name),
                      ObjectIdGetDatum(owner),
                      b->value,
                      ObjectIdGetDatum(relid),
                      PointerGetDatum(int2_array_of(attnums, d)),
                      PointerGetDatum(oid_array_of(b->atttype, d)),
                      PointerGetDatum(oid_array_of(b->collation, d)),
                      ns > 0 ? PointerGetDatum(int2_array_of(satt, ns)) : (Datum)0,
                      Int64GetDatum(b->rows_built),
                      Int64GetDatum(b->changes_built),
                      Int64GetDatum(b->pending_inserts),
                      ObjectIdGetDatum(b->relfilenode)};
    char arg_nulls[kRowArgs + 1];
    memset(arg_nulls, ' ', 12);
    arg_nulls[kRowArgs] = '\0';
    if (ns == 0) arg_nulls[7] = 'n';
    freshness_args(b, d, types + 12, args + 12, arg_nulls + 12);
    storage_args(b, k, method, smoothing, census, types + 12 + kFreshnessArgs, args + 12 + kFreshnessArgs,
                 arg_nulls + 12 + kFreshnessArgs);
    // The metadata, then the value (synopsis_values, 0.7.0).
    if (as_table_owner(
            approx_gpu_sql("WITH m AS (INSERT INTO @extschema@.synopses (name, owner, created, relation, attnums, atttypes, "
                           "collations, stratify, rows_built, changes_built, pending_inserts, relfilenode, attnames, inserts_built, "
                           "system_identifier, database_oid, stats_reset, cluster_stats_reset, label_hashes, built_stale, "
                           "sample_size, bandwidth, smoothing, sample_relid, sample_attnums, census) "
                           "VALUES ($1, $2::pg_catalog.regrole, pg_catalog.clock_timestamp(), $4::pg_catalog.regclass, $5, "
                           "$6::pg_catalog.regtype[], $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
                           "$21, $22, $23, $24, $25, $26) ON CONFLICT (owner, name) DO NOTHING RETURNING owner, name) "
                           "INSERT INTO @internal@.synopsis_values (owner, name, synopsis) SELECT owner, name, $3 FROM m"),
            kRowArgs, types, args, arg_nulls, nullptr, nullptr, 0) == 0)
        name_taken(name, fn);
    owner_grant(owner, true);
    CacheInvalidateRelcacheByRelid(relid);
    return info_jsonb(stored_value(DatumGetByteaPP(b->value)));
}

APPROX_FUNCTION(approx_gpu_synopsis_status) {
    const char* fn = "synopsis_status";
    text* name = PG_GETARG_TEXT_PP(0);
    NamedRow row = resolve_named(name, fn, false, false, false);
    JsonbBuilder j;
    j.begin_object();
    j.add_string("name", text_to_cstring(name));
    j.add_string("owner", GetUserNameFromId(row.owner, false));
    if (!OidIsValid(row.relation)) {
        j.add_string("status", "query");
        j.add_string("reason", "a query-text synopsis is not bound to a table; refresh it to follow its data");
        j.end_object();
        return JsonbPGetDatum(j.finish());
    }
    j.add_string("relation", DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(row.relation))));
    const TableSynopsis* const* all = nullptr;
    int n = table_synopses(row.relation, &all);
    const TableSynopsis* ts = nullptr;
    for (int i = 0; i < n; ++i)
        if (all[i]->owner == row.owner && strcmp(all[i]->name, text_to_cstring(name)) == 0) ts = all[i];
    if (ts == nullptr) elog(ERROR, "%s: synopsis \"%s\" is not in the cache of its table", fn, text_to_cstring(name));
    j.begin_array("columns");
    for (int c = 0; c < ts->d; ++c) {
        char* att = get_attname(ts->relid, ts->attnum[c], true);
        if (att)
            j.add_string(nullptr, att);
        else
            j.add_null(nullptr);
    }
    j.end_array();
    j.add_int("strata", ts->model.n_strata);
    j.add_int("rows_built", ts->rows_built);
    j.add_int("changes_built", ts->changes_built);
    j.add_int("pending_inserts", ts->pending_inserts);
    const char* reason = ts->unusable ? ts->unusable : table_synopsis_staleness(ts);
    j.add_string("status", ts->unusable ? "unusable" : reason ? "stale" : "fresh");
    if (reason)
        j.add_string("reason", reason);
    else
        j.add_null("reason");
    j.end_object();
    return JsonbPGetDatum(j.finish());
}
