// The "Approx Synopsis Scan" node's executor state, shared by its plan and
// executor (aqp_scan.cpp) and the translation of its conditions and groups
// into boxes (aqp_boxes.cpp).
#pragma once

#include "aqp/aqp.h"

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

struct AggSpec {
    int kind, ci, col;
};

struct AqpScanState {
    CustomScanState css;
    // from the plan
    Oid relid, owner;
    const char* name;
    TimestampTz built;
    int n_group;
    int* group_cols;
    int n_aggs;
    AggSpec* aggs;
    bool strata_groups;
    List* exprs;  // ExprState per custom_exprs entry
    // executor start
    const TableSynopsis* ts;  // pinned
    const char* fallback;     // non-null: the rows answer, and why
    int64 n_cand;             // candidate groups
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
// st->nulls, st->stratum) from the node's conditions `conds`; an
// inexpressible condition or too many boxes: fall_back.
void build_boxes(AqpScanState* st, List* conds);
