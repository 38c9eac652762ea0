// The "Approx Star Join" CustomScan at execution (starjoin/starjoin_glue.h):
// on the first row it compiles its spec into the engine's plan, reads the
// columns the programs use from the sample relation and the dimensions
// (starjoin/read.cpp: the statement's snapshot; text as dictionary codes),
// runs approx::starjoin::run() on the device the settings pick
// (approx_gpu.device) -- in the GPU service when the session's calls go
// there (served.cpp: the fact's columns then stay resident in the service,
// and later runs read none) -- and returns per group the group keys and each
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
#include "utils/lsyscache.h"
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
    StarJoinDictionary** dicts[1 + sj::kMaxDims];  // per table, per column: text columns' dictionaries
    StarJoinDictionary** group_dicts;              // per group part: its dictionary (GROUP BY a text column)
    uint64 table_keys[1 + sj::kMaxDims];           // per table: its version's key (cache.cpp; 0: none)
    bool fact_kept;                                // the session keeps the fact's read at table_keys[0]
    int tables_kept, tables_read;                  // tables from the session's kept reads, and read
    Oid exact_table;                               // the exact pass: the table read instead of the sample
    AttrNumber fact_extra;                         // the fact's stratum column (-1: zeros, the exact pass)
};

static void begin_star_join(CustomScanState* node, EState* estate, int eflags) {
    StarJoinState* st = reinterpret_cast<StarJoinState*>(node);
    CustomScan* cs = reinterpret_cast<CustomScan*>(node->ss.ps.plan);
    starjoin_spec_deform(cs->custom_private, &st->spec);
    node->custom_ps = list_make1(ExecInitNode(static_cast<Plan*>(linitial(cs->custom_plans)), estate, eflags));
}

// Reads table t of the plan (0: the fact, its stratum appended) into *table
// once; its text columns' dictionaries into st->dicts[t].
struct TableReader {
    StarJoinState* st;
    const StarJoinCompiler* c;
};
static void read_table(TableReader* r, int t, sj::Table* table) {
    if (table->columns != nullptr) return;
    const StarJoinTable& tab = r->c->tables[t];
    sj::Column* cols = static_cast<sj::Column*>(palloc0(sizeof(sj::Column) * (tab.n_columns + 1)));
    EState* estate = r->st->css.ss.ps.state;
    uint64* key = &r->st->table_keys[t];
    if (t > 0) *key = starjoin_table_key(tab, 0, nullptr);  // the fact's: run_star_join's, once
    const bool kept = starjoin_read_table_cached(tab, *key, estate->es_snapshot, t == 0 ? r->st->fact_extra : 0,
                                                 estate->es_query_cxt, cols, &table->rows, r->st->dicts[t]);
    table->columns = cols;
    table->n_columns = tab.n_columns + (t == 0 ? 1 : 0);
    ++(kept ? r->st->tables_kept : r->st->tables_read);
    aqp_sample_note_star_join_reads(r->st->tables_kept, r->st->tables_read);
}
// The fact's reader as served.cpp calls it (StarJoinReadFact).
static void read_fact(void* arg, sj::Table* fact) { read_table(static_cast<TableReader*>(arg), 0, fact); }

// The exact pass (aqp/sample.h): the fact's columns are the synopsis'
// table's of the same names and types; false: some column differs.
static bool fact_of_table(StarJoinTable* fact, Oid table) {
    for (int i = 0; i < fact->n_columns; ++i) {
        const char* name = get_attname(fact->relid, fact->attnos[i], true);
        const AttrNumber attno = name != nullptr ? get_attnum(table, name) : InvalidAttrNumber;
        if (attno <= 0 || get_atttype(table, attno) != fact->types[i]) return false;
        fact->attnos[i] = attno;
    }
    fact->relid = table;
    return true;
}

// Under approx_gpu.exact_pass = on the exact pass runs only from columns the
// session keeps or the GPU service holds (a first read of a whole table in
// one backend is slower than PostgreSQL's parallel plan).
static bool exact_columns_at_hand(const StarJoinState* st, const approx::ExecContext& ctx) {
    if (aqp_sample_exact_pass_forced() || st->fact_kept) return true;
    const uint64 key = st->table_keys[0];
    const GpuServiceHooks& hooks = gpu_service_hooks();
    return key != 0 && ctx.service != nullptr && hooks.resident != nullptr && hooks.resident(key);
}

