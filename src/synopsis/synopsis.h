// The synopsis feature's glue (src/synopsis/), the internal API its files share.
//   synopsis.cpp           synopsis_init(): the feature's settings
//   synopsis_type.cpp      type I/O, kde_synopsis_info, argument helpers, building a value
//                          from a sample
//   synopsis_value.cpp     the stored (binary) form: encode, decode, validation
//   synopsis_text.cpp      the JSON text form of kde_synopsis
//   synopsis_parsed.cpp    values this backend parsed and validated lately (query functions)
//   synopsis_agg.cpp       kde_synopsis_agg / kde_merge_agg (a reservoir state), kde_merge
//   synopsis_estimate.cpp  box estimates approx_count / _sum / _avg (+ _ci, _many), kde_density
//   synopsis_catalog.cpp   the catalog table (approx_gpu.synopses): statements as its owner,
//                          owner and row-level-security rules, lookup by name (synopsis_catalog.h)
//   synopsis_named.cpp     query-text named synopses: create / refresh / drop
//   synopsis_predicate.cpp the JSON-predicate estimates approx_count(name, predicate) etc.
//                          (bounds as values of the columns' types)
//   synopsis_table_sql.cpp table synopses: create_synopsis, refresh as the owner, synopsis_status
//   synopsis_build.cpp     building a table synopsis: checks, sampling, dictionaries
//                          (synopsis_build.h); synopsis_strata.cpp its stratified first pass
//                          and the leaves of a partitioned table or inheritance parent
//   synopsis_sample.cpp    the sample relation of a table synopsis: make, check, drop
//   synopsis_cache.cpp     the per-backend cache of table synopses (synopsis_table.h: the seam
//                          with the planner side, src/aqp/)
//   synopsis_freshness.cpp freshness: what a build records beyond the counters and the check
//                          (a parent: its members' counters summed, their storage
//                          fingerprinted); columns bound by name and type
//   synopsis_binding.cpp   whose table synopsis answers which role, and who may be told its
//                          name (synopsis_table.h)
//   synopsis_codec.cpp     SQL values <-> the sample's numbers and dictionary codes, both
//                          directions (synopsis_codec.h)
// Numerics live in the engine (src/core/synopsis.hpp).
#pragma once

#include "runtime/runtime.h"

#include "core/synopsis.hpp"
#include "synopsis/synopsis_table.h"

namespace syn = approx::synopsis;

