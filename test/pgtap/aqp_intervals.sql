-- Coverage of the table synopses' 95% intervals on a table shaped to break
-- them (issue 26, items 19-21): 60 strata of very unequal sizes (many wholly
-- sampled, a few sampled at low rates), a skewed non-negative column heaped
-- on integers, a column constant within every third stratum, and a rare flag
-- that most sample rows miss. Over random boxes answered per stratum (GROUP BY
-- the stratify column), under smoothing 'never' and 'auto':
--   (a) COUNT and SUM intervals hold the exact answer >= 90% of the time
--   (b) no zero-width interval excludes the exact answer
--   (c) SUM lower bounds of the non-negative column are >= 0, AVG intervals
--       lie inside the column's [min, max]
--   (d) groups of wholly sampled strata are exact (zero width, = count(*))
--   (e) no phantom groups: a group the synopsis answers has a qualifying row
--       in the table, or a count interval that reaches 0
\ir preamble.psql
SET jit = off;
SET max_parallel_workers_per_gather = 0;
-- These are the box path's intervals: many groups stay on it (the sample path's
-- intervals are measured in src/core/sample_estimate.cpp's unit test).
SET approx_gpu.box_path_max_groups = 1000000;
SELECT plan(13);

DROP SCHEMA IF EXISTS ci_p CASCADE;
CREATE SCHEMA ci_p;
SELECT setseed(0.42) IS NULL AS seeded \gset
CREATE TABLE ci_p.t AS
SELECT g, 'k' || lpad(s::text, 2, '0') AS k,
       floor(-ln(1 - random()) * 20)::float8 AS v,
       CASE WHEN s % 3 = 0 THEN 0 ELSE g % 5 END AS c,
       (random() < 0.004)::int AS rare
  FROM (SELECT g, least(60, 1 + floor(60 * power(random(), 3)))::int AS s FROM generate_series(1, 30000) g) x;
ANALYZE ci_p.t;
CREATE TABLE ci_p.sizes AS SELECT k, count(*) AS rows FROM ci_p.t GROUP BY k;  -- <= 100 rows: wholly sampled
CREATE TABLE ci_p.res (smoothing text, box int, k text, n float8, n_lo float8, n_hi float8, s float8, s_lo float8,
                       s_hi float8, a_lo float8, a_hi float8, true_n float8, true_s float8, whole bool,
                       answered text);

-- Answers of `boxes` random boxes, each GROUP BY k next to the exact GROUP BY.
CREATE FUNCTION ci_p.run(smoothing text, boxes int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  b int; lo float8; hi float8; cond text; answered text;
BEGIN
  FOR b IN 1 .. boxes LOOP
    lo := floor(random() * 40); hi := lo + floor(random() * 60);
    cond := format('v BETWEEN %s AND %s', lo, hi);
    IF b % 3 = 1 THEN cond := cond || ' AND c = ' || (b % 5); END IF;
    IF b % 4 = 2 THEN cond := cond || ' AND rare = 1'; END IF;
    IF b % 4 = 3 THEN cond := 'rare = 0'; END IF;  -- nearly every row: a sample may see no rare row
    EXECUTE format('CREATE TEMP TABLE ci_a AS SELECT k, approx_count_ci(*) AS c, approx_sum_ci(v) AS s,
                      approx_avg_ci(v) AS a FROM ci_p.t WHERE %s GROUP BY k', cond);
    answered := approx_gpu.last_run()->>'answered_from';
    EXECUTE format('INSERT INTO ci_p.res
      SELECT %L, %s, a.k, (a.c).estimate, (a.c).lower, (a.c).upper, (a.s).estimate, (a.s).lower, (a.s).upper,
             (a.a).lower, (a.a).upper, coalesce(e.n, 0), coalesce(e.s, 0),
             z.rows <= 100, %L
        FROM pg_temp.ci_a a JOIN ci_p.sizes z USING (k) LEFT JOIN (SELECT k, count(*) AS n, sum(v) AS s FROM ci_p.t WHERE %s GROUP BY k) e
          USING (k)', smoothing, b, answered, cond);
    DROP TABLE pg_temp.ci_a;
  END LOOP;
END $$;

SET approx_gpu.random_seed = 3;
SELECT approx_gpu.create_synopsis('ci_p_never', 'ci_p.t'::regclass, ARRAY['k', 'v', 'c', 'rare']::name[], 2000,
                                  'cdf', 'never', ARRAY['k']::name[]) IS NOT NULL AS built \gset
SELECT 1 AS ran FROM ci_p.run('never', 60) \gset
SELECT approx_gpu.drop_synopsis('ci_p_never') IS NOT NULL AS dropped \gset
SELECT approx_gpu.create_synopsis('ci_p_auto', 'ci_p.t'::regclass, ARRAY['k', 'v', 'c', 'rare']::name[], 2000,
                                  'cdf', 'auto', ARRAY['k']::name[]) IS NOT NULL AS built \gset
SELECT 1 AS ran FROM ci_p.run('auto', 60) \gset

SELECT is((SELECT count(*) FROM ci_p.res WHERE answered IS DISTINCT FROM 'synopsis'), 0::bigint,
          'every box is answered from the synopsis');
SELECT cmp_ok((SELECT count(*) FROM ci_p.res WHERE NOT whole), '>=', 500::bigint,
              'many answers of sampled strata (the property has something to measure)');
SELECT cmp_ok((SELECT avg((true_n BETWEEN n_lo AND n_hi)::int)::float8 FROM ci_p.res WHERE smoothing = sm), '>=',
              0.90::float8, 'COUNT intervals hold count(*) >= 90% (' || sm || ')')
  FROM unnest(ARRAY['never', 'auto']) sm;
SELECT cmp_ok((SELECT avg((true_s BETWEEN s_lo AND s_hi)::int)::float8 FROM ci_p.res WHERE smoothing = sm), '>=',
              0.90::float8, 'SUM intervals hold sum(v) >= 90% (' || sm || ')')
  FROM unnest(ARRAY['never', 'auto']) sm;
SELECT is((SELECT count(*) FROM ci_p.res WHERE n_lo = n_hi AND n_lo <> true_n), 0::bigint,
          'no zero-width COUNT interval excludes count(*)');
SELECT is((SELECT count(*) FROM ci_p.res WHERE s_lo = s_hi AND abs(s_lo - true_s) > 1e-6 * abs(true_s)), 0::bigint,
          'no zero-width SUM interval excludes sum(v)');
SELECT is((SELECT count(*) FROM ci_p.res WHERE s_lo < 0), 0::bigint, 'SUM lower bounds of a non-negative column >= 0');
SELECT is((SELECT count(*) FROM ci_p.res WHERE a_lo < (SELECT min(v) FROM ci_p.t) OR a_hi > (SELECT max(v) FROM ci_p.t)),
          0::bigint, 'AVG intervals inside [min, max] of the column');
SELECT is((SELECT count(*) FROM ci_p.res WHERE whole AND NOT (n = true_n AND n_lo = n_hi AND abs(s - true_s) <= 1e-9 * abs(true_s))),
          0::bigint, 'wholly sampled strata are answered exactly');
SELECT is((SELECT count(*) FROM ci_p.res WHERE true_n = 0 AND n_lo > 0), 0::bigint,
          'no phantom group: an answered group with no row in the table has a count interval from 0');
SELECT is((SELECT count(*) FROM ci_p.res WHERE whole AND true_n = 0), 0::bigint,
          'no group of a wholly sampled stratum without a qualifying row');

SELECT * FROM finish();
DROP SCHEMA ci_p CASCADE;
