#!/usr/bin/env bash
# Everything on the GPU machine in one call (prepared by test/gpu/prepare.sh):
#   1. engine unit tests with the GPU (.device/bin/unit_tests)
#   2. the pg_regress and pgTAP suites with approx_gpu.device = 'gpu'
#   3. the benchmarks: .device/bin/*_bench, test/bench/*_torch.py, test/bench/*_sql.sh
#   4. (STEPS=service) the GPU service under load: test/bench/service_load.sh
#      on a cluster with approx_gpu preloaded
# Logs go to $OUT. STEPS=unit,sql,bench selects parts; BENCH=name,... selects
# benchmarks (default all), e.g. STEPS=bench BENCH=aqp BENCH_KINDS=sql for
# test/bench/aqp_sql.sh alone; SQL_BENCH_TIMEOUT (default 400 s) per *_sql.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/approx_out}; mkdir -p "$OUT"
STEPS=${STEPS:-unit,sql,bench}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
source .device/pg-unbundle .device/pg.tar.xz >/dev/null
[ -f .device/bin.tar.xz ] && tar -C .device -xJf .device/bin.tar.xz
export PATH="$PWD/.device:$PATH" PERL5LIB="$PWD/.device/perl${PERL5LIB:+:$PERL5LIB}"
export PG_RUN_USER=pgrun
chmod -R a+rX . 2>/dev/null

# data sets prepared here (the device has no apt or R): closure's Debian graph
mkdir -p build && [ -f .device/data/closure_debian_edges.csv ] && cp .device/data/closure_debian_edges.csv build/

if [[ $STEPS == *unit* ]]; then
  echo "== unit tests (GPU present)"
  .device/bin/unit_tests --gtest_color=no ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} >"$OUT/unit.log" 2>&1
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/unit.log" | sort | uniq -c | head -40
fi

if [[ $STEPS == *sql* ]]; then
  echo "== pg_regress + pgTAP with approx_gpu.device = 'gpu' (in-process, then through the GPU service)"
  APPROX_DEVICE=gpu SKIP_UNIT=1 test/run --installed >"$OUT/sql.log" 2>&1
  tail -60 "$OUT/sql.log"
  [ -f regression.diffs ] && cp regression.diffs "$OUT/"
fi

if [[ $STEPS == *bench* ]]; then
  echo "== benchmarks"
  want() { [ -z "${BENCH:-}" ] || [[ ",$BENCH," == *",$1,"* ]]; }
  KINDS=${BENCH_KINDS:-bin,torch,sql}
  [[ $KINDS == *bin* ]] && for b in .device/bin/*_bench; do
    n=$(basename "$b" _bench); want "$n" || continue
    echo "-- $b"; timeout 300 "$b" 2>&1 | tee "$OUT/bench_$n.txt"
  done
  [[ $KINDS == *torch* ]] && for p in test/bench/*_torch.py; do
    n=$(basename "$p" _torch.py); want "$n" || continue
    echo "-- $p"; timeout 300 python3 "$p" 2>&1 | tee "$OUT/torch_$n.txt"
  done
  sqls=""; [[ $KINDS == *sql* ]] && sqls=$(ls test/bench/*_sql.sh 2>/dev/null)
  if [ -n "$sqls" ]; then
    W=$(mktemp -d); chown pgrun "$W"
    pg_as initdb -D "$W/data" -A trust >/dev/null
    printf "listen_addresses=''\nunix_socket_directories='%s'\nshared_buffers='4GB'\nmax_parallel_workers_per_gather=4\nmax_worker_processes=24\nmax_parallel_workers=20\n" "$W" >>"$W/data/postgresql.conf"
    pg_as pg_ctl -D "$W/data" -l "$W/log" -w start >/dev/null
    export PGHOST=$W PGUSER=pgrun PGDATABASE=postgres
    for s in $sqls; do
      n=$(basename "$s" _sql.sh); want "$n" || continue
      echo "-- $s"; timeout "${SQL_BENCH_TIMEOUT:-400}" bash "$s" 2>&1 | tee "$OUT/sql_$n.txt"
    done
    pg_as pg_ctl -D "$W/data" -m fast stop >/dev/null
  fi
fi

if [[ $STEPS == *service* ]]; then
  echo "== the GPU service under load"
  sleep 3  # let the processes of earlier steps give their GPU memory back
  export BASE_MEM=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  W=$(mktemp -d); chown pgrun "$W"
  pg_as initdb -D "$W/data" -A trust >/dev/null
  printf "listen_addresses=''\nunix_socket_directories='%s'\nshared_buffers='2GB'\nmax_connections=300\nshared_preload_libraries='approx_gpu'\n" "$W" >>"$W/data/postgresql.conf"
  pg_as pg_ctl -D "$W/data" -l "$W/log" -w start >/dev/null
  export PGHOST=$W PGUSER=pgrun PGDATABASE=postgres
  timeout 560 bash test/bench/service_load.sh 2>&1 | tee "$OUT/service_load.txt"
  [ "${RESTART:-1}" = 1 ] && PSQL=psql timeout 120 bash test/service/restart.sh postgres "$W" 2>&1 | tee "$OUT/service_restart.txt"
  grep -E "approx_gpu|FATAL|PANIC|terminated by signal" "$W/log" | head -20 | tee "$OUT/service_server_log.txt"
  pg_as pg_ctl -D "$W/data" -m fast stop >/dev/null
fi
