// The per-backend cache of table synopses (src/synopsis/synopsis_table.h): the
// catalog rows of one relation read once (as the catalog table's owner),
// each value decoded once into CacheMemoryContext, every column checked
// against the relation's current attributes; an entry is dropped by a
// relcache invalidation of its relation (create / refresh / drop of one of
// its synopses send one; DDL on the table does too) or of approx_gpu.synopses
// itself, and freed once no running query pins it. Columns bind by name and
// type (synopsis_freshness.cpp): a restore moves numbers, a rename updates
// the stored name (the catalog's event trigger).
#include "synopsis/synopsis.h"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

namespace {

using namespace synopsis_glue;

struct Entry;

// A cached synopsis; TableSynopsis first, so that a TableSynopsis* handed
// out is also the Item*.
struct CachedItem {
    TableSynopsis ts;
    Entry* entry;
};

struct Entry {
    Oid relid;
    MemoryContext cxt;  // everything of the entry (items, names, samples, dictionaries)
    int n;
    const TableSynopsis** list;  // n, most recently built first
    bool valid;                  // false: invalidated, freed when no pin is left
    int pins;
    Entry* next;
};

Entry* entries = nullptr;
Oid catalog_relid = InvalidOid;  // approx_gpu.synopses when last read
bool registered = false;

void relcache_callback(Datum, Oid relid) {
    for (Entry* e = entries; e; e = e->next)
        if (relid == InvalidOid || relid == e->relid || relid == catalog_relid) e->valid = false;
}

void xact_callback(XactEvent event, void*) {
    // Pins never outlive a transaction (an error skips the executor's unpin).
    if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_COMMIT ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PREPARE)
        for (Entry* e = entries; e; e = e->next) e->pins = 0;
}

void ensure_registered(void) {
    if (registered) return;
    CacheRegisterRelcacheCallback(relcache_callback, (Datum)0);
    RegisterXactCallback(xact_callback, nullptr);
    registered = true;
}

// Frees invalidated entries that no query pins.
void sweep(void) {
    Entry** link = &entries;
    while (*link) {
        Entry* e = *link;
        if (!e->valid && e->pins == 0) {
            *link = e->next;
            MemoryContextDelete(e->cxt);  // e lives there too
        } else {
            link = &e->next;
        }
    }
}

// Why column c of the synopsis cannot be used any more (nullptr: it can).
// A row with names binds column c by its name; a name at another number
// (a restore renumbered the columns, or the column was dropped and another
// added under its name) binds there but makes the synopsis stale until
// refresh_synopsis, so that it never answers for another column. A row from
// before 0.6.0 binds by number.
const char* column_problem(TableSynopsis& ts, int c, const SynValue* v, const char* stored_name) {
    if (stored_name) {
        const char* problem;
        AttrNumber a = bind_column(ts.relid, stored_name, ts.atttype[c], ts.collation[c], &problem);
        if (problem == nullptr && a != ts.attnum[c]) {
            ts.attnum[c] = a;
            if (ts.built_stale == nullptr)
                ts.built_stale = psprintf("column \"%s\" has another number than when the synopsis was built (a "
                                          "restore, or dropped and added again); refresh_synopsis rebinds it by name",
                                          stored_name);
        }
        return problem;
    }
    const char* name = v->has_names ? v->names[c] : psprintf("%d", c + 1);
    HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(ts.relid), Int16GetDatum(ts.attnum[c]));
    if (!HeapTupleIsValid(tup)) return psprintf("column \"%s\" was dropped since the synopsis was built", name);
    Form_pg_attribute att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
    const char* problem = nullptr;
    if (att->attisdropped)
        problem = psprintf("column \"%s\" was dropped since the synopsis was built", name);
    else if (att->atttypid != ts.atttype[c])
        problem = psprintf("column \"%s\" changed type since the synopsis was built", NameStr(att->attname));
    else if (att->attcollation != ts.collation[c])
        problem = psprintf("column \"%s\" changed collation since the synopsis was built", NameStr(att->attname));
    ReleaseSysCache(tup);
    return problem;
}

