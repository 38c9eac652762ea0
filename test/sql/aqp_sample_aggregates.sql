-- approx_count(x) and approx_percentile_cont / _disc (with their _ci forms)
-- over rows equal their exact twins; the sample path's weighted aggregates
-- (sample_count / sample_sum / sample_avg / sample_percentile_*) run only
-- inside a sample plan; argument errors. Outputs: booleans, counts, errors.
-- two intervals equal up to rounding: the star join's GPU sums (atomics) and
-- PostgreSQL's parallel plans add in no fixed order
CREATE FUNCTION approx_close(a approx_gpu.approx_estimate, b approx_gpu.approx_estimate) RETURNS bool
LANGUAGE sql IMMUTABLE AS $$
SELECT abs(a.lower - b.lower) <= 1e-9 * (abs(a.lower) + abs(a.upper))
   AND abs(a.upper - b.upper) <= 1e-9 * (abs(a.lower) + abs(a.upper)) $$;
CREATE TABLE aqps_t (g int, x float8, k int, t text);
INSERT INTO aqps_t
SELECT i % 7, CASE WHEN i % 5 = 0 THEN NULL ELSE (i * 37 % 101) / 4.0 END,
       CASE WHEN i % 3 = 0 THEN NULL ELSE i % 10 END,  -- ties
       CASE WHEN i % 4 = 0 THEN NULL ELSE 'v' || (i % 9) END
  FROM generate_series(1, 1000) i;
ANALYZE aqps_t;

-- ---- approx_count(expr) = count(expr), NULLs skipped, any type -------------------------
SELECT approx_gpu.approx_count(x) = count(x) AS float_eq,
       approx_gpu.approx_count(k) = count(k) AS int_eq,
       approx_gpu.approx_count(t) = count(t) AS text_eq,
       approx_gpu.approx_count(*) = count(*) AS star_eq,
       approx_gpu.approx_count(x) < approx_gpu.approx_count(*) AS nulls_skipped,
       pg_typeof(approx_gpu.approx_count(t)) AS result_type
  FROM aqps_t;
SELECT bool_and(a = c) AS grouped_eq, count(*) AS groups
  FROM (SELECT g, approx_gpu.approx_count(k) AS a, count(k) AS c FROM aqps_t GROUP BY g) s;
SELECT (approx_gpu.approx_count_ci(x)).estimate = count(x) AS ci_estimate,
       (approx_gpu.approx_count_ci(x)).lower = count(x) AS ci_lower,
       (approx_gpu.approx_count_ci(x)).upper = count(x) AS ci_upper
  FROM aqps_t;
SELECT approx_gpu.approx_count(x) AS no_rows FROM aqps_t WHERE false;

-- ---- percentiles = percentile_cont / percentile_disc ----------------------------------
SELECT f,
       approx_gpu.approx_percentile_cont(f) WITHIN GROUP (ORDER BY x)
         = percentile_cont(f) WITHIN GROUP (ORDER BY x) AS cont_eq,
       approx_gpu.approx_percentile_disc(f) WITHIN GROUP (ORDER BY x)
         = percentile_disc(f) WITHIN GROUP (ORDER BY x) AS disc_eq,
       approx_gpu.approx_percentile_cont(f) WITHIN GROUP (ORDER BY k)
         = percentile_cont(f) WITHIN GROUP (ORDER BY k) AS ties_cont_eq,
       approx_gpu.approx_percentile_disc(f) WITHIN GROUP (ORDER BY k)
         = percentile_disc(f) WITHIN GROUP (ORDER BY k) AS ties_disc_eq
  FROM aqps_t, unnest(ARRAY[0, 0.1, 0.25, 0.5, 0.73, 0.9, 1]::float8[]) f
 GROUP BY f ORDER BY f;
SELECT bool_and(a IS NOT DISTINCT FROM b AND c IS NOT DISTINCT FROM d) AS grouped_eq, count(*) AS groups
  FROM (SELECT g, approx_gpu.approx_percentile_cont(0.3) WITHIN GROUP (ORDER BY x) AS a,
               percentile_cont(0.3) WITHIN GROUP (ORDER BY x) AS b,
               approx_gpu.approx_percentile_disc(0.3) WITHIN GROUP (ORDER BY x) AS c,
               percentile_disc(0.3) WITHIN GROUP (ORDER BY x) AS d
          FROM aqps_t GROUP BY g) s;
