// Freshness of table synopses (synopsis_table.h): what a build records
// beyond the change counters -- the cluster and database, the statistics'
// reset times, inserts apart, the enum labels of its dictionaries, whether
// its snapshot was older than the counters -- and the check against it at
// plan and execution time. Events are detected, not inferred from counter
// values: counters restart at 0 after a reset or a crash and can grow back
// to the recorded value. Also the binding of a column by name and type (a
// restore renumbers the columns after a dropped one). A partitioned table
// or inheritance parent has no counters of its own: its members' are summed,
// and its members (OID, relfilenode) are fingerprinted instead of its
// relfilenode.
#include "synopsis/synopsis.h"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_inherits.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"
#include "utils/syscache.h"
}

#include <algorithm>

namespace synopsis_glue {

// The statistics as of this statement. With stats_fetch_consistency = cache
// (the default) or snapshot, a transaction keeps what it first fetched
// (pgstat_fetch_entry, src/backend/utils/activity/pgstat.c); a transaction
// block would judge freshness by the counters of its first look. Clearing the
// statistics snapshot is what pg_stat_clear_snapshot() does for a user.
void read_stats_mark(Oid relid, StatsMark* m, List* members) {
    pgstat_clear_snapshot();
    if (members == NIL) {
        table_change_counters(relid, &m->changes, &m->inserts, &m->live);
    } else {
        m->changes = m->inserts = m->live = 0;
        ListCell* lc;
        foreach (lc, members) {
            int64 c, i, l;
            table_change_counters(lfirst_oid(lc), &c, &i, &l);
            m->changes += c;
            m->inserts += i;
            m->live += l;
        }
    }
    // Reset times: pg_stat_reset() and pg_stat_reset_single_table_counters()
    // set the database's (pgstat_reset, pgstat.c); crash recovery drops the
    // database entries and resets the fixed-numbered statistics' times
    // (pgstat_reset_after_failure), a clean restart keeps both.
    PgStat_StatDBEntry* db = pgstat_fetch_stat_dbentry(MyDatabaseId);
    m->stats_reset = db ? db->stat_reset_timestamp : 0;
    m->cluster_stats_reset = pgstat_fetch_stat_bgwriter()->stat_reset_timestamp;
}

List* table_members(Oid relid, char relkind, bool relhassubclass) {
    bool partitioned = relkind == RELKIND_PARTITIONED_TABLE;
    bool maybe_parent = partitioned || relhassubclass;  // relhassubclass may lag behind (has_subclass)
    if (!maybe_parent) return NIL;
    // NoLock: a plan-time check; the planner locks the members it reads.
    List* members = find_all_inheritors(relid, NoLock, nullptr);
    if (!partitioned && list_length(members) <= 1) return NIL;
    return members;
}

namespace {
int cmp_pair(const void* a, const void* b) {
    const Oid* x = static_cast<const Oid*>(a);
    const Oid* y = static_cast<const Oid*>(b);
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
}
}  // namespace

Oid storage_mark_of(List* members) {
    int n = list_length(members);
    Oid* pairs = static_cast<Oid*>(palloc(sizeof(Oid) * 2 * Max(n, 1)));
    int k = 0;
    ListCell* lc;
    foreach (lc, members) {
        Oid oid = lfirst_oid(lc);
        HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(oid));
        if (!HeapTupleIsValid(tup)) continue;  // dropped since: not a member
        pairs[2 * k] = oid;
        pairs[2 * k + 1] = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relfilenode;
        ReleaseSysCache(tup);
        ++k;
    }
    qsort(pairs, k, 2 * sizeof(Oid), cmp_pair);
    uint64 h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(pairs), 2 * sizeof(Oid) * k, 0x5ca1ab1e);
    Oid mark = static_cast<Oid>(h ^ (h >> 32));
    pfree(pairs);
    return mark == InvalidOid ? 1 : mark;  // 0 is no relfilenode
}

// Whether a build's snapshot may miss changes the counters read just before
// it already hold. Under READ COMMITTED the build takes a new snapshot after
// reading the counters (build_table_synopsis). A transaction snapshot
// (REPEATABLE READ, SERIALIZABLE) is older than the counters unless no
// transaction has ended since it was taken: then it sees what a new one
// would (same xmax, same in-progress set; xids only grow).
const char* build_snapshot_problem(void) {
    if (!IsolationUsesXactSnapshot()) return nullptr;
    Snapshot used = GetActiveSnapshot();
    Snapshot now = GetLatestSnapshot();
    if (used->xmax == now->xmax && used->xcnt == now->xcnt && used->suboverflowed == now->suboverflowed)
        return nullptr;
    return "built under a REPEATABLE READ or SERIALIZABLE snapshot older than the table's counters; "
           "refresh_synopsis outside such a transaction (or as its first statement)";
}

// The enum labels a dictionary holds, as the pg_enum rows they name now: a
// renamed label is not found (or names a new row), an added one changes
// nothing. false: a label no longer exists.
bool enum_label_hash(Oid type, int n, const char* const* labels, int64* out) {
    uint64 h = 0x9e3779b97f4a7c15ULL;
    for (int k = 0; k < n; ++k) {
        HeapTuple tup = SearchSysCache2(ENUMTYPOIDNAME, ObjectIdGetDatum(type), CStringGetDatum(labels[k]));
        if (!HeapTupleIsValid(tup)) return false;
        Oid row = reinterpret_cast<Form_pg_enum>(GETSTRUCT(tup))->oid;
        ReleaseSysCache(tup);
        h = hash_combine64(h, hash_bytes_uint32_extended(row, k));
    }
    *out = static_cast<int64>(h == 0 ? 1 : h);  // 0 means "not an enum"
    return true;
}

