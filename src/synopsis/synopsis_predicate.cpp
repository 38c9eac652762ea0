// The JSON-predicate estimates approx_count(name, predicate),
// approx_sum / approx_avg(name, column, predicate) over a named synopsis. A
// query-text synopsis has number columns only. A table synopsis' columns keep
// their SQL types: a bound is a value of the column's type read by the type's
// input function (a date bound is a date string, an enum one a label), a
// dictionary column (text, bool, enum) is compared for equality only, and
// what plain SQL refuses is an ERROR (sum / avg of a non-number column, a
// number compared with a text or date column), never a computation over the
// internal numbers or codes.
#include "synopsis/synopsis.h"
#include "synopsis/synopsis_catalog.h"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
}

#include <cmath>

using namespace synopsis_glue;

namespace {

// How column j of the synopsis compares: its encoding and, for a table
// synopsis, the table column's type now (InvalidOid: a number of a
// query-text synopsis).
struct PredColumn {
    ValueEncoding enc;
    Oid type;
    int32 typmod;
    Oid collation;
};

void pred_columns(const SynValue* v, const NamedRow& row, PredColumn* out, const char* fn) {
    for (int j = 0; j < v->s.d; ++j) {
        out[j] = {static_cast<ValueEncoding>(v->encoding[j]), InvalidOid, -1, InvalidOid};
        if (!OidIsValid(row.relation)) continue;
        bool ok = j < row.d;
        HeapTuple tup = ok ? SearchSysCache2(ATTNUM, ObjectIdGetDatum(row.relation), Int16GetDatum(row.attnums[j]))
                           : nullptr;
        ok = ok && HeapTupleIsValid(tup);
        if (ok) {
            Form_pg_attribute att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
            ok = !att->attisdropped;
            out[j].type = att->atttypid;
            out[j].typmod = att->atttypmod;
            out[j].collation = att->attcollation;
            ReleaseSysCache(tup);
        }
        ValueEncoding now;
        if (!ok || !column_encoding(out[j].type, &now) || now != out[j].enc)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("%s: column \"%s\" of the synopsis was dropped or changed type since it was built", fn,
                                   v->names[j]),
                            errhint("Refresh the synopsis (refresh_synopsis).")));
    }
}

const char* type_name(const PredColumn& c) { return OidIsValid(c.type) ? format_type_be(c.type) : "number"; }

int column_by_name(const SynValue* v, const char* name, int len, const char* fn) {
    for (int j = 0; j < v->s.d; ++j)
        if (static_cast<int>(strlen(v->names[j])) == len && strncmp(v->names[j], name, len) == 0) return j;
    StringInfoData cols;
    initStringInfo(&cols);
    for (int j = 0; j < v->s.d; ++j) appendStringInfo(&cols, "%s%s", j ? ", " : "", v->names[j]);
    ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN), errmsg("%s: synopsis has no column \"%.*s\"", fn, len, name),
                    errhint("Its columns are: %s.", cols.data)));
    return -1;
}

// A bound of column j (JSON null: unbounded): a number for a number column;
// for the others a string (a JSON boolean for bool) read as a value of the
// column's type, then encoded as the build encoded the column (a dictionary
// string absent from the sample is code -1, which no row has).
double predicate_bound(const JsonbValue* val, bool upper, const SynValue* v, int j, const PredColumn& c,
                       const char* key, const char* fn) {
    if (val->type == jbvNull) return upper ? INFINITY : -INFINITY;
    if (c.enc == ValueEncoding::Number) {
        if (val->type != jbvNumeric)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: predicate bounds of \"%s\" must be numbers or null", fn, key)));
        double x = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, NumericGetDatum(val->val.numeric)));
        if (std::isnan(x))
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s: predicate bound of \"%s\" is NaN", fn, key)));
        return x;  // +-Infinity (a bound beyond float8) = unbounded
    }
    const char* literal = nullptr;
    if (val->type == jbvString)
        literal = pnstrdup(val->val.string.val, val->val.string.len);
    else if (val->type == jbvBool && c.type == BOOLOID)
        literal = val->val.boolean ? "true" : "false";
    else  // as SQL: no operator compares a date or text column with a number
        ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                        errmsg("%s: argument predicate: column \"%s\" is of type %s; give its bounds as strings of that "
                               "type, not as JSON %s",
                               fn, key, type_name(c), val->type == jbvNumeric ? "numbers" : "values of another type")));
    Oid in_fn, ioparam;
    getTypeInputInfo(c.type, &in_fn, &ioparam);
    Datum d = OidInputFunctionCall(in_fn, const_cast<char*>(literal), ioparam, c.typmod);
    if (c.enc == ValueEncoding::Dictionary) {
        Oid out_fn;
        bool varlena;
        getTypeOutputInfo(c.type, &out_fn, &varlena);
        return dictionary_code(v->dict[j], v->dict_size[j], dictionary_string(d, out_fn));
    }
    double x = 0;
    const char* why = encoding_number(c.enc, d, c.type, &x);
    if (why != nullptr) elog(ERROR, "%s: predicate of \"%s\": %s", fn, key, why);
    return x;
}