SELECT (r).estimate = e AND (r).lower = e AND (r).upper = e AS cont_ci_exact
  FROM (SELECT approx_gpu.approx_percentile_cont_ci(0.5) WITHIN GROUP (ORDER BY x) AS r,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS e FROM aqps_t) s;
SELECT (r).estimate = e AND (r).lower = e AND (r).upper = e AS disc_ci_exact
  FROM (SELECT approx_gpu.approx_percentile_disc_ci(0.5) WITHIN GROUP (ORDER BY x) AS r,
               percentile_disc(0.5) WITHIN GROUP (ORDER BY x) AS e FROM aqps_t) s;
-- both forms of one percentile in one query (a shared transition state)
SELECT approx_gpu.approx_percentile_cont(0.4) WITHIN GROUP (ORDER BY x)
         = (approx_gpu.approx_percentile_cont_ci(0.4) WITHIN GROUP (ORDER BY x)).estimate AS shared_eq,
       approx_gpu.approx_percentile_disc(0.4) WITHIN GROUP (ORDER BY x)
         = percentile_disc(0.4) WITHIN GROUP (ORDER BY x) AS shared_disc_eq
  FROM aqps_t;
-- no rows, a NULL fraction: NULL, as percentile_cont
SELECT approx_gpu.approx_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) IS NULL AS no_rows,
       approx_gpu.approx_percentile_disc_ci(0.5) WITHIN GROUP (ORDER BY x) IS NULL AS no_rows_ci
  FROM aqps_t WHERE false;
SELECT approx_gpu.approx_percentile_cont(NULL) WITHIN GROUP (ORDER BY x) IS NULL AS null_fraction FROM aqps_t;
-- the fraction outside [0, 1] (22003, as percentile_cont), naming the aggregate
\set VERBOSITY sqlstate
SELECT approx_gpu.approx_percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM aqps_t;
SELECT approx_gpu.approx_percentile_disc(-0.1) WITHIN GROUP (ORDER BY x) FROM aqps_t;
SELECT approx_gpu.approx_percentile_cont_ci('NaN') WITHIN GROUP (ORDER BY x) FROM aqps_t;
\set VERBOSITY default
SELECT approx_gpu.approx_percentile_cont(1.5) WITHIN GROUP (ORDER BY x) FROM aqps_t;
SELECT approx_gpu.approx_percentile_disc_ci(2) WITHIN GROUP (ORDER BY x) FROM aqps_t WHERE false;

-- ---- the box path leaves them to the sample path, with a reason ------------------------
SELECT approx_gpu.approx_count(x) = count(x) AS eq FROM aqps_t WHERE g = 1;
SELECT approx_gpu.last_run()->>'reason' AS reason;

