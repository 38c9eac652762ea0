#!/usr/bin/env bash
# The relation reader in sampling mode (table synopses) by column type and
# worker count: refresh_synopsis of a 10^7-row table (m = 10^4, bandwidth
# 'scott', smoothing 'never': compute of a few ms), read ms from last_run().
# bigint columns are only counted; float8 and numeric columns are read and
# checked finite in every row; text columns are only fetched for the sample.
#   PGHOST=... bash test/bench/sampling_sql.sh      N=1000000 WORKERS="0 1" for a small run
set -euo pipefail
N=${N:-10000000}
RUNS=${RUNS:-3}
CORES=$(nproc)
WORKERS=${WORKERS:-"0 4 8 $((CORES > 8 ? CORES - 1 : CORES))"}
psql -X -q -v ON_ERROR_STOP=1 -v n="$N" -v runs="$RUNS" -v workers="$WORKERS" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
DROP TABLE IF EXISTS smp_t;
CREATE TABLE smp_t AS SELECT i::bigint AS a, (i::bigint * 7919 % 1000) AS b, random() AS x, random() * 100 AS y,
    round((random() * 1000)::numeric, 2) AS amount, (ARRAY['red', 'green', 'blue'])[1 + i % 3] AS color
  FROM generate_series(1, :n) i;
VACUUM ANALYZE smp_t;
SELECT set_config('approx_bench.workers', :'workers', false), set_config('approx_bench.runs', :'runs', false) \gset
\o /dev/null
SELECT approx_gpu.create_synopsis('smp_' || s, 'smp_t', c::name[], 10000, 'scott', 'never')
  FROM (VALUES ('int2', ARRAY['a', 'b']), ('float2', ARRAY['x', 'y']), ('float2int2', ARRAY['a', 'b', 'x', 'y']),
               ('numeric', ARRAY['amount']), ('text', ARRAY['a', 'color'])) v(s, c);
CREATE TEMP TABLE timings(cols text, workers int, run int, ms float8, read float8, launched int);
DO $$
DECLARE w int; s text;
BEGIN
  FOREACH w IN ARRAY string_to_array(current_setting('approx_bench.workers'), ' ')::int[] LOOP
    PERFORM set_config('approx_gpu.read_workers', w::text, false);
    PERFORM set_config('max_parallel_workers_per_gather', w::text, false);
    FOREACH s IN ARRAY ARRAY['int2', 'float2', 'float2int2', 'numeric', 'text'] LOOP
      PERFORM approx_gpu.refresh_synopsis('smp_' || s);  -- warm-up
      FOR i IN 1..current_setting('approx_bench.runs')::int LOOP
        DECLARE t0 timestamptz := clock_timestamp(); lr jsonb;
        BEGIN
          PERFORM approx_gpu.refresh_synopsis('smp_' || s);
          lr := approx_gpu.last_run();
          INSERT INTO timings VALUES (s, w, i, extract(epoch FROM clock_timestamp() - t0) * 1000,
                                      (lr->>'ms_read')::float8, (lr->>'read_workers')::int);
        END;
      END LOOP;
    END LOOP;
    FOR i IN 1..current_setting('approx_bench.runs')::int LOOP
      DECLARE t0 timestamptz := clock_timestamp();
      BEGIN
        PERFORM count(x) FROM smp_t;
        INSERT INTO timings VALUES ('PostgreSQL: count(x)', w, i, extract(epoch FROM clock_timestamp() - t0) * 1000, NULL, NULL);
      END;
    END LOOP;
  END LOOP;
END $$;
\o
\pset footer off
SELECT format('sampling reader: %s rows, %s MB; median of %s warm runs', :n, pg_relation_size('smp_t') / 1000000, :runs) AS setting;
SELECT workers, cols AS "synopsis columns", round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS "build ms",
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY read)::numeric, 1) AS "read ms", max(launched) AS launched,
       round((:n / percentile_cont(0.5) WITHIN GROUP (ORDER BY coalesce(read, ms)) / 1000)::numeric, 1) AS "M rows/s"
FROM timings GROUP BY workers, cols ORDER BY workers, cols;
\o /dev/null
SELECT approx_gpu.drop_synopsis('smp_' || s) FROM unnest(ARRAY['int2', 'float2', 'float2int2', 'numeric', 'text']) s;
\o
DROP TABLE smp_t;
SQL
