// The group domain of a GROUP BY over the sample (sample/plan.h): when
// every group key is an expression over one other table of the query (a
// dimension, read in full), the groups the query can return are among the
// combinations of those tables' key values that pass each table's own
// conditions. Their number is an upper bound on the groups; a sample that
// saw far fewer may have missed groups that it had no way to see: the case
// Chao1 is blind to, one dominant group seen many times and the rare ones
// never (docs/aqp.md, "Missing groups").
//
// Planning writes the bound as SQL text, one `count(*)` of DISTINCT keys per
// table, every name qualified (deparsed with only pg_catalog on the search
// path, as ri_triggers.c builds its queries); the node runs it through SPI
// with the statement's snapshot and parameters and pg_catalog, pg_temp as
// the search path.
#include "aqp/sample/plan.h"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/transam.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "access/table.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "utils/plancache.h"
}

#include "readers/relation_version.h"

namespace {

// The one range-table index every Var of `node` names (0: none, -1: more
// than one, or something the bound cannot use: an outer Var, a sublink, an
// executor parameter, an aggregate, a volatile function). A statement's own
// parameters ($n of a generic plan) are passed to the count as they are.
struct VarsOf {
    int rti;
};

bool vars_walker(Node* node, VarsOf* c) {
    if (node == nullptr) return false;
    if (IsA(node, Var)) {
        Var* v = reinterpret_cast<Var*>(node);
        if (v->varlevelsup != 0 || (c->rti != 0 && c->rti != static_cast<int>(v->varno))) return (c->rti = -1, true);
        c->rti = static_cast<int>(v->varno);
        return false;
    }
    if (IsA(node, Param) && reinterpret_cast<Param*>(node)->paramkind == PARAM_EXTERN) return false;
    if (IsA(node, SubLink) || IsA(node, Param) || IsA(node, Aggref) || IsA(node, GroupingFunc) ||
        IsA(node, WindowFunc) || IsA(node, PlaceHolderVar))
        return (c->rti = -1, true);
    return expression_tree_walker(node, walker(vars_walker), c);
}

int only_table_of(Node* node) {
    VarsOf c{0};
    vars_walker(node, &c);
    if (c.rti > 0 && contain_volatile_functions(node)) return -1;
    return c.rti;
}

// Does `node` call a function that is not built in (a user's function,
// operator, cast or type I/O), or check a domain (its CHECK runs whatever
// it says)? The bound evaluates its keys and conditions on rows the query
// may never evaluate them on (dimension rows no fact joins): only built-in
// functions are known to do nothing there but compute or raise a data
// exception, which the count survives (aqp_sample_domain_groups).
bool user_function_checker(Oid fn, void*) { return fn >= FirstNormalObjectId; }
bool calls_user_code(Node* node, void* context) {
    if (node == nullptr) return false;
    if (IsA(node, CoerceToDomain)) return true;
    if (check_functions_in_node(node, user_function_checker, context)) return true;
    return expression_tree_walker(node, walker(calls_user_code), context);
}

// The tables joined by inner joins at the top of the join tree, and the
// conditions written there (WHERE and inner JOIN ... ON).
void inner_tables(Node* n, Bitmapset** rels, List** quals) {
    if (n == nullptr) return;
    if (IsA(n, RangeTblRef)) {
        *rels = bms_add_member(*rels, reinterpret_cast<RangeTblRef*>(n)->rtindex);
    } else if (IsA(n, FromExpr)) {
        FromExpr* f = reinterpret_cast<FromExpr*>(n);
        ListCell* lc;
        foreach (lc, f->fromlist) inner_tables(static_cast<Node*>(lfirst(lc)), rels, quals);
        if (f->quals != nullptr) *quals = list_concat(*quals, make_ands_implicit(reinterpret_cast<Expr*>(f->quals)));
    } else if (IsA(n, JoinExpr) && reinterpret_cast<JoinExpr*>(n)->jointype == JOIN_INNER) {
        JoinExpr* j = reinterpret_cast<JoinExpr*>(n);
        inner_tables(j->larg, rels, quals);
        inner_tables(j->rarg, rels, quals);
        if (j->quals != nullptr) *quals = list_concat(*quals, make_ands_implicit(reinterpret_cast<Expr*>(j->quals)));
    }
    // other joins: their tables are not counted (a key there leaves no bound)
}

// `e` over table rti alone, deparsed with its columns prefixed by `alias`.
char* deparse_as(Node* e, int rti, RangeTblEntry* rte, const char* alias) {
    Node* c = static_cast<Node*>(copyObjectImpl(e));
    ChangeVarNodes(c, rti, 1, 0);
    return deparse_expression(c, deparse_context_for(alias, rte->relid), true, false);
}

void append_table(StringInfo sql, RangeTblEntry* rte, const char* alias) {
    appendStringInfo(sql, "%s%s AS %s", rte->inh ? "" : "ONLY ",
                     quote_qualified_identifier(get_namespace_name(get_rel_namespace(rte->relid)),
                                                get_rel_name(rte->relid)),
                     alias);
}

// The conditions on table rti alone, each as " AND (...)".
void append_own_quals(StringInfo sql, List* quals, int rti, RangeTblEntry* rte, const char* alias) {
    ListCell* qc;
    foreach (qc, quals) {
        Node* c = static_cast<Node*>(lfirst(qc));
        // a condition of user code is left out (the bound stays an upper bound)
        if (only_table_of(c) == rti && !calls_user_code(c, nullptr))
            appendStringInfo(sql, " AND (%s)", deparse_as(c, rti, rte, alias));
    }
}

// A table whose rows the bound may read as the caller, as the query does.
bool readable_as_caller(RangeTblEntry* rte) {
    return rte->rtekind == RTE_RELATION && !OidIsValid(rte->checkAsUser) && rte->securityQuals == NIL;
}

Var* plain_var(Node* n) {
    while (n != nullptr && IsA(n, RelabelType)) n = reinterpret_cast<Node*>(reinterpret_cast<RelabelType*>(n)->arg);
    if (n == nullptr || !IsA(n, Var)) return nullptr;
    Var* v = reinterpret_cast<Var*>(n);
    return v->varlevelsup == 0 && v->varattno > 0 ? v : nullptr;
}

// "a.col OPERATOR(nsp.op) b.col" for a condition `x op y` between table rti
// and another inner table (not the sampled one); *other: that table. Such a
// condition holds for every row of the answer, so each key row must have a
// partner there passing that table's own conditions: EXISTS keeps the bound
// an upper bound (a dimension's hierarchy: nation -> region).
const char* join_condition(Node* qual, int rti, Index sampled, const Bitmapset* rels, List* rtable, int* other) {
    if (!IsA(qual, OpExpr) || list_length(reinterpret_cast<OpExpr*>(qual)->args) != 2) return nullptr;
    OpExpr* op = reinterpret_cast<OpExpr*>(qual);
    Var* l = plain_var(static_cast<Node*>(linitial(op->args)));
    Var* r = plain_var(static_cast<Node*>(lsecond(op->args)));
    if (l == nullptr || r == nullptr || (static_cast<int>(l->varno) == rti) == (static_cast<int>(r->varno) == rti))
        return nullptr;
    int o = static_cast<int>(static_cast<int>(l->varno) == rti ? r->varno : l->varno);
    if (o == static_cast<int>(sampled) || !bms_is_member(o, rels) || !readable_as_caller(rt_fetch(o, rtable)))
        return nullptr;
    if (contain_volatile_functions(qual) || calls_user_code(qual, nullptr)) return nullptr;
    *other = o;
    auto col = [&](Var* v) {
        return psprintf("%s.%s", static_cast<int>(v->varno) == rti ? "approx_d" : "approx_e",
                        quote_identifier(get_attname(rt_fetch(v->varno, rtable)->relid, v->varattno, false)));
    };
    HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(op->opno));
    if (!HeapTupleIsValid(tup)) return nullptr;
    Form_pg_operator form = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tup));
    const char* name = psprintf("%s.%s", quote_identifier(get_namespace_name(form->oprnamespace)),
                                NameStr(form->oprname));
    ReleaseSysCache(tup);
    return psprintf("%s OPERATOR(%s) %s", col(l), name, col(r));
}

}  // namespace