-- ---- the weighted aggregates outside a sample plan: 55000 -----------------------------
SELECT approx_gpu_internal.sample_count(1, 'aqps_t'::regclass) FROM aqps_t;
SELECT approx_gpu_internal.sample_sum(x, 1, 'aqps_t'::regclass, 0) FROM aqps_t;
SELECT approx_gpu_internal.sample_avg_ci(x, 1, 'aqps_t'::regclass, 0) FROM aqps_t WHERE false;
SELECT approx_gpu_internal.sample_percentile_cont(x, 1, 'aqps_t'::regclass, 0.5) FROM aqps_t;
SELECT approx_gpu_internal.sample_percentile_disc_ci(x, 1, 'aqps_t'::regclass, 0.5) FROM aqps_t;
-- argument errors, raised by the transition functions before any design is needed
SELECT approx_gpu_internal.sample_count(0, 'aqps_t'::regclass) FROM aqps_t;
SELECT approx_gpu_internal.sample_count(NULL, 'aqps_t'::regclass) FROM aqps_t;
SELECT approx_gpu_internal.sample_sum(x, 1, NULL, 0) FROM aqps_t;
SELECT approx_gpu_internal.sample_sum(x, 1, CASE WHEN g = 3 THEN 'pg_class'::regclass ELSE 'aqps_t'::regclass END, 0) FROM aqps_t;
SELECT approx_gpu_internal.sample_percentile_cont(x, 1, 'aqps_t'::regclass, 1.5) FROM aqps_t;
SELECT approx_gpu_internal.sample_percentile_cont(x, 1, 'aqps_t'::regclass, g / 10.0) FROM aqps_t;
-- a parallel plan of the weighted form: partial states are combined, then the final function needs the design
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT approx_gpu_internal.sample_sum(x, 1 + g % 3, 'aqps_t'::regclass, 0) FROM aqps_t;
SELECT approx_gpu_internal.sample_sum(x, 1 + g % 3, 'aqps_t'::regclass, 0) FROM aqps_t;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- ---- a column's SUM / AVG borrow the spread of its stratum -------------------------
-- A lognormal (sigma = 2) column in 40 groups of ~10 sample rows: a group's
-- few rows rarely show the tail; the stratum's 400 do. The same values as
-- an expression the spread pass does not evaluate (least(): no spread)
-- give the group's own interval: the column's holds it in every group and
-- is wider; the estimates are the same; it covers more of the exact AVGs
-- (35 of 40 here, its own 30). Arithmetic over columns borrows as a column
-- does: x + 0 is x's interval, x * 2 twice it.
CREATE DOMAIN aqps_amount AS float8 CHECK (VALUE > 0);
CREATE TABLE aqps_tail AS
SELECT id, g, x, x::aqps_amount AS xd, id % 5 AS y, CASE WHEN id % 7 = 0 THEN 4000000000000000000 ELSE id END AS big
  FROM (SELECT i AS id, i % 40 AS g,
               exp(2 * sqrt(-2 * ln(((hashint4(i) & 2147483647)::float8 + 1) / 2147483649.0))
                     * cos(2 * pi() * (hashint4(i + 7777777) & 2147483647)::float8 / 2147483648.0)) AS x
          FROM generate_series(1, 20000) i) s;
ANALYZE aqps_tail;
SET approx_gpu.random_seed = 7;
SELECT approx_gpu.create_synopsis('aqps_tail_syn', 'aqps_tail'::regclass, ARRAY['x']::name[], 400, 'cdf', 'never')
       IS NOT NULL AS built;
CREATE TEMP TABLE aqps_w AS
SELECT g, approx_gpu.approx_avg_ci(x) AS col, approx_gpu.approx_avg_ci(x + least(id, 0)) AS expr,
       approx_gpu.approx_sum_ci(x) AS scol, approx_gpu.approx_sum_ci(x + least(id, 0)) AS sexpr,
       approx_gpu.approx_sum_ci(x + 0) AS plus0, approx_gpu.approx_sum_ci(x * 2) AS times2
  FROM aqps_tail WHERE x > 0 OR id < 0 GROUP BY g;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
SELECT count(*) AS groups,
       bool_and((col).lower <= (expr).lower AND (col).upper >= (expr).upper
                AND (scol).lower <= (sexpr).lower AND (scol).upper >= (sexpr).upper) AS holds_its_own,
       bool_and((col).upper - (col).lower > (expr).upper - (expr).lower
                AND (scol).upper - (scol).lower > (sexpr).upper - (sexpr).lower) AS wider,
       bool_and(abs((col).estimate - (expr).estimate) <= 1e-9 * abs((col).estimate)
                AND abs((scol).estimate - (sexpr).estimate) <= 1e-9 * abs((scol).estimate)) AS same_estimates,
       count(*) FILTER (WHERE e.m BETWEEN (col).lower AND (col).upper)
         > count(*) FILTER (WHERE e.m BETWEEN (expr).lower AND (expr).upper) AS avg_covers_more
  FROM aqps_w JOIN (SELECT g, avg(x) AS m FROM aqps_tail GROUP BY g) e USING (g);
SELECT bool_and(approx_close(plus0, scol)) AS plus0_is_the_column,
       bool_and(abs((times2).lower - 2 * (scol).lower) <= 1e-9 * abs((times2).lower)
                AND abs((times2).upper - 2 * (scol).upper) <= 1e-9 * abs((times2).upper)) AS times2_is_twice
  FROM aqps_w;
