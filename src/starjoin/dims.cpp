// The star join's shape at planning (starjoin/starjoin_glue.h): the scan /
// join relation under the grouping is the sample relation (the fact) alone
// or joined by inner joins to up to kMaxDims plain tables (the dimensions),
// each by one equality fact.fk = dim.key of integer or date columns on a key
// a unique index covers (relation_has_unique_index_for, as join removal
// proves a join cannot repeat rows). The equality is an equivalence class of
// the two Vars (the planner keeps mergejoinable equalities there, not in
// joininfo; a constant in the class only adds base quals, which stay in
// baserestrictinfo). A dimension's base quals become its filter program;
// the other join clauses (joininfo) a fact filter reading the dimensions'
// outputs. No security quals, no row-level security on a dimension, no
// partitioned, foreign or inheritance parents, no outer / semi / anti join.
// The range-table entries stay in the plan: the executor checks the
// caller's privileges on them as for the plan the node replaces.
#include "starjoin/starjoin_glue.h"

extern "C" {
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "access/stratnum.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
}

namespace sj = approx::starjoin;

static bool key_type(Oid t) { return t == INT2OID || t == INT4OID || t == INT8OID || t == DATEOID; }

// The rel's quals as clauses; false: a security-barrier qual.
static bool base_quals(RelOptInfo* rel, List** out) {
    ListCell* lc;
    foreach (lc, rel->baserestrictinfo) {
        RestrictInfo* ri = static_cast<RestrictInfo*>(lfirst(lc));
        if (ri->security_level > 0) return false;
        *out = lappend(*out, ri->clause);
    }
    return true;
}

// The dimension's key Var (of varno) and the fact's Var it equals, from the
// equivalence classes; or a reason.
struct KeyJoin {
    Index varno;
    Var* fk;
    Var* key;
    EquivalenceClass* ec;
};
static const char* find_keys(PlannerInfo* root, RelOptInfo* input_rel, Index fact, KeyJoin* joins, int n) {
    ListCell* lc;
    foreach (lc, root->eq_classes) {
        EquivalenceClass* ec = static_cast<EquivalenceClass*>(lfirst(lc));
        if (ec->ec_has_volatile || ec->ec_broken || ec->ec_below_outer_join) continue;
        Relids rels = nullptr;
        ListCell* mc;
        foreach (mc, ec->ec_members) {
            EquivalenceMember* em = static_cast<EquivalenceMember*>(lfirst(mc));
            if (!em->em_is_child && !em->em_is_const) rels = bms_union(rels, em->em_relids);
        }
        if (bms_num_members(rels) < 2) continue;  // no join
        if (!bms_is_subset(rels, input_rel->relids)) return "an equality with another query level";
        if (!bms_is_member(static_cast<int>(fact), rels)) {
            // c_region = 'ASIA' AND s_region = 'ASIA': each a base qual of its
            // own dimension (generate_base_implied_equalities_const), no join
            if (ec->ec_has_const) continue;
            return "a join between two dimensions";
        }
        Var* fk = nullptr;
        foreach (mc, ec->ec_members) {
            EquivalenceMember* em = static_cast<EquivalenceMember*>(lfirst(mc));
            if (em->em_is_child || em->em_is_const) continue;
            Node* e = reinterpret_cast<Node*>(em->em_expr);
            if (!IsA(e, Var) || reinterpret_cast<Var*>(e)->varattno <= 0 || reinterpret_cast<Var*>(e)->varlevelsup != 0)
                return "a join on an expression";
            Var* v = reinterpret_cast<Var*>(e);
            if (!key_type(v->vartype)) return psprintf("a join on a column of type %s", format_type_be(v->vartype));
            if (static_cast<Index>(v->varno) == fact && fk == nullptr) fk = v;
        }
        if (fk == nullptr) return "a join on an expression";
        foreach (mc, ec->ec_members) {
            EquivalenceMember* em = static_cast<EquivalenceMember*>(lfirst(mc));
            if (em->em_is_child || em->em_is_const) continue;
            Var* v = reinterpret_cast<Var*>(em->em_expr);
            if (static_cast<Index>(v->varno) == fact) continue;
            if ((v->vartype == DATEOID) != (fk->vartype == DATEOID)) return "a join of a date to an integer";
            for (int d = 0; d < n; ++d) {
                if (joins[d].varno != static_cast<Index>(v->varno)) continue;
                if (joins[d].ec == ec) break;  // a second Var of the dimension: equal by its base quals
                if (joins[d].key != nullptr) return "two equalities between the fact and a dimension";
                joins[d].key = v;
                joins[d].fk = fk;
                joins[d].ec = ec;
            }
        }
    }
    return nullptr;
}

