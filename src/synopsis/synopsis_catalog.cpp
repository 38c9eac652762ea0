// The catalog of named synopses (approx_gpu.synopses): statements on it as
// its owner, the owner and row-level-security rules, and finding a synopsis
// by name (synopsis_catalog.h). The SQL functions of query-text synopses are
// in synopsis_named.cpp, those of table synopses in synopsis_table_sql.cpp.
#include "synopsis/synopsis.h"
#include "synopsis/synopsis_catalog.h"
#include "synopsis/synopsis_table.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

#include <algorithm>
#include <cmath>

namespace synopsis_glue {

Oid synopses_relid(void) {
    Oid relid = get_relname_relid("synopses", approx_gpu_schema_oid(false));
    if (!OidIsValid(relid))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("the extension's table synopses does not exist")));
    return relid;
}

Oid relation_owner(Oid relid) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tup)) return InvalidOid;
    Oid owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return owner;
}

Oid synopses_owner(void) {
    Oid owner = relation_owner(synopses_relid());
    if (!OidIsValid(owner)) elog(ERROR, "cache lookup failed for approx_gpu.synopses");
    return owner;
}

// Runs one fixed statement on approx_gpu.synopses as the table's owner with
// search_path = pg_catalog, pg_temp (what a SECURITY DEFINER function with a
// fixed search_path does; the caller itself cannot write the table).
// Returns SPI_processed; the first row's columns (if any) go to values/nulls.
int64 as_table_owner(const char* sql, int nargs, Oid* types, Datum* args, const char* arg_nulls, Datum* values,
                     bool* nulls, int ncols, bool read_only, void (*each)(void*, HeapTuple, TupleDesc),
                     void* each_ctx) {
    Oid save_userid;
    int save_sec;
    GetUserIdAndSecContext(&save_userid, &save_sec);
    Oid owner = synopses_owner();
    SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE);
    int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                            false);
    // A synopsis value is up to 1 GB of doubles: pglz compresses it at a few
    // MB/s (minutes for a 10^7-row sample), lz4 at hundreds. Where the server
    // was built without lz4 the setting is refused (DEBUG1) and pglz stays.
    (void)set_config_option("default_toast_compression", "lz4", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                            DEBUG1, false);
    MemoryContext caller = CurrentMemoryContext;
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    int rc = SPI_execute_with_args(sql, nargs, types, args, arg_nulls, read_only, 0);
    if (rc < 0) elog(ERROR, "statement on approx_gpu.synopses failed: %s", SPI_result_code_string(rc));
    int64 processed = static_cast<int64>(SPI_processed);
    if (each && SPI_tuptable != nullptr) {
        MemoryContext old = MemoryContextSwitchTo(caller);
        for (uint64 i = 0; i < SPI_processed; ++i) each(each_ctx, SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
        MemoryContextSwitchTo(old);
    }
    if (processed > 0 && SPI_tuptable != nullptr && ncols > 0) {
        HeapTuple tup = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        for (int c = 0; c < ncols; ++c) {
            bool isnull;
            Datum d = SPI_getbinval(tup, desc, c + 1, &isnull);
            nulls[c] = isnull;
            if (!isnull) {
                Form_pg_attribute att = TupleDescAttr(desc, c);
                MemoryContext old = MemoryContextSwitchTo(caller);
                values[c] = datumCopy(d, att->attbyval, att->attlen);
                MemoryContextSwitchTo(old);
            }
        }
    }
    SPI_finish();
    AtEOXact_GUC(true, nest);
    SetUserIdAndSecContext(save_userid, save_sec);
    return processed;
}

bool table_synopses_available(void) { return get_attnum(synopses_relid(), "relation") != InvalidAttrNumber; }

bool freshness_columns_available(void) { return get_attnum(synopses_relid(), "attnames") != InvalidAttrNumber; }

bool storage_columns_available(void) { return get_attnum(synopses_relid(), "sample_relid") != InvalidAttrNumber; }

void require_storage(const char* fn) {
    if (!storage_columns_available())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the extension's objects in this database are older than its library", fn),
                        errhint("Run ALTER EXTENSION approx_gpu UPDATE.")));
}

// The index of name in names (-1: none).
static int choice_index(const char* name, const char* const* names, int n) {
    for (int i = 0; i < n; ++i)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

void build_params(const NamedRow& row, const char* fn, int32* sample_size, int* method, int* smoothing) {
    if (row.has_params) {
        *sample_size = row.sample_size;
        *method = row.method;
        *smoothing = row.smoothing;
        return;
    }
    if (row.synopsis == nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the synopsis has neither a value nor its build parameters", fn),
                        errhint("Drop it and create it again.")));
    SynValue* old = stored_value(row.synopsis);
    *sample_size = static_cast<int32>(std::min<int64>(old->s.sample_size, INT32_MAX));
    *method = static_cast<int>(old->s.method);
    *smoothing = static_cast<int>(old->s.smoothing);
}

