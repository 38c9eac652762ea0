// The "Approx Sample Scan": the top node of a statement the sample path
// answers (sample/planner.cpp). Its outer child is the exact plan; its
// custom_private holds the sample plan, a PlannedStmt of its own. On the
// first row it pins the synopsis, locks the sample relation, pushes the
// sample's design for the weighted aggregates and runs the sample plan
// nested (a QueryDesc with the statement's snapshot and parameters, into a
// tuplestore); if the guard tripped, or the synopsis changed since planning,
// it returns the exact plan's rows instead.
//
// Plan shape: the node is built after set_plan_references, so it is written
// in its final form: scanrelid 0; custom_scan_tlist = OUTER_VAR references
// to the child's target list (so EXPLAIN VERBOSE deparses through the child,
// ruleutils.c set_deparse_plan: outer_plan = lefttree); the target list =
// INDEX_VAR references to custom_scan_tlist (no projection). The child
// hangs on lefttree, initialised and ended by this node.
#include "aqp/sample/internal.h"

#include "synopsis/synopsis_table.h"

#include <algorithm>

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tstoreReceiver.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planmain.h"
#include "storage/lmgr.h"
#include "tcop/dest.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

static constexpr const char* kNodeName = "Approx Sample Scan";
extern const CustomScanMethods aqp_sample_scan_methods;

// ---- plan ---------------------------------------------------------------------------

static int max_node_id(Plan* p) {
    if (p == nullptr) return -1;
    return std::max({p->plan_node_id, max_node_id(p->lefttree), max_node_id(p->righttree)});
}

PlannedStmt* aqp_sample_wrap(PlannedStmt* exact, PlannedStmt* sample, const AqpSampleSpec* spec, int cursor_options) {
    Plan* child = exact->planTree;
    int next_id = max_node_id(child);
    ListCell* lc;
    foreach (lc, exact->subplans) next_id = std::max(next_id, max_node_id(static_cast<Plan*>(lfirst(lc))));
    CustomScan* cs = makeNode(CustomScan);
    int i = 0;
    foreach (lc, child->targetlist) {
        TargetEntry* te = static_cast<TargetEntry*>(lfirst(lc));
        Node* e = reinterpret_cast<Node*>(te->expr);
        AttrNumber att = static_cast<AttrNumber>(++i);
        Var* outer = makeVar(OUTER_VAR, att, exprType(e), exprTypmod(e), exprCollation(e), 0);
        Var* index = makeVar(INDEX_VAR, att, exprType(e), exprTypmod(e), exprCollation(e), 0);
        cs->custom_scan_tlist =
            lappend(cs->custom_scan_tlist, makeTargetEntry(reinterpret_cast<Expr*>(outer), att, te->resname, te->resjunk));
        TargetEntry* out = makeTargetEntry(reinterpret_cast<Expr*>(index), te->resno, te->resname, te->resjunk);
        out->ressortgroupref = te->ressortgroupref;
        cs->scan.plan.targetlist = lappend(cs->scan.plan.targetlist, out);
    }
    Plan* p = &cs->scan.plan;
    p->startup_cost = child->startup_cost;
    p->total_cost = child->total_cost;
    p->plan_rows = child->plan_rows;
    p->plan_width = child->plan_width;
    p->parallel_aware = false;
    p->parallel_safe = false;
    p->plan_node_id = ++next_id;
    p->lefttree = child;
    p->extParam = bms_copy(child->extParam);
    p->allParam = bms_copy(child->allParam);
    cs->scan.scanrelid = 0;
    cs->flags = 0;
    cs->custom_private = aqp_sample_spec_form(spec, sample);
    cs->methods = &aqp_sample_scan_methods;
    Plan* top = p;
    if (cursor_options & CURSOR_OPT_SCROLL) {  // the node reads forward only (planner.c does the same)
        top = materialize_finished_plan(top);
        top->plan_node_id = ++next_id;
    }
    exact->planTree = top;
    // Invalidation: the sample plan's relations (the sample relation) and
    // functions count for the cached statement too.
    exact->relationOids = list_concat_unique_oid(exact->relationOids, sample->relationOids);
    exact->invalItems = list_concat(exact->invalItems, static_cast<List*>(copyObjectImpl(sample->invalItems)));
    exact->dependsOnRole = true;
    return exact;
}

// ---- executor state -----------------------------------------------------------------