namespace synopsis_glue {

using syn::kMaxDim;

constexpr int kNameMax = NAMEDATALEN - 1;
constexpr int32 kDefaultSampleSize = 10000;
extern const char* const kBandwidthNames[4];
extern const char* const kSmoothingNames[3];
extern const char* const kModeNames[3];
extern const char* const kEncodingNames[5];
// The version byte values are written with (format 3: NULLs as NaN, per-column
// encodings, null counts and dictionaries, strata); 1 and 2 are still read.
constexpr int kValueVersion = 3;

// A synopsis value read into aligned memory (palloc'd, trivially destructible).
struct SynValue {
    syn::Synopsis s;
    double* sample;
    bool has_names;
    char names[kMaxDim][NAMEDATALEN];
    // Format 3: how each column's SQL values became numbers (ValueEncoding;
    // Number for values of older formats and of the aggregates), and for a
    // Dictionary column its dict_size strings, sorted by strcmp (code = index).
    uint8 encoding[kMaxDim];
    int32 dict_size[kMaxDim];
    char** dict[kMaxDim];
    syn::Stratum* strata;  // s.n_strata entries (s.strata points here)
};

// ---- values (synopsis_value.cpp; text form synopsis_text.cpp, info synopsis_type.cpp) -----
SynValue* new_value(MemoryContext mcxt);
[[noreturn]] void raise_value(int code, const char* what, const char* problem);
// Engine validation plus the glue's own (names); ERROR `code` naming `what`.
void validate_value(const SynValue* v, int code, const char* what);
// Upper bound of the stored size (names at their longest).
Size stored_bytes(int d, int64 m, bool names);
Size value_bytes(const SynValue* v);
// The stored (and binary send) form: version byte, explicit little-endian.
bytea* value_to_bytes(const SynValue* v);
// Decodes and validates a stored / binary form (a trust boundary).
SynValue* value_from_bytes(const char* data, size_t len, int code, const char* what);
// A synopsis argument for the query functions: parsed and validated once per
// backend for the same bytes (synopsis_parsed.cpp), so callers must not
// modify it.
const SynValue* synopsis_arg_shared(FunctionCallInfo fcinfo, int argno);
char* value_to_text(const SynValue* v);
SynValue* value_from_text(const char* text);
// A stored kde_synopsis (argument, table row or freshly built value).
SynValue* stored_value(const bytea* b);
SynValue* synopsis_arg(FunctionCallInfo fcinfo, int argno);
// kde_synopsis_info's JSON.
Datum info_jsonb(const SynValue* v);

// ERROR 54000 when a sample of sample_size rows of d columns would not fit a value.
void check_size(int64 sample_size, int d, bool names, const char* fn);
// Finishes a sample into a synopsis value (bandwidths on the engine; the
// only GPU work of the aggregates). sample is palloc'd, m x d.
Datum finish_synopsis(int d, int64 n_rows, int64 m, int64 sample_size, int64 skipped, double* sample, int method,
                      int smoothing, bool has_names, char (*names)[NAMEDATALEN], const char* fn,
                      const uint8* encoding = nullptr);
// a + b for the counts of merged synopses and states (N, skipped): ERROR
// 22003 naming the function instead of a wrapped, unreadable value.
int64 add_count(int64 a, int64 b, const char* fn, const char* what);
int bandwidth_arg(FunctionCallInfo fcinfo, int argno, const char* fn);
int smoothing_arg(FunctionCallInfo fcinfo, int argno, const char* fn);
int32 sample_size_arg(FunctionCallInfo fcinfo, int argno, const char* fn);
uint64 sampling_seed(void);

// ---- reservoir state (synopsis_agg.cpp) ----------------------------------------------------------
struct SynAgg {
    int32 d;          // 0 until the first row
    int32 method;     // Bandwidth
    int32 smoothing;  // Smoothing
    bool params_set;
    int64 skipped;
    syn::Reservoir res;  // capacity = sample_size, seen = N, size = m
    double* rows;        // res.size x d (room for rows_cap rows)
    int64 rows_cap;
    bool has_names;
    char names[kMaxDim][NAMEDATALEN];
    uint8 encoding[kMaxDim];  // ValueEncoding of each column (merges of table synopses keep them)
};

SynAgg* new_state(MemoryContext mcxt);
void ensure_rows(SynAgg* st, MemoryContext mcxt, int64 rows);
void set_params(SynAgg* st, int64 sample_size, int method, int smoothing, const char* fn);
void set_dim(SynAgg* st, int d, int64 sample_size, const char* fn);
void add_sample(SynAgg* st, MemoryContext mcxt, const double* row);
// Merges a uniform sample (m rows of n, capacity k) into the state.
void merge_into(SynAgg* st, MemoryContext mcxt, const double* rows, int64 m, int64 n, int64 k, const char* fn);
void merge_names(SynAgg* st, bool has_names, const char (*names)[NAMEDATALEN], bool first, const char* fn);
// Adds synopsis v into the state (kde_merge_agg, kde_merge).
void absorb(SynAgg* st, MemoryContext mcxt, const SynValue* v, const char* fn);
Datum state_final(SynAgg* st, const char* fn);

// ---- boxes (synopsis_estimate.cpp) ----------------------------------------------------------------
// Runs the engine over q boxes into out (q estimates), or into a palloc'd
// buffer when out is null; returns it.
syn::BoxEstimate* run_boxes(const SynValue* v, int64 q, const double* lo, const double* hi, syn::Aggregate agg,
                            int column, const char* fn, syn::BoxEstimate* out = nullptr);
// SUM estimates of boxes whose sample rows all hold NULL in the column
// become NaN (SQL NULL, as sum() of NULLs).
void null_sums(const SynValue* v, int64 q, const double* lo, const double* hi, int column, const char* fn,
               syn::BoxEstimate* e);
Datum estimate_datum(FunctionCallInfo fcinfo, const syn::BoxEstimate& e);

// ---- the catalog table (synopsis_catalog.cpp) -----------------------------------------------------
Oid synopses_relid(void);
Oid synopses_owner(void);
// The owner of any relation (InvalidOid: gone).
Oid relation_owner(Oid relid);
// Runs one fixed statement on approx_gpu.synopses as the table's owner with
// search_path = pg_catalog, pg_temp (what a SECURITY DEFINER function with a
// fixed search_path does; the caller itself cannot write the table).
// Returns SPI_processed; the first row's columns (if any) go to values/nulls;
// each (optional) sees every row, in the caller's memory context.
int64 as_table_owner(const char* sql, int nargs, Oid* types, Datum* args, const char* arg_nulls, Datum* values,
                     bool* nulls, int ncols, bool read_only = false,
                     void (*each)(void*, HeapTuple, TupleDesc) = nullptr, void* each_ctx = nullptr);
// True when approx_gpu.synopses has the 0.3.0 columns of table synopses.
bool table_synopses_available(void);

// ---- table synopses (synopsis_build.cpp) ------------------------------------------------------------
// What a build from a table gives the catalog row.
struct TableBuild {
    Datum value;  // the kde_synopsis (a bytea)
    Oid atttype[kMaxDim];
    Oid collation[kMaxDim];
    int64 rows_built;       // N
    int64 changes_built;    // n_tup_ins + n_tup_upd + n_tup_del as the statistics reported them
    int64 pending_inserts;  // max(0, N - (n_tup_ins - n_tup_del)): rows the statistics had not counted yet
    Oid relfilenode;
    int64 inserts_built;  // n_tup_ins
    TimestampTz stats_reset;
    TimestampTz cluster_stats_reset;
    int64 label_hash[kMaxDim];
    const char* built_stale;  // nullptr: none
    char attname[kMaxDim][NAMEDATALEN];
    // The sample relation (synopsis_sample.cpp; InvalidOid: the extension's
    // objects are older than 0.7.0)
    Oid sample_relid;
    int sample_natts;
    const AttrNumber* sample_attnum;
};
// Opens relid with AccessShareLock, kept to the end of the transaction; a
// table dropped while the call waited for the lock is a clean 42P01 naming it.
// Callers lock before they resolve names or lock catalog rows (the order of
// DROP TABLE and its event trigger: table, then the synopses row).
Relation open_synopsis_table(Oid relid, const char* fn);
// Builds a synopsis of columns attnums[0..d) of relid as the current user
// (SELECT privilege on them and no row-level security for it, else ERROR
// 42501), stratified by the synopsis columns stratify[0..n_stratify) (0-based
// indexes) when n_stratify > 0; census: with a take-all stratum of each
// measure's largest |values| (synopsis_strata.cpp), for every measure (On),
// none (Off) or those whose tail it pays for (Auto, census_pays).
enum class CensusMode : uint8 { Off = 0, On = 1, Auto = 2 };
// `name`: the synopsis built (check_role_sample_rows leaves its old sample out).
TableBuild* build_table_synopsis(Oid relid, const char* name, int d, const AttrNumber* attnums, int n_stratify,
                                 const int* stratify, int32 sample_size, int method, int smoothing, CensusMode census,
                                 const char* fn);

// ---- sample relations (synopsis_sample.cpp) --------------------------------------------------------
struct SampleRelation {
    Oid relid;  // InvalidOid: none made (objects older than 0.7.0)
    int natts;
    const AttrNumber* attnum;  // sample column k holds table attribute attnum[k]
};
Oid samples_namespace(void);
// Creates the sample relation of rel holding rows[0..m) (the model's sample
// rows, in its order; strata: the model's strata, n_strata = 0 uniform), as
// the extension's owner, fills and analyzes it.
SampleRelation make_sample_relation(Relation rel, HeapTuple* rows, int64 m, const syn::Stratum* strata, int n_strata,
                                    const char* fn);
// approx_gpu.max_synopsis_rows_per_role: ERROR 54000 naming fn when the
// current role does not own relid and its other table synopses on tables it
// does not own (all but `name`) hold, with `adding` rows more, more sample
// rows than the setting allows (-1: no limit).
extern int synopsis_max_rows_per_role;
void check_role_sample_rows(Oid relid, const char* name, int64 adding, const char* fn);
// Whether sample is a sample relation made for relid (a stored OID is
// checked so before it is used or dropped).
bool is_sample_relation(Oid sample, Oid relid);
// Drops it when is_sample_relation (else nothing).
void drop_sample_relation(Oid sample, Oid relid);
// Whether approx_gpu.synopses has 0.7.0's storage columns (values apart).
bool storage_columns_available(void);

}  // namespace synopsis_glue

