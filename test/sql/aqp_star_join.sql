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

-- ---- dimensions (issue 39 item 2, step 2): the star join over inner joins of the sample to
-- ---- dimension tables on unique keys; text columns as dictionary codes ------------------
SET approx_gpu.box_path = off;
-- Two answers of the form (k text, n count, s approx_estimate): groups, the same keys, equal
-- counts, estimates and interval ends within 1e-9.
CREATE FUNCTION sjd_same(a regclass, b regclass, OUT groups bigint, OUT same_keys bool, OUT counts_equal bool,
                         OUT sums_near bool) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT count(*), count(x.k) = count(*) AND count(y.k) = count(*), bool_and(x.n = y.n),
                         bool_and(sj_near(x.s, y.s))
                    FROM %s x FULL JOIN %s y USING (k)', a, b) INTO groups, same_keys, counts_equal, sums_near;
END $$;
CREATE FUNCTION sjd_nodes(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r text; BEGIN
  FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF r ~ '(Approx|Aggregate|Join|Scan on sjd)' THEN RETURN NEXT btrim(regexp_replace(r, '->', '')); END IF;
  END LOOP; END $$;

-- dates (int key, int year, text month, d_zero 0 for every fifth day), customers (text region and
-- nation, NULL at times), parts (int8 key, text brand and category),
-- suppliers (int2 key, text region); 20,000 facts, the customer key NULL in every 23rd
CREATE TABLE sjd_date AS
SELECT k AS d_key, 1992 + (k - 1) / 12 AS d_year, to_char(date '1992-01-01' + (k - 1) * 31, 'YYYY-MM') AS d_month,
       k % 5 AS d_zero FROM generate_series(1, 60) k;
ALTER TABLE sjd_date ADD PRIMARY KEY (d_key);
CREATE TABLE sjd_cust AS
SELECT k AS c_key, (ARRAY['ASIA', 'EUROPE', 'AMERICA', 'AFRICA', 'NONE'])[1 + k % 5] AS c_region,
       CASE WHEN k % 37 <> 0 THEN 'NATION ' || (k % 15) END AS c_nation, k % 7 AS c_seg FROM generate_series(1, 300) k;
ALTER TABLE sjd_cust ADD PRIMARY KEY (c_key);
CREATE TABLE sjd_part AS
SELECT k::int8 AS p_key, 'MFGR#' || (1 + k % 5) || (1 + k % 4) AS p_category,
       'MFGR#' || (1 + k % 5) || (1 + k % 4) || (k % 40) AS p_brand, k % 50 AS p_size FROM generate_series(1, 400) k;
CREATE UNIQUE INDEX ON sjd_part (p_key);
CREATE TABLE sjd_supp AS
SELECT k::int2 AS s_key, (ARRAY['ASIA', 'EUROPE', 'AMERICA'])[1 + k % 3] AS s_region FROM generate_series(1, 30) k;
ALTER TABLE sjd_supp ADD PRIMARY KEY (s_key);
CREATE TABLE sjd_lo AS
SELECT i AS lo_id, 1 + abs(hashint4(i)) % 60 AS lo_orderdate,
       CASE WHEN i % 23 = 0 THEN NULL ELSE 1 + abs(hashint4(i + 100000)) % 300 END AS lo_custkey,
       1 + abs(hashint4(i + 200000)) % 400 AS lo_partkey, (1 + abs(hashint4(i + 300000)) % 30)::int2 AS lo_suppkey,
       abs(hashint4(i + 400000)) % 11 AS lo_discount, 1 + abs(hashint4(i + 500000)) % 50 AS lo_quantity,
       (abs(hashint4(i + 600000)) % 100000) / 10.0::float8 AS lo_extendedprice,
       (abs(hashint4(i + 700000)) % 50000) / 10.0::float8 AS lo_revenue,
       (abs(hashint4(i + 800000)) % 20000) / 10.0::float8 AS lo_supplycost
  FROM generate_series(1, 20000) i;
ANALYZE sjd_lo, sjd_date, sjd_cust, sjd_part, sjd_supp;
SELECT approx_gpu.create_synopsis('sjd_syn', 'sjd_lo'::regclass,
         ARRAY['lo_orderdate', 'lo_custkey', 'lo_partkey', 'lo_suppkey', 'lo_discount', 'lo_quantity', 'lo_extendedprice',
               'lo_revenue', 'lo_supplycost']::name[], 8000, 'cdf', 'never', ARRAY['lo_discount']::name[]) IS NOT NULL AS created;

SET approx_gpu.max_missing_groups = 1;  -- groups the sample missed: still the sample's answer
-- Q1.1: a filter on the date dimension, BETWEEN on the fact, one group
\set q1 'SELECT ''all'' AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_extendedprice * lo_discount) AS s FROM sjd_lo, sjd_date WHERE lo_orderdate = d_key AND d_year = 1993 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25'
-- Q2.1: GROUP BY an int and a text dimension column, text filters on two more dimensions
\set q2 'SELECT d_year || '' '' || p_brand AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue) AS s FROM sjd_lo JOIN sjd_date ON lo_orderdate = d_key JOIN sjd_part ON lo_partkey = p_key JOIN sjd_supp ON lo_suppkey = s_key WHERE p_category = ''MFGR#12'' AND s_region = ''AMERICA'' GROUP BY d_year, p_brand'
-- Q3.1: IN lists over text, GROUP BY two text columns and the year; the NULL customer keys join nothing
\set q3 'SELECT coalesce(c_nation, ''-'') || '' '' || s_region || '' '' || d_year AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue) AS s FROM sjd_lo, sjd_cust, sjd_supp, sjd_date WHERE lo_custkey = c_key AND lo_suppkey = s_key AND lo_orderdate = d_key AND c_region IN (''ASIA'', ''EUROPE'') AND s_region <> ''EUROPE'' AND d_year BETWEEN 1992 AND 1995 GROUP BY c_nation, s_region, d_year'
-- Q3.3: OR of text equalities, a text month range
\set q4 'SELECT c_nation || '' '' || d_month AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue) AS s FROM sjd_lo, sjd_cust, sjd_date WHERE lo_custkey = c_key AND lo_orderdate = d_key AND (c_nation = ''NATION 3'' OR c_nation = ''NATION 7'') AND d_month BETWEEN ''1993-01'' AND ''1994-06'' GROUP BY c_nation, d_month'
-- Q4.1: sum(revenue - supplycost), LIKE and an IN list over text
\set q5 'SELECT d_year || '' '' || coalesce(c_nation, ''-'') AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue - lo_supplycost) AS s FROM sjd_lo, sjd_date, sjd_cust, sjd_part WHERE lo_orderdate = d_key AND lo_custkey = c_key AND lo_partkey = p_key AND c_region IN (''AMERICA'', ''NONE'') AND p_category LIKE ''MFGR#1%'' GROUP BY d_year, c_nation'
-- a join clause across dimensions and the fact (not an equality): a fact filter reading their values
\set q6 'SELECT c_seg::text AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_quantity * p_size) AS s FROM sjd_lo, sjd_cust, sjd_part WHERE lo_custkey = c_key AND lo_partkey = p_key AND lo_quantity > c_seg AND lo_discount < p_size GROUP BY c_seg'
-- GROUP BY a text column with NOT LIKE, HAVING, ORDER BY and LIMIT above
\set q7 'SELECT p_brand AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_extendedprice) AS s FROM sjd_lo JOIN sjd_part ON lo_partkey = p_key WHERE p_brand NOT LIKE ''MFGR#2%'' GROUP BY p_brand HAVING approx_gpu.approx_count(*) > 5 ORDER BY 2 DESC, 1 LIMIT 30'
-- the join key equal to a constant too (the equivalence class holds it), avg of a dimension value
\set q8 'SELECT s_region AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_avg_ci(lo_discount + d_zero) AS s FROM sjd_lo, sjd_date, sjd_supp WHERE lo_orderdate = d_key AND lo_suppkey = s_key AND lo_orderdate = 14 GROUP BY s_region'

SET approx_gpu.star_join = off;
CREATE TEMP TABLE d1_off AS :q1;
SELECT sj_answer();
CREATE TEMP TABLE d2_off AS :q2;
SELECT sj_answer();
CREATE TEMP TABLE d3_off AS :q3;
SELECT sj_answer();
CREATE TEMP TABLE d4_off AS :q4;
SELECT sj_answer();
CREATE TEMP TABLE d5_off AS :q5;
SELECT sj_answer();
CREATE TEMP TABLE d6_off AS :q6;
SELECT sj_answer();
CREATE TEMP TABLE d7_off AS :q7;
SELECT sj_answer();
CREATE TEMP TABLE d8_off AS :q8;
SELECT sj_answer();
SET approx_gpu.star_join = force;
CREATE TEMP TABLE d1_on AS :q1;
SELECT sj_answer();
CREATE TEMP TABLE d2_on AS :q2;
SELECT sj_answer();
CREATE TEMP TABLE d3_on AS :q3;
SELECT sj_answer();
CREATE TEMP TABLE d4_on AS :q4;
SELECT sj_answer();
CREATE TEMP TABLE d5_on AS :q5;
SELECT sj_answer();
CREATE TEMP TABLE d6_on AS :q6;
SELECT sj_answer();
CREATE TEMP TABLE d7_on AS :q7;
SELECT sj_answer();
CREATE TEMP TABLE d8_on AS :q8;
SELECT sj_answer();
SELECT 'q1' AS q, * FROM sjd_same('d1_on', 'd1_off') UNION ALL SELECT 'q2', * FROM sjd_same('d2_on', 'd2_off')
UNION ALL SELECT 'q3', * FROM sjd_same('d3_on', 'd3_off') UNION ALL SELECT 'q4', * FROM sjd_same('d4_on', 'd4_off')
UNION ALL SELECT 'q5', * FROM sjd_same('d5_on', 'd5_off') UNION ALL SELECT 'q6', * FROM sjd_same('d6_on', 'd6_off')
UNION ALL SELECT 'q7', * FROM sjd_same('d7_on', 'd7_off') UNION ALL SELECT 'q8', * FROM sjd_same('d8_on', 'd8_off');
SELECT sjd_nodes(:'q2');
SELECT sjd_nodes(:'q7');

-- ---- dimensions outside the shape: the CPU sample plan, and why ---------------------------
SELECT sj_why('SELECT c_region, approx_gpu.approx_count(*) FROM sjd_lo LEFT JOIN sjd_cust ON lo_custkey = c_key GROUP BY c_region');
SELECT sj_why('SELECT p_category, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_part ON lo_quantity = p_size GROUP BY p_category');
SELECT sj_why('SELECT c_region, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey + 0 = c_key GROUP BY c_region');
SELECT sj_why('SELECT c_region, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key AND lo_quantity = c_seg GROUP BY c_region');
SELECT sj_why('SELECT c_region, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key AND lo_quantity > 100 / c_seg GROUP BY c_region');
SELECT sj_why('SELECT c_region, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key WHERE c_seg * 2 > 3 GROUP BY c_region');
SELECT sj_why('SELECT upper(c_region), approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key GROUP BY 1');
-- errors: the CPU plan's (a division by zero over a dimension value; a column the role may not read)
SET approx_gpu.star_join = off;
SELECT d_year, approx_gpu.approx_sum(lo_quantity / d_zero) FROM sjd_lo JOIN sjd_date ON lo_orderdate = d_key GROUP BY d_year;
SET approx_gpu.star_join = force;
SELECT d_year, approx_gpu.approx_sum(lo_quantity / d_zero) FROM sjd_lo JOIN sjd_date ON lo_orderdate = d_key GROUP BY d_year;
-- no error where the rows with d_zero = 0 are filtered out first
SELECT d_year, approx_gpu.approx_sum(lo_quantity / d_zero) > 0 AS summed FROM sjd_lo JOIN sjd_date ON lo_orderdate = d_key
 WHERE d_zero > 0 GROUP BY d_year ORDER BY d_year;
SELECT sj_answer();
CREATE ROLE regress_sjd_reader;
GRANT SELECT ON sjd_lo, sjd_date, sjd_supp TO regress_sjd_reader;
GRANT SELECT (c_key, c_region) ON sjd_cust TO regress_sjd_reader;
-- a dimension with row-level security and a policy for the role
ALTER TABLE sjd_supp ENABLE ROW LEVEL SECURITY;
CREATE POLICY sjd_p ON sjd_supp TO regress_sjd_reader USING (s_region <> 'ASIA');
SET ROLE regress_sjd_reader;
SELECT sj_why('SELECT s_region, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_supp ON lo_suppkey = s_key GROUP BY s_region');
SELECT s_region, approx_gpu.approx_count(*) > 0 AS seen FROM sjd_lo JOIN sjd_supp ON lo_suppkey = s_key GROUP BY s_region ORDER BY 1;
SELECT sj_answer();
SET approx_gpu.star_join = off;
SELECT c_nation, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key GROUP BY c_nation;
SET approx_gpu.star_join = force;
SELECT c_nation, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key GROUP BY c_nation;
SELECT c_region, approx_gpu.approx_count(*) > 0 AS counted FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key
 GROUP BY c_region ORDER BY c_region;
SELECT sj_answer();
RESET ROLE;
DROP POLICY sjd_p ON sjd_supp;
-- a prepared statement over dimensions: each execution reads the dimensions and fills its
-- dictionaries and lookup tables anew (a dimension row changed in between is seen)
PREPARE sjd_p(int) AS SELECT c_region AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue) AS s
  FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key WHERE c_region <> 'ASIA' AND lo_quantity < $1 GROUP BY c_region;
