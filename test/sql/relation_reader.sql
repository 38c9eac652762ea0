-- Relation inputs: hash_join / hash_join_count / topk / bottomk /
-- closures / mo_load over tables, read by the extension's parallel reader.
-- Each relation form must equal its inner-query form on the same data
-- (joins as multisets, closures as sets, top-k exactly); the reader must
-- follow PostgreSQL's rules (snapshot, privileges, RLS, partitions,
-- inheritance). Everything printed is a boolean, an exact integer or an
-- error, so the output does not depend on the engine or the worker count.
SET jit = off;
SET client_min_messages = warning;
SELECT setseed(0.31);
-- workers even for small tables, so that the parallel path is what is tested
SET approx_gpu.read_workers = 2;

CREATE TABLE rr_a AS SELECT (random() * 5000)::int AS key, i::bigint AS value, (random() * 1000)::float8 AS score
  FROM generate_series(1, 60000) i;
CREATE TABLE rr_b AS SELECT (random() * 6000)::bigint AS key, -i::bigint AS value FROM generate_series(1, 20000) i;
-- NULL keys and values, ties in scores
INSERT INTO rr_a VALUES (NULL, 1, 5), (7, NULL, 5), (NULL, NULL, NULL), (8, 9, NULL), (9, 10, 999.5), (10, 11, 999.5);
INSERT INTO rr_b VALUES (NULL, 1), (7, NULL), (8, NULL);
ANALYZE rr_a, rr_b;