Oid array_oid(Datum d, int i, Oid elem) {
    ArrayType* a = DatumGetArrayTypeP(d);
    Datum* elems;
    bool* nulls;
    int n;
    if (elem == INT2OID)
        deconstruct_array(a, INT2OID, 2, true, TYPALIGN_SHORT, &elems, &nulls, &n);
    else
        deconstruct_array(a, OIDOID, sizeof(Oid), true, TYPALIGN_INT, &elems, &nulls, &n);
    if (i >= n || nulls[i]) return InvalidOid;
    return elem == INT2OID ? static_cast<Oid>(DatumGetInt16(elems[i])) : DatumGetObjectId(elems[i]);
}

int64 array_int8(Datum d, int i) {
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(DatumGetArrayTypeP(d), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
    return i < n && !nulls[i] ? DatumGetInt64(elems[i]) : 0;
}

const char* array_name(Datum d, int i) {
    Datum* elems;
    bool* nulls;
    int n;
    deconstruct_array(DatumGetArrayTypeP(d), NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, &nulls, &n);
    return i < n && !nulls[i] ? pstrdup(NameStr(*DatumGetName(elems[i]))) : nullptr;
}

int array_len(Datum d) {
    ArrayType* a = DatumGetArrayTypeP(d);
    return ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
}

// The catalog columns add_row reads (lookup's SELECT list).
constexpr int kColumns = 24;

struct Fill {
    Entry* e;
    int cap;
};

// One catalog row -> one Item (in the entry's context: the current one).
void add_row(void* ctx, HeapTuple tup, TupleDesc desc) {
    Fill* f = static_cast<Fill*>(ctx);
    Entry* e = f->e;
    bool isnull[kColumns];
    Datum v[kColumns];
    for (int c = 0; c < kColumns; ++c) v[c] = SPI_getbinval(tup, desc, c + 1, &isnull[c]);
    Oid owner = DatumGetObjectId(v[1]);
    if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(owner))) return;  // an orphan: never used
    if (isnull[4] || isnull[5] || isnull[6] || isnull[8] || isnull[9] || isnull[10] || isnull[11]) return;
    if (array_len(v[4]) > kMaxDim) return;  // never written so
    CachedItem* it = static_cast<CachedItem*>(palloc0(sizeof(CachedItem)));
    it->entry = e;
    TableSynopsis& ts = it->ts;
    ts.name = TextDatumGetCString(v[0]);
    ts.owner = owner;
    ts.relid = e->relid;
    // No value: a row restored by pg_dump (metadata only), never used
    // until refresh_synopsis rebuilds it.
    SynValue* sv = isnull[2] ? nullptr : stored_value(DatumGetByteaPP(v[2]));
    ts.d = array_len(v[4]);
    for (int c = 0; c < ts.d && c < kMaxDim; ++c) {
        ts.attnum[c] = static_cast<AttrNumber>(array_oid(v[4], c, INT2OID));
        ts.atttype[c] = array_oid(v[5], c, OIDOID);
        ts.collation[c] = array_oid(v[6], c, OIDOID);
    }
    // stratify holds numbers as stored: mapped before column_problem rebinds
    ts.n_stratify = isnull[7] ? 0 : array_len(v[7]);
    for (int s = 0; s < ts.n_stratify; ++s) {
        AttrNumber a = static_cast<AttrNumber>(array_oid(v[7], s, INT2OID));
        ts.stratify[s] = 0;
        for (int c = 0; c < ts.d; ++c)
            if (ts.attnum[c] == a) ts.stratify[s] = c;
    }
    for (int c = 0; sv && c < sv->s.d; ++c) {
        ts.encoding[c] = static_cast<ValueEncoding>(sv->encoding[c]);
        ts.dict_size[c] = sv->dict_size[c];
        ts.dict[c] = sv->dict[c];
    }
    if (sv) ts.model = sv->s;
    ts.rows_built = DatumGetInt64(v[8]);
    ts.changes_built = DatumGetInt64(v[9]);
    ts.pending_inserts = DatumGetInt64(v[10]);
    ts.relfilenode = DatumGetObjectId(v[11]);
    ts.built = DatumGetTimestampTz(v[12]);
    ts.inserts_built = isnull[14] ? 0 : DatumGetInt64(v[14]);
    ts.identity_known = !isnull[15] && !isnull[16] && !isnull[14];
    ts.system_identifier = isnull[15] ? 0 : static_cast<uint64>(DatumGetInt64(v[15]));
    ts.database = isnull[16] ? InvalidOid : DatumGetObjectId(v[16]);
    ts.stats_reset = isnull[17] ? 0 : DatumGetTimestampTz(v[17]);
    ts.cluster_stats_reset = isnull[18] ? 0 : DatumGetTimestampTz(v[18]);
    ts.built_stale = isnull[20] ? nullptr : TextDatumGetCString(v[20]);
    ts.unusable = nullptr;
    if (sv == nullptr)
        ts.unusable = "it has no sample (restored from a dump, which keeps only the metadata); refresh_synopsis "
                      "rebuilds it";
    else if (ts.d != sv->s.d || ts.d > kMaxDim)
        ts.unusable = "the catalog row does not match its synopsis value";
    if (ts.unusable == nullptr && (!isnull[13] && array_len(v[13]) != ts.d))
        ts.unusable = "the catalog row's column names do not match its synopsis value";
    if (ts.unusable == nullptr && (!isnull[19] && array_len(v[19]) != ts.d))
        ts.unusable = "the catalog row's enum label hashes do not match its synopsis value";
    for (int c = 0; c < ts.d && ts.unusable == nullptr; ++c) {
        ts.label_hash[c] = isnull[19] ? 0 : array_int8(v[19], c);
        ts.unusable = column_problem(ts, c, sv, isnull[13] ? nullptr : array_name(v[13], c));
    }
    ts.census = isnull[23] ? static_cast<uint8>(CensusMode::Auto)
                           : static_cast<uint8>(DatumGetBool(v[23]) ? CensusMode::On : CensusMode::Off);
    // The sample relation (0.7.0), trusted only as one made for this table
    // (a restore by a superuser keeps the source's OIDs). A relation dropped
    // later is the planner's check at execution (it locks and re-checks).
    ts.sample_relid = InvalidOid;
    ts.sample_natts = 0;
    ts.sample_attnum = nullptr;
    if (sv && !isnull[21] && !isnull[22] && is_sample_relation(DatumGetObjectId(v[21]), e->relid)) {
        ArrayType* a = DatumGetArrayTypeP(v[22]);
        Datum* elems;
        bool* enulls;
        int n;
        deconstruct_array(a, INT2OID, 2, true, TYPALIGN_SHORT, &elems, &enulls, &n);
        AttrNumber* att = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * Max(n, 1)));
        bool ok = n > 0;
        for (int k = 0; k < n && ok; ++k) {
            ok = !enulls[k];
            att[k] = ok ? DatumGetInt16(elems[k]) : InvalidAttrNumber;
        }
        if (ok) {
            ts.sample_relid = DatumGetObjectId(v[21]);
            ts.sample_natts = n;
            ts.sample_attnum = att;
        }
    }
    if (e->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 4;
        e->list = static_cast<const TableSynopsis**>(e->list ? repalloc(e->list, sizeof(TableSynopsis*) * f->cap)
                                                             : palloc(sizeof(TableSynopsis*) * f->cap));
    }
    e->list[e->n++] = &it->ts;
}

