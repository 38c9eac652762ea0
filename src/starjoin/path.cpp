// The star-join glue's planner side (starjoin/starjoin_glue.h): while the
// sample path plans its query over the sample relation, a
// create_upper_paths_hook on UPPERREL_GROUP_AGG adds, where the shape allows,
// Finalize Aggregate (AGGSPLIT_FINAL_DESERIAL) -> Approx Star Join, the
// CustomScan emitting per group the group keys and the weighted aggregates'
// partial states -- as create_partial_grouping_paths and
// add_paths_to_grouping_rel (optimizer/plan/planner.c) build parallel
// aggregation, and PG-Strom's GpuPreAgg adds its path. The node's child is
// the CPU Partial Aggregate of the same target: the rows it returns where
// the engine declines. The shape: the sample relation alone or inner-joined
// to dimension tables on unique keys (dims.cpp), quals, GROUP BY (integer,
// date or text columns) and the SUM / AVG arguments that compile.cpp
// compiles; COUNT / SUM / AVG without FILTER. Otherwise no path, and the
// reason for EXPLAIN VERBOSE (aqp_sample_star_join_note). Under force the
// path is the grouping's only one.
#include "starjoin/starjoin_glue.h"

#include "core/gpu.hpp"
#include "core/service.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
}

namespace sj = approx::starjoin;

// On by default: it runs only where a GPU would (will_run_on_gpu), so a
// machine without one plans as before. Its GPU sums add with atomics, in no
// fixed order: equal to the CPU plan's up to rounding (as PostgreSQL's own
// parallel aggregation), never bit for bit.
int starjoin_mode = STAR_JOIN_ON;
static create_upper_paths_hook_type prev_upper_paths_hook = nullptr;

// ---- the private list ---------------------------------------------------------------------
List* starjoin_spec_form(const StarJoinSpec* s) {
    List* head = list_make3(makeInteger(static_cast<int>(s->sample_relid)), makeInteger(static_cast<int>(s->fact_varno)),
                            makeInteger(s->stratum_attno));
    return lappend(lappend(list_make5(head, s->quals, s->groups, s->measures, s->measure_numbers), s->outputs), s->dims);
}
void starjoin_spec_deform(List* priv, StarJoinSpec* s) {
    List* head = static_cast<List*>(linitial(priv));
    s->sample_relid = static_cast<Oid>(intVal(linitial(head)));
    s->fact_varno = static_cast<Index>(intVal(lsecond(head)));
    s->stratum_attno = static_cast<AttrNumber>(intVal(lthird(head)));
    s->quals = static_cast<List*>(lsecond(priv));
    s->groups = static_cast<List*>(lthird(priv));
    s->measures = static_cast<List*>(lfourth(priv));
    s->measure_numbers = static_cast<List*>(list_nth(priv, 4));
    s->outputs = static_cast<List*>(list_nth(priv, 5));
    s->dims = static_cast<List*>(list_nth(priv, 6));
}

// planner.c's make_partial_grouping_target (static there): the GROUP BY
// expressions, then the Vars and Aggrefs of the rest and of HAVING, each
// Aggref marked AGGSPLIT_INITIAL_SERIAL.
static PathTarget* partial_grouping_target(PlannerInfo* root, PathTarget* grouping_target, Node* having) {
    Query* parse = root->parse;
    PathTarget* partial = create_empty_pathtarget();
    List* non_group = NIL;
    int i = 0;
    ListCell* lc;
    foreach (lc, grouping_target->exprs) {
        Expr* e = static_cast<Expr*>(lfirst(lc));
        Index ref = get_pathtarget_sortgroupref(grouping_target, i);
        if (ref && parse->groupClause && get_sortgroupref_clause_noerr(ref, parse->groupClause) != nullptr)
            add_column_to_pathtarget(partial, e, ref);
        else
            non_group = lappend(non_group, e);
        ++i;
    }
    if (having != nullptr) non_group = lappend(non_group, having);
    List* exprs = pull_var_clause(reinterpret_cast<Node*>(non_group),
                                  PVC_INCLUDE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS | PVC_INCLUDE_PLACEHOLDERS);
    add_new_columns_to_pathtarget(partial, exprs);
    foreach (lc, partial->exprs) {
        if (!IsA(lfirst(lc), Aggref)) continue;
        Aggref* a = makeNode(Aggref);
        memcpy(a, lfirst(lc), sizeof(Aggref));
        mark_partial_aggref(a, AGGSPLIT_INITIAL_SERIAL);
        lfirst(lc) = a;
    }
    return set_pathtarget_cost_width(root, partial);
}

