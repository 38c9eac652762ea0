-- KDE bandwidth properties: CPU = GPU, aggregate = function, parallel = serial.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
SET client_min_messages = warning;
SET search_path = approx_gpu, public;
BEGIN;
SELECT plan(14);

SELECT setseed(0.42);
CREATE TEMP TABLE tap_kde AS
  SELECT i, CASE WHEN random() < 0.3 THEN 3 + random() ELSE random() * random() END AS x,
         random() AS y, random() + random() AS z
  FROM generate_series(1, 20000) i;
CREATE TEMP TABLE tap_arr AS SELECT array_agg(x ORDER BY i) AS x FROM tap_kde;

-- Engine agreement (the GPU tolerances of DESIGN.md), skipped without a GPU.
CREATE FUNCTION pg_temp.bw(dev text, x float8[], m text) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN PERFORM set_config('approx_gpu.device', dev, true); RETURN kde_bandwidth(x, m); END $$;
CREATE FUNCTION pg_temp.lscv(dev text, x float8[]) RETURNS lscv_result LANGUAGE plpgsql AS $$
BEGIN PERFORM set_config('approx_gpu.device', dev, true); RETURN kde_lscv(x); END $$;
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; plan text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP plan := plan || line || ' '; END LOOP;
  RETURN plan;
END $$;
CREATE FUNCTION pg_temp.has_gpu() RETURNS boolean LANGUAGE sql AS
  $$ SELECT (approx_gpu.device_info()->>'gpu_available')::boolean $$;

SELECT CASE WHEN pg_temp.has_gpu() THEN
  ok(abs(pg_temp.bw('gpu', x, 'plugin') / pg_temp.bw('cpu', x, 'plugin') - 1) < 1e-6, 'plug-in: GPU = CPU within 1e-6')
  ELSE skip('no GPU on this machine: CPU = GPU is checked on the GPU machine') END FROM tap_arr;
SELECT CASE WHEN pg_temp.has_gpu() THEN
  ok(abs(pg_temp.bw('gpu', x, 'lscv') / pg_temp.bw('cpu', x, 'lscv') - 1) < 1e-3, 'lscv 1-D: GPU h = CPU h within 1e-3')
  ELSE skip('no GPU on this machine: CPU = GPU is checked on the GPU machine') END
FROM (SELECT x[1:5000] AS x FROM tap_arr) s;
SELECT CASE WHEN pg_temp.has_gpu() THEN
  ok(abs(g.objective / c.objective - 1) < 1e-6 AND abs(g.h / c.h - 1) < 1e-3, 'lscv 3-D: GPU = CPU (objective 1e-6, h 1e-3)')
  ELSE skip('no GPU on this machine: CPU = GPU is checked on the GPU machine') END
FROM (SELECT array_agg(ARRAY[x, y, z] ORDER BY i) AS p FROM tap_kde WHERE i <= 4000) s,
     LATERAL pg_temp.lscv('gpu', p) g, LATERAL pg_temp.lscv('cpu', p) c;
SELECT CASE WHEN pg_temp.has_gpu() THEN
  ok(pg_temp.bw('gpu', x, 'silverman') = pg_temp.bw('cpu', x, 'silverman'), 'silverman: GPU = CPU exactly')
  ELSE skip('no GPU on this machine: CPU = GPU is checked on the GPU machine') END FROM tap_arr;

-- Aggregate = function on the same data (whatever the device setting).
SELECT is((SELECT kde_bandwidth_agg(x) FROM tap_kde), (SELECT kde_bandwidth(x) FROM tap_arr), 'kde_bandwidth_agg(x) = kde_bandwidth(array)');
SELECT is((SELECT kde_bandwidth_agg(x, 'scott') FROM tap_kde), (SELECT kde_bandwidth(x, 'scott') FROM tap_arr), 'scott: aggregate = function');
SELECT is((SELECT (kde_lscv_agg(ARRAY[x, y], 60)).h FROM tap_kde WHERE i <= 2000),
          (SELECT (kde_lscv(array_agg(ARRAY[x, y] ORDER BY i), 60)).h FROM tap_kde WHERE i <= 2000), 'kde_lscv_agg = kde_lscv');

-- A real parallel plan (Partial Aggregate) gives the serial answer.
CREATE TABLE tap_kde_big AS SELECT * FROM tap_kde;
ANALYZE tap_kde_big;
SELECT kde_bandwidth_agg(x, 'silverman') AS serial_h FROM tap_kde_big \gset
SELECT (kde_lscv_agg(ARRAY[x, z], 40)).h AS serial_lscv FROM tap_kde_big WHERE i <= 3000 \gset
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT ok(pg_temp.plan_text('SELECT approx_gpu.kde_bandwidth_agg(x) FROM tap_kde_big') ~ 'Gather.*Partial Aggregate',
          'EXPLAIN shows a Partial Aggregate under Gather');
SELECT is(kde_bandwidth_agg(x, 'silverman'), :serial_h::float8, 'parallel silverman = serial') FROM tap_kde_big;
SELECT ok(abs(kde_bandwidth_agg(x) / (SELECT kde_bandwidth(x) FROM tap_arr) - 1) < 1e-12, 'parallel plug-in = serial (order-independent up to 1e-12)')
FROM tap_kde_big;
SELECT ok(abs((kde_lscv_agg(ARRAY[x, z], 40)).h / :serial_lscv::float8 - 1) < 1e-6, 'parallel LSCV = serial') FROM tap_kde_big WHERE i <= 3000;
SELECT is((kde_lscv_agg(ARRAY[x, z], 40)).bandwidth_matrix[1:1][1:1] IS NOT NULL, true, 'parallel LSCV returns a matrix') FROM tap_kde_big WHERE i <= 3000;

-- NULL handling is the same in the aggregate and the function.
SELECT is((SELECT kde_bandwidth_agg(v, 'scott') FROM (SELECT x AS v FROM tap_kde UNION ALL SELECT NULL) s),
          (SELECT kde_bandwidth(x || ARRAY[NULL]::float8[], 'scott') FROM tap_arr), 'NULL rows skipped like NULL elements');
-- Scale equivariance of every method.
SELECT ok(abs(kde_bandwidth(array(SELECT 10 * v FROM unnest(x) v), m) / (10 * kde_bandwidth(x, m)) - 1) < 1e-9, m || ' scales with the data')
FROM tap_arr, (VALUES ('silverman')) v(m);
SELECT ok((SELECT count(*) FROM tap_kde) = 20000, 'data set present');

SELECT * FROM finish();
ROLLBACK;
