// ByteWriter / ByteReader (byte_codec.h).
#include "runtime/byte_codec.h"

extern "C" {
#include "utils/memutils.h"
}

void byte_writer_init(ByteWriter* w) {
    initStringInfo(&w->buf);
    appendStringInfoSpaces(&w->buf, VARHDRSZ);
}

static void put_le(ByteWriter* w, uint64 v, int bytes) {
    char b[8];
    for (int i = 0; i < bytes; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    appendBinaryStringInfo(&w->buf, b, bytes);
}

void put_u8(ByteWriter* w, uint8 v) { put_le(w, v, 1); }
void put_i32(ByteWriter* w, int32 v) { put_le(w, static_cast<uint32>(v), 4); }
void put_i64(ByteWriter* w, int64 v) { put_le(w, static_cast<uint64>(v), 8); }
void put_f64(ByteWriter* w, double v) {
    uint64 bits;
    memcpy(&bits, &v, 8);
    put_le(w, bits, 8);
}
void put_f64s(ByteWriter* w, const double* v, int64 n) {
#ifdef WORDS_BIGENDIAN
    for (int64 i = 0; i < n; ++i) put_f64(w, v[i]);
#else
    // Little-endian host: the in-memory layout is the stored layout.
    if (static_cast<Size>(w->buf.len) + static_cast<Size>(n) * 8 >= MaxAllocSize)
        ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                        errmsg("serialised value would exceed 1 GB (%lld float8 values)", static_cast<long long>(n)),
                        errhint("Use a smaller sample, or SET max_parallel_workers_per_gather = 0.")));
    appendBinaryStringInfo(&w->buf, reinterpret_cast<const char*>(v), static_cast<int>(n * 8));
#endif
}

bytea* byte_writer_finish(ByteWriter* w) {
    bytea* b = reinterpret_cast<bytea*>(w->buf.data);
    SET_VARSIZE(b, w->buf.len);
    return b;
}

void byte_reader_init_raw(ByteReader* r, const char* data, size_t len, const char* what) {
    r->p = data;
    r->end = data + len;
    r->what = what;
}

void byte_reader_init(ByteReader* r, const bytea* b, const char* what) {
    byte_reader_init_raw(r, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), what);
}

static void need(ByteReader* r, int64 bytes) {
    if (bytes < 0 || r->end - r->p < bytes)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION), errmsg("invalid %s: value is truncated", r->what)));
}

static uint64 get_le(ByteReader* r, int bytes) {
    need(r, bytes);
    uint64 v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64>(static_cast<unsigned char>(r->p[i])) << (8 * i);
    r->p += bytes;
    return v;
}

uint8 get_u8(ByteReader* r) { return static_cast<uint8>(get_le(r, 1)); }
int32 get_i32(ByteReader* r) { return static_cast<int32>(static_cast<uint32>(get_le(r, 4))); }
int64 get_i64(ByteReader* r) { return static_cast<int64>(get_le(r, 8)); }
double get_f64(ByteReader* r) {
    uint64 bits = get_le(r, 8);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}
void get_f64s(ByteReader* r, double* out, int64 n) {
    if (n < 0 || n > (r->end - r->p) / 8) need(r, -1);
#ifdef WORDS_BIGENDIAN
    for (int64 i = 0; i < n; ++i) out[i] = get_f64(r);
#else
    memcpy(out, r->p, static_cast<size_t>(n) * 8);
    r->p += n * 8;
#endif
}
void byte_reader_expect_end(ByteReader* r) {
    if (r->p != r->end)
        ereport(ERROR, (errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
                        errmsg("invalid %s: %lld trailing bytes", r->what, static_cast<long long>(r->end - r->p))));
}
