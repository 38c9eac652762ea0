-- Moving-object index properties: after random batches (in-place moves, jumps
-- across cells, new ids, duplicates within a batch, deletes) on uniform and
-- clustered data, every range query equals a plain WHERE x BETWEEN ... over a
-- mirror table; CPU = GPU (skipped without a GPU); not transactional.
\ir preamble.psql
BEGIN;
SELECT plan(16);

CREATE FUNCTION pg_temp.create_on(dev text, name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('approx_gpu.device', dev, true);
  PERFORM mo_create(name, 0, 0, 10000, 5000, 64, 32);
  PERFORM set_config('approx_gpu.device', 'cpu', true);
END $$;

-- the data: 60 % in three Gaussian clusters, 40 % uniform; some on the edges
SELECT setseed(0.31);
CREATE TEMP TABLE tap_mirror (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO tap_mirror
  SELECT i, CASE WHEN i % 50 = 0 THEN 10000 WHEN c < 0.6 THEN least(10000, greatest(0, cx + 300 * g1)) ELSE random() * 10000 END,
            CASE WHEN i % 70 = 0 THEN 5000 WHEN c < 0.6 THEN least(5000, greatest(0, cy + 200 * g2)) ELSE random() * 5000 END
  FROM (SELECT i, random() AS c,
               (ARRAY[2000, 7000, 8500])[1 + i % 3] AS cx, (ARRAY[1000, 4000, 2500])[1 + i % 3] AS cy,
               sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS g1,
               sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS g2
        FROM generate_series(1, 8000) i) s;

\o /dev/null
SELECT pg_temp.create_on('cpu', 'tap_cpu');
SELECT CASE WHEN tap.has_gpu() THEN pg_temp.create_on('gpu', 'tap_gpu') END;
SELECT mo_load('tap_cpu', 'SELECT id, x, y FROM tap_mirror');
SELECT CASE WHEN tap.has_gpu() THEN mo_load('tap_gpu', 'SELECT id, x, y FROM tap_mirror') END;
\o

-- query rectangles: random boxes, thin ones, ones on existing coordinates,
-- clipped ones and unbounded ones
CREATE TEMP TABLE tap_q (q int PRIMARY KEY, x0 float8, y0 float8, x1 float8, y1 float8);
CREATE FUNCTION pg_temp.new_queries() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tap_q;
  INSERT INTO tap_q
    SELECT q, x0, y0, x0 + w, y0 + h FROM (
      SELECT q, random() * 10400 - 200 AS x0, random() * 5200 - 100 AS y0,
             CASE WHEN q % 5 = 0 THEN 0 ELSE random() * random() * 4000 END AS w,
             CASE WHEN q % 7 = 0 THEN 0 ELSE random() * random() * 2000 END AS h
      FROM generate_series(1, 150) q) s;
  INSERT INTO tap_q
    SELECT 1000 + row_number() OVER (), least(a.x, b.x), least(a.y, b.y), greatest(a.x, b.x), greatest(a.y, b.y)
    FROM (SELECT x, y, row_number() OVER () AS k FROM (SELECT x, y FROM tap_mirror ORDER BY random() LIMIT 40) s) a
    JOIN (SELECT x, y, row_number() OVER () AS k FROM (SELECT x, y FROM tap_mirror ORDER BY random() LIMIT 40) s) b
      USING (k);
  INSERT INTO tap_q VALUES (2001, '-Infinity', '-Infinity', 'Infinity', 'Infinity'), (2002, -50, -50, 156.25, 5000),
                           (2003, 9843.75, 4843.75, 'Infinity', 6000), (2004, 10000, 5000, 10000, 5000);
END $$;

-- counts and ids of one index against the mirror; false on any difference
CREATE FUNCTION pg_temp.agrees(idx text) RETURNS boolean LANGUAGE sql AS $$
  SELECT bool_and(c.n = (SELECT count(*) FROM tap_mirror m WHERE m.x BETWEEN q.x0 AND q.x1 AND m.y BETWEEN q.y0 AND q.y1))
    AND (SELECT bool_and((SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM mo_range(idx, x0, y0, x1, y1) id) =
                         (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM tap_mirror m
                          WHERE m.x BETWEEN x0 AND x1 AND m.y BETWEEN y0 AND y1))
         FROM tap_q WHERE q % 10 = 1 OR q > 2000)
    AND (SELECT (mo_info(idx)->>'objects')::bigint = count(*) FROM tap_mirror)
  FROM tap_q q JOIN unnest((SELECT mo_range_count(idx, array_agg(x0 ORDER BY q), array_agg(y0 ORDER BY q),
                                                  array_agg(x1 ORDER BY q), array_agg(y1 ORDER BY q)) FROM tap_q))
                   WITH ORDINALITY c(n, k) ON c.k = (SELECT count(*) FROM tap_q q2 WHERE q2.q <= q.q)
$$;

-- one round: an update batch (small moves, jumps, new ids, duplicates in
-- random order) or a delete batch, applied to the index(es) and the mirror
CREATE TEMP TABLE tap_log (round int, kind text, ok boolean);
CREATE FUNCTION pg_temp.round(r int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE b record; del bigint[]; n1 bigint; n2 bigint;
BEGIN
  IF r % 3 = 0 THEN
    SELECT array_agg(id) INTO del FROM (
      (SELECT id FROM tap_mirror ORDER BY random() LIMIT 600)
      UNION ALL SELECT 5000000 + g FROM generate_series(1, 50) g
      UNION ALL (SELECT id FROM tap_mirror ORDER BY random() LIMIT 100)) s;
    n1 := mo_delete('tap_cpu', del);
    IF tap.has_gpu() THEN n2 := mo_delete('tap_gpu', del); INSERT INTO tap_log VALUES (r, 'same_result', n1 = n2); END IF;
    WITH gone AS (DELETE FROM tap_mirror WHERE id = ANY (del) RETURNING 1)
    INSERT INTO tap_log SELECT r, 'delete_count', count(*) = n1 FROM gone;
  ELSE
    WITH pick AS (SELECT id, x, y, random() AS k FROM tap_mirror ORDER BY random() LIMIT 2000),
         rows AS (
           SELECT id, CASE WHEN k < 0.6 THEN least(10000, greatest(0, x + (random() - 0.5) * 80)) ELSE random() * 10000 END AS x,
                      CASE WHEN k < 0.6 THEN least(5000, greatest(0, y + (random() - 0.5) * 80)) ELSE random() * 5000 END AS y
           FROM pick
           UNION ALL SELECT id, random() * 10000, random() * 5000 FROM pick WHERE k > 0.85
           UNION ALL SELECT 100000 * r + g, random() * 10000, CASE WHEN g % 9 = 0 THEN 5000 ELSE random() * 5000 END
             FROM generate_series(1, 400) g),
         ordered AS (SELECT id, x, y, random() AS o FROM rows)
    SELECT array_agg(id ORDER BY o) AS ids, array_agg(x ORDER BY o) AS xs, array_agg(y ORDER BY o) AS ys INTO b FROM ordered;
    n1 := mo_update('tap_cpu', b.ids, b.xs, b.ys);
    IF tap.has_gpu() THEN
      n2 := mo_update('tap_gpu', b.ids, b.xs, b.ys);
      INSERT INTO tap_log VALUES (r, 'same_result', n1 = n2);
    END IF;
    INSERT INTO tap_log SELECT r, 'distinct_count', n1 = count(DISTINCT id) FROM unnest(b.ids) id;
    INSERT INTO tap_mirror AS m (id, x, y)
      SELECT DISTINCT ON (id) id, x, y FROM unnest(b.ids, b.xs, b.ys) WITH ORDINALITY u(id, x, y, o) ORDER BY id, o DESC
      ON CONFLICT (id) DO UPDATE SET x = EXCLUDED.x, y = EXCLUDED.y;
  END IF;
  PERFORM pg_temp.new_queries();
  INSERT INTO tap_log VALUES (r, 'cpu', pg_temp.agrees('tap_cpu'));
  IF tap.has_gpu() THEN
    INSERT INTO tap_log VALUES (r, 'gpu', pg_temp.agrees('tap_gpu'));
    INSERT INTO tap_log SELECT r, 'cpu_eq_gpu',
      (SELECT mo_range_count('tap_cpu', array_agg(x0 ORDER BY q), array_agg(y0 ORDER BY q), array_agg(x1 ORDER BY q), array_agg(y1 ORDER BY q)) FROM tap_q) =
      (SELECT mo_range_count('tap_gpu', array_agg(x0 ORDER BY q), array_agg(y0 ORDER BY q), array_agg(x1 ORDER BY q), array_agg(y1 ORDER BY q)) FROM tap_q);
  END IF;
END $$;

\o /dev/null
SELECT pg_temp.new_queries();
\o
SELECT ok(pg_temp.agrees('tap_cpu'), 'CPU: after mo_load every range query equals brute force');
\o /dev/null
SELECT pg_temp.round(r) FROM generate_series(1, 6) r;
\o
SELECT is((SELECT count(*) FROM tap_log WHERE kind = 'cpu')::int, 6, 'six rounds ran');
SELECT ok((SELECT bool_and(ok) FROM tap_log WHERE kind = 'cpu'),
          'CPU: after every batch (moves, jumps, new ids, duplicates, deletes) counts and ids equal brute force');
SELECT ok((SELECT bool_and(ok) FROM tap_log WHERE kind = 'distinct_count'), 'mo_update returns the distinct ids of the batch');
SELECT ok((SELECT bool_and(ok) FROM tap_log WHERE kind = 'delete_count'), 'mo_delete returns how many ids it removed');
SELECT CASE WHEN tap.has_gpu() THEN
  ok((SELECT bool_and(ok) FROM tap_log WHERE kind = 'gpu'), 'GPU: after every batch counts and ids equal brute force')
  ELSE skip('no GPU on this machine: the GPU engine is checked on the GPU machine') END;
SELECT CASE WHEN tap.has_gpu() THEN
  ok((SELECT bool_and(ok) FROM tap_log WHERE kind IN ('cpu_eq_gpu', 'same_result')), 'GPU = CPU: the same counts and return values')
  ELSE skip('no GPU on this machine: CPU = GPU is checked on the GPU machine') END;
SELECT CASE WHEN tap.has_gpu() THEN
  is(mo_info('tap_gpu')->>'device', 'gpu', 'an index created under device = gpu runs on the GPU')
  ELSE skip('no GPU on this machine') END;
SELECT is(mo_info('tap_cpu')->>'device', 'cpu', 'an index created under device = cpu runs on the CPU');

-- buckets: every non-empty cell holds ceil(count / 32) buckets (same cell arithmetic in SQL)
SELECT is((mo_info('tap_cpu')->>'buckets')::bigint,
          (SELECT sum(ceil(n / 32.0))::bigint FROM (
             SELECT count(*) AS n FROM tap_mirror
             GROUP BY least(floor(x / (10000 / 64.0)), 63), least(floor(y / (5000 / 32.0)), 31)) s),
          'buckets in use = sum over cells of ceil(objects / 32)');

-- mo_load of the mirror into a fresh index answers like the updated one
\o /dev/null
SELECT mo_create('tap_fresh', 0, 0, 10000, 5000, 17, 9);
SELECT mo_load('tap_fresh', 'SELECT id, x, y FROM tap_mirror ORDER BY random()');
\o
SELECT ok(pg_temp.agrees('tap_fresh'), 'a fresh index over the same points (another grid) agrees');

-- not transactional: a change inside a rolled-back savepoint stays
SAVEPOINT s1;
\o /dev/null
SELECT mo_update('tap_fresh', ARRAY[424242]::bigint[], ARRAY[1]::float8[], ARRAY[2]::float8[]);
\o
ROLLBACK TO SAVEPOINT s1;
SELECT is((SELECT array_agg(id) FROM mo_range('tap_fresh', 1, 2, 1, 2) id), ARRAY[424242]::bigint[],
          'ROLLBACK does not undo mo_update');
-- a failed batch changes nothing
SELECT throws_ok($$SELECT mo_update('tap_fresh', ARRAY[1, 2]::bigint[], ARRAY[5, 10001]::float8[], ARRAY[5, 5]::float8[])$$,
                 '22003', NULL, 'a point outside the extent is an error (22003)');
SELECT is((SELECT array_agg(id) FROM mo_range('tap_fresh', 5, 5, 5, 5) id), NULL, 'and nothing of the failed batch was applied');
SELECT throws_ok($$SELECT mo_info('no_such_index')$$, '42704', NULL, 'an unknown index is an error (42704)');

-- every mo_* function is PARALLEL UNSAFE
SELECT is((SELECT count(*)::int FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = 'approx_gpu' AND p.proname LIKE 'mo\_%' AND p.proparallel <> 'u'), 0,
          'mo_* functions are PARALLEL UNSAFE');

\o /dev/null
SELECT mo_drop('tap_fresh');
SELECT mo_drop('tap_cpu');
SELECT CASE WHEN tap.has_gpu() THEN mo_drop('tap_gpu') END;
\o
SELECT * FROM finish();
ROLLBACK;