CREATE FUNCTION rr_error(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Rows of hash_join over relations vs over queries vs PostgreSQL's join.
CREATE FUNCTION rr_join_check(b regclass, bk name, bv name, p regclass, pk name, pv name)
RETURNS TABLE(pg bigint, by_relation bigint, counted bigint, missing bigint, extra bigint, same_as_query bool)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format($q$
    WITH pg AS (SELECT b.%2$I::bigint AS key, b.%3$I::bigint AS build_value, p.%6$I::bigint AS probe_value
                FROM %1$s b JOIN %4$s p ON b.%2$I = p.%5$I),
         rel AS (SELECT * FROM approx_gpu.hash_join(%1$L, %2$L, %3$L, %4$L, %5$L, %6$L)),
         q AS (SELECT * FROM approx_gpu.hash_join(format('SELECT %%I, %%I FROM %%s', %2$L, %3$L, %1$L),
                                                  format('SELECT %%I, %%I FROM %%s', %5$L, %6$L, %4$L)))
    SELECT (SELECT count(*) FROM pg), (SELECT count(*) FROM rel),
           approx_gpu.hash_join_count(%1$L, %2$L, %4$L, %5$L),
           (SELECT count(*) FROM (SELECT * FROM pg EXCEPT ALL SELECT * FROM rel) d),
           (SELECT count(*) FROM (SELECT * FROM rel EXCEPT ALL SELECT * FROM pg) d),
           NOT EXISTS (SELECT * FROM rel EXCEPT ALL SELECT * FROM q) AND NOT EXISTS (SELECT * FROM q EXCEPT ALL SELECT * FROM rel)
    $q$, b, bk, bv, p, pk, pv);
END $$;

-- top-k of a relation vs the aggregate vs ORDER BY ... LIMIT (exactly)
CREATE FUNCTION rr_topk_check(r regclass, id name, score name, k int) RETURNS TABLE(top_ok bool, bottom_ok bool)
LANGUAGE plpgsql AS $$
DECLARE t approx_gpu.scored[]; b approx_gpu.scored[]; ot approx_gpu.scored[]; ob approx_gpu.scored[];
        at approx_gpu.scored[];
BEGIN
  t := approx_gpu.topk(r, id, score, k);
  b := approx_gpu.bottomk(r, id, score, k);
  EXECUTE format('SELECT array_agg(ROW(i, s)::approx_gpu.scored ORDER BY s DESC, i) FROM (SELECT %I::bigint i, %I::float8 s FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL ORDER BY 2 DESC, 1 LIMIT %s) x',
                 id, score, r, id, score, k) INTO ot;
  EXECUTE format('SELECT array_agg(ROW(i, s)::approx_gpu.scored ORDER BY s, i) FROM (SELECT %I::bigint i, %I::float8 s FROM %s WHERE %I IS NOT NULL AND %I IS NOT NULL ORDER BY 2, 1 LIMIT %s) x',
                 id, score, r, id, score, k) INTO ob;
  EXECUTE format('SELECT approx_gpu.topk(%I::bigint, %I::float8, %s) FROM %s', id, score, k, r) INTO at;
  RETURN QUERY SELECT t IS NOT DISTINCT FROM ot AND t IS NOT DISTINCT FROM at, b IS NOT DISTINCT FROM ob;
END $$;

-- closures of a relation vs of its query (as sets)
CREATE FUNCTION rr_closure_check(r regclass, s name, d name) RETURNS TABLE(pairs bigint, counted bigint, same_pairs bool, same_reachable bool)
LANGUAGE plpgsql AS $$
DECLARE q text := format('SELECT %I, %I FROM %s', s, d, r);
BEGIN
  RETURN QUERY SELECT (SELECT count(*) FROM approx_gpu.transitive_closure(r, s, d)),
    approx_gpu.reachability_count(r, s, d),
    NOT EXISTS (SELECT * FROM approx_gpu.transitive_closure(r, s, d) EXCEPT SELECT * FROM approx_gpu.transitive_closure(q))
      AND NOT EXISTS (SELECT * FROM approx_gpu.transitive_closure(q) EXCEPT SELECT * FROM approx_gpu.transitive_closure(r, s, d)),
    ARRAY(SELECT approx_gpu.reachable(r, s, d, 1)) = ARRAY(SELECT approx_gpu.reachable(q, 1));
END $$;

-- ---- each relation form equals its query form ------------------------------------------------
SELECT * FROM rr_join_check('rr_b', 'key', 'value', 'rr_a', 'key', 'value');
SELECT approx_gpu.hash_join_count('rr_b', 'key', 'rr_a', 'key') > 0 AS joined;
SELECT approx_gpu.last_run()->>'read' AS read, (approx_gpu.last_run()->>'read_workers')::int > 0 AS workers_helped,
       (approx_gpu.last_run()->>'rows_read_per_s')::float8 > 0 AS rate_reported;
SELECT * FROM rr_join_check('rr_a', 'key', 'value', 'rr_b', 'key', 'value');
SELECT * FROM rr_topk_check('rr_a', 'value', 'score', 10);
SELECT * FROM rr_topk_check('rr_a', 'value', 'score', 100000);
SELECT * FROM rr_topk_check('rr_a', 'key', 'value', 7);
CREATE TABLE rr_edges AS SELECT i AS s, (i * 7 % 300) + 1 AS d FROM generate_series(1, 300) i;
INSERT INTO rr_edges VALUES (NULL, 1), (2, NULL);
SELECT * FROM rr_closure_check('rr_edges', 's', 'd');
-- mo_load from a table equals mo_load from its query
SELECT approx_gpu.mo_create('rr_mo1', 0, 0, 1000, 1000, 16, 16), approx_gpu.mo_create('rr_mo2', 0, 0, 1000, 1000, 16, 16);
CREATE TABLE rr_pos AS SELECT i AS id, (i * 37 % 1000)::float8 AS x, (i * 91 % 1000)::float4 AS y FROM generate_series(1, 5000) i;
INSERT INTO rr_pos VALUES (NULL, 1, 1), (6000, NULL, 2);
SELECT approx_gpu.mo_load('rr_mo1', 'rr_pos', 'id', 'x', 'y') AS loaded_by_relation,
       approx_gpu.mo_load('rr_mo2', 'SELECT id, x, y FROM rr_pos') AS loaded_by_query;
SELECT ARRAY(SELECT id FROM approx_gpu.mo_range('rr_mo1', 100, 100, 400, 700) id ORDER BY id)
     = ARRAY(SELECT id FROM approx_gpu.mo_range('rr_mo2', 100, 100, 400, 700) id ORDER BY id) AS same_objects;
SELECT approx_gpu.mo_drop('rr_mo1'), approx_gpu.mo_drop('rr_mo2');

-- serial (the backend alone) = parallel
SET approx_gpu.read_workers = 0;
SELECT approx_gpu.hash_join_count('rr_b', 'key', 'rr_a', 'key') = (SELECT count(*) FROM rr_b JOIN rr_a USING (key)) AS serial_count;
SELECT approx_gpu.last_run()->>'read' AS read, approx_gpu.last_run()->>'read_workers' AS workers;
SELECT * FROM rr_topk_check('rr_a', 'value', 'score', 10);
-- more workers than the server can start: capped, same answer
SET approx_gpu.read_workers = 1000;
SELECT approx_gpu.hash_join_count('rr_b', 'key', 'rr_a', 'key') = (SELECT count(*) FROM rr_b JOIN rr_a USING (key)) AS many_workers_count;
SELECT (approx_gpu.last_run()->>'read_workers')::int <= current_setting('max_parallel_workers')::int AS capped;
SET approx_gpu.read_workers = 2;
-- SERIALIZABLE reads take predicate locks tuple by tuple: through the table AM's slots, same answers
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM rr_topk_check('rr_a', 'value', 'score', 10);
SELECT approx_gpu.hash_join_count('rr_b', 'key', 'rr_a', 'key') = (SELECT count(*) FROM rr_b JOIN rr_a USING (key)) AS serializable_count;
COMMIT;

-- ---- shapes of tables ------------------------------------------------------------------------
-- empty
CREATE TABLE rr_empty (id bigint, score float8, s int, d int);
SELECT approx_gpu.hash_join_count('rr_empty', 'id', 'rr_a', 'key') AS empty_build,
       approx_gpu.topk('rr_empty', 'id', 'score', 3) IS NULL AS empty_topk,
       approx_gpu.reachability_count('rr_empty', 's', 'd') AS empty_closure;
-- dropped columns before, between and after the read ones; a TOASTed column beside them
CREATE TABLE rr_wide (gone1 text, id bigint, gone2 int, big text, score float8, gone3 int);
INSERT INTO rr_wide SELECT 'x', i, i, (SELECT string_agg(md5(i::text || j::text), '') FROM generate_series(1, 100) j),
                           (i * 7919 % 1000)::float8, i
  FROM generate_series(1, 2000) i;
ALTER TABLE rr_wide DROP COLUMN gone1, DROP COLUMN gone2, DROP COLUMN gone3;
SELECT pg_total_relation_size(reltoastrelid) > 1000000 AS toasted FROM pg_class WHERE relname = 'rr_wide';
SELECT * FROM rr_topk_check('rr_wide', 'id', 'score', 25);
SELECT rr_error($$SELECT approx_gpu.topk('rr_wide', 'gone1', 'score', 3)$$) AS dropped_column;
-- partitioned: every partition, including one with its own column order and
-- dropped columns, and a default partition
CREATE TABLE rr_part (id bigint, score float8, tag text) PARTITION BY RANGE (id);
CREATE TABLE rr_part_1 PARTITION OF rr_part FOR VALUES FROM (0) TO (1000);
CREATE TABLE rr_part_2 (tag text, junk int, score float8, id bigint);
ALTER TABLE rr_part_2 DROP COLUMN junk;
ALTER TABLE rr_part ATTACH PARTITION rr_part_2 FOR VALUES FROM (1000) TO (2000);
CREATE TABLE rr_part_d PARTITION OF rr_part DEFAULT;
INSERT INTO rr_part SELECT i, (i * 31 % 977)::float8, 't' FROM generate_series(0, 2999) i;
SELECT * FROM rr_topk_check('rr_part', 'id', 'score', 50);
SELECT * FROM rr_join_check('rr_part', 'id', 'id', 'rr_a', 'value', 'key');
-- inheritance: the parent and its children, like FROM rr_inh
CREATE TABLE rr_inh (id bigint, score float8);
CREATE TABLE rr_inh_c1 (extra int) INHERITS (rr_inh);
CREATE TABLE rr_inh_c2 () INHERITS (rr_inh);
INSERT INTO rr_inh SELECT i, i FROM generate_series(1, 100) i;
INSERT INTO rr_inh_c1 SELECT i, i * 3, 0 FROM generate_series(101, 200) i;
INSERT INTO rr_inh_c2 SELECT i, -i FROM generate_series(201, 300) i;
SELECT * FROM rr_topk_check('rr_inh', 'id', 'score', 120);
SELECT (approx_gpu.bottomk('rr_inh', 'id', 'score', 1))[1].id AS lowest_from_a_child;
-- a temporary table: only this backend can read it (no workers)
CREATE TEMP TABLE rr_temp AS SELECT i::bigint AS id, (i % 17)::float8 AS score FROM generate_series(1, 30000) i;
SELECT * FROM rr_topk_check('rr_temp', 'id', 'score', 5);
SELECT approx_gpu.topk('rr_temp', 'id', 'score', 1) IS NOT NULL AS temp_read;
SELECT approx_gpu.last_run()->>'read' AS read, approx_gpu.last_run()->>'read_workers' AS workers;
-- a view and a materialized view
CREATE VIEW rr_view AS SELECT value AS id, score FROM rr_a WHERE key < 100;
SELECT * FROM rr_topk_check('rr_view', 'id', 'score', 5);
SELECT approx_gpu.topk('rr_view', 'id', 'score', 1) IS NOT NULL AS view_read;
SELECT approx_gpu.last_run()->>'read' AS read;
CREATE MATERIALIZED VIEW rr_mat AS SELECT value AS id, score FROM rr_a WHERE key < 100;
SELECT * FROM rr_topk_check('rr_mat', 'id', 'score', 5);
CREATE MATERIALIZED VIEW rr_mat_empty AS SELECT 1::bigint AS id, 1::float8 AS score WITH NO DATA;
SELECT rr_error($$SELECT approx_gpu.topk('rr_mat_empty', 'id', 'score', 3)$$) AS not_populated;
-- integer types and domains
CREATE DOMAIN rr_dom AS int2;
CREATE TABLE rr_types (a int2, b int4, c rr_dom, f float4);
INSERT INTO rr_types SELECT i, i * 1000, (i % 50), i / 3.0 FROM generate_series(1, 300) i;
SELECT * FROM rr_topk_check('rr_types', 'a', 'f', 9);
SELECT * FROM rr_join_check('rr_types', 'c', 'b', 'rr_types', 'c', 'a');

-- ---- the statement's snapshot: another session's committed UPDATE stays invisible -----------
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE TABLE rr_snap AS SELECT i::bigint AS id, i::float8 AS score FROM generate_series(1, 50000) i;
SELECT dblink_connect('rr_other', format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                          split_part(current_setting('unix_socket_directories'), ',', 1))) AS connected;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT (approx_gpu.topk('rr_snap', 'id', 'score', 1))[1].id AS top_before;
SELECT dblink_exec('rr_other', 'UPDATE rr_snap SET score = 1e9 WHERE id = 5') AS other_session;
SELECT (approx_gpu.topk('rr_snap', 'id', 'score', 1))[1].id AS top_in_snapshot;
SELECT (approx_gpu.last_run()->>'read_workers')::int > 0 AS workers_helped;
COMMIT;
SELECT (approx_gpu.topk('rr_snap', 'id', 'score', 1))[1].id AS top_after_commit;
SELECT dblink_disconnect('rr_other');