-- the spread pass reads rows the WHERE leaves out: what they would raise
-- (a division by zero, an integer overflow) is left out of it, not an ERROR
SELECT count(*) AS groups, bool_and((s).lower <= (s).estimate AND (s).estimate <= (s).upper) AS bounded
  FROM (SELECT g, approx_gpu.approx_sum_ci(x / y) AS s FROM aqps_tail WHERE (x > 0 OR id < 0) AND y <> 0 GROUP BY g) q;
SELECT count(*) AS groups, bool_and((s).lower <= (s).estimate AND (s).estimate <= (s).upper) AS bounded
  FROM (SELECT g, approx_gpu.approx_avg_ci(big * big) AS s FROM aqps_tail WHERE (x > 0 OR id < 0) AND big < 100000 GROUP BY g) q;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
-- a view's column is the table's column (its spread too)
CREATE VIEW aqps_tail_v AS SELECT g, x AS amount, id FROM aqps_tail;
SELECT bool_and(approx_close(v.a, aqps_w.col)) AS same_as_the_table
  FROM (SELECT g, approx_gpu.approx_avg_ci(amount) AS a FROM aqps_tail_v WHERE amount > 0 OR id < 0 GROUP BY g) v
  JOIN aqps_w USING (g);
-- a column of a domain over a numeric type is that type's column (its spread too)
SELECT bool_and(approx_close(d.a, aqps_w.col)) AS domain_same_as_base
  FROM (SELECT g, approx_gpu.approx_avg_ci(xd) AS a FROM aqps_tail WHERE xd > 0 OR id < 0 GROUP BY g) d
  JOIN aqps_w USING (g);
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
RESET approx_gpu.random_seed;
-- the spreads this backend read are kept per sample relation: after a
-- rebuild (a new sample relation) of other values, this backend's intervals
-- are a fresh backend's
SELECT approx_gpu.drop_synopsis('aqps_tail_syn');
UPDATE aqps_tail SET x = 1 + id % 3;
-- the UPDATE's counts reach the statistics before the build reads them (a
-- backend flushes at most once a second otherwise, and \c would flush them
-- after the build: the synopsis would look stale)
SELECT pg_stat_force_next_flush();
SELECT approx_gpu.create_synopsis('aqps_tail_syn', 'aqps_tail'::regclass, ARRAY['x']::name[], 400, 'cdf', 'never')
       IS NOT NULL AS rebuilt;
CREATE TABLE aqps_kept AS
SELECT g, approx_gpu.approx_avg_ci(x) AS a FROM aqps_tail WHERE x > 0 OR id < 0 GROUP BY g;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
\c
SELECT approx_gpu.last_run() IS NULL AS loaded;
SELECT count(*) AS groups, bool_and(approx_close(k.a, f.a)) AS same_as_a_fresh_backend
  FROM aqps_kept k
  JOIN (SELECT g, approx_gpu.approx_avg_ci(x) AS a FROM aqps_tail WHERE x > 0 OR id < 0 GROUP BY g) f USING (g);
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
DROP TABLE aqps_kept;
SELECT approx_gpu.drop_synopsis('aqps_tail_syn');
DROP VIEW aqps_tail_v;
DROP TABLE aqps_tail;
DROP DOMAIN aqps_amount;
-- values the spread cannot use (NaN, infinities) are left out of it, not an ERROR
CREATE TABLE aqps_nan AS
SELECT i AS id, i % 4 AS g,
       CASE i % 50 WHEN 7 THEN 'NaN'::float8 WHEN 8 THEN 'Infinity'::float8 ELSE i % 13 END AS x
  FROM generate_series(1, 4000) i;
ANALYZE aqps_nan;
SET approx_gpu.random_seed = 7;
SELECT approx_gpu.create_synopsis('aqps_nan_syn', 'aqps_nan'::regclass, ARRAY['g']::name[], 200, 'cdf', 'never')
       IS NOT NULL AS built;
CREATE TEMP TABLE aqps_nan_a AS
SELECT g, approx_gpu.approx_avg_ci(x) AS a FROM aqps_nan WHERE g >= 0 OR id < 0 GROUP BY g;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
SELECT count(*) AS groups FROM aqps_nan_a;
RESET approx_gpu.random_seed;
SELECT approx_gpu.drop_synopsis('aqps_nan_syn');
DROP TABLE aqps_nan, aqps_nan_a;

