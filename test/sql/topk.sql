-- Top-k: the topk/bottomk aggregates and topk_nra. Every answer is compared
-- with plain SQL (ORDER BY ... LIMIT k) and printed as a boolean; errors print
-- their SQLSTATE and message. Output is engine-independent.
SET extra_float_digits = 0;
SELECT setseed(0.31);
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

-- 100000 rows (more than the 65536 a state holds before it prunes): many
-- ties, negative scores, ±Infinity, -0 and +0; ids unique, not in row order
CREATE TABLE tk AS
  SELECT ((i * 7919) % 100003) - 50000 AS id,
         CASE WHEN i % 97 = 0 THEN 'Infinity'::float8
              WHEN i % 89 = 0 THEN '-Infinity'::float8
              WHEN i % 83 = 0 THEN '-0'::float8
              ELSE floor(random() * 50) - 25 END AS score,
         i % 3 AS grp
  FROM generate_series(1, 100000) i;
ANALYZE tk;

-- true when got is exactly ORDER BY score <dir>, id LIMIT k over tbl (rows with a NULL skipped)
CREATE FUNCTION pg_temp.same(got approx_gpu.scored[], tbl text, k int, dir text, filter text DEFAULT 'true')
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE want approx_gpu.scored[];
BEGIN
  EXECUTE format('SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY score %s, id) FROM '
                 '(SELECT id, score FROM %s WHERE id IS NOT NULL AND score IS NOT NULL AND (%s) '
                 'ORDER BY score %s, id LIMIT %s) s', dir, tbl, filter, dir, k) INTO want;
  RETURN got IS NOT DISTINCT FROM want;
END $$;

-- topk and bottomk equal ORDER BY ... LIMIT k; k > rows returns every row
SELECT k, pg_temp.same(approx_gpu.topk(id, score, k), 'tk', k, 'DESC') AS topk_ok,
       pg_temp.same(approx_gpu.bottomk(id, score, k), 'tk', k, 'ASC') AS bottomk_ok,
       cardinality(approx_gpu.topk(id, score, k)) AS n
FROM tk, (VALUES (1), (10), (1000), (20000), (200000)) v(k) GROUP BY k ORDER BY k;
-- the best and worst rows are the infinities
SELECT (approx_gpu.topk(id, score, 1))[1].score = 'Infinity' AS top_is_inf,
       (approx_gpu.bottomk(id, score, 1))[1].score = '-Infinity' AS bottom_is_minus_inf FROM tk;
-- grouped
SELECT grp, pg_temp.same(approx_gpu.topk(id, score, 50), 'tk', 50, 'DESC', 'grp = ' || grp) AS topk_ok,
       pg_temp.same(approx_gpu.bottomk(id, score, 7), 'tk', 7, 'ASC', 'grp = ' || grp) AS bottomk_ok
FROM tk GROUP BY grp ORDER BY grp;
-- all scores equal: the answer is the k smallest ids
SELECT approx_gpu.topk(id, 1.0::float8, 3) = ARRAY[(1, 1.0), (2, 1.0), (3, 1.0)]::approx_gpu.scored[] AS ties_by_id
FROM generate_series(1, 100) id;

-- a parallel plan (Partial Aggregate under Gather, states serialised) gives the same answer
CREATE FUNCTION pg_temp.plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; p text := '';
BEGIN FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP p := p || line || ' '; END LOOP; RETURN p; END $$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.plan('SELECT approx_gpu.topk(id, score, 10) FROM tk') ~ 'Gather.*Partial Aggregate' AS parallel_plan;
SELECT pg_temp.same(approx_gpu.topk(id, score, 10), 'tk', 10, 'DESC') AS parallel_topk,
       pg_temp.same(approx_gpu.bottomk(id, score, 30000), 'tk', 30000, 'ASC') AS parallel_bottomk FROM tk;