Entry* lookup(Oid relid) {
    ensure_registered();
    sweep();
    for (Entry* e = entries; e; e = e->next)
        if (e->valid && e->relid == relid) return e;
    // Nothing to read where the extension (or its 0.3.0 table) is absent.
    Oid nsp = approx_gpu_schema_oid(true);
    if (!OidIsValid(nsp)) return nullptr;
    Oid cat = get_relname_relid("synopses", nsp);
    if (!OidIsValid(cat) || get_attnum(cat, "relation") == InvalidAttrNumber) return nullptr;
    catalog_relid = cat;

    // Filled in a context of the running query, kept only when complete (an
    // ERROR meanwhile frees it with the query's memory).
    MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "approx_gpu table synopses", ALLOCSET_SMALL_SIZES);
    MemoryContext old = MemoryContextSwitchTo(cxt);
    Entry* e = static_cast<Entry*>(palloc0(sizeof(Entry)));  // in its own context (freed with it)
    e->relid = relid;
    e->cxt = cxt;
    Fill f = {e, 0};
    Oid types[1] = {OIDOID};
    Datum args[1] = {ObjectIdGetDatum(relid)};
    // 0.6.0's columns, or NULLs where the extension's objects are older
    const char* since_060 = get_attnum(cat, "attnames") != InvalidAttrNumber
                                ? "attnames, inserts_built, system_identifier, database_oid, stats_reset, "
                                  "cluster_stats_reset, label_hashes, built_stale"
                                : "NULL::pg_catalog.name[], NULL::pg_catalog.int8, NULL::pg_catalog.int8, "
                                  "NULL::pg_catalog.oid, NULL::pg_catalog.timestamptz, NULL::pg_catalog.timestamptz, "
                                  "NULL::pg_catalog.int8[], NULL::pg_catalog.text";
    // 0.7.0: the value apart (NULL for a restored row), the sample relation
    const bool storage = get_attnum(cat, "sample_relid") != InvalidAttrNumber;
    // (every piece is fixed text of this file; the schema as looked up above)
    const char* sql = approx_gpu_sql(
        psprintf("SELECT name, owner::pg_catalog.oid, %s, relation::pg_catalog.oid, attnums, "
                 "atttypes::pg_catalog.oid[], collations, stratify, rows_built, changes_built, "
                 "pending_inserts, relfilenode, created, %s, %s, %s FROM @extschema@.synopses s "
                 "WHERE relation OPERATOR(pg_catalog.=) $1::pg_catalog.regclass ORDER BY created DESC, name",
                 storage ? "(SELECT v.synopsis FROM @internal@.synopsis_values v "
                           "WHERE v.owner::pg_catalog.oid OPERATOR(pg_catalog.=) s.owner::pg_catalog.oid "
                           "AND v.name OPERATOR(pg_catalog.=) s.name)"
                         : "synopsis",
                 since_060,
                 storage ? "sample_relid, sample_attnums" : "NULL::pg_catalog.oid, NULL::pg_catalog.int2[]",
                 get_attnum(cat, "census") != InvalidAttrNumber ? "census" : "false"),
        nsp);
    as_table_owner(sql, 1, types, args, nullptr, nullptr, nullptr, 0, true, add_row, &f);
    MemoryContextSwitchTo(old);
    MemoryContextSetParent(cxt, CacheMemoryContext);
    e->valid = true;
    e->next = entries;
    entries = e;
    return e;
}

}  // namespace

int table_synopses(Oid relid, const TableSynopsis* const** out) {
    Entry* e = lookup(relid);
    *out = e ? e->list : nullptr;
    return e ? e->n : 0;
}

const TableSynopsis* table_synopsis_pin(Oid relid, Oid owner, const char* name, TimestampTz built) {
    Entry* e = lookup(relid);
    if (e == nullptr) return nullptr;
    for (int i = 0; i < e->n; ++i) {
        const TableSynopsis* ts = e->list[i];
        if (ts->owner == owner && ts->built == built && strcmp(ts->name, name) == 0) {
            ++e->pins;
            return ts;
        }
    }
    return nullptr;
}

void table_synopsis_unpin(const TableSynopsis* ts) {
    Entry* e = reinterpret_cast<const CachedItem*>(ts)->entry;
    if (e->pins > 0) --e->pins;
    // An invalidated entry goes at the next sweep (never while *out of a
    // table_synopses call may still be read).
}
