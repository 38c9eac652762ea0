// A minimal jsonb builder over pushJsonbValue, for the functions that answer
// in jsonb. Trivially destructible: it may be live across an ERROR.
#pragma once

extern "C" {
#include "postgres.h"

#include "utils/jsonb.h"
}

class JsonbBuilder {
public:
    JsonbBuilder();
    void begin_object(const char* key = nullptr);  // key = nullptr at top level / inside arrays
    void end_object();
    void begin_array(const char* key);
    void end_array();
    void add_number(const char* key, double v);  // NaN and ±Infinity become null
    void add_int(const char* key, int64 v);
    void add_string(const char* key, const char* v);
    void add_bool(const char* key, bool v);
    void add_null(const char* key);
    Jsonb* finish();

private:
    void put_key(const char* key);
    JsonbParseState* state_;
    JsonbValue* result_;
};