struct ApproxSampleState {
    CustomScanState css;
    AqpSampleSpec spec;
    PlannedStmt* sample;
    const TableSynopsis* ts;  // pinned while running
    const char* fallback;     // non-null: the exact rows answer, and why
    bool ran, recorded;
    Tuplestorestate* store;
    TupleTableSlot* nested_slot;
    int* column_of;  // scan attribute -> sample plan's output column (0-based), -1: junk (NULL)
    int64 returned, skipped, groups;
    int64 executions;  // of an ungrouped aggregated level in the sample plan (sample/internal.h)
    int64 limit_count, limit_offset;  // spec.limit_* evaluated (-1: no limit)
    AqpSampleVerdict verdict;          // the rules that judge the sample plan's answer
};

// What the sample plan's star-join node did (aqp/sample.h); -2: none ran.
static int star_join_run = -2;
void aqp_sample_note_star_join_run(int device) { star_join_run = device; }
static int star_join_service = -1;  // -1: not sent to the service
void aqp_sample_note_star_join_service(int how) { star_join_service = how; }
static int star_join_kept = -1, star_join_read = -1;  // -1: none noted
static double star_join_ms[3] = {-1, -1, -1};          // the node, the service round trip, the engine there
void aqp_sample_note_star_join_ms(double node_ms, double round_trip_ms, double engine_ms) {
    star_join_ms[0] = node_ms;
    star_join_ms[1] = round_trip_ms;
    star_join_ms[2] = engine_ms;
}
void aqp_sample_note_star_join_reads(int kept, int read) {
    star_join_kept = kept;
    star_join_read = read;
}

static void fall_back(ApproxSampleState* st, const char* reason) {
    if (st->fallback == nullptr) st->fallback = reason;
}

static void sample_begin(CustomScanState* node, EState* estate, int eflags) {
    ApproxSampleState* st = reinterpret_cast<ApproxSampleState*>(node);
    CustomScan* cs = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
    outerPlanState(node) = ExecInitNode(outerPlan(cs), estate, eflags);
    aqp_sample_spec_deform(cs->custom_private, &st->spec, &st->sample);
    // The groups the other tables allow are counted in a subtransaction
    // (aqp_sample_domain_groups), which parallel mode does not allow: a
    // statement that runs in parallel mode (a Gather in its exact plan, a
    // parallel CREATE TABLE AS) counts them now, before ExecutorRun enters it.
    st->verdict = {&st->spec, nullptr, nullptr, nullptr, estate->es_param_list_info, -1, false};
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY) && st->spec.domain_sql != nullptr &&
        estate->es_plannedstmt->parallelModeNeeded && !IsInParallelMode())
        aqp_sample_groups_allowed(&st->verdict);
}

// The design of the pinned synopsis' sample: per stratum N_s and m_s.
static AqpSampleDesign design_of(const TableSynopsis* ts, bool groups_within_strata) {
    const approx::synopsis::Synopsis& m = ts->model;
    int n = std::max(1, m.n_strata);
    double* rows = static_cast<double*>(palloc(sizeof(double) * n));
    double* sampled = static_cast<double*>(palloc(sizeof(double) * n));
    if (m.n_strata == 0) {
        rows[0] = static_cast<double>(m.n_rows);
        sampled[0] = static_cast<double>(m.m);
    } else {
        for (int g = 0; g < n; ++g) {
            rows[g] = static_cast<double>(m.strata[g].n_rows);
            sampled[g] = static_cast<double>(m.strata[g].end - m.strata[g].begin);
        }
    }
    AqpSampleDesign d{ts->sample_relid, n, rows, sampled};
    d.groups_within_strata = groups_within_strata;
    return d;
}

// Maps the scan tuple's columns to the sample plan's output (its non-junk
// columns, in order); false when the two disagree (never expected).
static bool map_columns(ApproxSampleState* st, TupleDesc nested) {
    TupleDesc scan = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
    CustomScan* cs = reinterpret_cast<CustomScan*>(st->css.ss.ps.plan);
    st->column_of = static_cast<int*>(palloc(sizeof(int) * (scan->natts + 1)));
    int k = 0;
    ListCell* lc;
    foreach (lc, cs->custom_scan_tlist) {
        int i = foreach_current_index(lc);
        TargetEntry* te = static_cast<TargetEntry*>(lfirst(lc));
        if (te->resjunk) {
            st->column_of[i] = -1;
            continue;
        }
        if (k >= nested->natts || TupleDescAttr(nested, k)->atttypid != TupleDescAttr(scan, i)->atttypid) return false;
        st->column_of[i] = k++;
    }
    return k + st->spec.hidden_columns == nested->natts;
}

