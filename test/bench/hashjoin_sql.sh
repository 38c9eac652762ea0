#!/usr/bin/env bash
# End to end in PostgreSQL: hash_join_count / hash_join against PostgreSQL's
# own hash join, SELECT count(*) FROM a JOIN b USING (key), on 10^7 x 10^6
# rows. Warm (one untimed run first), median of 5, server-side clock; the
# engine's time is split into reading rows out of the executor (ms_read),
# copies (ms_transfer) and engine work (ms_compute), from last_run().
#
#   PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... bash test/bench/hashjoin_sql.sh
#   N_BUILD=200000 N_PROBE=20000 RUNS=3 bash test/bench/hashjoin_sql.sh   (a small run)
#
# Needs the extension installed (CREATE EXTENSION approx_gpu is run if needed).
# Default settings: approx_gpu.device = auto (the GPU when there is one).
set -euo pipefail
N_BUILD=${N_BUILD:-10000000}
N_PROBE=${N_PROBE:-1000000}
RUNS=${RUNS:-5}

psql -X -q -v ON_ERROR_STOP=1 -v nb="$N_BUILD" -v np="$N_PROBE" -v runs="$RUNS" <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS approx_gpu;
DROP TABLE IF EXISTS hjb_a, hjb_b;
SELECT setseed(0.5);
-- a: the large side, keys in [0, nb/2] (each about twice); b: the small side, keys in [0, nb]
CREATE TABLE hjb_a AS SELECT (random() * (:nb / 2))::bigint AS key, i::bigint AS value FROM generate_series(1, :nb) i;
CREATE TABLE hjb_b AS SELECT (random() * :nb)::bigint AS key, i::bigint AS value FROM generate_series(1, :np) i;
VACUUM ANALYZE hjb_a, hjb_b;

CREATE TEMP TABLE timings(ord int, name text, run int, ms float8, read float8, transfer float8, compute float8,
                          device text, rows_in bigint, result bigint);
CREATE FUNCTION pg_temp.bench(ord int, name text, q text, runs int, engine bool) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; ms float8; r bigint; lr jsonb;
BEGIN
  EXECUTE q INTO r;  -- warm-up: caches, the backend's CUDA context
  FOR i IN 1..runs LOOP
    t0 := clock_timestamp();
    EXECUTE q INTO r;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    lr := CASE WHEN engine THEN approx_gpu.last_run() END;
    INSERT INTO timings VALUES (ord, name, i, ms, (lr->>'ms_read')::float8, (lr->>'ms_transfer')::float8,
                                (lr->>'ms_compute')::float8, lr->>'device', (lr->>'rows')::bigint, r);
  END LOOP;
END $$;

SELECT pg_temp.bench(1, 'PostgreSQL: SELECT count(*) FROM a (scan only)', 'SELECT count(*) FROM hjb_a', :runs, false);
SELECT pg_temp.bench(2, 'PostgreSQL: SELECT count(*) FROM a JOIN b USING (key)',
                     'SELECT count(*) FROM hjb_a JOIN hjb_b USING (key)', :runs, false);
SELECT pg_temp.bench(3, 'hash_join_count(build b, probe a)',
                     $$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hjb_b', 'SELECT key, value FROM hjb_a')$$, :runs, true);
SELECT pg_temp.bench(4, 'hash_join_count(build a, probe b)',
                     $$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hjb_a', 'SELECT key, value FROM hjb_b')$$, :runs, true);
SELECT pg_temp.bench(5, 'SELECT count(*) FROM hash_join(build b, probe a)',
                     $$SELECT count(*) FROM approx_gpu.hash_join('SELECT key, value FROM hjb_b', 'SELECT key, value FROM hjb_a')$$, :runs, true);
SET approx_gpu.device = 'cpu';
SELECT pg_temp.bench(6, 'hash_join_count(build b, probe a), CPU engine',
                     $$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hjb_b', 'SELECT key, value FROM hjb_a')$$, :runs, true);
RESET approx_gpu.device;

\echo
SELECT format('hash_join end to end: %s x %s rows, median of %s warm runs; device_info: gpu_available = %s, cpu_threads = %s; max_parallel_workers_per_gather = %s',
              :nb, :np, :runs, approx_gpu.device_info()->>'gpu_available', approx_gpu.device_info()->>'cpu_threads',
              current_setting('max_parallel_workers_per_gather')) AS "setting";
\pset footer off
WITH m AS (
  SELECT ord, name, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY read) AS read,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY transfer) AS transfer,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY compute) AS compute,
         max(device) AS device, max(rows_in) AS rows_in, min(result) AS result, max(result) AS result_max
  FROM timings GROUP BY ord, name)
SELECT name AS query, round(ms::numeric, 1) AS median_ms,
       round((SELECT ms FROM m WHERE ord = 2)::numeric / ms::numeric, 2) AS "vs PG join",
       device, round(read::numeric, 1) AS read_ms, round(transfer::numeric, 1) AS transfer_ms,
       round(compute::numeric, 1) AS compute_ms,
       round((rows_in / read / 1000)::numeric, 1) AS "read M rows/s",
       CASE WHEN result = result_max THEN result::text ELSE 'VARIES' END AS result
FROM m ORDER BY ord;
SELECT CASE WHEN count(DISTINCT result) = 1 THEN 'all joins agree: ' || min(result) || ' rows'
            ELSE 'JOIN RESULTS DIFFER' END AS "check"
FROM timings WHERE ord >= 2;
DROP TABLE hjb_a, hjb_b;
SQL
