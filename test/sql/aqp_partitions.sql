-- Partitioned tables and inheritance parents (issue 27 item 6): a synopsis of
-- the parent samples every leaf, each leaf its own strata, and answers
-- queries on the parent from the sample; FROM ONLY, a partition queried
-- directly and row-level security keep the exact path; ATTACH / DETACH /
-- DROP / TRUNCATE of a partition and a new inheritance child make the
-- synopsis stale. Output: booleans, counts and last_run()'s reasons.
SET approx_gpu.random_seed = 27;
CREATE FUNCTION pt_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || coalesce(': ' || (approx_gpu.last_run()->>'reason'), '') $$;
-- approx_count(*) and approx_sum(x) of table t WHERE cond GROUP BY g against
-- the exact answer: (answered, groups, all within tol, the guard forced to
-- fall back gives the exact answer row for row)
CREATE FUNCTION pt_check(t text, cond text, tol float8, OUT answered text, OUT groups bigint, OUT close bool,
                         OUT guarded_exact bool) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TEMP TABLE pt_a AS SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum(x) AS s '
                 'FROM %s WHERE %s GROUP BY g', t, cond);
  answered := pt_answer();
  EXECUTE format('CREATE TEMP TABLE pt_e AS SELECT g, count(*) AS n, sum(x) AS s FROM %s WHERE %s GROUP BY g', t, cond);
  SELECT count(*), bool_and(abs(a.n / e.n - 1) < tol AND abs(a.s / e.s - 1) < tol)
    INTO groups, close FROM pt_a a JOIN pt_e e USING (g);
  IF (SELECT count(*) FROM pt_a) <> (SELECT count(*) FROM pt_e) THEN close := false; END IF;
  SET LOCAL approx_gpu.max_relative_error = 1e-12;
  DROP TABLE pt_a;
  EXECUTE format('CREATE TEMP TABLE pt_a AS SELECT g, approx_gpu.approx_count(*) AS n, approx_gpu.approx_sum(x) AS s '
                 'FROM %s WHERE %s GROUP BY g', t, cond);
  SELECT count(*) = (SELECT count(*) FROM pt_e) AND bool_and(a.n = e.n AND a.s = e.s)
    INTO guarded_exact FROM pt_a a JOIN pt_e e USING (g);
  guarded_exact := guarded_exact AND approx_gpu.last_run()->>'answered_from' IS DISTINCT FROM 'sample';
  DROP TABLE pt_a, pt_e;
END $$;

-- ---- a range-partitioned table: range, list sub-partitions, a default --------------------
CREATE TABLE pt_r (k int, g text, x float8, pad int) PARTITION BY RANGE (k);
CREATE TABLE pt_r1 PARTITION OF pt_r FOR VALUES FROM (0) TO (1000);
-- a leaf whose columns sit in another order (and one dropped): rows are mapped by name
CREATE TABLE pt_r2 (pad int, dropme int, x float8, g text, k int);
ALTER TABLE pt_r2 DROP COLUMN dropme;
ALTER TABLE pt_r ATTACH PARTITION pt_r2 FOR VALUES FROM (1000) TO (2000);
-- sub-partitioned by list
CREATE TABLE pt_r3 PARTITION OF pt_r FOR VALUES FROM (2000) TO (3000) PARTITION BY LIST (g);
CREATE TABLE pt_r3a PARTITION OF pt_r3 FOR VALUES IN ('a', 'b');
CREATE TABLE pt_r3z PARTITION OF pt_r3 DEFAULT;
CREATE TABLE pt_rd PARTITION OF pt_r DEFAULT;
-- 60,000 rows; the leaves differ in size and in x's scale
INSERT INTO pt_r SELECT i % 4000, chr(97 + i % 4), CASE WHEN i % 4000 < 1000 THEN 1 ELSE 50 END * (100 + (i * 7919) % 100),
                        i
  FROM generate_series(1, 40000) i;
INSERT INTO pt_r SELECT 1000 + i % 1000, chr(97 + i % 4), 40 * (100 + (i * 31) % 50), i FROM generate_series(1, 20000) i;
ANALYZE pt_r;
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('pt_r_syn', 'pt_r'::regclass, ARRAY['k', 'g', 'x']::name[], 4000, 'cdf', 'never')
        ->>'N')::int AS n;