// predicate: {"col": [lo, hi], "col2": [null, hi], "col3": value} -> one box.
void predicate_box(const SynValue* v, const PredColumn* cols, Jsonb* pred, double* lo, double* hi, const char* fn) {
    for (int j = 0; j < v->s.d; ++j) lo[j] = -INFINITY, hi[j] = INFINITY;
    if (!JB_ROOT_IS_OBJECT(pred))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s: predicate must be a JSON object of column: [lo, hi]", fn)));
    JsonbIterator* it = JsonbIteratorInit(&pred->root);
    JsonbValue k, val;
    JsonbIteratorToken tok;
    while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE) {
        if (tok != WJB_KEY) continue;
        char* key = pnstrdup(k.val.string.val, k.val.string.len);
        int j = column_by_name(v, k.val.string.val, k.val.string.len, fn);
        const PredColumn& c = cols[j];
        tok = JsonbIteratorNext(&it, &val, true);
        bool scalar = val.type == jbvNumeric || val.type == jbvString || val.type == jbvBool;
        if (scalar) {
            lo[j] = hi[j] = predicate_bound(&val, false, v, j, c, key, fn);
            continue;
        }
        if (val.type != jbvBinary || !JsonContainerIsArray(val.val.binary.data) ||
            JsonContainerSize(val.val.binary.data) != 2)
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                     errmsg("%s: predicate of \"%s\" must be [lo, hi] (null = unbounded) or a number", fn, key)));
        // The dictionary is ordered by strcmp, not by the type's ordering.
        if (c.enc == ValueEncoding::Dictionary)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: argument predicate: column \"%s\" (%s) takes one value (equality), not a range",
                                   fn, key, type_name(c))));
        lo[j] = predicate_bound(getIthJsonbValueFromContainer(val.val.binary.data, 0), false, v, j, c, key, fn);
        hi[j] = predicate_bound(getIthJsonbValueFromContainer(val.val.binary.data, 1), true, v, j, c, key, fn);
    }
    // Equality of the dictionary's strings must be the column's own.
    for (int j = 0; j < v->s.d; ++j) {
        if (cols[j].enc != ValueEncoding::Dictionary || (lo[j] == -INFINITY && hi[j] == INFINITY)) continue;
        const char* problem = dictionary_equality_problem(cols[j].type, cols[j].typmod, cols[j].collation);
        if (problem != nullptr)
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("%s: argument predicate: column \"%s\": %s", fn, v->names[j], problem)));
    }
}

Datum named_estimate(FunctionCallInfo fcinfo, syn::Aggregate agg, const char* fn) {
    NamedRow row = resolve_named(PG_GETARG_TEXT_PP(0), fn, false, true, false);
    if (row.synopsis == nullptr)  // pg_dump keeps the metadata, not the value
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: synopsis \"%s\" has no value (restored from a dump)", fn,
                               text_to_cstring(PG_GETARG_TEXT_PP(0))),
                        errhint("Rebuild it with refresh_synopsis.")));
    SynValue* v = stored_value(row.synopsis);
    PredColumn* cols = static_cast<PredColumn*>(palloc(sizeof(PredColumn) * v->s.d));
    pred_columns(v, row, cols, fn);
    int column = 0;
    int pred_arg = 1;
    if (agg != syn::Aggregate::Count) {
        text* col = PG_GETARG_TEXT_PP(1);
        column = column_by_name(v, VARDATA_ANY(col), VARSIZE_ANY_EXHDR(col), fn);
        if (cols[column].enc != ValueEncoding::Number)  // as sum(text), avg(date): no such SQL function
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("%s: argument column_name: column \"%s\" is of type %s; plain SQL has no %s(%s)", fn,
                                   v->names[column], type_name(cols[column]), agg == syn::Aggregate::Sum ? "sum" : "avg",
                                   type_name(cols[column]))));
        pred_arg = 2;
    }
    double* lo = static_cast<double*>(palloc(sizeof(double) * v->s.d));
    double* hi = static_cast<double*>(palloc(sizeof(double) * v->s.d));
    predicate_box(v, cols, PG_GETARG_JSONB_P(pred_arg), lo, hi, fn);
    syn::BoxEstimate* e = run_boxes(v, 1, lo, hi, agg, column, fn);
    if (agg == syn::Aggregate::Sum) null_sums(v, 1, lo, hi, column, fn, e);
    return estimate_datum(fcinfo, e[0]);
}

}  // namespace

APPROX_FUNCTION(approx_gpu_approx_count_named) { return named_estimate(fcinfo, syn::Aggregate::Count, "approx_count"); }
APPROX_FUNCTION(approx_gpu_approx_sum_named) { return named_estimate(fcinfo, syn::Aggregate::Sum, "approx_sum"); }
APPROX_FUNCTION(approx_gpu_approx_avg_named) { return named_estimate(fcinfo, syn::Aggregate::Avg, "approx_avg"); }
