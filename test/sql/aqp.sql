-- Approximate aggregates in plain SQL: approx_count(*),
-- approx_sum(x), approx_avg(x) and their _ci forms, answered from a table's
-- synopsis by the planner when the query allows it, else over the rows with
-- the reason in last_run(). Outputs are engine-independent: exact integers,
-- booleans of tolerance checks, plans with COSTS OFF.
CREATE TABLE aqp_t (i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric,
                    price float8, qty int4, cat text, flag bool, day date);
INSERT INTO aqp_t
SELECT (g % 50)::int2, g, g::int8 * 1000003, (g % 97) / 4.0, g / 7.0, (g % 1000) / 3.0,
       CASE WHEN g % 11 = 0 THEN NULL ELSE g % 40 END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g % 9 END,
       CASE WHEN g % 17 = 0 THEN NULL ELSE (ARRAY['red', 'green', 'blue', 'black'])[g % 4 + 1] END,
       CASE WHEN g % 19 = 0 THEN NULL ELSE g % 3 = 0 END,
       date '2024-01-01' + (g % 120)
  FROM generate_series(1, 2000) g;
ANALYZE aqp_t;
CREATE FUNCTION aqp_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(approx_gpu.last_run()->>'reason', approx_gpu.last_run()->>'synopsis', '-') $$;

-- A fresh session with nothing but CREATE EXTENSION: the planner hook exists
-- during the first statement's planning (the support function of the
-- aggregates' transition functions loads the library).
\c
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE price < 10;
SELECT aqp_answer();

-- ---- over rows, each aggregate equals its exact twin --------------------------------
SELECT approx_gpu.approx_count(*) = count(*) AS count_eq,
       approx_gpu.approx_sum(i2) = sum(i2) AND approx_gpu.approx_sum(i4) = sum(i4)
         AND approx_gpu.approx_sum(i8) = sum(i8) AND approx_gpu.approx_sum(f4) = sum(f4)
         AND approx_gpu.approx_sum(f8) = sum(f8) AND approx_gpu.approx_sum(num) = sum(num)::float8 AS sum_eq,
       approx_gpu.approx_avg(i2) = avg(i2::float8) AND approx_gpu.approx_avg(i4) = avg(i4::float8)
         AND approx_gpu.approx_avg(i8) = avg(i8::float8) AND approx_gpu.approx_avg(f4) = avg(f4)
         AND approx_gpu.approx_avg(f8) = avg(f8) AND approx_gpu.approx_avg(num) = avg(num::float8) AS avg_eq
  FROM aqp_t;
SELECT pg_typeof(approx_gpu.approx_count(*)), pg_typeof(approx_gpu.approx_sum(i4)),
       pg_typeof(approx_gpu.approx_avg(num)), pg_typeof(approx_gpu.approx_count_ci(*)) FROM aqp_t;
-- sum(numeric) is exact in numeric; approx_sum sums float8 values
SELECT abs(approx_gpu.approx_sum(num) - sum(num)::float8) < 1e-6 AS numeric_close FROM aqp_t;
SELECT approx_gpu.approx_count_ci(*) = ROW(2000, 2000, 2000)::approx_gpu.approx_estimate AS count_ci,
       (approx_gpu.approx_sum_ci(f8)).estimate = sum(f8) AS sum_ci,
       (approx_gpu.approx_sum_ci(f8)).lower = sum(f8) AND (approx_gpu.approx_sum_ci(f8)).upper = sum(f8) AS sum_ci_bounds,
       (approx_gpu.approx_avg_ci(i4)).estimate = avg(i4::float8) AS avg_ci
  FROM aqp_t;
-- no rows: count 0, sum and avg NULL (like count / sum / avg)
SELECT approx_gpu.approx_count(*), approx_gpu.approx_sum(f8), approx_gpu.approx_avg(f8),
       approx_gpu.approx_count_ci(*), approx_gpu.approx_sum_ci(f8), approx_gpu.approx_avg_ci(f8)
  FROM aqp_t WHERE false;
