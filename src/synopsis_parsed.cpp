// Synopsis values this backend parsed and validated lately, for the query
// functions (approx_count, approx_count_many, ...). Parsing copies the sample
// and validation recomputes its statistics: most of a small call's time once
// the GPU service holds the sample. The same stored value used again -- the
// usual case: a synopsis in a table, queried over and over -- is parsed once.
// Entries are keyed by a byte-for-byte copy of the value, compared in full,
// so a value that differs anywhere is parsed and validated afresh.
#include "synopsis.h"

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
    const bytea* b = PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(argno));
    const char* data = VARDATA_ANY(b);
    const size_t len = VARSIZE_ANY_EXHDR(b);
    for (const Parsed& e : entries)
        if (e.value && e.len == len && memcmp(e.bytes, data, len) == 0) return e.value;
    if (len > kMaxEntryBytes) return stored_value(b);
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
