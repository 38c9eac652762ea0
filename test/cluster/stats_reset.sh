#!/usr/bin/env bash
# Statistics resets (issue 26 item 1): pg_stat_reset() and
# pg_stat_reset_single_table_counters(), then as many changes as the build saw
# (every row updated, by other sessions whose counts reach the shared
# statistics when they end): the counters read as before the reset, so only
# the recorded reset time can tell. Also a build right after a reset, then
# every row updated (an update is no late insert). Runs in the test cluster
# (PGHOST/PGPORT) in a database of its own. Prints ok/not ok cluster lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
db=approx_cluster_stats
"$PG_BIN/dropdb" --if-exists "$db" >/dev/null 2>&1; "$PG_BIN/createdb" "$db" || { echo "not ok cluster: createdb"; exit 0; }
q "$db" "CREATE SCHEMA approx_gpu" "CREATE EXTENSION approx_gpu SCHEMA approx_gpu" >/dev/null
load() {  # TABLE: 10,000 rows, the counts flushed
  q "$db" "DROP TABLE IF EXISTS $1" "CREATE TABLE $1 AS SELECT g::float8 AS x FROM generate_series(1, 2000) g" \
    "SELECT pg_stat_force_next_flush()" >/dev/null
}
build() { q "$db" "SELECT approx_gpu.create_synopsis('$1_syn', '$1'::regclass, ARRAY['x']::name[], 10000, 'cdf', 'never') IS NOT NULL" >/dev/null; }
update_all() { q "$db" "UPDATE $1 SET x = x + 1000000" "SELECT pg_stat_force_next_flush()" >/dev/null; }

for reset in "pg_stat_reset()" "pg_stat_reset_single_table_counters('t_reset'::regclass)"; do
  load t_reset; build t_reset
  check "fresh before the reset [$reset]" "$(judge "$db" "SELECT approx_gpu.approx_avg(x) FROM t_reset" "SELECT avg(x) FROM t_reset")" "right synopsis"
  q "$db" "SELECT $reset" >/dev/null
  update_all t_reset
  check "every row updated after $reset: exact path" \
    "$(judge "$db" "SELECT approx_gpu.approx_avg(x) FROM t_reset" "SELECT avg(x) FROM t_reset")" "right rows"
  check "status after $reset" "$(q "$db" "SELECT approx_gpu.synopsis_status('t_reset_syn')->>'status'")" "stale"
  q "$db" "SELECT approx_gpu.refresh_synopsis('t_reset_syn') IS NOT NULL" >/dev/null
  check "refreshed after $reset: answers again" \
    "$(judge "$db" "SELECT approx_gpu.approx_avg(x) FROM t_reset" "SELECT avg(x) FROM t_reset")" "right synopsis"
  q "$db" "SELECT approx_gpu.drop_synopsis('t_reset_syn')" >/dev/null
done

# built right after a reset: n_live_tup is 0, yet no row is a late insert
load t_after; q "$db" "SELECT pg_stat_reset_single_table_counters('t_after'::regclass)" >/dev/null; build t_after
check "built right after a reset: fresh" "$(judge "$db" "SELECT approx_gpu.approx_avg(x) FROM t_after" "SELECT avg(x) FROM t_after")" "right synopsis"
update_all t_after
check "built right after a reset, every row updated: exact path" \
  "$(judge "$db" "SELECT approx_gpu.approx_avg(x) FROM t_after" "SELECT avg(x) FROM t_after")" "right rows"
q "$db" "DROP TABLE t_after" >/dev/null
"$PG_BIN/dropdb" "$db"