static bool holds_weighted_aggregate(Node* n, void*) {
    if (n == nullptr) return false;
    AqpAgg agg;
    if (IsA(n, Aggref) && aqp_sample_weighted_kind(reinterpret_cast<Aggref*>(n)->aggfnoid, &agg)) return true;
    return expression_tree_walker(n, walker(holds_weighted_aggregate), nullptr);
}

// The measure of weighted Aggref a (its index in spec->measures, added when
// new), or a reason.
static const char* measure_of(Aggref* a, StarJoinCompiler* c, StarJoinSpec* spec, int* out) {
    AqpAgg agg;
    if (a->agglevelsup != 0 || !aqp_sample_weighted_kind(a->aggfnoid, &agg)) return "an aggregate other than approx_*";
    if (agg.kind != AQP_COUNT && agg.kind != AQP_SUM && agg.kind != AQP_AVG) return "a percentile";
    if (a->aggfilter != nullptr || a->aggorder != NIL || a->aggdistinct != NIL) return "an aggregate with FILTER";
    const int nargs = list_length(a->args);
    if (nargs != (agg.kind == AQP_COUNT ? 2 : 4)) return "an unexpected weighted aggregate";
    const int first = agg.kind == AQP_COUNT ? 0 : 1;
    Node* stratum = reinterpret_cast<Node*>(static_cast<TargetEntry*>(list_nth(a->args, first))->expr);
    Node* sample = reinterpret_cast<Node*>(static_cast<TargetEntry*>(list_nth(a->args, first + 1))->expr);
    if (!IsA(stratum, Var) || reinterpret_cast<Var*>(stratum)->varno != static_cast<int>(c->tables[0].varno) ||
        reinterpret_cast<Var*>(stratum)->varattno != spec->stratum_attno || !IsA(sample, Const) ||
        DatumGetObjectId(reinterpret_cast<Const*>(sample)->constvalue) != spec->sample_relid)
        return "an aggregate over another stratum or sample";
    Node* m = agg.kind == AQP_COUNT ? reinterpret_cast<Node*>(makeInteger(0))
                                    : reinterpret_cast<Node*>(static_cast<TargetEntry*>(linitial(a->args))->expr);
    ListCell* lc;
    foreach (lc, spec->measures)
        if (equal(lfirst(lc), m)) return (*out = foreach_current_index(lc), nullptr);
    if (list_length(spec->measures) == sj::kMaxMeasures) return "more measures than the star join computes";
    int number = 0;  // sample_sum / sample_avg's measure argument
    if (agg.kind != AQP_COUNT) {
        sj::ProgramRef ref;
        if (!starjoin_compile(c, m, sj::Kind::Float, &ref)) return psprintf("an aggregate argument: %s", c->failed);
        Node* k = reinterpret_cast<Node*>(static_cast<TargetEntry*>(lfourth(a->args))->expr);
        if (!IsA(k, Const) || reinterpret_cast<Const*>(k)->consttype != INT4OID || reinterpret_cast<Const*>(k)->constisnull)
            return "an aggregate without a constant measure";
        number = DatumGetInt32(reinterpret_cast<Const*>(k)->constvalue);
    }
    spec->measures = lappend(spec->measures, m);
    spec->measure_numbers = lappend(spec->measure_numbers, makeInteger(number));
    *out = list_length(spec->measures) - 1;
    return nullptr;
}

// The spec of the node for this grouping, or a reason.
static const char* recognise(PlannerInfo* root, RelOptInfo* input_rel, PathTarget* partial, Oid sample,
                             StarJoinSpec* spec) {
    Query* parse = root->parse;
    if (parse->groupingSets != NIL) return "grouping sets";
    List* quals = NIL;
    const char* why = starjoin_recognise_join(root, input_rel, sample, spec, &quals);
    if (why != nullptr) return why;
    spec->sample_relid = sample;
    sj::Plan plan;
    StarJoinCompiler c;
    if (!starjoin_compiler_init(&c, &plan, spec)) return c.failed;
    ListCell* lc;
    sj::ProgramRef ref;
    if (!starjoin_compile_fact_filter(&c, quals, &ref)) return psprintf("a qual: %s", c.failed);
    spec->quals = quals;
    int i = 0;
    foreach (lc, partial->exprs) {
        Node* e = static_cast<Node*>(lfirst(lc));
        int out = 0;
        if (IsA(e, Aggref)) {
            const char* why = measure_of(reinterpret_cast<Aggref*>(e), &c, spec, &out);
            if (why != nullptr) return why;
            out = -1 - out;
        } else if (get_pathtarget_sortgroupref(partial, i) != 0) {
            Oid t = exprType(e);
            if (t != INT2OID && t != INT4OID && t != INT8OID && t != DATEOID && starjoin_text_var(e) == nullptr)
                return psprintf("GROUP BY an expression of type %s", format_type_be(t));
            if (!starjoin_compile(&c, e, sj::Kind::Int, &ref)) return psprintf("a GROUP BY expression: %s", c.failed);
            if (list_length(spec->groups) == sj::kMaxGroupParts) return "more GROUP BY expressions than the star join takes";
            spec->groups = lappend(spec->groups, e);
            out = list_length(spec->groups) - 1;
        } else {
            return "a column outside GROUP BY and the aggregates";
        }
        spec->outputs = lappend(spec->outputs, makeInteger(out));
        ++i;
    }
    // The whole plan once (the dimensions' outputs, their limits).
    sj::Plan whole;
    if (!starjoin_compiler_init(&c, &whole, spec) || !starjoin_compile_spec(&c, spec, 1)) return c.failed;
    return nullptr;
}

