// Where the extension's objects are (runtime.h "the extension's schemas").
#include "runtime/runtime.h"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "lib/stringinfo.h"
#include "utils/fmgroids.h"
}

// get_extension_schema() of src/backend/commands/extension.c, static before
// PostgreSQL 16: pg_extension.extnamespace by the extension's OID.
static Oid extension_namespace(Oid ext) {
    Oid nsp = InvalidOid;
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
    SysScanDesc scan = systable_beginscan(rel, ExtensionOidIndexId, true, nullptr, 1, &key);
    HeapTuple tup = systable_getnext(scan);
    if (HeapTupleIsValid(tup)) nsp = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tup))->extnamespace;
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return nsp;
}

Oid approx_gpu_schema_oid(bool missing_ok) {
    Oid ext = get_extension_oid("approx_gpu", missing_ok);
    return OidIsValid(ext) ? extension_namespace(ext) : InvalidOid;
}

Oid approx_gpu_internal_schema_oid(bool missing_ok) {
    if (!OidIsValid(approx_gpu_schema_oid(missing_ok))) return InvalidOid;
    return get_namespace_oid(kInternalSchema, missing_ok);
}

// The placeholders are replaced as execute_extension_script() replaces
// @extschema@ (src/backend/commands/extension.c): by the quoted name.
char* approx_gpu_sql(const char* fixed_sql) { return approx_gpu_sql(fixed_sql, InvalidOid); }

// extschema InvalidOid: looked up at the first @extschema@.
char* approx_gpu_sql(const char* fixed_sql, Oid extschema) {
    const char* ext = nullptr;
    StringInfoData out;
    initStringInfo(&out);
    for (const char* p = fixed_sql; *p;) {
        if (strncmp(p, "@extschema@", 11) == 0) {
            if (!ext) {
                char* name = get_namespace_name(OidIsValid(extschema) ? extschema : approx_gpu_schema_oid(false));
                if (!name) elog(ERROR, "cache lookup failed for the schema of extension approx_gpu");
                ext = quote_identifier(name);
            }
            appendStringInfoString(&out, ext);
            p += 11;
        } else if (strncmp(p, "@internal@", 10) == 0) {
            appendStringInfoString(&out, quote_identifier(kInternalSchema));
            p += 10;
        } else {
            appendStringInfoChar(&out, *p++);
        }
    }
    return out.data;
}
