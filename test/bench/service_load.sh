#!/usr/bin/env bash
# The GPU service under load, against a running cluster that has
# approx_gpu in shared_preload_libraries and max_connections >= 220 (PGHOST,
# PGPORT, PGUSER; test/gpu/device.sh STEPS=service starts one). Prints:
#   1. the first GPU call of a fresh backend, through the service and in-process
#      (use_service = off: the backend creates its own CUDA context);
#   2. approx_count_many with 10^4 boxes on a resident 10^4-row synopsis: end
#      to end (the SQL statement) against the engine's own time (last_run);
#   3. small GPU calls per second from 32 sessions, service vs in-process;
#   4. SESSIONS (200) sessions calling GPU functions for LOAD_SECONDS (120):
#      errors, and the GPU's memory (nvidia-smi) every 10 s against one
#      context + approx_gpu.service_memory_limit;
#   5. a moving-object index (10^6 objects) held by the service vs in the
#      backend: create, load, move, range counts, a range.
# Benchmark, not a timed test: it prints what it measured and a verdict per
# target; nothing here fails the test suite.
set -uo pipefail
PSQL=${PSQL:-psql}
PGBENCH=${PGBENCH:-pgbench}
SESSIONS=${SESSIONS:-200}
LOAD_SECONDS=${LOAD_SECONDS:-120}
THROUGHPUT_SECONDS=${THROUGHPUT_SECONDS:-20}
DB=${PGDATABASE:-postgres}
q() { $PSQL -qXAt -d "$DB" -v ON_ERROR_STOP=1 "$@"; }
gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }
PARTS=${PARTS:-1,2,3,4,5}   # which of the sections below to run
part() { [[ ",$PARTS," == *",$1,"* ]]; }
W=$(mktemp -d)

echo "== setup"
q <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
DROP TABLE IF EXISTS svc_pts, svc_syn, svc_boxes;
CREATE TABLE svc_pts AS
  SELECT g AS id, ((g::bigint * 7919) % 1000003)::float8 AS score, (g % 997)::float8 AS a, ((g * 31) % 101)::float8 AS b
  FROM generate_series(1, 200000) g;
SET approx_gpu.random_seed = 5;
CREATE TABLE svc_syn AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 10000) AS s FROM svc_pts;
-- 10^4 boxes (lo, hi as 10^4 x 2 arrays)
CREATE TABLE svc_boxes AS
  SELECT array_agg(ARRAY[x, y] ORDER BY i) AS lo, array_agg(ARRAY[x + 100, y + 20] ORDER BY i) AS hi
  FROM (SELECT i, (i % 900)::float8 AS x, (i % 80)::float8 AS y FROM generate_series(1, 10000) i) t;
ANALYZE svc_pts;
SQL
q -c "SELECT approx_gpu.gpu_service_info()" | tee "$W/info_start.json"
base=${BASE_MEM:-0}   # GPU memory in use before this cluster started (other processes)
sleep 3               # the setup's backends (synopsis builds run in them) give their contexts back
idle=$(( $(gpu_mem) - base ))
limit_mb=$(q -c "SELECT setting FROM pg_settings WHERE name = 'approx_gpu.service_memory_limit'")  # in MB
echo "GPU memory of the idle service: ${idle} MiB (its context, the pool's first block; ${base} MiB in use before the cluster started); pool limit ${limit_mb} MiB"

if part 1; then
echo
echo "== 1. first GPU call in a fresh backend (ms, measured in SQL around the call)"
first_call() {  # $1: use_service on|off
  PGOPTIONS="-c approx_gpu.device=gpu -c approx_gpu.use_service=$1" q <<'SQL'
DO $$
DECLARE t0 timestamptz; t1 timestamptz; t2 timestamptz; x float8[] := array(SELECT score FROM svc_pts WHERE id <= 20000);
BEGIN
  t0 := clock_timestamp();
  PERFORM approx_gpu.kde_bandwidth(x);
  t1 := clock_timestamp();
  PERFORM approx_gpu.kde_bandwidth(x);
  t2 := clock_timestamp();
  RAISE NOTICE '% %', round(extract(epoch FROM t1 - t0)::numeric * 1000, 2), round(extract(epoch FROM t2 - t1)::numeric * 1000, 2);
END $$;
SQL
}
for mode in on off; do
  firsts=""; seconds=""
  for i in 1 2 3 4 5; do
    r=$(first_call $mode 2>&1 | sed -n 's/.*NOTICE:  \([0-9.]*\) \([0-9.]*\)/\1 \2/p')
    firsts="$firsts ${r% *}"; seconds="$seconds ${r#* }"
  done
  label=$([ $mode = on ] && echo "service   " || echo "in-process")
  echo "$label first call:$firsts   second call:$seconds"
done
echo "target: first call through the service <= 10 ms"
fi

