// Byte (de)serialisation of stored values and aggregate states: an explicit
// little-endian layout whatever the host, and a reader that checks every
// length before it reads (a malformed value is an ERROR, never a crash).
#pragma once

extern "C" {
#include "postgres.h"

#include "lib/stringinfo.h"
}

struct ByteWriter {
    StringInfoData buf;
};
void byte_writer_init(ByteWriter* w);
void put_u8(ByteWriter* w, uint8 v);
void put_i32(ByteWriter* w, int32 v);
void put_i64(ByteWriter* w, int64 v);
void put_f64(ByteWriter* w, double v);
void put_f64s(ByteWriter* w, const double* v, int64 n);
bytea* byte_writer_finish(ByteWriter* w);

struct ByteReader {
    const char* p;
    const char* end;
    const char* what;  // for error messages: the type or aggregate being read
};
void byte_reader_init(ByteReader* r, const bytea* b, const char* what);
void byte_reader_init_raw(ByteReader* r, const char* data, size_t len, const char* what);
uint8 get_u8(ByteReader* r);
int32 get_i32(ByteReader* r);
int64 get_i64(ByteReader* r);
double get_f64(ByteReader* r);
void get_f64s(ByteReader* r, double* out, int64 n);
void byte_reader_expect_end(ByteReader* r);
