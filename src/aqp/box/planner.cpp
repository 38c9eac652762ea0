// The box path's planner side (aqp/box.h): a create_upper_paths_hook that,
// at UPPERREL_GROUP_AGG, takes a query of the shape the box path answers
// (box/query_shape.cpp) and adds a CustomPath answering it from the most
// recently built fresh synopsis of the table covering every column it
// mentions, among those that may answer the current role
// (table_synopsis_answers: the table owner's and its own). Otherwise it adds
// nothing and records the reason for last_run() ({"answered_from": "rows", ...}).
//
// Mechanics (PostgreSQL 15, optimizer/plan/planner.c): the hook is called at
// the end of create_ordinary_grouping_paths with the scan/join rel as
// input_rel and the grouped rel as output_rel; partitionwise aggregation calls
// it again for child rels (IS_OTHER_REL), which we ignore. The CustomPath's
// child is a fresh AggPath over input_rel's cheapest path (add_path may
// pfree a path already in output_rel once ours dominates it). aqp_box_init
// defines the path's settings and installs the hook.
#include "aqp/box/internal.h"

#include "synopsis/synopsis_table.h"

#include <algorithm>
#include <cmath>

extern "C" {
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "optimizer/cost.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
}


bool aqp_box_path_enabled = true;
int aqp_box_path_max_groups = 16;
int aqp_box_memory_limit_kb = 256 * 1024;
const char* aqp_box_path_reason = nullptr;
static create_upper_paths_hook_type prev_upper_paths_hook = nullptr;

static const char* attname(Oid relid, AttrNumber attno) { return get_attname(relid, attno, false); }

// ---- choosing the synopsis ------------------------------------------------------

static int synopsis_column(const TableSynopsis* ts, AttrNumber attno) {
    for (int j = 0; j < ts->d; ++j)
        if (ts->attnum[j] == attno) return j;
    return -1;
}

// Can value_type be compared with a column of this encoding by converting
// it to the column's doubles?
static const char* encoding_mismatch(const TableSynopsis* ts, int col, const AqpQueryCondition* c, Oid relid) {
    const char* name = attname(relid, c->attno);
    switch (ts->encoding[col]) {
        case ValueEncoding::Dictionary:
            if (c->kind == AQP_COND_CMP && c->strategy != BTEqualStrategyNumber && c->strategy != AQP_STRATEGY_NE)
                return psprintf("range comparison on discrete column %s", name);
            if (ts->atttype[col] == BPCHAROID && c->kind != AQP_COND_IS_NULL && c->kind != AQP_COND_NOT_NULL)
                return psprintf("comparison on char(n) column %s", name);
            return nullptr;
        case ValueEncoding::Number:
            return c->expr == nullptr || aqp_is_number_type(c->value_type)
                       ? nullptr
                       : psprintf("column %s compared with a value of type %s", name, format_type_be(c->value_type));
        case ValueEncoding::Date:
        case ValueEncoding::Timestamp:
            return c->expr == nullptr || c->value_type == DATEOID || c->value_type == TIMESTAMPOID
                       ? nullptr
                       : psprintf("column %s compared with a value of type %s (time zone dependent)", name,
                                  format_type_be(c->value_type));
        case ValueEncoding::TimestampTz:
            return c->expr == nullptr || c->value_type == TIMESTAMPTZOID
                       ? nullptr
                       : psprintf("column %s compared with a value of type %s (time zone dependent)", name,
                                  format_type_be(c->value_type));
    }
    return "unknown column encoding";
}

// GROUP BY takes a column by its type, never by the synopsis' choice of
// smoothing (which the user cannot predict): dictionary columns and whole
// numbers (integers, dates, timestamps); the groups' boxes treat them as exact
// (box/scan_exec.cpp, run_estimates).
bool aqp_group_column_ok(const TableSynopsis* ts, int j) {
    if (ts->encoding[j] == ValueEncoding::Dictionary) return true;
    switch (ts->atttype[j]) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case DATEOID:
        case TIMESTAMPOID:    // integer microseconds: discrete like int8 (a key past
        case TIMESTAMPTZOID:  // 2^53 falls back, synopsis_codec.cpp)
            return true;
        default:
            return false;
    }
}