if part 2; then
echo
echo "== 2. approx_count_many, 10^4 boxes on a resident 10^4-row synopsis (ms)"
PGOPTIONS="-c approx_gpu.device=gpu" q <<'SQL'
DO $$
DECLARE t0 timestamptz; e2e float8[] := '{}'; eng float8[] := '{}'; run float8[] := '{}'; rt float8[] := '{}'; over float8[] := '{}'; r jsonb; e float8;
BEGIN
  PERFORM approx_gpu.approx_count_many(s, lo, hi) FROM svc_syn, svc_boxes;   -- makes it resident
  FOR i IN 1..30 LOOP
    t0 := clock_timestamp();
    PERFORM approx_gpu.approx_count_many(s, lo, hi) FROM svc_syn, svc_boxes;
    e := extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
    e2e := e2e || e;
    r := approx_gpu.last_run();
    eng := eng || ((r->>'ms_compute')::float8 + (r->>'ms_transfer')::float8);
    run := run || (r->>'service_ms_run')::float8;
    rt := rt || (r->>'service_ms_round_trip')::float8;
    over := over || (e - (r->>'service_ms_run')::float8);
  END LOOP;
  RAISE NOTICE 'medians: end to end % ms | the engine call in the service (evaluate) % ms, of which the GPU dispatch % ms | round trip from the backend % ms | resident hit % | end to end minus the engine call, per call: % ms',
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(e2e) v),
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(run) v),
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(eng) v),
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(rt) v),
    r->>'service_resident_hit',
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(over) v);
  RAISE NOTICE 'last_run: %', r;
END $$;
SQL
PGOPTIONS="-c approx_gpu.device=gpu" q <<'SQL'
DO $$
DECLARE t0 timestamptz; e2e float8[] := '{}'; over float8[] := '{}'; s approx_gpu.kde_synopsis; l float8[]; h float8[]; e float8;
BEGIN
  SELECT svc_syn.s INTO s FROM svc_syn; SELECT lo, hi INTO l, h FROM svc_boxes;
  PERFORM approx_gpu.approx_count_many(s, l, h);
  FOR i IN 1..30 LOOP
    t0 := clock_timestamp();
    PERFORM approx_gpu.approx_count_many(s, l, h);
    e := extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
    e2e := e2e || e;
    over := over || (e - (approx_gpu.last_run()->>'service_ms_run')::float8);
  END LOOP;
  RAISE NOTICE 'the same with synopsis and boxes in variables (no detoast per call): end to end median % ms, minus the engine call % ms',
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(e2e) v),
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(over) v);
END $$;
SQL
PGOPTIONS="-c approx_gpu.device=gpu -c approx_gpu.use_service=off" q <<'SQL'
DO $$
DECLARE t0 timestamptz; e2e float8[] := '{}'; eng float8[] := '{}'; r jsonb;
BEGIN
  PERFORM approx_gpu.approx_count_many(s, lo, hi) FROM svc_syn, svc_boxes;
  FOR i IN 1..30 LOOP
    t0 := clock_timestamp();
    PERFORM approx_gpu.approx_count_many(s, lo, hi) FROM svc_syn, svc_boxes;
    e2e := e2e || extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
    r := approx_gpu.last_run();
    eng := eng || ((r->>'ms_compute')::float8 + (r->>'ms_transfer')::float8);
  END LOOP;
  RAISE NOTICE 'in-process (use_service = off), from the tables: end to end median % ms | the engine (compute + transfer) % ms',
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(e2e) v),
    (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY v)::numeric, 3) FROM unnest(eng) v);
END $$;
SQL
echo "target: end to end within 0.5 ms of the engine's own time"
fi

if part 3; then
echo
echo "== 3. small GPU calls per second from 32 sessions (approx_count_many, 10 boxes, resident synopsis)"
cat > "$W/small.sql" <<'SQL'
\set x random(0, 800)
SELECT approx_gpu.approx_count_many(s, ARRAY[[:x, 0], [:x + 50, 10]]::float8[], ARRAY[[:x + 100, 50], [:x + 150, 90]]::float8[]) FROM svc_syn;
SQL
for mode in on off; do
  label=$([ $mode = on ] && echo "service" || echo "in-process")
  ( sleep $((THROUGHPUT_SECONDS / 2)); echo $(( $(gpu_mem) - base )) > "$W/mid_$mode" ) &
  PGOPTIONS="-c approx_gpu.device=gpu -c approx_gpu.use_service=$mode" \
    $PGBENCH -n -c 32 -j 16 -T "$THROUGHPUT_SECONDS" -f "$W/small.sql" "$DB" >"$W/small_$mode.txt" 2>&1
  wait
  echo "$label: $(grep -E '^tps' "$W/small_$mode.txt" | head -1) | $(grep -E 'failed' "$W/small_$mode.txt" | head -1) | GPU memory of this cluster mid-run $(cat "$W/mid_$mode") MiB"
done
sleep 2
echo "GPU memory of this cluster after the in-process sessions ended: $(( $(gpu_mem) - base )) MiB"
fi