bool role_exists(Oid role) { return SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)); }

// ---- shared with synopsis_named.cpp and synopsis_table_sql.cpp (synopsis_catalog.h) ----------

Oid synopsis_type_oid(void) {
    return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("kde_synopsis"),
                           ObjectIdGetDatum(approx_gpu_schema_oid(false)));
}

void check_name(text* name, const char* fn) {
    int len = VARSIZE_ANY_EXHDR(name);
    if (len < 1 || len > 200)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: name must have between 1 and 200 characters", fn)));
}

// 0.2.0 added synopses.search_path and the key (owner, name). A database
// whose extension objects are still 0.1.0 (this library, before ALTER
// EXTENSION UPDATE) reads and drops its synopses but builds none: a query
// without a pinned search_path is never run.
bool table_is_current(void) { return get_attnum(synopses_relid(), "search_path") != InvalidAttrNumber; }

void require_current_table(const char* fn) {
    if (!table_is_current())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the extension's objects in this database are older than its library", fn),
                        errhint("Run ALTER EXTENSION approx_gpu UPDATE.")));
}

// DROP ROLE refuses a role that owns synopses: each owner holds SELECT on
// approx_gpu.synopses (adding nothing to PUBLIC's SELECT), a privilege that
// PostgreSQL records in pg_shdepend, so DROP ROLE reports "privileges for
// table approx_gpu.synopses" until the role's last synopsis is dropped (or
// DROP OWNED revokes it: then the rows are orphans, never run nor read).
// Granted with a role's first synopsis (and at a refresh, for rows kept from
// 0.1.0), revoked with its last, under a self-conflicting lock (SHARE UPDATE
// EXCLUSIVE: readers and writers of rows are not blocked) so that concurrent
// creates and drops agree. The table's owner already holds every privilege
// and is left alone.
void owner_grant(Oid owner, bool grant) {
    if (owner == synopses_owner() || !role_exists(owner)) return;
    as_table_owner(approx_gpu_sql("LOCK TABLE @extschema@.synopses IN SHARE UPDATE EXCLUSIVE MODE"), 0, nullptr,
                   nullptr, nullptr, nullptr, nullptr, 0);
    Oid types[1] = {OIDOID};
    Datum args[1] = {ObjectIdGetDatum(owner)};
    bool has = as_table_owner(
                   approx_gpu_sql("SELECT 1 FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a "
                                  "WHERE c.oid OPERATOR(pg_catalog.=) '@extschema@.synopses'::pg_catalog.regclass "
                                  "AND a.grantee OPERATOR(pg_catalog.=) $1 "
                                  "AND a.privilege_type OPERATOR(pg_catalog.=) 'SELECT'"),
                   1, types, args, nullptr, nullptr, nullptr, 0) > 0;
    if (!grant &&
        as_table_owner(
            approx_gpu_sql("SELECT 1 FROM @extschema@.synopses WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1"),
            1, types, args, nullptr, nullptr, nullptr, 0) > 0)
        return;  // it still owns synopses
    if (has == grant) return;
    const char* role = quote_identifier(GetUserNameFromId(owner, false));
    as_table_owner(psprintf("%s %s",
                            approx_gpu_sql(grant ? "GRANT SELECT ON @extschema@.synopses TO"
                                                 : "REVOKE SELECT ON @extschema@.synopses FROM"),
                            role),
                   0, nullptr, nullptr, nullptr, nullptr, nullptr, 0);
}

// The elements of a stored int2[] (at most kMaxDim, never NULL: written by this file).
int int2_array(ArrayType* a, AttrNumber* out) {
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(a, INT2OID, 2, true, TYPALIGN_SHORT, &elems, &nulls, &n);
    if (n > kMaxDim) elog(ERROR, "approx_gpu.synopses holds more than %d columns", kMaxDim);
    for (int i = 0; i < n; ++i) out[i] = nulls[i] ? InvalidAttrNumber : DatumGetInt16(elems[i]);
    return n;
}

ArrayType* int2_array_of(const AttrNumber* v, int n) {
    Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * std::max(1, n)));
    for (int i = 0; i < n; ++i) elems[i] = Int16GetDatum(v[i]);
    return construct_array(elems, n, INT2OID, 2, true, TYPALIGN_SHORT);
}

