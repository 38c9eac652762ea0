-- Properties of approx_count(x) and the approx_percentile_* aggregates over
-- rows (no synopsis):
--   (a) parallel = serial: approx_count(x) / approx_count_ci(x) split into
--       partial aggregates under Gather give count(x), grouped and not,
--       computed by CREATE TABLE AS (no PL/pgSQL in the compared statement)
--   (b) percentiles of random data at random fractions equal percentile_cont /
--       percentile_disc, grouped, with NULLs, ties and +-Infinity
\ir preamble.psql
SET jit = off;
SELECT plan(6);

DROP SCHEMA IF EXISTS sa_p CASCADE;
CREATE SCHEMA sa_p;
SELECT setseed(0.27) IS NULL AS seeded \gset
CREATE TABLE sa_p.t AS
SELECT g % 13 AS grp,
       CASE WHEN random() < 0.1 THEN NULL WHEN random() < 0.01 THEN 'Infinity'::float8
            ELSE round((random() * 50)::numeric, 1)::float8 END AS x,
       CASE WHEN random() < 0.2 THEN NULL ELSE md5(g::text) END AS t
  FROM generate_series(1, 60000) g;
ANALYZE sa_p.t;

-- (a)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT ok(tap.plan_text('SELECT approx_gpu.approx_count(t), approx_gpu.approx_count_ci(x) FROM sa_p.t')
          ~ 'Finalize Aggregate.*Gather.*Workers Planned: [12].*Partial Aggregate',
          'EXPLAIN: approx_count(x) and approx_count_ci(x) run as Partial Aggregate under Gather');
CREATE TABLE sa_p.par AS
SELECT grp, approx_gpu.approx_count(t) AS ct, approx_gpu.approx_count_ci(x) AS cx FROM sa_p.t GROUP BY grp;
INSERT INTO sa_p.par SELECT NULL, approx_gpu.approx_count(t), approx_gpu.approx_count_ci(x) FROM sa_p.t;
SELECT ok(tap.plan_text('SELECT grp, approx_gpu.approx_count(t) FROM sa_p.t GROUP BY grp') ~ 'Gather',
          'EXPLAIN: the grouped approx_count(x) runs under Gather too');
SET max_parallel_workers_per_gather = 0;
CREATE TABLE sa_p.ser AS SELECT grp, count(t) AS ct, count(x) AS cx FROM sa_p.t GROUP BY ROLLUP (grp);
SELECT ok(NOT EXISTS (
            SELECT 1 FROM sa_p.par p FULL JOIN sa_p.ser s ON coalesce(p.grp, -1) = coalesce(s.grp, -1)
             WHERE p.ct IS DISTINCT FROM s.ct OR (p.cx).estimate IS DISTINCT FROM s.cx
                OR (p.cx).lower IS DISTINCT FROM s.cx OR (p.cx).upper IS DISTINCT FROM s.cx)
          AND (SELECT count(*) FROM sa_p.ser) = 14,
          'parallel approx_count(x) / approx_count_ci(x) = serial count(x), per group and in total');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- (b)
CREATE TABLE sa_p.fr AS SELECT round(random()::numeric, 3)::float8 AS f FROM generate_series(1, 12);
INSERT INTO sa_p.fr VALUES (0), (1);
SELECT ok(bool_and(a IS NOT DISTINCT FROM b), 'approx_percentile_cont = percentile_cont at 14 fractions x 13 groups (' || count(*) || ')')
  FROM (SELECT approx_gpu.approx_percentile_cont(f) WITHIN GROUP (ORDER BY x) AS a,
               percentile_cont(f) WITHIN GROUP (ORDER BY x) AS b
          FROM sa_p.t, sa_p.fr GROUP BY grp, f) q;
SELECT ok(bool_and(a IS NOT DISTINCT FROM b), 'approx_percentile_disc = percentile_disc at 14 fractions x 13 groups (' || count(*) || ')')
  FROM (SELECT approx_gpu.approx_percentile_disc(f) WITHIN GROUP (ORDER BY x) AS a,
               percentile_disc(f) WITHIN GROUP (ORDER BY x) AS b
          FROM sa_p.t, sa_p.fr GROUP BY grp, f) q;
SELECT ok(bool_and((a).estimate IS NOT DISTINCT FROM b AND (a).lower IS NOT DISTINCT FROM b AND (a).upper IS NOT DISTINCT FROM b),
          'approx_percentile_cont_ci over rows: lower = upper = estimate = percentile_cont')
  FROM (SELECT approx_gpu.approx_percentile_cont_ci(f) WITHIN GROUP (ORDER BY x) AS a,
               percentile_cont(f) WITHIN GROUP (ORDER BY x) AS b
          FROM sa_p.t, sa_p.fr GROUP BY grp, f) q;

DROP SCHEMA sa_p CASCADE;
SELECT * FROM finish();