static void run_star_join(StarJoinState* st) {
    const double t0 = glue_clock_ms();
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
    StarJoinCompiler* c = static_cast<StarJoinCompiler*>(palloc(sizeof(StarJoinCompiler)));
    if (!starjoin_compiler_init(c, &st->run->plan, &st->spec) || !starjoin_compile_spec(c, &st->spec, n_strata)) {
        st->fallback = true;
        aqp_sample_note_star_join_run(-1);
        return;
    }
    approx::ExecContext ctx = engine_settings();  // last_run() is the Approx Sample Scan's
    st->exact_table = aqp_sample_exact_pass_table(st->spec.sample_relid);
    st->fact_extra = st->spec.stratum_attno;
    if (OidIsValid(st->exact_table)) {
        st->fact_extra = -1;
        if (!fact_of_table(&c->tables[0], st->exact_table)) {
            st->fallback = true;
            aqp_sample_note_star_join_run(-1);
            return;
        }
    }
    // The fact's version key, once: the service's resident key, the kept read's.
    st->table_keys[0] = starjoin_table_key(c->tables[0], st->fact_extra, &st->fact_kept);
    if (OidIsValid(st->exact_table) && !exact_columns_at_hand(st, ctx)) {
        st->fallback = true;
        aqp_sample_note_star_join_run(-1);
        return;
    }
    // The tables: the dimensions now; the fact (its stratum appended) now
    // too when it has a text column (its codes are this read's), else only
    // when the GPU service does not hold its columns resident (served.cpp).
    sj::Inputs in;
    TableReader reader{st, c};
    for (int t = 0; t < c->n_tables; ++t) {
        st->dicts[t] = static_cast<StarJoinDictionary**>(palloc0(sizeof(StarJoinDictionary*) * (c->tables[t].n_columns + 1)));
        if (t > 0) read_table(&reader, t, &in.dims[t - 1]);
    }
    if (starjoin_table_has_text(c->tables[0])) read_table(&reader, 0, &in.fact);
    if (!starjoin_fill_lookups(c, st->dicts)) {
        st->fallback = true;
        aqp_sample_note_star_join_run(-1);
        return;
    }
    // GROUP BY a text column: the node outputs its dictionary's values.
    st->group_dicts = static_cast<StarJoinDictionary**>(palloc0(sizeof(StarJoinDictionary*) * (list_length(st->spec.groups) + 1)));
    ListCell* lc;
    foreach (lc, st->spec.groups) {
        Var* v = starjoin_text_var(static_cast<Node*>(lfirst(lc)));
        if (v == nullptr) continue;
        const int t = starjoin_table_of(c, v->varno);
        st->group_dicts[foreach_current_index(lc)] = st->dicts[t][starjoin_column(c, t, v->varattno, v->vartype)];
    }
    approx::RunStats stats;
    ctx.stats = &stats;
    StarJoinRun* run = st->run;
    approx::Status status;
    if (!starjoin_run_served(&c->tables[0], st->table_keys[0], &run->plan, &in, st->table_keys + 1, read_fact, &reader,
                             &ctx, &run->result, &status)) {
        read_fact(&reader, &in.fact);
        status = approx::guarded([&] { return sj::run(run->plan, in, ctx, run->result); });
    }
    switch (status.code) {
        case approx::StatusCode::Ok:
            aqp_sample_note_star_join_run(stats.device == approx::Device::Gpu ? 1 : 0);
            aqp_sample_note_star_join_ms(glue_clock_ms() - t0, stats.get("service_ms_round_trip"),
                                         stats.get("service_ms_run"));
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
            const StarJoinDictionary* dict = st->group_dicts[out];
            if (dict != nullptr) {
                slot->tts_values[i] = slot->tts_isnull[i] ? 0 : dict->values[v];
                ++i;
                continue;
            }
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
    // The exact pass declined: groups of no row (the Approx Sample Scan
    // discards them and runs PostgreSQL's exact plan); the child would read
    // the sample relation.
    const bool exact_declined = st->fallback && OidIsValid(st->exact_table);
    if (st->fallback && !exact_declined) {
        TupleTableSlot* child = ExecProcNode(static_cast<PlanState*>(linitial(node->custom_ps)));
        if (TupIsNull(child)) return ExecClearTuple(slot);
        ExecCopySlot(slot, child);
    } else {
        // Without GROUP BY one row, also when no row passed (states of no
        // stratum: the final functions see the sample, as after no row).
        const int64 groups = exact_declined ? 0 : st->run->result.groups;
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