// Does a unique index of the dimension (not partial, immediate) make its
// key unique?
static bool key_unique(PlannerInfo* root, RelOptInfo* rel, const KeyJoin& j) {
    Oid family = InvalidOid;
    ListCell* lc;
    foreach (lc, j.ec->ec_opfamilies) {
        Oid f = lfirst_oid(lc);
        if (get_op_opfamily_strategy(get_opfamily_member(f, j.key->vartype, j.key->vartype, BTEqualStrategyNumber), f) ==
            BTEqualStrategyNumber)
            family = f;
    }
    if (!OidIsValid(family)) return false;
    const Oid eq = get_opfamily_member(family, j.key->vartype, j.key->vartype, BTEqualStrategyNumber);
    return OidIsValid(eq) && relation_has_unique_index_for(root, rel, NIL, list_make1(j.key), list_make1_oid(eq));
}

const char* starjoin_recognise_join(PlannerInfo* root, RelOptInfo* input_rel, Oid sample, StarJoinSpec* spec,
                                    List** quals) {
    if (input_rel->reloptkind != RELOPT_BASEREL && input_rel->reloptkind != RELOPT_JOINREL)
        return "a relation other than tables";
    if (root->join_info_list != NIL) return "an outer, semi or anti join";
    if (bms_num_members(input_rel->relids) > 1 + sj::kMaxDims) return "more dimensions than the star join takes";
    Index fact = 0;
    KeyJoin joins[sj::kMaxDims];
    int n = 0;
    int x = -1;
    while ((x = bms_next_member(input_rel->relids, x)) >= 0) {
        RelOptInfo* rel = root->simple_rel_array[x];
        RangeTblEntry* rte = planner_rt_fetch(x, root);
        if (rel == nullptr || rel->reloptkind != RELOPT_BASEREL || rte->rtekind != RTE_RELATION)
            return "a join with something other than a table";
        if (rte->relid != sample && check_enable_rls(rte->relid, rte->checkAsUser, true) == RLS_ENABLED)
            return "a dimension with row-level security";
        if (rte->securityQuals != NIL) return "a security qual";
        if (rte->relid == sample && fact == 0) {
            fact = static_cast<Index>(x);
            continue;
        }
        if (rte->relid == sample) return "the sample joined to itself";
        if (rte->relkind != RELKIND_RELATION || rte->inh || rte->tablesample != nullptr)
            return "a dimension that is not a plain table";
        joins[n].varno = static_cast<Index>(x);
        joins[n].fk = joins[n].key = nullptr;
        joins[n].ec = nullptr;
        ++n;
    }
    if (fact == 0) return "the aggregates read another relation";
    const char* why = find_keys(root, input_rel, fact, joins, n);
    if (why != nullptr) return why;
    RelOptInfo* fact_rel = root->simple_rel_array[fact];
    spec->fact_varno = fact;
    spec->stratum_attno = fact_rel->max_attr;  // the sample relation's last column
    if (!base_quals(fact_rel, quals)) return "a security-barrier qual";
    // The join clauses other than the keys' (their equivalence classes):
    // a fact filter reading the dimensions' outputs.
    List* seen = NIL;
    x = -1;
    while ((x = bms_next_member(input_rel->relids, x)) >= 0) {
        ListCell* lc;
        foreach (lc, root->simple_rel_array[x]->joininfo) {
            RestrictInfo* ri = static_cast<RestrictInfo*>(lfirst(lc));
            if (list_member_ptr(seen, ri)) continue;
            seen = lappend(seen, ri);
            if (ri->security_level > 0) return "a security-barrier qual";
            if (!bms_is_subset(ri->required_relids, input_rel->relids)) return "a join clause with another relation";
            *quals = lappend(*quals, ri->clause);
        }
    }
    spec->dims = NIL;
    for (int d = 0; d < n; ++d) {
        RelOptInfo* rel = root->simple_rel_array[joins[d].varno];
        if (joins[d].key == nullptr) return "a dimension joined other than by fact.fk = dim.key";
        if (!key_unique(root, rel, joins[d])) return "a dimension joined on a column without a unique index";
        List* dq = NIL;
        if (!base_quals(rel, &dq)) return "a security-barrier qual";
        RangeTblEntry* rte = planner_rt_fetch(joins[d].varno, root);
        spec->dims = lappend(spec->dims, list_make5(makeInteger(static_cast<int>(joins[d].varno)),
                                                    makeInteger(static_cast<int>(rte->relid)), joins[d].fk, joins[d].key,
                                                    dq));
    }
    return nullptr;
}
