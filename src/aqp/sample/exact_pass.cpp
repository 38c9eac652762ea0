// The exact pass (issue 39 item 3): where the sample cannot answer (the
// missing-groups rule, the guard) and its plan ran as a star join, the same
// plan runs once more over the synopsis' table itself -- every row, weight 1
// -- before PostgreSQL's exact plan: the star-join node reads the table's
// columns instead of the sample relation's (starjoin/exec.cpp, through
// aqp_sample_exact_pass_table), from the session's kept read or the GPU
// service's resident copy when the table's version proves them the rows the
// statement sees (readers/relation_version.h). The states carry one stratum
// under a census design (N = m: weight 1, no finite-population term), so the
// approx_* final functions return the exact sums, counts and averages, and
// zero-width intervals. last_run() says "exact pass" and why the sample did
// not answer.
//
// approx_gpu.exact_pass: off; on (default): only when the table's columns
// are already kept or resident (a first read of a large table in one backend
// is slower than PostgreSQL's parallel exact plan); force: read them now
// (what loads them, and what the tests use).
//
// Not for: a table with row-level security for the role (the node reads
// every row), a partitioned or inheritance parent (its rows lie in other
// relations), anything but a plain table.
#include "aqp/sample/internal.h"

extern "C" {
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
}

int aqp_exact_pass_mode = AQP_EXACT_PASS_ON;

static Oid exact_sample = InvalidOid, exact_table = InvalidOid;

Oid aqp_sample_exact_pass_table(Oid sample_relid) {
    return OidIsValid(exact_sample) && sample_relid == exact_sample ? exact_table : InvalidOid;
}
bool aqp_sample_exact_pass_forced(void) { return aqp_exact_pass_mode == AQP_EXACT_PASS_FORCE; }

const char* aqp_exact_pass_refusal(Oid table) {
    if (aqp_exact_pass_mode == AQP_EXACT_PASS_OFF) return "approx_gpu.exact_pass is off";
    const char kind = get_rel_relkind(table);
    if (kind != RELKIND_RELATION) return "the table is not a plain table";
    if (has_subclass(table)) return "the table has inheritance children";
    if (check_enable_rls(table, InvalidOid, true) != RLS_NONE) return "row-level security applies to the table";
    return nullptr;
}

void aqp_exact_pass_begin(Oid sample_relid, Oid table) {
    exact_sample = sample_relid;
    exact_table = table;
}
void aqp_exact_pass_end(void) { exact_sample = exact_table = InvalidOid; }

AqpSampleDesign aqp_exact_pass_design(Oid sample_relid, List* measures) {
    // N = m, both large: the weight N/m is 1 and 1 - m/N is 0 exactly, and no
    // m - 1 in a formula nears zero.
    static const double census = 1099511627776.0;  // 2^40
    AqpSampleDesign d{sample_relid, 1, &census, &census};
    d.groups_within_strata = true;
    d.measures = measures;
    return d;
}

void aqp_exact_pass_init(void) {
    static const struct config_enum_entry modes[] = {{"off", AQP_EXACT_PASS_OFF, false},
                                                     {"on", AQP_EXACT_PASS_ON, false},
                                                     {"force", AQP_EXACT_PASS_FORCE, false},
                                                     {nullptr, 0, false}};
    DefineCustomEnumVariable("approx_gpu.exact_pass",
                             "Whether a star join the sample cannot answer runs again over the whole table.",
                             "on (default): when the table's columns are kept by the session or resident in the GPU "
                             "service and provably unchanged; force: read them now; off: PostgreSQL's exact plan.",
                             &aqp_exact_pass_mode, AQP_EXACT_PASS_ON, modes, PGC_USERSET, 0, nullptr, nullptr,
                             nullptr);
}