SELECT cat, approx_gpu.approx_count(*) = count(*) AS eq, approx_gpu.approx_sum(price) = sum(price) AS sum_eq
  FROM aqp_t GROUP BY cat ORDER BY cat;
-- parallel: partial aggregation with the combine functions gives the same answers
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*), approx_gpu.approx_avg(f8) FROM aqp_t;
SELECT approx_gpu.approx_count(*) = 2000 AS count_eq, abs(approx_gpu.approx_avg(f8) - 2001 / 14.0) < 1e-9 AS avg_eq,
       abs(approx_gpu.approx_sum(f8) - 2001000 / 7.0) < 1e-6 AS sum_eq FROM aqp_t;
RESET parallel_setup_cost; RESET parallel_tuple_cost; RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather; RESET parallel_leader_participation;

-- ---- settings -------------------------------------------------------------------
SHOW approx_gpu.confidence;
SHOW approx_gpu.max_relative_error;
SET approx_gpu.confidence = 1;
SET approx_gpu.confidence = 0;
SET approx_gpu.max_relative_error = -0.1;

-- ---- the exact path and its reasons (no synopsis needed for these) ---------------------
SELECT approx_gpu.approx_count(*) FROM aqp_t a JOIN aqp_t b USING (i4) WHERE a.price < 3;
SELECT aqp_answer();
CREATE VIEW aqp_v AS SELECT * FROM aqp_t WHERE qty > 2;
SELECT approx_gpu.approx_count(*) FROM aqp_v;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM (SELECT * FROM aqp_t OFFSET 0) s;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE i4 IN (SELECT qty FROM aqp_t);
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*), count(DISTINCT qty) FROM aqp_t;
SELECT aqp_answer();
SELECT approx_gpu.approx_sum(DISTINCT qty) FROM aqp_t;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FILTER (WHERE qty > 3) FROM aqp_t;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*), count(*) FROM aqp_t;
SELECT aqp_answer();
SELECT cat, approx_gpu.approx_count(*), rank() OVER (ORDER BY cat) FROM aqp_t GROUP BY cat ORDER BY cat;
SELECT aqp_answer();
SELECT cat, flag, approx_gpu.approx_count(*) FROM aqp_t GROUP BY GROUPING SETS ((cat), (flag)) ORDER BY 1, 2;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE price < 3 OR qty > 7;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) > 0 FROM aqp_t WHERE price < random() * 100;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE price < qty;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t GROUP BY qty % 3 ORDER BY 1;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE price < 10;
SELECT aqp_answer();

-- partitioned parents, inheritance (FROM t and FROM ONLY t), TABLESAMPLE
CREATE TABLE aqp_part (a int) PARTITION BY RANGE (a);
CREATE TABLE aqp_part_1 PARTITION OF aqp_part FOR VALUES FROM (0) TO (100);
INSERT INTO aqp_part SELECT g % 100 FROM generate_series(1, 300) g;
SELECT approx_gpu.approx_count(*) FROM aqp_part WHERE a < 10;
SELECT aqp_answer();
CREATE TABLE aqp_parent (a int);
CREATE TABLE aqp_child () INHERITS (aqp_parent);
INSERT INTO aqp_parent VALUES (1), (2); INSERT INTO aqp_child VALUES (3);
SELECT approx_gpu.approx_count(*) FROM aqp_parent WHERE a < 10;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM ONLY aqp_parent WHERE a < 10;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) > 0 AS some FROM aqp_t TABLESAMPLE SYSTEM (100) WHERE price < 10;
SELECT aqp_answer();
DROP TABLE aqp_part, aqp_parent, aqp_child;

