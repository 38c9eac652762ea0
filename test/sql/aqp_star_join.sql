-- The sample plan's star-join path (issue 39 item 2): with approx_gpu.star_join
-- = force the sample plan aggregates in one engine pass (Finalize Aggregate
-- over an "Approx Star Join" node emitting partial states); the answers equal
-- the CPU sample plan's (star_join = off) on the same synopsis: group keys and
-- counts exactly, sums, averages and interval ends within 1e-9 relative.
-- approx_gpu.device comes from APPROX_GPU_TEST_DEVICE (default cpu): the GPU
-- machine runs the same file with gpu. Outputs: booleans, counts, reasons.
\set sj_device cpu
\getenv sj_device APPROX_GPU_TEST_DEVICE
SET approx_gpu.device = :'sj_device';
SET approx_gpu.random_seed = 39;
SET approx_gpu.box_path = off;  -- one-table queries the box path would take
CREATE FUNCTION sj_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || coalesce(': ' || (approx_gpu.last_run()->>'reason'), '')
       || CASE WHEN approx_gpu.last_run() ? 'star_join_device'
               THEN CASE WHEN (approx_gpu.last_run()->>'star_join_device')::int >= 0 THEN ' (star join)'
                         ELSE ' (star join declined)' END
               ELSE '' END $$;
-- a, b within 1e-9 of the larger magnitude (NULLs equal)
CREATE FUNCTION sj_near(a float8, b float8) RETURNS bool LANGUAGE sql IMMUTABLE AS $$
SELECT a IS NOT DISTINCT FROM b OR abs(a - b) <= 1e-9 * greatest(abs(a), abs(b)) $$;
CREATE FUNCTION sj_near(a approx_gpu.approx_estimate, b approx_gpu.approx_estimate) RETURNS bool LANGUAGE sql
IMMUTABLE AS $$
SELECT (a IS NULL AND b IS NULL) OR (sj_near(a.estimate, b.estimate) AND sj_near(a.lower, b.lower) AND sj_near(a.upper, b.upper)) $$;

-- 60,000 facts: g 12 groups, h 3, k 0..99, d a date, x a number (NULL at times), q small integers
CREATE TABLE sj_f AS
SELECT i AS id, (i % 12)::int2 AS g, i % 3 AS h, i % 100 AS k, date '2024-01-01' + (i % 40) AS d,
       CASE WHEN i % 17 = 0 THEN NULL ELSE ((i::bigint * 104729) % 1000) / 10.0::float8 END AS x,
       (1 + i % 9)::int8 AS q
  FROM generate_series(1, 60000) i;
ANALYZE sj_f;
SELECT approx_gpu.create_synopsis('sj_syn', 'sj_f'::regclass, ARRAY['x', 'k', 'h', 'g', 'd', 'q']::name[], 6000, 'cdf', 'never',
                                  ARRAY['h']::name[]) IS NOT NULL AS created;

-- ---- one table: GROUP BY, WHERE, COUNT / SUM / AVG and their intervals ------------------
SET approx_gpu.star_join = off;
CREATE TEMP TABLE off1 AS
SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum(x) AS s, approx_gpu.approx_avg(x) AS a,
       approx_gpu.approx_count_ci(*) AS nc, approx_gpu.approx_sum_ci(x * q) AS sc, approx_gpu.approx_avg_ci(x) AS ac
  FROM sj_f WHERE k < 70 AND (q IN (1, 2, 5) OR x > 20) GROUP BY g;
SELECT sj_answer();
SET approx_gpu.star_join = force;
CREATE TEMP TABLE on1 AS
SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum(x) AS s, approx_gpu.approx_avg(x) AS a,
       approx_gpu.approx_count_ci(*) AS nc, approx_gpu.approx_sum_ci(x * q) AS sc, approx_gpu.approx_avg_ci(x) AS ac
  FROM sj_f WHERE k < 70 AND (q IN (1, 2, 5) OR x > 20) GROUP BY g;
SELECT sj_answer();
SELECT count(*) AS groups, count(on1.g) = count(*) AND count(off1.g) = count(*) AS same_keys,
       bool_and(on1.n = off1.n) AS counts_equal,
       bool_and(sj_near(on1.s, off1.s) AND sj_near(on1.a, off1.a)) AS estimates_near,
       bool_and(sj_near(on1.nc, off1.nc) AND sj_near(on1.sc, off1.sc) AND sj_near(on1.ac, off1.ac)) AS intervals_near
  FROM on1 FULL JOIN off1 USING (g);
EXPLAIN (COSTS OFF)
SELECT g, approx_gpu.approx_count(*) FROM sj_f WHERE k < 70 GROUP BY g;

-- GROUP BY two columns (a stratify column and a date), HAVING, ORDER BY, LIMIT above
SET approx_gpu.star_join = off;
CREATE TEMP TABLE off2 AS
SELECT h, d, approx_gpu.approx_count(*) AS n, approx_gpu.approx_avg(x / 2) AS a
  FROM sj_f WHERE d BETWEEN date '2024-01-05' AND date '2024-01-30' AND x IS NOT NULL
 GROUP BY h, d HAVING approx_gpu.approx_count(*) > 100 ORDER BY n DESC, h, d LIMIT 20;
