#!/usr/bin/env bash
# SSB query latency of the approximate twins, server-side, in one session per
# query (issue 39's acceptance shape): per query a warm-up run, then RUNS (20)
# timed runs -- median, p95 and max of planning + execution (bench_latency in
# test/bench/aqp_workloads.sql) -- what answered it (sample / exact and why),
# where the star join ran (gpu / cpu / declined), whether the GPU service took
# it ("resident": it read no sample row) and how many of its tables came from
# the session's kept reads; beside it PostgreSQL's exact query, median of
# EXACT_RUNS (3) at max_parallel_workers_per_gather = WORKERS (8).
#   SF=10 ROWS=10000000 test/bench/ssb_latency.sh
# Against the server of PGHOST/PGPORT/PGUSER/PGDATABASE; LOAD=1 (default)
# generates and loads SSB first (test/bench/ssb_load.sh, SF, VARIANT); the
# synopsis bench_latency of SCHEMA.lineorder (ssb, or ssb_skew for the skewed
# variant) holds ROWS sample rows (default 1% of lineorder), stratified as
# aqp_workloads.sh's (lo_quantity, lo_discount), seed 42. EXACT_PASS=true: a
# query the sample cannot answer runs once under approx_gpu.exact_pass = force
# (loading the table's columns; "exact pass load ms"), then is timed under on.
set -euo pipefail
cd "$(dirname "$0")/../.."
SF=${SF:-1}; VARIANT=${VARIANT:-uniform}; RUNS=${RUNS:-20}; EXACT_RUNS=${EXACT_RUNS:-3}; WORKERS=${WORKERS:-8}
LOAD=${LOAD:-1}; EXACT_PASS=${EXACT_PASS:-false}
case $VARIANT in uniform) SCHEMA=${SCHEMA:-ssb} ;; skewed) SCHEMA=${SCHEMA:-ssb_skew} ;; *) echo "VARIANT: uniform or skewed"; exit 2 ;; esac
. test/bench/sql_lib.sh
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
[ "$LOAD" = 1 ] && SF=$SF VARIANT=$VARIANT SCHEMA=$SCHEMA test/bench/ssb_load.sh
bench_extension -c 'SET client_min_messages = warning' -f test/workloads/workloads.sql -f test/bench/aqp_workloads.sql
rows=${ROWS:-$(psql -At -c "SELECT greatest(1, (reltuples / 100)::bigint) FROM pg_class WHERE oid = '$SCHEMA.lineorder'::regclass")}
t0=$(date +%s.%N)
m=$(psql -At <<SQL | tail -1
SET client_min_messages = warning;
SET approx_gpu.random_seed = 42;
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'bench_latency';
SELECT (approx_gpu.create_synopsis('bench_latency', '$SCHEMA.lineorder'::regclass,
        ARRAY['lo_quantity', 'lo_discount']::name[], $rows))->>'m';
SQL
)
echo "# SSB SF $SF ($VARIANT) latency: synopsis of $m sample rows built in $(secs "$t0") s; $RUNS runs per query"
echo "# device: $(psql -At -c "SELECT coalesce(approx_gpu.device_info()->'devices'->0->>'name', 'no GPU')"), $(nproc) CPU cores, approx_gpu.device = $(psql -At -c 'SHOW approx_gpu.device'), star_join = $(psql -At -c 'SHOW approx_gpu.star_join'), jit = $(psql -At -c "SELECT current_setting('jit') || CASE WHEN pg_jit_available() THEN ' (available)' ELSE ' (not available)' END"), exact with $WORKERS workers"
echo
echo "| query | answered from | star join | service | kept | approx median ms | p95 | max | exact ms | speedup (median) | exact pass load ms |"
echo "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for f in $(ls test/workloads/ssb/q*.sql | sort -V); do
  q=$(basename "$f" .sql)
  PGOPTIONS="${PGOPTIONS:-} -c search_path=$SCHEMA,public -c max_parallel_workers_per_gather=$WORKERS" psql -At -F ' | ' \
    -v q="$(sed 's/;[[:space:]]*$//' "$f")" <<SQL | sed "s/^/| $q | /; s/\$/ |/"
SELECT approx_gpu.last_run() IS NOT NULL AS loaded \gset
SELECT answered_from, coalesce(star_join, '-'), coalesce(service, '-'), coalesce(kept, '-'),
       round(approx_med::numeric, 2), round(approx_p95::numeric, 2), round(approx_max::numeric, 2),
       round(exact_ms::numeric, 1), round((exact_ms / nullif(approx_med, 0))::numeric, 1) || 'x',
       coalesce(round(load_ms::numeric)::text, '-')
  FROM bench_latency(:'q', $RUNS, $EXACT_RUNS, $EXACT_PASS);
SQL
done
