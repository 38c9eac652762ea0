-- Hashed join properties: hash_join = PostgreSQL's JOIN ... USING (key) as
-- multisets, hash_join_count = its cardinality, CPU = GPU (same rows in the
-- same order), thread counts change nothing. Helpers (tap.*) come from
-- test/pgtap_setup.sql.
\ir preamble.psql
SET jit = off;
BEGIN;
SELECT plan(21);

SELECT setseed(0.23);
CREATE TEMP TABLE hj_r AS SELECT i, (random() * 60000)::bigint AS key, (random() * 1e9)::bigint AS value
  FROM generate_series(1, 200000) i;
CREATE TEMP TABLE hj_s AS SELECT i, (random() * 80000)::bigint AS key, (random() * 1e9)::bigint AS value
  FROM generate_series(1, 100000) i;
-- Zipf-like: P(key >= k) ~ 1/k^1.5
CREATE TEMP TABLE hj_z AS SELECT i, least(power(1 - random(), -1 / 1.5)::bigint, 1000000) AS key, i AS value
  FROM generate_series(1, 6000) i;
CREATE TEMP TABLE hj_n AS
  SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE i % 97 END AS key, CASE WHEN i % 7 = 0 THEN NULL ELSE i END AS value
  FROM generate_series(1, 3000) i;

CREATE FUNCTION pg_temp.pg_join(b text, p text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT key::bigint, b.value::bigint AS build_value, p.value::bigint AS probe_value FROM (%s) b(key, value) JOIN (%s) p(key, value) USING (key)', b, p) $$;
CREATE FUNCTION pg_temp.hj(b text, p text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT * FROM approx_gpu.hash_join(%L, %L)', b, p) $$;
CREATE FUNCTION pg_temp.on_device(dev text, b text, p text)
RETURNS TABLE(key bigint, build_value bigint, probe_value bigint) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('approx_gpu.device', dev, true);
  RETURN QUERY SELECT * FROM approx_gpu.hash_join(b, p);
END $$;
SELECT current_setting('approx_gpu.device') AS device0 \gset

-- hash_join = PostgreSQL's join, as multisets (bag_eq: EXCEPT ALL both ways)
SELECT bag_eq(pg_temp.hj(b, p), pg_temp.pg_join(b, p), d) FROM (VALUES
  ('SELECT key, value FROM hj_r WHERE i <= 50000', 'SELECT key, value FROM hj_s WHERE i <= 30000', 'random keys'),
  ('SELECT key % 13, value FROM hj_r WHERE i <= 1500', 'SELECT key % 9, value FROM hj_s WHERE i <= 1000', 'heavy duplicates on both sides'),
  ('SELECT key, value FROM hj_z WHERE i <= 3000', 'SELECT key, -value FROM hj_z WHERE i > 3000', 'Zipf skew'),
  ('SELECT key, value FROM hj_r WHERE false', 'SELECT key, value FROM hj_s', 'empty build side'),
  ('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s WHERE false', 'empty probe side'),
  ('SELECT 5, i FROM generate_series(1, 400) i', 'SELECT 5, -i FROM generate_series(1, 250) i', 'every key equal'),
  ($$SELECT k, v FROM (VALUES (9223372036854775807, 1), (-9223372036854775808, 2), (0, 3), (-1, 4),
      (-9223372036854775808, -9223372036854775808)) t(k, v)$$,
   $$SELECT k, v FROM (VALUES (-9223372036854775808, 9223372036854775807), (-1, 5), (0, 6), (1, 7),
      (9223372036854775807, -9223372036854775808)) t(k, v)$$, 'int8 limits, 0 and -1'),
  ('SELECT key, value FROM hj_n WHERE i <= 1500', 'SELECT key, value FROM hj_n WHERE i > 1000', 'NULL keys and values')
) c(b, p, d);

-- hash_join_count = the join's cardinality
SELECT is(hash_join_count('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s'),
          (SELECT count(*) FROM hj_r JOIN hj_s USING (key)), 'count: random keys');
SELECT is(hash_join_count('SELECT key, value FROM hj_z WHERE i <= 3000', 'SELECT key, value FROM hj_z WHERE i > 3000'),
          (SELECT count(*) FROM hj_z a JOIN hj_z b USING (key) WHERE a.i <= 3000 AND b.i > 3000), 'count: Zipf skew');
SELECT is(hash_join_count('SELECT key, value FROM hj_n', 'SELECT key, value FROM hj_n'),
          (SELECT count(*) FROM hj_n a JOIN hj_n b USING (key)), 'count: NULL keys never match');
SELECT is((SELECT count(*) FROM hash_join('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s')),
          hash_join_count('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s'), 'hash_join rows = hash_join_count');
SELECT is((last_run()->>'rows_skipped')::bigint, 0::bigint, 'no row skipped without NULL keys');
SELECT is(hash_join_count('SELECT key::int4, value::int2 FROM hj_n', 'SELECT key::int2, 1 FROM hj_n'),
          hash_join_count('SELECT key, value FROM hj_n', 'SELECT key, 1::bigint FROM hj_n'), 'int2/int4 = int8');
SELECT is((last_run()->>'rows_skipped')::bigint, 2 * (SELECT count(*) FROM hj_n WHERE key IS NULL),
          'NULL keys skipped and counted in last_run()');

-- CPU = GPU: the same rows in the same order (skipped without a GPU)
SELECT CASE WHEN tap.has_gpu() THEN
  results_eq(format('SELECT * FROM pg_temp.on_device(%L, %L, %L)', 'gpu', b, p),
             format('SELECT * FROM pg_temp.on_device(%L, %L, %L)', 'cpu', b, p), 'CPU = GPU: ' || d)
  ELSE skip('no GPU on this machine: CPU = GPU is checked on the GPU machine') END
FROM (VALUES
  ('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s', 'random keys, 2e5 x 1e5'),
  ('SELECT key, value FROM hj_z', 'SELECT key, value FROM hj_z WHERE i % 3 = 0', 'Zipf skew'),
  ('SELECT key, value FROM hj_n', 'SELECT key, value FROM hj_n', 'NULL keys and values')
) c(b, p, d);
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', $q$SELECT hash_join_count('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s')$q$)
                         = tap.scalar_on('cpu', $q$SELECT hash_join_count('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s')$q$)$$,
                  'CPU = GPU: count');
SELECT set_config('approx_gpu.device', :'device0', true) IS NOT NULL AS restored \gset

-- thread counts change nothing (not even the order)
SET LOCAL approx_gpu.device = 'cpu';
SET LOCAL approx_gpu.cpu_threads = 1;
CREATE TEMP TABLE hj_one AS SELECT row_number() OVER () AS n, * FROM hash_join('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s');
SET LOCAL approx_gpu.cpu_threads = 4;
SELECT results_eq('SELECT * FROM hj_one ORDER BY n',
                  $$SELECT row_number() OVER () AS n, * FROM hash_join('SELECT key, value FROM hj_r', 'SELECT key, value FROM hj_s')$$,
                  '1 thread = 4 threads');
SELECT set_config('approx_gpu.device', :'device0', true) IS NOT NULL AS restored \gset
SELECT ok((last_run()->>'build_rows')::bigint = 200000 AND (last_run()->>'probe_rows')::bigint = 100000,
          'last_run() counts the rows read from each side');

SELECT * FROM finish();
ROLLBACK;
