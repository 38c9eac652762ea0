// Table synopses: a synopsis bound to a relation and its columns (by OID and
// attribute number), stored in approx_gpu.synopses, decoded once per backend
// and shared by the planner node. This header is the seam between the catalog
// side (synopsis_catalog.cpp / synopsis_named.cpp / synopsis_table_sql.cpp /
// synopsis_cache.cpp: build, refresh, drop, freshness, the per-backend cache;
// synopsis_codec.cpp: the values' conversions) and the planner side
// (aqp/box/planner.cpp, aqp/box/scan.cpp, aqp/box/boxes.cpp).
#pragma once

#include "runtime/runtime.h"

extern "C" {
#include "utils/timestamp.h"
}

#include "core/synopsis.hpp"
// ValueEncoding; table_synopsis_encode / _code / _datum, the conversions of
// a table synopsis' values
#include "synopsis/synopsis_codec.h"

// One table synopsis as the planner sees it (read-only; lives in the cache).
struct TableSynopsis {
    const char* name;  // the synopsis name
    Oid owner;
    Oid relid;
    int d;  // columns
    AttrNumber attnum[approx::synopsis::kMaxDim];
    Oid atttype[approx::synopsis::kMaxDim];    // the column's type at build (a retyped column: unusable)
    Oid collation[approx::synopsis::kMaxDim];  // the column's collation at build (InvalidOid: none)
    ValueEncoding encoding[approx::synopsis::kMaxDim];
    // Dictionary columns: dict_size values, the type's output strings,
    // sorted by strcmp (code k = dict[k]); values never seen in the sample
    // are not in it.
    int dict_size[approx::synopsis::kMaxDim];
    const char* const* dict[approx::synopsis::kMaxDim];
    // Stratify columns (0-based synopsis column indexes; n_stratify = 0: a
    // uniform sample). Stratum g's key is the stratify columns' values of
    // its first sample row.
    int n_stratify;
    int stratify[approx::synopsis::kMaxDim];
    // The build's census => argument (synopsis_glue::CensusMode: 0 false or
    // none recorded, 1 true, 2 NULL: the default, decided at the build).
    uint8 census;
    approx::synopsis::Synopsis model;  // sample, strata, columns (pointers into the cache entry)
    // Freshness recorded at build (table_synopsis_staleness reads it).
    int64 rows_built;       // N
    int64 changes_built;    // n_tup_ins + n_tup_upd + n_tup_del when built (after flushing the build's own)
    int64 pending_inserts;  // rows the build saw that the statistics had not reported yet (late counters)
    Oid relfilenode;        // of the relation when built
    TimestampTz built;      // when built (the most recent wins; also the plan's identity check)
    // What the counters cannot show (synopsis_freshness.cpp).
    int64 inserts_built;              // n_tup_ins when built (only late inserts are forgiven)
    bool identity_known;              // false: built before 0.6.0 (stale until refreshed)
    uint64 system_identifier;         // the cluster that built it
    Oid database;                     // the database that built it
    TimestampTz stats_reset;          // pg_stat_database.stats_reset when built (0: never)
    TimestampTz cluster_stats_reset;  // pg_stat_bgwriter.stats_reset when built (crash recovery resets it)
    int64 label_hash[approx::synopsis::kMaxDim];  // enum columns: their labels' pg_enum rows (0: not an enum)
    const char* built_stale;          // why the build could not vouch for its freshness (nullptr: it could)
    // A column dropped, retyped or re-collated since the build: never used.
    const char* unusable;  // nullptr: usable; else the reason
    // The sample relation (0.7.0; the sample path, aqp/aqp_sample_*.cpp): the
    // model's sample rows with every column the table had at the build that
    // its builder could SELECT (sample attribute k + 1 holds table attribute sample_attnum[k], same
    // name, type, typmod and collation) and, last (attribute sample_natts +
    // 1), the stratum number, int4: model stratum g is g + 1, a uniform
    // sample is stratum 1. InvalidOid: none (built before 0.7.0, or not
    // restored by a dump): only the box path answers.
    Oid sample_relid;
    int sample_natts;
    const AttrNumber* sample_attnum;
};

