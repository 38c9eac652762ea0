// Internal to the sample path's planner side: the survey of the query and
// the choice of the sampled table (sample/survey.cpp), the rewrite of
// the copy over the sample (sample/rewrite.cpp), the hook that plans
// both (sample/planner.cpp).
#pragma once

#include "aqp/sample/internal.h"

#include "synopsis/synopsis_table.h"

extern "C" {
#include "utils/rel.h"
}

// Query levels and relations of the whole statement.
struct AqpSurvey {
    List* agg_levels;       // Query* holding approx_* Aggrefs of their own level
    bool outer_approx;      // an approx_* Aggref of an outer level (in a sublink)
    bool row_marks;         // FOR UPDATE / SHARE somewhere
    List* relids;           // every RTE_RELATION's relid, with repeats
};
AqpSurvey aqp_sample_survey(Query* q);

// One step from the aggregated query down to the table: the query and the
// range-table index of the next subquery (or, last, of the table).
struct AqpSampleStep {
    Query* query;
    Index rti;
};

// The table the sample answers for, with its synopsis, both relations open
// (NoLock held by the choice; closed by the rewrite).
struct AqpSampleChoice {
    Query* level;  // the aggregated query level
    const TableSynopsis* ts;
    List* path;    // AqpSampleStep*, from the aggregated level down to the table
    Relation table;
    Relation sample;
};

// Picks the table and its synopsis for `copy`; false and *reason (nullptr:
// no approx_* at all) when the sample path cannot answer. Sets
// spec->role_dependent when any synopsis was considered.
bool aqp_sample_choose(Query* copy, AqpSampleChoice* choice, AqpSampleSpec* spec, const char** reason);

// Rewrites `copy` over the chosen sample (closes the choice's relations) and
// fills the rest of *spec; false and *reason when it cannot.
bool aqp_sample_rewrite(Query* copy, AqpSampleChoice* choice, AqpSampleSpec* spec, const char** reason);

// The SQL that counts the groups the other tables allow for q's GROUP BY
// (sample/domain.cpp): every key an expression over one table joined by
// inner joins that is not the sampled one (sampled_rti); nullptr otherwise.
char* aqp_sample_domain_sql(Query* q, Index sampled_rti);

// The order of a percentile Aggref's WITHIN GROUP (ORDER BY x ...)
// (sample/survey.cpp): float8's < (ASC, USING <), its > (DESC, USING >),
// or another operator's (USING a custom btree class's operator: the exact path).
enum class AqpPercentileOrder { Ascending, Descending, Other };
AqpPercentileOrder aqp_percentile_order(const Aggref* a);

// The sample column (1-based) holding the table's attribute; 0: none.
int aqp_sample_column(const TableSynopsis* ts, AttrNumber attno);

// Runs fn(arg) in a subtransaction (PL/pgSQL's exec_stmt_block pattern):
// nullptr when it returned, else its error, copied, after the rollback (the
// caller re-throws what it must not swallow: ReThrowError).
ErrorData* aqp_sample_in_subtransaction(void (*fn)(void*), void* arg);
