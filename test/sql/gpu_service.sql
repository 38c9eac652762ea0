-- The GPU service. Two expected files: gpu_service.out (approx_gpu
-- in shared_preload_libraries: test/run's second pass) and gpu_service_1.out
-- (not preloaded: every backend runs its own engines). With a GPU the
-- service runs the GPU engines, without one (the CI setting
-- approx_gpu.service_engine = cpu) the CPU engines: the outputs below do not
-- depend on which.
SELECT (approx_gpu.gpu_service_info()->>'preloaded')::boolean AS preloaded \gset
\if :preloaded

-- The service may still be starting (CUDA's initialisation takes seconds), or
-- finishing a call an earlier suite cancelled (the engine stops at its next
-- look at the cancel flag).
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  WHILE (NOT (approx_gpu.gpu_service_info()->>'running')::boolean
         OR (approx_gpu.gpu_service_info()->'queue'->>'in_use')::int > 0)
        AND clock_timestamp() - t0 < interval '60 s' LOOP
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
-- One service process, in pg_stat_activity under its own backend_type.
SELECT (i->>'running')::boolean AS running, i->>'engine' IN ('cpu', 'gpu') AS engine_known,
       (i->'queue'->>'slots')::int > 0 AS has_slots, (i->'queue'->>'in_use')::int AS in_use,
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service') AS service_processes
FROM approx_gpu.gpu_service_info() i;
SELECT (approx_gpu.gpu_service_info()->>'used_by_this_session')::boolean AS used_by_this_session;

SET approx_gpu.gpu_min_rows = 0;
CREATE TEMP TABLE pts AS
  SELECT g AS id, ((g * 7919) % 10007)::float8 AS score, (g % 97)::float8 AS a, (g % 13)::float8 AS b
  FROM generate_series(1, 20000) g;

-- Served calls answer as the backend's own engines do.
SELECT approx_gpu.topk(id, score, 5) AS served_topk FROM pts;
SELECT approx_gpu.last_run()->>'service_ms_round_trip' IS NOT NULL AS went_through_service;
SET approx_gpu.use_service = off;
SELECT approx_gpu.topk(id, score, 5) AS in_backend_topk FROM pts;
SELECT approx_gpu.last_run()->>'service_ms_round_trip' IS NULL AS ran_in_backend;
RESET approx_gpu.use_service;

SELECT approx_gpu.hash_join_count('SELECT id, id FROM pts', 'SELECT id % 5000, id FROM pts') AS served_join_count,
       (SELECT count(*) FROM pts p JOIN pts b ON b.id = p.id % 5000) AS exact_join_count;
SELECT approx_gpu.last_run()->>'service_ms_round_trip' IS NOT NULL AS went_through_service;

SELECT round(approx_gpu.kde_bandwidth(array_agg(sin(id)::float8))::numeric, 6) AS served_bandwidth FROM pts;
SET approx_gpu.use_service = off;
SELECT round(approx_gpu.kde_bandwidth(array_agg(sin(id)::float8))::numeric, 6) AS in_backend_bandwidth FROM pts;
RESET approx_gpu.use_service;

-- A synopsis's sample stays resident in the service: the second call with the
-- same synopsis does not send it again.
SET approx_gpu.random_seed = 11;
CREATE TEMP TABLE syn AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 2000) AS s FROM pts;
SELECT round(c::numeric, 3) AS served_count FROM syn,
       unnest(approx_gpu.approx_count_many(s, ARRAY[[10, 2], [0, 0]]::float8[], ARRAY[[50, 8], [96, 12]]::float8[])) c;
SELECT round(c::numeric, 3) AS served_count_again FROM syn,
       unnest(approx_gpu.approx_count_many(s, ARRAY[[10, 2], [0, 0]]::float8[], ARRAY[[50, 8], [96, 12]]::float8[])) c;
SELECT (approx_gpu.last_run()->>'service_resident_hit')::int AS resident_hit;
SET approx_gpu.use_service = off;
SELECT round(c::numeric, 3) AS in_backend_count FROM syn,
       unnest(approx_gpu.approx_count_many(s, ARRAY[[10, 2], [0, 0]]::float8[], ARRAY[[50, 8], [96, 12]]::float8[])) c;
RESET approx_gpu.use_service;
SELECT (i->'cache'->>'entries')::int >= 1 AS cached, (i->'cache'->>'hits')::int >= 1 AS hit
FROM approx_gpu.gpu_service_info() i;

-- The queue timeout: a call the service does not start in time runs on the
-- CPU under device = auto (NOTICE) and is an error (53200) under device = gpu.
-- approx_gpu.service_test_delay keeps this session's calls queued.
SET approx_gpu.service_test_delay = '3s';
SET approx_gpu.gpu_queue_timeout = '200ms';
SET approx_gpu.device = 'auto';
SELECT approx_gpu.topk(id, score, 3) AS after_timeout FROM pts;
SELECT approx_gpu.last_run()->>'device' AS device_after_timeout;
SET approx_gpu.device = 'gpu';
\set VERBOSITY sqlstate
SELECT approx_gpu.topk(id, score, 3) FROM pts;
\set VERBOSITY default
SELECT approx_gpu.topk(id, score, 3) FROM pts;
RESET approx_gpu.device;

-- Cancel while queued: the statement timeout ends the wait; the slot and its
-- staging bytes are given back.
SET approx_gpu.service_test_delay = '10s';
SET approx_gpu.gpu_queue_timeout = '60s';
SET statement_timeout = '300ms';
SELECT approx_gpu.topk(id, score, 3) FROM pts;
RESET statement_timeout;
RESET approx_gpu.service_test_delay;
RESET approx_gpu.gpu_queue_timeout;
SELECT (i->'queue'->>'in_use')::int AS in_use, (i->'queue'->>'staging_in_use_bytes')::bigint AS staging_in_use
FROM approx_gpu.gpu_service_info() i;
SELECT approx_gpu.topk(id, score, 3) AS after_cancel FROM pts;

-- A GPU error in one call fails that call only (XX000): the service goes on,
-- the same process serves the next call. (A fault that poisons the CUDA
-- context restarts the service instead: test/service/restart.sh, with a GPU.)
SELECT pid AS svc_pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service' \gset
SET approx_gpu.service_test_fault = 'error';
SELECT approx_gpu.topk(id, score, 3) FROM pts;
RESET approx_gpu.service_test_fault;
SELECT approx_gpu.topk(id, score, 3) AS after_error FROM pts;
SELECT pid = :svc_pid AS same_service, (approx_gpu.gpu_service_info()->'requests'->>'failed')::int >= 1 AS failed_counted
FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service';

-- Moving-object indexes live in the service: they answer as in the backend,
-- in parts when a batch is larger than one request may carry, and the
-- service frees them on mo_drop (and when their backend exits, below).
SELECT (approx_gpu.gpu_service_info()->>'session_objects')::int AS indexes_before \gset
SELECT approx_gpu.mo_create('svc_city', 0, 0, 100, 100, 16, 16);
SELECT (approx_gpu.mo_info('svc_city')->>'gpu_service')::boolean AS in_service,
       (approx_gpu.gpu_service_info()->>'session_objects')::int - :indexes_before AS new_indexes;
SELECT approx_gpu.mo_load('svc_city', 'SELECT id::bigint, a, b FROM pts') AS loaded;
SELECT approx_gpu.mo_range_count('svc_city', ARRAY[0, 10], ARRAY[0, 2], ARRAY[50, 96], ARRAY[8, 12]) AS served_counts,
       ARRAY[(SELECT count(*) FROM pts WHERE a <= 50 AND b <= 8),
             (SELECT count(*) FROM pts WHERE a >= 10 AND b >= 2)] AS exact_counts;
SELECT (SELECT count(*) FROM approx_gpu.mo_range('svc_city', 10, 2, 50, 8)) AS served_range,
       (SELECT count(*) FROM pts WHERE a BETWEEN 10 AND 50 AND b BETWEEN 2 AND 8) AS exact_range;
SELECT approx_gpu.mo_update('svc_city', ARRAY[1, 2, 3]::bigint[], ARRAY[99.5, 99.5, 99.5], ARRAY[99.5, 99.5, 99.5]) AS moved,
       approx_gpu.mo_delete('svc_city', ARRAY[4, 5]::bigint[]) AS deleted;
SELECT approx_gpu.mo_range_count('svc_city', ARRAY[99], ARRAY[99], ARRAY[100], ARRAY[100]) AS corner,
       (approx_gpu.mo_info('svc_city')->>'objects')::int AS objects;
SELECT approx_gpu.mo_create('svc_gone', 0, 0, 1, 1, 2, 2);
SELECT (approx_gpu.gpu_service_info()->>'session_objects')::int - :indexes_before AS two_indexes;
SELECT approx_gpu.mo_drop('svc_gone');
SELECT (approx_gpu.gpu_service_info()->>'session_objects')::int - :indexes_before AS after_drop;
-- Transitive closures go through the service too; a closure's result stays
-- there while its pairs are read, then is freed.
SELECT (approx_gpu.gpu_service_info()->>'session_objects')::int AS objects_before_closures \gset
SELECT count(*) AS served_pairs, count(DISTINCT src) AS sources
FROM approx_gpu.transitive_closure('SELECT id % 300, (id * 7) % 300 + 1 FROM pts WHERE id % 5 <> 0');
SELECT approx_gpu.last_run()->>'service_ms_round_trip' IS NOT NULL AS went_through_service;
SELECT approx_gpu.reachability_count('SELECT id % 300, (id * 7) % 300 + 1 FROM pts WHERE id % 5 <> 0') AS served_count,
       (SELECT count(*) FROM approx_gpu.reachable('SELECT id % 300, (id * 7) % 300 + 1 FROM pts WHERE id % 5 <> 0', 3)) AS reachable_from_3;
SET approx_gpu.use_service = off;
SELECT count(*) AS in_backend_pairs, count(DISTINCT src) AS sources
FROM approx_gpu.transitive_closure('SELECT id % 300, (id * 7) % 300 + 1 FROM pts WHERE id % 5 <> 0');
RESET approx_gpu.use_service;
SELECT (approx_gpu.gpu_service_info()->>'session_objects')::int - :objects_before_closures AS kept_after_closures;
-- Without the service (use_service = off) the index stays out of reach: a clean error.
SET approx_gpu.use_service = off;
SELECT approx_gpu.mo_range_count('svc_city', ARRAY[0], ARRAY[0], ARRAY[1], ARRAY[1]);
RESET approx_gpu.use_service;

-- The service's settings: the test delay is superuser-only, the rest need a restart.
CREATE ROLE gpu_service_user;
SET ROLE gpu_service_user;
SET approx_gpu.service_test_delay = '1s';
SET approx_gpu.service_test_fault = 'error';
RESET ROLE;
DROP ROLE gpu_service_user;
SET approx_gpu.service_engine = 'cpu';
SET approx_gpu.service_memory_limit = '1GB';

-- A terminated service: the postmaster starts a new one within seconds; while
-- it is down, device = gpu is a clean error and auto runs on the CPU.
SELECT pid AS old_pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service' \gset
SELECT pg_terminate_backend(:old_pid) AS terminated;
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    EXIT WHEN NOT (approx_gpu.gpu_service_info()->>'running')::boolean;
    PERFORM pg_sleep(0.01);
  END LOOP;
END $$;
SET approx_gpu.device = 'gpu';
SELECT approx_gpu.topk(id, score, 3) FROM pts;
SET approx_gpu.device = 'auto';
SELECT approx_gpu.topk(id, score, 3) AS while_down FROM pts;
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  LOOP
    EXIT WHEN (approx_gpu.gpu_service_info()->>'running')::boolean OR clock_timestamp() - t0 > interval '20 s';
    PERFORM pg_sleep(0.1);
  END LOOP;
  RAISE NOTICE 'service back within 20 s: %', (approx_gpu.gpu_service_info()->>'running')::boolean;
END $$;
SELECT pid <> :old_pid AS new_pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service';
RESET approx_gpu.device;
SELECT approx_gpu.topk(id, score, 3) AS after_restart FROM pts;
SELECT approx_gpu.last_run()->>'service_ms_round_trip' IS NOT NULL AS went_through_service;
-- The index the old service held is gone: a clean error; dropped and made anew, it works.
SELECT approx_gpu.mo_range_count('svc_city', ARRAY[0], ARRAY[0], ARRAY[100], ARRAY[100]);
SELECT approx_gpu.mo_drop('svc_city');
SELECT approx_gpu.mo_create('svc_city', 0, 0, 100, 100, 16, 16);
SELECT approx_gpu.mo_update('svc_city', ARRAY[1]::bigint[], ARRAY[1.0], ARRAY[1.0]) AS made_anew;
-- A backend that exits leaves nothing behind in the service.
CREATE TABLE svc_indexes AS SELECT (approx_gpu.gpu_service_info()->>'session_objects')::int AS n;
\c
DO $$
DECLARE t0 timestamptz := clock_timestamp(); before int := (SELECT n FROM svc_indexes);
BEGIN
  LOOP
    EXIT WHEN (approx_gpu.gpu_service_info()->>'session_objects')::int < before OR clock_timestamp() - t0 > interval '10 s';
    PERFORM pg_sleep(0.05);
  END LOOP;
  RAISE NOTICE 'the ended session''s index freed within 10 s: %', (approx_gpu.gpu_service_info()->>'session_objects')::int = before - 1;
END $$;
DROP TABLE svc_indexes;

\else
-- Not preloaded: no service; each backend runs its engines in its own process.
SELECT i->>'mode' AS mode FROM approx_gpu.gpu_service_info() i;
SELECT approx_gpu.last_run() IS NULL OR approx_gpu.last_run()->>'service_ms_round_trip' IS NULL AS in_backend;
-- The session settings exist; the service's own only when preloaded.
SHOW approx_gpu.use_service;
SHOW approx_gpu.gpu_queue_timeout;
SET approx_gpu.service_engine = 'cpu';
\endif