-- one stratum per leaf holding rows (5), each sampled
SELECT (approx_gpu.synopsis_status('pt_r_syn')->>'strata')::int AS strata;
SELECT * FROM pt_check('pt_r', 'x >= 0', 0.1);
SELECT * FROM pt_check('pt_r', 'g IN (''a'', ''c'') OR x < 150', 0.15);
-- WHERE prunes partitions
SELECT * FROM pt_check('pt_r', 'k >= 1000 AND k < 2000', 0.1);
SELECT * FROM pt_check('pt_r', 'k >= 2000 AND g = ''a''', 0.2);
-- EXPLAIN names the sample node
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM pt_r WHERE x > 10 OR g = 'a';

-- ---- what keeps the exact path -----------------------------------------------------------
-- FROM ONLY: the parent's own rows (none), not what the sample holds
CREATE TEMP TABLE o1 AS SELECT approx_gpu.approx_count(*) AS n FROM ONLY pt_r;
SELECT pt_answer(), n FROM o1;
-- a partition queried directly: the parent's synopsis does not answer
CREATE TEMP TABLE o2 AS SELECT approx_gpu.approx_count(*) AS n FROM pt_r2 WHERE x > 10 OR g = 'a';
SELECT pt_answer(), n = (SELECT count(*) FROM pt_r2 WHERE x > 10 OR g = 'a') AS exact FROM o2;
-- the box path refuses a parent; the sample path answers a box-shaped query
CREATE TEMP TABLE o3 AS SELECT approx_gpu.approx_count(*) AS n FROM pt_r WHERE k < 500;
SELECT pt_answer(), abs(n / (SELECT count(*) FROM pt_r WHERE k < 500) - 1) < 0.1 AS close FROM o3;
-- row-level security on the parent
CREATE ROLE regress_pt_reader;
GRANT SELECT ON pt_r TO regress_pt_reader;
GRANT USAGE ON SCHEMA approx_gpu TO regress_pt_reader;
ALTER TABLE pt_r ENABLE ROW LEVEL SECURITY;
CREATE POLICY pt_some ON pt_r FOR SELECT USING (k < 100);
SET ROLE regress_pt_reader;
CREATE TEMP TABLE o5 AS SELECT approx_gpu.approx_count(*) AS n FROM pt_r WHERE x > 10 OR g <> 'zz';
SELECT pt_answer();
SELECT n = (SELECT count(*) FROM pt_r WHERE x > 10 OR g <> 'zz') AS exact FROM o5;
RESET ROLE;
ALTER TABLE pt_r DISABLE ROW LEVEL SECURITY;
-- privileges are the parent's: a role without SELECT on the parent is refused
-- even though the sample relation needs none
CREATE ROLE regress_pt_none;
GRANT USAGE ON SCHEMA approx_gpu TO regress_pt_none;
SET ROLE regress_pt_none;
SELECT approx_gpu.approx_count(*) FROM pt_r WHERE x > 10 OR g = 'a';
RESET ROLE;

-- ---- freshness: the leaves' counters summed, the leaf set fingerprinted -------------------
-- inserts into one partition: stale past 20% of the rows, like a plain table
INSERT INTO pt_r2 (k, g, x, pad) SELECT 1000 + i % 1000, 'a', 5000, i FROM generate_series(1, 2000) i;
SELECT pg_stat_force_next_flush();
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
INSERT INTO pt_r2 (k, g, x, pad) SELECT 1000 + i % 1000, 'a', 5000, i FROM generate_series(1, 12000) i;
SELECT pg_stat_force_next_flush();
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
SELECT approx_gpu.refresh_synopsis('pt_r_syn') IS NOT NULL AS refreshed;
SELECT answered, close FROM pt_check('pt_r', 'x >= 0', 0.1);
-- TRUNCATE of one partition
TRUNCATE pt_rd;
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
SELECT approx_gpu.refresh_synopsis('pt_r_syn') IS NOT NULL AS refreshed;
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
-- DETACH, then ATTACH again
ALTER TABLE pt_r DETACH PARTITION pt_r2;
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
ALTER TABLE pt_r ATTACH PARTITION pt_r2 FOR VALUES FROM (1000) TO (2000);
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
SELECT approx_gpu.refresh_synopsis('pt_r_syn') IS NOT NULL AS refreshed;
-- a new (empty) partition is a change of the leaf set too
CREATE TABLE pt_r4 PARTITION OF pt_r FOR VALUES FROM (5000) TO (6000);
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
SELECT approx_gpu.refresh_synopsis('pt_r_syn') IS NOT NULL AS refreshed;
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
-- DROP of a partition
DROP TABLE pt_r4;
SELECT answered FROM pt_check('pt_r', 'x >= 0', 0.1);
SELECT approx_gpu.refresh_synopsis('pt_r_syn') IS NOT NULL AS refreshed;
SELECT answered, close FROM pt_check('pt_r', 'x >= 0', 0.1);

