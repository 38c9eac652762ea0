-- Transitive closure: transitive_closure, reachability_count, reachable.
-- Every graph is checked against WITH RECURSIVE; the output is exact counts
-- and booleans (engine-independent), under each closure algorithm.
SET jit = off;  -- the recursive references are costly enough to trigger JIT
SELECT setseed(0.25);
CREATE TABLE g_sparse AS
  SELECT (random() * 299)::int + 1 AS src, (random() * 299)::int + 1 AS dst FROM generate_series(1, 400);
CREATE TABLE g_dense AS
  SELECT (random() * 59)::int AS src, (random() * 59)::int AS dst FROM generate_series(1, 1500);
CREATE TABLE g_dag AS
  SELECT least(a, b) AS src, greatest(a, b) AS dst
  FROM (SELECT (random() * 199)::int AS a, (random() * 199)::int AS b FROM generate_series(1, 600)) s WHERE a <> b;
CREATE TABLE g_cycle AS SELECT i AS src, i % 50 + 1 AS dst FROM generate_series(1, 50) i;
-- self-loops, duplicate edges, a 2-cycle, a lone edge
CREATE TABLE g_loops (src int8, dst int8);
INSERT INTO g_loops VALUES (1, 1), (1, 2), (1, 2), (2, 3), (3, 3), (3, 3), (7, 8), (8, 7), (9, 10), (9, 10);
-- edges with a NULL endpoint are skipped: 3 and 4 are no vertices
CREATE TABLE g_nulls (src int4, dst int4);
INSERT INTO g_nulls VALUES (1, 2), (3, NULL), (NULL, 4), (NULL, NULL), (5, 5), (6, 7), (2, 6);
CREATE TABLE g_empty (src int4, dst int8);
-- int2 ids, and int8 ids at both ends of the range
CREATE TABLE g_int2 (src int2, dst int2);
INSERT INTO g_int2 SELECT (i % 40)::int2, ((i * 7) % 40 - 20)::int2 FROM generate_series(1, 60) i;
CREATE TABLE g_extreme (src int8, dst int8);
INSERT INTO g_extreme VALUES (-9223372036854775808, 9223372036854775807), (9223372036854775807, 0),
  (0, 5), (5, -9223372036854775808), (42, 43);

-- the closure by WITH RECURSIVE (paths of length >= 1), and the three functions against it
CREATE FUNCTION pg_temp.check_graph(tbl text)
  RETURNS TABLE(pairs bigint, count_ok boolean, closure_ok boolean, reachable_ok boolean) LANGUAGE plpgsql AS $$
DECLARE q text := format('SELECT src, dst FROM %s', tbl);
BEGIN
  EXECUTE format($f$CREATE TEMP TABLE ref AS WITH RECURSIVE r(src, dst) AS (
      SELECT src::bigint, dst::bigint FROM %1$s WHERE src IS NOT NULL AND dst IS NOT NULL
      UNION SELECT r.src, e.dst::bigint FROM r JOIN %1$s e ON e.src = r.dst)
    SELECT src, dst FROM r$f$, tbl);
  EXECUTE format('CREATE TEMP TABLE got AS SELECT * FROM approx_gpu.transitive_closure(%L)', q);
  SELECT count(*) INTO pairs FROM ref;
  count_ok := approx_gpu.reachability_count(q) = pairs;
  closure_ok := (SELECT count(*) FROM got) = pairs
                AND NOT EXISTS (SELECT * FROM got EXCEPT SELECT * FROM ref)
                AND NOT EXISTS (SELECT * FROM ref EXCEPT SELECT * FROM got);
  reachable_ok := NOT EXISTS (
    SELECT 1 FROM (SELECT src FROM (SELECT DISTINCT src FROM ref ORDER BY src LIMIT 40) f
                   UNION ALL SELECT 424242) s
    WHERE array(SELECT x FROM approx_gpu.reachable(q, s.src) x)
          IS DISTINCT FROM array(SELECT dst FROM ref WHERE ref.src = s.src ORDER BY dst));
  DROP TABLE pg_temp.ref, pg_temp.got;
  RETURN NEXT;
END $$;

CREATE FUNCTION pg_temp.check_all(algorithm text)
  RETURNS TABLE(graph text, pairs bigint, count_ok boolean, closure_ok boolean, reachable_ok boolean)
  LANGUAGE plpgsql AS $$
DECLARE t text;
BEGIN
  PERFORM set_config('approx_gpu.closure_algorithm', algorithm, false);
  FOREACH t IN ARRAY ARRAY['g_sparse', 'g_dense', 'g_dag', 'g_cycle', 'g_loops', 'g_nulls', 'g_empty', 'g_int2',
                           'g_extreme'] LOOP
    RETURN QUERY SELECT t, c.* FROM pg_temp.check_graph(t) c;
  END LOOP;
  PERFORM set_config('approx_gpu.closure_algorithm', 'auto', false);