SELECT sj_answer();
SET approx_gpu.star_join = force;
CREATE TEMP TABLE on2 AS
SELECT h, d, approx_gpu.approx_count(*) AS n, approx_gpu.approx_avg(x / 2) AS a
  FROM sj_f WHERE d BETWEEN date '2024-01-05' AND date '2024-01-30' AND x IS NOT NULL
 GROUP BY h, d HAVING approx_gpu.approx_count(*) > 100 ORDER BY n DESC, h, d LIMIT 20;
SELECT sj_answer();
SELECT count(*) AS groups, count(on2.h) = count(*) AND count(off2.h) = count(*) AS same_keys,
       bool_and(on2.n = off2.n) AS counts_equal, bool_and(sj_near(on2.a, off2.a)) AS estimates_near
  FROM on2 FULL JOIN off2 USING (h, d);

-- no GROUP BY; a WHERE no row passes
SET approx_gpu.star_join = off;
CREATE TEMP TABLE off3 AS SELECT approx_gpu.approx_sum_ci(x) AS s, approx_gpu.approx_count(*) AS n FROM sj_f WHERE q > 3;
SELECT sj_answer();
CREATE TEMP TABLE off4 AS SELECT approx_gpu.approx_count(*) AS n, approx_gpu.approx_avg(x) AS a FROM sj_f WHERE k > 1000;
SELECT sj_answer();
SET approx_gpu.star_join = force;
CREATE TEMP TABLE on3 AS SELECT approx_gpu.approx_sum_ci(x) AS s, approx_gpu.approx_count(*) AS n FROM sj_f WHERE q > 3;
SELECT sj_answer();
CREATE TEMP TABLE on4 AS SELECT approx_gpu.approx_count(*) AS n, approx_gpu.approx_avg(x) AS a FROM sj_f WHERE k > 1000;
SELECT sj_answer();
SELECT sj_near(on3.s, off3.s) AND on3.n = off3.n AS plain_equal FROM on3, off3;
SELECT on4.n IS NOT DISTINCT FROM off4.n AND on4.a IS NOT DISTINCT FROM off4.a AS empty_equal FROM on4, off4;

-- a prepared statement (its plan cached and copied) answers the same on every execution
SET approx_gpu.star_join = force;
PREPARE sj_p(int) AS SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(x) AS s
  FROM sj_f WHERE k < $1 GROUP BY g;
CREATE TEMP TABLE on5 AS EXECUTE sj_p(50);
SELECT sj_answer();
CREATE TEMP TABLE on6 AS EXECUTE sj_p(50);
SELECT sj_answer();
SELECT count(*) AS groups, bool_and(on5.n = on6.n AND sj_near(on5.s, on6.s)) AS same FROM on5 JOIN on6 USING (g);
DEALLOCATE sj_p;

-- ---- errors: the CPU plan's -------------------------------------------------------------
SET approx_gpu.star_join = off;
SELECT g, approx_gpu.approx_sum(x / (k - k)) FROM sj_f GROUP BY g;
SELECT g, approx_gpu.approx_sum(k / (h - h)) FROM sj_f GROUP BY g;
SELECT g, approx_gpu.approx_sum(k * 2147483647 * 2) FROM sj_f GROUP BY g;
SET approx_gpu.star_join = force;
SELECT g, approx_gpu.approx_sum(x / (k - k)) FROM sj_f GROUP BY g;
SELECT g, approx_gpu.approx_sum(k / (h - h)) FROM sj_f GROUP BY g;
SELECT g, approx_gpu.approx_sum(k * 2147483647 * 2) FROM sj_f GROUP BY g;
-- a qual that filters the rows first: no error on the others
SELECT count(*) AS groups FROM (SELECT g, approx_gpu.approx_sum(x / h) FROM sj_f WHERE h > 0 GROUP BY g) s;

