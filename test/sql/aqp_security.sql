-- Row-level security and views on the sample path (issue 37, items 2 and 3).
-- Item 2: a view's owner's row-level security (owner-rights views), the
-- caller's (security_invoker views), FORCE ROW LEVEL SECURITY and
-- row_security = off: the approximate answer never counts rows the exact one
-- would not see. Item 3: an interval through a security_barrier view, or a
-- view whose owner's rights grant what the caller lacks, borrows no spread
-- from the sample rows the view hides (twin tables with the same visible rows
-- give the same interval). Roles are cluster-wide: every role here is named
-- regress_aqpsec_* and dropped at the end. Prints exact integers, booleans
-- and reasons, never estimates.
SET approx_gpu.random_seed = 37;
-- two intervals equal up to rounding: the star join's GPU sums (atomics) and
-- PostgreSQL's parallel plans add in no fixed order
CREATE FUNCTION approx_close(a approx_gpu.approx_estimate, b approx_gpu.approx_estimate) RETURNS bool
LANGUAGE sql IMMUTABLE AS $$
SELECT abs(a.lower - b.lower) <= 1e-9 * (abs(a.lower) + abs(a.upper))
   AND abs(a.upper - b.upper) <= 1e-9 * (abs(a.lower) + abs(a.upper)) $$;
CREATE FUNCTION sec_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || coalesce(': ' || (approx_gpu.last_run()->>'reason'), '') $$;
CREATE ROLE regress_aqpsec_owner;
CREATE ROLE regress_aqpsec_alice;
CREATE ROLE regress_aqpsec_bob;
CREATE ROLE regress_aqpsec_bypass BYPASSRLS;

-- ---- item 2: whose row-level security ----------------------------------------------------
-- 25,000 rows, k 0..49; alice's policy shows k < 5 (2,500 rows); the owner,
-- superusers and BYPASSRLS roles see all of them.
CREATE TABLE sec_t AS
SELECT i AS id, i % 50 AS k, ((i::bigint * 104729) % 1000) / 10.0::float8 AS x FROM generate_series(1, 25000) i;
ANALYZE sec_t;
ALTER TABLE sec_t OWNER TO regress_aqpsec_owner;
ALTER TABLE sec_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY sec_alice ON sec_t FOR SELECT TO regress_aqpsec_alice USING (k < 5);
GRANT SELECT ON sec_t TO regress_aqpsec_alice;
SET ROLE regress_aqpsec_owner;
SELECT approx_gpu.create_synopsis('sec_syn', 'sec_t'::regclass, ARRAY['x', 'k']::name[], 2500, 'cdf', 'never')
       IS NOT NULL AS created;