-- a prepared statement with a generic plan: from the sample, then, after a
-- DETACH, the exact path at its next execution
SET plan_cache_mode = force_generic_plan;
PREPARE pt_q(int) AS SELECT approx_gpu.approx_count(*) AS n FROM pt_r WHERE k < $1 OR g = 'zz';
CREATE TEMP TABLE q1 AS EXECUTE pt_q(1500);
SELECT pt_answer(), abs(n / (SELECT count(*) FROM pt_r WHERE k < 1500) - 1) < 0.1 AS close FROM q1;
ALTER TABLE pt_r DETACH PARTITION pt_r1;
CREATE TEMP TABLE q2 AS EXECUTE pt_q(1500);
SELECT pt_answer(), n = (SELECT count(*) FROM pt_r WHERE k < 1500) AS exact FROM q2;
ALTER TABLE pt_r ATTACH PARTITION pt_r1 FOR VALUES FROM (0) TO (1000);
CREATE TEMP TABLE q3 AS EXECUTE pt_q(1500);
SELECT pt_answer(), abs(n / (SELECT count(*) FROM pt_r WHERE k < 1500) - 1) < 0.1 AS close FROM q3;
DEALLOCATE pt_q;
RESET plan_cache_mode;

-- ---- stratified by a column too: strata are leaf x value --------------------------------------
CREATE TABLE pt_l (k int, g text, x float8) PARTITION BY LIST (g);
CREATE TABLE pt_la PARTITION OF pt_l FOR VALUES IN ('a', 'b');
CREATE TABLE pt_lc PARTITION OF pt_l FOR VALUES IN ('c');
CREATE TABLE pt_ld PARTITION OF pt_l DEFAULT;
INSERT INTO pt_l SELECT i % 7, chr(97 + i % 5), 100 + (i * 13) % 97 FROM generate_series(1, 30000) i;
SELECT (approx_gpu.create_synopsis('pt_l_syn', 'pt_l'::regclass, ARRAY['k', 'x']::name[], 3000, 'cdf', 'never',
                                   ARRAY['k']::name[])->>'N')::int AS n;
-- 3 leaves x 7 values of k
SELECT (approx_gpu.synopsis_status('pt_l_syn')->>'strata')::int AS strata;
SELECT answered, groups, close, guarded_exact FROM pt_check('pt_l', 'k < 5 OR x > 150', 0.15);

-- ---- an inheritance parent: its own rows and its children's -----------------------------------
CREATE TABLE pt_i (k int, g text, x float8);
CREATE TABLE pt_i1 (extra int) INHERITS (pt_i);
CREATE TABLE pt_i2 () INHERITS (pt_i);
INSERT INTO pt_i SELECT i % 10, chr(97 + i % 3), 100 + i % 100 FROM generate_series(1, 10000) i;
INSERT INTO pt_i1 SELECT i % 10, chr(97 + i % 3), 10 * (100 + i % 100), i FROM generate_series(1, 20000) i;
INSERT INTO pt_i2 SELECT i % 10, chr(97 + i % 3), 5 FROM generate_series(1, 5000) i;
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('pt_i_syn', 'pt_i'::regclass, ARRAY['g', 'x']::name[], 3000, 'cdf', 'never')
        ->>'N')::int AS n;
