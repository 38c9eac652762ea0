// The synopsis feature's entry point: its settings, defined from _PG_init.
// The feature's files are listed in synopsis.h.
#include "runtime/runtime.h"
#include "synopsis/synopsis.h"
#include "synopsis/synopsis_table.h"

extern "C" {
#include "utils/guc.h"
}

double synopsis_max_staleness = 0.2;

void synopsis_init(void) {
    DefineCustomRealVariable("approx_gpu.synopsis_max_staleness",
                             "Fraction of a table's rows that may change before its synopses stop answering.",
                             "Changes are n_tup_ins + n_tup_upd + n_tup_del since the build; a truncated or rewritten "
                             "table, or statistics that went backwards, make a synopsis stale whatever this says.",
                             &synopsis_max_staleness, 0.2, 0.0, 1e6, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}
