-- Top-k properties: CPU = GPU (answers and NRA depths), aggregate = ORDER BY
-- ... LIMIT, parallel = serial, NRA = the exact answer. Helpers (tap.*) come
-- from test/pgtap_setup.sql.
\ir preamble.psql
BEGIN;
SELECT plan(31);

SELECT setseed(0.27);
-- 300000 rows, scores with many ties, ±Infinity and negatives
CREATE TABLE tap_tk AS
  SELECT ((i::bigint * 104729) % 300007) - 150000 AS id,
         CASE WHEN i % 1009 = 0 THEN 'Infinity'::float8 WHEN i % 1013 = 0 THEN '-Infinity'::float8
              ELSE round((random() * 2000 - 1000)::numeric, 1)::float8 END AS score,
         i % 5 AS grp
  FROM generate_series(1, 300000) i;
ANALYZE tap_tk;
-- the paper's NRA setup, small: 4 independent uniform attributes
CREATE TABLE tap_nra AS SELECT i AS id, random() AS a, random() AS b, random() AS c, random() AS d
  FROM generate_series(1, 20000) i;
ALTER TABLE tap_nra ADD PRIMARY KEY (id);
CREATE INDEX ON tap_nra (a); CREATE INDEX ON tap_nra (b); CREATE INDEX ON tap_nra (c); CREATE INDEX ON tap_nra (d);
CREATE TABLE tap_nra_zipf AS
  SELECT i AS id, floor(30 / (1 + floor(1 / (random() + 1e-3)))) AS a,
         CASE WHEN random() < 0.9 THEN floor(30 / (1 + floor(1 / (random() + 1e-3)))) END AS b
  FROM generate_series(1, 20000) i;
ALTER TABLE tap_nra_zipf ADD PRIMARY KEY (id);
-- the same objects with the lists read by cursors (no index on the scores)
-- and by index-only scans ((col) INCLUDE (id); not vacuumed: heap visited)
CREATE TABLE tap_nra_plain AS SELECT * FROM tap_nra;
ALTER TABLE tap_nra_plain ADD PRIMARY KEY (id);
CREATE TABLE tap_nra_io AS SELECT * FROM tap_nra;
ALTER TABLE tap_nra_io ADD PRIMARY KEY (id);
CREATE INDEX ON tap_nra_io (a) INCLUDE (id); CREATE INDEX ON tap_nra_io (b DESC) INCLUDE (id);
CREATE INDEX ON tap_nra_io (c, id); CREATE INDEX ON tap_nra_io (d) INCLUDE (id);
ANALYZE tap_nra, tap_nra_zipf, tap_nra_plain, tap_nra_io;

-- the answer of ORDER BY score <dir>, id LIMIT k
CREATE FUNCTION pg_temp.want(k int, dir text) RETURNS scored[] LANGUAGE plpgsql AS $$
DECLARE r scored[];
BEGIN
  EXECUTE format('SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY score %s, id) FROM '
                 '(SELECT id, score FROM tap_tk ORDER BY score %s, id LIMIT %s) s', dir, dir, k) INTO r;
  RETURN r;
END $$;
-- an aggregate's answer with approx_gpu.device = dev
CREATE FUNCTION pg_temp.agg_on(dev text, agg text, k int) RETURNS scored[] LANGUAGE plpgsql AS $$
DECLARE r scored[]; old text := current_setting('approx_gpu.device');
BEGIN
  PERFORM set_config('approx_gpu.device', dev, true);
  EXECUTE format('SELECT approx_gpu.%s(id, score, %s) FROM tap_tk', agg, k) INTO r;
  PERFORM set_config('approx_gpu.device', old, true);
  RETURN r;