// nullptr when ts answers the query; else why not.
// reader: the role the table is read as (the RTE's checkAsUser, else role).
static const char* synopsis_unfit(const TableSynopsis* ts, const AqpQueryShape* shape, Oid role, Oid reader) {
    // Reasons name only a synopsis the role may see.
    const char* syn = table_synopsis_phrase(ts->relid, ts->owner, ts->name, role);
    if (ts->unusable != nullptr) return psprintf("%s unusable: %s", syn, ts->unusable);
    // Its census or strata follow a column the reader may not SELECT.
    const char* hidden = table_synopsis_hidden_design(ts, reader, syn);
    if (hidden != nullptr) return hidden;
    ListCell* lc;
    foreach (lc, shape->group_vars) {
        Var* v = static_cast<Var*>(lfirst(lc));
        int j = synopsis_column(ts, v->varattno);
        if (j < 0) return psprintf("column %s not in %s", attname(shape->relid, v->varattno), syn);
        if (!aqp_group_column_ok(ts, j))
            return psprintf("GROUP BY column %s is of type %s (GROUP BY takes bool, text, varchar, enum, integer, "
                            "date and timestamp columns)",
                            attname(shape->relid, v->varattno), format_type_be(ts->atttype[j]));
    }
    foreach (lc, shape->agg_attnos) {
        int j = synopsis_column(ts, static_cast<AttrNumber>(lfirst_int(lc)));
        if (j < 0)
            return psprintf("column %s not in %s",
                            attname(shape->relid, static_cast<AttrNumber>(lfirst_int(lc))), syn);
        if (ts->encoding[j] != ValueEncoding::Number)
            return psprintf("approx_sum / approx_avg of non-number column %s",
                            attname(shape->relid, static_cast<AttrNumber>(lfirst_int(lc))));
    }
    foreach (lc, shape->conds) {
        const AqpQueryCondition* c = static_cast<const AqpQueryCondition*>(lfirst(lc));
        int j = synopsis_column(ts, c->attno);
        if (j < 0) return psprintf("column %s not in %s", attname(shape->relid, c->attno), syn);
        const char* why = encoding_mismatch(ts, j, c, shape->relid);
        if (why != nullptr) return why;
    }
    const char* stale = table_synopsis_staleness(ts);
    if (stale != nullptr) return psprintf("%s: %s", syn, stale);
    return nullptr;
}

// ---- the paths --------------------------------------------------------------------

// A fresh exact aggregation path (the node's child), as
// add_paths_to_grouping_rel builds its simplest ones (planner.c).
static Path* exact_path(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel) {
    Query* parse = root->parse;
    AggClauseCosts costs;
    MemSet(&costs, 0, sizeof costs);
    get_agg_clause_costs(root, AGGSPLIT_SIMPLE, &costs);
    Path* input = input_rel->cheapest_total_path;
    List* having = reinterpret_cast<List*>(parse->havingQual);
    double groups = output_rel->pathlist != NIL ? static_cast<Path*>(linitial(output_rel->pathlist))->rows : 1;
    if (parse->groupClause == NIL)
        return reinterpret_cast<Path*>(create_agg_path(root, output_rel, input, output_rel->reltarget, AGG_PLAIN,
                                                       AGGSPLIT_SIMPLE, NIL, having, &costs, 1));
    if (grouping_is_hashable(parse->groupClause))
        return reinterpret_cast<Path*>(create_agg_path(root, output_rel, input, output_rel->reltarget, AGG_HASHED,
                                                       AGGSPLIT_SIMPLE, parse->groupClause, having, &costs, groups));
    if (!pathkeys_contained_in(root->group_pathkeys, input->pathkeys))
        input = reinterpret_cast<Path*>(create_sort_path(root, output_rel, input, root->group_pathkeys, -1.0));
    return reinterpret_cast<Path*>(create_agg_path(root, output_rel, input, output_rel->reltarget, AGG_SORTED,
                                                   AGGSPLIT_SIMPLE, parse->groupClause, having, &costs, groups));
}

static bool same_column_set(const TableSynopsis* ts, const int* cols, int n) {
    if (ts->n_stratify != n || n == 0) return false;
    for (int i = 0; i < n; ++i) {
        bool found = false;
        for (int k = 0; k < n; ++k) found = found || ts->stratify[k] == cols[i];
        if (!found) return false;
    }
    return true;
}