char* aqp_sample_domain_sql(Query* q, Index sampled_rti) {
    if (q->groupClause == NIL || q->groupingSets != NIL) return nullptr;
    Bitmapset* rels = nullptr;
    List* quals = NIL;
    inner_tables(reinterpret_cast<Node*>(q->jointree), &rels, &quals);
    // Every key over one inner table that is not the sampled one.
    List* keys = get_sortgrouplist_exprs(q->groupClause, q->targetList);
    List* key_rti = NIL;
    Bitmapset* dims = nullptr;
    ListCell* lc;
    foreach (lc, keys) {
        int r = only_table_of(static_cast<Node*>(lfirst(lc)));
        if (r <= 0 || r == static_cast<int>(sampled_rti) || !bms_is_member(r, rels)) return nullptr;
        // A key of user code has no bound: it would run on rows no fact
        // joins, where what it does (raise, write) is unknown.
        if (calls_user_code(static_cast<Node*>(lfirst(lc)), nullptr)) return nullptr;
        RangeTblEntry* rte = rt_fetch(r, q->rtable);
        // A table read through a view is read with its owner's rights: the
        // bound would need them; RLS of the caller applies to both alike.
        if (!readable_as_caller(rte)) return nullptr;
        key_rti = lappend_int(key_rti, r);
        dims = bms_add_member(dims, r);
    }
    // DISTINCT compares the keys with their GROUP BY operators: built-in ones only.
    foreach (lc, q->groupClause) {
        const SortGroupClause* sgc = static_cast<const SortGroupClause*>(lfirst(lc));
        if ((OidIsValid(sgc->eqop) && get_opcode(sgc->eqop) >= FirstNormalObjectId) ||
            (OidIsValid(sgc->sortop) && get_opcode(sgc->sortop) >= FirstNormalObjectId))
            return nullptr;
    }
    // Names and operators come out qualified where pg_catalog alone would
    // not find them (ruleutils.c qualifies what the search path does not see).
    OverrideSearchPath path{NIL, true, false};
    PushOverrideSearchPath(&path);
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfoString(&sql, "SELECT 1::float8");
    int r = -1;
    while ((r = bms_next_member(dims, r)) >= 0) {
        RangeTblEntry* rte = rt_fetch(r, q->rtable);
        appendStringInfoString(&sql, " * (SELECT count(*) FROM (SELECT DISTINCT ");
        bool first = true;
        ListCell* lc2;
        forboth(lc, keys, lc2, key_rti) {
            if (lfirst_int(lc2) != r) continue;
            appendStringInfo(&sql, "%s(%s)", first ? "" : ", ",
                             deparse_as(static_cast<Node*>(lfirst(lc)), r, rte, "approx_d"));
            first = false;
        }
        appendStringInfoString(&sql, " FROM ");
        append_table(&sql, rte, "approx_d");
        appendStringInfoString(&sql, " WHERE true");
        // Its own conditions; a join condition to another inner table as an
        // EXISTS over that table's own conditions; the rest is left out (the
        // bound stays an upper bound).
        append_own_quals(&sql, quals, r, rte, "approx_d");
        ListCell* qc;
        foreach (qc, quals) {
            int o = 0;
            const char* cond = join_condition(static_cast<Node*>(lfirst(qc)), r, sampled_rti, rels, q->rtable, &o);
            if (cond == nullptr) continue;
            RangeTblEntry* orte = rt_fetch(o, q->rtable);
            appendStringInfoString(&sql, " AND EXISTS (SELECT 1 FROM ");
            append_table(&sql, orte, "approx_e");
            appendStringInfo(&sql, " WHERE %s", cond);
            append_own_quals(&sql, quals, o, orte, "approx_e");
            appendStringInfoChar(&sql, ')');
        }
        appendStringInfoString(&sql, ") AS approx_keys)");
    }
    PopOverrideSearchPath();
    return sql.data;
}