END $$;

SELECT * FROM pg_temp.check_all('auto');
SELECT * FROM pg_temp.check_all('blocked');
SELECT * FROM pg_temp.check_all('condensed');
-- the STAR machine (WARSHALL-adapt) gives the same counts and sets
SELECT * FROM pg_temp.check_all('star');

-- a closure in SQL: (v, v) only on cycles; the pairs of the 2-cycle and the self-loops
SELECT * FROM approx_gpu.transitive_closure('SELECT src, dst FROM g_loops') ORDER BY src, dst;
SELECT array_agg(x ORDER BY x) AS from_1 FROM approx_gpu.reachable('SELECT src, dst FROM g_loops', 1) x;
SELECT array_agg(x) IS NULL AS from_10_nothing FROM approx_gpu.reachable('SELECT src, dst FROM g_loops', 10) x;
SELECT array_agg(x ORDER BY x) AS extreme FROM approx_gpu.reachable('SELECT src, dst FROM g_extreme', 0) x;
SELECT approx_gpu.reachability_count('SELECT i, i + 1 FROM generate_series(1, 1000) i') AS path_1000,
       1000 * 1001 / 2 AS expected;
SELECT approx_gpu.reachability_count('SELECT i, i % 2000 + 1 FROM generate_series(1, 2000) i') AS cycle_2000;

-- NULL edges are counted in last_run(), with the graph's size
SELECT approx_gpu.reachability_count('SELECT src, dst FROM g_nulls') AS pairs;
SELECT r->>'function' AS function, (r->>'rows')::int AS rows, (r->>'rows_skipped')::int AS rows_skipped,
       (r->>'vertices')::int AS vertices, (r->>'components')::int AS components, (r->>'pairs')::int AS pairs_stat
FROM approx_gpu.last_run() r;
SELECT count(*) AS pairs FROM approx_gpu.transitive_closure('SELECT src, dst FROM g_nulls');
SELECT (approx_gpu.last_run()->>'rows_skipped')::int AS rows_skipped, approx_gpu.last_run()->>'function' AS function;

-- STRICT: a NULL argument gives NULL / no rows
SELECT approx_gpu.reachability_count(NULL) IS NULL AS strict_count;
SELECT count(*) AS strict_closure FROM approx_gpu.transitive_closure(NULL);
SELECT count(*) AS strict_reachable FROM approx_gpu.reachable('SELECT 1, 2', NULL);

-- errors: SQLSTATE and message, which names the function and the argument
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT 1.5::float8, 2')$$);
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT 1, 2.0::numeric')$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.transitive_closure('SELECT ''a''::text, 2')$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.reachable('SELECT 1', 1)$$);
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT 1, 2, 3')$$);
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELEC 1, 2')$$);
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT src, dst FROM no_such_table')$$);
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('CREATE TABLE t_nope (a int)')$$);
-- the bit matrix over approx_gpu.closure_max_memory: 512 vertices need 512 x 8 words x 8 bytes
SET approx_gpu.closure_max_memory = '16kB';
SET approx_gpu.closure_algorithm = 'blocked';
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT i, i + 1 FROM generate_series(1, 511) i')$$);
SELECT pg_temp.err($$SELECT count(*) FROM approx_gpu.transitive_closure('SELECT i, i + 1 FROM generate_series(1, 511) i')$$);
-- condensed, a 512-vertex cycle is one component: 8 bytes
RESET approx_gpu.closure_algorithm;
SELECT approx_gpu.reachability_count('SELECT i, i % 512 + 1 FROM generate_series(1, 512) i') AS cycle_512;
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT i, i + 1 FROM generate_series(1, 511) i')$$);
RESET approx_gpu.closure_max_memory;
SHOW approx_gpu.closure_max_memory;
SHOW approx_gpu.closure_algorithm;

-- a cancel stops the engine (the blocked closure of 100000 vertices takes far
-- longer than a second on either engine; no CONTEXT: it names this session's
-- temporary schema, whose number depends on the other processes)
SET approx_gpu.closure_algorithm = 'blocked';
SET statement_timeout = '1s';
\set SHOW_CONTEXT never
SELECT pg_temp.err($$SELECT approx_gpu.reachability_count('SELECT i, i + 1 FROM generate_series(1, 99999) i')$$);
\set SHOW_CONTEXT errors
RESET statement_timeout;
RESET approx_gpu.closure_algorithm;
SELECT 1 AS still_alive;
