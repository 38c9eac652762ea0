// A table's version (issue 39 item 3): what proves that a copy of its rows
// read earlier -- a session's kept read, the GPU service's resident columns,
// a count over the table -- holds exactly the rows any snapshot sees now.
//   - written once (a synopsis' sample relation: only a build writes it,
//     and a build makes a new relation): its storage (relfilenode) and size;
//   - any other plain table: every page all-visible (the visibility map),
//     and the same storage, size and VACUUM history (count and time of the
//     last VACUUM and autovacuum, read fresh from the shared statistics),
//     with no VACUUM or ANALYZE running (ShareUpdateExclusiveLock free).
//     INSERT, UPDATE and DELETE clear their page's all-visible bit and only
//     VACUUM sets it again (COPY FREEZE writes into new storage), so the rows
//     are those of the copy, all visible to every snapshot. None during
//     recovery, with track_counts off (VACUUM then reports nothing), or for
//     anything but a plain table.
#pragma once

extern "C" {
#include "postgres.h"

#include "storage/relfilenode.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

struct RelationVersion {
    uint32 magic;
    Oid database, relid;
    RelFileNode node;
    BlockNumber blocks;
    int32 pad;
    int64 vacuums;
    TimestampTz vacuumed, autovacuumed;
};

// rel's version (zeroed padding: compare and hash it as bytes); false: no
// version proves its rows. The caller holds a lock on rel.
bool relation_version(Relation rel, bool written_once, RelationVersion* v);