-- ---- answered from a synopsis ----------------------------------------------------------
-- A sample as large as the table with smoothing 'never' is the table itself:
-- every answer equals the exact one.
SELECT approx_gpu.create_synopsis('aqp_full', 'aqp_t'::regclass,
                                  ARRAY['price', 'qty', 'cat', 'flag', 'day', 'i4', 'f8']::name[],
                                  10000, 'cdf', 'never') IS NOT NULL AS created;
-- the first statement of a fresh session is planned with the hook
\c
-- the plans below are the CPU sample plan's (the star join, which a GPU may
-- run, has its own suite: aqp_star_join)
SET approx_gpu.star_join = off;
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE price < 10;
SELECT round(approx_gpu.approx_count(*)) FROM aqp_t WHERE price < 10;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT approx_gpu.approx_count(*), approx_gpu.approx_avg(f8) FROM aqp_t WHERE price < 10 AND flag;
SELECT aqp_answer(), (approx_gpu.last_run()->>'boxes')::int AS boxes,
       (approx_gpu.last_run()->>'sample_rows')::int AS sample_rows;
SELECT count(*) FROM aqp_t WHERE price < 10;

-- approx_count(*) WHERE cond against count(*) WHERE cond
CREATE FUNCTION aqp_check(cond text, OUT equals_exact bool, OUT answered text) LANGUAGE plpgsql AS $$
DECLARE a float8; e bigint;
BEGIN
  EXECUTE 'SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE ' || cond INTO a;
  answered := aqp_answer();
  EXECUTE 'SELECT count(*) FROM aqp_t WHERE ' || cond INTO e;
  equals_exact := abs(a - e) < 1e-6;
END $$;
SELECT c AS "where", r.* FROM (VALUES
  ('price < 10'), ('price <= 10'), ('price > 35'), ('10 <= price'), ('price = 7'), ('price <> 7'),
  ('price BETWEEN 5 AND 9'), ('price < 10.5'), ('price < 10::numeric'), ('price < 10::int8'),
  ('qty < 3'), ('qty <= 3'), ('qty > 3'), ('qty >= 3'), ('qty < 2.5'), ('qty IN (1, 2, 7)'), ('qty NOT IN (1, 2)'),
  ('qty = ANY (ARRAY[1, NULL])'), ('qty <> ALL (ARRAY[1, NULL])'), ('qty IS NULL'), ('qty IS NOT NULL'),
  ('qty = NULL::int'),
  ('cat = ''red'''), ('cat <> ''red'''), ('cat IN (''red'', ''blue'')'), ('cat NOT IN (''red'', ''black'')'),
  ('cat = ''purple'''), ('cat <> ''purple'''), ('cat IS NULL'), ('cat::varchar = ''red'''),
  ('flag'), ('NOT flag'), ('flag IS NULL'), ('flag = false'),
  ('day >= date ''2024-03-01'''), ('day < ''2024-02-01'''), ('day = ''2024-01-15'''),
  ('day > timestamp ''2024-03-01 12:00'''), ('day >= timestamp ''2024-03-01 00:00'''),
  ('day >= current_date - 1000000'),
  ('i4 < 100'), ('i4 <= 100'), ('i4 < 100.5'), ('i4 BETWEEN 10 AND 20 AND i4 <> 15'),
  ('price < 10 AND cat = ''red'' AND flag'), ('price < 20 AND qty IS NULL AND cat IN (''red'', ''green'')'),
  ('price > 10 AND price < 5')
) v(c), LATERAL aqp_check(c) r;

