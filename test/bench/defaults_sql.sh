#!/usr/bin/env bash
# Issue 39 item 5, the acceptance comparisons at default settings, both sides
# at the same max_parallel_workers_per_gather (PAR; default: the server's own
# setting, which both sides then use):
#  - topk(relation, 'id', col, k) against SELECT ... ORDER BY col DESC, id
#    LIMIT k (PostgreSQL's top-N heapsort), TOPK_SIZES rows (default "1000000
#    10000000"), an int8 and a float8 score column, k in TOPK_K (default "10
#    100 1000"); target >= 1.5x on a CPU-only machine, >= 2x with a GPU;
#  - hash_join_count('b', 'key', 'a', 'key') against SELECT count(*) FROM a
#    JOIN b USING (key), N_BUILD x N_PROBE rows (default 10^7 x 10^6, a's keys
#    each about twice, as test/bench/hashjoin_sql.sh; work_mem WORK_MEM,
#    default 1GB: PostgreSQL's join in one batch); target >= 10x with a GPU.
# Warm (one untimed run first), median of RUNS (default 5), server clock
# (clock_timestamp() around EXECUTE); every answer is checked against
# PostgreSQL's. approx_gpu settings are left at their defaults (device auto,
# read_workers auto). One table, with the ratio and the target:
#
#   PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... bash test/bench/defaults_sql.sh
#   on the GPU machine: STEPS=bench BENCH=defaults BENCH_KINDS=sql test/gpu/device.sh
#   TOPK_SIZES=100000 N_BUILD=200000 N_PROBE=20000 RUNS=3 bash test/bench/defaults_sql.sh   (a small run)
set -euo pipefail
TOPK_SIZES=${TOPK_SIZES:-"1000000 10000000"}
TOPK_K=${TOPK_K:-"10 100 1000"}
N_BUILD=${N_BUILD:-10000000}
N_PROBE=${N_PROBE:-1000000}
RUNS=${RUNS:-5}
WORK_MEM=${WORK_MEM:-1GB}
PAR=${PAR:-$(psql -X -A -t -c "SHOW max_parallel_workers_per_gather")}
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -P footer=off)
# Each session: the settings both sides run under and the timing function.
PRELUDE=$(cat <<'SQL'
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = :par;
SET work_mem = :'work_mem';
SET bench.runs = :runs;
-- The median of `runs` timed runs after one warm-up, the answer (as text) and last_run().
CREATE FUNCTION pg_temp.timed(q text, OUT ms float8, OUT ans text, OUT lr jsonb) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; v float8[] := '{}';
BEGIN
  EXECUTE q INTO ans;
  FOR i IN 1..current_setting('bench.runs')::int LOOP
    t0 := clock_timestamp();
    EXECUTE q INTO ans;
    v := v || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
  END LOOP;
  lr := approx_gpu.last_run();
  ms := (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(v) x);
END $$;
SQL
)
run_sql() { { echo "$PRELUDE"; cat; } | "${PSQL[@]}" -v runs="$RUNS" -v par="$PAR" -v work_mem="$WORK_MEM" "$@"; }

"${PSQL[@]}" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
DROP TABLE IF EXISTS public.defaults_acc;
CREATE TABLE public.defaults_acc (ord serial, what text, rows text, col text, k int, pg_ms float8, ms float8,
                                  ms_read float8, ms_compute float8, workers text, device text, same boolean,
                                  target float8);
SQL

for n in $TOPK_SIZES; do
run_sql -v n="$n" -v ks="{${TOPK_K// /,}}" <<'SQL'
SELECT setseed(0.5) AS seed \gset
DROP TABLE IF EXISTS public.defaults_t;
CREATE TABLE public.defaults_t AS SELECT i::bigint AS id, (random() * 1e6)::bigint AS i8,
  floor(random() * 1e6)::float8 / 7 AS f8 FROM generate_series(1, :n) i;
VACUUM ANALYZE public.defaults_t;
SET bench.ks = :'ks';
DO $$
DECLARE c text; kk int; o text; q text; p record; r record;
        gpu boolean := (approx_gpu.device_info()->>'gpu_available')::boolean;