static Plan* plan_star_join(PlannerInfo*, RelOptInfo*, CustomPath* path, List* tlist, List*, List* custom_plans) {
    CustomScan* cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    cs->scan.scanrelid = 0;
    cs->custom_scan_tlist = copy_node(tlist);
    cs->custom_plans = custom_plans;
    cs->custom_private = path->custom_private;
    cs->flags = path->flags;
    cs->methods = &starjoin_scan_methods;
    return &cs->scan.plan;
}
static const CustomPathMethods starjoin_path_methods = {"Approx Star Join", plan_star_join, nullptr};

// Whether a GPU would run the star join over `rows` sample rows: the
// service's GPUs when calls go to the service (asked through its shared
// memory: no CUDA context in this backend), else this backend's.
static bool gpu_would_run(int64 rows) {
    const approx::ExecContext ctx = engine_settings();
    if (ctx.service != nullptr) {
        approx::gpu::DeviceInfo info[1];
        int count = 0, runtime_version = 0, driver_version = 0;
        return approx::service::wanted(ctx, rows) &&
               gpu_service_hooks().devices(info, 1, &count, &runtime_version, &driver_version) && count > 0;
    }
    return approx::will_run_on_gpu(ctx, rows);
}

// The rows the engine reads: the sample relation's (a join's estimated
// output would count rows after its filters, and send selective queries,
// which the GPU answers best, to the CPU).
static int64 sample_rows(PlannerInfo* root, RelOptInfo* input_rel, Oid sample) {
    int i = -1;
    while ((i = bms_next_member(input_rel->relids, i)) >= 0) {
        RelOptInfo* rel = root->simple_rel_array[i];
        if (rel != nullptr && rel->rtekind == RTE_RELATION && planner_rt_fetch(i, root)->relid == sample)
            return static_cast<int64>(rel->tuples > 0 ? rel->tuples : rel->rows);
    }
    return static_cast<int64>(input_rel->rows);
}

