-- Freshness of table synopses against events the change counters cannot
-- show (issue 26, items 1-5): a statistics reset, a build right after one, a
-- build under an old (REPEATABLE READ) snapshot, a transaction block that
-- cached the statistics, attribute numbers that moved (what a restore does),
-- a renamed column and a renamed enum label. Each case compares the
-- approximate answer with the exact one in the same statement context and
-- prints which path answered. Another session is a dblink connection.
-- Output: booleans and last_run()'s answered_from / reason.
SET approx_gpu.random_seed = 26;
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('fr_other', 'dbname=' || current_database() || ' port=' || current_setting('port')
                      || ' host=' || split_part(current_setting('unix_socket_directories'), ',', 1)) AS connected;
CREATE FUNCTION fr_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(approx_gpu.last_run()->>'reason', approx_gpu.last_run()->>'synopsis', '-') $$;
-- approx_avg(x) against avg(x) of table t (a uniform sample of 10,000 rows
-- from 10,000: equal up to rounding when it answers for the table as it is)
CREATE FUNCTION fr_avg(t text, col text DEFAULT 'x', OUT right_answer bool, OUT answered text) LANGUAGE plpgsql AS $$
DECLARE a float8; e float8;
BEGIN
  EXECUTE format('SELECT approx_gpu.approx_avg(%I) FROM %I', col, t) INTO a;
  answered := fr_answer();
  EXECUTE format('SELECT avg(%I) FROM %I', col, t) INTO e;
  right_answer := abs(a - e) < 1e-6 * abs(e);
END $$;
-- approx_count(*) against count(*) of table t WHERE cond
CREATE FUNCTION fr_count(t text, cond text, OUT right_answer bool, OUT answered text) LANGUAGE plpgsql AS $$
DECLARE a float8; e float8;
BEGIN
  EXECUTE format('SELECT approx_gpu.approx_count(*) FROM %I WHERE %s', t, cond) INTO a;
  answered := fr_answer();
  EXECUTE format('SELECT count(*) FROM %I WHERE %s', t, cond) INTO e;
  right_answer := abs(a - e) < 1e-6;
