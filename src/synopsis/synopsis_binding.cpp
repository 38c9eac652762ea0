// Who a table synopsis answers, who may be told its name, and which
// columns its design follows (synopsis_table.h; docs/aqp.md "Security").
//
// A synopsis decides the answers of the queries it answers, so only roles
// the table's owner already trusts with the table may bind one for
// everybody: its owner and roles with its privileges (superusers
// included). Any other role's synopsis answers that role only. The name
// rule mirrors the row-level-security policy of approx_gpu.synopses.
#include "synopsis/synopsis.h"

extern "C" {
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_partitioned_table.h"
#include "miscadmin.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

bool table_synopsis_binds(Oid relid, Oid owner) {
    Oid towner = synopsis_glue::relation_owner(relid);
    return OidIsValid(towner) && has_privs_of_role(owner, towner);
}

bool table_synopsis_answers(Oid relid, Oid owner, Oid role) {
    if (role == owner) return true;
    // A role with the builder's privileges through membership (not merely
    // as a superuser, who has every role's: a superuser's queries are not
    // answered by whatever any role built).
    if (is_member_of_role_nosuper(role, owner) && has_privs_of_role(role, owner)) return true;
    return table_synopsis_binds(relid, owner);
}

bool table_synopsis_visible(Oid relid, Oid owner, Oid role) {
    if (has_privs_of_role(role, owner)) return true;
    Oid towner = synopsis_glue::relation_owner(relid);
    return OidIsValid(towner) && has_privs_of_role(role, towner);
}

const char* table_synopsis_shown_name(Oid relid, Oid owner, const char* name, Oid role) {
    return table_synopsis_visible(relid, owner, role) ? name : "(a synopsis of the table's owner)";
}

const char* table_synopsis_phrase(Oid relid, Oid owner, const char* name, Oid role) {
    return table_synopsis_visible(relid, owner, role) ? psprintf("synopsis %s", name)
                                                      : "the synopsis of the table's owner";
}

// ---- which columns a synopsis' design follows (docs/aqp.md "Security") ----------------

bool table_column_readable(Oid relid, AttrNumber att, Oid role) {
    return pg_class_aclcheck(relid, role, ACL_SELECT) == ACLCHECK_OK ||
           pg_attribute_aclcheck(relid, att, role, ACL_SELECT) == ACLCHECK_OK;
}

namespace {

// pg_class.relnatts of relid (0: gone).
AttrNumber relation_natts(Oid relid) {
    HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tup)) return 0;
    AttrNumber n = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relnatts;
    ReleaseSysCache(tup);
    return n;
}

// Column `att` of member (a partitioned table of relid's tree, its own
// numbering) as relid's column, when role may not SELECT it there
// (partitions have their parent's columns by name); 0 = the whole row.
AttrNumber hidden_in_root(Oid relid, Oid member, AttrNumber att, Oid role) {
    if (att == 0) {  // a whole-row reference in a key expression: every column
        for (AttrNumber a = 1; a <= relation_natts(relid); ++a) {
            char* name = get_attname(relid, a, true);  // nullptr: dropped
            if (name != nullptr && !table_column_readable(relid, a, role)) return a;
        }
        return InvalidAttrNumber;
    }
    char* name = get_attname(member, att, true);
    AttrNumber a = name != nullptr ? get_attnum(relid, name) : InvalidAttrNumber;
    return a > 0 && !table_column_readable(relid, a, role) ? a : InvalidAttrNumber;
}

}  // namespace