static const char* add_star_join_path(PlannerInfo* root, RelOptInfo* input_rel, RelOptInfo* output_rel,
                                      GroupPathExtraData* gx, Oid sample) {
    if (starjoin_mode == STAR_JOIN_OFF) return nullptr;  // off says nothing in EXPLAIN (the default)
    // on: only where the GPU runs it (the CPU engine is not faster than
    // PostgreSQL's executor here; force runs it, to test both engines).
    const int64 rows = sample_rows(root, input_rel, sample);
    // Nothing noted: EXPLAIN on a machine without a GPU stays as it was.
    if (starjoin_mode == STAR_JOIN_ON && !gpu_would_run(rows)) return nullptr;
    if (!(gx->flags & GROUPING_CAN_PARTIAL_AGG)) return "the aggregates cannot be split into partial states";
    if (IS_DUMMY_REL(input_rel) || input_rel->cheapest_total_path == nullptr) return "no input path";
    Query* parse = root->parse;
    PathTarget* partial = partial_grouping_target(root, output_rel->reltarget, gx->havingQual);
    StarJoinSpec spec;
    memset(&spec, 0, sizeof spec);
    const char* why = recognise(root, input_rel, partial, sample, &spec);
    if (why != nullptr) return why;

    double groups = output_rel->pathlist != NIL ? static_cast<Path*>(linitial(output_rel->pathlist))->rows : 1;
    AggClauseCosts partial_costs, final_costs;
    get_agg_clause_costs(root, AGGSPLIT_INITIAL_SERIAL, &partial_costs);
    get_agg_clause_costs(root, AGGSPLIT_FINAL_DESERIAL, &final_costs);
    const bool grouped = parse->groupClause != NIL;
    const bool hashed = grouped && grouping_is_hashable(parse->groupClause);
    if (grouped && !hashed && !grouping_is_sortable(parse->groupClause)) return "GROUP BY neither hashable nor sortable";
    const AggStrategy strategy = !grouped ? AGG_PLAIN : hashed ? AGG_HASHED : AGG_SORTED;
    // The child: the CPU Partial Aggregate of the same target.
    Path* in = input_rel->cheapest_total_path;
    if (strategy == AGG_SORTED) in = reinterpret_cast<Path*>(create_sort_path(root, input_rel, in, root->group_pathkeys, -1.0));
    Path* child = reinterpret_cast<Path*>(create_agg_path(root, output_rel, in, partial, strategy, AGGSPLIT_INITIAL_SERIAL,
                                                          parse->groupClause, NIL, &partial_costs, groups));
    CustomPath* cp = makeNode(CustomPath);
    cp->path.pathtype = T_CustomScan;
    cp->path.parent = output_rel;
    cp->path.pathtarget = partial;
    cp->path.param_info = nullptr;
    cp->path.parallel_aware = cp->path.parallel_safe = false;
    cp->path.parallel_workers = 0;
    cp->path.rows = groups;
    // Cost: next to nothing (one pass on the device), so that it wins.
    cp->path.startup_cost = 0;
    cp->path.total_cost = groups * cpu_tuple_cost;
    cp->path.pathkeys = NIL;
    cp->flags = 0;
    cp->custom_paths = list_make1(child);
    cp->custom_private = starjoin_spec_form(&spec);
    cp->methods = &starjoin_path_methods;
    Path* top = reinterpret_cast<Path*>(cp);
    if (strategy == AGG_SORTED) top = reinterpret_cast<Path*>(create_sort_path(root, output_rel, top, root->group_pathkeys, -1.0));
    top = reinterpret_cast<Path*>(create_agg_path(root, output_rel, top, output_rel->reltarget, strategy,
                                                  AGGSPLIT_FINAL_DESERIAL, parse->groupClause,
                                                  reinterpret_cast<List*>(gx->havingQual), &final_costs, groups));
    // force: the only path (the Finalize Aggregate's own costs, e.g. the
    // final functions', can exceed a small join's whole CPU plan).
    if (starjoin_mode == STAR_JOIN_FORCE) output_rel->pathlist = output_rel->partial_pathlist = NIL;
    add_path(output_rel, top);
    return nullptr;
}

static void starjoin_upper_paths(PlannerInfo* root, UpperRelationKind stage, RelOptInfo* input_rel,
                                 RelOptInfo* output_rel, void* extra) {
    if (prev_upper_paths_hook) prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
    if (stage != UPPERREL_GROUP_AGG) return;
    const Oid sample = aqp_sample_planning_relid();
    if (!OidIsValid(sample) || IS_OTHER_REL(output_rel) || IS_OTHER_REL(input_rel) || !root->parse->hasAggs) return;
    GroupPathExtraData* gx = static_cast<GroupPathExtraData*>(extra);
    if (gx == nullptr || gx->patype == PARTITIONWISE_AGGREGATE_PARTIAL) return;
    // Only the level of the weighted aggregates.
    if (!holds_weighted_aggregate(reinterpret_cast<Node*>(output_rel->reltarget->exprs), nullptr) &&
        !holds_weighted_aggregate(gx->havingQual, nullptr))
        return;
    aqp_sample_star_join_note(add_star_join_path(root, input_rel, output_rel, gx, sample));
}

void starjoin_init(void) {
    static const struct config_enum_entry modes[] = {
        {"off", STAR_JOIN_OFF, false}, {"on", STAR_JOIN_ON, false}, {"force", STAR_JOIN_FORCE, false}, {nullptr, 0, false}};
    DefineCustomEnumVariable("approx_gpu.star_join",
                             "Whether the sample path's aggregation may run as one star-join engine pass.",
                             "off: PostgreSQL's executor aggregates the sample; on (default): where it is cheaper (a "
                             "GPU runs it); force: wherever the query's shape allows (to test both engines).",
                             &starjoin_mode, STAR_JOIN_ON, modes, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("approx_gpu.star_join_cache_size",
                            "Memory a session keeps the star join's read tables in, to use them again.",
                            "Dimensions while every page stays all-visible, sample relations while they exist; "
                            "0 reads every table for every query.",
                            &starjoin_cache_size_mb, 256, 0, MAX_KILOBYTES / 1024, PGC_USERSET, GUC_UNIT_MB, nullptr,
                            nullptr, nullptr);
    starjoin_exec_register();
    prev_upper_paths_hook = create_upper_paths_hook;
    create_upper_paths_hook = starjoin_upper_paths;
}