SELECT grp, pg_temp.same(approx_gpu.topk(id, score, 100), 'tk', 100, 'DESC', 'grp = ' || grp) AS parallel_grouped
FROM tk GROUP BY grp ORDER BY grp;
-- states that pruned before they are combined: 400000 rows
-- whose scores fall in scan order, so the participant that reads the first
-- block holds the whole answer and its threshold (its k-th pair) is in it.
-- Each query is plain SQL (a PL/pgSQL helper such as pg_temp.same is
-- PARALLEL UNSAFE and would make the whole statement serial) and its own plan
-- is checked to be a Partial Aggregate under Gather.
CREATE TABLE tko AS SELECT g::bigint AS id, (400000 - g)::float8 AS v FROM generate_series(1, 400000) g;
ANALYZE tko;
\set q 'SELECT cardinality(approx_gpu.topk(id, v, 5)) AS n, approx_gpu.topk(id, v, 5) = ARRAY[(1, 399999), (2, 399998), (3, 399997), (4, 399996), (5, 399995)]::approx_gpu.scored[] AS topk_pruned, approx_gpu.bottomk(id, v, 5) = ARRAY[(400000, 0), (399999, 1), (399998, 2), (399997, 3), (399996, 4)]::approx_gpu.scored[] AS bottomk_pruned FROM tko'
SELECT pg_temp.plan(:'q') ~ 'Gather.*Partial Aggregate' AS parallel_plan;
:q;
-- every score tied: the threshold pairs tie with the answer
\set q 'SELECT approx_gpu.topk(id, 1.0::float8, 3) = ARRAY[(1, 1.0), (2, 1.0), (3, 1.0)]::approx_gpu.scored[] AS ties, approx_gpu.bottomk(-id, 2.0::float8, 2) = ARRAY[(-400000, 2.0), (-399999, 2.0)]::approx_gpu.scored[] AS bottom_ties FROM tko'
SELECT pg_temp.plan(:'q') ~ 'Gather.*Partial Aggregate' AS parallel_plan;
:q;
-- every pair the same (id and score): k copies of it
\set q 'SELECT approx_gpu.topk(1::bigint, 1.0::float8, 3) = ARRAY[(1, 1.0), (1, 1.0), (1, 1.0)]::approx_gpu.scored[] AS duplicates, approx_gpu.bottomk(7::bigint, v, 2) = ARRAY[(7, 0), (7, 1)]::approx_gpu.scored[] AS same_id FROM tko'
SELECT pg_temp.plan(:'q') ~ 'Gather.*Partial Aggregate' AS parallel_plan;
:q;
-- duplicate ids and tied scores; k = 20000 prunes at 80000 pairs
\set q 'SELECT approx_gpu.topk(id / 3, floor(v / 7), 7) = (SELECT array_agg(ROW(i, s)::approx_gpu.scored ORDER BY s DESC, i) FROM (SELECT id / 3 AS i, floor(v / 7) AS s FROM tko ORDER BY 2 DESC, 1 LIMIT 7) w) AS topk_dups, approx_gpu.bottomk(id % 1000, floor(v / 1000), 20000) = (SELECT array_agg(ROW(i, s)::approx_gpu.scored ORDER BY s, i) FROM (SELECT id % 1000 AS i, floor(v / 1000) AS s FROM tko ORDER BY 2, 1 LIMIT 20000) w) AS bottomk_dups FROM tko'
SELECT pg_temp.plan(:'q') ~ 'Gather.*Partial Aggregate' AS parallel_plan;
:q;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- NULL ids or scores are skipped (and counted); no rows gives NULL
CREATE TABLE tk_nulls AS SELECT id, score FROM tk WHERE grp = 0
  UNION ALL SELECT NULL, 1e300 UNION ALL SELECT 7, NULL UNION ALL SELECT NULL, NULL;