// The plan's measures whose spread the final functions may borrow: all of
// them for the role the plan was made for (sample/rewrite.cpp decided
// for it), none for another (a cursor fetched after SET ROLE): a list of
// as many nullptrs, so that the aggregates' measure numbers stay valid.
static List* measures_for_role(const AqpSampleSpec& spec) {
    if (spec.spread_role == GetUserId()) return spec.measures;
    List* none = NIL;
    for (int j = 0; j < list_length(spec.measures); ++j) none = lappend(none, nullptr);
    return none;
}

// The LIMIT / OFFSET the node applies, evaluated with the statement's
// parameters (NULL: none); false when one is negative (the exact plan
// reports it, as nodeLimit.c does).
static bool eval_limits(ApproxSampleState* st) {
    EState* estate = st->css.ss.ps.state;
    st->limit_count = -1;
    st->limit_offset = 0;
    Node* exprs[2] = {st->spec.limit_count, st->spec.limit_offset};
    int64* values[2] = {&st->limit_count, &st->limit_offset};
    for (int i = 0; i < 2; ++i) {
        if (exprs[i] == nullptr) continue;
        MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
        ExprState* e = ExecPrepareExpr(reinterpret_cast<Expr*>(exprs[i]), estate);
        MemoryContextSwitchTo(old);
        bool isnull;
        Datum d = ExecEvalExprSwitchContext(e, GetPerTupleExprContext(estate), &isnull);
        if (isnull) continue;
        if (DatumGetInt64(d) < 0) return false;
        *values[i] = DatumGetInt64(d);
    }
    return true;
}

// Runs the sample plan under `design` into a new st->store (the star-join
// notes reset first); returns its output's descriptor.
static TupleDesc run_nested(ApproxSampleState* st, const AqpSampleDesign* design) {
    EState* estate = st->css.ss.ps.state;
    MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
    st->store = tuplestore_begin_heap(false, false, work_mem);
    DestReceiver* dest = CreateDestReceiver(DestTuplestore);
    SetTuplestoreDestReceiverParams(dest, st->store, estate->es_query_cxt, false, nullptr, nullptr);
    QueryDesc* qd = CreateQueryDesc(st->sample, estate->es_sourceText, estate->es_snapshot, InvalidSnapshot, dest,
                                    estate->es_param_list_info, estate->es_queryEnv, 0);
    aqp_sample_guard_reset();
    star_join_run = -2;
    star_join_service = -1;
    star_join_kept = star_join_read = -1;
    star_join_ms[0] = star_join_ms[1] = star_join_ms[2] = -1;
    aqp_sample_design_push(design);
    TupleDesc nested = nullptr;
    PG_TRY();
    {
        ExecutorStart(qd, 0);
        nested = CreateTupleDescCopy(qd->tupDesc);
        ExecutorRun(qd, ForwardScanDirection, 0, true);
        ExecutorFinish(qd);
        ExecutorEnd(qd);
    }
    PG_FINALLY();
    { aqp_sample_design_pop(); }
    PG_END_TRY();
    FreeQueryDesc(qd);
    dest->rDestroy(dest);
    if (st->nested_slot == nullptr) st->nested_slot = MakeSingleTupleTableSlot(nested, &TTSOpsMinimalTuple);
    MemoryContextSwitchTo(old);
    return nested;
}

// What the star-join node did, for last_run().
static void note_star_join_stats(void) {
    if (star_join_run > -2) last_run_stats().add("star_join_device", star_join_run);
    if (star_join_service >= 0) last_run_stats().add("star_join_service", star_join_service);
    if (star_join_kept >= 0) {
        last_run_stats().add("star_join_kept", star_join_kept);
        last_run_stats().add("star_join_read", star_join_read);
    }
    static const char* const ms_keys[3] = {"star_join_ms", "star_join_service_ms", "star_join_engine_ms"};
    for (int i = 0; i < 3; ++i)
        if (star_join_ms[i] >= 0) last_run_stats().add(ms_keys[i], star_join_ms[i]);
}