DROP TABLE aqps_t;

-- ---- ORDER BY x DESC / USING > on the sample path (issue 37 item 4) ------------------------
-- Strata s of unequal size, ties in x. A sample of every row first: the
-- weighted percentiles are then PostgreSQL's, DESC included.
CREATE TABLE aqps_desc AS
SELECT i AS id, i % 3 AS s, CASE WHEN i % 3 = 0 THEN (i % 17)::float8 ELSE (i * 7 % 50) / 2.0 END AS x
  FROM generate_series(1, 900) i WHERE i % 3 <> 1 OR i < 300;
ANALYZE aqps_desc;
SET approx_gpu.random_seed = 37;
SELECT approx_gpu.create_synopsis('aqps_desc_all', 'aqps_desc'::regclass, ARRAY['x', 's']::name[], 1000, 'cdf', 'never',
                                  stratify => ARRAY['s']::name[]) IS NOT NULL AS built;
CREATE TEMP TABLE aqps_d1 AS
SELECT s, approx_gpu.approx_percentile_cont(0.1) WITHIN GROUP (ORDER BY x DESC) AS c10,
       approx_gpu.approx_percentile_cont(0.73) WITHIN GROUP (ORDER BY x USING >) AS c73,
       approx_gpu.approx_percentile_disc(0.1) WITHIN GROUP (ORDER BY x DESC) AS d10,
       approx_gpu.approx_percentile_disc(0.5) WITHIN GROUP (ORDER BY x USING >) AS d50,
       approx_gpu.approx_percentile_disc(0) WITHIN GROUP (ORDER BY x DESC) AS d0,
       approx_gpu.approx_percentile_disc(1) WITHIN GROUP (ORDER BY x DESC) AS d100,
       approx_gpu.approx_percentile_cont_ci(0.25) WITHIN GROUP (ORDER BY x DESC) AS cci,
       approx_gpu.approx_percentile_disc_ci(0.9) WITHIN GROUP (ORDER BY x USING >) AS dci,
       approx_gpu.approx_percentile_disc(0.1) WITHIN GROUP (ORDER BY x) AS asc10
  FROM aqps_desc GROUP BY s;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
SELECT count(*) AS groups,
       bool_and(a.c10 = e.c10 AND a.c73 = e.c73) AS cont_desc_eq,
       bool_and(a.d10 = e.d10 AND a.d50 = e.d50 AND a.d0 = e.d0 AND a.d100 = e.d100) AS disc_desc_eq,
       bool_and((a.cci).estimate = e.cci AND (a.cci).lower = e.cci AND (a.cci).upper = e.cci) AS cont_ci_eq,
       bool_and((a.dci).estimate = e.dci AND (a.dci).lower = e.dci AND (a.dci).upper = e.dci) AS disc_ci_eq,
       bool_and(a.asc10 = e.asc10) AS asc_eq, bool_and(a.d10 <> a.asc10) AS desc_is_not_asc
  FROM aqps_d1 a
  JOIN (SELECT s, percentile_cont(0.1) WITHIN GROUP (ORDER BY x DESC) AS c10,
               percentile_cont(0.73) WITHIN GROUP (ORDER BY x DESC) AS c73,
               percentile_disc(0.1) WITHIN GROUP (ORDER BY x DESC) AS d10,
               percentile_disc(0.5) WITHIN GROUP (ORDER BY x DESC) AS d50,
               percentile_disc(0) WITHIN GROUP (ORDER BY x DESC) AS d0,
               percentile_disc(1) WITHIN GROUP (ORDER BY x DESC) AS d100,
               percentile_cont(0.25) WITHIN GROUP (ORDER BY x DESC) AS cci,
               percentile_disc(0.9) WITHIN GROUP (ORDER BY x DESC) AS dci,
               percentile_disc(0.1) WITHIN GROUP (ORDER BY x) AS asc10
          FROM aqps_desc GROUP BY s) e USING (s);
