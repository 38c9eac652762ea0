// Synopsis values this backend parsed and validated lately, for the query
// functions (approx_count, approx_count_many, ...). Parsing copies the sample
// and validation recomputes its statistics: most of a small call's time once
// the GPU service holds the sample. The same stored value used again -- the
// usual case: a synopsis in a table, queried over and over -- is parsed once.
// Entries are keyed by a byte-for-byte copy of the value as stored -- still
// compressed when it was (a stored synopsis usually is: pglz takes a sample
// of 10^4 rows from 160 kB to 48 kB), so that a hit costs a fetch and a
// memcmp, not a decompression -- compared in full: a value that differs
// anywhere is parsed and validated afresh.
#include "synopsis/synopsis.h"

#include "core/service.hpp"

extern "C" {
#include "access/detoast.h"
}

namespace synopsis_glue {

namespace {

constexpr int kEntries = 4;
constexpr size_t kMaxEntryBytes = size_t(16) << 20;  // larger values are parsed every time

struct Parsed {
    MemoryContext mcxt;  // holds bytes and value; deleted on eviction
    char* bytes;
    size_t len;
    const SynValue* value;
};
Parsed entries[kEntries];
int next_entry = 0;

}  // namespace

const SynValue* synopsis_arg_shared(FunctionCallInfo fcinfo, int argno) {
    // The key: the value in line (fetched from its TOAST table when stored
    // out of line), not decompressed.
    struct varlena* raw = reinterpret_cast<struct varlena*>(DatumGetPointer(PG_GETARG_DATUM(argno)));
    if (VARATT_IS_EXTERNAL(raw)) raw = detoast_external_attr(raw);
    const char* data = reinterpret_cast<const char*>(raw);
    const size_t len = VARSIZE_ANY(raw);
    for (const Parsed& e : entries)
        if (e.value && e.len == len && memcmp(e.bytes, data, len) == 0) return e.value;
    const bytea* b = reinterpret_cast<const bytea*>(pg_detoast_datum_packed(raw));
    if (VARSIZE_ANY_EXHDR(b) > kMaxEntryBytes) return stored_value(b);  // the parsed value is this large
    Parsed& e = entries[next_entry];
    next_entry = (next_entry + 1) % kEntries;
    if (e.mcxt) MemoryContextDelete(e.mcxt);
    e = Parsed{nullptr, nullptr, 0, nullptr};  // an ERROR below leaves the slot empty
    MemoryContext mcxt = AllocSetContextCreate(TopMemoryContext, "approx_gpu parsed synopsis", ALLOCSET_DEFAULT_SIZES);
    MemoryContext old = MemoryContextSwitchTo(mcxt);
    SynValue* v;
    PG_TRY();
    {
        v = stored_value(b);
        // Kept with the value: calls through the GPU service key its resident
        // sample by this hash and need not compute it every time.
        if (v->s.m > 0)
            v->s.sample_key = approx::service::content_hash(v->s.sample, sizeof(double) * static_cast<size_t>(v->s.m) *
                                                                             static_cast<size_t>(v->s.d));
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(old);
        MemoryContextDelete(mcxt);
        PG_RE_THROW();
    }
    PG_END_TRY();
    char* copy = static_cast<char*>(palloc_extended(len ? len : 1, MCXT_ALLOC_HUGE));
    memcpy(copy, data, len);
    MemoryContextSwitchTo(old);
    e = Parsed{mcxt, copy, len, v};
    return v;
}

}  // namespace synopsis_glue
