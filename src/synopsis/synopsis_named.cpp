// Named synopses of a query's rows: building one as its owner (a reservoir
// fed by a DestReceiver), create / refresh / drop_synopsis (the
// JSON-predicate estimates: synopsis_predicate.cpp).
#include "synopsis/synopsis.h"
#include "readers/query_reader.h"
#include "synopsis/synopsis_catalog.h"
#include "synopsis/synopsis_table.h"

extern "C" {
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "tcop/dest.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
}

#include <cmath>

using namespace synopsis_glue;

namespace {

// ---- named synopses -------------------------------------------------------------------------------

// Reads the rows of a query straight into a reservoir (DestReceiver), the
// query's columns becoming the dimensions by name.
struct SampleReceiver {
    const char* fn;
    SynAgg* st;
    MemoryContext mcxt;
    Oid types[kMaxDim];
    double progress_s;
    double last_progress;
    int64 rows_read;
};

double float_of(Datum d, Oid t) {
    switch (t) {
        case FLOAT8OID: return DatumGetFloat8(d);
        case FLOAT4OID: return DatumGetFloat4(d);
        case INT8OID: return static_cast<double>(DatumGetInt64(d));
        case INT4OID: return DatumGetInt32(d);
        case INT2OID: return DatumGetInt16(d);
        default: return DatumGetFloat8(DirectFunctionCall1(numeric_float8, d));
    }
}

void sample_startup(void* self, TupleDesc desc) {
    SampleReceiver* r = static_cast<SampleReceiver*>(self);
    if (desc->natts < 1 || desc->natts > kMaxDim)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("%s: query must return between 1 and %d columns, not %d", r->fn, kMaxDim, desc->natts)));
    SynAgg* st = r->st;
    for (int j = 0; j < desc->natts; ++j) {
        Form_pg_attribute att = TupleDescAttr(desc, j);
        Oid t = att->atttypid;
        if (t != FLOAT8OID && t != FLOAT4OID && t != INT2OID && t != INT4OID && t != INT8OID && t != NUMERICOID)
            ereport(ERROR,
                    (errcode(ERRCODE_DATATYPE_MISMATCH),
                     errmsg("%s: column \"%s\" of query must be float8, float4, int2, int4, int8 or numeric, not %s",
                            r->fn, NameStr(att->attname), format_type_be(t))));
        r->types[j] = t;
        for (int i = 0; i < j; ++i)
            if (strcmp(st->names[i], NameStr(att->attname)) == 0)
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
                                errmsg("%s: query returns two columns named \"%s\"", r->fn, NameStr(att->attname))));
        strlcpy(st->names[j], NameStr(att->attname), NAMEDATALEN);
    }
    st->has_names = true;
    set_dim(st, desc->natts, st->res.capacity, r->fn);
}

void sample_slot(void* self, TupleTableSlot* slot) {
    SampleReceiver* r = static_cast<SampleReceiver*>(self);
    SynAgg* st = r->st;
    slot_getsomeattrs(slot, st->d);
    double row[kMaxDim];
    for (int j = 0; j < st->d; ++j) {
        if (slot->tts_isnull[j]) {
            ++st->skipped;
            return;
        }
        row[j] = float_of(slot->tts_values[j], r->types[j]);
        if (!std::isfinite(row[j]))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: column \"%s\" of query contains %s", r->fn, st->names[j],
                                   std::isnan(row[j]) ? "NaN" : "an infinite value")));
    }
    add_sample(st, r->mcxt, row);
    if (r->progress_s > 0 && (++r->rows_read & 4095) == 0) {
        double now = glue_clock_ms();
        if (now - r->last_progress >= r->progress_s * 1000) {
            r->last_progress = now;
            ereport(NOTICE, (errmsg("%s: " INT64_FORMAT " rows read, " INT64_FORMAT " sampled", r->fn, st->res.seen,
                                    st->res.size)));
        }
    }
}

double progress_interval_s(void) {
    const char* s = GetConfigOption("approx_gpu.progress_interval", true, false);
    return s ? strtod(s, nullptr) : 0;
}

// The caller's effective search_path, fixed for a stored query: the schemas
// current_schemas(true) reports (implicit pg_catalog included) as a quoted
// list, temporary schemas left out (they belong to one session) and pg_temp
// last, so that nobody's temporary objects come before the owner's.
char* captured_search_path(void) {
    List* path = fetch_search_path(true);
    StringInfoData out;
    initStringInfo(&out);
    ListCell* lc;
    foreach (lc, path) {
        Oid nsp = lfirst_oid(lc);
        if (isAnyTempNamespace(nsp)) continue;
        char* nspname = get_namespace_name(nsp);
        if (nspname != nullptr) appendStringInfo(&out, "%s, ", quote_identifier(nspname));
    }
    appendStringInfoString(&out, "pg_temp");
    list_free(path);
    return out.data;
}