-- ---- privileges and row-level security --------------------------------------------------------
CREATE ROLE regress_rr_none;
CREATE ROLE regress_rr_cols;
CREATE ROLE regress_rr_rls;
GRANT USAGE ON SCHEMA approx_gpu TO regress_rr_none, regress_rr_cols, regress_rr_rls;
GRANT SELECT (id, score) ON rr_wide TO regress_rr_cols;
CREATE TABLE rr_secret AS SELECT i::bigint AS id, i::float8 AS score, (i % 2 = 1) AS visible FROM generate_series(1, 1000) i;
ALTER TABLE rr_secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY rr_even ON rr_secret FOR SELECT USING (visible);
GRANT SELECT ON rr_secret TO regress_rr_rls;
SET ROLE regress_rr_none;
SELECT rr_error($$SELECT approx_gpu.topk('rr_wide', 'id', 'score', 3)$$) AS no_privilege;
SELECT rr_error($$SELECT approx_gpu.hash_join_count('rr_a', 'key', 'rr_b', 'key')$$) AS no_privilege_join;
RESET ROLE;
SET ROLE regress_rr_cols;
SELECT (approx_gpu.topk('rr_wide', 'id', 'score', 1))[1].id IS NOT NULL AS column_privilege_reads;
SELECT rr_error($$SELECT approx_gpu.topk('rr_wide', 'id', 'big', 3)$$) AS other_column_not_granted;
RESET ROLE;
SET ROLE regress_rr_rls;
SELECT approx_gpu.topk('rr_secret', 'id', 'score', 3) = approx_gpu.topk(id, score, 3) AS rls_same_as_query
  FROM rr_secret;