END $$;
CREATE FUNCTION fr_table(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I AS SELECT g::float8 AS x FROM generate_series(1, 2000) g', t);
END $$;

-- ---- item 1: a single table's statistics reset, then as many changes as the
-- build saw (every row updated): the counters read as before, the rows do not
SELECT fr_table('fr_s1');
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('fr_s1_syn', 'fr_s1'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
SELECT * FROM fr_avg('fr_s1');
SELECT pg_stat_reset_single_table_counters('fr_s1'::regclass);
UPDATE fr_s1 SET x = x + 1000000;
SELECT pg_stat_force_next_flush();
SELECT * FROM fr_avg('fr_s1');
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('fr_s1_syn') s;
-- refreshed after the reset: fresh again
SELECT (approx_gpu.refresh_synopsis('fr_s1_syn')->>'N')::int AS n;
SELECT * FROM fr_avg('fr_s1');

-- ---- item 1: built right after a reset (n_live_tup = 0), then every row
-- updated: an update is not a late insert
SELECT fr_table('fr_s2');
SELECT pg_stat_force_next_flush();
SELECT pg_stat_reset_single_table_counters('fr_s2'::regclass);
SELECT (approx_gpu.create_synopsis('fr_s2_syn', 'fr_s2'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
SELECT * FROM fr_avg('fr_s2');
UPDATE fr_s2 SET x = x + 1000000;
SELECT pg_stat_force_next_flush();
SELECT * FROM fr_avg('fr_s2');

-- ---- item 2: a REPEATABLE READ build after another session replaced every
-- row: the sample is the old rows, the counters the new ones
SELECT fr_table('fr_s3');
SELECT pg_stat_force_next_flush();
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS old_rows FROM fr_s3;
SELECT dblink_exec('fr_other', 'DELETE FROM fr_s3; INSERT INTO fr_s3 SELECT g + 1000000 FROM generate_series(1, 200) g; '
                               'DO $d$ BEGIN PERFORM pg_stat_force_next_flush(); END $d$');
SELECT (approx_gpu.create_synopsis('fr_s3_syn', 'fr_s3'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
COMMIT;
SELECT * FROM fr_avg('fr_s3');
SELECT * FROM fr_count('fr_s3', 'true');
-- the same build as the transaction's first statement: its snapshot is the
-- statement's, so it answers
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT (approx_gpu.refresh_synopsis('fr_s3_syn')->>'N')::int AS n;
COMMIT;
SELECT * FROM fr_avg('fr_s3');

-- ---- item 3: inside a transaction block, another session rewrites every
-- row and commits; the block's next statement sees the new rows
SELECT fr_table('fr_s4');
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('fr_s4_syn', 'fr_s4'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
BEGIN;
SELECT * FROM fr_avg('fr_s4');
SELECT dblink_exec('fr_other', 'UPDATE fr_s4 SET x = x + 1000000; DO $d$ BEGIN PERFORM pg_stat_force_next_flush(); END $d$');
SELECT * FROM fr_avg('fr_s4');
COMMIT;
-- the same in one PL/pgSQL block
SELECT (approx_gpu.refresh_synopsis('fr_s4_syn')->>'N')::int AS n;
DO $$
DECLARE r record;
BEGIN
  SELECT * INTO r FROM fr_avg('fr_s4');
  RAISE NOTICE 'before: % %', r.right_answer, r.answered;
  PERFORM dblink_exec('fr_other', 'UPDATE fr_s4 SET x = x - 1000000; DO $d$ BEGIN PERFORM pg_stat_force_next_flush(); END $d$');
  SELECT * INTO r FROM fr_avg('fr_s4');
  RAISE NOTICE 'after: % %', r.right_answer, r.answered;
END $$;

-- ---- item 4: attribute numbers that moved, as a restore of a table with a
-- dropped column gives them (simulated in place: the catalog row's numbers
-- are what pg_dump + restore would leave); names rebind, never the number
CREATE TABLE fr_s5 (a int, b int, c float8, d float8);
INSERT INTO fr_s5 SELECT g, g, g % 1000, g FROM generate_series(1, 2000) g;
ALTER TABLE fr_s5 DROP COLUMN b;
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('fr_s5_syn', 'fr_s5'::regclass, ARRAY['c']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
SELECT attnums FROM approx_gpu.synopses WHERE name = 'fr_s5_syn';
CREATE TABLE fr_s5_restored (a int, c float8, d float8);  -- the restored layout: c = 2, d = 3
INSERT INTO fr_s5_restored SELECT a, c, d FROM fr_s5;
UPDATE approx_gpu.synopses SET relation = 'fr_s5_restored'::regclass,
       relfilenode = (SELECT relfilenode FROM pg_class WHERE oid = 'fr_s5_restored'::regclass)
 WHERE name = 'fr_s5_syn';
SELECT pg_stat_force_next_flush();
SELECT * FROM fr_avg('fr_s5_restored', 'd');
SELECT * FROM fr_avg('fr_s5_restored', 'c');
-- refresh builds on the same columns by name
SELECT approx_gpu.refresh_synopsis('fr_s5_syn')->'columns'->0->>'name' AS refreshed_column;
SELECT attnums FROM approx_gpu.synopses WHERE name = 'fr_s5_syn';
SELECT * FROM fr_avg('fr_s5_restored', 'c');
-- a renamed column follows (its stored name follows the rename)
ALTER TABLE fr_s5_restored RENAME COLUMN c TO e;
SELECT * FROM fr_avg('fr_s5_restored', 'e');
SELECT s->>'status' AS status, s->'columns' AS columns FROM approx_gpu.synopsis_status('fr_s5_syn') s;
-- dropped and added again under its name: another column, never answered for
ALTER TABLE fr_s5_restored DROP COLUMN e;
ALTER TABLE fr_s5_restored ADD COLUMN e float8 DEFAULT 7;
SELECT * FROM fr_avg('fr_s5_restored', 'e');
-- a rename on a partitioned table recurses to its partitions: their synopses follow
CREATE TABLE fr_parted (k int, x float8) PARTITION BY RANGE (k);
CREATE TABLE fr_part1 PARTITION OF fr_parted FOR VALUES FROM (0) TO (20000);
INSERT INTO fr_parted SELECT g, g FROM generate_series(1, 2000) g;
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('fr_part1_syn', 'fr_part1'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
ALTER TABLE fr_parted RENAME COLUMN x TO y;
SELECT * FROM fr_avg('fr_part1', 'y');

-- ---- item 5: an enum label renamed: the dictionary's label means another value
CREATE TYPE fr_mood AS ENUM ('sad', 'happy');
CREATE TABLE fr_s6 AS SELECT g::float8 AS x, (CASE WHEN g % 2 = 0 THEN 'happy' ELSE 'sad' END)::fr_mood AS m
  FROM generate_series(1, 2000) g;
SELECT pg_stat_force_next_flush();
SELECT (approx_gpu.create_synopsis('fr_s6_syn', 'fr_s6'::regclass, ARRAY['x', 'm']::name[], 10000, 'cdf', 'never')->>'N')::int AS n;
SELECT * FROM fr_count('fr_s6', $$m = 'happy'$$);
ALTER TYPE fr_mood RENAME VALUE 'happy' TO 'glad';
SELECT * FROM fr_count('fr_s6', $$m = 'glad'$$);
CREATE TEMP TABLE fr_groups AS SELECT m, round(approx_gpu.approx_count(*))::bigint AS n FROM fr_s6 GROUP BY m;
SELECT fr_answer() AS answered;
SELECT NOT EXISTS (SELECT m, n FROM fr_groups EXCEPT SELECT m, count(*) FROM fr_s6 GROUP BY m) AS groups_right;
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('fr_s6_syn') s;
-- adding a label changes no stored code's meaning
SELECT (approx_gpu.refresh_synopsis('fr_s6_syn')->>'N')::int AS n;
ALTER TYPE fr_mood ADD VALUE 'calm';
SELECT * FROM fr_count('fr_s6', $$m = 'glad'$$);

SELECT dblink_disconnect('fr_other');
SELECT approx_gpu.drop_synopsis(n) FROM unnest(ARRAY['fr_s1_syn', 'fr_s2_syn', 'fr_s3_syn', 'fr_s4_syn', 'fr_s5_syn',
                                                     'fr_s6_syn', 'fr_part1_syn']) n;
DROP TABLE fr_s1, fr_s2, fr_s3, fr_s4, fr_s5, fr_s5_restored, fr_s6, fr_groups, fr_parted;
DROP TYPE fr_mood;
DROP FUNCTION fr_answer(), fr_avg(text, text), fr_count(text, text), fr_table(text);
DROP EXTENSION dblink;