END $$;
-- topk_nra's answer and the depths it read, as text, with approx_gpu.device = dev
CREATE FUNCTION pg_temp.nra_on(dev text, tbl text, cols name[], k int, batch int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; old text := current_setting('approx_gpu.device');
BEGIN
  PERFORM set_config('approx_gpu.device', dev, true);
  EXECUTE format('SELECT string_agg(id || '':'' || float8send(score)::text, '','' ORDER BY o) '
                 'FROM approx_gpu.topk_nra(%L, ''id'', %L, %s, %s) WITH ORDINALITY t(id, score, o)', tbl, cols, k, batch)
    INTO r;
  r := r || ' depths ' || (SELECT string_agg(value, ',' ORDER BY key) FROM jsonb_each_text(approx_gpu.last_run())
                           WHERE key LIKE 'depth\_%' OR key = 'rounds');
  PERFORM set_config('approx_gpu.device', old, true);
  RETURN r;
END $$;
-- how the last topk_nra call read its lists: read=...,read_1=...,...
CREATE FUNCTION pg_temp.nra_read() RETURNS text LANGUAGE sql AS
  $$ SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM jsonb_each_text(approx_gpu.last_run())
     WHERE key LIKE 'read%' $$;
-- the exact NRA answer: ORDER BY coalesce(c1, min(c1)) + ... DESC, id LIMIT k
CREATE FUNCTION pg_temp.nra_exact(tbl text, cols name[], k int, batch int) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE expr text; want scored[]; got scored[];
BEGIN
  SELECT string_agg(format('coalesce(%I::float8, (SELECT min(%I)::float8 FROM %s))', c, c, tbl), ' + ' ORDER BY o)
    INTO expr FROM unnest(cols) WITH ORDINALITY u(c, o);
  EXECUTE format('SELECT array_agg(ROW(id, s)::approx_gpu.scored ORDER BY s DESC, id) FROM '
                 '(SELECT id, %s AS s FROM %s ORDER BY s DESC, id LIMIT %s) q', expr, tbl, k) INTO want;
  EXECUTE format('SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY o) FROM '
                 'approx_gpu.topk_nra(%L, ''id'', %L, %s, %s) WITH ORDINALITY t(id, score, o)', tbl, cols, k, batch)
    INTO got;
  RETURN got IS NOT DISTINCT FROM want;
END $$;

-- CPU = GPU (skipped without a GPU). k = 100000 keeps every row in the state
-- (no pruning below 4k), so the final selection runs over all 300000 pairs.
SELECT tap.gpu_ok($$SELECT pg_temp.agg_on('gpu', 'topk', 10) = pg_temp.agg_on('cpu', 'topk', 10)$$,
                  'topk k = 10: GPU = CPU');
SELECT tap.gpu_ok($$SELECT pg_temp.agg_on('gpu', 'topk', 100000) = pg_temp.agg_on('cpu', 'topk', 100000)$$,
                  'topk k = 100000 (300000 pairs on the device): GPU = CPU');
SELECT tap.gpu_ok($$SELECT pg_temp.agg_on('gpu', 'bottomk', 77777) = pg_temp.agg_on('cpu', 'bottomk', 77777)$$,
                  'bottomk k = 77777: GPU = CPU');
SELECT tap.gpu_ok($$SELECT pg_temp.agg_on('gpu', 'topk', 100000) = pg_temp.want(100000, 'DESC')$$,
                  'topk on the GPU = ORDER BY score DESC, id LIMIT 100000');
SELECT tap.gpu_ok($$SELECT pg_temp.nra_on('gpu', 'tap_nra', '{a,b,c,d}', 100, 1024)
                         = pg_temp.nra_on('cpu', 'tap_nra', '{a,b,c,d}', 100, 1024)$$,
                  'topk_nra (uniform, k = 100): GPU = CPU, answer and depths');
SELECT tap.gpu_ok($$SELECT pg_temp.nra_on('gpu', 'tap_nra_zipf', '{a,b}', 50, 64)
                         = pg_temp.nra_on('cpu', 'tap_nra_zipf', '{a,b}', 50, 64)$$,
                  'topk_nra (Zipf ties, NULLs, k = 50): GPU = CPU, answer and depths');
SELECT tap.gpu_ok($$SELECT pg_temp.nra_on('gpu', 'tap_nra_zipf', '{b}', 19999, 500)
                         = pg_temp.nra_on('cpu', 'tap_nra_zipf', '{b}', 19999, 500)$$,
                  'topk_nra (k near the object count, objects without scores): GPU = CPU');
-- under auto, a GPU allocation that passes the memory limit falls back to the CPU with the same answer
SELECT tap.gpu_ok($$SELECT pg_temp.agg_on('auto', 'topk', 1000) = pg_temp.want(1000, 'DESC')
                      FROM (SELECT set_config('approx_gpu.gpu_min_rows', '0', true),
                                   set_config('approx_gpu.gpu_memory_limit', '64kB', true)) s$$,
                  'auto with a tiny gpu_memory_limit: the CPU answers, same result');
SELECT set_config('approx_gpu.gpu_memory_limit', '0', true), set_config('approx_gpu.gpu_min_rows', '10000', true) \g /dev/null

-- The aggregates are ORDER BY ... LIMIT k (whatever the device setting).
SELECT is((SELECT topk(id, score, k) FROM tap_tk), pg_temp.want(k, 'DESC'), 'topk = ORDER BY score DESC, id LIMIT ' || k)
FROM unnest(ARRAY[1, 64, 5000]) k;
SELECT is((SELECT bottomk(id, score, k) FROM tap_tk), pg_temp.want(k, 'ASC'), 'bottomk = ORDER BY score, id LIMIT ' || k)
FROM unnest(ARRAY[3, 20000]) k;
SELECT ok((SELECT bool_and(g.t = (SELECT array_agg(ROW(id, score)::scored ORDER BY score DESC, id)
                                  FROM (SELECT id, score FROM tap_tk WHERE grp = g.grp ORDER BY score DESC, id LIMIT 25) s))
           FROM (SELECT grp, topk(id, score, 25) t FROM tap_tk GROUP BY grp) g), 'grouped topk = per-group ORDER BY LIMIT');
SELECT is((SELECT topk(id, score, 10) FROM (SELECT id, score FROM tap_tk UNION ALL SELECT NULL, 1e300
                                            UNION ALL SELECT 1, NULL) s),
          pg_temp.want(10, 'DESC'), 'rows with a NULL id or score are skipped');

-- A real parallel plan (Partial Aggregate under Gather, serialised states) gives the serial answer.
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
SELECT ok(tap.plan_text('SELECT approx_gpu.topk(id, score, 10) FROM tap_tk') ~ 'Gather.*Partial Aggregate',
          'EXPLAIN shows a Partial Aggregate under Gather');
-- pgTAP's functions (is, ok) are PARALLEL UNSAFE: a statement that calls one
-- runs serially, aggregates included. The parallel answers are computed by
-- CREATE TABLE AS, whose SELECT runs in parallel (its plan is checked), and
-- compared afterwards. States prune (past 65536 pairs) before they combine.
SELECT ok(tap.plan_text('CREATE TEMP TABLE tap_par AS SELECT topk(id, score, 500) AS t FROM tap_tk')
            ~ 'Gather.*Partial Aggregate', 'CREATE TABLE AS runs the aggregates in a parallel plan');
CREATE TEMP TABLE tap_par AS
  SELECT topk(id, score, 500) AS top500, bottomk(id, score, 70000) AS bottom70000,
         topk(id, 1.0::float8, 3) AS ties, bottomk(7::bigint, 1.0::float8, 3) AS dups
  FROM tap_tk;
SELECT is((SELECT top500 FROM tap_par), pg_temp.want(500, 'DESC'), 'parallel topk = ORDER BY LIMIT');
SELECT is((SELECT bottom70000 FROM tap_par), pg_temp.want(70000, 'ASC'),
          'parallel bottomk, k = 70000 (states of 280000 pairs serialised) = ORDER BY LIMIT');
SELECT is((SELECT ties FROM tap_par),
          (SELECT array_agg(ROW(id, 1.0)::scored ORDER BY id) FROM (SELECT id FROM tap_tk ORDER BY id LIMIT 3) s),
          'parallel topk, every score tied (the pruned states'' thresholds tie with the answer): the 3 smallest ids');
SELECT is((SELECT dups FROM tap_par), ARRAY[(7, 1.0), (7, 1.0), (7, 1.0)]::scored[],
          'parallel bottomk, every pair the same: k copies');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- NRA: the exact answer, early stop, one random access per winner.
SELECT ok(pg_temp.nra_exact('tap_nra', '{a,b,c,d}', 100, 1024), 'topk_nra (uniform, 4 lists, k = 100) = exact answer');
SELECT ok(pg_temp.nra_exact('tap_nra_zipf', '{a,b}', 50, 64), 'topk_nra (Zipf ties, NULLs) = exact answer');
SELECT ok((approx_gpu.last_run()->>'depth_1')::int < 20000 AND (approx_gpu.last_run()->>'random_accesses')::int = 50,
          'topk_nra stops before the end of the lists and reads k rows at random');
SELECT ok(pg_temp.nra_exact('tap_nra_zipf', '{b}', 19999, 500), 'topk_nra with k near the object count = exact answer');
-- How the lists are read changes neither the answer nor the depths (no ties here).
SELECT ok(pg_temp.nra_on('cpu', 'tap_nra_plain', '{a,b,c,d}', 100, 1024) = pg_temp.nra_on('cpu', 'tap_nra', '{a,b,c,d}', 100, 1024),
          'topk_nra: index scans (heap fetches) = cursors, answer and depths');
SELECT is(pg_temp.nra_read(), 'read=index scans,read_1=1,read_2=1,read_3=1,read_4=1', 'topk_nra: lists read by index scans');
SELECT ok(pg_temp.nra_on('cpu', 'tap_nra', '{a,b,c,d}', 100, 1024) = pg_temp.nra_on('cpu', 'tap_nra_io', '{a,b,c,d}', 100, 1024),
          'topk_nra: index-only scans (one DESC index) = index scans, answer and depths');
SELECT is(pg_temp.nra_read(), 'read=index scans,read_1=2,read_2=2,read_3=2,read_4=2', 'topk_nra: lists read by index-only scans');
SELECT ok(pg_temp.nra_exact('tap_nra_plain', '{a,b,c,d}', 100, 1024), 'topk_nra by cursors = exact answer');
SELECT is(pg_temp.nra_read(), 'read=queries,read_1=0,read_2=0,read_3=0,read_4=0', 'topk_nra: lists read by cursors');

SELECT * FROM finish();
ROLLBACK;
