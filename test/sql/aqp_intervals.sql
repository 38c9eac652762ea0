-- Honest answers from table synopses (issue 26, items 9 and 18-21): every
-- interval holds what the sample cannot see, the error guard never answers
-- from a sample that saw nothing, wholly sampled strata are exact, SUM / AVG
-- intervals respect the column's range, GROUP BY is decided by type. Every
-- check compares with the exact answer computed in the same statement.
SET approx_gpu.random_seed = 5;
CREATE FUNCTION ci_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(approx_gpu.last_run()->>'reason', approx_gpu.last_run()->>'synopsis', '-') $$;
-- k: 'big' 15,000 rows, 'mid' 4,000, 'nul' 940 (x always NULL), 'small' 60;
-- x >= 0; cap = 1 on two rows of 'big' only; i an integer column.
CREATE TABLE ci_t AS
SELECT g, CASE WHEN g <= 15000 THEN 'big' WHEN g <= 19000 THEN 'mid' WHEN g <= 19940 THEN 'nul' ELSE 'small' END AS k,
       CASE WHEN g BETWEEN 19001 AND 19940 THEN NULL ELSE ((g * 7919) % 1000) / 10.0 END::float8 AS x,
       (g IN (5000, 5001))::int AS cap, (g % 7) AS i, g / 3.0 AS f
  FROM generate_series(1, 20000) g;
CREATE TABLE ci_s AS SELECT * FROM ci_t;
CREATE TABLE ci_k AS SELECT * FROM ci_t;
ANALYZE ci_t; ANALYZE ci_s; ANALYZE ci_k;
SELECT approx_gpu.create_synopsis('ci_u_syn', 'ci_t'::regclass, ARRAY['g', 'k', 'x', 'cap', 'i', 'f']::name[], 500,
                                  'cdf', 'never') IS NOT NULL AS created;
SELECT approx_gpu.create_synopsis('ci_s_syn', 'ci_s'::regclass, ARRAY['g', 'k', 'x', 'cap', 'i']::name[], 400,
                                  'cdf', 'never', ARRAY['k']::name[]) IS NOT NULL AS created;
SELECT approx_gpu.create_synopsis('ci_k_syn', 'ci_k'::regclass, ARRAY['g', 'k', 'x', 'i', 'f']::name[], 400,
                                  'cdf', 'always', ARRAY['k']::name[]) IS NOT NULL AS created;

-- ---- item 9: approx_sum of values that are all NULL is NULL, as sum() -----------------
-- (each approximate query runs at top level, or as CREATE TABLE AS, so that
-- last_run() shows how it was answered; the exact twin runs next to it)
CREATE TEMP TABLE a9 AS SELECT approx_gpu.approx_sum(x) AS s, approx_gpu.approx_sum_ci(x) AS sc,
                               approx_gpu.approx_avg(x) AS av, approx_gpu.approx_avg_ci(x) AS ac
                          FROM ci_s WHERE k = 'nul';
SELECT ci_answer();
SELECT a.s IS NULL AS sum_null, (a.sc).estimate IS NULL AND (a.sc).lower IS NULL AS sum_ci_null,
       a.av IS NULL AND (a.ac).estimate IS NULL AS avg_null, e.s IS NULL AS exact_null
  FROM a9 a, (SELECT sum(x) AS s FROM ci_s WHERE k = 'nul') e;
CREATE TEMP TABLE a9g AS SELECT k, approx_gpu.approx_sum(x) AS s FROM ci_s GROUP BY k;
SELECT ci_answer();
SELECT k, a.s IS NULL AS approx_null, e.s IS NULL AS exact_null
  FROM a9g a JOIN (SELECT k, sum(x) AS s FROM ci_s GROUP BY k) e USING (k) ORDER BY k;
-- the same on the stored synopsis value: the box g in [19001, 19940] holds 'nul' rows only
SELECT approx_gpu.approx_sum(synopsis, 3, ARRAY[19001, NULL, NULL, NULL, NULL], ARRAY[19940, NULL, NULL, NULL, NULL])
         IS NULL AS sum_null,
       (approx_gpu.approx_sum_ci(synopsis, 3, ARRAY[19001, NULL, NULL, NULL, NULL],
                                 ARRAY[19940, NULL, NULL, NULL, NULL])).estimate IS NULL AS sum_ci_null,
       approx_gpu.approx_sum(synopsis, 3, ARRAY[1, NULL, NULL, NULL, NULL], ARRAY[19940, NULL, NULL, NULL, NULL])
         IS NOT NULL AS others_answered
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'ci_s_syn';

