-- Hashed joins: hash_join and hash_join_count against PostgreSQL's own
-- JOIN ... USING (key). Results are compared as multisets (EXCEPT ALL both
-- ways); everything printed is an exact integer or a boolean, so the output
-- does not depend on the engine.
SET jit = off;  -- the comparison queries are costly enough to JIT; the test stage has no LLVM bitcode
SELECT setseed(0.17);
CREATE TABLE hj_a AS SELECT (random() * 5000)::int AS key, i::bigint AS value FROM generate_series(1, 20000) i;
CREATE TABLE hj_b AS SELECT (random() * 6000)::int AS key, -i::bigint AS value FROM generate_series(1, 15000) i;
CREATE TABLE hj_zipf AS
  SELECT i, least((1 / (1 - random()))::bigint, 1000000) AS key FROM generate_series(1, 1600) i;

-- pg: rows of PostgreSQL's join; counted: hash_join_count; missing / extra:
-- rows of one that the other lacks (multiset difference).
CREATE FUNCTION hj_check(b text, p text)
RETURNS TABLE(pg bigint, counted bigint, missing bigint, extra bigint) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format($q$
    WITH pg AS (SELECT key::bigint, b.value::bigint AS build_value, p.value::bigint AS probe_value
                FROM (%s) b(key, value) JOIN (%s) p(key, value) USING (key)),
         hj AS (SELECT * FROM approx_gpu.hash_join(%L, %L))
    SELECT (SELECT count(*) FROM pg), approx_gpu.hash_join_count(%L, %L),
           (SELECT count(*) FROM (SELECT * FROM pg EXCEPT ALL SELECT * FROM hj) d),
           (SELECT count(*) FROM (SELECT * FROM hj EXCEPT ALL SELECT * FROM pg) d)$q$, b, p, b, p, b, p);
END $$;

