-- Relation reader properties: over tables of shapes that stress a
-- direct page reader -- dead tuples and updated rows (pages that are not
-- all-visible), a varlena and NULLs before the read columns, ties, rows
-- written by this very transaction and rolled-back ones -- the relation forms
-- return what PostgreSQL's own query returns, with any number of workers,
-- and the same on CPU and GPU. Helpers (tap.*) come from test/pgtap_setup.sql.
\ir preamble.psql
SET jit = off;
BEGIN;
SELECT plan(23);

SELECT setseed(0.41);
-- Not temporary: parallel workers read only tables the whole cluster can see
-- (created in this transaction: the workers share it).
CREATE TABLE public.rrp_a (pad text, note text, id bigint, key int, score float8);
INSERT INTO public.rrp_a
  SELECT repeat('x', (random() * 300)::int), CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' END, i,
         CASE WHEN i % 13 = 0 THEN NULL ELSE (random() * 20000)::int END,
         CASE WHEN i % 17 = 0 THEN NULL ELSE round((random() * 5000)::numeric, 1)::float8 END
  FROM generate_series(1, 250000) i;
DELETE FROM public.rrp_a WHERE id % 7 = 0;                      -- dead tuples
UPDATE public.rrp_a SET score = score + 0.5 WHERE id % 5 = 0;   -- new row versions
CREATE TABLE public.rrp_b AS SELECT i::bigint AS k, -i::bigint AS v FROM generate_series(1, 30000) i;
CREATE TABLE public.rrp_e AS SELECT i AS s, (i * 31 % 2000) + 1 AS d FROM generate_series(1, 2000) i;
ANALYZE public.rrp_a, public.rrp_b;  -- the row estimates size the GPU staging of the inputs

CREATE FUNCTION pg_temp.order_by(k int) RETURNS scored[] LANGUAGE sql AS $$
  SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY score DESC, id)
  FROM (SELECT id, score FROM public.rrp_a WHERE score IS NOT NULL ORDER BY score DESC, id LIMIT k) x $$;
CREATE FUNCTION pg_temp.with_workers(w int, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  PERFORM set_config('approx_gpu.read_workers', w::text, true);
  EXECUTE q INTO r;
  PERFORM set_config('approx_gpu.read_workers', '-1', true);
  RETURN r;
END $$;

-- top-k: the same answer as ORDER BY ... LIMIT with 0, 1 and 3 workers
SELECT is(pg_temp.with_workers(w, $$SELECT approx_gpu.topk('public.rrp_a', 'id', 'score', 500)::text$$),
          pg_temp.order_by(500)::text, format('topk(relation) = ORDER BY ... LIMIT 500 with %s read workers', w))
  FROM unnest(ARRAY[0, 1, 3]) w;
SELECT ok((approx_gpu.last_run()->>'read_workers')::int >= 0, 'last_run() reports the read workers');
-- each participant keeps its k best: a k larger than the chunks a worker may hold at once, and bottomk
SELECT is(pg_temp.with_workers(3, $$SELECT approx_gpu.topk('public.rrp_a', 'id', 'score', 200000)::text$$),
          pg_temp.order_by(200000)::text, 'topk(relation) = ORDER BY ... LIMIT 200000 with 3 read workers');
SELECT is(pg_temp.with_workers(3, $$SELECT approx_gpu.bottomk('public.rrp_a', 'id', 'score', 300)::text$$),
          (SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY score, id)
           FROM (SELECT id, score FROM public.rrp_a WHERE score IS NOT NULL ORDER BY score, id LIMIT 300) x)::text,
          'bottomk(relation) = ORDER BY score, id LIMIT 300 with 3 read workers');

-- joins: as multisets, equal to the inner-query form and to PostgreSQL's join
SELECT set_config('approx_gpu.read_workers', '3', true) IS NOT NULL AS set3 \gset
SELECT bag_eq($$SELECT * FROM approx_gpu.hash_join('public.rrp_b', 'k', 'v', 'public.rrp_a', 'key', 'id')$$,
              $$SELECT * FROM approx_gpu.hash_join('SELECT k, v FROM public.rrp_b', 'SELECT key, id FROM public.rrp_a')$$,
              'hash_join(relations) = hash_join(queries), 3 workers');
SELECT bag_eq($$SELECT * FROM approx_gpu.hash_join('public.rrp_b', 'k', 'v', 'public.rrp_a', 'key', 'id')$$,
              $$SELECT b.k, b.v, a.id FROM public.rrp_b b JOIN public.rrp_a a ON a.key = b.k$$,
              'hash_join(relations) = PostgreSQL''s join');
SELECT is(approx_gpu.hash_join_count('public.rrp_a', 'key', 'public.rrp_a', 'key'),
          (SELECT count(*) FROM public.rrp_a x JOIN public.rrp_a y ON x.key = y.key),
          'hash_join_count(relation, itself) = PostgreSQL''s self-join count');
-- every visible row is read once, dead and old versions never
SELECT approx_gpu.hash_join_count('public.rrp_b', 'k', 'public.rrp_a', 'key') IS NOT NULL AS counted \gset
SELECT is((approx_gpu.last_run()->>'probe_rows')::bigint + (approx_gpu.last_run()->>'probe_rows_skipped')::bigint,
          (SELECT count(*) FROM public.rrp_a), 'rows read + NULL keys skipped = the visible rows');
SELECT is((approx_gpu.last_run()->>'probe_rows_skipped')::bigint, (SELECT count(*) FROM public.rrp_a WHERE key IS NULL),
          'rows with a NULL key are skipped and counted');