// Runs query as `owner` in a security-restricted operation (as REFRESH
// MATERIALIZED VIEW does) with search_path = search_path (the path stored
// with it: the query's names resolve the same whoever runs it) and builds the
// synopsis of its rows.
Datum build_named(const char* query, Oid owner, const char* search_path, int32 sample_size, int method, int smoothing,
                  const char* fn) {
    if (!role_exists(owner))  // never run a query as a dropped role's OID
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the owner of the synopsis no longer exists", fn)));
    SynAgg* st = new_state(CurrentMemoryContext);
    st->method = method;
    st->smoothing = smoothing;
    syn::reservoir_init(st->res, sample_size, random_seed_for_call());
    st->params_set = true;

    SampleReceiver* r = static_cast<SampleReceiver*>(palloc0(sizeof(SampleReceiver)));
    r->fn = fn;
    r->st = st;
    r->mcxt = CurrentMemoryContext;
    r->progress_s = progress_interval_s();
    r->last_progress = glue_clock_ms();

    Oid save_userid;
    int save_sec;
    GetUserIdAndSecContext(&save_userid, &save_sec);
    SetUserIdAndSecContext(owner, save_sec | SECURITY_RESTRICTED_OPERATION);
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    double t0 = glue_clock_ms();
    RowSink sink = {sample_startup, sample_slot, r};
    run_inner_query(fn, "query", query, sink);
    AtEOXact_GUC(true, nest);
    SetUserIdAndSecContext(save_userid, save_sec);
    double ms_read = glue_clock_ms() - t0;
    if (r->progress_s > 0)
        ereport(NOTICE, (errmsg("%s: " INT64_FORMAT " rows read, " INT64_FORMAT " skipped; computing bandwidths", fn,
                                st->res.seen, st->skipped)));
    if (st->res.seen == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: query returned no rows without NULLs; a synopsis needs at least one", fn)));
    Datum result = state_final(st, fn);
    last_run_stats().ms_read = ms_read;
    return result;
}

}  // namespace

// ---- named synopses ---------------------------------------------------------------------------------

APPROX_FUNCTION(approx_gpu_create_synopsis) {
    const char* fn = "create_synopsis";
    for (int a = 0; a < 5; ++a)
        if (PG_ARGISNULL(a))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s: arguments must not be NULL", fn)));
    text* name = PG_GETARG_TEXT_PP(0);
    check_name(name, fn);
    char* query = text_to_cstring(PG_GETARG_TEXT_PP(1));
    int32 k = sample_size_arg(fcinfo, 2, fn);
    int method = bandwidth_arg(fcinfo, 3, fn);
    int smoothing = smoothing_arg(fcinfo, 4, fn);
    require_current_table(fn);
    require_storage(fn);
    Oid owner = GetUserId();
    refuse_taken_name(name, owner, fn);
    // The query runs, now and on every refresh, with the caller's effective
    // search_path of this moment.
    char* path = captured_search_path();
    Datum syn_datum = build_named(query, owner, path, k, method, smoothing, fn);
    Oid types[8] = {TEXTOID, OIDOID, TEXTOID, synopsis_type_oid(), TEXTOID, INT4OID, TEXTOID, TEXTOID};
    Datum args[8] = {PointerGetDatum(name),     ObjectIdGetDatum(owner),
                     PointerGetDatum(PG_GETARG_TEXT_PP(1)), syn_datum,
                     CStringGetTextDatum(path), Int32GetDatum(k),
                     CStringGetTextDatum(kBandwidthNames[method]), CStringGetTextDatum(kSmoothingNames[smoothing])};
    // Checked again at the insert: a concurrent create of the same name (or
    // one run by the query itself) commits first; the key then holds. The
    // metadata, then the value (synopsis_values, 0.7.0).
    if (as_table_owner(approx_gpu_sql("WITH m AS (INSERT INTO @extschema@.synopses (name, owner, query, created, search_path, "
                                      "sample_size, bandwidth, smoothing) "
                                      "VALUES ($1, $2::pg_catalog.regrole, $3, pg_catalog.clock_timestamp(), $5, $6, $7, $8) "
                                      "ON CONFLICT (owner, name) DO NOTHING RETURNING owner, name) "
                                      "INSERT INTO @internal@.synopsis_values (owner, name, synopsis) SELECT owner, name, $4 FROM m"),
                       8, types, args, nullptr, nullptr, nullptr, 0) == 0)
        name_taken(name, fn);
    owner_grant(owner, true);
    return info_jsonb(stored_value(DatumGetByteaPP(syn_datum)));
}