SELECT (approx_gpu.topk('rr_secret', 'id', 'score', 1))[1].id AS rls_top;
SELECT approx_gpu.last_run()->>'read' AS read;
RESET ROLE;
SELECT (approx_gpu.topk('rr_secret', 'id', 'score', 1))[1].id AS owner_top;
DROP TABLE rr_secret;
REVOKE ALL ON rr_wide FROM regress_rr_cols;
REVOKE USAGE ON SCHEMA approx_gpu FROM regress_rr_none, regress_rr_cols, regress_rr_rls;
DROP ROLE regress_rr_none, regress_rr_cols, regress_rr_rls;

-- ---- table synopses: sampled by the reader ---------------------------------------------------
-- The sample is the rows of smallest hash(seed, TID): with a fixed seed the
-- backend alone, parallel workers and the SERIALIZABLE slot path draw the
-- same rows, so the stored synopses are equal byte for byte. NULLs, numerics,
-- dates, texts, TOASTed values beside them and dead tuples.
SET approx_gpu.random_seed = 7;
CREATE TABLE rr_syn AS SELECT i AS id, round((random() * 1000)::numeric, 2) AS amount, random() * 100 AS x,
    date '2024-01-01' + i % 366 AS day, (ARRAY['red', 'green', 'blue'])[1 + i % 3] AS color,
    repeat(md5(i::text), 200) AS note
  FROM generate_series(1, 60000) i;
