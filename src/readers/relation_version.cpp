// A table's version (readers/relation_version.h).
#include "readers/relation_version.h"

extern "C" {
#include "access/visibilitymap.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/pgstat_internal.h"
}

// The VACUUM history of rel from the shared statistics -- not the
// transaction's cached snapshot of them: a VACUUM of another session during
// this transaction must show.
static void vacuum_history(Relation rel, RelationVersion* v) {
    const Oid db = rel->rd_rel->relisshared ? InvalidOid : MyDatabaseId;
    PgStat_EntryRef* ref = pgstat_get_entry_ref(PGSTAT_KIND_RELATION, db, RelationGetRelid(rel), false, nullptr);
    if (ref == nullptr) return;  // no entry: never vacuumed since the statistics began
    pgstat_lock_entry_shared(ref, false);
    const PgStat_StatTabEntry& s = reinterpret_cast<PgStatShared_Relation*>(ref->shared_stats)->stats;
    v->vacuums = s.vacuum_count + s.autovac_vacuum_count;
    v->vacuumed = s.vacuum_timestamp;
    v->autovacuumed = s.autovac_vacuum_timestamp;
    pgstat_unlock_entry(ref);
}

bool relation_version(Relation rel, bool written_once, RelationVersion* v) {
    memset(v, 0, sizeof *v);
    v->magic = 0x56544a53u;  // "SJTV"
    v->database = MyDatabaseId;
    v->relid = RelationGetRelid(rel);
    if (rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_MATVIEW) return false;
    v->node = rel->rd_node;
    v->blocks = RelationGetNumberOfBlocks(rel);
    if (written_once) return true;
    if (RecoveryInProgress() || !pgstat_track_counts) return false;
    if (v->blocks > 0) {
        BlockNumber all_visible = 0, all_frozen = 0;
        visibilitymap_count(rel, &all_visible, &all_frozen);
        if (all_visible < v->blocks) return false;
    }
    // A VACUUM that is running may have set bits it has not reported yet.
    if (!ConditionalLockRelationOid(v->relid, ShareUpdateExclusiveLock)) return false;
    UnlockRelationOid(v->relid, ShareUpdateExclusiveLock);
    vacuum_history(rel, v);
    return true;
}
