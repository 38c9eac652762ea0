// The star-join node's tables at execution (starjoin/starjoin_glue.h): the
// columns its programs read, from the sample relation and each dimension
// (a sequential scan under the statement's snapshot; the executor has
// checked the caller's privileges on their range-table entries and locked
// them), at the engine type's width; text columns as dictionary codes (the
// distinct values in the order of their bytes), and the Lookup tables of
// the predicates over them, each predicate evaluated by PostgreSQL's executor
// once per distinct value.
#include "starjoin/starjoin_glue.h"

extern "C" {
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

namespace sj = approx::starjoin;

// ---- dictionaries ---------------------------------------------------------------------
struct DictKey {
    const char* p;
    int32 len;
};
struct DictEntry {
    DictKey key;
    int32 code;
};
static uint32 dict_hash(const void* k, Size) {
    const DictKey* d = static_cast<const DictKey*>(k);
    return hash_bytes(reinterpret_cast<const unsigned char*>(d->p), d->len);
}
static int dict_match(const void* a, const void* b, Size) {
    const DictKey* x = static_cast<const DictKey*>(a);
    const DictKey* y = static_cast<const DictKey*>(b);
    return x->len == y->len && memcmp(x->p, y->p, x->len) == 0 ? 0 : 1;
}
struct DictBuilder {
    HTAB* map;
    StarJoinDictionary* dict;
    int32 cap;
};
static void dict_begin(DictBuilder* b) {
    HASHCTL ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.keysize = sizeof(DictKey);
    ctl.entrysize = sizeof(DictEntry);
    ctl.hash = dict_hash;
    ctl.match = dict_match;
    ctl.hcxt = CurrentMemoryContext;
    b->map = hash_create("approx star join dictionary", 256, &ctl, HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
    b->dict = static_cast<StarJoinDictionary*>(palloc0(sizeof(StarJoinDictionary)));
    b->cap = 64;
    b->dict->values = static_cast<Datum*>(palloc(sizeof(Datum) * b->cap));
}
static int32 dict_code(DictBuilder* b, Datum d) {
    text* t = DatumGetTextPP(d);
    DictKey key{VARDATA_ANY(t), static_cast<int32>(VARSIZE_ANY_EXHDR(t))};
    bool found;
    DictEntry* e = static_cast<DictEntry*>(hash_search(b->map, &key, HASH_ENTER, &found));
    if (found) return e->code;
    if (b->dict->n == b->cap) {
        b->cap *= 2;
        b->dict->values = static_cast<Datum*>(repalloc_huge(b->dict->values, sizeof(Datum) * b->cap));
    }
    text* copy = cstring_to_text_with_len(key.p, key.len);
    e->key.p = VARDATA(copy);  // the entry's key outlives the tuple
    e->code = b->dict->n;
    b->dict->values[b->dict->n] = PointerGetDatum(copy);
    return b->dict->n++;
}
// Orders a dictionary by its values' bytes and renumbers the column's codes
// to match, so that the codes are a function of the rows alone, not of the
// order a scan met them (a synchronized scan starts mid-table): two reads of
// the same rows -- two backends, or a backend and the GPU service's resident
// copy of another backend's read -- agree on every code.
static int dict_value_cmp(const void* a, const void* b, void* arg) {
    const Datum* values = static_cast<const Datum*>(arg);
    const text* x = DatumGetTextPP(values[*static_cast<const int32*>(a)]);
    const text* y = DatumGetTextPP(values[*static_cast<const int32*>(b)]);
    const int32 lx = VARSIZE_ANY_EXHDR(x), ly = VARSIZE_ANY_EXHDR(y);
    const int c = memcmp(VARDATA_ANY(x), VARDATA_ANY(y), Min(lx, ly));
    return c != 0 ? c : (lx > ly) - (lx < ly);
}
static void dict_canonical(StarJoinDictionary* dict, int32* codes, const uint8* nulls, int64 rows) {
    const int32 n = dict->n;
    if (n < 2) return;
    int32* order = static_cast<int32*>(palloc_extended(sizeof(int32) * n, MCXT_ALLOC_HUGE));
    int32* rank = static_cast<int32*>(palloc_extended(sizeof(int32) * n, MCXT_ALLOC_HUGE));
    Datum* sorted = static_cast<Datum*>(palloc_extended(sizeof(Datum) * n, MCXT_ALLOC_HUGE));
    for (int32 k = 0; k < n; ++k) order[k] = k;
    qsort_arg(order, n, sizeof(int32), dict_value_cmp, dict->values);
    for (int32 k = 0; k < n; ++k) {
        rank[order[k]] = k;
        sorted[k] = dict->values[order[k]];
    }
    for (int64 r = 0; r < rows; ++r) {
        if (nulls != nullptr && (nulls[r / 8] >> (r % 8)) & 1) continue;  // a NULL row's value was never written
        codes[r] = rank[codes[r]];
    }
    memcpy(dict->values, sorted, sizeof(Datum) * n);
    pfree(order);
    pfree(rank);
    pfree(sorted);
}

void starjoin_read_table(const StarJoinTable& t, Snapshot snapshot, AttrNumber extra_attno, sj::Column* cols,
                         int64* rows_out, StarJoinDictionary** dicts) {
    const int n = t.n_columns + (extra_attno != 0 ? 1 : 0);
    const bool zero_extra = extra_attno < 0;  // the exact pass's one stratum: zeros, nothing read
    AttrNumber attnos[kStarJoinMaxColumns + 1];
    sj::ColType types[kStarJoinMaxColumns + 1];
    DictBuilder builders[kStarJoinMaxColumns + 1];
    for (int i = 0; i < t.n_columns; ++i) {
        attnos[i] = t.attnos[i];
        starjoin_column_type(t.types[i], &types[i]);
        dicts[i] = nullptr;
        if (types[i] == sj::ColType::Code) {
            dict_begin(&builders[i]);
            dicts[i] = builders[i].dict;
        }
    }
    if (extra_attno != 0) {
        attnos[n - 1] = zero_extra ? 0 : extra_attno;
        types[n - 1] = sj::ColType::Int32;
    }
    const int n_read = zero_extra ? n - 1 : n;  // columns taken from the rows
    AttrNumber max_att = 0;
    for (int i = 0; i < n_read; ++i) max_att = Max(max_att, attnos[i]);
    int64 cap = 1024, rows = 0;
    char* data[kStarJoinMaxColumns + 1];
    uint8* nulls[kStarJoinMaxColumns + 1];
    bool any_null[kStarJoinMaxColumns + 1];
    for (int i = 0; i < n; ++i) {
        data[i] = static_cast<char*>(palloc_extended(cap * sj::column_width(types[i]), MCXT_ALLOC_HUGE));
        nulls[i] = static_cast<uint8*>(palloc_extended(cap / 8, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO));
        any_null[i] = false;
    }
    Relation rel = table_open(t.relid, AccessShareLock);
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
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
        if (zero_extra) *reinterpret_cast<int32*>(data[n - 1] + rows * sizeof(int32)) = 0;
        for (int i = 0; i < n_read; ++i) {
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
                    *reinterpret_cast<int32*>(at) = DatumGetInt32(d) - (extra_attno > 0 && i == n - 1 ? 1 : 0);
                    break;
                case sj::ColType::Int64: *reinterpret_cast<int64*>(at) = DatumGetInt64(d); break;
                case sj::ColType::Float32: *reinterpret_cast<float4*>(at) = DatumGetFloat4(d); break;
                case sj::ColType::Float64: *reinterpret_cast<float8*>(at) = DatumGetFloat8(d); break;
                case sj::ColType::Date: *reinterpret_cast<DateADT*>(at) = DatumGetDateADT(d); break;
                case sj::ColType::Bool: *reinterpret_cast<uint8*>(at) = DatumGetBool(d) ? 1 : 0; break;
                case sj::ColType::Code: *reinterpret_cast<int32*>(at) = dict_code(&builders[i], d); break;
                default: break;
            }
        }
        ++rows;
    }
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    table_close(rel, NoLock);
    for (int i = 0; i < t.n_columns; ++i)
        if (types[i] == sj::ColType::Code) {
            hash_destroy(builders[i].map);
            dict_canonical(builders[i].dict, reinterpret_cast<int32*>(data[i]), any_null[i] ? nulls[i] : nullptr, rows);
        }
    for (int i = 0; i < n; ++i) {
        cols[i].type = types[i];
        cols[i].data = data[i];
        cols[i].nulls = any_null[i] ? nulls[i] : nullptr;
    }
    *rows_out = rows;
}