SELECT pg_temp.same(approx_gpu.topk(id, score, 5), 'tk_nulls', 5, 'DESC') AS nulls_skipped FROM tk_nulls;
SELECT approx_gpu.last_run()->>'function' AS function, (approx_gpu.last_run()->>'rows_skipped')::int AS rows_skipped;
SELECT approx_gpu.topk(id, score, 3) IS NULL AS empty_is_null FROM tk WHERE false;
SELECT approx_gpu.bottomk(id, score, 3) IS NULL AS only_nulls_is_null FROM tk_nulls WHERE id IS NULL;

-- aggregate errors
SELECT pg_temp.err($$SELECT approx_gpu.topk(id, score, 0) FROM tk$$);
SELECT pg_temp.err($$SELECT approx_gpu.bottomk(id, score, -3) FROM tk$$);
SELECT pg_temp.err($$SELECT approx_gpu.topk(id, score, CASE WHEN id < 0 THEN 5 ELSE 6 END) FROM tk$$);
SELECT pg_temp.err($$SELECT approx_gpu.topk(id, score, NULL) FROM tk$$);
SELECT pg_temp.err($$SELECT approx_gpu.topk(id, CASE WHEN id = 7 THEN 'NaN'::float8 ELSE score END, 5) FROM tk$$);
SELECT pg_temp.err($$SELECT approx_gpu.bottomk(id::bigint, 'NaN'::float8, 5) FROM generate_series(1, 3) id$$);

-- ---- topk_nra ------------------------------------------------------------------------

-- true when topk_nra returns exactly (in its order)
--   ORDER BY coalesce(c1, min(c1)) + coalesce(c2, min(c2)) + ... DESC, id LIMIT k
-- (rows with a NULL id are no objects)
CREATE FUNCTION pg_temp.nra_ok(tbl text, cols text[], k int, batch int DEFAULT 1024, idcol text DEFAULT 'id')
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE expr text; want approx_gpu.scored[]; got approx_gpu.scored[];
BEGIN
  SELECT string_agg(format('coalesce(%I::float8, (SELECT min(%I)::float8 FROM %s WHERE %I IS NOT NULL))',
                           c, c, tbl, idcol), ' + ' ORDER BY o)
    INTO expr FROM unnest(cols) WITH ORDINALITY u(c, o);
  EXECUTE format('SELECT array_agg(ROW(i, s)::approx_gpu.scored ORDER BY s DESC, i) FROM '
                 '(SELECT %I AS i, %s AS s FROM %s WHERE %I IS NOT NULL ORDER BY s DESC, i LIMIT %s) q',
                 idcol, expr, tbl, idcol, k) INTO want;
  EXECUTE format('SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY o) FROM '
                 'approx_gpu.topk_nra(%L, %L, %L, %s, %s) WITH ORDINALITY AS t(id, score, o)',
                 tbl, idcol, cols, k, batch) INTO got;
  RETURN got IS NOT DISTINCT FROM want;
END $$;
CREATE FUNCTION pg_temp.stat(key text) RETURNS bigint LANGUAGE sql AS
  $$ SELECT (approx_gpu.last_run()->>key)::bigint $$;

-- four distributions, 5000 objects, a unique id
CREATE TABLE nra_u AS SELECT i AS id, random() AS a, random() AS b, random() AS c, random() AS d
  FROM generate_series(1, 5000) i;
CREATE TABLE nra_corr AS SELECT i AS id, x AS a, x + 0.05 * random() AS b, x + 0.05 * random() AS c
  FROM (SELECT i, random() AS x FROM generate_series(1, 5000) i) s;
CREATE TABLE nra_anti AS SELECT i AS id, x AS a, 1 - x + 0.02 * random() AS b, 0.5 + 0.01 * random() AS c
  FROM (SELECT i, random() AS x FROM generate_series(1, 5000) i) s;
CREATE TABLE nra_zipf AS  -- integer scores, few distinct values: many ties
  SELECT i AS id, floor(20 / (1 + floor(1 / (random() + 1e-3))))::int AS a,
         floor(20 / (1 + floor(1 / (random() + 1e-3))))::int AS b,
         floor(20 / (1 + floor(1 / (random() + 1e-3))))::int AS c
  FROM generate_series(1, 5000) i;
