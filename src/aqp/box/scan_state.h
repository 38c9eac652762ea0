// The "Approx Synopsis Scan" node's executor state, shared by its plan and
// EXPLAIN (box/scan.cpp), its executor (box/scan_exec.cpp) and the
// translation of its conditions and groups into boxes (box/boxes.cpp).
#pragma once

#include "aqp/box/internal.h"

#include "synopsis/synopsis_table.h"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/typcache.h"
}

constexpr int64 kMaxBoxes = int64{1} << 24;  // boxes of one query (groups x condition boxes)

// ---- executor state ------------------------------------------------------------------

// Sorted disjoint closed intervals of a column's encoded values (n = 0: none).
struct Intervals {
    int n;
    double* lo;
    double* hi;
};

struct AqpScanState {
    CustomScanState css;
    const AqpPlanSpec* spec;  // from the plan (custom_private, custom_exprs)
    List* values;             // ExprState per spec->values entry
    // executor start
    const TableSynopsis* ts;  // pinned
    const char* fallback;     // non-null: the rows answer, and why
    int64 n_cand;             // candidate groups
    // The spec's groups_are_strata, kept only where every stratum holds one
    // value of the group keys (a census stratum holds the rows of several:
    // its groups are then found as an unstratified synopsis' are).
    bool groups_are_strata;
    double* keys;             // n_cand x n_group group key values (NaN = NULL)
    int64 per_group;          // boxes per group
    int64 q;
    double* lo;
    double* hi;
    uint8* nulls;
    int32* stratum;  // nullptr: every box over every stratum
    // results
    bool computed, recorded;
    int natts;
    int64 n_out, next;
    Datum* out_values;
    bool* out_nulls;
};

inline void fall_back(AqpScanState* st, const char* reason) {
    if (st->fallback == nullptr) st->fallback = reason;
}

// The candidate groups (st->keys) and every group's boxes (st->lo, st->hi,
// st->nulls, st->stratum) from the spec's conditions; an inexpressible
// condition or too many boxes: fall_back (box/boxes.cpp).
void build_boxes(AqpScanState* st);

// The executor's callbacks (box/scan_exec.cpp).
void aqp_begin(CustomScanState* node, EState* estate, int eflags);
TupleTableSlot* aqp_exec(CustomScanState* node);
void aqp_end(CustomScanState* node);
void aqp_rescan(CustomScanState* node);