// ---- counts kept --------------------------------------------------------------------------
// A count over tables whose versions prove their rows unchanged
// (readers/relation_version.h: every page all-visible, nothing vacuumed
// since) is the same count: the session keeps it, keyed by the SQL, the
// role and every table's version -- when the count reads nothing else: no
// parameters, no function that is not immutable, no row-level security,
// only plain tables. A kept count is used only while the role may still
// read what it counted (the privileges checked as the executor would).
struct KeptCount {
    uint64 key;
    double groups;
};
static KeptCount kept_counts[32];
static int kept_next = 0;

static bool privileges_denied(Node* node, void* arg) {
    if (node == nullptr) return false;
    if (IsA(node, Query)) {
        Query* q = reinterpret_cast<Query*>(node);
        return !ExecCheckRTPerms(q->rtable, false) || query_tree_walker(q, walker(privileges_denied), arg, 0);
    }
    return expression_tree_walker(node, walker(privileges_denied), arg);
}

// The key of the prepared count's answer; 0: nothing proves it unchanged.
static uint64 count_key(const char* sql, SPIPlanPtr plan) {
    List* sources = SPI_plan_get_plan_sources(plan);
    if (list_length(sources) != 1) return 0;
    CachedPlanSource* ps = static_cast<CachedPlanSource*>(linitial(sources));
    Node* queries = reinterpret_cast<Node*>(ps->query_list);
    if (ps->dependsOnRLS || ps->relationOids == NIL || contain_mutable_functions(queries) ||
        privileges_denied(queries, nullptr))
        return 0;
    StringInfoData k;
    initStringInfo(&k);
    const Oid role = GetUserId();
    appendBinaryStringInfo(&k, reinterpret_cast<const char*>(&role), sizeof role);
    appendStringInfoString(&k, sql);
    ListCell* lc;
    foreach (lc, ps->relationOids) {
        Relation rel = table_open(lfirst_oid(lc), AccessShareLock);  // locked by the parse already
        RelationVersion v;
        const bool known = relation_version(rel, false, &v);
        table_close(rel, NoLock);
        if (!known) return 0;
        appendBinaryStringInfo(&k, reinterpret_cast<const char*>(&v), sizeof v);
    }
    uint64 key = hash_bytes_extended(reinterpret_cast<const unsigned char*>(k.data), k.len, 0);
    return key != 0 ? key : 1;
}