// The box path's spec for the query (its aggregates come with the plan's
// target list, in plan_aqp_path).
static AqpPlanSpec* box_spec(const AqpQueryShape* shape, const TableSynopsis* ts, List** group_vars) {
    AqpPlanSpec* spec = static_cast<AqpPlanSpec*>(palloc0(sizeof(AqpPlanSpec)));
    spec->kind = AQP_PLAN_BOXES;
    spec->relid = ts->relid;
    spec->owner = ts->owner;
    spec->synopsis = pstrdup(ts->name);
    spec->built = ts->built;
    AqpBoxSpec& b = spec->boxes;
    b.n_cols = ts->d;
    b.attnums = static_cast<AttrNumber*>(palloc(sizeof(AttrNumber) * ts->d));
    for (int j = 0; j < ts->d; ++j) b.attnums[j] = ts->attnum[j];
    b.n_groups = list_length(shape->group_vars);
    b.group_cols = static_cast<int*>(palloc(sizeof(int) * (b.n_groups + 1)));
    ListCell* lc;
    foreach (lc, shape->group_vars)
        b.group_cols[foreach_current_index(lc)] = synopsis_column(ts, static_cast<Var*>(lfirst(lc))->varattno);
    b.groups_are_strata = same_column_set(ts, b.group_cols, b.n_groups);
    b.n_conds = list_length(shape->conds);
    b.conds = static_cast<AqpBoxCondition*>(palloc(sizeof(AqpBoxCondition) * (b.n_conds + 1)));
    foreach (lc, shape->conds) {
        const AqpQueryCondition* c = static_cast<const AqpQueryCondition*>(lfirst(lc));
        int value = -1;
        if (c->expr != nullptr) {
            value = list_length(spec->values);
            spec->values = lappend(spec->values, c->expr);
        }
        b.conds[foreach_current_index(lc)] = {synopsis_column(ts, c->attno), c->kind, c->strategy, value};
    }
    *group_vars = shape->group_vars;
    return spec;
}

// Distinct keys of the group columns among the sample's rows, counted up to
// limit + 1 (NULL is a key, as in GROUP BY).
static int64 sample_group_count(const TableSynopsis* ts, const List* group_vars, int64 limit) {
    const approx::synopsis::Synopsis& s = ts->model;
    int cols[approx::synopsis::kMaxDim];
    int n = 0;
    const ListCell* lc;
    foreach (lc, group_vars) cols[n++] = synopsis_column(ts, static_cast<Var*>(lfirst(lc))->varattno);
    int64 m = s.m;
    int d = s.d;
    int64* idx = static_cast<int64*>(palloc(sizeof(int64) * (m + 1)));
    for (int64 i = 0; i < m; ++i) idx[i] = i;
    auto key = [&](int64 r, int c) {
        double v = s.sample[r * d + cols[c]];
        return std::isnan(v) ? HUGE_VAL : v;  // NULL sorts last, one key
    };
    std::sort(idx, idx + m, [&](int64 a, int64 b) {
        for (int c = 0; c < n; ++c)
            if (key(a, c) != key(b, c)) return key(a, c) < key(b, c);
        return false;
    });
    int64 groups = 0;
    for (int64 i = 0; i < m && groups <= limit; ++i) {
        bool same = i > 0;
        for (int c = 0; c < n && same; ++c) same = key(idx[i], c) == key(idx[i - 1], c);
        groups += !same;
    }
    pfree(idx);
    return groups;
}

static void add_synopsis_path(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel,
                              const AqpQueryShape* shape, const TableSynopsis* ts) {
    Path* child = exact_path(root, input_rel, output_rel);
    List* group_vars;
    List* values;
    List* spec = aqp_plan_spec_form(box_spec(shape, ts, &group_vars), &values);

    CustomPath* cp = makeNode(CustomPath);
    cp->path.pathtype = T_CustomScan;
    cp->path.parent = output_rel;
    cp->path.pathtarget = output_rel->reltarget;
    cp->path.param_info = nullptr;
    cp->path.parallel_aware = false;
    cp->path.parallel_safe = false;  // pins a backend-local synopsis
    cp->path.parallel_workers = 0;
    cp->path.rows = child->rows;
    // Far below the exact plan: the node reads the sample, not the table.
    cp->path.startup_cost = 0.001 * child->startup_cost;
    cp->path.total_cost = 0.001 * child->total_cost;
    cp->path.pathkeys = NIL;
    // No CUSTOMPATH_SUPPORT_PROJECTION: the node's target list stays the
    // grouping target, the child's own, so that its rows can be returned as
    // they are when the node falls back.
    cp->flags = 0;
    cp->custom_paths = list_make1(child);
    cp->custom_private = list_make3(spec, values, group_vars);  // AqpPathSlot
    cp->methods = &aqp_path_methods;
    add_path(output_rel, reinterpret_cast<Path*>(cp));
}

