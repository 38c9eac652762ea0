-- Transitive closure properties: CPU = GPU, blocked = condensed, the three
-- functions agree with each other and with WITH RECURSIVE, and closure laws
-- (transitive, idempotent, contains the edges, invariant under relabelling).
-- Helpers (tap.*) come from test/pgtap_setup.sql.
\ir preamble.psql
BEGIN;
SET LOCAL jit = off;
SELECT plan(20);

SELECT setseed(0.77);
-- sparse (mean out-degree 1.5), a DAG, a dense graph; ids spread out
CREATE TABLE tap_sparse AS
  SELECT (random() * 1999)::int * 13 - 5000 AS src, (random() * 1999)::int * 13 - 5000 AS dst
  FROM generate_series(1, 3000);
CREATE TABLE tap_dag AS
  SELECT least(a, b)::int8 AS src, greatest(a, b)::int8 AS dst
  FROM (SELECT (random() * 1499)::int AS a, (random() * 1499)::int AS b FROM generate_series(1, 4000)) s WHERE a <> b;
CREATE TABLE tap_dense AS
  SELECT (random() * 299)::int AS src, (random() * 299)::int AS dst FROM generate_series(1, 20000);
CREATE TABLE tap_mid AS SELECT src, dst FROM tap_sparse WHERE abs(src) % 3 = 0;
ANALYZE tap_sparse, tap_dag, tap_dense, tap_mid;

CREATE FUNCTION pg_temp.count_with(algorithm text, q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint; old text := current_setting('approx_gpu.closure_algorithm');
BEGIN
  PERFORM set_config('approx_gpu.closure_algorithm', algorithm, true);
  v := approx_gpu.reachability_count(q);
  PERFORM set_config('approx_gpu.closure_algorithm', old, true);
  RETURN v;
END $$;

-- CPU = GPU (exact), skipped without a GPU
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', 'SELECT reachability_count(''SELECT src, dst FROM tap_sparse'')')
                         = tap.scalar_on('cpu', 'SELECT reachability_count(''SELECT src, dst FROM tap_sparse'')')$$,
                  'reachability_count: GPU = CPU (sparse, condensed)');
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', 'SELECT pg_temp.count_with(''blocked'', ''SELECT src, dst FROM tap_dag'')')
                         = tap.scalar_on('cpu', 'SELECT pg_temp.count_with(''blocked'', ''SELECT src, dst FROM tap_dag'')')$$,
                  'reachability_count: GPU = CPU (DAG, blocked)');
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', 'SELECT pg_temp.count_with(''blocked'', ''SELECT src, dst FROM tap_dense'')')
                         = tap.scalar_on('cpu', 'SELECT pg_temp.count_with(''blocked'', ''SELECT src, dst FROM tap_dense'')')$$,
                  'reachability_count: GPU = CPU (dense, blocked)');
SELECT tap.gpu_ok($$SELECT tap.same_rows_on_cpu_and_gpu('SELECT * FROM approx_gpu.transitive_closure(''SELECT src, dst FROM tap_mid'')')$$,
                  'transitive_closure: GPU rows = CPU rows');
SELECT tap.gpu_ok($$SELECT tap.same_rows_on_cpu_and_gpu('SELECT s.src, r FROM (SELECT DISTINCT src FROM tap_sparse ORDER BY src LIMIT 20) s, approx_gpu.reachable(''SELECT src, dst FROM tap_sparse'', s.src) r')$$,
                  'reachable: GPU = CPU for 20 sources');

-- blocked = condensed on every graph (whatever the device)
SELECT is(pg_temp.count_with('blocked', 'SELECT src, dst FROM tap_sparse'),
          pg_temp.count_with('condensed', 'SELECT src, dst FROM tap_sparse'), 'sparse: blocked = condensed');
SELECT is(pg_temp.count_with('blocked', 'SELECT src, dst FROM tap_dag'),
          pg_temp.count_with('condensed', 'SELECT src, dst FROM tap_dag'), 'DAG: blocked = condensed');
SELECT is(pg_temp.count_with('blocked', 'SELECT src, dst FROM tap_dense'),
          pg_temp.count_with('condensed', 'SELECT src, dst FROM tap_dense'), 'dense: blocked = condensed');
SELECT is(pg_temp.count_with('condensed', 'SELECT src, dst FROM tap_dense'), 300::bigint * 300,
          'dense: one strongly connected component, n^2 pairs');