SELECT (approx_gpu.synopsis_status('pt_i_syn')->>'strata')::int AS strata;
SELECT * FROM pt_check('pt_i', 'x > 150', 0.1);
-- FROM ONLY the parent: its own rows, the exact path
CREATE TEMP TABLE o4 AS SELECT approx_gpu.approx_count(*) AS n FROM ONLY pt_i;
SELECT pt_answer(), n FROM o4;
-- NO INHERIT and INHERIT change the leaf set
ALTER TABLE pt_i2 NO INHERIT pt_i;
SELECT answered FROM pt_check('pt_i', 'x > 150', 0.1);
ALTER TABLE pt_i2 INHERIT pt_i;
SELECT answered FROM pt_check('pt_i', 'x > 150', 0.1);
-- a plain table that gains a child: its synopsis no longer holds every row
CREATE TABLE pt_p (k int, g text, x float8);
INSERT INTO pt_p SELECT i % 10, chr(97 + i % 3), i % 100 FROM generate_series(1, 5000) i;
SELECT (approx_gpu.create_synopsis('pt_p_syn', 'pt_p'::regclass, ARRAY['x']::name[], 1000, 'cdf', 'never')
        ->>'N')::int AS n;
SELECT answered FROM pt_check('pt_p', 'x > 50', 0.1);
CREATE TABLE pt_p1 () INHERITS (pt_p);
SELECT answered FROM pt_check('pt_p', 'x > 50', 0.1);

-- ---- errors ----------------------------------------------------------------------------------
CREATE FUNCTION pt_err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- a parent whose leaves hold no rows
CREATE TABLE pt_empty (k int, x float8) PARTITION BY RANGE (k);
CREATE TABLE pt_empty1 PARTITION OF pt_empty FOR VALUES FROM (0) TO (10);
SELECT pt_err($$SELECT approx_gpu.create_synopsis('pt_e', 'pt_empty', ARRAY['x']::name[])$$);
-- a partitioned table without partitions
CREATE TABLE pt_none_p (k int, x float8) PARTITION BY RANGE (k);
SELECT pt_err($$SELECT approx_gpu.create_synopsis('pt_e', 'pt_none_p', ARRAY['x']::name[])$$);
-- a temporary child of a permanent parent
CREATE TEMP TABLE pt_tmp_child () INHERITS (pt_p);
SELECT pt_err($$SELECT approx_gpu.create_synopsis('pt_e', 'pt_p', ARRAY['x']::name[])$$);
DROP TABLE pt_tmp_child;
-- a foreign partition
CREATE FOREIGN DATA WRAPPER pt_fdw;
CREATE SERVER pt_srv FOREIGN DATA WRAPPER pt_fdw;
CREATE FOREIGN TABLE pt_empty2 PARTITION OF pt_empty FOR VALUES FROM (10) TO (20) SERVER pt_srv;
INSERT INTO pt_empty1 VALUES (1, 1);
SELECT pt_err($$SELECT approx_gpu.create_synopsis('pt_e', 'pt_empty', ARRAY['x']::name[])$$);

-- ---- DROP of a parent, drop_synopsis: synopses and sample relations go -------------------
CREATE TEMP TABLE pt_samples AS SELECT sample_relid FROM approx_gpu.synopses WHERE name LIKE 'pt\_%';
SELECT count(*) AS samples FROM pt_samples;
DROP TABLE pt_i CASCADE;
SELECT count(*) AS synopses_left FROM approx_gpu.synopses WHERE name = 'pt_i_syn';
SELECT approx_gpu.drop_synopsis('pt_r_syn');
DROP TABLE pt_r, pt_l, pt_p, pt_empty CASCADE;
DROP SERVER pt_srv;
DROP FOREIGN DATA WRAPPER pt_fdw;
SELECT count(*) AS synopses_left FROM approx_gpu.synopses WHERE name LIKE 'pt\_%';
SELECT count(*) AS samples_left FROM pt_samples s JOIN pg_class c ON c.oid = s.sample_relid;
DROP OWNED BY regress_pt_reader;
DROP ROLE regress_pt_reader;
DROP OWNED BY regress_pt_none;
DROP ROLE regress_pt_none;