UPDATE rr_syn SET x = NULL, color = NULL WHERE id % 97 = 0;
DELETE FROM rr_syn WHERE id % 1000 = 5;
CREATE FUNCTION rr_synopsis(n text) RETURNS bytea LANGUAGE sql AS
  $$SELECT approx_gpu.kde_synopsis_to_bytea(synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = n$$;
SELECT (approx_gpu.create_synopsis('rr_syn_par', 'rr_syn', ARRAY['amount', 'x', 'day', 'color']::name[], 2000)->>'N')::int
  AS rows_built;
SELECT approx_gpu.last_run()->>'read' AS read, (approx_gpu.last_run()->>'read_workers')::int > 0 AS workers_helped;
SET approx_gpu.read_workers = 0;
SELECT (approx_gpu.create_synopsis('rr_syn_ser', 'rr_syn', ARRAY['amount', 'x', 'day', 'color']::name[], 2000)->>'N')::int
  AS rows_built;
SELECT approx_gpu.last_run()->>'read' AS read;
SET approx_gpu.read_workers = 2;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT (approx_gpu.create_synopsis('rr_syn_slots', 'rr_syn', ARRAY['amount', 'x', 'day', 'color']::name[], 2000)->>'N')::int
  AS rows_built;
COMMIT;
SELECT rr_synopsis('rr_syn_par') = rr_synopsis('rr_syn_ser') AS parallel_equals_serial,
       rr_synopsis('rr_syn_par') = rr_synopsis('rr_syn_slots') AS slots_equal;
SELECT (approx_gpu.refresh_synopsis('rr_syn_ser')->>'N')::int AS refreshed;
SELECT rr_synopsis('rr_syn_par') = rr_synopsis('rr_syn_ser') AS refresh_draws_the_same;
SET approx_gpu.random_seed = 8;
SELECT (approx_gpu.create_synopsis('rr_syn_8', 'rr_syn', ARRAY['amount', 'x', 'day', 'color']::name[], 2000)->>'N')::int
  AS rows_built;
SELECT rr_synopsis('rr_syn_par') <> rr_synopsis('rr_syn_8') AS another_seed_another_sample;
-- a sample as large as the table holds every row once: the relation form
-- answers as the query form does
SET approx_gpu.random_seed = 7;
CREATE TABLE rr_syn_small AS SELECT id, amount FROM rr_syn WHERE id <= 3000;
SELECT (approx_gpu.create_synopsis('rr_syn_all', 'rr_syn_small', ARRAY['id', 'amount']::name[], 5000)->>'N')::int
  AS rows_built;
SELECT (approx_gpu.create_synopsis('rr_syn_q', 'SELECT id, amount FROM rr_syn_small', 5000)->>'N')::int AS rows_built;
SELECT abs(approx_gpu.approx_sum('rr_syn_all', 'amount', p) - approx_gpu.approx_sum('rr_syn_q', 'amount', p))
         <= 1e-9 * abs(approx_gpu.approx_sum('rr_syn_q', 'amount', p)) AS sum_as_query,
       abs(approx_gpu.approx_count('rr_syn_all', p) - approx_gpu.approx_count('rr_syn_q', p))
         <= 1e-9 * approx_gpu.approx_count('rr_syn_q', p) AS count_as_query
  FROM (VALUES ('{"id": [100, 2000], "amount": [100, 600]}'::jsonb)) v(p);
-- a value that is not finite, found by a worker, names its column
UPDATE rr_syn SET amount = 'NaN' WHERE id = 59999;
SELECT rr_error($$SELECT approx_gpu.create_synopsis('rr_syn_nan', 'rr_syn', ARRAY['amount']::name[], 100)$$) AS nan_amount;
UPDATE rr_syn SET amount = 1, day = 'infinity' WHERE id = 59999;
SELECT rr_error($$SELECT approx_gpu.create_synopsis('rr_syn_inf', 'rr_syn', ARRAY['id', 'day']::name[], 100)$$) AS infinite_day;
SELECT approx_gpu.drop_synopsis(n) FROM unnest(ARRAY['rr_syn_par', 'rr_syn_ser', 'rr_syn_slots', 'rr_syn_8', 'rr_syn_all',
                                                     'rr_syn_q']) n;
DROP TABLE rr_syn, rr_syn_small;
DROP FUNCTION rr_synopsis(text);
RESET approx_gpu.random_seed;

-- ---- errors --------------------------------------------------------------------------------
SELECT rr_error($$SELECT approx_gpu.hash_join_count('rr_a', 'no_such', 'rr_b', 'key')$$) AS unknown_column;
SELECT rr_error($$SELECT approx_gpu.hash_join_count('rr_a', 'ctid', 'rr_b', 'key')$$) AS system_column;
SELECT rr_error($$SELECT approx_gpu.hash_join_count('rr_a', 'score', 'rr_b', 'key')$$) AS float_key;
SELECT rr_error($$SELECT approx_gpu.topk('rr_view', 'score', 'id', 3)$$) AS float_id;
SELECT rr_error($$SELECT approx_gpu.topk('rr_part_1', 'id', 'tag', 3)$$) AS text_score;
SELECT rr_error($$SELECT approx_gpu.topk('rr_a', 'value', 'score', 0)$$) AS k_zero;
CREATE INDEX rr_a_key ON rr_a (key);
SELECT rr_error($$SELECT approx_gpu.topk('rr_a_key', 'key', 'key', 1)$$) AS an_index;
SELECT rr_error($$SELECT approx_gpu.reachability_count(0::oid::regclass, 's', 'd')$$) AS oid_zero;
SELECT rr_error($$SELECT approx_gpu.mo_load('rr_no_such_index', 'rr_pos', 'id', 'x', 'y')$$) AS unknown_index;
SELECT approx_gpu.topk(NULL::regclass, 'id', 'score', 3) IS NULL AS strict_null;
SELECT rr_error($$SET approx_gpu.read_workers = -2$$) AS bad_setting;
-- NaN and infinities: an ERROR raised in a parallel worker reaches the caller as that ERROR
CREATE TABLE rr_nan AS SELECT i::bigint AS id, i::float8 AS x, i::float8 AS y FROM generate_series(1, 40000) i;
UPDATE rr_nan SET x = 'NaN' WHERE id = 39999;
SELECT rr_error($$SELECT approx_gpu.topk('rr_nan', 'id', 'x', 3)$$) AS nan_score;
UPDATE rr_nan SET x = 'Infinity' WHERE id = 39999;
SELECT (approx_gpu.topk('rr_nan', 'id', 'x', 1))[1].id AS infinity_ranks_first;
SELECT approx_gpu.mo_create('rr_mo3', 0, 0, 100000, 100000, 16, 16);
SELECT rr_error($$SELECT approx_gpu.mo_load('rr_mo3', 'rr_nan', 'id', 'x', 'y')$$) AS infinite_position;
SELECT approx_gpu.mo_drop('rr_mo3');

-- ---- cancel: statement_timeout during reads far longer than a second on either engine --------
CREATE TABLE rr_one AS SELECT 1::bigint AS key;
SET statement_timeout = '1s';
SELECT sum(approx_gpu.hash_join_count('rr_one', 'key', 'rr_a', 'key')) FROM generate_series(1, 1000000);
RESET statement_timeout;
SELECT 1 AS still_alive;
-- the workers of the cancelled read are gone (they stop within moments)
DO $$ BEGIN
  FOR i IN 1..100 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'parallel worker' AND datname = current_database());
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT count(*) AS leftover_workers FROM pg_stat_activity WHERE backend_type = 'parallel worker' AND datname = current_database();
SELECT approx_gpu.hash_join_count('rr_one', 'key', 'rr_a', 'key') > 0 AS reads_again;