// The sample cannot answer (why): when its plan ran as a star join, the
// exact pass runs it once more over the whole table (sample/exact_pass.cpp);
// else, or when the node declines there, PostgreSQL's exact plan answers.
static void fall_back_or_exact_pass(ApproxSampleState* st, const char* why) {
    const AqpSampleSpec& spec = st->spec;
    if (star_join_run < 0 || aqp_exact_pass_refusal(spec.relid) != nullptr) return fall_back(st, why);
    if (!eval_limits(st)) return fall_back(st, "a negative LIMIT or OFFSET");
    Tuplestorestate* sampled = st->store;
    EState* estate = st->css.ss.ps.state;
    MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
    AqpSampleDesign census = aqp_exact_pass_design(spec.sample_relid, measures_for_role(spec));
    MemoryContextSwitchTo(old);
    aqp_exact_pass_begin(spec.sample_relid, spec.relid);
    TupleDesc nested = nullptr;
    PG_TRY();
    { nested = run_nested(st, &census); }
    PG_FINALLY();
    { aqp_exact_pass_end(); }
    PG_END_TRY();
    if (star_join_run < 0 || !map_columns(st, nested)) {
        tuplestore_end(st->store);
        st->store = sampled;
        return fall_back(st, why);
    }
    tuplestore_end(sampled);
    st->groups = tuplestore_tuple_count(st->store);
    last_run_rows("approx aggregate", nullptr);
    last_run_set_answer("exact pass", why, nullptr);
    last_run_stats().add("groups", static_cast<double>(st->groups));
    note_star_join_stats();
}

static void run_sample_plan(ApproxSampleState* st) {
    EState* estate = st->css.ss.ps.state;
    const AqpSampleSpec& spec = st->spec;
    Oid role = GetUserId();
    const char* syn = table_synopsis_phrase(spec.relid, spec.owner, spec.synopsis, role);
    if (!table_synopsis_answers(spec.relid, spec.owner, role))
        return fall_back(st, psprintf("the synopsis chosen at planning may not answer role %s (roles changed since "
                                      "planning)",
                                      GetUserNameFromId(role, false)));
    st->ts = table_synopsis_pin(spec.relid, spec.owner, spec.synopsis, spec.built);
    if (st->ts == nullptr || st->ts->sample_relid != spec.sample_relid)
        return fall_back(st, psprintf("%s was dropped or rebuilt since planning", syn));
    const char* stale = table_synopsis_staleness(st->ts);
    if (stale != nullptr) return fall_back(st, psprintf("%s: %s", syn, stale));
    // Under the guard a GROUP BY needs the groups' bound, and what the query
    // does with the estimates must be one the guard can judge (guard_judgement).
    st->verdict.model = &st->ts->model;
    const char* unbounded = aqp_sample_groups_unbounded(&st->verdict);
    if (unbounded != nullptr) return fall_back(st, unbounded);
    if (aqp_max_relative_error > 0 && spec.unjudged != nullptr) return fall_back(st, spec.unjudged);
    // The plan cache locked the outer statement's relations, not this one.
    LockRelationOid(spec.sample_relid, AccessShareLock);
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(spec.sample_relid)))
        return fall_back(st, psprintf("the sample relation of %s was dropped", syn));

    MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
    AqpSampleDesign design = design_of(st->ts, spec.groups_within_strata);
    design.measures = measures_for_role(spec);
    MemoryContextSwitchTo(old);
    TupleDesc nested = run_nested(st, &design);

    const char* guard = aqp_sample_guard_reason();
    if (guard != nullptr) return fall_back_or_exact_pass(st, guard);
    if (!eval_limits(st)) return fall_back(st, "a negative LIMIT or OFFSET");
    st->executions = aqp_sample_guard_executions().total;
    st->verdict.store = st->store;
    st->verdict.slot = st->nested_slot;
    const char* verdict = aqp_sample_verdict(&st->verdict, st->limit_offset, st->limit_count);
    if (verdict != nullptr) return fall_back_or_exact_pass(st, verdict);
    if (!map_columns(st, nested)) return fall_back(st, "the sample plan's columns differ from the query's");
    st->groups = tuplestore_tuple_count(st->store);
    last_run_rows("approx aggregate", nullptr);  // a fresh record
    last_run_set_answer("sample", nullptr, table_synopsis_shown_name(spec.relid, spec.owner, spec.synopsis, role));
    last_run_stats().add("sample_rows", static_cast<double>(st->ts->model.m));
    last_run_stats().add("groups", static_cast<double>(st->groups));
    if (st->executions > 1) last_run_stats().add("executions", static_cast<double>(st->executions));
    note_star_join_stats();
}