-- ---- outside the shape: the CPU sample plan, and why (EXPLAIN VERBOSE) ------------------
CREATE FUNCTION sj_why(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r text; BEGIN
  FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
    IF r ~ '(Star Join|Sample Plan):' THEN RETURN NEXT btrim(r); END IF;
  END LOOP; END $$;
SELECT sj_why('SELECT g, approx_gpu.approx_count(*) FILTER (WHERE x > 1) FROM sj_f GROUP BY g');
SELECT sj_why('SELECT g, approx_gpu.approx_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM sj_f GROUP BY g');
SELECT sj_why('SELECT g, approx_gpu.approx_sum(x) FROM sj_f WHERE abs(x) > 3 GROUP BY g');
SELECT sj_why('SELECT g::text, approx_gpu.approx_sum(x) FROM sj_f GROUP BY 1');
SELECT sj_why('SELECT g, approx_gpu.approx_sum(x) FROM sj_f GROUP BY g');
SET approx_gpu.star_join = off;
SELECT sj_why('SELECT g, approx_gpu.approx_sum(x) FROM sj_f GROUP BY g');
-- on: only where a GPU runs it (device = cpu: never, and nothing said)
SET approx_gpu.star_join = on;
SET approx_gpu.device = cpu;
SELECT sj_why('SELECT g, approx_gpu.approx_sum(x) FROM sj_f GROUP BY g');
SET approx_gpu.device = :'sj_device';

RESET approx_gpu.star_join;
RESET approx_gpu.box_path;
SELECT approx_gpu.drop_synopsis('sj_syn');
DROP TABLE sj_f;
DROP FUNCTION sj_answer(), sj_near(float8, float8), sj_near(approx_gpu.approx_estimate, approx_gpu.approx_estimate), sj_why(text);

-- ---- through the GPU service: the sample's columns stay resident there ------------------
-- (the service pass: device = auto, every call goes to the service; in-process
-- the same queries run in the backend and every check below holds as well)
RESET approx_gpu.device;
SET approx_gpu.box_path = off;
SET approx_gpu.star_join = force;
CREATE TABLE sj_r AS
SELECT i AS id, (i % 7)::int4 AS g, i % 3 AS h, ((i::bigint * 7919) % 1000) / 10.0::float8 AS x
  FROM generate_series(1, 20000) i;
ANALYZE sj_r;
SELECT approx_gpu.create_synopsis('sj_r_syn', 'sj_r'::regclass, ARRAY['x', 'g', 'h']::name[], 3000, 'cdf', 'never',
                                  ARRAY['h']::name[]) IS NOT NULL AS created;
CREATE FUNCTION sj_served(want int) RETURNS bool LANGUAGE sql AS $$
SELECT coalesce((approx_gpu.gpu_service_info()->>'used_by_this_session')::bool, false)
       = (approx_gpu.last_run() ? 'star_join_service')
   AND coalesce((approx_gpu.last_run()->>'star_join_service')::int, want) = want $$;
CREATE FUNCTION sj_hits() RETURNS bigint LANGUAGE sql AS $$
SELECT coalesce((approx_gpu.gpu_service_info()->'cache'->>'hits')::bigint, 0) $$;
CREATE FUNCTION sj_close(a approx_gpu.approx_estimate, b approx_gpu.approx_estimate) RETURNS bool LANGUAGE sql
IMMUTABLE AS $$
SELECT (a IS NULL AND b IS NULL)
    OR (abs(a.estimate - b.estimate) <= 1e-9 * greatest(abs(a.estimate), abs(b.estimate))
        AND abs(a.upper - b.upper) <= 1e-9 * greatest(abs(a.upper), abs(b.upper))) $$;
-- the first run sends the columns (1), the second finds them resident (2): a cache hit
CREATE TEMP TABLE r1 AS
SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(x) AS s FROM sj_r WHERE x > 10 GROUP BY g;
SELECT sj_served(1) AS sent, approx_gpu.last_run()->>'star_join_device' IS NOT NULL AS star_join;
SELECT sj_hits() AS hits0 \gset
CREATE TEMP TABLE r2 AS
SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(x) AS s FROM sj_r WHERE x > 10 GROUP BY g;
SELECT sj_served(2) AS resident, approx_gpu.last_run()->>'star_join_device' IS NOT NULL AS star_join,
       sj_hits() > :hits0 OR NOT coalesce((approx_gpu.gpu_service_info()->>'used_by_this_session')::bool, false)
         AS hits_grew;
SELECT count(*) AS groups, bool_and(r1.n = r2.n AND sj_close(r1.s, r2.s)) AS same FROM r1 FULL JOIN r2 USING (g);
-- a refresh builds a new sample relation: its columns are sent (no stale resident copy),
-- and the answer is the new sample's (as the CPU sample plan's over it)
UPDATE sj_r SET x = x + 1000;
SELECT approx_gpu.refresh_synopsis('sj_r_syn') IS NOT NULL AS refreshed;
CREATE TEMP TABLE r3 AS
SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(x) AS s FROM sj_r WHERE x > 10 GROUP BY g;
SELECT sj_served(1) AS sent_again, approx_gpu.last_run()->>'star_join_device' IS NOT NULL AS star_join;
SET approx_gpu.star_join = off;
CREATE TEMP TABLE r4 AS
SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(x) AS s FROM sj_r WHERE x > 10 GROUP BY g;
SELECT count(*) AS groups, bool_and(r3.n = r4.n AND sj_close(r3.s, r4.s)) AS as_cpu_plan,
       bool_and((r3.s).estimate > (r2.s).estimate) AS follows_new_sample
  FROM r3 FULL JOIN r4 USING (g) JOIN r2 USING (g);
RESET approx_gpu.star_join;
RESET approx_gpu.box_path;
SELECT approx_gpu.drop_synopsis('sj_r_syn');
DROP TABLE sj_r;
DROP FUNCTION sj_served(int), sj_hits(), sj_close(approx_gpu.approx_estimate, approx_gpu.approx_estimate);