BEGIN
  FOREACH c IN ARRAY ARRAY['i8', 'f8'] LOOP
    FOREACH kk IN ARRAY current_setting('bench.ks')::int[] LOOP
      o := format('SELECT array_agg(ROW(id, %1$s)::approx_gpu.scored ORDER BY %1$s DESC, id)::text FROM '
                  '(SELECT id, %1$s FROM public.defaults_t ORDER BY %1$s DESC, id LIMIT %2$s) s', c, kk);
      q := format('SELECT approx_gpu.topk(''public.defaults_t'', ''id'', %L, %s)::text', c, kk);
      p := pg_temp.timed(o);
      r := pg_temp.timed(q);
      INSERT INTO public.defaults_acc (what, rows, col, k, pg_ms, ms, ms_read, ms_compute, workers, device, same, target)
      VALUES ('topk(relation) vs ORDER BY ... LIMIT k', (SELECT count(*) FROM public.defaults_t)::text, c, kk,
              p.ms, r.ms, (r.lr->>'ms_read')::float8, (r.lr->>'ms_compute')::float8, r.lr->>'read_workers',
              r.lr->>'device', p.ans = r.ans, CASE WHEN gpu THEN 2 ELSE 1.5 END);
    END LOOP;
  END LOOP;
END $$;
DROP TABLE public.defaults_t;
SQL
done

run_sql -v nb="$N_BUILD" -v np="$N_PROBE" <<'SQL'
SELECT setseed(0.5) AS seed \gset
DROP TABLE IF EXISTS public.defaults_a, public.defaults_b;
CREATE TABLE public.defaults_a AS SELECT (random() * (:nb / 2))::bigint AS key, i::bigint AS value FROM generate_series(1, :nb) i;
CREATE TABLE public.defaults_b AS SELECT (random() * :nb)::bigint AS key, i::bigint AS value FROM generate_series(1, :np) i;
VACUUM ANALYZE public.defaults_a, public.defaults_b;
DO $$
DECLARE p record; r record;
BEGIN
  p := pg_temp.timed('SELECT count(*)::text FROM public.defaults_a JOIN public.defaults_b USING (key)');
  r := pg_temp.timed($q$SELECT approx_gpu.hash_join_count('public.defaults_b', 'key', 'public.defaults_a', 'key')::text$q$);
  INSERT INTO public.defaults_acc (what, rows, col, k, pg_ms, ms, ms_read, ms_compute, workers, device, same, target)
  VALUES ('hash_join_count(relation b, relation a) vs count(*) of the join',
          (SELECT count(*) FROM public.defaults_a) || ' x ' || (SELECT count(*) FROM public.defaults_b), 'key', NULL,
          p.ms, r.ms, (r.lr->>'ms_read')::float8, (r.lr->>'ms_compute')::float8, r.lr->>'read_workers',
          r.lr->>'device', p.ans = r.ans,
          CASE WHEN (approx_gpu.device_info()->>'gpu_available')::boolean THEN 10 END);
END $$;
DROP TABLE public.defaults_a, public.defaults_b;
SQL

run_sql -v cores="$(nproc)" <<'SQL'
SELECT format('defaults: max_parallel_workers_per_gather = %s for both sides (max_parallel_workers = %s), '
              'approx_gpu.device = %s, approx_gpu.read_workers = %s, work_mem = %s; gpu_available = %s, '
              'cpu_threads = %s; %s cores; warm, median of %s runs, server clock',
              current_setting('max_parallel_workers_per_gather'), current_setting('max_parallel_workers'),
              current_setting('approx_gpu.device'), current_setting('approx_gpu.read_workers'),
              current_setting('work_mem'), approx_gpu.device_info()->>'gpu_available',
              approx_gpu.device_info()->>'cpu_threads', :'cores', current_setting('bench.runs')) AS setting;
SELECT what, rows, col, k, round(pg_ms::numeric, 1) AS "PostgreSQL ms", round(ms::numeric, 1) AS "approx_gpu ms",
       round((pg_ms / nullif(ms, 0))::numeric, 2) AS "x", target AS "target x",
       CASE WHEN target IS NULL THEN '-' WHEN pg_ms / nullif(ms, 0) >= target THEN 'met' ELSE 'NOT MET' END AS "target",
       round(ms_read::numeric, 1) AS "ms read", round(ms_compute::numeric, 1) AS "ms compute",
       workers AS "read workers", device, CASE WHEN same THEN 'yes' ELSE 'NO: DIFFERS' END AS "same answer"
FROM public.defaults_acc ORDER BY ord;
DROP TABLE public.defaults_acc;
SQL