// ---- freshness (synopsis_freshness.cpp) ---------------------------------------------------------
namespace synopsis_glue {
// The table's counters and the statistics' reset times as of this statement.
struct StatsMark {
    int64 changes, inserts, live;
    TimestampTz stats_reset, cluster_stats_reset;
};
// members: a parent's (table_members), whose counters are summed; NIL: relid's own.
void read_stats_mark(Oid relid, StatsMark* m, List* members = NIL);
// A partitioned table's or inheritance parent's members (itself and every
// inheritor, find_all_inheritors without locks); NIL for a table without
// children. relkind and relhassubclass: relid's pg_class row, which the
// caller has read already.
List* table_members(Oid relid, char relkind, bool relhassubclass);
// What the synopsis records as a parent's relfilenode: a fingerprint of its
// members' OIDs and relfilenodes (ATTACH, DETACH, DROP, INHERIT, NO INHERIT,
// TRUNCATE or a rewrite of one changes it).
Oid storage_mark_of(List* members);
// Why the active snapshot may be older than counters read just before (a
// REPEATABLE READ snapshot some transaction ended after), or nullptr.
const char* build_snapshot_problem(void);
// A hash of the pg_enum rows the labels name now (false: one is gone).
bool enum_label_hash(Oid type, int n, const char* const* labels, int64* out);
// Column `name` of relid bound by name: its number, or *problem says why not
// (gone, another type, another collation).
AttrNumber bind_column(Oid relid, const char* name, Oid type, Oid collation, const char** problem);
}  // namespace synopsis_glue

// The synopsis feature's settings (approx_gpu.synopsis_max_staleness); from _PG_init.
void synopsis_init(void);
