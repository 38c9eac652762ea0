// The catalog of named synopses (approx_gpu.synopses), kept by
// synopsis_catalog.cpp and shared by synopsis_named.cpp (query-text
// synopses, the JSON-predicate estimates, refresh and drop) and
// synopsis_table_sql.cpp (table synopses).
#pragma once

#include "synopsis/synopsis.h"

namespace synopsis_glue {

// A stored named synopsis.
struct NamedRow {
    Oid owner;
    text* query;
    char* search_path;  // nullptr: unknown (a row stored by 0.1.0)
    bytea* synopsis;    // when asked for (nullptr: the row has no value: restored by pg_dump)
    Oid relation;       // a table synopsis' table (InvalidOid: a query-text synopsis)
    int d;              // table synopsis: its columns (attribute numbers) and stratify columns (attnums)
    AttrNumber attnums[kMaxDim];
    int n_stratify;
    AttrNumber stratify[kMaxDim];
    bool has_attnames;                   // false: a row from before 0.6.0 (columns by number)
    char attnames[kMaxDim][NAMEDATALEN];  // the columns' names (kept current on RENAME COLUMN)
    char* ctid;  // the row version read (refresh updates exactly it)
    // 0.7.0: the build parameters (has_params false: read them from the
    // value) and the sample relation (InvalidOid: none)
    bool has_params;
    int32 sample_size;
    int method;
    int smoothing;
    Oid sample_relid;
    CensusMode census;  // the census => argument it was built with (NULL: Auto; Off before it existed)
};

// The build parameters of a row: its metadata's, else its value's; ERROR
// when it has neither (a restored row from before 0.7.0 has both).
void build_params(const NamedRow& row, const char* fn, int32* sample_size, int* method, int* smoothing);

// ERROR unless the catalog has 0.7.0's storage (values apart) -- builds
// write it.
void require_storage(const char* fn);

// The kde_synopsis type's OID.
Oid synopsis_type_oid(void);

// Whether the role still exists (never run a query as a dropped role's OID).
bool role_exists(Oid role);

// ERROR unless name is a valid synopsis name.
void check_name(text* name, const char* fn);

// Whether approx_gpu.synopses has 0.6.0's freshness columns (attnames, ...).
bool freshness_columns_available(void);

// ERROR unless the catalog table is the extension's current one.
void require_current_table(const char* fn);

// A role's first synopsis grants it access to the catalog table; its last revokes.
void owner_grant(Oid owner, bool grant);

ArrayType* int2_array_of(const AttrNumber* v, int n);
ArrayType* oid_array_of(const Oid* v, int n);

// The synopsis `name` as the caller sees it (see synopsis_catalog.cpp);
// only_owner: that owner's.
NamedRow resolve_named(text* name, const char* fn, bool lock, bool want_synopsis, bool drop,
                       Oid only_owner = InvalidOid);

// ERROR 42710 for a name the caller already owns; refuse_taken_name checks
// before a (long) build.
[[noreturn]] void name_taken(text* name, const char* fn);
void refuse_taken_name(text* name, Oid owner, const char* fn);

// Rebuilds a table synopsis from its table as its owner; its info as jsonb.
Datum refresh_bound(const NamedRow& row, text* name, const char* fn);

}  // namespace synopsis_glue