CREATE TABLE nra_nulls AS  -- 20% missing scores; some objects have none
  SELECT i AS id, CASE WHEN random() < 0.8 THEN random() END AS a,
         CASE WHEN random() < 0.8 THEN random() END AS b, CASE WHEN random() < 0.8 THEN random() END AS c
  FROM generate_series(1, 5000) i;
ALTER TABLE nra_u ADD PRIMARY KEY (id);
ALTER TABLE nra_corr ADD PRIMARY KEY (id);
ALTER TABLE nra_anti ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX ON nra_zipf (id);
ALTER TABLE nra_nulls ADD PRIMARY KEY (id);
ANALYZE nra_u, nra_corr, nra_anti, nra_zipf, nra_nulls;

-- without indexes on the score columns (each cursor sorts) ...
SELECT t, k, pg_temp.nra_ok(t, cols, k, batch) AS exact
FROM (VALUES ('nra_u', ARRAY['a', 'b', 'c', 'd']), ('nra_corr', ARRAY['a', 'b', 'c']),
             ('nra_anti', ARRAY['a', 'b', 'c']), ('nra_zipf', ARRAY['a', 'b', 'c']),
             ('nra_nulls', ARRAY['a', 'b', 'c'])) v(t, cols),
     (VALUES (1, 7), (10, 64), (100, 1024)) w(k, batch)
ORDER BY t, k;
-- ... and with them (backward index scans)
CREATE INDEX ON nra_u (a); CREATE INDEX ON nra_u (b); CREATE INDEX ON nra_u (c); CREATE INDEX ON nra_u (d);
CREATE INDEX ON nra_zipf (a); CREATE INDEX ON nra_zipf (b); CREATE INDEX ON nra_zipf (c);
CREATE INDEX ON nra_nulls (a) INCLUDE (id); CREATE INDEX ON nra_nulls (b); CREATE INDEX ON nra_nulls (c);
SELECT t, k, pg_temp.nra_ok(t, cols, k, batch) AS exact_indexed
FROM (VALUES ('nra_u', ARRAY['a', 'b', 'c', 'd']), ('nra_zipf', ARRAY['a', 'b', 'c']),
             ('nra_nulls', ARRAY['a', 'b', 'c'])) v(t, cols),
     (VALUES (1, 3), (10, 100), (100, 1024)) w(k, batch)
ORDER BY t, k;
-- a column twice, one column, the columns in another order
SELECT pg_temp.nra_ok('nra_u', ARRAY['a', 'a', 'b'], 20) AS repeated_column,
       pg_temp.nra_ok('nra_u', ARRAY['c'], 20) AS one_column,
       pg_temp.nra_ok('nra_nulls', ARRAY['c', 'a', 'b'], 20, 50) AS reordered;

-- NRA stops early on independent lists and reads each winner once
SELECT count(*) AS rows FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a', 'b', 'c', 'd'], 100);
SELECT pg_temp.stat('depth_1') < 5000 AS stopped_early, pg_temp.stat('depth_1') % 1024 = 0 AS whole_batches,
       pg_temp.stat('random_accesses') AS random_accesses,
       pg_temp.stat('rounds') = pg_temp.stat('depth_1') / 1024 AS rounds_match_depth;

-- How each list is read (last_run(): read_<j> = 2 index-only scan, 1 index
-- scan with a heap fetch per entry, 0 cursor): a B-tree index whose first key
-- is the column, read in descending order; an index with the id column
-- (a key or INCLUDE column) answers from its tuples where the heap page is
-- all-visible; a DESC index is read forward; a partial index, an expression
-- index and a column without index leave the list to a cursor.
CREATE TABLE nra_ix AS
  SELECT i AS id, random() AS a, random() AS b, (random() * 50)::int AS c,
         CASE WHEN random() < 0.2 THEN NULL ELSE random()::real END AS d, random() AS e,
         (random() * 1e6)::bigint AS f, random() AS g
  FROM generate_series(1, 5000) i;
