// The helpers the sample path's weighted aggregates share
// (sample/aggregates.cpp: COUNT / SUM / AVG; sample/percentiles.cpp:
// percentiles): their arguments, the design their final functions find, and
// the answer they return.
#pragma once

#include "aqp/sample/internal.h"

extern "C" {
#include "fmgr.h"
}

#include "core/sample_estimate.hpp"

namespace smp = approx::sample;

namespace sample_aggs {

// The calling aggregate's name, looked up only for an error.
const char* agg_name(FunctionCallInfo fcinfo, const char* fallback);
// The sample's OID of every row must be the same: *have keeps the first.
void check_sample(Oid* have, Oid sample, FunctionCallInfo fcinfo, const char* fallback);
// The 0-based stratum of argument argno (NULL or < 1: ERROR).
int32 stratum_arg(FunctionCallInfo fcinfo, int argno, const char* fallback);
// The sample argument argno (NULL: ERROR).
Oid sample_arg(FunctionCallInfo fcinfo, int argno, const char* fallback);
// The pushed design of the sample (from the state, else the Aggref's
// argument argno); none: ERROR 55000, the aggregates run only in sample plans.
const AqpSampleDesign* final_design(FunctionCallInfo fcinfo, Oid from_state, int argno, const char* fn);
// A 0-based stratum outside the design: ERROR 22023.
void check_stratum_in_design(int32 s, const AqpSampleDesign* d, const char* fn);
// The engine's estimate as the aggregate's result (float8, or the _ci
// form's approx_estimate), after the guard's check.
Datum answer(FunctionCallInfo fcinfo, const smp::Estimate& e, bool ci, const char* fn);
void raise_engine_error(const approx::Status& st, const char* fn);
// The design and the interval options as the engine takes them.
smp::Stratum* engine_design(const AqpSampleDesign* d);
smp::Options engine_options(const AqpSampleDesign* d);

}  // namespace sample_aggs