-- the three functions agree; WITH RECURSIVE agrees
CREATE TABLE tap_closure AS SELECT * FROM transitive_closure('SELECT src, dst FROM tap_sparse');
SELECT is((SELECT count(*) FROM tap_closure), reachability_count('SELECT src, dst FROM tap_sparse'),
          'count(transitive_closure) = reachability_count');
SELECT is((SELECT count(*) FROM (SELECT DISTINCT * FROM tap_closure) d), (SELECT count(*) FROM tap_closure),
          'transitive_closure returns no pair twice');
SELECT is((SELECT count(*) FROM (SELECT s.src, r FROM (SELECT DISTINCT src FROM tap_sparse ORDER BY src LIMIT 25) s,
                                   reachable('SELECT src, dst FROM tap_sparse', s.src) r
                                 EXCEPT SELECT src, dst FROM tap_closure WHERE src IN (SELECT DISTINCT src FROM tap_sparse ORDER BY src LIMIT 25)) d)
          + (SELECT count(*) FROM (SELECT src, dst FROM tap_closure WHERE src IN (SELECT DISTINCT src FROM tap_sparse ORDER BY src LIMIT 25)
                                   EXCEPT SELECT s.src, r FROM (SELECT DISTINCT src FROM tap_sparse ORDER BY src LIMIT 25) s,
                                   reachable('SELECT src, dst FROM tap_sparse', s.src) r) d),
          0::bigint, 'reachable(s) = the closure''s row s, for 25 sources');
SELECT is(reachability_count('SELECT src, dst FROM tap_dag'),
          (WITH RECURSIVE r(src, dst) AS (SELECT src, dst FROM tap_dag UNION SELECT r.src, e.dst FROM r JOIN tap_dag e ON e.src = r.dst)
           SELECT count(*) FROM r), 'DAG: reachability_count = WITH RECURSIVE');

-- closure laws
CREATE TABLE tap_mid_closure AS SELECT * FROM transitive_closure('SELECT src, dst FROM tap_mid');
SELECT is((SELECT count(*) FROM (SELECT a.src, b.dst FROM tap_mid_closure a JOIN tap_mid_closure b ON a.dst = b.src
                                 EXCEPT SELECT src, dst FROM tap_mid_closure) d), 0::bigint,
          'transitive: closure . closure is inside the closure');
SELECT is((SELECT count(*) FROM (SELECT src, dst FROM tap_sparse EXCEPT SELECT src, dst FROM tap_closure) d), 0::bigint,
          'the closure contains every edge');
SELECT is(reachability_count('SELECT src, dst FROM tap_closure'), (SELECT count(*) FROM tap_closure),
          'idempotent: the closure of the closure is the closure');
SELECT is(reachability_count('SELECT src::int8 * 1000003 - 7, dst::int8 * 1000003 - 7 FROM tap_sparse UNION ALL SELECT src::int8 * 1000003 - 7, dst::int8 * 1000003 - 7 FROM tap_sparse'),
          reachability_count('SELECT src, dst FROM tap_sparse'), 'relabelled ids and duplicated edges: same count');
SELECT is((SELECT count(*) FROM (SELECT src, dst FROM transitive_closure('SELECT src, dst FROM tap_mid UNION ALL SELECT dst, src FROM tap_mid')
                                 EXCEPT SELECT dst, src FROM transitive_closure('SELECT src, dst FROM tap_mid UNION ALL SELECT dst, src FROM tap_mid')) d),
          0::bigint, 'an undirected graph has a symmetric closure');

-- declared PARALLEL RESTRICTED (they run an inner query); limits are an ERROR 54000
SELECT is((SELECT string_agg(DISTINCT proparallel::text, ',') FROM pg_proc
           WHERE proname IN ('transitive_closure', 'reachability_count', 'reachable')
             AND pronamespace = 'approx_gpu'::regnamespace), 'r', 'the three functions are PARALLEL RESTRICTED');
SET LOCAL approx_gpu.closure_max_memory = '64kB';
SELECT throws_ok($$SELECT pg_temp.count_with('blocked', 'SELECT src, dst FROM tap_sparse')$$, '54000', NULL,
                 'a bit matrix over closure_max_memory is ERROR 54000');
RESET approx_gpu.closure_max_memory;

SELECT * FROM finish();
ROLLBACK;