ALTER TABLE nra_ix ADD PRIMARY KEY (id);
CREATE INDEX ON nra_ix (a) INCLUDE (id);
CREATE INDEX ON nra_ix (b);
CREATE INDEX ON nra_ix (c DESC, id);
CREATE INDEX ON nra_ix (d DESC) INCLUDE (id);  -- NULLS FIRST: skipped by the scan key
CREATE INDEX ON nra_ix (e) WHERE e > 0.5;
CREATE INDEX ON nra_ix ((e * 2));
CREATE INDEX ON nra_ix (f, id);
CREATE INDEX ON nra_ix (id, g);  -- g not its first key
VACUUM ANALYZE nra_ix;
SELECT k, batch, pg_temp.nra_ok('nra_ix', ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g'], k, batch) AS exact
FROM (VALUES (1, 1), (10, 7), (100, 256)) w(k, batch) ORDER BY k;
SELECT approx_gpu.last_run()->>'read' AS read, pg_temp.stat('read_1') AS a, pg_temp.stat('read_2') AS b,
       pg_temp.stat('read_3') AS c, pg_temp.stat('read_4') AS d, pg_temp.stat('read_5') AS e,
       pg_temp.stat('read_6') AS f, pg_temp.stat('read_7') AS g;
SELECT pg_temp.nra_ok('nra_ix', ARRAY['d', 'c'], 30, 16) AS exact_desc_nulls,
       approx_gpu.last_run()->>'read' AS read;
SELECT pg_temp.nra_ok('nra_ix', ARRAY['e', 'g'], 30, 16) AS exact_no_usable_index,
       approx_gpu.last_run()->>'read' AS read, pg_temp.stat('heap_fetches') AS heap_fetches;
-- index-only after VACUUM: no heap fetch
SELECT pg_temp.nra_ok('nra_ix', ARRAY['a', 'f'], 20, 64) AS exact_index_only,
       pg_temp.stat('read_1') AS a, pg_temp.stat('read_2') AS f, pg_temp.stat('heap_fetches') AS heap_fetches;
-- updated and deleted rows after the VACUUM (no autovacuum): the pages are no
-- longer all-visible, the dead entries are fetched and skipped, same answer
ALTER TABLE nra_ix SET (autovacuum_enabled = off);
UPDATE nra_ix SET a = a + 0.5, f = f + 500000 WHERE id % 7 = 0;
DELETE FROM nra_ix WHERE id % 11 = 0;
SELECT k, pg_temp.nra_ok('nra_ix', ARRAY['a', 'f', 'b', 'd'], k, 32) AS exact_after_updates,
       pg_temp.stat('heap_fetches') > 0 AS heap_fetched
FROM (VALUES (1), (25), (200)) w(k) ORDER BY k;
-- in a transaction: its own inserts, updates and deletes are seen
BEGIN;
INSERT INTO nra_ix (id, a, b, c, d, e, f, g)
  SELECT i, 2 + random(), random(), 60, 2, 0, 2000000, 0 FROM generate_series(100001, 100003) i;
DELETE FROM nra_ix WHERE id = (SELECT id FROM nra_ix WHERE id < 100001 ORDER BY a DESC LIMIT 1);
UPDATE nra_ix SET b = 5 WHERE id = 12;
SELECT array_agg(id ORDER BY id) AS own_rows FROM approx_gpu.topk_nra('nra_ix', 'id', ARRAY['a', 'f', 'b'], 3, 2);
SELECT k, pg_temp.nra_ok('nra_ix', ARRAY['a', 'f', 'b', 'd', 'c'], k, 8) AS exact_in_transaction
FROM (VALUES (1), (10), (100)) w(k) ORDER BY k;
ROLLBACK;
SELECT pg_temp.nra_ok('nra_ix', ARRAY['a', 'f', 'b', 'd', 'c'], 10, 8) AS exact_after_rollback;
-- a table with inheritance children: the cursors read the children too
CREATE TABLE nra_ix_child () INHERITS (nra_ix);
INSERT INTO nra_ix_child (id, a, b) VALUES (200001, 3, 3), (200002, 2.9, 0);
SELECT pg_temp.nra_ok('nra_ix', ARRAY['a', 'b'], 5, 4) AS exact_with_child, approx_gpu.last_run()->>'read' AS read;
DROP TABLE nra_ix_child;

-- k > objects: every object, including those with no score at all (they tie at
-- the sum of the minimums, smaller ids first)
CREATE TABLE nra_small (id int UNIQUE, a float8, b float8);  -- a NULL id is no object
INSERT INTO nra_small VALUES (1, 3, 1), (2, NULL, NULL), (3, 1, 1), (4, 1, NULL), (5, NULL, 5),
  (6, NULL, NULL), (7, 2, 2), (8, 1, 1), (9, NULL, NULL), (10, 1, 2), (11, NULL, 1), (NULL, 9, 9);
SELECT id, score FROM approx_gpu.topk_nra('nra_small', 'id', ARRAY['a', 'b'], 100, 2);
SELECT pg_temp.stat('unlisted_rows') AS unlisted_rows, pg_temp.stat('random_accesses') AS random_accesses;
SELECT k, pg_temp.nra_ok('nra_small', ARRAY['a', 'b'], k, 1) AS exact
FROM generate_series(1, 12) k WHERE k IN (1, 4, 6, 7, 9, 11, 12) ORDER BY k;
-- quoted identifiers, int columns, an empty table, STRICT
CREATE TABLE "Mixed Case" ("Object Id" bigint UNIQUE, "Score A" int, "b""q" real);
INSERT INTO "Mixed Case" SELECT i, i % 7, (i % 5)::real FROM generate_series(1, 50) i;
SELECT array_agg(id ORDER BY o) AS ids, array_agg(score ORDER BY o) AS scores
FROM approx_gpu.topk_nra('"Mixed Case"', 'Object Id', ARRAY['Score A', 'b"q'], 4, 3) WITH ORDINALITY t(id, score, o);
-- the id column as a score column: the score is the id
-- value; our internal queries qualify every column, so no name is ambiguous
CREATE TABLE n1 (id int PRIMARY KEY, a float8);
INSERT INTO n1 SELECT i, (i * 37) % 11 FROM generate_series(1, 40) i;
SELECT array_agg(id ORDER BY o) AS ids, array_agg(score ORDER BY o) AS scores
FROM approx_gpu.topk_nra('n1', 'id', ARRAY['id'], 3) WITH ORDINALITY t(id, score, o);
SELECT pg_temp.nra_ok('n1', ARRAY['id'], 3) AS id_as_score, pg_temp.nra_ok('n1', ARRAY['a', 'id'], 5, 2) AS id_and_a,
       pg_temp.nra_ok('n1', ARRAY['id', 'a', 'id'], 7, 3) AS id_twice;
-- reserved words, mixed case, quotes, the internal alias r, function names,
-- and a name that would end the query if it were pasted in unquoted
CREATE TABLE "select" ("Id" bigint PRIMARY KEY, r float8, "order" int, "a""b" real, min float8,
                       "x) FROM pg_class; --" float8, "ID" float8);
INSERT INTO "select" SELECT i, (i * 7) % 13, (i * 5) % 17, (i % 3)::real, -i, (i * 11) % 19, 100 - i
  FROM generate_series(1, 60) i;
SELECT pg_temp.nra_ok('"select"', ARRAY['r', 'order', 'a"b', 'min', 'x) FROM pg_class; --', 'ID'], k, b, 'Id')
         AS odd_names
FROM (VALUES (1, 1), (5, 4), (60, 7)) v(k, b);
SELECT pg_temp.nra_ok('"select"', ARRAY['Id', 'ID'], 4, 2, 'Id') AS id_and_its_neighbour;
-- objects earlier in search_path than pg_catalog (an aggregate min, an
-- operator =, a type float8) change nothing: our queries qualify them
CREATE TABLE nra_want AS SELECT id, score FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a', 'b'], 10, 7);
CREATE SCHEMA regress_shadow;
CREATE FUNCTION regress_shadow.never(int, bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false';
CREATE OPERATOR regress_shadow.= (LEFTARG = int, RIGHTARG = bigint, FUNCTION = regress_shadow.never);
CREATE FUNCTION regress_shadow.low(float8, float8) RETURNS float8 LANGUAGE sql IMMUTABLE AS 'SELECT -1e300::float8';
CREATE AGGREGATE regress_shadow.min(float8) (SFUNC = regress_shadow.low, STYPE = float8);
CREATE DOMAIN regress_shadow.float8 AS int;
SET search_path = regress_shadow, pg_catalog, public;
SELECT (SELECT string_agg(id || ':' || score, ',' ORDER BY o)
        FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a', 'b'], 10, 7) WITH ORDINALITY t(id, score, o))
     = (SELECT string_agg(id || ':' || score, ',' ORDER BY score DESC, id) FROM nra_want) AS shadowed_names_ignored;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA regress_shadow CASCADE;
RESET client_min_messages;
DROP TABLE nra_want;

-- sums of finite scores that pass the float8 range are errors,
-- as they are in PostgreSQL
CREATE TABLE n2 (id int PRIMARY KEY, a float8, b float8);
INSERT INTO n2 VALUES (1, 1, 1), (2, 1e308, 1e308), (3, 0, 0);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('n2', 'id', ARRAY['a', 'b'], 2)$$);
SELECT pg_temp.err($$SELECT a + b FROM n2 ORDER BY 1 DESC LIMIT 2$$) AS postgres;
-- ... also when the object is not among the winners (it sums to -Infinity)
CREATE TABLE n3 (id int PRIMARY KEY, a float8, b float8);
INSERT INTO n3 SELECT i, i, i FROM generate_series(1, 100) i;
INSERT INTO n3 VALUES (1000, -1e308, -1e308);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('n3', 'id', ARRAY['a', 'b'], 3, 10)$$);
-- ... and a missing score counts as the column's minimum
UPDATE n3 SET b = NULL WHERE id = 1000;
INSERT INTO n3 VALUES (1001, 0, -1e308);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('n3', 'id', ARRAY['a', 'b'], 3, 10)$$);
-- bounds may pass the range where no object's sum does: the exact answer
CREATE TABLE n4 (id int PRIMARY KEY, a float8, b float8);
INSERT INTO n4 VALUES (1, 1e308, 0), (2, 0, 1e308), (3, -1e308, 0), (4, 0, -1e308), (5, 1e308, -1e308),
  (6, -1e308, 1e308), (7, 1, 2);