static TupleTableSlot* next_row(ScanState* ss) {
    ApproxSampleState* st = reinterpret_cast<ApproxSampleState*>(ss);
    TupleTableSlot* slot = ss->ss_ScanTupleSlot;
    ExecClearTuple(slot);
    for (;;) {
        if (st->limit_count >= 0 && st->returned >= st->limit_count) return slot;
        if (!tuplestore_gettupleslot(st->store, true, false, st->nested_slot)) return slot;
        if (!aqp_sample_having_passes(&st->spec, st->nested_slot)) continue;
        if (st->skipped < st->limit_offset) {
            ++st->skipped;
            continue;
        }
        break;
    }
    ++st->returned;
    slot_getallattrs(st->nested_slot);
    for (int i = 0; i < slot->tts_tupleDescriptor->natts; ++i) {
        int k = st->column_of[i];
        slot->tts_values[i] = k < 0 ? 0 : st->nested_slot->tts_values[k];
        slot->tts_isnull[i] = k < 0 ? true : st->nested_slot->tts_isnull[k];
    }
    return ExecStoreVirtualTuple(slot);
}

static bool recheck_row(ScanState*, TupleTableSlot*) { return true; }

static TupleTableSlot* sample_exec(CustomScanState* node) {
    ApproxSampleState* st = reinterpret_cast<ApproxSampleState*>(node);
    if (!st->ran) {
        st->ran = true;
        run_sample_plan(st);
    }
    if (st->fallback != nullptr) {
        if (!st->recorded) {
            last_run_rows("approx aggregate", st->fallback);
            if (st->executions > 1) last_run_stats().add("executions", static_cast<double>(st->executions));
        }
        st->recorded = true;
        return ExecProcNode(outerPlanState(node));
    }
    return ExecScan(&node->ss, next_row, recheck_row);
}

static void sample_end(CustomScanState* node) {
    ApproxSampleState* st = reinterpret_cast<ApproxSampleState*>(node);
    ExecEndNode(outerPlanState(node));
    if (st->nested_slot != nullptr) ExecDropSingleTupleTableSlot(st->nested_slot);
    if (st->store != nullptr) tuplestore_end(st->store);
    if (st->ts != nullptr) table_synopsis_unpin(st->ts);
    st->ts = nullptr;
}

static void sample_rescan(CustomScanState* node) {
    ApproxSampleState* st = reinterpret_cast<ApproxSampleState*>(node);
    st->returned = st->skipped = 0;
    if (st->store != nullptr) tuplestore_rescan(st->store);
    PlanState* child = outerPlanState(node);
    if (child->chgParam == nullptr) ExecReScan(child);
}

const char* aqp_sample_custom_node(Plan* p) {
    if (p == nullptr) return nullptr;
    if (IsA(p, CustomScan)) return reinterpret_cast<CustomScan*>(p)->methods->CustomName;
    const char* n = aqp_sample_custom_node(p->lefttree);
    return n != nullptr ? n : aqp_sample_custom_node(p->righttree);
}

static void explain_sample(CustomScanState* node, List* ancestors, ExplainState* es) {
    ApproxSampleState* st = reinterpret_cast<ApproxSampleState*>(node);
    const AqpSampleSpec& spec = st->spec;
    ExplainPropertyText("Synopsis", table_synopsis_shown_name(spec.relid, spec.owner, spec.synopsis, GetUserId()),
                        es);
    ExplainPropertyInteger("Sample Rows", nullptr, spec.sample_rows, es);
    if (const char* engine = aqp_sample_custom_node(st->sample->planTree))
        ExplainPropertyText("Sample Plan", engine, es);
    else if (spec.star_join != nullptr && es->verbose)  // why not (VERBOSE: most plans are not star joins)
        ExplainPropertyText("Star Join", spec.star_join, es);
    if (es->analyze) ExplainPropertyText("Answered From", st->fallback != nullptr ? "rows" : "sample", es);
    if (st->fallback != nullptr) ExplainPropertyText("Fallback", st->fallback, es);
}

static const CustomExecMethods sample_exec_methods = {
    kNodeName, sample_begin, sample_exec, sample_end, sample_rescan, nullptr, nullptr,
    nullptr,   nullptr,      nullptr,     nullptr,    nullptr,       explain_sample,
};

static Node* create_sample_state(CustomScan*) {
    ApproxSampleState* st = static_cast<ApproxSampleState*>(palloc0(sizeof(ApproxSampleState)));
    NodeSetTag(st, T_CustomScanState);
    st->css.methods = &sample_exec_methods;
    return reinterpret_cast<Node*>(st);
}

const CustomScanMethods aqp_sample_scan_methods = {kNodeName, create_sample_state};

void aqp_sample_scan_register(void) { RegisterCustomScanMethods(&aqp_sample_scan_methods); }