if part 4; then
echo
echo "== 4. $SESSIONS sessions for $LOAD_SECONDS s through the service"
cat > "$W/mix.sql" <<'SQL'
\set r random(1, 180000)
\set x random(0, 800)
SELECT approx_gpu.approx_count_many(s, ARRAY[[:x, 0]]::float8[], ARRAY[[:x + 100, 50]]::float8[]) FROM svc_syn;
SELECT approx_gpu.topk(id, score, 10) FROM svc_pts WHERE id BETWEEN :r AND :r + 20000;
SELECT approx_gpu.kde_bandwidth(array_agg(score)) FROM svc_pts WHERE id BETWEEN :r AND :r + 15000;
SELECT approx_gpu.hash_join_count('SELECT id % 5000, id FROM svc_pts WHERE id <= 12000', 'SELECT id, id FROM svc_pts WHERE id <= 8000');
SQL
( for t in $(seq 10 10 "$LOAD_SECONDS"); do sleep 10; echo "$t $(( $(gpu_mem) - base ))"; done ) > "$W/mem.txt" &
sampler=$!
PGOPTIONS="-c approx_gpu.device=gpu" $PGBENCH -n -c "$SESSIONS" -j 16 -T "$LOAD_SECONDS" -f "$W/mix.sql" "$DB" >"$W/load.txt" 2>&1
wait $sampler
grep -E '^(number of (transactions|failed)|latency average|tps|number of clients)' "$W/load.txt"
grep -iE 'error|abort' "$W/load.txt" | head -5
echo "GPU memory of this cluster (s MiB): $(tr '\n' ' ' < "$W/mem.txt")"
m60=$(awk '$1 == 60 {print $2}' "$W/mem.txt"); mend=$(tail -1 "$W/mem.txt" | awk '{print $2}')
max=$(awk 'BEGIN {m = 0} {if ($2 > m) m = $2} END {print m}' "$W/mem.txt")
echo "peak ${max} MiB vs one context + pool limit = ${idle} + ${limit_mb} = $((idle + limit_mb)) MiB: $([ "$max" -le $((idle + limit_mb)) ] && echo within || echo OVER)"
echo "minute 1 -> end: ${m60} -> ${mend} MiB ($([ "${mend:-0}" -le "${m60:-0}" ] && echo 'no growth' || echo "grew $((mend - m60)) MiB"))"
fi

if part 5; then
echo
echo "== 5. a moving-object index in the service vs in the backend (10^6 objects; ms, in SQL around each call)"
for mode in on off; do
  label=$([ $mode = on ] && echo "service   " || echo "in-process")
  PGOPTIONS="-c approx_gpu.device=gpu -c approx_gpu.use_service=$mode" q <<'SQL' 2>&1 | sed -n "s/.*NOTICE:  /$label /p"
DO $$
DECLARE t0 timestamptz; t_create float8; t_load float8; t_move float8; t_count float8; t_range float8; ids bigint[]; xs float8[]; ys float8[]; qx float8[]; qy float8[]; qx2 float8[]; qy2 float8[]; n bigint; c bigint[];
BEGIN
  SELECT array_agg(g::bigint), array_agg(((g::bigint * 7919) % 100000) / 100.0), array_agg(((g::bigint * 104729) % 100000) / 100.0)
    INTO ids, xs, ys FROM generate_series(1, 1000000) g;
  SELECT array_agg((g % 900)::float8), array_agg((g % 950)::float8), array_agg((g % 900 + 100)::float8), array_agg((g % 950 + 50)::float8)
    INTO qx, qy, qx2, qy2 FROM generate_series(1, 10000) g;
  t0 := clock_timestamp(); PERFORM approx_gpu.mo_create('svc_load', 0, 0, 1000, 1000, 256, 256); t_create := extract(epoch FROM clock_timestamp() - t0) * 1000;
  t0 := clock_timestamp(); PERFORM approx_gpu.mo_update('svc_load', ids, xs, ys); t_load := extract(epoch FROM clock_timestamp() - t0) * 1000;
  t0 := clock_timestamp(); PERFORM approx_gpu.mo_update('svc_load', ids[1:100000], ys[1:100000], xs[1:100000]); t_move := extract(epoch FROM clock_timestamp() - t0) * 1000;
  t0 := clock_timestamp(); c := approx_gpu.mo_range_count('svc_load', qx, qy, qx2, qy2); t_count := extract(epoch FROM clock_timestamp() - t0) * 1000;
  t0 := clock_timestamp(); SELECT count(*) INTO n FROM approx_gpu.mo_range('svc_load', 100, 100, 600, 600); t_range := extract(epoch FROM clock_timestamp() - t0) * 1000;
  RAISE NOTICE 'create % | load 10^6 % | move 10^5 % | 10^4 range counts % | range of % ids % | in the service: %',
    round(t_create::numeric, 2), round(t_load::numeric, 2), round(t_move::numeric, 2), round(t_count::numeric, 2), n,
    round(t_range::numeric, 2), approx_gpu.mo_info('svc_load')->>'gpu_service';
  PERFORM approx_gpu.mo_drop('svc_load');
END $$;
SQL
done
fi
q -c "SELECT approx_gpu.gpu_service_info()" | tee "$W/info_end.json"
rm -rf "$W"