SELECT k, pg_temp.nra_ok('n4', ARRAY['a', 'b'], k, 1) AS exact_near_overflow
FROM generate_series(1, 7) k WHERE k IN (1, 2, 3, 7) ORDER BY k;
SELECT array_agg(id ORDER BY o) AS ids, array_agg(score ORDER BY o) AS scores
FROM approx_gpu.topk_nra('n4', 'id', ARRAY['a', 'b'], 3, 1) WITH ORDINALITY t(id, score, o);
CREATE TABLE nra_empty (id int PRIMARY KEY, a float8);
SELECT count(*) AS empty FROM approx_gpu.topk_nra('nra_empty', 'id', ARRAY['a'], 5);
SELECT count(*) AS strict FROM approx_gpu.topk_nra('nra_u', 'id', NULL, 5);

-- errors
CREATE TABLE nra_nokey AS SELECT * FROM nra_u;
CREATE INDEX ON nra_nokey (id);
CREATE UNIQUE INDEX ON nra_nokey (id) WHERE id > 10;
CREATE UNIQUE INDEX ON nra_nokey (id, a);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_nokey', 'id', ARRAY['a'], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'nope', ARRAY['a'], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a', 'nope'], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'a', ARRAY['b'], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['ctid'], 5)$$);
CREATE TABLE nra_text (id int PRIMARY KEY, a text, n numeric);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_text', 'id', ARRAY['a'], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_text', 'id', ARRAY['n'], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a'], 0)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a'], 5, 0)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a'], 5, 2000000)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', '{}', 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a', NULL], 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', '{{a},{b}}', 5)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', array_fill('a'::name, ARRAY[33]), 5)$$);
CREATE TABLE nra_bad (id int PRIMARY KEY, a float8, b float8, c float8);
INSERT INTO nra_bad VALUES (1, 1, 'NaN', NULL), (2, 2, 1, NULL), (3, 'Infinity', 2, NULL), (4, 0, 0, NULL);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_bad', 'id', ARRAY['b'], 2)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_bad', 'id', ARRAY['a'], 2)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_bad', 'id', ARRAY['c'], 2)$$);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_no_such_table', 'id', ARRAY['a'], 2)$$);
-- the caller needs SELECT on the table
CREATE ROLE regress_topk_reader;
GRANT USAGE ON SCHEMA approx_gpu TO regress_topk_reader;
SET ROLE regress_topk_reader;
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a'], 5)$$);
RESET ROLE;
-- ... on every column it reads (the error speaks of the call, not of our query)
GRANT SELECT (id, a) ON nra_u TO regress_topk_reader;
SET ROLE regress_topk_reader;
SELECT count(*) AS granted_columns FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a'], 5);
SELECT pg_temp.err($$SELECT * FROM approx_gpu.topk_nra('nra_u', 'id', ARRAY['a', 'b'], 5)$$);
RESET ROLE;
REVOKE SELECT (id, a) ON nra_u FROM regress_topk_reader;
-- row-level security: the policies apply, so the lists are read by cursors
-- (an index read would bypass them); the owner (here a superuser) reads the
-- indexes
GRANT SELECT ON nra_ix TO regress_topk_reader;
ALTER TABLE nra_ix ENABLE ROW LEVEL SECURITY;
CREATE POLICY nra_even ON nra_ix USING (id % 2 = 0);
SET ROLE regress_topk_reader;
SELECT count(*) AS rows, bool_and(id % 2 = 0) AS policy_applied, approx_gpu.last_run()->>'read' AS read
FROM approx_gpu.topk_nra('nra_ix', 'id', ARRAY['a', 'b'], 50);
RESET ROLE;
SELECT count(*) AS rows, bool_and(id % 2 = 0) AS policy_applied, approx_gpu.last_run()->>'read' AS read
FROM approx_gpu.topk_nra('nra_ix', 'id', ARRAY['a', 'b'], 50);
REVOKE SELECT ON nra_ix FROM regress_topk_reader;
REVOKE USAGE ON SCHEMA approx_gpu FROM regress_topk_reader;
DROP ROLE regress_topk_reader;

-- cancellation: one row per list per round over 300000 anti-correlated
-- objects takes far longer than 1 s on either engine; the loop checks for
-- interrupts between rounds and the statement ends with the timeout error
CREATE TABLE nra_slow AS SELECT i AS id, i::float8 AS a, (300000 - i)::float8 AS b FROM generate_series(1, 300000) i;
ALTER TABLE nra_slow ADD PRIMARY KEY (id);
SET statement_timeout = '1s';
SELECT count(*) FROM approx_gpu.topk_nra('nra_slow', 'id', ARRAY['a', 'b'], 10, 1);
RESET statement_timeout;
SELECT 1 AS still_alive;

DROP TABLE tk, tko, tk_nulls, nra_u, nra_corr, nra_anti, nra_zipf, nra_nulls, nra_ix, nra_small, "Mixed Case", n1, "select", n2, n3, n4, nra_empty,
  nra_nokey, nra_text, nra_bad, nra_slow;
-- a relation OID that names no relation (regclass accepts any OID)
SELECT * FROM approx_gpu.topk_nra(0::oid::regclass, 'id', ARRAY['a']::name[], 3);