-- over 1..10, percentile_disc(0.1) ... DESC is 10 (ascending at 0.9: 9)
CREATE TEMP TABLE aqps_d2 AS
SELECT approx_gpu.approx_percentile_disc(0.1) WITHIN GROUP (ORDER BY id DESC) AS d
  FROM aqps_desc WHERE id <= 10 AND s >= 0;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, d FROM aqps_d2;
SELECT approx_gpu.drop_synopsis('aqps_desc_all');
-- A sample of part of the rows, strata weighted unequally: x DESC is -x
-- ascending negated, its interval's lower bound minus the upper of -x's.
SELECT approx_gpu.create_synopsis('aqps_desc_part', 'aqps_desc'::regclass, ARRAY['x', 's']::name[], 150, 'cdf', 'never',
                                  stratify => ARRAY['s']::name[]) IS NOT NULL AS built;
CREATE TEMP TABLE aqps_d3 AS
SELECT approx_gpu.approx_percentile_cont_ci(0.3) WITHIN GROUP (ORDER BY x DESC) AS cd,
       approx_gpu.approx_percentile_cont_ci(0.3) WITHIN GROUP (ORDER BY -x) AS ca,
       approx_gpu.approx_percentile_disc_ci(0.2) WITHIN GROUP (ORDER BY x USING >) AS dd,
       approx_gpu.approx_percentile_disc_ci(0.2) WITHIN GROUP (ORDER BY -x) AS da,
       approx_gpu.approx_percentile_disc(0.2) WITHIN GROUP (ORDER BY x DESC) AS dp
  FROM aqps_desc;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
SELECT (cd).estimate = -(ca).estimate AND (cd).lower = -(ca).upper AND (cd).upper = -(ca).lower AS cont_mirrors,
       (dd).estimate = -(da).estimate AND (dd).lower = -(da).upper AND (dd).upper = -(da).lower AS disc_mirrors,
       dp = (dd).estimate AS plain_is_ci_estimate,
       (cd).lower < (cd).upper AND (dd).lower < (dd).upper AS intervals
  FROM aqps_d3;
-- another ordering operator (a btree class ordering by |x|): the exact path, with a reason
CREATE FUNCTION aqps_abs_lt(float8, float8) RETURNS bool LANGUAGE sql IMMUTABLE
    AS 'SELECT abs($1) < abs($2) OR (abs($1) = abs($2) AND $1 < $2)';
CREATE FUNCTION aqps_abs_cmp(float8, float8) RETURNS int LANGUAGE sql IMMUTABLE
    AS 'SELECT CASE WHEN aqps_abs_lt($1, $2) THEN -1 WHEN aqps_abs_lt($2, $1) THEN 1 ELSE 0 END';
CREATE OPERATOR <<< (LEFTARG = float8, RIGHTARG = float8, FUNCTION = aqps_abs_lt);
CREATE OPERATOR CLASS aqps_abs_ops FOR TYPE float8 USING btree
    AS OPERATOR 1 <<<, OPERATOR 3 = (float8, float8), FUNCTION 1 aqps_abs_cmp(float8, float8);
CREATE TEMP TABLE aqps_d4 AS
SELECT approx_gpu.approx_percentile_disc(0.3) WITHIN GROUP (ORDER BY x - 10 USING <<<) AS d,
       approx_gpu.approx_percentile_cont(0.3) WITHIN GROUP (ORDER BY x - 10 USING <<<) AS c
  FROM aqps_desc;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, approx_gpu.last_run()->>'reason' AS reason;
SELECT d = (SELECT percentile_disc(0.3) WITHIN GROUP (ORDER BY x - 10 USING <<<) FROM aqps_desc) AS disc_eq,
       c = (SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY x - 10 USING <<<) FROM aqps_desc) AS cont_eq
  FROM aqps_d4;
RESET approx_gpu.random_seed;
SELECT approx_gpu.drop_synopsis('aqps_desc_part');
DROP OPERATOR CLASS aqps_abs_ops USING btree;
DROP OPERATOR <<< (float8, float8);
DROP FUNCTION aqps_abs_cmp(float8, float8), aqps_abs_lt(float8, float8);
DROP TABLE aqps_desc, aqps_d1, aqps_d2, aqps_d3, aqps_d4;
DROP FUNCTION approx_close(approx_gpu.approx_estimate, approx_gpu.approx_estimate);