-- ---- item 18: the guard never answers GROUP BY from a sample that saw no row ---------------
SET approx_gpu.max_relative_error = 0.5;
-- two rows of the table (g 7001, 7002), too few for a 500-row sample to hold
CREATE TEMP TABLE a18 AS SELECT k, approx_gpu.approx_count(*) AS n FROM ci_t WHERE g BETWEEN 7001 AND 7002 GROUP BY k;
SELECT ci_answer();
SELECT (SELECT count(*) FROM a18) AS approx_groups,
       (SELECT count(*) FROM (SELECT k FROM ci_t WHERE g BETWEEN 7001 AND 7002 GROUP BY k) e) AS exact_groups;
-- stratified: the 'big' stratum is sampled, and none of its sample rows has cap = 1
CREATE TEMP TABLE a18s AS SELECT k, approx_gpu.approx_count(*) AS n FROM ci_s WHERE cap = 1 GROUP BY k;
SELECT ci_answer();
SELECT (SELECT count(*) FROM a18s) AS approx_groups,
       (SELECT count(*) FROM (SELECT k FROM ci_s WHERE cap = 1 GROUP BY k) e) AS exact_groups;
-- the same without GROUP BY falls back too
SELECT approx_gpu.approx_count(*) = 2 AS exact FROM ci_t WHERE g BETWEEN 7001 AND 7002;
SELECT ci_answer();
-- a box over wholly sampled strata only is exact: answered, and no group is invented
SELECT k, approx_gpu.approx_count(*) AS n FROM ci_s WHERE k = 'small' AND x < 50 GROUP BY k;
SELECT ci_answer();
SELECT k, count(*) AS n FROM ci_s WHERE k = 'small' AND x < 50 GROUP BY k;
SELECT k, approx_gpu.approx_count(*) AS n FROM ci_s WHERE k = 'small' AND x > 500 GROUP BY k;
SELECT ci_answer();
RESET approx_gpu.max_relative_error;

-- ---- item 19: intervals account for what the sample cannot see ---------------------------
-- no sample row in the box: a COUNT interval [0, upper > 0] holding the truth (2)
CREATE TEMP TABLE a19 AS SELECT approx_gpu.approx_count_ci(*) AS c, approx_gpu.approx_sum_ci(x) AS s
                           FROM ci_t WHERE g BETWEEN 7001 AND 7002;
SELECT ci_answer();
SELECT (c).lower = 0 AS lower_zero, (c).upper > (c).lower AS not_zero_width, (c).upper >= 2 AS holds_truth,
       (c).upper < 20000 AS bounded FROM a19;
-- approx_sum over no sample row: an interval [0, upper] of a non-negative column, not NULL
SELECT (s).estimate IS NOT NULL AS answered, (s).lower >= 0 AS non_negative, (s).upper > (s).lower AS not_zero_width,
       (s).lower <= e AND e <= (s).upper AS holds_truth
  FROM a19, (SELECT sum(x) AS e FROM ci_t WHERE g BETWEEN 7001 AND 7002) b;
-- a stratum whose sample rows all have cap = 0 (the two cap = 1 rows unseen): truth 14,998
CREATE TEMP TABLE a19s AS SELECT approx_gpu.approx_count_ci(*) AS c FROM ci_s WHERE k = 'big' AND cap = 0;
SELECT ci_answer();
SELECT (c).upper > (c).lower AS not_zero_width, (c).lower <= e.n AND e.n <= (c).upper AS holds_truth
  FROM a19s, (SELECT count(*) AS n FROM ci_s WHERE k = 'big' AND cap = 0) e;
-- the same per group: wholly sampled groups are exact with zero width
CREATE TEMP TABLE a19g AS SELECT k, approx_gpu.approx_count_ci(*) AS c FROM ci_s WHERE cap = 0 GROUP BY k;
SELECT ci_answer();
SELECT a.k, (a.c).lower <= e.n AND e.n <= (a.c).upper AS holds_truth,
       ((a.c).upper = (a.c).lower) = (a.k = 'small') AS zero_width_iff_whole
  FROM a19g a JOIN (SELECT k, count(*) AS n FROM ci_s WHERE cap = 0 GROUP BY k) e USING (k) ORDER BY k;
