#!/usr/bin/env bash
# Crash recovery (issue 26 item 1) in a throwaway cluster of its own (WORK/crash):
# an unlogged table emptied by crash recovery (pg_ctl stop -m immediate, then
# start) keeps its relfilenode, and its counters restart at 0; reloaded with
# as many rows as the build counted, it must not keep a fresh synopsis. A
# clean restart keeps the statistics, and the synopsis stays fresh.
# Usage: crash_restart.sh WORK. Prints ok/not ok cluster lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
work=${1:?usage: crash_restart.sh WORK}
own_cluster "$work/crash" || { echo "not ok cluster: crash-restart cluster start"; exit 0; }
trap stop_cluster EXIT
db=postgres
avg() { judge "$db" "SELECT approx_gpu.approx_avg(x) FROM $1" "SELECT avg(x) FROM $1"; }
q "$db" "CREATE SCHEMA approx_gpu" "CREATE EXTENSION approx_gpu SCHEMA approx_gpu" \
  "CREATE UNLOGGED TABLE u AS SELECT g::float8 AS x FROM generate_series(1, 2000) g" \
  "CREATE TABLE l AS SELECT g::float8 AS x FROM generate_series(1, 2000) g" \
  "SELECT pg_stat_force_next_flush()" >/dev/null
q "$db" "SELECT approx_gpu.create_synopsis('u_syn', 'u'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never') IS NOT NULL" \
  "SELECT approx_gpu.create_synopsis('l_syn', 'l'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never') IS NOT NULL" >/dev/null
check "unlogged table: fresh after the build" "$(avg u)" "right synopsis"

as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w restart -l "$work/crash/server.log" >/dev/null
check "clean restart: the statistics survive, the synopsis stays fresh" "$(avg l)" "right synopsis"

as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -w start -l "$work/crash/server.log" >/dev/null
check "crash recovery emptied the unlogged table" "$(q "$db" "SELECT count(*) FROM u")" "0"
q "$db" "INSERT INTO u SELECT g + 1000000 FROM generate_series(1, 2000) g" "SELECT pg_stat_force_next_flush()" >/dev/null
check "unlogged table reloaded after crash recovery: exact path" "$(avg u)" "right rows"
check "logged table after crash recovery (its counters restarted): exact path" "$(avg l)" "right rows"
check "status after crash recovery" "$(q "$db" "SELECT approx_gpu.synopsis_status('l_syn')->>'status'")" "stale"
q "$db" "SELECT approx_gpu.refresh_synopsis('u_syn') IS NOT NULL" >/dev/null
check "refreshed after crash recovery: answers again" "$(avg u)" "right synopsis"