APPROX_FUNCTION(approx_gpu_refresh_synopsis) {
    const char* fn = "refresh_synopsis";
    text* name = PG_GETARG_TEXT_PP(0);
    require_current_table(fn);
    // The table first, then the catalog row (as DROP TABLE and its event
    // trigger do): the other order deadlocks with a concurrent DROP.
    NamedRow peek = resolve_named(name, fn, false, false, false);
    if (OidIsValid(peek.relation)) relation_close(open_synopsis_table(peek.relation, fn), NoLock);
    NamedRow row = resolve_named(name, fn, true, true, false);
    if (OidIsValid(row.relation)) return refresh_bound(row, name, fn);
    char* path = row.search_path;
    if (path == nullptr) {
        // Stored by 0.1.0, which kept no search_path: guessing one could
        // resolve the query's names to other roles' objects. The owner itself
        // (nobody else) refreshes it once with its own effective path.
        if (GetUserId() != row.owner)
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("%s: synopsis \"%s\" was stored without its search_path; only its owner can refresh it", fn,
                            text_to_cstring(name)),
                     errhint("Refresh it once as its owner (SET ROLE); the owner's search_path is then kept.")));
        path = captured_search_path();
    }
    // The settings it was built with drive the rebuild (the metadata's, else
    // the old value's).
    require_storage(fn);
    int32 k;
    int method, smoothing;
    build_params(row, fn, &k, &method, &smoothing);
    Datum syn_datum = build_named(text_to_cstring(row.query), row.owner, path, k, method, smoothing, fn);
    // The stored query ran user SQL: it may have dropped or re-created this
    // synopsis. Update exactly the row version read before it, or nothing;
    // then its value (a restored row has none yet).
    Oid types[8] = {synopsis_type_oid(), TEXTOID, OIDOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID};
    Datum args[8] = {syn_datum,
                     PointerGetDatum(name),
                     ObjectIdGetDatum(row.owner),
                     CStringGetTextDatum(path),
                     CStringGetTextDatum(row.ctid),
                     Int32GetDatum(k),
                     CStringGetTextDatum(kBandwidthNames[method]),
                     CStringGetTextDatum(kSmoothingNames[smoothing])};
    int64 updated = as_table_owner(
        approx_gpu_sql("WITH m AS (UPDATE @extschema@.synopses SET created = pg_catalog.clock_timestamp(), search_path = $4, "
                       "sample_size = $6, bandwidth = $7, smoothing = $8 "
                       "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $3 AND name OPERATOR(pg_catalog.=) $2 "
                       "AND ctid OPERATOR(pg_catalog.=) $5::pg_catalog.tid RETURNING owner, name) "
                       "INSERT INTO @internal@.synopsis_values (owner, name, synopsis) SELECT owner, name, $1 FROM m "
                       "ON CONFLICT (owner, name) DO UPDATE SET synopsis = EXCLUDED.synopsis"),
        8, types, args, nullptr, nullptr, nullptr, 0);
    if (updated != 1)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("%s: synopsis \"%s\" was dropped or replaced while its query ran", fn, text_to_cstring(name))));
    owner_grant(row.owner, true);  // a row kept from 0.1.0 gets it here
    return info_jsonb(stored_value(DatumGetByteaPP(syn_datum)));
}

APPROX_FUNCTION(approx_gpu_drop_synopsis) {
    const char* fn = "drop_synopsis";
    text* name = PG_GETARG_TEXT_PP(0);
    // drop_synopsis(name, owner): a table's owner names another role's
    // synopsis of its table (several roles may use one name).
    Oid only_owner = PG_NARGS() > 1 ? PG_GETARG_OID(1) : InvalidOid;
    if (PG_NARGS() > 1 && !OidIsValid(only_owner))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: argument owner must name a role", fn)));
    NamedRow row = resolve_named(name, fn, true, false, true, only_owner);
    Oid types[2] = {TEXTOID, OIDOID};
    Datum args[2] = {PointerGetDatum(name), ObjectIdGetDatum(row.owner)};
    as_table_owner(
        approx_gpu_sql("DELETE FROM @extschema@.synopses WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 "
                       "AND name OPERATOR(pg_catalog.=) $1"),
        2, types, args, nullptr, nullptr, nullptr, 0);
    // Its value goes with the row (a foreign key, ON DELETE CASCADE), its
    // sample relation here.
    if (OidIsValid(row.sample_relid)) drop_sample_relation(row.sample_relid, row.relation);
    owner_grant(row.owner, false);
    // Plans over the table that may have used it are replanned.
    if (OidIsValid(row.relation) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(row.relation)))
        CacheInvalidateRelcacheByRelid(row.relation);
    PG_RETURN_VOID();
}