-- The SQLSTATE and message of a statement's error.
CREATE FUNCTION hj_error(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- random keys
SELECT * FROM hj_check('SELECT key, value FROM hj_a', 'SELECT key, value FROM hj_b');
-- heavy duplicates on both sides
SELECT * FROM hj_check('SELECT key % 7, value FROM hj_a WHERE value <= 1000',
                       'SELECT key % 5, value FROM hj_b WHERE value >= -800');
-- Zipf-like skew (P(key >= k) ~ 1/k): key 1 on half of the rows of each side
SELECT * FROM hj_check('SELECT key, i FROM hj_zipf WHERE i <= 1000', 'SELECT key, -i FROM hj_zipf WHERE i > 1000');
-- one side empty, then both
SELECT * FROM hj_check('SELECT key, value FROM hj_a WHERE false', 'SELECT key, value FROM hj_b');
SELECT * FROM hj_check('SELECT key, value FROM hj_a', 'SELECT key, value FROM hj_b WHERE false');
SELECT * FROM hj_check('SELECT 1, 1 WHERE false', 'SELECT 1, 1 WHERE false');
-- every key equal
SELECT * FROM hj_check('SELECT 7, i FROM generate_series(1, 300) i', 'SELECT 7::int8, -i FROM generate_series(1, 200) i');
-- no key in common
SELECT * FROM hj_check('SELECT i, i FROM generate_series(1, 1000) i', 'SELECT -i, i FROM generate_series(1, 1000) i');
-- int2, int4 and int8 columns mix
SELECT * FROM hj_check('SELECT (key % 300)::int2, value::int4 FROM hj_a WHERE value <= 3000',
                       'SELECT (key % 300)::int8, value::int2 FROM hj_b WHERE value >= -3000');

-- keys and values at the int8 limits, key 0 and key -1 (all-ones)
CREATE TABLE hj_lim(k bigint, v bigint);
INSERT INTO hj_lim VALUES (9223372036854775807, -9223372036854775808), (-9223372036854775808, 9223372036854775807),
  (0, 0), (-1, -1), (-9223372036854775808, 1), (1, 2), (-9223372036854775807, 3);
SELECT * FROM hj_check('SELECT k, v FROM hj_lim', 'SELECT k, v FROM hj_lim');
SELECT * FROM approx_gpu.hash_join('SELECT k, v FROM hj_lim', 'SELECT k, -v - 1 FROM hj_lim WHERE k <= 0')
ORDER BY key, build_value, probe_value;

-- NULLs: a NULL key never matches (the row is skipped and counted); a NULL
-- value joins like any other and comes out as NULL, as JOIN ... USING does.
CREATE TABLE hj_nb(k int, v bigint);
CREATE TABLE hj_np(k int, v bigint);
INSERT INTO hj_nb VALUES (1, NULL), (NULL, 5), (2, 20), (1, 10), (NULL, NULL), (3, 30);
INSERT INTO hj_np VALUES (1, 100), (1, NULL), (NULL, 7), (2, NULL), (4, 4), (3, 33);
SELECT * FROM hj_check('SELECT k, v FROM hj_nb', 'SELECT k, v FROM hj_np');
SELECT * FROM approx_gpu.hash_join('SELECT k, v FROM hj_nb', 'SELECT k, v FROM hj_np')
ORDER BY key, build_value NULLS FIRST, probe_value NULLS FIRST;
SELECT approx_gpu.hash_join_count('SELECT k, v FROM hj_nb', 'SELECT k, v FROM hj_np') AS matches;
SELECT r->>'function' AS function, (r->>'rows')::int AS rows, (r->>'rows_skipped')::int AS rows_skipped,
       (r->>'build_rows')::int AS build_rows, (r->>'probe_rows')::int AS probe_rows,
       (r->>'build_rows_skipped')::int AS build_skipped, (r->>'probe_rows_skipped')::int AS probe_skipped,
       (r->>'build_null_values')::int AS build_null_values, (r->>'probe_null_values')::int AS probe_null_values,
       (r->>'matches')::int AS matches, (r->>'distinct_build_keys')::int AS distinct_build_keys
FROM approx_gpu.last_run() r;

-- the result's types, and the same through hash_join
SELECT pg_typeof(key) AS key_type, pg_typeof(build_value) AS build_type, pg_typeof(probe_value) AS probe_type
FROM approx_gpu.hash_join('SELECT 1::int2, 2::int2', 'SELECT 1::int4, 3::int4');
SELECT r->>'function' AS function, r->>'device' IN ('cpu', 'gpu') AS device_named,
       (r->>'ms_read')::float8 >= 0 AS read_ms, (r->>'ms_transfer')::float8 >= 0 AS transfer_ms,
       (r->>'ms_compute')::float8 >= 0 AS compute_ms, (r->>'matches')::int AS matches,
       (r->>'table_builds')::int >= 1 AS table_built, (r->>'load_factor')::float8 > 0 AS loaded
FROM approx_gpu.last_run() r;
-- cpu_threads changes nothing but speed
SET approx_gpu.cpu_threads = 1;
SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_a', 'SELECT key, value FROM hj_b') AS one_thread;
SET approx_gpu.cpu_threads = 3;
SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_a', 'SELECT key, value FROM hj_b') AS three_threads;
RESET approx_gpu.cpu_threads;

-- STRICT: a NULL query gives no rows / NULL
SELECT count(*) AS no_rows FROM approx_gpu.hash_join(NULL, 'SELECT 1, 1');
SELECT approx_gpu.hash_join_count('SELECT 1, 1', NULL) IS NULL AS null_count;

-- errors: each names the function and the query
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key FROM hj_a', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_a', 'SELECT key, value, 1 FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key::float8, value FROM hj_a', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key::numeric, value FROM hj_a', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT count(*) FROM approx_gpu.hash_join('SELECT key, value FROM hj_a', 'SELECT key, value::text FROM hj_b')$$);
SELECT hj_error($$SELECT count(*) FROM approx_gpu.hash_join('SELECT key, 1.5 FROM hj_a', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELEC key, value FROM hj_a', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_a', 'SELECT key, value FROM no_such_table')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('CREATE TABLE hj_x (k int, v int)', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT 1, 1; SELECT 2, 2', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('', 'SELECT key, value FROM hj_b')$$);
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_a', 'SELECT 1 / 0, 1')$$);

-- inner queries run with the caller's privileges
CREATE ROLE hj_regress_nobody;
GRANT USAGE ON SCHEMA approx_gpu TO hj_regress_nobody;
GRANT EXECUTE ON FUNCTION hj_error(text) TO hj_regress_nobody;
GRANT SELECT ON hj_b TO hj_regress_nobody;
SET ROLE hj_regress_nobody;
SELECT hj_error($$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_a', 'SELECT key, value FROM hj_b')$$);
SELECT approx_gpu.hash_join_count('SELECT key, value FROM hj_b', 'SELECT key, value FROM hj_b') > 0 AS allowed;
RESET ROLE;
REVOKE ALL ON hj_b FROM hj_regress_nobody;
REVOKE ALL ON SCHEMA approx_gpu FROM hj_regress_nobody;
REVOKE ALL ON FUNCTION hj_error(text) FROM hj_regress_nobody;
DROP ROLE hj_regress_nobody;

-- an ERROR while the rows are stored (here: the tuplestore's temporary file
-- passes temp_file_limit) is raised after the engine has released what it held
SET work_mem = '64kB';
SET temp_file_limit = '1MB';
SELECT count(*) FROM approx_gpu.hash_join('SELECT 1, i FROM generate_series(1, 2000) i',
                                          'SELECT 1, i FROM generate_series(1, 2000) i');
RESET temp_file_limit;
RESET work_mem;
SELECT (approx_gpu.device_info()->>'gpu_bytes_in_use')::bigint AS gpu_bytes_held,
       approx_gpu.hash_join_count('SELECT 1, 1', 'SELECT 1, 2') AS works_again;

-- a join far larger than a second's work (4 * 10^8 rows) is cancelled by
-- statement_timeout between chunks, and the session goes on
SET statement_timeout = '1s';
SELECT count(*) FROM approx_gpu.hash_join('SELECT 1, i FROM generate_series(1, 20000) i',
                                          'SELECT 1, i FROM generate_series(1, 20000) i');
RESET statement_timeout;
SELECT 1 AS still_alive, (approx_gpu.device_info()->>'gpu_bytes_in_use')::bigint AS gpu_bytes_held;
