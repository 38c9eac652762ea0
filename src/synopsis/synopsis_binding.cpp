// Who a table synopsis answers, and who may be told its name
// (synopsis_table.h; docs/aqp.md "Whose synopsis answers a query").
//
// A synopsis decides the answers of the queries it answers, so only roles
// the table's owner already trusts with the table may bind one for
// everybody: its owner and roles with its privileges (superusers
// included). Any other role's synopsis answers that role only. The name
// rule mirrors the row-level-security policy of approx_gpu.synopses.
#include "synopsis/synopsis.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "utils/acl.h"
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
