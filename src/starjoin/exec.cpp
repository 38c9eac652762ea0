// The "Approx Star Join" CustomScan at execution (starjoin/starjoin_glue.h):
// on the first row it compiles its spec into the engine's plan, reads the
// columns the programs use from the sample relation (the statement's
// snapshot), runs approx::starjoin::run() on the device the settings pick
// (approx_gpu.device) -- in the GPU service when the session's calls go
// there (served.cpp: the columns then stay resident in the service, and
// later runs read none) -- and returns per group the group keys and each
// measure's partial state -- the bytes sample_sum's serial function writes
// (aqp_sample_moment_state_bytes), from the group's moments per stratum.
// Errors of the programs are PostgreSQL's (22012 division by zero, 22003
// out of range, as the CPU plan raises them); where the engine declines (a
// budget, a value it cannot represent, no design pushed) the node returns
// its child's rows instead: the CPU Partial Aggregate of the same target.
#include "starjoin/starjoin_glue.h"

#include <vector>

extern "C" {
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/date.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "core/sample_estimate.hpp"

namespace sj = approx::starjoin;

// The engine's plan and result (C++ objects; deleted by a memory context
// callback, so that an ERROR frees them too).
struct StarJoinRun {
    sj::Plan plan;
    sj::Result result;
};

struct StarJoinState {
    CustomScanState css;
    StarJoinSpec spec;
    StarJoinRun* run;
    MemoryContextCallback free_run;
    bool ran, fallback;
    int64 next;
};

static void begin_star_join(CustomScanState* node, EState* estate, int eflags) {
    StarJoinState* st = reinterpret_cast<StarJoinState*>(node);
    CustomScan* cs = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
    starjoin_spec_deform(cs->custom_private, &st->spec);
    node->custom_ps = list_make1(ExecInitNode(static_cast<Plan*>(linitial(cs->custom_plans)), estate, eflags));
}

// The columns the programs read, from the sample relation: values at the
// engine type's width, NULL bitmaps where a NULL was seen; the stratum (the
// last column) 0-based.
static void read_columns(StarJoinState* st, const StarJoinCompiler& c, AttrNumber stratum_attno, sj::Column* cols,
                         int64* rows_out) {
    EState* estate = st->css.ss.ps.state;
    const int n = c.n_columns + 1;
    AttrNumber attnos[kStarJoinMaxColumns + 1];
    sj::ColType types[kStarJoinMaxColumns + 1];
    for (int i = 0; i < c.n_columns; ++i) {
        attnos[i] = c.attnos[i];
        starjoin_column_type(c.types[i], &types[i]);
    }
    attnos[c.n_columns] = stratum_attno;
    types[c.n_columns] = sj::ColType::Int32;
    AttrNumber max_att = 0;
    for (int i = 0; i < n; ++i) max_att = Max(max_att, attnos[i]);
    int64 cap = 1024, rows = 0;
    char* data[kStarJoinMaxColumns + 1];
    uint8* nulls[kStarJoinMaxColumns + 1];
    bool any_null[kStarJoinMaxColumns + 1];
    for (int i = 0; i < n; ++i) {
        data[i] = static_cast<char*>(palloc_extended(cap * sj::column_width(types[i]), MCXT_ALLOC_HUGE));
        nulls[i] = static_cast<uint8*>(palloc_extended(cap / 8, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
        any_null[i] = false;
    }
    Relation rel = table_open(st->spec.sample_relid, AccessShareLock);
    TableScanDesc scan = table_beginscan(rel, estate->es_snapshot, 0, nullptr);
    TupleTableSlot* slot = table_slot_create(rel, nullptr);
    while (table_scan_getnextslot(scan, ForwardScanDirection, slot)) {
        CHECK_FOR_INTERRUPTS();
        if (rows == cap) {
            for (int i = 0; i < n; ++i) {
                data[i] = static_cast<char*>(repalloc_huge(data[i], 2 * cap * sj::column_width(types[i])));
                nulls[i] = static_cast<uint8*>(repalloc_huge(nulls[i], 2 * cap / 8));
                memset(nulls[i] + cap / 8, 0, cap / 8);
            }
            cap *= 2;
        }
        slot_getsomeattrs(slot, max_att);
        for (int i = 0; i < n; ++i) {
            const Datum d = slot->tts_values[attnos[i] - 1];
            if (slot->tts_isnull[attnos[i] - 1]) {
                nulls[i][rows / 8] |= static_cast<uint8>(1u << (rows % 8));
                any_null[i] = true;
                continue;
            }
            char* at = data[i] + rows * sj::column_width(types[i]);
            switch (types[i]) {
                case sj::ColType::Int16: *reinterpret_cast<int16*>(at) = DatumGetInt16(d); break;
                case sj::ColType::Int32:
                    *reinterpret_cast<int32*>(at) = DatumGetInt32(d) - (i == n - 1 ? 1 : 0);
                    break;
                case sj::ColType::Int64: *reinterpret_cast<int64*>(at) = DatumGetInt64(d); break;
                case sj::ColType::Float32: *reinterpret_cast<float4*>(at) = DatumGetFloat4(d); break;
                case sj::ColType::Float64: *reinterpret_cast<float8*>(at) = DatumGetFloat8(d); break;
                case sj::ColType::Date: *reinterpret_cast<DateADT*>(at) = DatumGetDateADT(d); break;
                case sj::ColType::Bool: *reinterpret_cast<uint8*>(at) = DatumGetBool(d) ? 1 : 0; break;
                default: break;
            }
        }
        ++rows;
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    table_close(rel, NoLock);
    for (int i = 0; i < n; ++i) {
        cols[i].type = types[i];
        cols[i].data = data[i];
        cols[i].nulls = any_null[i] ? nulls[i] : nullptr;
    }
    *rows_out = rows;
}

// read_columns as served.cpp calls it (StarJoinReadFact).
struct FactReader {
    StarJoinState* st;
    const StarJoinCompiler* c;
};
static void read_fact(void* arg, sj::Table* fact) {
    FactReader* r = static_cast<FactReader*>(arg);
    sj::Column* cols = static_cast<sj::Column*>(palloc0(sizeof(sj::Column) * (r->c->n_columns + 1)));
    int64 rows;
    read_columns(r->st, *r->c, r->st->spec.stratum_attno, cols, &rows);
    fact->columns = cols;
    fact->n_columns = r->c->n_columns + 1;
    fact->rows = rows;
}

// Compiles the spec into run->plan (false: the engine cannot take it now).
static bool compile_spec(StarJoinState* st, StarJoinCompiler* c, int n_strata) {
    sj::Plan& plan = st->run->plan;
    if (!starjoin_compile_quals(c, st->spec.quals, &plan.fact_filter)) return false;
    ListCell* lc;
    foreach (lc, st->spec.groups)
        if (!starjoin_compile(c, static_cast<Node*>(lfirst(lc)), sj::Kind::Int, &plan.group_parts[plan.n_group_parts++]))
            return false;
    foreach (lc, st->spec.measures) {
        Node* m = static_cast<Node*>(lfirst(lc));
        sj::ProgramRef& ref = plan.measures[plan.n_measures++];
        if (IsA(m, Integer)) continue;  // COUNT(*): the empty program
        if (!starjoin_compile(c, m, sj::Kind::Float, &ref)) return false;
    }
    plan.stratum_column = c->n_columns;  // read_columns appends it
    plan.n_strata = n_strata;
    return true;
}

static void run_star_join(StarJoinState* st) {
    const int n_strata = aqp_sample_design_strata(st->spec.sample_relid);
    if (n_strata < 1) {
        st->fallback = true;
        aqp_sample_note_star_join_run(-1);
        return;
    }
    MemoryContext cxt = st->css.ss.ps.state->es_query_cxt;
    st->run = new StarJoinRun();
    st->free_run.func = [](void* arg) { delete static_cast<StarJoinRun*>(arg); };
    st->free_run.arg = st->run;
    MemoryContextRegisterResetCallback(cxt, &st->free_run);
    StarJoinCompiler c{&st->run->plan, st->spec.fact_varno, 0, {}, {}, nullptr};
    if (!compile_spec(st, &c, n_strata)) {
        st->fallback = true;
        aqp_sample_note_star_join_run(-1);
        return;
    }
    sj::Inputs in;
    FactReader reader{st, &c};
    approx::ExecContext ctx = engine_settings();  // last_run() is the Approx Sample Scan's
    approx::RunStats stats;
    ctx.stats = &stats;
    StarJoinRun* run = st->run;
    approx::Status status;
    if (!starjoin_run_served(st->spec.sample_relid, &c, st->spec.stratum_attno, &run->plan, &in, read_fact, &reader,
                             &ctx, &run->result, &status)) {
        if (in.fact.columns == nullptr) read_fact(&reader, &in.fact);
        status = approx::guarded([&] { return sj::run(run->plan, in, ctx, run->result); });
    }
    switch (status.code) {
        case approx::StatusCode::Ok:
            aqp_sample_note_star_join_run(stats.device == approx::Device::Gpu ? 1 : 0);
            return;
        case approx::StatusCode::DivisionByZero:
            ereport(ERROR, (errcode(ERRCODE_DIVISION_BY_ZERO), errmsg("division by zero")));
            break;
        case approx::StatusCode::OutOfRange: {
            // PostgreSQL's message ("integer out of range"), without the
            // engine's " (fact row N)": the CPU plan's error, word for word.
            char* where = strstr(status.message, " (");
            if (where != nullptr) *where = '\0';
            ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("%s", status.message)));
            break;
        }
        case approx::StatusCode::Cancelled: CHECK_FOR_INTERRUPTS(); break;
        case approx::StatusCode::Declined:
        case approx::StatusCode::InvalidArgument:
        case approx::StatusCode::NotServed:
            st->fallback = true;
            aqp_sample_note_star_join_run(-1);
            return;
        default: break;
    }
    raise_if_error(status, "approx star join");
}

// Group g's row: its keys and per measure output its partial state.
static void fill_group(StarJoinState* st, TupleTableSlot* slot, int64 g) {
    const sj::Result& r = st->run->result;
    const bool none = g >= r.groups;  // the one row without GROUP BY when no row passed
    TupleDesc desc = slot->tts_tupleDescriptor;
    approx::sample::GroupPart* parts =
        static_cast<approx::sample::GroupPart*>(palloc(sizeof(approx::sample::GroupPart) * Max(1, r.n_strata)));
    int i = 0;
    ListCell* lc;
    foreach (lc, st->spec.outputs) {
        const int out = intVal(lfirst(lc));
        if (out >= 0) {
            const size_t at = static_cast<size_t>(g * r.n_parts + out);
            slot->tts_isnull[i] = r.key_nulls[at] != 0;
            const int64 v = r.keys[at];
            switch (TupleDescAttr(desc, i)->atttypid) {
                case INT2OID: slot->tts_values[i] = Int16GetDatum(static_cast<int16>(v)); break;
                case INT4OID: slot->tts_values[i] = Int32GetDatum(static_cast<int32>(v)); break;
                case DATEOID: slot->tts_values[i] = DateADTGetDatum(static_cast<DateADT>(v)); break;
                default: slot->tts_values[i] = Int64GetDatum(v); break;
            }
        } else {
            const int m = -1 - out;
            int n = 0;
            for (int s = 0; s < r.n_strata && !none; ++s) {
                if (r.rows[static_cast<size_t>(g * r.n_strata + s)] == 0) continue;
                parts[n].stratum = s;
                parts[n].m = r.at(g, s, m);
                ++n;
            }
            const int number = intVal(list_nth(st->spec.measure_numbers, m));
            slot->tts_values[i] = PointerGetDatum(aqp_sample_moment_state_bytes(st->spec.sample_relid, number, parts, n));
            slot->tts_isnull[i] = false;
        }
        ++i;
    }
}

static TupleTableSlot* exec_star_join(CustomScanState* node) {
    StarJoinState* st = reinterpret_cast<StarJoinState*>(node);
    if (!st->ran) {
        st->ran = true;
        run_star_join(st);
    }
    TupleTableSlot* slot = node->ss.ss_ScanTupleSlot;
    ExprContext* econtext = node->ss.ps.ps_ExprContext;
    ResetExprContext(econtext);
    if (st->fallback) {
        TupleTableSlot* child = ExecProcNode(static_cast<PlanState*>(linitial(node->custom_ps)));
        if (TupIsNull(child)) return ExecClearTuple(slot);
        ExecCopySlot(slot, child);
    } else {
        // Without GROUP BY one row, also when no row passed (states of no
        // stratum: the final functions see the sample, as after no row).
        const int64 groups = st->run->result.groups;
        if (st->next >= (list_length(st->spec.groups) == 0 ? 1 : groups)) return ExecClearTuple(slot);
        ExecClearTuple(slot);
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        fill_group(st, slot, st->next++);
        MemoryContextSwitchTo(old);
        ExecStoreVirtualTuple(slot);
    }
    if (node->ss.ps.ps_ProjInfo == nullptr) return slot;
    econtext->ecxt_scantuple = slot;
    return ExecProject(node->ss.ps.ps_ProjInfo);
}

static void end_star_join(CustomScanState* node) { ExecEndNode(static_cast<PlanState*>(linitial(node->custom_ps))); }

static void rescan_star_join(CustomScanState* node) {
    StarJoinState* st = reinterpret_cast<StarJoinState*>(node);
    st->next = 0;  // the groups are kept (no parameters reach the node)
    ExecReScan(static_cast<PlanState*>(linitial(node->custom_ps)));
}

static const CustomExecMethods starjoin_exec_methods = {
    "Approx Star Join", begin_star_join, exec_star_join, end_star_join, rescan_star_join, nullptr, nullptr,
    nullptr,           nullptr,          nullptr,        nullptr,       nullptr,          nullptr,
};

static Node* create_star_join_state(CustomScan*) {
    StarJoinState* st = static_cast<StarJoinState*>(palloc0(sizeof(StarJoinState)));
    NodeSetTag(st, T_CustomScanState);
    st->css.methods = &starjoin_exec_methods;
    return reinterpret_cast<Node*>(st);
}

const CustomScanMethods starjoin_scan_methods = {"Approx Star Join", create_star_join_state};

void starjoin_exec_register(void) { RegisterCustomScanMethods(&starjoin_scan_methods); }
