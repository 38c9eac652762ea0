-- KDE bandwidth properties: CPU = GPU, aggregate = function, parallel = serial.
-- Helpers (tap.*) come from test/pgtap_setup.sql.
\ir preamble.psql
BEGIN;
SELECT plan(15);

SELECT setseed(0.42);
CREATE TABLE tap_kde AS
  SELECT i, CASE WHEN random() < 0.3 THEN 3 + random() ELSE random() * random() END AS x,
         random() AS y, random() + random() AS z
  FROM generate_series(1, 20000) i;
CREATE TABLE tap_arr AS SELECT array_agg(x ORDER BY i) AS x FROM tap_kde;
ANALYZE tap_kde;

-- Engine agreement (the GPU tolerances of DESIGN.md); skipped without a GPU.
SELECT tap.gpu_ok($$SELECT abs(tap.scalar_on('gpu', 'SELECT kde_bandwidth(x) FROM tap_arr')
                             / tap.scalar_on('cpu', 'SELECT kde_bandwidth(x) FROM tap_arr') - 1) < 1e-6$$,
                  'plug-in: GPU = CPU within 1e-6 (n = 20000)');
SELECT tap.gpu_ok($$SELECT abs(tap.scalar_on('gpu', 'SELECT kde_bandwidth(x[1:5000], ''lscv'') FROM tap_arr')
                             / tap.scalar_on('cpu', 'SELECT kde_bandwidth(x[1:5000], ''lscv'') FROM tap_arr') - 1) < 1e-3$$,
                  'LSCV 1-D: GPU h = CPU h within 1e-3');
SELECT tap.gpu_ok($$SELECT abs(tap.scalar_on('gpu', 'SELECT (kde_lscv(array_agg(ARRAY[x, y, z] ORDER BY i))).objective FROM tap_kde WHERE i <= 4000')
                             / tap.scalar_on('cpu', 'SELECT (kde_lscv(array_agg(ARRAY[x, y, z] ORDER BY i))).objective FROM tap_kde WHERE i <= 4000') - 1) < 1e-6$$,
                  'LSCV 3-D: GPU objective = CPU objective within 1e-6');
SELECT tap.gpu_ok($$SELECT abs(tap.scalar_on('gpu', 'SELECT (kde_lscv(array_agg(ARRAY[x, y, z] ORDER BY i))).h FROM tap_kde WHERE i <= 4000')
                             / tap.scalar_on('cpu', 'SELECT (kde_lscv(array_agg(ARRAY[x, y, z] ORDER BY i))).h FROM tap_kde WHERE i <= 4000') - 1) < 1e-3$$,
                  'LSCV 3-D: GPU h = CPU h within 1e-3');
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', 'SELECT kde_bandwidth_agg(x, ''silverman'') FROM tap_kde')
                         = tap.scalar_on('cpu', 'SELECT kde_bandwidth_agg(x, ''silverman'') FROM tap_kde')$$,
                  'silverman aggregate: GPU = CPU exactly');

-- Aggregate = function on the same data.
SELECT is((SELECT kde_bandwidth_agg(x) FROM tap_kde), (SELECT kde_bandwidth(x) FROM tap_arr),
          'kde_bandwidth_agg(x) = kde_bandwidth(array)');
SELECT is((SELECT kde_bandwidth_agg(x, 'scott') FROM tap_kde), (SELECT kde_bandwidth(x, 'scott') FROM tap_arr),
          'scott: aggregate = function');
SELECT is((SELECT (kde_lscv_agg(ARRAY[x, y], 60)).h FROM tap_kde WHERE i <= 2000),
          (SELECT (kde_lscv(array_agg(ARRAY[x, y] ORDER BY i), 60)).h FROM tap_kde WHERE i <= 2000),
          'kde_lscv_agg = kde_lscv');
SELECT is((SELECT kde_bandwidth_agg(v, 'scott') FROM (SELECT x AS v FROM tap_kde UNION ALL SELECT NULL) s),
          (SELECT kde_bandwidth(x || ARRAY[NULL]::float8[], 'scott') FROM tap_arr),
          'NULL rows are skipped like NULL elements');

-- A real parallel plan (Partial Aggregate under Gather) gives the serial answer.
SELECT kde_bandwidth_agg(x, 'silverman') AS serial_silverman FROM tap_kde \gset
SELECT (kde_lscv_agg(ARRAY[x, z], 40)).h AS serial_lscv FROM tap_kde WHERE i <= 3000 \gset
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT ok(tap.plan_text('SELECT approx_gpu.kde_bandwidth_agg(x) FROM tap_kde') ~ 'Gather.*Partial Aggregate',
          'EXPLAIN shows a Partial Aggregate under Gather');
SELECT is(kde_bandwidth_agg(x, 'silverman'), :serial_silverman::float8, 'parallel silverman = serial') FROM tap_kde;
SELECT ok(abs(kde_bandwidth_agg(x) / (SELECT kde_bandwidth(x) FROM tap_arr) - 1) < 1e-9,
          'parallel plug-in = serial (row order changes only rounding)') FROM tap_kde;
SELECT ok(abs((kde_lscv_agg(ARRAY[x, z], 40)).h / :serial_lscv::float8 - 1) < 1e-6, 'parallel LSCV = serial')
FROM tap_kde WHERE i <= 3000;
SELECT is(array_dims((kde_lscv_agg(ARRAY[x, y, z], 20)).bandwidth_matrix), '[1:3][1:3]', 'parallel LSCV returns a 3 x 3 matrix')
FROM tap_kde WHERE i <= 1000;
SELECT ok(abs(kde_bandwidth(array(SELECT 10 * v FROM unnest(x) v), 'silverman') / (10 * kde_bandwidth(x, 'silverman')) - 1) < 1e-12,
          'silverman scales with the data') FROM tap_arr;

SELECT * FROM finish();
ROLLBACK;