RESET ROLE;
-- views: owned by alice (her policy applies through it), owned by the table
-- owner (none applies), and security_invoker ones (the caller's applies)
CREATE VIEW sec_v_alice AS SELECT id, k, x FROM sec_t;
ALTER VIEW sec_v_alice OWNER TO regress_aqpsec_alice;
CREATE VIEW sec_v_owner AS SELECT id, k, x FROM sec_t;
ALTER VIEW sec_v_owner OWNER TO regress_aqpsec_owner;
CREATE VIEW sec_vi_owner WITH (security_invoker) AS SELECT id, k, x FROM sec_t;
ALTER VIEW sec_vi_owner OWNER TO regress_aqpsec_owner;
CREATE VIEW sec_vi_alice WITH (security_invoker) AS SELECT id, k, x FROM sec_t;
ALTER VIEW sec_vi_alice OWNER TO regress_aqpsec_alice;
GRANT SELECT ON sec_v_alice, sec_v_owner, sec_vi_owner, sec_vi_alice
   TO regress_aqpsec_owner, regress_aqpsec_alice, regress_aqpsec_bypass;

-- alice's view, read by roles her policy does not bind: they see her 2,500
-- rows (the exact path; the sample would count all 25,000)
SET ROLE regress_aqpsec_owner;
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_alice WHERE k >= 0 OR x < 0 \gset
SELECT :v = 2500 AS exact, sec_answer();
SET ROLE regress_aqpsec_bypass;
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_alice WHERE k >= 0 OR x < 0 \gset
SELECT :v = 2500 AS exact, sec_answer();
RESET ROLE;  -- a superuser
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_alice WHERE k >= 0 OR x < 0 \gset
SELECT :v = 2500 AS exact, sec_answer();
SET ROLE regress_aqpsec_alice;
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_alice WHERE k >= 0 OR x < 0 \gset
SELECT :v = 2500 AS exact, sec_answer();
-- the owner's view, read by alice: no policy applies through it, the sample answers
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_owner WHERE k >= 0 OR x < 0 \gset
SELECT abs(:v / 25000.0 - 1) < 0.1 AS close, sec_answer();
-- security_invoker views: the caller's policy, whoever owns the view
SELECT approx_gpu.approx_count(*) AS v FROM sec_vi_owner WHERE k >= 0 OR x < 0 \gset
SELECT :v = 2500 AS exact, sec_answer();
SET ROLE regress_aqpsec_owner;
SELECT approx_gpu.approx_count(*) AS v FROM sec_vi_alice WHERE k >= 0 OR x < 0 \gset
SELECT abs(:v / 25000.0 - 1) < 0.1 AS close, sec_answer();
-- a plan cached for the owner is planned again for alice
PREPARE sec_p AS SELECT approx_gpu.approx_count(*) AS v FROM sec_vi_owner WHERE k >= 0 OR x < 0;
EXECUTE sec_p \gset
SELECT abs(:v / 25000.0 - 1) < 0.1 AS close, sec_answer();
SET ROLE regress_aqpsec_alice;
EXECUTE sec_p \gset
SELECT :v = 2500 AS exact, sec_answer();
RESET ROLE;
DEALLOCATE sec_p;

-- FORCE ROW LEVEL SECURITY: the owner is bound too (an owner's policy shows k < 10)
CREATE POLICY sec_owner ON sec_t FOR SELECT TO regress_aqpsec_owner USING (k < 10);
ALTER TABLE sec_t FORCE ROW LEVEL SECURITY;
SET ROLE regress_aqpsec_owner;
SELECT approx_gpu.approx_count(*) AS v FROM sec_t \gset
SELECT :v = 5000 AS exact, sec_answer();
SELECT approx_gpu.approx_count(*) AS v FROM sec_t WHERE k >= 0 OR x < 0 \gset
SELECT :v = 5000 AS exact, sec_answer();
RESET ROLE;
-- through the owner's view a superuser reads what the owner's policy shows
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_owner WHERE k >= 0 OR x < 0 \gset
SELECT :v = 5000 AS exact, sec_answer();
SET ROLE regress_aqpsec_alice;
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_owner WHERE k >= 0 OR x < 0 \gset
SELECT :v = 5000 AS exact, sec_answer();
RESET ROLE;
ALTER TABLE sec_t NO FORCE ROW LEVEL SECURITY;

-- row_security = off: whoever a policy would bind gets PostgreSQL's error;
-- the others are answered as before
SET row_security = off;
SET ROLE regress_aqpsec_owner;
SELECT approx_gpu.approx_count(*) AS v FROM sec_t WHERE k >= 0 OR x < 0 \gset
SELECT abs(:v / 25000.0 - 1) < 0.1 AS close, sec_answer();
SELECT approx_gpu.approx_count(*) FROM sec_v_alice WHERE k >= 0 OR x < 0;
SET ROLE regress_aqpsec_alice;
SELECT approx_gpu.approx_count(*) FROM sec_t WHERE k >= 0 OR x < 0;
SELECT approx_gpu.approx_count(*) AS v FROM sec_v_owner WHERE k >= 0 OR x < 0 \gset
SELECT abs(:v / 25000.0 - 1) < 0.1 AS close, sec_answer();
RESET ROLE;
RESET row_security;

-- ---- item 3: intervals borrow no spread from rows a view hides ---------------------------
-- Twins: the same 20,000 rows in the same places; the rows with pub = false
-- (one in ten) hold x = 1e7 in sec_b and ordinary values in sec_a. Same seed,
-- same layout: the two samples hold the same rows, so an interval that uses
-- only the rows a view shows is the same for both.
CREATE TABLE sec_a AS
SELECT i AS id, i % 20 AS k, i % 10 <> 0 AS pub, 100 + ((i::bigint * 7919) % 100)::float8 AS x
  FROM generate_series(1, 20000) i;
CREATE TABLE sec_b AS
SELECT i AS id, i % 20 AS k, i % 10 <> 0 AS pub,
       CASE WHEN i % 10 <> 0 THEN 100 + ((i::bigint * 7919) % 100)::float8 ELSE 1e7 END AS x
  FROM generate_series(1, 20000) i;
ANALYZE sec_a; ANALYZE sec_b;
ALTER TABLE sec_a OWNER TO regress_aqpsec_owner;
ALTER TABLE sec_b OWNER TO regress_aqpsec_owner;
SET ROLE regress_aqpsec_owner;
SET approx_gpu.random_seed = 37;
SELECT approx_gpu.create_synopsis('sec_as', 'sec_a'::regclass, ARRAY['x', 'k']::name[], 2000, 'cdf', 'never',
                                  census => false) IS NOT NULL AS created;
SET approx_gpu.random_seed = 37;
SELECT approx_gpu.create_synopsis('sec_bs', 'sec_b'::regclass, ARRAY['x', 'k']::name[], 2000, 'cdf', 'never',
                                  census => false) IS NOT NULL AS created;
RESET ROLE;
SET approx_gpu.random_seed = 37;
CREATE VIEW sec_a_sb WITH (security_barrier) AS SELECT id, k, x FROM sec_a WHERE pub;
CREATE VIEW sec_b_sb WITH (security_barrier) AS SELECT id, k, x FROM sec_b WHERE pub;
CREATE VIEW sec_a_v AS SELECT id, k, x FROM sec_a WHERE pub;
CREATE VIEW sec_b_v AS SELECT id, k, x FROM sec_b WHERE pub;
ALTER VIEW sec_a_sb OWNER TO regress_aqpsec_owner;
ALTER VIEW sec_b_sb OWNER TO regress_aqpsec_owner;
ALTER VIEW sec_a_v OWNER TO regress_aqpsec_owner;
ALTER VIEW sec_b_v OWNER TO regress_aqpsec_owner;
GRANT SELECT ON sec_a_sb, sec_b_sb, sec_a_v, sec_b_v TO regress_aqpsec_bob;
-- bob reads the views only
SET ROLE regress_aqpsec_bob;
SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a_sb WHERE k < 2 OR k = 7) q \gset
SELECT sec_answer();
SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b_sb WHERE k < 2 OR k = 7) q \gset
SELECT sec_answer();
SELECT abs((:al) - (:bl)) <= 1e-9 * (abs(:al) + abs(:au)) AND abs((:au) - (:bu)) <= 1e-9 * (abs(:al) + abs(:au)) AS same_interval;
SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_avg_ci(x) AS s FROM sec_a_v WHERE k < 2 OR k = 7) q \gset
SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_avg_ci(x) AS s FROM sec_b_v WHERE k < 2 OR k = 7) q \gset
SELECT sec_answer();
SELECT abs((:al) - (:bl)) <= 1e-9 * (abs(:al) + abs(:au)) AND abs((:au) - (:bu)) <= 1e-9 * (abs(:al) + abs(:au)) AS same_interval;
-- GROUP BY: each group's interval its own
CREATE TEMP TABLE sec_ga AS SELECT k, approx_gpu.approx_sum_ci(x * 2) AS s FROM sec_a_sb WHERE k < 4 OR k = 9 GROUP BY k;
CREATE TEMP TABLE sec_gb AS SELECT k, approx_gpu.approx_sum_ci(x * 2) AS s FROM sec_b_sb WHERE k < 4 OR k = 9 GROUP BY k;
SELECT sec_answer();
SELECT count(*) AS groups, bool_and(approx_close(a.s, b.s)) AS same_intervals
  FROM sec_ga a JOIN sec_gb b USING (k);