CREATE TEMP TABLE p1_on AS EXECUTE sjd_p(30);
SELECT sj_answer();
UPDATE sjd_cust SET c_region = 'ATLANTIS' WHERE c_key = 4;
CREATE TEMP TABLE p2_on AS EXECUTE sjd_p(30);
SELECT sj_answer();
SET approx_gpu.star_join = off;
CREATE TEMP TABLE p2_off AS EXECUTE sjd_p(30);
SELECT sj_answer();
SELECT (SELECT count(*) FROM p1_on) AS groups_before, * FROM sjd_same('p2_on', 'p2_off');
DEALLOCATE sjd_p;
-- a nondeterministic collation: an equality over it is a lookup PostgreSQL evaluates per distinct
-- value ('Name' = 'NAME' there); GROUP BY it (codes group equal bytes) and LIKE (it raises) are not taken
CREATE COLLATION sjd_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
ALTER TABLE sjd_cust ADD COLUMN c_name text COLLATE sjd_ci;
UPDATE sjd_cust SET c_name = CASE WHEN c_key % 3 = 0 THEN 'Name' WHEN c_key % 3 = 1 THEN 'NAME' ELSE 'other' END;
\set q9 'SELECT c_region AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue) AS s FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key WHERE c_name = ''name'' GROUP BY c_region'
CREATE TEMP TABLE d9_off AS :q9;
SELECT sj_answer();
SET approx_gpu.star_join = force;
CREATE TEMP TABLE d9_on AS :q9;
SELECT sj_answer();
SELECT * FROM sjd_same('d9_on', 'd9_off');
SELECT sj_why('SELECT c_name, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key GROUP BY c_name');
SELECT sj_why('SELECT c_region, approx_gpu.approx_count(*) FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key WHERE c_name LIKE ''N%'' GROUP BY c_region');
-- one constant for two dimensions' columns (SSB Q3.1, Q4.1: c_region = 'ASIA' AND s_region = 'ASIA'):
-- one equivalence class, a base qual of each dimension, no join between them
SET approx_gpu.star_join = off;
\set q10 'SELECT c_seg AS k, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum_ci(lo_revenue) AS s FROM sjd_lo JOIN sjd_cust ON lo_custkey = c_key JOIN sjd_supp ON lo_suppkey = s_key WHERE c_region = ''ASIA'' AND s_region = ''ASIA'' GROUP BY c_seg'
CREATE TEMP TABLE d10_off AS :q10;
SET approx_gpu.star_join = force;
CREATE TEMP TABLE d10_on AS :q10;
SELECT sj_answer();
SELECT * FROM sjd_same('d10_on', 'd10_off');

