#!/usr/bin/env bash
# End to end in PostgreSQL: approx_gpu.reachability_count (CPU, and GPU when
# there is one) against the count of a WITH RECURSIVE closure, on
#   sparse    20000 vertices, 16000 random edges (mean out-degree 0.8)
#   giant     2000 vertices, mean out-degree 2 (one giant component, 2.5M pairs)
#   debian    the Debian package dependency graph, when build/closure_debian_edges.csv
#             exists (made by test/bench/closure_debian_graph.sh)
# Uses psql with PGHOST/PGPORT/PGUSER/PGDATABASE from the environment; creates
# its tables (closure_bench_*). Times are server-side (clock_timestamp()), the
# median of 3 runs (1 run when WITH RECURSIVE takes over 10 s); every result is
# the count, and the three must agree (the table says so).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEBIAN=${CLOSURE_DEBIAN_CSV:-build/closure_debian_edges.csv}
psql -qX -v ON_ERROR_STOP=1 >/dev/null <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS approx_gpu;
DROP TABLE IF EXISTS closure_bench_sparse, closure_bench_giant, closure_bench_debian;
SELECT setseed(0.5);
CREATE TABLE closure_bench_sparse AS
  SELECT (random() * 19999)::int AS src, (random() * 19999)::int AS dst FROM generate_series(1, 16000);
CREATE TABLE closure_bench_giant AS
  SELECT (random() * 1999)::int AS src, (random() * 1999)::int AS dst FROM generate_series(1, 4000);
CREATE TABLE closure_bench_debian (src int4, dst int4);
ANALYZE closure_bench_sparse, closure_bench_giant;
SQL
if [ -s "$DEBIAN" ]; then
  psql -qX -v ON_ERROR_STOP=1 -c "\\copy closure_bench_debian FROM '$DEBIAN' WITH (FORMAT csv, HEADER)" >/dev/null
  psql -qX -c "ANALYZE closure_bench_debian" >/dev/null
else
  echo "($DEBIAN not found: run test/bench/closure_debian_graph.sh first for the Debian row)"
fi

psql -qX -v ON_ERROR_STOP=1 <<'SQL'
SET client_min_messages = warning;
SET jit = off;
-- median time (ms) of `runs` runs of a one-value query, and its value
CREATE FUNCTION pg_temp.timed(q text, device text, runs int) RETURNS TABLE(ms float8, value bigint)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; times float8[] := '{}'; i int;
BEGIN
  PERFORM set_config('approx_gpu.device', device, false);
  FOR i IN 1..runs LOOP
    t0 := clock_timestamp();
    EXECUTE q INTO value;
    times := times || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
    IF i = 1 AND times[1] > 10000 THEN EXIT; END IF;
  END LOOP;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY t) INTO ms FROM unnest(times) t;
  RETURN NEXT;
END $$;
CREATE FUNCTION pg_temp.bench(name text, tbl text) RETURNS TABLE(
  graph text, vertices bigint, edges bigint, pairs bigint, with_recursive_ms numeric, cpu_ms numeric, gpu_ms numeric,
  speedup_cpu numeric, speedup_gpu numeric, agree boolean)
LANGUAGE plpgsql AS $$
DECLARE rec record; c record; g_ms float8; g_value bigint; q text := format('SELECT src, dst FROM %s', tbl); has_gpu boolean;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', tbl) INTO edges;
  IF edges = 0 THEN RETURN; END IF;
  EXECUTE format('SELECT count(*) FROM (SELECT src FROM %1$s UNION SELECT dst FROM %1$s) v', tbl) INTO vertices;
  has_gpu := (approx_gpu.device_info()->>'gpu_available')::boolean;
  SELECT * INTO rec FROM pg_temp.timed(format(
    'WITH RECURSIVE r(src, dst) AS (SELECT src, dst FROM %1$s UNION SELECT r.src, e.dst FROM r JOIN %1$s e ON e.src = r.dst) SELECT count(*) FROM r',
    tbl), 'cpu', 3);
  SELECT * INTO c FROM pg_temp.timed(format('SELECT approx_gpu.reachability_count(%L)', q), 'cpu', 3);
  IF has_gpu THEN
    PERFORM pg_temp.timed(format('SELECT approx_gpu.reachability_count(%L)', q), 'gpu', 1);  -- CUDA context
    SELECT t.ms, t.value INTO g_ms, g_value FROM pg_temp.timed(format('SELECT approx_gpu.reachability_count(%L)', q), 'gpu', 3) t;
  END IF;
  graph := name;
  pairs := rec.value;
  with_recursive_ms := round(rec.ms::numeric, 1);
  cpu_ms := round(c.ms::numeric, 1);
  gpu_ms := CASE WHEN has_gpu THEN round(g_ms::numeric, 1) END;
  speedup_cpu := round((rec.ms / c.ms)::numeric, 1);
  speedup_gpu := CASE WHEN has_gpu THEN round((rec.ms / g_ms)::numeric, 1) END;
  agree := c.value = rec.value AND (NOT has_gpu OR g_value = rec.value);
  RETURN NEXT;
END $$;
\echo reachability_count vs WITH RECURSIVE (count of the closure), end to end, ms (median of 3)
SELECT * FROM pg_temp.bench('sparse', 'closure_bench_sparse')
UNION ALL SELECT * FROM pg_temp.bench('giant', 'closure_bench_giant')
UNION ALL SELECT * FROM pg_temp.bench('debian', 'closure_bench_debian');
SQL