DROP TABLE sec_ga, sec_gb;
RESET ROLE;
-- the owner reads the tables: through the security_barrier view still nothing is borrowed
SET ROLE regress_aqpsec_owner;
SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a_sb WHERE k < 2 OR k = 7) q \gset
SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b_sb WHERE k < 2 OR k = 7) q \gset
SELECT sec_answer();
SELECT abs((:al) - (:bl)) <= 1e-9 * (abs(:al) + abs(:au)) AND abs((:au) - (:bu)) <= 1e-9 * (abs(:al) + abs(:au)) AS same_interval;
-- and over the table itself the stratum's spread is borrowed (all its rows are the owner's to read)
SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a WHERE pub AND (k < 2 OR k = 7)) q \gset
SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b WHERE pub AND (k < 2 OR k = 7)) q \gset
SELECT sec_answer();
SELECT :bu > :au AS wider;
-- one prepared statement per twin over the plain views: planned again for
-- bob after SET ROLE, and then nothing is borrowed
PREPARE sec_pa AS SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a_v WHERE k < 2 OR k = 7) q;
PREPARE sec_pb AS SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b_v WHERE k < 2 OR k = 7) q;
EXECUTE sec_pa \gset
EXECUTE sec_pb \gset
SELECT :bu > :au AS wider;
SET ROLE regress_aqpsec_bob;
EXECUTE sec_pa \gset
EXECUTE sec_pb \gset
SELECT abs((:al) - (:bl)) <= 1e-9 * (abs(:al) + abs(:au)) AND abs((:au) - (:bu)) <= 1e-9 * (abs(:al) + abs(:au)) AS same_interval;
RESET ROLE;
DEALLOCATE ALL;
-- a cursor planned for the owner and run by bob: the executor borrows nothing
-- for a role other than the one the plan was made for
SET ROLE regress_aqpsec_owner;
BEGIN;
DECLARE sec_ca CURSOR FOR SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a_v WHERE k < 2 OR k = 7) q;
DECLARE sec_cb CURSOR FOR SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b_v WHERE k < 2 OR k = 7) q;
SET LOCAL ROLE regress_aqpsec_bob;
FETCH sec_ca \gset
FETCH sec_cb \gset
COMMIT;
SELECT abs((:al) - (:bl)) <= 1e-9 * (abs(:al) + abs(:au)) AND abs((:au) - (:bu)) <= 1e-9 * (abs(:al) + abs(:au)) AS same_interval;
RESET ROLE;
-- a column grant on the measure is enough: bob may read every x himself, so
-- through the plain view the spread is borrowed (not through the barrier)
GRANT SELECT (x) ON sec_a, sec_b TO regress_aqpsec_bob;
SET ROLE regress_aqpsec_bob;
SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a_v WHERE k < 2 OR k = 7) q \gset
SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b_v WHERE k < 2 OR k = 7) q \gset
SELECT :bu > :au AS wider;
SELECT (s).lower AS al, (s).upper AS au FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_a_sb WHERE k < 2 OR k = 7) q \gset
SELECT (s).lower AS bl, (s).upper AS bu FROM (SELECT approx_gpu.approx_sum_ci(x) AS s FROM sec_b_sb WHERE k < 2 OR k = 7) q \gset
SELECT abs((:al) - (:bl)) <= 1e-9 * (abs(:al) + abs(:au)) AND abs((:au) - (:bu)) <= 1e-9 * (abs(:al) + abs(:au)) AS same_interval;
RESET ROLE;

-- ---- clean up ----------------------------------------------------------------------------
SET ROLE regress_aqpsec_owner;
SELECT approx_gpu.drop_synopsis('sec_syn');
SELECT approx_gpu.drop_synopsis('sec_as');
SELECT approx_gpu.drop_synopsis('sec_bs');
RESET ROLE;
DROP VIEW sec_v_alice, sec_v_owner, sec_vi_owner, sec_vi_alice, sec_a_sb, sec_b_sb, sec_a_v, sec_b_v;
DROP TABLE sec_t, sec_a, sec_b;
DROP FUNCTION sec_answer();
DROP FUNCTION approx_close(approx_gpu.approx_estimate, approx_gpu.approx_estimate);
DROP ROLE regress_aqpsec_owner, regress_aqpsec_alice, regress_aqpsec_bob, regress_aqpsec_bypass;