// The count through SPI (its search path set for it alone); -1: no answer.
static double count_groups(const char* sql, int n, Oid* types, Datum* values, const char* nulls) {
    int level = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                            0, false);
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "approx aggregate: SPI_connect failed");
    double groups = -1;
    SPIPlanPtr plan = SPI_prepare(sql, n, types);
    if (plan == nullptr) elog(ERROR, "approx aggregate: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
    const uint64 key = n == 0 ? count_key(sql, plan) : 0;
    bool kept = false;
    for (const KeptCount& c : kept_counts)
        if (key != 0 && c.key == key) {
            groups = c.groups;
            kept = true;
        }
    if (!kept && SPI_execute_plan(plan, values, nulls, true, 1) == SPI_OK_SELECT && SPI_processed == 1) {
        bool isnull;
        Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        if (!isnull) groups = DatumGetFloat8(d);
        if (key != 0 && groups >= 0) {
            kept_counts[kept_next] = KeptCount{key, groups};
            kept_next = (kept_next + 1) % static_cast<int>(lengthof(kept_counts));
        }
    }
    SPI_finish();
    AtEOXact_GUC(true, level);
    return groups;
}

double aqp_sample_domain_groups(const char* sql, ParamListInfo params) {
    // The count evaluates the keys on dimension rows the query may never
    // evaluate them on (rows no fact joins): `100 / d.div` where an unjoined
    // row has div = 0 must not fail the query. Its errors are caught in a
    // subtransaction, which parallel mode does not allow: there, no bound
    // (the node counts before ExecutorRun enters parallel mode, where it can).
    if (IsInParallelMode()) return -1;
    // The statement's parameters, as $1..$n of the count (fetched as
    // ExecEvalParamExtern does: a dynamic list fetches on demand).
    int n = params != nullptr ? params->numParams : 0;
    Oid* types = static_cast<Oid*>(palloc(sizeof(Oid) * (n + 1)));
    Datum* values = static_cast<Datum*>(palloc(sizeof(Datum) * (n + 1)));
    char* nulls = static_cast<char*>(palloc(n + 1));
    for (int i = 0; i < n; ++i) {
        ParamExternData buf;
        ParamExternData* p = params->paramFetch != nullptr ? params->paramFetch(params, i + 1, false, &buf)
                                                           : &params->params[i];
        bool known = p != nullptr && OidIsValid(p->ptype);
        types[i] = known ? p->ptype : INT4OID;  // a parameter the count does not use
        values[i] = known ? p->value : 0;
        nulls[i] = known && !p->isnull ? ' ' : 'n';
    }
    elog(DEBUG1, "approx aggregate: the groups the other tables allow: %s", sql);
    // A data exception (class 22: division by zero, a bad cast) means no
    // bound; anything else (a cancel, 55P03 lock not available, 53200 out of
    // memory, ...) is the query's error (PL/pgSQL's exec_stmt_block pattern).
    struct Count {
        const char* sql;
        int n;
        Oid* types;
        Datum* values;
        const char* nulls;
        double groups;
    } call{sql, n, types, values, nulls, -1};
    ErrorData* e = aqp_sample_in_subtransaction(
        [](void* arg) {
            Count* c = static_cast<Count*>(arg);
            c->groups = count_groups(c->sql, c->n, c->types, c->values, c->nulls);
        },
        &call);
    if (e == nullptr) return call.groups;
    if (ERRCODE_TO_CATEGORY(e->sqlerrcode) != ERRCODE_DATA_EXCEPTION) ReThrowError(e);
    elog(DEBUG1, "approx aggregate: no bound on the groups: %s", e->message);
    FreeErrorData(e);
    return -1;
}
