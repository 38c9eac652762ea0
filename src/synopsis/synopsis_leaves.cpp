// The leaves of a table synopsis build (synopsis_build.h): the relation
// itself, or every member with storage of a partitioned table or an
// inheritance parent, each with the map of its rows to the parent's layout
// (the relation reader reads them all: synopsis_strata.cpp).
#include "synopsis/synopsis_build.h"

extern "C" {
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace synopsis_glue {

// The members as ANALYZE of a parent finds them (acquire_inherited_sample_rows,
// commands/analyze.c): find_all_inheritors locks each, partitioned members
// hold no rows, a leaf's rows are converted to the parent's layout by column
// name (convert_tuples_by_name, access/common/tupconvert.c). A parent of a
// relkind with rows keeps its own rows (inheritance). Foreign and temporary
// leaves are refused: the synopsis would not hold their rows for every session.
void open_leaves(Leaves* l, Relation rel, const char* relname, const char* fn) {
    memset(l, 0, sizeof *l);
    const Oid relid = RelationGetRelid(rel);
    const bool partitioned = rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
    List* members = partitioned || has_subclass(relid) ? find_all_inheritors(relid, AccessShareLock, nullptr) : NIL;
    l->relid = relid;
    l->parent = partitioned || list_length(members) > 1;
    if (!l->parent) {
        l->n = 1;
        l->rels = static_cast<Relation*>(palloc(sizeof(Relation)));
        l->maps = static_cast<TupleConversionMap**>(palloc0(sizeof(TupleConversionMap*)));
        l->rels[0] = rel;
        return;
    }
    l->members = members;
    l->rels = static_cast<Relation*>(palloc(sizeof(Relation) * list_length(members)));
    l->maps = static_cast<TupleConversionMap**>(palloc0(sizeof(TupleConversionMap*) * list_length(members)));
    ListCell* lc;
    foreach (lc, members) {
        Oid oid = lfirst_oid(lc);
        Relation leaf = oid == relid ? rel : table_open(oid, NoLock);  // locked by find_all_inheritors
        char kind = leaf->rd_rel->relkind;
        if (kind == RELKIND_PARTITIONED_TABLE) {
            if (leaf != rel) table_close(leaf, NoLock);
            continue;
        }
        if (kind == RELKIND_FOREIGN_TABLE || leaf->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: %s of %s is a %s; a synopsis of the parent needs every leaf to be a table of "
                                   "its own database, the same for every session",
                                   fn, RelationGetRelationName(leaf), relname,
                                   kind == RELKIND_FOREIGN_TABLE ? "foreign table" : "temporary table")));
        if (kind != RELKIND_RELATION)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: %s of %s is not a table", fn, RelationGetRelationName(leaf), relname)));
        if (leaf != rel)
            l->maps[l->n] = convert_tuples_by_name(RelationGetDescr(leaf), RelationGetDescr(rel));
        l->rels[l->n++] = leaf;
    }
}

void close_leaves(Leaves* l, Relation rel) {
    for (int i = 0; i < l->n; ++i)
        if (l->rels[i] != rel) table_close(l->rels[i], NoLock);  // locks are kept until the end of the transaction
    l->n = 0;
}

}  // namespace synopsis_glue
