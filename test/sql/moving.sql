-- Moving-object grid indexes: mo_create, mo_load, mo_update, mo_delete,
-- mo_range, mo_range_count, mo_info, mo_drop. Output is engine-independent:
-- ids, counts and booleans (the index's engine follows approx_gpu.device).
SET extra_float_digits = 0;
SET search_path = approx_gpu, public;

-- a 10 x 10 grid over [0,100] x [0,50]
SELECT mo_create('city', 0, 0, 100, 50, 10, 10);
SELECT i->>'name' AS name, (i->>'objects')::int AS objects, (i->>'cells')::int AS cells,
       (i->>'cells_x')::int AS cells_x, (i->>'buckets')::int AS buckets, (i->>'bucket_slots')::int AS slots,
       i->>'device' IN ('cpu', 'gpu') AS device_ok, i->'extent' AS extent, i->'last_update' AS last_update
FROM mo_info('city') i;

-- a batch: unknown ids are inserted; points on xmax / ymax belong to the last cells
SELECT mo_update('city', ARRAY[1, 2, 3, 4, 5, 6]::bigint[],
                 ARRAY[5, 15, 99.5, 100, 0, 50]::float8[], ARRAY[5, 5, 49, 50, 0, 25]::float8[]) AS written;
SELECT array_agg(id) AS ids FROM mo_range('city', 0, 0, 100, 50) id;
SELECT array_agg(id) AS ids FROM mo_range('city', 0, 0, 10, 10) id;
-- closed rectangles: a point on the edge is inside
SELECT array_agg(id) AS ids FROM mo_range('city', 100, 50, 100, 50) id;
SELECT array_agg(id) AS ids FROM mo_range('city', 50, 25, 60, 30) id;
SELECT array_agg(id) AS ids FROM mo_range('city', 49.999, 24.999, 49.9999, 24.9999) id;
-- queries are clipped to the extent; infinite bounds are "unbounded"; an inverted rectangle is empty
SELECT array_agg(id) AS ids FROM mo_range('city', '-Infinity', '-Infinity', 'Infinity', 'Infinity') id;
SELECT count(*) AS n FROM mo_range('city', 200, 0, 300, 50) id;
SELECT count(*) AS n FROM mo_range('city', 60, 0, 40, 50) id;
SELECT mo_range_count('city', ARRAY[0, 0, 99, 200, 60, '-Infinity']::float8[], ARRAY[0, 0, 49, 0, 0, 0]::float8[],
                      ARRAY[100, 10, 100, 300, 40, 'Infinity']::float8[], ARRAY[50, 10, 50, 50, 50, 25]::float8[]) AS counts;
SELECT mo_range_count('city', '{}', '{}', '{}', '{}') AS no_queries;
SELECT (i->>'objects')::int AS objects, (i->>'buckets')::int AS buckets,
       i->'last_update'->>'op' AS op, (i->'last_update'->>'inserted')::int AS inserted
FROM mo_info('city') i;

-- moves: in place (same cell), across cells; a later entry for the same id wins
SELECT mo_update('city', ARRAY[1, 2, 2, 7, 1]::bigint[],
                 ARRAY[6, 95, 35, 70, 7]::float8[], ARRAY[6, 45, 15, 30, 7]::float8[]) AS written;
SELECT array_agg(id) AS ids FROM mo_range('city', 30, 10, 40, 20) id;
SELECT array_agg(id) AS ids FROM mo_range('city', 90, 40, 100, 50) id;
SELECT array_agg(id) AS ids FROM mo_range('city', 6.5, 6.5, 7.5, 7.5) id;
SELECT (i->'last_update'->>'entries')::int AS entries, (i->'last_update'->>'distinct')::int AS distinct_ids,
       (i->'last_update'->>'inserted')::int AS inserted, (i->'last_update'->>'moved')::int AS moved,
       (i->'last_update'->>'in_place')::int AS in_place, (i->>'objects')::int AS objects
FROM mo_info('city') i;

-- deletes: unknown ids are ignored, duplicates count once
SELECT mo_delete('city', ARRAY[3, 3, 999, 5]::bigint[]) AS removed;
SELECT (i->>'objects')::int AS objects, (i->'last_update'->>'deleted')::int AS deleted,
       (i->'last_update'->>'distinct')::int AS distinct_ids FROM mo_info('city') i;
SELECT mo_delete('city', ARRAY[]::bigint[]) AS removed_none;
SELECT array_agg(id) AS ids FROM mo_range('city', 0, 0, 100, 50) id;

-- mo_load: rows (id, x, y) from a query; int and float4 columns are fine; rows with a NULL are skipped
CREATE TABLE mo_pts AS
  SELECT i AS id, (i * 37 % 1000) / 10.0::float8 AS x, (i * 53 % 500) / 10.0::float8 AS y
  FROM generate_series(100, 2099) i;
SELECT mo_load('city', 'SELECT id, x, y FROM mo_pts') AS loaded;
SELECT mo_load('city', 'SELECT id::int, x::float4, y FROM mo_pts WHERE id < 110 UNION ALL SELECT NULL, 1, 1') AS reloaded;
SELECT (approx_gpu.last_run()->>'rows_skipped')::int AS rows_skipped, approx_gpu.last_run()->>'function' AS function;
SELECT (i->>'objects')::int AS objects FROM mo_info('city') i;
-- every query equals a plain WHERE over the same points
CREATE TABLE mo_mirror AS SELECT id, x, y FROM mo_pts
  UNION ALL SELECT * FROM (VALUES (1::bigint, 7::float8, 7::float8), (2, 35, 15), (4, 100, 50), (6, 50, 25), (7, 70, 30)) v;
SELECT count(*) = (SELECT (mo_info('city')->>'objects')::bigint) AS same_size FROM mo_mirror;
SELECT setseed(0.25);
CREATE TABLE mo_q AS
  SELECT q, x0, y0, x0 + w AS x1, y0 + h AS y1
  FROM (SELECT q, random() * 110 - 5 AS x0, random() * 55 - 3 AS y0, random() * 40 AS w, random() * 20 AS h
        FROM generate_series(1, 300) q) s;
SELECT bool_and(c.n = (SELECT count(*) FROM mo_mirror m WHERE m.x BETWEEN q.x0 AND q.x1 AND m.y BETWEEN q.y0 AND q.y1))
         AS counts_match
FROM mo_q q JOIN unnest((SELECT mo_range_count('city', array_agg(x0 ORDER BY q), array_agg(y0 ORDER BY q),
                                                array_agg(x1 ORDER BY q), array_agg(y1 ORDER BY q)) FROM mo_q))
                 WITH ORDINALITY c(n, q) ON c.q = q.q;
SELECT bool_and((SELECT array_agg(id ORDER BY id) FROM mo_range('city', x0, y0, x1, y1) id) IS NOT DISTINCT FROM
                (SELECT array_agg(id ORDER BY id) FROM mo_mirror m WHERE m.x BETWEEN x0 AND x1 AND m.y BETWEEN y0 AND y1))
         AS ids_match
FROM mo_q WHERE q <= 40;

-- not transactional: changes survive ROLLBACK, and so does an index created in it
BEGIN;
SELECT mo_update('city', ARRAY[5000]::bigint[], ARRAY[1]::float8[], ARRAY[1]::float8[]) AS written;
SELECT mo_create('temp_idx', 0, 0, 1, 1, 2, 2);
ROLLBACK;
SELECT array_agg(id) AS still_there FROM mo_range('city', 1, 1, 1, 1) id;
SELECT (mo_info('temp_idx')->>'objects')::int AS temp_idx_objects;
SELECT mo_drop('temp_idx');
SELECT mo_delete('city', ARRAY[5000]::bigint[]) AS removed;

-- NULL arguments: STRICT functions return NULL and change nothing
SELECT mo_update('city', NULL, ARRAY[1]::float8[], ARRAY[1]::float8[]) IS NULL AS strict_update;
SELECT count(*) AS n FROM mo_range('city', NULL, 0, 1, 1);

-- errors: SQLSTATE and message, which names the function and the argument; a
-- failed batch changes nothing
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
SELECT (mo_info('city')->>'objects')::int AS objects_before;
SELECT pg_temp.err($$SELECT mo_create('city', 0, 0, 1, 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_create('bad', 1, 0, 1, 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_create('bad', 0, 5, 1, 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_create('bad', 'NaN', 0, 1, 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_create('bad', 0, 0, 'Infinity', 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_create('bad', 0, 0, 1, 1, 0, 1)$$);
SELECT pg_temp.err($$SELECT mo_create('bad', 0, 0, 1, 1, 4, -2)$$);
SET approx_gpu.moving_max_cells = 100;
SELECT pg_temp.err($$SELECT mo_create('bad', 0, 0, 1, 1, 11, 10)$$);
RESET approx_gpu.moving_max_cells;
SELECT pg_temp.err($$SELECT mo_create('', 0, 0, 1, 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_create(repeat('n', 64), 0, 0, 1, 1, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_info('nope')$$);
SELECT pg_temp.err($$SELECT mo_update('nope', ARRAY[1]::bigint[], ARRAY[1]::float8[], ARRAY[1]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_delete('nope', ARRAY[1]::bigint[])$$);
SELECT pg_temp.err($$SELECT mo_load('nope', 'SELECT 1, 2.0, 3.0')$$);
SELECT pg_temp.err($$SELECT * FROM mo_range('nope', 0, 0, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_range_count('nope', ARRAY[0]::float8[], ARRAY[0]::float8[], ARRAY[1]::float8[], ARRAY[1]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_drop('nope')$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, 2, 3000]::bigint[], ARRAY[10, 20, 100.5]::float8[], ARRAY[10, 20, 5]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, 2, 3000]::bigint[], ARRAY[10, 20, 30]::float8[], ARRAY[10, -0.5, 5]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, 2]::bigint[], ARRAY[10, 'NaN']::float8[], ARRAY[10, 20]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, 2]::bigint[], ARRAY[10, 20]::float8[], ARRAY['Infinity', 20]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, 2]::bigint[], ARRAY[10, 20, 30]::float8[], ARRAY[10, 20]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, NULL]::bigint[], ARRAY[10, 20]::float8[], ARRAY[10, 20]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[1, 2]::bigint[], ARRAY[10, NULL]::float8[], ARRAY[10, 20]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_update('city', ARRAY[[1, 2]]::bigint[], ARRAY[10, 20]::float8[], ARRAY[10, 20]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_delete('city', ARRAY[1, NULL]::bigint[])$$);
SELECT pg_temp.err($$SELECT mo_load('city', 'SELECT id, x + 1000, y FROM mo_pts')$$);
SELECT pg_temp.err($$SELECT mo_load('city', 'SELECT id, ''NaN''::float8, y FROM mo_pts')$$);
SELECT pg_temp.err($$SELECT mo_load('city', 'SELECT x, x, y FROM mo_pts')$$);
SELECT pg_temp.err($$SELECT mo_load('city', 'SELECT id, x FROM mo_pts')$$);
SELECT pg_temp.err($$SELECT mo_load('city', 'not a query')$$);
SELECT pg_temp.err($$SELECT * FROM mo_range('city', 'NaN', 0, 1, 1)$$);
SELECT pg_temp.err($$SELECT mo_range_count('city', ARRAY[0, 'NaN']::float8[], ARRAY[0, 0]::float8[], ARRAY[1, 1]::float8[], ARRAY[1, 1]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_range_count('city', ARRAY[0, 0]::float8[], ARRAY[0]::float8[], ARRAY[1, 1]::float8[], ARRAY[1, 1]::float8[])$$);
SELECT pg_temp.err($$SELECT mo_range_count('city', ARRAY[0, NULL]::float8[], ARRAY[0, 0]::float8[], ARRAY[1, 1]::float8[], ARRAY[1, 1]::float8[])$$);
SELECT (mo_info('city')->>'objects')::int AS objects_after,
       bool_and(c.n = (SELECT count(*) FROM mo_mirror m WHERE m.x BETWEEN q.x0 AND q.x1 AND m.y BETWEEN q.y0 AND q.y1))
         AS unchanged
FROM mo_q q JOIN unnest((SELECT mo_range_count('city', array_agg(x0 ORDER BY q), array_agg(y0 ORDER BY q),
                                                array_agg(x1 ORDER BY q), array_agg(y1 ORDER BY q)) FROM mo_q))
                 WITH ORDINALITY c(n, q) ON c.q = q.q;

-- cancellation: the inner query of mo_load runs past statement_timeout; nothing is applied
SET statement_timeout = '1s';
SELECT mo_load('city', 'SELECT i::bigint, 1.0::float8, 1.0::float8 FROM generate_series(900000, 900010) i, pg_sleep(30)');
RESET statement_timeout;
SELECT (mo_info('city')->>'objects')::int AS objects_after_cancel;
-- batches far too large for 1 s on either engine (reading, staging or
-- applying when the timeout comes): the cancel error, then the index is as it was
SET statement_timeout = '1s';
SELECT mo_load('city', 'SELECT i, (i % 1000) / 10.0::float8, (i % 500) / 10.0::float8 FROM generate_series(10000001, 110000000) i');
RESET statement_timeout;
SELECT 1 AS still_connected;
SET statement_timeout = '1s';
SELECT mo_update('city', array_agg(i), array_agg((i % 1000) / 10.0::float8), array_agg((i % 500) / 10.0::float8))
FROM generate_series(10000001::bigint, 60000000) i;
RESET statement_timeout;
SELECT 1 AS still_connected;
SELECT (mo_info('city')->>'objects')::int AS objects_after_cancel,
       (mo_info('city')->'last_update'->>'op') AS last_op,
       (mo_info('city')->'last_update'->>'entries')::int AS last_entries;

-- an inner query that drops the index it loads into (or drops and re-creates
-- it): an error, never a use of the freed index
SELECT mo_create('a', 0, 0, 10, 10, 4, 4);
SELECT mo_update('a', ARRAY[1, 2, 3]::bigint[], ARRAY[1, 2, 3]::float8[], ARRAY[1, 2, 3]::float8[]) AS written;
SELECT pg_temp.err($q$SELECT mo_load('a', $$SELECT 1::bigint, 1.0::float8, 1.0::float8 FROM (SELECT approx_gpu.mo_drop('a')) s$$)$q$);
SELECT pg_temp.err($$SELECT mo_info('a')$$);
SELECT mo_create('a', 0, 0, 10, 10, 4, 4);
SELECT pg_temp.err($q$SELECT mo_load('a', $$SELECT 1::bigint, 1.0::float8, 1.0::float8
  FROM (SELECT approx_gpu.mo_drop('a'), approx_gpu.mo_create('a', 0, 0, 20, 20, 2, 2)) s$$)$q$);
SELECT (i->>'objects')::int AS objects, (i->>'cells')::int AS cells FROM mo_info('a') i;
-- an inner query that changes the index through the SQL functions is fine: the load applies after it
SELECT mo_load('a', $$SELECT 7::bigint, 5.0::float8, 5.0::float8
  FROM (SELECT approx_gpu.mo_update('a', ARRAY[8]::bigint[], ARRAY[1]::float8[], ARRAY[1]::float8[])) s$$) AS loaded;
SELECT (mo_info('a')->>'objects')::int AS objects;
SELECT mo_drop('a');

-- memory: every index reports its bytes and the session's total;
-- approx_gpu.moving_session_memory caps the total (creation or growth past it
-- is ERROR 54000 naming the function, the need and the setting; nothing changes)
CREATE FUNCTION pg_temp.err_code(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || split_part(SQLERRM, ':', 1) || ' (names the setting: '
         || (SQLERRM LIKE '%needs % more bytes%approx_gpu.moving_session_memory%')::text || ')';
END $$;
SELECT mo_create('m1', 0, 0, 1, 1, 64, 64);
SELECT mo_create('m2', 0, 0, 1, 1, 8, 8);
SELECT (a->>'bytes')::bigint >= 64 * 64 * 16 AS m1_counts_its_cells,
       (a->>'session_bytes')::bigint = (a->>'bytes')::bigint + (b->>'bytes')::bigint
                                       + (mo_info('city')->>'bytes')::bigint AS session_is_the_sum,
       (b->>'session_bytes')::bigint = (a->>'session_bytes')::bigint AS same_session_total,
       (a->>'session_memory_limit')::bigint = 1024 * 1024 * 1024 AS default_1gb
FROM mo_info('m1') a, mo_info('m2') b;
-- the cap: what the session holds now plus 4 MB (engines differ in what an
-- index holds: the GPU engine keeps more scratch than the CPU engine)
SELECT set_config('approx_gpu.moving_session_memory',
                  (((mo_info('m1')->>'session_bytes')::bigint + 4 * 1024 * 1024) / 1024)::text || 'kB', false) IS NOT NULL AS cap_set;
SELECT pg_temp.err_code($$SELECT mo_create('m3', 0, 0, 1, 1, 1024, 1024)$$);
SELECT pg_temp.err_code($$SELECT mo_update('m1', array_agg(i), array_agg(0.5::float8), array_agg(0.5::float8))
                          FROM generate_series(1::bigint, 200000) i$$);
SELECT pg_temp.err_code($$SELECT mo_load('m2', 'SELECT i, 0.5::float8, 0.5::float8 FROM generate_series(1::bigint, 200000) i')$$);
SELECT (mo_info('m1')->>'objects')::int AS m1_objects, (mo_info('m2')->>'objects')::int AS m2_objects,
       pg_temp.err($$SELECT mo_info('m3')$$) AS m3;
SELECT mo_update('m1', ARRAY[1, 2]::bigint[], ARRAY[0.5, 0.25]::float8[], ARRAY[0.5, 0.25]::float8[]) AS small_batch_fits;
RESET approx_gpu.moving_session_memory;
SELECT mo_drop('m1');
SELECT mo_drop('m2');
-- the limits protect the server: only a superuser may change them
CREATE ROLE regress_mo_plain_user;
SET ROLE regress_mo_plain_user;
SET approx_gpu.moving_max_cells = 67108864;
SET approx_gpu.moving_session_memory = '100GB';
RESET ROLE;
DROP ROLE regress_mo_plain_user;
SELECT name, context, unit, boot_val FROM pg_settings WHERE name LIKE 'approx_gpu.moving%' ORDER BY name;

-- drop frees it; the name is free again
SELECT mo_drop('city');
SELECT pg_temp.err($$SELECT mo_info('city')$$);
SELECT mo_create('city', -1, -1, 1, 1, 1, 1);
SELECT (mo_info('city')->>'cells')::int AS cells;
-- An index belongs to the role that created it: after SET ROLE to a role
-- without its privileges it is refused (it holds what its creator could read).
SET client_min_messages = warning;
CREATE ROLE regress_mo_other;
RESET client_min_messages;
GRANT USAGE ON SCHEMA approx_gpu TO regress_mo_other;
SET ROLE regress_mo_other;
SELECT pg_temp.err($$SELECT mo_info('city')$$);
SELECT pg_temp.err($$SELECT count(*) FROM mo_range('city', 0, 0, 100, 50)$$);
SELECT pg_temp.err($$SELECT mo_drop('city')$$);
RESET ROLE;
SELECT (mo_info('city')->>'cells')::int AS cells;
REVOKE USAGE ON SCHEMA approx_gpu FROM regress_mo_other;
DROP ROLE regress_mo_other;
SELECT mo_drop('city');
DROP TABLE mo_pts, mo_mirror, mo_q;