-- ---- topk(relation): every participant of the read keeps only its k best rows ----------------
-- (issue 39): every row is read and checked, at most k per participant reach the engine
-- (the CPU engine's read: device = gpu ships every row to the GPU's selection)
SET approx_gpu.read_workers = 2;
SET approx_gpu.device = cpu;
SELECT * FROM rr_topk_check('rr_a', 'value', 'score', 40);
SELECT approx_gpu.bottomk('rr_a', 'value', 'score', 40) IS NOT NULL AS bounded_read;
SELECT (approx_gpu.last_run()->>'rows')::bigint = (SELECT count(*) FROM rr_a WHERE value IS NOT NULL AND score IS NOT NULL) AS every_row_read,
       (approx_gpu.last_run()->>'rows_skipped')::bigint = (SELECT count(*) FROM rr_a WHERE value IS NULL OR score IS NULL) AS nulls_skipped,
       (approx_gpu.last_run()->>'rows_selected_from')::int <= 40 * (1 + (approx_gpu.last_run()->>'read_workers')::int) AS at_most_k_each;
RESET approx_gpu.read_workers;
RESET approx_gpu.device;
-- auto workers (issue 39): none under 8 x min_parallel_table_scan_size, above it one for every
-- 4 x, capped by max_parallel_workers_per_gather (PostgreSQL's rule would plan 4 here)
SET min_parallel_table_scan_size = '8kB';
SET max_parallel_workers_per_gather = 6;
SELECT approx_gpu.topk('rr_a', 'value', 'score', 3) IS NOT NULL AS read_auto;
SELECT (approx_gpu.last_run()->>'read_workers_planned')::int = least(6, current_setting('max_parallel_workers')::int) AS planned_all_allowed,
       (SELECT pg_relation_size('rr_a') / 8192) BETWEEN 216 AND 647 AS postgres_rule_says_4;
SET min_parallel_table_scan_size = '8MB';
SELECT approx_gpu.topk('rr_a', 'value', 'score', 3) IS NOT NULL AS read_small;
SELECT (approx_gpu.last_run()->>'read_workers_planned')::int AS small_table_workers;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

DROP TABLE rr_a, rr_b, rr_edges, rr_pos, rr_empty, rr_wide, rr_part, rr_inh CASCADE;
DROP TABLE rr_types, rr_snap, rr_nan, rr_one;
DROP DOMAIN rr_dom;
DROP FUNCTION rr_error(text), rr_join_check(regclass, name, name, regclass, name, name),
  rr_topk_check(regclass, name, name, int), rr_closure_check(regclass, name, name);
DROP EXTENSION dblink;
