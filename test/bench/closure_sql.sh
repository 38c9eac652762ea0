#!/usr/bin/env bash
# End to end in PostgreSQL: approx_gpu.reachability_count (CPU, and GPU when
# there is one) against the count of a WITH RECURSIVE closure, on
#   sparse    20000 vertices, 16000 random edges (mean out-degree 0.8)
#   giant     2000 vertices, mean out-degree 2 (one giant component, 2.5M pairs)
#   debian    the Debian package dependency graph, when build/closure_debian_edges.csv
#             exists (made by test/bench/closure_debian_graph.sh)
# Uses psql with PGHOST/PGPORT/PGUSER/PGDATABASE from the environment; creates
# its tables (closure_bench_*). Times are server-side (clock_timestamp()), the
# median of RUNS (default 3) runs (1 run when WITH RECURSIVE takes over 10 s;
# the engine forms after one warm-up run);
# every result is the count, and all must agree (the table says so).
# The first table is the summary (plot.sh reads it); the second (test/bench/
# forms.sql) has every form, the inner-query form reachability_count(query)
# and the relation form reachability_count(relation, src, dst) on each engine,
# with ms read / transfer / compute, rows/s read, read workers and the ratio to
# WITH RECURSIVE. PG_WORKERS (max_parallel_workers_per_gather of PostgreSQL's
# query and the inner-query form; default cores/2 capped at 8), READ_WORKERS
# (approx_gpu.read_workers of the relation form, and its
# max_parallel_workers_per_gather; default -1 = auto under PG_WORKERS).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEBIAN=${CLOSURE_DEBIAN_CSV:-build/closure_debian_edges.csv}
RUNS=${RUNS:-3}
. test/bench/forms.sh
psql -qX -v ON_ERROR_STOP=1 >/dev/null <<SQL
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
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

psql -qX -v ON_ERROR_STOP=1 -v runs="$RUNS" -v pg_workers="$PG_WORKERS" -v read_workers="$READ_WORKERS" \
     -v workers_note="$NOTE" -v forms="$FORMS" <<'SQL'
SET client_min_messages = warning;
SET jit = off;
\i :forms
SET closure_bench.runs = :runs;
-- Every form of one graph, rows 10 * g + 1.. of the forms table: WITH RECURSIVE (no warm-up, one
-- run when it takes over 10 s), reachability_count over the inner query and over the relation on
-- the CPU, and on the GPU when there is one (each after a warm-up run: the CPU's threads, the CUDA
-- context). Returns the summary row (medians: percentile_disc).
CREATE FUNCTION pg_temp.bench(g int, name text, tbl text) RETURNS TABLE(
  graph text, vertices bigint, edges bigint, pairs bigint, with_recursive_ms numeric, cpu_ms numeric, gpu_ms numeric,
  speedup_cpu numeric, speedup_gpu numeric, agree boolean)
LANGUAGE plpgsql AS $$
DECLARE q text := format('SELECT src, dst FROM %s', tbl); has_gpu boolean; b int := 10 * g;
        runs int := current_setting('closure_bench.runs')::int; rec float8; c float8; gg float8;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', tbl) INTO edges;
  IF edges = 0 THEN RETURN; END IF;
  EXECUTE format('SELECT count(*) FROM (SELECT src FROM %1$s UNION SELECT dst FROM %1$s) v', tbl) INTO vertices;
  has_gpu := (approx_gpu.device_info()->>'gpu_available')::boolean;
  PERFORM pg_temp.form_time(b + 1, name || ': PostgreSQL WITH RECURSIVE ... SELECT count(*)', b + 1, 'pg', format(
    'WITH RECURSIVE r(src, dst) AS (SELECT src, dst FROM %1$s UNION SELECT r.src, e.dst FROM r JOIN %1$s e ON e.src = r.dst) SELECT count(*) FROM r',
    tbl), runs, 'cpu', false, cutoff_ms => 10000);
  PERFORM pg_temp.form_time(b + 2, name || ': reachability_count(query)', b + 1, 'query',
                            format('SELECT approx_gpu.reachability_count(%L)', q), runs, 'cpu');
  PERFORM pg_temp.form_time(b + 3, name || ': reachability_count(relation)', b + 1, 'relation',
                            format('SELECT approx_gpu.reachability_count(%L, ''src'', ''dst'')', tbl), runs, 'cpu');
  IF has_gpu THEN
    PERFORM pg_temp.form_time(b + 4, name || ': reachability_count(query), GPU', b + 1, 'query',
                              format('SELECT approx_gpu.reachability_count(%L)', q), runs, 'gpu');
    PERFORM pg_temp.form_time(b + 5, name || ': reachability_count(relation), GPU', b + 1, 'relation',
                              format('SELECT approx_gpu.reachability_count(%L, ''src'', ''dst'')', tbl), runs, 'gpu');
  END IF;
  SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE ord = b + 1),
         percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE ord = b + 2),
         percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE ord = b + 4),
         count(DISTINCT answer) = 1, min(answer) FILTER (WHERE ord = b + 1)
    INTO rec, c, gg, agree, pairs
    FROM form_runs WHERE ord BETWEEN b + 1 AND b + 9;
  graph := name;
  with_recursive_ms := round(rec::numeric, 1);
  cpu_ms := round(c::numeric, 1);
  gpu_ms := CASE WHEN has_gpu THEN round(gg::numeric, 1) END;
  speedup_cpu := round((rec / c)::numeric, 1);
  speedup_gpu := CASE WHEN has_gpu THEN round((rec / gg)::numeric, 1) END;
  RETURN NEXT;
END $$;
\echo reachability_count vs WITH RECURSIVE (count of the closure), end to end, ms (median of :runs)
SELECT * FROM pg_temp.bench(1, 'sparse', 'closure_bench_sparse')
UNION ALL SELECT * FROM pg_temp.bench(2, 'giant', 'closure_bench_giant')
UNION ALL SELECT * FROM pg_temp.bench(3, 'debian', 'closure_bench_debian');
\pset footer off
SELECT pg_temp.form_header(format('closure forms (reachability_count), %s runs (engine forms warm; WITH RECURSIVE cold, one run past 10 s)', :runs)) AS "setting";
SELECT * FROM pg_temp.form_table;
SQL