ArrayType* oid_array_of(const Oid* v, int n) {
    Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * std::max(1, n)));
    for (int i = 0; i < n; ++i) elems[i] = ObjectIdGetDatum(v[i]);
    return construct_array(elems, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

// The rows `role` ($2) may see: the policy of approx_gpu.synopses, which
// lets a table's owner (and roles with its privileges) see every synopsis of
// its table (synopsis_binding.cpp, table_synopsis_visible, is the same rule).
static const char* visible_sql(void) {
    return table_synopses_available()
               ? "(pg_catalog.pg_has_role($2, owner::pg_catalog.oid, 'USAGE') OR "
                 "pg_catalog.pg_has_role($2, (SELECT c.relowner FROM pg_catalog.pg_class c "
                 "WHERE c.oid OPERATOR(pg_catalog.=) relation::pg_catalog.oid), 'USAGE'))"
               : "pg_catalog.pg_has_role($2, owner::pg_catalog.oid, 'USAGE')";
}

// How near a visible row is to the caller: 0 its own, 1 a role whose
// privileges it has, 2 seen as the owner of its table only.
static void collect_tier(void* ctx, HeapTuple tup, TupleDesc desc) {
    int* tiers = static_cast<int*>(ctx);
    bool isnull;
    tiers[tiers[0] < 2 ? ++tiers[0] : 2] = DatumGetInt32(SPI_getbinval(tup, desc, 10, &isnull));
}

// Finds the synopsis `name` among the rows the caller may see -- its own,
// those of roles whose privileges it has, and, for the owner of a table,
// every synopsis of that table (the table's row-level security policy;
// not when the value is wanted) -- the nearest first; two equally near rows
// are ambiguous. only_owner (if valid) picks the owner. A row the caller may
// not see gives exactly the error of a missing one. A visible row of a
// dropped role (only a superuser sees those) may only be dropped (drop =
// true). lock: FOR UPDATE.
NamedRow resolve_named(text* name, const char* fn, bool lock, bool want_synopsis, bool drop, Oid only_owner) {
    Oid caller = GetUserId();
    Oid types[3] = {TEXTOID, OIDOID, OIDOID};
    Datum args[3] = {PointerGetDatum(name), ObjectIdGetDatum(caller), ObjectIdGetDatum(only_owner)};
    Datum values[16];
    bool nulls[16];
    const bool storage = storage_columns_available();
    const bool census = storage && get_attnum(synopses_relid(), "census") != InvalidAttrNumber;
    const char* sql = psprintf(
        "SELECT owner::pg_catalog.oid, query, %s, %s, ctid::pg_catalog.text, %s, %s, "
        "CASE WHEN owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 THEN 0 "
        "WHEN pg_catalog.pg_has_role($2, owner::pg_catalog.oid, 'USAGE') THEN 1 ELSE 2 END AS tier, %s, %s "
        "FROM @extschema@.synopses s WHERE name OPERATOR(pg_catalog.=) $1 AND %s "
        "AND ($3 OPERATOR(pg_catalog.=) 0 OR owner::pg_catalog.oid OPERATOR(pg_catalog.=) $3) "
        "ORDER BY tier LIMIT 2%s",
        table_is_current() ? "search_path" : "NULL::pg_catalog.text",
        // 0.7.0: the value apart (a restored row has none)
        !want_synopsis ? "NULL::@extschema@.kde_synopsis"
        : storage      ? "(SELECT v.synopsis FROM @internal@.synopsis_values v "
                         "WHERE v.owner::pg_catalog.oid OPERATOR(pg_catalog.=) s.owner::pg_catalog.oid "
                         "AND v.name OPERATOR(pg_catalog.=) s.name)"
                       : "synopsis",
        table_synopses_available() ? "relation::pg_catalog.oid, attnums, stratify"
                                   : "NULL::pg_catalog.oid, NULL::pg_catalog.int2[], NULL::pg_catalog.int2[]",
        freshness_columns_available() ? "attnames" : "NULL::pg_catalog.name[]",
        storage ? "sample_size, bandwidth, smoothing, sample_relid, EXISTS (SELECT FROM @internal@.synopsis_values v "
                  "WHERE v.owner::pg_catalog.oid OPERATOR(pg_catalog.=) s.owner::pg_catalog.oid "
                  "AND v.name OPERATOR(pg_catalog.=) s.name)"
                : "NULL::pg_catalog.int4, NULL::pg_catalog.text, NULL::pg_catalog.text, NULL::pg_catalog.oid, false",
        census ? "census" : "false",
        // Reading the value (estimates, refresh) stays with the owner's
        // privileges: the table's owner lists, inspects and drops another
        // role's synopsis of its table, but never answers from it.
        want_synopsis ? "pg_catalog.pg_has_role($2, owner::pg_catalog.oid, 'USAGE')" : visible_sql(),
        lock ? " FOR UPDATE" : "");
    int tiers[3] = {0, -1, -1};  // count, then the rows' tiers
    // (every piece of sql is fixed text of this file)
    int64 n =
        as_table_owner(approx_gpu_sql(sql), 3, types, args, nullptr, values, nulls, 16, !lock, collect_tier, tiers);
    if (n == 0)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("%s: synopsis \"%s\" does not exist", fn, text_to_cstring(name)),
                        errhint("Named synopses are visible to their owner (and roles with the owner's privileges); "
                                "table synopses also to the table's owner.")));
    NamedRow row;
    row.owner = DatumGetObjectId(values[0]);
    if (n > 1 && tiers[1] != 0 && tiers[1] == tiers[2])
        ereport(ERROR,
                (errcode(ERRCODE_AMBIGUOUS_ALIAS),
                 errmsg("%s: synopsis name \"%s\" is ambiguous", fn, text_to_cstring(name)),
                 errdetail("Several roles whose synopses you may see own a synopsis of this name, and you own none."),
                 errhint("SET ROLE to the owner of the one you mean, or name its owner (drop_synopsis(name, owner)).")));
    if (!drop && !role_exists(row.owner))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: the owner of synopsis \"%s\" no longer exists", fn, text_to_cstring(name)),
                        errhint("Its rows are never used again; a superuser can remove it with drop_synopsis.")));
    row.query = nulls[1] ? nullptr : DatumGetTextPP(values[1]);
    row.relation = nulls[5] ? InvalidOid : DatumGetObjectId(values[5]);
    row.d = nulls[6] ? 0 : int2_array(DatumGetArrayTypeP(values[6]), row.attnums);
    row.n_stratify = nulls[7] ? 0 : int2_array(DatumGetArrayTypeP(values[7]), row.stratify);
    row.has_attnames = !nulls[8];
    if (row.has_attnames) {
        Datum* elems;
        bool* enulls;
        int ne;
        deconstruct_array(DatumGetArrayTypeP(values[8]), NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &enulls,
                          &ne);
        row.has_attnames = ne == row.d;
        for (int j = 0; j < ne && j < kMaxDim && row.has_attnames; ++j) {
            row.has_attnames = !enulls[j];
            if (!enulls[j]) strlcpy(row.attnames[j], NameStr(*DatumGetName(elems[j])), NAMEDATALEN);
        }
    }
    row.search_path = nulls[2] ? nullptr : TextDatumGetCString(values[2]);
    row.synopsis = want_synopsis && !nulls[3] ? DatumGetByteaPP(values[3]) : nullptr;
    // Parameters stored by this library; anything else: from the value.
    int method = nulls[11] ? -1 : choice_index(TextDatumGetCString(values[11]), kBandwidthNames, 4);
    int smoothing = nulls[12] ? -1 : choice_index(TextDatumGetCString(values[12]), kSmoothingNames, 3);
    row.has_params = !nulls[10] && DatumGetInt32(values[10]) > 0 && method >= 0 && smoothing >= 0;
    row.sample_size = row.has_params ? DatumGetInt32(values[10]) : 0;
    row.method = method;
    row.smoothing = smoothing;
    // A row without a value was restored from a dump (values are never
    // dumped): its sample_relid is the source's OID, which may name another
    // synopsis' sample here; never trusted, never dropped.
    row.sample_relid = nulls[13] || !DatumGetBool(values[14]) ? InvalidOid : DatumGetObjectId(values[13]);
    row.census = nulls[15] ? CensusMode::Auto : DatumGetBool(values[15]) ? CensusMode::On : CensusMode::Off;
    row.ctid = TextDatumGetCString(values[4]);
    return row;
}

// ERROR 42710: the caller already owns a synopsis of this name. Names are
// per owner, so only the caller's own rows can conflict.
[[noreturn]] void name_taken(text* name, const char* fn) {
    ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
                    errmsg("%s: a synopsis named \"%s\" already exists", fn, text_to_cstring(name))));
    pg_unreachable();
}

// Refuses a taken name before a (long) build; the insert's ON CONFLICT
// checks again (a concurrent create, or one run by a stored query).
void refuse_taken_name(text* name, Oid owner, const char* fn) {
    Oid types[2] = {TEXTOID, OIDOID};
    Datum args[2] = {PointerGetDatum(name), ObjectIdGetDatum(owner)};
    if (as_table_owner(approx_gpu_sql("SELECT 1 FROM @extschema@.synopses "
                                      "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2 "
                                      "AND name OPERATOR(pg_catalog.=) $1"),
                       2, types, args, nullptr, nullptr, nullptr, 0, true) > 0)
        name_taken(name, fn);
}

}  // namespace synopsis_glue