// ---- lookup tables ------------------------------------------------------------------------
// The predicate with its Var as PARAM_EXEC 0.
static Node* var_to_param(Node* n, Var* var) {
    if (n == nullptr) return nullptr;
    if (IsA(n, Var)) {
        Var* v = reinterpret_cast<Var*>(n);
        if (v->varno == var->varno && v->varattno == var->varattno && v->varlevelsup == 0) {
            Param* p = makeNode(Param);
            p->paramkind = PARAM_EXEC;
            p->paramid = 0;
            p->paramtype = v->vartype;
            p->paramtypmod = v->vartypmod;
            p->paramcollid = v->varcollid;
            p->location = -1;
            return reinterpret_cast<Node*>(p);
        }
    }
    return expression_tree_mutator(n, mutator(var_to_param), var);
}

bool starjoin_fill_lookups(StarJoinCompiler* c, StarJoinDictionary** const* dicts) {
    ListCell* lc;
    foreach (lc, c->lookups) {
        StarJoinLookup* l = static_cast<StarJoinLookup*>(lfirst(lc));
        const StarJoinDictionary* dict = dicts[l->table][l->column];
        Expr* e = reinterpret_cast<Expr*>(var_to_param(copy_node(l->expr), l->var));
        ExprContext* econtext = CreateStandaloneExprContext();
        ParamExecData* prm = static_cast<ParamExecData*>(palloc0(sizeof(ParamExecData)));
        econtext->ecxt_param_exec_vals = prm;
        ExprState* es = ExecInitExpr(e, nullptr);
        std::vector<int64>& pool = c->plan->pool;  // the plan's (no destructor runs here)
        const int32 at = static_cast<int32>(pool.size());
        const int32 n = dict->n;
        int64* isnull = static_cast<int64*>(palloc0(sizeof(int64) * Max(1, n)));
        bool any_null = false;
        // A NULL value gives NULL (the engine's Lookup of a NULL code).
        prm->value = 0;
        prm->isnull = true;
        bool null_result;
        ExecEvalExprSwitchContext(es, econtext, &null_result);
        for (int32 k = 0; k < n; ++k) {
            prm->value = dict->values[k];
            prm->isnull = false;
            bool r_null;
            Datum r = ExecEvalExprSwitchContext(es, econtext, &r_null);
            ResetExprContext(econtext);
            pool.push_back(r_null ? 0 : (DatumGetBool(r) ? 1 : 0));
            isnull[k] = r_null ? 1 : 0;
            any_null = any_null || r_null;
        }
        if (any_null) pool.insert(pool.end(), isnull, isnull + n);
        FreeExprContext(econtext, true);
        sj::Instr& in = c->plan->code[static_cast<size_t>(l->instr)];
        in.a = at;
        in.b = n;
        in.sub = any_null ? 1 : 0;
        if (!null_result) return false;  // not NULL of NULL: the engine cannot say it
    }
    return true;
}
