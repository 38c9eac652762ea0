#!/usr/bin/env bash
# The relation reader alone: how fast a table's fixed-width columns reach the
# engines' buffers, by worker count, next to PostgreSQL scanning the same
# table (SELECT count(key) FROM t with its parallel workers) and
# the inner-query (SPI) path. The read is timed by hash_join_count(one-row
# build, probe = the table), whose engine work is a few ms at most:
# ms_read / rows from last_run(). Warm, median of RUNS, server-side clock.
# A third line: the reader in sampling mode, as table synopses use it
# (refresh_synopsis of a synopsis of (key, value), m = 10^4; bandwidth
# 'scott' and smoothing 'never' keep its compute to a few ms).
#
#   PGHOST=... bash test/bench/reader_sql.sh
#   N=1000000 RUNS=3 WORKERS="0 1 2" bash test/bench/reader_sql.sh      (a small run)
set -euo pipefail
N=${N:-10000000}
RUNS=${RUNS:-5}
CORES=$(nproc)
WORKERS=${WORKERS:-"0 1 2 4 8 $((CORES > 8 ? CORES - 1 : CORES))"}

psql -X -q -v ON_ERROR_STOP=1 -v n="$N" -v runs="$RUNS" -v workers="$WORKERS" -v cores="$CORES" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
DROP TABLE IF EXISTS rdb_t, rdb_one;
CREATE TABLE rdb_t AS SELECT (i::bigint * 7919 % :n) AS key, i::bigint AS value FROM generate_series(1, :n) i;
CREATE TABLE rdb_one AS SELECT -1::bigint AS key;
VACUUM ANALYZE rdb_t, rdb_one;
SELECT set_config('approx_bench.workers', :'workers', false), set_config('approx_bench.runs', :'runs', false) \gset

CREATE TEMP TABLE timings(ord int, name text, workers int, run int, ms float8, read float8, launched int, rows bigint);
CREATE FUNCTION pg_temp.bench(ord int, name text, q text, runs int, w int, engine bool) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; ms float8; lr jsonb;
BEGIN
  EXECUTE q;  -- warm-up
  FOR i IN 1..runs LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    lr := CASE WHEN engine THEN approx_gpu.last_run() END;
    INSERT INTO timings VALUES (ord, name, w, i, ms, (lr->>'ms_read')::float8, (lr->>'read_workers')::int, (lr->>'rows')::bigint);
  END LOOP;
END $$;

\o /dev/null
SELECT approx_gpu.create_synopsis('rdb_syn', 'rdb_t', ARRAY['key', 'value']::name[], 10000, 'scott', 'never');
SELECT pg_temp.bench(0, 'inner query (SPI)', $$SELECT approx_gpu.hash_join_count('SELECT key, key FROM rdb_one', 'SELECT key, key FROM rdb_t')$$, :runs, 0, true);
DO $$
DECLARE w int;
BEGIN
  FOREACH w IN ARRAY string_to_array(current_setting('approx_bench.workers'), ' ')::int[] LOOP
    PERFORM set_config('max_parallel_workers_per_gather', w::text, false);
    PERFORM set_config('approx_gpu.read_workers', w::text, false);
    PERFORM pg_temp.bench(1, 'PostgreSQL: SELECT count(key) FROM t', 'SELECT count(key) FROM rdb_t',
                          current_setting('approx_bench.runs')::int, w, false);
    PERFORM pg_temp.bench(2, 'relation reader (key)', $q$SELECT approx_gpu.hash_join_count('rdb_one', 'key', 'rdb_t', 'key')$q$,
                          current_setting('approx_bench.runs')::int, w, true);
    PERFORM pg_temp.bench(3, 'sampling reader (refresh_synopsis)', $q$SELECT approx_gpu.refresh_synopsis('rdb_syn')$q$,
                          current_setting('approx_bench.runs')::int, w, true);
  END LOOP;
END $$;
\o

\pset footer off
SELECT format('relation reader: %s rows of (bigint, bigint), %s MB; median of %s warm runs; %s cores; max_worker_processes = %s, max_parallel_workers = %s',
              :n, pg_relation_size('rdb_t') / 1000000, :runs, :cores,
              current_setting('max_worker_processes'), current_setting('max_parallel_workers')) AS "setting";
WITH m AS (
  SELECT ord, name, workers, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY read) AS read, max(launched) AS launched, max(rows) AS rows
  FROM timings GROUP BY ord, name, workers)
SELECT m.workers AS "workers asked", m.name AS "reads", round(m.ms::numeric, 1) AS "median ms",
       round(m.read::numeric, 1) AS "read ms", m.launched AS "workers launched",
       round((:n / coalesce(m.read, m.ms) / 1000)::numeric, 1) AS "M rows/s read",
       round(((SELECT ms FROM m p WHERE p.ord = 1 AND p.workers = m.workers) / m.ms)::numeric, 2) AS "PG scan ms / ours"
FROM m ORDER BY m.workers, m.ord;
SELECT approx_gpu.drop_synopsis('rdb_syn') \gset
DROP TABLE rdb_t, rdb_one;
SQL
