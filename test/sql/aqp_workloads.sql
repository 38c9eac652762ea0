-- The workloads of issue 27 at a tiny scale: the 13 Star Schema Benchmark
-- queries and TPC-H Q1, Q3, Q5, Q6, Q10, Q12, Q14, Q19 as their authors wrote
-- them (test/workloads/), over SF 0.01 data from the plain-SQL generators,
-- with a synopsis of lineorder and of lineitem. Per query: where its
-- approximate twin (sum -> approx_sum, count(*) -> approx_count(*), avg ->
-- approx_avg) was answered from (last_run(), the plan node) or why it fell
-- back, and the exact answer's row count; then with the guard forced to fall
-- back (max_relative_error = 1e-12) each twin equals its exact query row for
-- row. Nothing may error.
\getenv abs_srcdir PG_ABS_SRCDIR
\set workloads :abs_srcdir '/workloads'
SET client_min_messages = warning;
CREATE SCHEMA ssb;
CREATE SCHEMA tpch;
\set ECHO none
SET search_path = ssb, public;
\set f :workloads '/ssb_schema.sql'
\i :f
SET search_path = tpch, public;
\set f :workloads '/tpch_schema.sql'
\i :f
SET search_path = public;
\set f :workloads '/workloads.sql'
\i :f
\set ECHO all
SELECT ssb.ssb_generate(0.01, 0.42) AS ssb;
SELECT tpch.tpch_generate(0.01, 0.42) AS tpch;
CREATE TABLE queries AS
SELECT * FROM workload_queries(:'workloads', 'ssb') UNION ALL SELECT * FROM workload_queries(:'workloads', 'tpch');
SELECT count(*) AS queries, count(*) FILTER (WHERE workload_approx(query) <> query) AS rewritten FROM queries;

SET approx_gpu.random_seed = 42;
SELECT (approx_gpu.create_synopsis('ssb_lineorder', 'ssb.lineorder'::regclass,
                                   ARRAY['lo_quantity', 'lo_discount']::name[], 2000))->>'m' AS sample_rows;
SELECT (approx_gpu.create_synopsis('tpch_lineitem', 'tpch.lineitem'::regclass,
                                   ARRAY['l_quantity', 'l_discount']::name[], 2000))->>'m' AS sample_rows;

-- ---- where each approximate twin is answered from ----------------------------------
-- (the row count is the exact query's: every answer but SSB Q3.4 is non-empty at
-- SF 0.01; Q3.4 selects 2 of 250 cities on both sides in one month, 0.05 rows
-- expected at this scale)
SELECT name, a.answered_from, a.node, coalesce(a.reason, '-') AS reason,
       (SELECT count(*) FROM unnest(workload_rows(query))) AS exact_rows
  FROM queries, LATERAL (SELECT set_config('search_path', schema || ', public', true)) p,
       LATERAL workload_answer(workload_approx(query)) a;

-- ---- with the guard forced to fall back, each twin equals its exact query -----------
SET approx_gpu.max_relative_error = 1e-12;
SELECT name, workload_same(workload_rows(query), workload_rows(workload_approx(query))) AS same_rows,
       approx_gpu.last_run()->>'answered_from' AS answered_from, coalesce(approx_gpu.last_run()->>'reason', '-') AS reason
  FROM queries, LATERAL (SELECT set_config('search_path', schema || ', public', true)) p;
RESET approx_gpu.max_relative_error;

-- the comparison itself is not vacuous: a changed value, a missing row differ
-- (values compare by position: the twins' column names differ, sum / approx_sum)
SELECT workload_same(ARRAY['{"a": 1, "b": "x"}']::json[], ARRAY['{"a": 1.0000000000001, "c": "x"}']::json[]) AS same,
       workload_same(ARRAY['{"a": 1}']::json[], ARRAY['{"a": 1.001}']::json[]) AS value_differs,
       workload_same(ARRAY['{"a": 1}', '{"a": 2}']::json[], ARRAY['{"a": 1}']::json[]) AS row_missing,
       workload_same(ARRAY['{"a": "x"}']::json[], ARRAY['{"a": "y"}']::json[]) AS text_differs;

SELECT approx_gpu.drop_synopsis('ssb_lineorder');
SELECT approx_gpu.drop_synopsis('tpch_lineitem');
DROP SCHEMA ssb, tpch CASCADE;
DROP TABLE queries;