-- GROUP BY discrete columns (one box per group, all in one engine call); a HAVING over
-- approx_* takes the sample path (which judges it under approx_gpu.max_relative_error)
EXPLAIN (COSTS OFF)
SELECT cat, approx_gpu.approx_count(*) FROM aqp_t WHERE price < 20 GROUP BY cat HAVING approx_gpu.approx_count(*) > 100;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT upper(cat), approx_gpu.approx_count_ci(*), approx_gpu.approx_sum(qty) FROM aqp_t WHERE price < 20 GROUP BY cat
HAVING approx_gpu.approx_avg(price) > 1 ORDER BY 1;
SELECT cat, round(approx_gpu.approx_count(*)) AS n FROM aqp_t WHERE price < 20 GROUP BY cat ORDER BY cat;
SELECT aqp_answer(), (approx_gpu.last_run()->>'boxes')::int AS boxes;
SELECT cat, count(*) AS n FROM aqp_t WHERE price < 20 GROUP BY cat ORDER BY cat;
SELECT upper(cat) AS cat, round(approx_gpu.approx_count(*)) AS n FROM aqp_t WHERE price < 20 GROUP BY cat
HAVING approx_gpu.approx_count(*) > 100 ORDER BY 1;
SELECT aqp_answer();
SELECT flag, qty, round(approx_gpu.approx_count(*)) AS n FROM aqp_t WHERE cat IN ('red', 'blue') AND qty < 3
 GROUP BY flag, qty ORDER BY 1, 2;
SELECT aqp_answer(), (approx_gpu.last_run()->>'boxes')::int AS boxes;
SELECT flag, qty, count(*) AS n FROM aqp_t WHERE cat IN ('red', 'blue') AND qty < 3 GROUP BY flag, qty ORDER BY 1, 2;
-- sums and averages (NULL values skipped, like sum and avg)
SELECT cat, round(approx_gpu.approx_sum(price)) AS s, round(approx_gpu.approx_avg(i4)) AS a
  FROM aqp_t WHERE day < '2024-02-15' GROUP BY cat ORDER BY cat;
SELECT aqp_answer();
SELECT cat, round(sum(price)) AS s, round(avg(i4)) AS a FROM aqp_t WHERE day < '2024-02-15' GROUP BY cat ORDER BY cat;
-- the _ci forms: a full sample has zero-width intervals
SELECT round((c).estimate) = 455 AS est, (c).lower = (c).estimate AND (c).upper = (c).estimate AS zero_width
  FROM (SELECT approx_gpu.approx_count_ci(*) AS c FROM aqp_t WHERE price < 10) s;
SELECT aqp_answer();
SELECT round((approx_gpu.approx_sum_ci(price)).estimate) AS s, round((approx_gpu.approx_avg_ci(price)).estimate) AS a
  FROM aqp_t WHERE cat = 'red';
SELECT aqp_answer();
SELECT round(sum(price)) AS s, round(avg(price)) AS a FROM aqp_t WHERE cat = 'red';
-- IN on a discrete column: disjoint boxes summed per group
SELECT flag, round(approx_gpu.approx_sum(price)) AS s, round(approx_gpu.approx_avg(price)) AS a
  FROM aqp_t WHERE cat IN ('red', 'black', 'green') GROUP BY flag ORDER BY flag;
SELECT aqp_answer(), (approx_gpu.last_run()->>'boxes')::int AS boxes;
SELECT flag, round(sum(price)) AS s, round(avg(price)) AS a FROM aqp_t WHERE cat IN ('red', 'black', 'green')
 GROUP BY flag ORDER BY flag;

-- ---- prepared statements: custom and generic plans --------------------------------------
PREPARE aqp_p(float8, text) AS
  SELECT round(approx_gpu.approx_count(*)) FROM aqp_t WHERE price < $1 AND cat = $2;
EXECUTE aqp_p(10, 'red');
SELECT aqp_answer();
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE aqp_p(10, 'red');
EXECUTE aqp_p(10, 'red');
SELECT aqp_answer();
EXECUTE aqp_p(25, 'blue');
SELECT count(*) FROM aqp_t WHERE price < 25 AND cat = 'blue';
EXECUTE aqp_p(25, 'purple');
PREPARE aqp_q(int[]) AS SELECT round(approx_gpu.approx_count(*)) FROM aqp_t WHERE qty = ANY ($1);
EXECUTE aqp_q(ARRAY[1, 2]);
SELECT count(*) FROM aqp_t WHERE qty IN (1, 2);
RESET plan_cache_mode;

