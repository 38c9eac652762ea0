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
    DefineCustomIntVariable("approx_gpu.max_synopsis_rows_per_role",
                            "Most sample rows a role's synopses of tables it does not own may hold together.",
                            "Sample relations belong to the extension's owner, outside any accounting of the role "
                            "that built them; the table's owner is not bounded. -1: no limit.",
                            &synopsis_glue::synopsis_max_rows_per_role, 10000000, -1, INT_MAX, PGC_SUSET, 0, nullptr,
                            nullptr, nullptr);
}
