// JsonbBuilder (jsonb_builder.h).
#include "runtime/jsonb_builder.h"

#include <cmath>

extern "C" {
#include "utils/builtins.h"
#include "utils/numeric.h"
}

JsonbBuilder::JsonbBuilder() : state_(nullptr), result_(nullptr) {}

void JsonbBuilder::put_key(const char* key) {
    if (key == nullptr) return;
    JsonbValue k;
    k.type = jbvString;
    k.val.string.len = static_cast<int>(strlen(key));
    k.val.string.val = pstrdup(key);
    pushJsonbValue(&state_, WJB_KEY, &k);
}

void JsonbBuilder::begin_object(const char* key) {
    put_key(key);
    result_ = pushJsonbValue(&state_, WJB_BEGIN_OBJECT, nullptr);
}

void JsonbBuilder::end_object() { result_ = pushJsonbValue(&state_, WJB_END_OBJECT, nullptr); }

void JsonbBuilder::begin_array(const char* key) {
    put_key(key);
    result_ = pushJsonbValue(&state_, WJB_BEGIN_ARRAY, nullptr);
}

void JsonbBuilder::end_array() { result_ = pushJsonbValue(&state_, WJB_END_ARRAY, nullptr); }

static void push_scalar(JsonbParseState** state, JsonbValue* v) {
    // Inside an object a scalar follows its key (WJB_VALUE); inside an array
    // it is an element.
    bool in_array = (*state)->contVal.type == jbvArray;
    pushJsonbValue(state, in_array ? WJB_ELEM : WJB_VALUE, v);
}

void JsonbBuilder::add_number(const char* key, double v) {
    if (!std::isfinite(v)) {
        add_null(key);
        return;
    }
    put_key(key);
    JsonbValue j;
    j.type = jbvNumeric;
    j.val.numeric = DatumGetNumeric(DirectFunctionCall1(float8_numeric, Float8GetDatum(v)));
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_int(const char* key, int64 v) {
    put_key(key);
    JsonbValue j;
    j.type = jbvNumeric;
    j.val.numeric = int64_to_numeric(v);
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_string(const char* key, const char* v) {
    put_key(key);
    JsonbValue j;
    j.type = jbvString;
    j.val.string.len = static_cast<int>(strlen(v));
    j.val.string.val = pstrdup(v);
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_bool(const char* key, bool v) {
    put_key(key);
    JsonbValue j;
    j.type = jbvBool;
    j.val.boolean = v;
    push_scalar(&state_, &j);
}

void JsonbBuilder::add_null(const char* key) {
    put_key(key);
    JsonbValue j;
    j.type = jbvNull;
    push_scalar(&state_, &j);
}

Jsonb* JsonbBuilder::finish() { return JsonbValueToJsonb(result_); }