-- ---- fallback reasons that need a synopsis ----------------------------------------------
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE num < 5;
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE cat < 'm';
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE day < now();
SELECT aqp_answer();
SELECT approx_gpu.approx_count(*) FROM aqp_t GROUP BY i2 ORDER BY 1 LIMIT 1;
SELECT aqp_answer();
CREATE COLLATION aqp_nd (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE cat = 'RED' COLLATE aqp_nd;
SELECT aqp_answer();
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE price < 3 OR qty > 7;

-- ---- max_relative_error: the exact child answers ------------------------------------------
-- a fixed seed: the interval check below is about one sample, which must not change between runs
SET approx_gpu.random_seed = 11;
SELECT approx_gpu.create_synopsis('aqp_small', 'aqp_t'::regclass, ARRAY['i4', 'f8']::name[], 100) IS NOT NULL AS created;
-- the most recently built synopsis covering the query wins
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE i4 < 1000;
-- built in one transaction: still the later one (created is the clock time, not the transaction's)
BEGIN;
SELECT approx_gpu.create_synopsis('aqp_tx1', 'aqp_t'::regclass, ARRAY['i4']::name[], 100) IS NOT NULL AS created;
SELECT approx_gpu.create_synopsis('aqp_tx2', 'aqp_t'::regclass, ARRAY['i4']::name[], 100) IS NOT NULL AS created;
SELECT approx_gpu.approx_count(*) > 0 AS answered FROM aqp_t WHERE i4 < 1000;
SELECT aqp_answer();
ROLLBACK;
-- answers equal approx_count(s, lo, hi) / approx_sum / approx_avg on the stored value
SELECT approx_gpu.approx_count(*) AS c, approx_gpu.approx_sum(f8) AS s, approx_gpu.approx_avg(f8) AS a
  FROM aqp_t WHERE i4 >= 300 AND i4 <= 1500 AND f8 <= 150 \gset
SELECT aqp_answer();
SELECT abs(:c - approx_gpu.approx_count(synopsis, ARRAY[300, '-Infinity']::float8[], ARRAY[1500, 150]::float8[])) <= 1e-9 * :c AS count_equal,
       abs(:s - approx_gpu.approx_sum(synopsis, 2, ARRAY[300, '-Infinity']::float8[], ARRAY[1500, 150]::float8[])) <= 1e-9 * :s AS sum_equal,
       abs(:a - approx_gpu.approx_avg(synopsis, 2, ARRAY[300, '-Infinity']::float8[], ARRAY[1500, 150]::float8[])) <= 1e-9 * :a AS avg_equal
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'aqp_small';
-- a 100-row sample of 2000 rows: an interval around the estimate
SELECT (c).lower <= (c).estimate AND (c).estimate <= (c).upper AND (c).lower < (c).upper AS ordered,
       (c).lower <= 999 AND 999 <= (c).upper AS covers
  FROM (SELECT approx_gpu.approx_count_ci(*) AS c FROM aqp_t WHERE i4 < 1000) s;
SET approx_gpu.max_relative_error = 0.001;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE i4 < 1000;
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE i4 < 1000;
SELECT aqp_answer();
SET approx_gpu.max_relative_error = 100;
SELECT approx_gpu.approx_count(*) > 0 AS answered FROM aqp_t WHERE i4 < 1000;
SELECT aqp_answer();
RESET approx_gpu.max_relative_error;
SELECT approx_gpu.drop_synopsis('aqp_small') IS NOT NULL AS dropped;
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE i4 < 1000;

-- ---- stratified synopsis: GROUP BY its stratify column, each group over its stratum -----
CREATE TABLE aqp_s AS SELECT (ARRAY['a', 'b', 'c'])[1 + (g % 10 = 0)::int + (g % 100 = 0)::int] AS k, g % 37 AS x
  FROM generate_series(1, 5000) g;
-- creating a synopsis invalidates cached plans of its table
PREPARE aqp_s_p AS SELECT round(approx_gpu.approx_count(*)) FROM aqp_s WHERE x < 10;
EXECUTE aqp_s_p;
SELECT aqp_answer();
SET approx_gpu.random_seed = 7;  -- the stratified sample below, and so its estimates, repeat
SELECT approx_gpu.create_synopsis('aqp_strat', 'aqp_s'::regclass, ARRAY['k', 'x']::name[], 300, 'cdf', 'never',
                                  ARRAY['k']::name[]) IS NOT NULL AS created;
SELECT k, round(approx_gpu.approx_count(*)) AS n FROM aqp_s GROUP BY k ORDER BY k;
SELECT aqp_answer(), (approx_gpu.last_run()->>'boxes')::int AS boxes;
SELECT k, count(*) AS n FROM aqp_s GROUP BY k ORDER BY k;
EXECUTE aqp_s_p;
SELECT aqp_answer();

-- ---- a stale synopsis: the table was truncated since the build --------------------------
CREATE TABLE aqp_stale AS SELECT g AS v FROM generate_series(1, 100) g;
SELECT approx_gpu.create_synopsis('aqp_stale_syn', 'aqp_stale'::regclass, ARRAY['v']::name[]) IS NOT NULL AS created;
SELECT approx_gpu.approx_count(*) FROM aqp_stale WHERE v < 50;
SELECT aqp_answer();
PREPARE aqp_stale_p AS SELECT approx_gpu.approx_count(*) FROM aqp_stale WHERE v < 50;
TRUNCATE aqp_stale;
INSERT INTO aqp_stale SELECT g FROM generate_series(1, 10) g;
SELECT approx_gpu.approx_count(*) FROM aqp_stale WHERE v < 50;
SELECT aqp_answer();
EXECUTE aqp_stale_p;

-- ---- row-level security and column privileges ------------------------------------------
CREATE ROLE regress_aqp_user;
GRANT SELECT (price, cat) ON aqp_t TO regress_aqp_user;
CREATE TABLE aqp_rls AS SELECT g AS v, g % 2 AS owner_id FROM generate_series(1, 100) g;
SELECT approx_gpu.create_synopsis('aqp_rls_syn', 'aqp_rls'::regclass, ARRAY['v']::name[]) IS NOT NULL AS created;
ALTER TABLE aqp_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY aqp_half ON aqp_rls USING (owner_id = 0);
GRANT SELECT ON aqp_rls TO regress_aqp_user;
-- the owner (RLS does not apply): answered, the plan depends on the role
SELECT round(approx_gpu.approx_count(*)) FROM aqp_rls WHERE v <= 50;
SELECT aqp_answer();
SET ROLE regress_aqp_user;
SELECT approx_gpu.approx_count(*) FROM aqp_rls WHERE v <= 50;
SELECT aqp_answer();
SELECT count(*) FROM aqp_rls WHERE v <= 50;
-- a column without privilege: the same error as count(*)
SELECT approx_gpu.approx_count(*) FROM aqp_t WHERE qty < 3;
SELECT count(*) FROM aqp_t WHERE qty < 3;
SELECT round(approx_gpu.approx_count(*)) FROM aqp_t WHERE price < 10 AND cat = 'red';
SELECT aqp_answer();
RESET ROLE;
DROP POLICY aqp_half ON aqp_rls;
REVOKE ALL ON aqp_t FROM regress_aqp_user;
REVOKE ALL ON aqp_rls FROM regress_aqp_user;
DROP ROLE regress_aqp_user;
-- dropping a table drops its synopses (the sql_drop event trigger)
DROP TABLE aqp_t, aqp_s, aqp_stale, aqp_rls CASCADE;
SELECT count(*) AS synopses_left FROM approx_gpu.synopses WHERE name LIKE 'aqp%';
DROP COLLATION aqp_nd;