// The synopses bound to relid, most recently built first, from the
// per-backend cache (one catalog read per relation until create / refresh /
// drop of one of its synopses, or DDL on it, invalidates the entry through a
// relcache invalidation of relid). *out stays valid until the next call of
// any function here; pin what must outlive that.
int table_synopses(Oid relid, const TableSynopsis* const** out);

// Pins the synopsis (relid, owner, name) built at `built` for a running
// query: it stays in memory (even if invalidated meanwhile) until
// table_synopsis_unpin, or the end of the transaction on an error. nullptr
// when it no longer exists or was rebuilt (another `built`). Whether it may
// answer the current role is the caller's check (table_synopsis_answers).
const TableSynopsis* table_synopsis_pin(Oid relid, Oid owner, const char* name, TimestampTz built);
void table_synopsis_unpin(const TableSynopsis* ts);

// Whose synopsis answers a query (synopsis_binding.cpp; docs/aqp.md): the
// synopses of the table's owner and of roles with its privileges (binders)
// answer every role; any other role's answer only that role (and roles with
// its privileges through membership). The choice depends on the role: a
// plan that made it is role-dependent, and the executor checks again.
bool table_synopsis_binds(Oid relid, Oid owner);
bool table_synopsis_answers(Oid relid, Oid owner, Oid role);
// Which columns a synopsis' design follows (docs/aqp.md "Security"): its
// stratify columns, its census measures (census => true: its numeric
// non-stratify columns; the default, where it may have taken a census:
// every numeric column of its sample relation, the candidates it decided
// from) and a partitioned table's partition keys (each partition is a
// stratum; an inheritance parent's: tableoid). nullptr when role (the RTE's checkAsUser, else the current
// user) may SELECT every one; else the reason, for last_run(): such a
// synopsis does not answer that role (its weights tell which rows are in the
// census or in which stratum).
const char* table_synopsis_hidden_design(const TableSynopsis* ts, Oid role, const char* phrase);
// Whether role may SELECT column att of relid (the table or the column).
bool table_column_readable(Oid relid, AttrNumber att, Oid role);
// What tells a parent's leaves apart (each is a stratum of its synopsis),
// when role may not SELECT it: the first column (relid's number) of the
// partition keys of a partitioned relid and its partitioned descendants;
// tableoid (TableOidAttributeNumber) for an inheritance parent.
// InvalidAttrNumber when role may read it (or relid is no parent).
AttrNumber leaf_strata_hidden(Oid relid, Oid role);
// Whether role may see the synopsis' catalog row (the policy of
// approx_gpu.synopses: the owner's privileges or the table owner's).
bool table_synopsis_visible(Oid relid, Oid owner, Oid role);
// The name as role may be told it (EXPLAIN, last_run()): the name, or
// "(a synopsis of the table's owner)"; _phrase for reasons: "synopsis NAME"
// or "the synopsis of the table's owner".
const char* table_synopsis_shown_name(Oid relid, Oid owner, const char* name, Oid role);
const char* table_synopsis_phrase(Oid relid, Oid owner, const char* name, Oid role);

// nullptr when the synopsis is fresh; otherwise why not, in words for
// last_run() ("synopsis stale: 31% of the rows changed since it was built",
// "table was truncated or rewritten since the synopsis was built",
// "table statistics were reset since the synopsis was built"). Reads the
// statistics as of the statement (synopsis_freshness.cpp).
const char* table_synopsis_staleness(const TableSynopsis* ts);

// A table's change counters as this backend sees them: the cumulative
// statistics' n_tup_ins + n_tup_upd + n_tup_del plus this backend's own counts
// not yet flushed (its committed statements and its open transaction), and the
// live rows the same way (a pending TRUNCATE counts from zero). Without the
// own counts a build right after this session's bulk load would read as stale
// once the load's counts arrive.
void table_change_counters(Oid relid, int64* changes, int64* inserts, int64* live);

// approx_gpu.synopsis_max_staleness (synopsis.cpp): the fraction of a table's
// rows that may change before its synopses stop answering.
extern double synopsis_max_staleness;