static void aqp_upper_paths(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel, RelOptInfo* output_rel,
                     void* extra) {
    if (prev_upper_paths_hook) prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
    if (stage != UPPERREL_GROUP_AGG) return;
    // Per-partition (partitionwise aggregation) calls: child rels.
    if (IS_OTHER_REL(output_rel) || IS_OTHER_REL(input_rel)) return;
    GroupPathExtraData* gextra = static_cast<GroupPathExtraData*>(extra);
    if (gextra != nullptr && gextra->patype == PARTITIONWISE_AGGREGATE_PARTIAL) return;
    if (!root->parse->hasAggs || !aqp_box_path_enabled) return;  // off: the sample path answers
    if (!aqp_mentions_approx(reinterpret_cast<Node*>(output_rel->reltarget->exprs)) &&
        !aqp_mentions_approx(root->parse->havingQual))
        return;

    AqpQueryShape shape;
    memset(&shape, 0, sizeof shape);
    const char* reason = aqp_recognise_query(root, input_rel, output_rel, &shape);
    if (reason == nullptr) {
        // Row-level security: a synopsis is derived from every row.
        bool env_dependent;
        if (aqp_row_security_applies(planner_rt_fetch(shape.rti, root), &env_dependent))
            reason = "row-level security applies to the table";
        if (env_dependent) root->glob->dependsOnRole = true;
    }
    if (reason == nullptr) {
        const TableSynopsis* const* list;
        int n = table_synopses(shape.relid, &list);
        // Which synopses may answer depends on the role: the plan is replanned
        // for another one, as plans under row-level security are
        // (optimizer/plan/planner.c, utils/cache/plancache.c: dependsOnRole).
        if (n > 0) root->glob->dependsOnRole = true;
        Oid role = GetUserId();
        const RangeTblEntry* rte = planner_rt_fetch(shape.rti, root);
        const Oid reader = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : role;
        const TableSynopsis* chosen = nullptr;
        int candidates = 0;
        for (int i = 0; i < n && chosen == nullptr; ++i) {
            // Another role's synopsis answers only its builder: it behaves as missing.
            if (!table_synopsis_answers(list[i]->relid, list[i]->owner, role)) continue;
            ++candidates;
            const char* why = synopsis_unfit(list[i], &shape, role, reader);
            if (why == nullptr)
                chosen = list[i];
            else if (reason == nullptr)
                reason = why;  // the most recent candidate's reason
        }
        if (candidates == 0) reason = psprintf("no synopsis on table %s", get_rel_name(shape.relid));
        // One box per group, each a pass over the sample: past
        // approx_gpu.box_path_max_groups groups the sample path (one pass
        // for all groups) answers instead, where the synopsis has a sample
        // relation and the hook plans (docs/aqp.md, "Many groups").
        if (chosen != nullptr && shape.group_vars != NIL && OidIsValid(chosen->sample_relid) &&
            aqp_sample_path_considered()) {
            int64 groups = sample_group_count(chosen, shape.group_vars, aqp_box_path_max_groups);
            if (groups > aqp_box_path_max_groups) {
                reason = psprintf("more than %d groups (approx_gpu.box_path_max_groups): the sample path answers",
                                  aqp_box_path_max_groups);
                chosen = nullptr;
            }
        }
        if (chosen != nullptr) {
            add_synopsis_path(root, input_rel, output_rel, &shape, chosen);
            return;
        }
    }
    if (!aqp_sample_path_considered())
        reason = psprintf("%s; the sample path was not tried: approx_gpu was loaded while this statement was planned "
                          "(it applies from the next statement; shared_preload_libraries = 'approx_gpu' avoids this)",
                          reason);
    aqp_box_path_reason = reason;
    last_run_rows("approx aggregate", reason);
}

void aqp_box_init(void) {
    DefineCustomBoolVariable("approx_gpu.box_path", "Whether the box path answers the queries it can.",
                             "off: queries the box path would answer take the sample path (to compare the two).",
                             &aqp_box_path_enabled, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.box_path_max_groups",
                            "Most groups the box path answers; a GROUP BY with more takes the sample path.",
                            "Each group is one box, a pass over the sample; the sample path passes once "
                            "(measured: 1,000 groups over a 10,000-row sample, box path 135 ms, sample path 4 ms).",
                            &aqp_box_path_max_groups, 16, 0, INT_MAX, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // Superuser-only: the conditions' text decides how many boxes a query
    // builds (two 4,096-value IN lists: 2^24), so no role may raise this.
    DefineCustomIntVariable("approx_gpu.box_memory_limit",
                            "Memory the boxes of one synopsis answer may take (groups x condition boxes).",
                            "A query whose boxes would need more runs over the rows instead (last_run() says why).",
                            &aqp_box_memory_limit_kb, 256 * 1024, 64, INT_MAX, PGC_SUSET, GUC_UNIT_KB, nullptr, nullptr,
                            nullptr);
    aqp_scan_register();
    prev_upper_paths_hook = create_upper_paths_hook;
    create_upper_paths_hook = aqp_upper_paths;
}