RESET approx_gpu.star_join;
RESET approx_gpu.box_path;
RESET approx_gpu.max_missing_groups;
SELECT approx_gpu.drop_synopsis('sjd_syn');
DROP TABLE sjd_lo, sjd_date, sjd_cust, sjd_part, sjd_supp;
DROP ROLE regress_sjd_reader;
DROP COLLATION sjd_ci;
DROP FUNCTION sjd_same(regclass, regclass), sjd_nodes(text);

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
SELECT count(*) AS groups, bool_and(r1.n = r2.n AND sj_near(r1.s, r2.s)) AS same FROM r1 FULL JOIN r2 USING (g);
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
SELECT count(*) AS groups, bool_and(r3.n = r4.n AND sj_near(r3.s, r4.s)) AS as_cpu_plan,
       bool_and((r3.s).estimate > (r2.s).estimate) AS follows_new_sample
  FROM r3 FULL JOIN r4 USING (g) JOIN r2 USING (g);
RESET approx_gpu.star_join;
RESET approx_gpu.box_path;
SELECT approx_gpu.drop_synopsis('sj_r_syn');
DROP TABLE sj_r;
DROP FUNCTION sj_served(int), sj_hits();
-- ---- kept reads (starjoin/cache.cpp): a session keeps the tables it read and uses them
-- ---- again only while nothing can have changed them (last_run()'s star_join_read: tables read)
SET approx_gpu.device = :'sj_device';
SET approx_gpu.box_path = off;
SET approx_gpu.star_join = force;
CREATE TABLE sj_kd (d_key int PRIMARY KEY, d_name text, d_flag bool) WITH (autovacuum_enabled = off);
INSERT INTO sj_kd SELECT i, 'name ' || (i % 5), i % 4 <> 0 FROM generate_series(1, 200) i;
CREATE TABLE sj_k AS
SELECT i AS id, 1 + i % 200 AS k, ((i::bigint * 7919) % 1000) / 10.0::float8 AS x FROM generate_series(1, 20000) i;
ANALYZE sj_k;
SELECT approx_gpu.create_synopsis('sj_k_syn', 'sj_k'::regclass, ARRAY['x', 'k']::name[], 4000) IS NOT NULL AS created;
VACUUM (FREEZE, ANALYZE) sj_kd;  -- every page all-visible: the dimension can be kept
CREATE FUNCTION sj_kept_query() RETURNS TABLE (d_name text, n float8, s approx_gpu.approx_estimate)
LANGUAGE sql AS $$
SELECT d_name, approx_gpu.approx_count(*), approx_gpu.approx_sum_ci(x)
  FROM sj_k JOIN sj_kd ON k = d_key WHERE d_flag GROUP BY d_name $$;
CREATE FUNCTION sj_reads() RETURNS int LANGUAGE sql AS $$ SELECT (approx_gpu.last_run()->>'star_join_read')::int $$;
-- each answer against star_join = off's over the same sample (the CPU sample plan reads every table)
CREATE FUNCTION sj_kept_check(label text) RETURNS TABLE (step text, reads int, as_off bool, groups bigint)
LANGUAGE plpgsql AS $$
DECLARE r int;
BEGIN
    SET LOCAL approx_gpu.star_join = force;
    CREATE TEMP TABLE kon AS SELECT * FROM sj_kept_query();
    r := sj_reads();
    SET LOCAL approx_gpu.star_join = off;
    CREATE TEMP TABLE koff AS SELECT * FROM sj_kept_query();
    RETURN QUERY SELECT label, r, bool_and(kon.n = koff.n AND sj_near(kon.s, koff.s)) AND count(kon.d_name) = count(*)
                        AND count(koff.d_name) = count(*), count(*)
                   FROM kon FULL JOIN koff USING (d_name);
    DROP TABLE kon, koff;
END $$;
SELECT step, reads >= 1 AS read, as_off, groups FROM sj_kept_check('first');  -- read, then kept
SELECT * FROM sj_kept_check('again');                         -- 0 reads
UPDATE sj_kd SET d_name = 'renamed' WHERE d_key = 1;          -- its page is no longer all-visible
SELECT * FROM sj_kept_check('after update');                  -- the dimension read again: 6 groups
SELECT * FROM sj_kept_check('updated, again');
VACUUM sj_kd;                                                 -- all-visible again, with new rows
SELECT * FROM sj_kept_check('after vacuum');                  -- read again (the VACUUM history changed)
SELECT * FROM sj_kept_check('vacuumed, again');               -- then kept
BEGIN;
UPDATE sj_kd SET d_name = 'uncommitted' WHERE d_key = 2;
SELECT * FROM sj_kept_check('own update');                    -- this transaction's rows: 7 groups
ROLLBACK;
SELECT * FROM sj_kept_check('rolled back');                   -- read again: 6 groups
SET approx_gpu.star_join_cache_size = 0;
VACUUM sj_kd;
SELECT step, reads >= 1 AS read, as_off, groups FROM sj_kept_check('no cache');
SELECT step, reads >= 1 AS read, as_off, groups FROM sj_kept_check('no cache, again');
RESET approx_gpu.star_join_cache_size;
SELECT approx_gpu.drop_synopsis('sj_k_syn');
DROP FUNCTION sj_kept_check(text), sj_kept_query(), sj_reads();
DROP TABLE sj_k, sj_kd;
RESET approx_gpu.star_join;
RESET approx_gpu.box_path;
RESET approx_gpu.device;
-- ---- the exact pass (issue 39 item 3): where the sample cannot answer, the star join runs
-- ---- once more over the whole table (approx_gpu.exact_pass), equal to the exact plan
SET approx_gpu.device = :'sj_device';
SET approx_gpu.box_path = off;
SET approx_gpu.star_join = force;
SET approx_gpu.random_seed = 39;
-- 200 labels over 30,000 facts, 200 of them in the sample: groups go missing
CREATE TABLE sj_xd (d_key int PRIMARY KEY, d_name text, d_flag bool) WITH (autovacuum_enabled = off);
INSERT INTO sj_xd SELECT i, 'label ' || i, i % 7 <> 0 FROM generate_series(1, 400) i;
CREATE TABLE sj_x WITH (autovacuum_enabled = off) AS
SELECT i AS id, 1 + (i::bigint * 7919) % 400 AS k, ((i::bigint * 104729) % 1000) / 10.0::float8 AS x,
       (i % 5)::int8 AS q FROM generate_series(1, 30000) i;
SELECT approx_gpu.create_synopsis('sj_x_syn', 'sj_x'::regclass, ARRAY['x', 'k', 'q']::name[], 200) IS NOT NULL AS created;
VACUUM (FREEZE, ANALYZE) sj_x, sj_xd;
CREATE FUNCTION sj_x_query(answer text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TEMP TABLE %I AS
        SELECT d_name, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum(x * q) AS s, approx_gpu.approx_avg(x) AS a,
               approx_gpu.approx_sum_ci(x) AS sc
          FROM sj_x JOIN sj_xd ON k = d_key WHERE d_flag AND x > 5 GROUP BY d_name', answer);
END $$;
-- the answer against the exact plan's (exact_pass = off): keys, counts, sums within 1e-12
CREATE FUNCTION sj_x_same(a regclass, b regclass) RETURNS TABLE (groups bigint, same bool) LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT count(*), bool_and(p.n = r.n AND abs(p.s - r.s) <= 1e-12 * abs(r.s)
        AND abs(p.a - r.a) <= 1e-12 * abs(r.a) AND abs((p.sc).estimate - (r.sc).estimate) <= 1e-12 * abs((r.sc).estimate)
        AND (p.sc).lower = (p.sc).estimate AND (p.sc).upper = (p.sc).estimate)
        AND count(p.d_name) = count(*) AND count(r.d_name) = count(*)
        FROM %s p FULL JOIN %s r USING (d_name)', a, b);
END $$;
SET approx_gpu.exact_pass = off;
SELECT sj_x_query('x_off');
SELECT sj_answer() LIKE 'rows: the sample missed%' AS exact_plan;
SET approx_gpu.exact_pass = force;
SELECT sj_x_query('x_force');
SELECT sj_answer() LIKE 'exact pass: the sample missed%' AS exact_pass, (approx_gpu.last_run()->>'star_join_read')::int >= 1 AS read;
SELECT * FROM sj_x_same('x_force', 'x_off');
-- where the node's time went: its whole run (reads, lookups, the engine)
SELECT (approx_gpu.last_run()->>'star_join_ms')::float8 >= 0 AS timed;
-- on: the columns the session now keeps (every page all-visible, nothing vacuumed since)
SET approx_gpu.exact_pass = on;
SELECT sj_x_query('x_on');
SELECT sj_answer() LIKE 'exact pass:%' AS exact_pass, (approx_gpu.last_run()->>'star_join_read')::int AS tables_read;
SELECT * FROM sj_x_same('x_on', 'x_off');
-- a committed UPDATE: the kept columns no longer prove the rows, and on runs the exact plan
UPDATE sj_x SET x = x + 1 WHERE id = 17;
SELECT sj_x_query('x_on2');
SELECT sj_answer() LIKE 'rows: the sample missed%' AS exact_plan;
-- force reads the table under the statement's snapshot: the updated rows
SET approx_gpu.exact_pass = force;
SELECT sj_x_query('x_force2');
SELECT sj_answer() LIKE 'exact pass:%' AS exact_pass;
SELECT * FROM sj_x_same('x_force2', 'x_on2');
-- not where the node would read rows the role may not see: row-level security
ALTER TABLE sj_x ENABLE ROW LEVEL SECURITY;
ALTER TABLE sj_x FORCE ROW LEVEL SECURITY;
CREATE POLICY sj_x_some ON sj_x USING (id % 2 = 0);
SELECT sj_x_query('x_rls');
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
DROP POLICY sj_x_some ON sj_x;
ALTER TABLE sj_x DISABLE ROW LEVEL SECURITY;
RESET approx_gpu.exact_pass;
RESET approx_gpu.random_seed;
SELECT approx_gpu.drop_synopsis('sj_x_syn');
DROP FUNCTION sj_x_query(text), sj_x_same(regclass, regclass);
DROP TABLE sj_x, sj_xd, x_off, x_force, x_on, x_on2, x_force2, x_rls;
RESET approx_gpu.star_join;
RESET approx_gpu.box_path;
RESET approx_gpu.device;
DROP FUNCTION sj_answer(), sj_near(float8, float8), sj_near(approx_gpu.approx_estimate, approx_gpu.approx_estimate), sj_why(text);
