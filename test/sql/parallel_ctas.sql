-- Functions that run an inner query (query-string arguments, a view read
-- through the query reader) called inside CREATE TABLE AS / CREATE
-- MATERIALIZED VIEW with a parallel plan (issue 26 item 14). The inner query
-- runs read-only (no CommandCounterIncrement), so it works inside the
-- parallel operation as it does in a plain SELECT.
SET client_min_messages = warning;
CREATE TABLE pc_big AS SELECT g AS id, g % 1000 AS k, (g * 7 % 1000)::float8 AS s FROM generate_series(1, 100000) g;
CREATE TABLE pc_edges AS SELECT g AS src, g + 1 AS dst FROM generate_series(1, 50) g;
CREATE VIEW pc_view AS SELECT id, s FROM pc_big;
ANALYZE pc_big;
ANALYZE pc_edges;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
RESET client_min_messages;
-- The outer statement has a parallel plan.
EXPLAIN (COSTS OFF) CREATE TABLE pc_1 AS SELECT approx_gpu.hash_join_count('SELECT k, id FROM pc_big', 'SELECT k, id FROM pc_big WHERE id <= 10') AS c FROM pc_big WHERE id = 1;
CREATE TABLE pc_1 AS SELECT approx_gpu.hash_join_count('SELECT k, id FROM pc_big', 'SELECT k, id FROM pc_big WHERE id <= 10') AS c FROM pc_big WHERE id = 1;
SELECT c, c = (SELECT count(*) FROM pc_big a JOIN pc_big b USING (k) WHERE b.id <= 10) AS exact FROM pc_1;
CREATE MATERIALIZED VIEW pc_2 AS SELECT count(*) AS n FROM approx_gpu.hash_join('SELECT k, id FROM pc_big WHERE id <= 3000', 'SELECT k, id FROM pc_big WHERE id <= 10'), pc_big WHERE pc_big.id = 1;
SELECT n FROM pc_2;
CREATE TABLE pc_3 AS SELECT approx_gpu.reachability_count('SELECT src, dst FROM pc_edges') AS c FROM pc_big WHERE id = 1;
SELECT c FROM pc_3;
CREATE TABLE pc_4 AS SELECT approx_gpu.topk('pc_view', 'id', 's', 3) AS t FROM pc_big WHERE id = 1;
SELECT t FROM pc_4;
CREATE TABLE pc_5 AS SELECT approx_gpu.topk('pc_big', 'id', 's', 3) AS t FROM pc_big WHERE id = 1;
SELECT t = (SELECT t FROM pc_4) AS same FROM pc_5;
CREATE TABLE pc_6 AS SELECT * FROM approx_gpu.transitive_closure('SELECT src, dst FROM pc_edges WHERE src <= 3'), pc_big WHERE pc_big.id = 1 ORDER BY 1, 2;
SELECT count(*) FROM pc_6;
-- A data-modifying inner query is refused (read-only), not run.
SELECT approx_gpu.hash_join_count('WITH d AS (DELETE FROM pc_edges RETURNING src, dst) SELECT src, dst FROM d', 'SELECT src, dst FROM pc_edges');
SELECT count(*) FROM pc_edges;
DROP TABLE pc_1, pc_3, pc_4, pc_5, pc_6;
DROP MATERIALIZED VIEW pc_2;
DROP VIEW pc_view;
DROP TABLE pc_big, pc_edges;