-- the kde_synopsis functions: the same intervals (no sample row in the box)
CREATE TABLE ci_v AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[g, x], 300) AS s FROM ci_t;
SELECT (c).lower = 0 AND (c).upper > 0 AS count_ci, (s).lower >= 0 AND (s).upper > (s).lower AS sum_ci
  FROM (SELECT approx_gpu.approx_count_ci(s, ARRAY[7001, NULL], ARRAY[7002, NULL]) AS c,
               approx_gpu.approx_sum_ci(s, 2, ARRAY[7001, NULL], ARRAY[7002, NULL]) AS s FROM ci_v) a;

-- ---- item 21: SUM lower bounds >= 0 on a non-negative column, AVG inside [min, max] ---------
CREATE FUNCTION ci_sum_bounds() RETURNS TABLE (sum_negative int, avg_outside int, boxes int) LANGUAGE plpgsql AS $$
DECLARE
  lo int; r record;
BEGIN
  sum_negative := 0; avg_outside := 0; boxes := 0;
  FOR lo IN SELECT generate_series(1, 19000, 950) LOOP
    SELECT approx_gpu.approx_sum_ci(x) AS s, approx_gpu.approx_avg_ci(x) AS a INTO r
      FROM ci_t WHERE g BETWEEN lo AND lo + 40;
    boxes := boxes + 1;
    IF (r.s).lower < 0 THEN sum_negative := sum_negative + 1; END IF;
    IF (r.a).lower < 0 OR (r.a).upper > 99.9 THEN avg_outside := avg_outside + 1; END IF;
  END LOOP;
  RETURN NEXT;
END $$;
SELECT * FROM ci_sum_bounds();

-- ---- item 20: wholly sampled strata are exact also on a smoothed column ---------------------
SELECT approx_gpu.kde_synopsis_info(synopsis)->'columns'->2->>'mode' AS x_mode
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'ci_k_syn';
CREATE TEMP TABLE a20 AS SELECT k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_count_ci(*) AS c,
                                approx_gpu.approx_sum(x) AS s FROM ci_k WHERE x < 33.3 GROUP BY k;
SELECT ci_answer();
SELECT k, a.n = e.n AND (a.c).lower = e.n AND (a.c).upper = e.n AS count_exact, abs(a.s - e.s) < 1e-9 * e.s AS sum_exact
  FROM a20 a JOIN (SELECT k, count(*) AS n, sum(x) AS s FROM ci_k WHERE x < 33.3 GROUP BY k) e USING (k)
 WHERE k = 'small';
-- no phantom group: a group with no qualifying row is not in the answer
CREATE TEMP TABLE a20p AS SELECT k, approx_gpu.approx_count(*) AS n FROM ci_k WHERE x > 99.95 GROUP BY k;
SELECT ci_answer();
SELECT k FROM a20p WHERE k = 'small';
SELECT k FROM ci_k WHERE x > 99.95 AND k = 'small' GROUP BY k;

-- ---- item 21: GROUP BY is decided by the column's type, not by smoothing ---------------------
-- integer column i: accepted whether or not the synopsis smooths it, answered by exact membership
SELECT i, round(approx_gpu.approx_count(*)) > 0 AS answered FROM ci_k GROUP BY i ORDER BY i;
SELECT ci_answer();
SELECT i, round(approx_gpu.approx_count(*)) > 0 AS answered FROM ci_t GROUP BY i ORDER BY i;
SELECT ci_answer();
-- a float column: refused whatever its mode
SELECT f, approx_gpu.approx_count(*) FROM ci_k WHERE g < 4 GROUP BY f ORDER BY f;
SELECT ci_answer();
SELECT f, approx_gpu.approx_count(*) FROM ci_t WHERE g < 4 GROUP BY f ORDER BY f;
SELECT ci_answer();

DROP TABLE ci_t, ci_s, ci_k, ci_v CASCADE;
DROP FUNCTION ci_answer(), ci_sum_bounds();