// Column `name` of relid with the synopsis' type: its number now (a restore
// may have moved it), or why not (nullptr *problem: bound).
AttrNumber bind_column(Oid relid, const char* name, Oid type, Oid collation, const char** problem) {
    *problem = nullptr;
    HeapTuple tup = SearchSysCacheAttName(relid, name);
    if (!HeapTupleIsValid(tup)) {
        *problem = psprintf("column \"%s\" was dropped or renamed since the synopsis was built", name);
        return InvalidAttrNumber;
    }
    Form_pg_attribute att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
    AttrNumber attnum = att->attnum;
    if (att->atttypid != type)
        *problem = psprintf("column \"%s\" changed type since the synopsis was built", name);
    else if (att->attcollation != collation)
        *problem = psprintf("column \"%s\" changed collation since the synopsis was built", name);
    ReleaseSysCache(tup);
    return attnum;
}

}  // namespace synopsis_glue

using namespace synopsis_glue;

void table_change_counters(Oid relid, int64* changes, int64* inserts, int64* live) {
    PgStat_StatTabEntry* tab = pgstat_fetch_stat_tabentry(relid);
    int64 c = tab ? tab->tuples_inserted + tab->tuples_updated + tab->tuples_deleted : 0;
    int64 ins = tab ? tab->tuples_inserted : 0;
    int64 l = tab ? tab->n_live_tuples : 0;
    if (PgStat_TableStatus* own = find_tabstat_entry(relid)) {
        const PgStat_TableCounts& t = own->t_counts;
        c += t.t_tuples_inserted + t.t_tuples_updated + t.t_tuples_deleted;
        ins += t.t_tuples_inserted;
        l = (t.t_truncdropped ? 0 : l) + t.t_delta_live_tuples;
        for (PgStat_TableXactStatus* x = own->trans; x != nullptr; x = x->upper) {
            c += x->tuples_inserted + x->tuples_updated + x->tuples_deleted;
            ins += x->tuples_inserted;
            l = (x->truncdropped ? 0 : l) + x->tuples_inserted - x->tuples_deleted;
        }
    }
    *changes = c;
    *inserts = ins;
    *live = std::max<int64>(0, l);
}

const char* table_synopsis_staleness(const TableSynopsis* ts) {
    if (ts->built_stale) return ts->built_stale;
    if (!ts->identity_known)
        return "synopsis was built before approx_gpu 0.6.0 recorded what its freshness needs; refresh_synopsis "
               "records it";
    if (ts->system_identifier != GetSystemIdentifier() || ts->database != MyDatabaseId)
        return "synopsis was built in another cluster or database (restored from a dump?); refresh_synopsis "
               "rebuilds it here";
    // One read of the table's pg_class row: its relfilenode, and whether it
    // may have members.
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(ts->relid));
    if (!HeapTupleIsValid(tup)) return "table no longer exists";
    Form_pg_class rel = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup));
    Oid filenode = rel->relfilenode;
    char relkind = rel->relkind;
    bool relhassubclass = rel->relhassubclass;
    ReleaseSysCache(tup);
    List* members = table_members(ts->relid, relkind, relhassubclass);
    if (members == NIL && filenode != ts->relfilenode)
        return "table was truncated or rewritten since the synopsis was built";
    if (members != NIL && storage_mark_of(members) != ts->relfilenode)
        return "a partition or inheritance child of the table was attached, detached, added, dropped, truncated or "
               "rewritten since the synopsis was built";
    StatsMark now;
    read_stats_mark(ts->relid, &now, members);
    if (now.stats_reset != ts->stats_reset)
        return "table statistics were reset since the synopsis was built (pg_stat_reset or "
               "pg_stat_reset_single_table_counters)";
    if (now.cluster_stats_reset != ts->cluster_stats_reset)
        return "the server recovered from a crash (or its shared statistics were reset) since the synopsis was built";
    for (int c = 0; c < ts->d; ++c) {
        if (ts->label_hash[c] == 0) continue;
        int64 h;
        if (!enum_label_hash(ts->atttype[c], ts->dict_size[c], ts->dict[c], &h) || h != ts->label_hash[c])
            return psprintf("the labels of enum type %s changed since the synopsis was built",
                            format_type_be(ts->atttype[c]));
    }
    int64 changes = now.changes - ts->changes_built;
    if (changes < 0) return "table statistics were reset since the synopsis was built";
    // Rows the build read before the statistics counted them arrive as
    // inserts afterwards: forgive up to pending_inserts of the new inserts
    // (never updates or deletes).
    int64 late = std::min(ts->pending_inserts, std::max<int64>(0, now.inserts - ts->inserts_built));
    int64 changed = changes - std::min(changes, late);
    if (static_cast<double>(changed) > synopsis_max_staleness * static_cast<double>(ts->rows_built))
        return psprintf("synopsis stale: %.0f%% of the rows changed since it was built",
                        100.0 * static_cast<double>(changed) / static_cast<double>(std::max<int64>(1, ts->rows_built)));
    return nullptr;
}