-- closures: as sets
SELECT set_eq($$SELECT * FROM approx_gpu.transitive_closure('public.rrp_e', 's', 'd')$$,
              $$SELECT * FROM approx_gpu.transitive_closure('SELECT s, d FROM public.rrp_e')$$,
              'transitive_closure(relation) = transitive_closure(query)');

-- this transaction's own writes are seen by the workers; rolled-back ones are not
INSERT INTO public.rrp_a (id, key, score) VALUES (-1, 1, 1e9);
SAVEPOINT s;
INSERT INTO public.rrp_a (id, key, score) VALUES (-2, 1, 2e9);
ROLLBACK TO SAVEPOINT s;
SELECT is(((approx_gpu.topk('public.rrp_a', 'id', 'score', 1))[1]).id, -1::bigint,
          'workers see the transaction''s own insert, not the rolled-back one');
SELECT is(approx_gpu.topk('public.rrp_a', 'id', 'score', 50)::text, pg_temp.order_by(50)::text,
          'topk(relation) = ORDER BY after the writes');

-- table synopses: with a fixed seed the same sample (and so the same synopsis)
-- whatever the workers; every visible row counted, NULLs kept as data
CREATE FUNCTION pg_temp.synopsis_with_workers(w int, n text) RETURNS bytea LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('approx_gpu.read_workers', w::text, true);
  PERFORM set_config('approx_gpu.random_seed', '11', true);
  PERFORM approx_gpu.create_synopsis(n, 'public.rrp_a', ARRAY['score', 'key', 'note']::name[], 3000);
  PERFORM set_config('approx_gpu.read_workers', '-1', true);
  RETURN (SELECT approx_gpu.kde_synopsis_to_bytea(synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = n);
END $$;
SELECT is(pg_temp.synopsis_with_workers(3, 'rrp_syn3'), pg_temp.synopsis_with_workers(0, 'rrp_syn0'),
          'create_synopsis(table): 3 read workers = the backend alone (fixed seed)');
SELECT is(pg_temp.synopsis_with_workers(1, 'rrp_syn1'), pg_temp.synopsis_with_workers(0, 'rrp_syn0b'),
          'create_synopsis(table): 1 read worker = the backend alone (fixed seed)');
SELECT is((approx_gpu.kde_synopsis_info(synopsis)->>'N')::bigint, (SELECT count(*) FROM public.rrp_a),
          'create_synopsis(table): N = the visible rows (NULLs included)')
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'rrp_syn3';

-- CPU = GPU
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', 'SELECT approx_gpu.hash_join_count(''public.rrp_b'', ''k'', ''public.rrp_a'', ''key'')')
                        = tap.scalar_on('cpu', 'SELECT approx_gpu.hash_join_count(''public.rrp_b'', ''k'', ''public.rrp_a'', ''key'')')$$,
                  'hash_join_count(relations): CPU = GPU');
SELECT tap.gpu_ok($$SELECT tap.same_rows_on_cpu_and_gpu('SELECT * FROM unnest(approx_gpu.topk(''public.rrp_a'', ''id'', ''score'', 2000)) WITH ORDINALITY')$$,
                  'topk(relation): CPU = GPU, in order');
SELECT tap.gpu_ok($$SELECT tap.same_rows_on_cpu_and_gpu('SELECT * FROM approx_gpu.hash_join(''public.rrp_b'', ''k'', ''v'', ''public.rrp_a'', ''key'', ''id'')')$$,
                  'hash_join(relations): CPU = GPU');
SELECT tap.gpu_ok($$SELECT tap.scalar_on('gpu', 'SELECT approx_gpu.reachability_count(''public.rrp_e'', ''s'', ''d'')')
                        = tap.scalar_on('cpu', 'SELECT approx_gpu.reachability_count(''public.rrp_e'', ''s'', ''d'')')$$,
                  'reachability_count(relation): CPU = GPU');

-- on the GPU the columns are uploaded while they are read, and the engines use those copies;
-- with the GPU service (preloaded) the backend keeps no CUDA context: the columns go to the
-- service's staging area instead
CREATE FUNCTION pg_temp.on_gpu_uploaded(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v text; old text := current_setting('approx_gpu.device');
BEGIN
  PERFORM set_config('approx_gpu.device', 'gpu', true);
  EXECUTE q INTO v;
  PERFORM set_config('approx_gpu.device', old, true);
  IF approx_gpu.last_run() ? 'service_ms_round_trip' THEN RETURN v || ' sent to the GPU service'; END IF;
  RETURN v || ' uploaded while read: ' || coalesce(approx_gpu.last_run()->>'inputs_uploaded_while_read', '0');
END $$;
CREATE FUNCTION pg_temp.gpu_path(inputs int) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN (approx_gpu.gpu_service_info()->>'used_by_this_session')::boolean THEN ' sent to the GPU service'
              ELSE ' uploaded while read: ' || inputs END $$;
SELECT tap.gpu_ok($$SELECT pg_temp.on_gpu_uploaded('SELECT approx_gpu.topk(''public.rrp_a'', ''id'', ''score'', 300)::text')
                        = pg_temp.order_by(300)::text || pg_temp.gpu_path(1)$$,
                  'topk(relation) on the GPU: its input uploaded while read (or sent to the GPU service), same answer');
SELECT tap.gpu_ok($$SELECT pg_temp.on_gpu_uploaded('SELECT approx_gpu.hash_join_count(''public.rrp_b'', ''k'', ''public.rrp_a'', ''key'')::text')
                        = (SELECT count(*) FROM public.rrp_b b JOIN public.rrp_a a ON a.key = b.k)::text || pg_temp.gpu_path(2)$$,
                  'hash_join_count(relations) on the GPU: both sides uploaded while read (or sent to the GPU service), same count');

SELECT * FROM finish();
ROLLBACK;
