// The star-join compiler's tables (starjoin/starjoin_glue.h): the fact and
// its dimensions, the columns their programs read (a dimension's key first),
// and the whole plan of a spec -- the dimensions' filters and outputs, the
// fact filter, GROUP BY expressions, measures and the stratum.
#include "starjoin/starjoin_glue.h"

extern "C" {
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
}

namespace sj = approx::starjoin;
using sj::Kind;

static bool fail(StarJoinCompiler* c, const char* why) {
    if (c->failed == nullptr) c->failed = why;
    return false;
}

bool starjoin_column_type(Oid type, sj::ColType* out) {
    switch (type) {
        case INT2OID: *out = sj::ColType::Int16; return true;
        case INT4OID: *out = sj::ColType::Int32; return true;
        case INT8OID: *out = sj::ColType::Int64; return true;
        case FLOAT4OID: *out = sj::ColType::Float32; return true;
        case FLOAT8OID: *out = sj::ColType::Float64; return true;
        case DATEOID: *out = sj::ColType::Date; return true;
        case BOOLOID: *out = sj::ColType::Bool; return true;
        case TEXTOID:
        case VARCHAROID: *out = sj::ColType::Code; return true;  // dictionary codes (read.cpp)
        default: return false;
    }
}

bool starjoin_table_has_text(const StarJoinTable& t) {
    sj::ColType type;
    for (int i = 0; i < t.n_columns; ++i)
        if (starjoin_column_type(t.types[i], &type) && type == sj::ColType::Code) return true;
    return false;
}

int starjoin_column(StarJoinCompiler* c, int t, AttrNumber attno, Oid type) {
    StarJoinTable& tab = c->tables[t];
    for (int i = 0; i < tab.n_columns; ++i)
        if (tab.attnos[i] == attno) return i;
    sj::ColType ct;
    if (!starjoin_column_type(type, &ct)) {
        fail(c, psprintf("a column of type %s", format_type_be(type)));
        return -1;
    }
    if (tab.n_columns == kStarJoinMaxColumns) {
        fail(c, "more columns than the star join reads");
        return -1;
    }
    tab.attnos[tab.n_columns] = attno;
    tab.types[tab.n_columns] = type;
    return tab.n_columns++;
}

int starjoin_table_of(const StarJoinCompiler* c, Index varno) {
    for (int t = 0; t < c->n_tables; ++t)
        if (c->tables[t].varno == varno) return t;
    return -1;
}

bool starjoin_compiler_init(StarJoinCompiler* c, sj::Plan* plan, const StarJoinSpec* spec) {
    memset(static_cast<void*>(c), 0, sizeof *c);
    c->plan = plan;
    c->n_tables = 1 + list_length(spec->dims);
    c->tables[0].varno = spec->fact_varno;
    c->tables[0].relid = spec->sample_relid;
    ListCell* lc;
    foreach (lc, spec->dims) {
        List* d = static_cast<List*>(lfirst(lc));
        const int t = 1 + foreach_current_index(lc);
        c->tables[t].varno = static_cast<Index>(intVal(linitial(d)));
        c->tables[t].relid = static_cast<Oid>(intVal(lsecond(d)));
        Var* fk = static_cast<Var*>(lthird(d));
        Var* key = static_cast<Var*>(lfourth(d));
        sj::ColType a, b;
        if (!starjoin_column_type(fk->vartype, &a) || !starjoin_column_type(key->vartype, &b) ||
            sj::column_kind(a) != Kind::Int || a == sj::ColType::Code || b == sj::ColType::Code ||
            starjoin_column(c, t, key->varattno, key->vartype) != 0 || starjoin_column(c, 0, fk->varattno, fk->vartype) < 0)
            return fail(c, "a join key of a type the star join does not compare");
    }
    return true;
}

Var* starjoin_text_var(Node* e) {
    while (e != nullptr && IsA(e, RelabelType)) e = reinterpret_cast<Node*>(reinterpret_cast<RelabelType*>(e)->arg);
    if (e == nullptr || !IsA(e, Var)) return nullptr;
    Var* v = reinterpret_cast<Var*>(e);
    // Grouping by codes groups by bytes: deterministic collations only.
    if ((v->vartype != TEXTOID && v->vartype != VARCHAROID) || !OidIsValid(v->varcollid) ||
        !get_collation_isdeterministic(v->varcollid))
        return nullptr;
    return v;
}

static bool reads_other(Node* n, StarJoinCompiler* c) {
    if (n == nullptr) return false;
    if (IsA(n, Var) && reinterpret_cast<Var*>(n)->varno != static_cast<int>(c->tables[0].varno)) return true;
    return expression_tree_walker(n, walker(reads_other), c);
}

bool starjoin_compile_fact_filter(StarJoinCompiler* c, List* quals, sj::ProgramRef* out) {
    c->no_raise = reads_other(reinterpret_cast<Node*>(quals), c);
    const bool ok = starjoin_compile_quals(c, quals, out);
    c->no_raise = false;
    return ok;
}

bool starjoin_compile_spec(StarJoinCompiler* c, const StarJoinSpec* spec, int n_strata) {
    sj::Plan& plan = *c->plan;
    plan.n_dims = c->n_tables - 1;
    ListCell* lc;
    foreach (lc, spec->dims) {
        List* d = static_cast<List*>(lfirst(lc));
        sj::DimensionPlan& dp = plan.dims[foreach_current_index(lc)];
        Var* fk = static_cast<Var*>(lthird(d));
        dp.key_column = 0;
        dp.fact_column = starjoin_column(c, 0, fk->varattno, fk->vartype);
        c->current = 1 + foreach_current_index(lc);
        c->no_raise = true;
        const bool ok = starjoin_compile_quals(c, static_cast<List*>(list_nth(d, 4)), &dp.filter);
        c->current = 0;
        c->no_raise = false;
        if (!ok) return false;
    }
    if (!starjoin_compile_fact_filter(c, spec->quals, &plan.fact_filter)) return false;
    foreach (lc, spec->groups)
        if (!starjoin_compile(c, static_cast<Node*>(lfirst(lc)), Kind::Int, &plan.group_parts[plan.n_group_parts++]))
            return false;
    foreach (lc, spec->measures) {
        Node* m = static_cast<Node*>(lfirst(lc));
        sj::ProgramRef& ref = plan.measures[plan.n_measures++];
        if (IsA(m, Integer)) continue;  // COUNT(*): the empty program
        if (!starjoin_compile(c, m, Kind::Float, &ref)) return false;
    }
    // Each dimension output: `Col k` of the column a fact program reads.
    for (int d = 0; d < plan.n_dims; ++d) {
        const StarJoinTable& t = c->tables[1 + d];
        sj::DimensionPlan& dp = plan.dims[d];
        dp.n_outputs = t.n_outputs;
        for (int o = 0; o < t.n_outputs; ++o) {
            sj::ColType ct;
            starjoin_column_type(t.types[t.output_columns[o]], &ct);
            dp.output_kinds[o] = sj::column_kind(ct);
            dp.outputs[o].first = static_cast<int32>(plan.code.size());
            dp.outputs[o].length = 1;
            sj::Instr in;
            in.op = sj::Op::Col;
            in.kind = dp.output_kinds[o];
            in.a = t.output_columns[o];
            plan.code.push_back(in);
        }
    }
    plan.stratum_column = c->tables[0].n_columns;  // read.cpp appends it
    plan.n_strata = n_strata;
    return true;
}