AttrNumber leaf_strata_hidden(Oid relid, Oid role) {
    if (pg_class_aclcheck(relid, role, ACL_SELECT) == ACLCHECK_OK) return InvalidAttrNumber;
    if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)  // an inheritance parent: tableoid tells the child
        return has_subclass(relid) && pg_attribute_aclcheck(relid, TableOidAttributeNumber, role, ACL_SELECT) != ACLCHECK_OK
                   ? TableOidAttributeNumber
                   : InvalidAttrNumber;
    // Every partitioned level: a sub-partition's leaves are strata too.
    List* members = find_all_inheritors(relid, NoLock, nullptr);
    ListCell* lc;
    foreach (lc, members) {
        const Oid member = lfirst_oid(lc);
        HeapTuple tup = SearchSysCache1(PARTRELID, ObjectIdGetDatum(member));
        if (!HeapTupleIsValid(tup)) continue;  // not partitioned
        Form_pg_partitioned_table key = reinterpret_cast<Form_pg_partitioned_table>(GETSTRUCT(tup));
        AttrNumber hidden = InvalidAttrNumber;
        for (int i = 0; i < key->partnatts && hidden == InvalidAttrNumber; ++i)
            if (key->partattrs.values[i] != 0) hidden = hidden_in_root(relid, member, key->partattrs.values[i], role);
        bool isnull;
        Datum exprs = SysCacheGetAttr(PARTRELID, tup, Anum_pg_partitioned_table_partexprs, &isnull);
        if (hidden == InvalidAttrNumber && !isnull) {
            Bitmapset* vars = nullptr;
            pull_varattnos(static_cast<Node*>(stringToNode(TextDatumGetCString(exprs))), 1, &vars);
            for (int x = -1; (x = bms_next_member(vars, x)) >= 0 && hidden == InvalidAttrNumber;)
                hidden = hidden_in_root(relid, member, x + FirstLowInvalidHeapAttributeNumber, role);
        }
        ReleaseSysCache(tup);
        if (hidden != InvalidAttrNumber) return hidden;
    }
    return InvalidAttrNumber;
}

const char* table_synopsis_hidden_design(const TableSynopsis* ts, Oid role, const char* phrase) {
    if (pg_class_aclcheck(ts->relid, role, ACL_SELECT) == ACLCHECK_OK) return nullptr;
    AttrNumber hidden = InvalidAttrNumber;
    const char* what = nullptr;
    auto stratifies = [&](int j) {
        for (int s = 0; s < ts->n_stratify; ++s)
            if (ts->stratify[s] == j) return true;
        return false;
    };
    for (int s = 0; s < ts->n_stratify && hidden == InvalidAttrNumber; ++s)
        if (!table_column_readable(ts->relid, ts->attnum[ts->stratify[s]], role)) {
            hidden = ts->attnum[ts->stratify[s]];
            what = "a stratify column";
        }
    // census => true: the synopsis' numeric columns that are not stratify
    // columns (build_table_synopsis). The default: every numeric column its
    // builder could read, i.e. the sample relation's (it decides from all of
    // them); it took a census where an unstratified synopsis of a plain
    // table has strata, and may have where a parent's has (its leaves are
    // strata anyway: counted as taken).
    const auto census = static_cast<synopsis_glue::CensusMode>(ts->census);
    if (census == synopsis_glue::CensusMode::On)
        for (int j = 0; j < ts->d && hidden == InvalidAttrNumber; ++j)
            if (ts->encoding[j] == ValueEncoding::Number && !stratifies(j) &&
                !table_column_readable(ts->relid, ts->attnum[j], role)) {
                hidden = ts->attnum[j];
                what = "a census measure";
            }
    if (census == synopsis_glue::CensusMode::Auto && ts->n_stratify == 0 && ts->model.n_strata > 0) {
        const int n = OidIsValid(ts->sample_relid) ? ts->sample_natts : relation_natts(ts->relid);
        for (int k = 0; k < n && hidden == InvalidAttrNumber; ++k) {
            const AttrNumber a = OidIsValid(ts->sample_relid) ? ts->sample_attnum[k] : static_cast<AttrNumber>(k + 1);
            const Oid type = OidIsValid(ts->sample_relid) ? get_atttype(ts->sample_relid, static_cast<AttrNumber>(k + 1))
                                                           : get_atttype(ts->relid, a);
            if (synopsis_glue::is_measure_type(type) && !table_column_readable(ts->relid, a, role)) {
                hidden = a;
                what = "a census candidate";
            }
        }
    }
    if (hidden == InvalidAttrNumber && (hidden = leaf_strata_hidden(ts->relid, role)) != InvalidAttrNumber)
        what = hidden < 0 ? "its strata per child table" : "the partition key of its per-partition strata";
    if (hidden == InvalidAttrNumber) return nullptr;
    const char* col = get_attname(ts->relid, hidden, true);
    return psprintf("%s follows column %s (%s), which role %s may not SELECT", phrase, col ? col : "?", what,
                    GetUserNameFromId(role, false));
}
