#!/usr/bin/env bash
# SSB generated and loaded on the GPU machine (issue 39 item 4): a private
# cluster (test/lib.sh start_cluster) from the PostgreSQL bundle of
# test/gpu/prepare.sh, then test/bench/ssb_load.sh per variant (VARIANTS,
# default "uniform skewed"; SF default 10) with the disk use after each. Needs
# .device/pg.tar.xz, .device/pg-unbundle and build/ssbgen or .device/bin/ssbgen
# (prepare.sh puts it into .device/bin.tar.xz):
#   run(command="bash test/gpu/ssb_device.sh", carry=[".device"])
# The cluster is stopped and removed at the end unless KEEP=1; CONF adds
# postgresql.conf lines to those below; DEVICE sets approx_gpu.device (cpu). QUERIES=1: after each load, lineorder's
# exact row count and the 13 SSB queries (test/workloads/ssb) exact with
# max_parallel_workers_per_gather = WORKERS (8): rows, and planning + execution
# ms of one EXPLAIN ANALYZE after one warm-up run (a first look, not the
# acceptance table's medians). WORKLOAD=1: instead, test/bench/aqp_workloads.sh
# (GEN=cpp; SAMPLE, REPS, WORKLOADS as there) on this cluster. LATENCY=1:
# instead, test/bench/ssb_latency.sh per variant of VARIANTS (default uniform;
# SF, ROWS, RUNS, EXACT_RUNS, WORKERS as there); CONCURRENT=1 adds
# test/bench/ssb_sessions.sh (SESSIONS_N sessions, default 32) on the last.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/approx_out}; mkdir -p "$OUT"
source .device/pg-unbundle .device/pg.tar.xz >/dev/null
[ -f .device/bin.tar.xz ] && tar -C .device -xJf .device/bin.tar.xz
export PG_RUN_USER=pgrun
. test/lib.sh; pg_user
PG_BIN=$(dirname "$(command -v postgres)")
W=$(mktemp -d); chmod 755 "$W"
[ "${KEEP:-0}" = 1 ] || trap 'stop_cluster; rm -rf "$W"' EXIT
EXTRA_CONF="shared_buffers = '32GB'
max_connections = 200
max_worker_processes = 24
max_parallel_workers = 20
max_parallel_maintenance_workers = 8
${CONF:-}" start_cluster "$W" "${DEVICE:-cpu}"
export PGDATABASE=postgres
if [ "${LATENCY:-0}" = 1 ]; then
  # The latency table (test/bench/ssb_latency.sh): per SSB query the
  # approximate twin's median / p95 over RUNS runs in one session, beside exact.
  echo "$(nproc) cores, $(postgres --version), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  for v in ${VARIANTS:-uniform}; do SF=${SF:-10} VARIANT=$v bash test/bench/ssb_latency.sh; done
  # CONCURRENT=1: then many sessions at once (test/bench/ssb_sessions.sh)
  if [ "${CONCURRENT:-0}" = 1 ]; then echo; echo "# ${SESSIONS_N:-32} sessions"; SESSIONS=${SESSIONS_N:-32} bash test/bench/ssb_sessions.sh; fi
  exit 0
fi
if [ "${WORKLOAD:-0}" = 1 ]; then
  # The workload table (test/bench/aqp_workloads.sh) at this SF with the cpp
  # generator: exact vs the approximate twin (the star join where the GPU
  # runs it, and PostgreSQL's executor over the same sample), errors, coverage.
  echo "$(nproc) cores, $(postgres --version), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  SF=${SF:-10} GEN=cpp WORKLOADS=${WORKLOADS:-ssb} SAMPLE=${SAMPLE:-0.01} REPS=${REPS:-3} bash test/bench/aqp_workloads.sh
  exit 0
fi
echo "$(nproc) cores, $(free -g | awk '/Mem:/ { print $2 }') GiB, disk: $(df -h "$W" | awk 'NR == 2 { print $4 " free of " $2 }'), $(postgres --version)"
for v in ${VARIANTS:-uniform skewed}; do
  t0=$(date +%s.%N)
  SF=${SF:-10} VARIANT=$v test/bench/ssb_load.sh
  echo "   all stages $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s; data directory $(du -sh "$W/data" | cut -f1)"
  [ "${QUERIES:-0}" = 1 ] || continue
  schema=ssb; [ "$v" = skewed ] && schema=ssb_skew
  echo "   lineorder: $(psql -XAt -c "SELECT count(*) FROM $schema.lineorder") rows (count(*))"
  for f in $(ls test/workloads/ssb/q*.sql | sort -V); do
    export PGOPTIONS="-c search_path=$schema -c max_parallel_workers_per_gather=${WORKERS:-8}"
    rows=$(psql -XAt -f "$f" | wc -l)
    ms=$(psql -XAt -c "EXPLAIN ANALYZE $(sed 's/;[[:space:]]*$//' "$f")" |
         awk '/^(Planning|Execution) Time:/ { t += $3 } END { printf "%.1f", t }')
    echo "   $(basename "$f" .sql): $rows rows, $ms ms exact (${WORKERS:-8} workers)"
    unset PGOPTIONS
  done
done
