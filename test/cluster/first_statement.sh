#!/usr/bin/env bash
# A session's first approx_* statement without preloading (issue 40 item 6):
# `psql -c` with the statement, and clients that open a connection per query
# by the extended protocol (pgbench -M extended / prepared: the statement with
# a bound parameter), each in a fresh backend of the test cluster (nothing
# preloaded: the in-process pass), are answered from the sample, like the
# same statement in a warm session. Runs in the test cluster (PGHOST/PGPORT)
# in a database of its own. Prints ok/not ok cluster lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
db=approx_cluster_first
"$PG_BIN/dropdb" --if-exists "$db" >/dev/null 2>&1; "$PG_BIN/createdb" "$db" || { echo "not ok cluster: createdb"; exit 0; }
q "$db" "CREATE SCHEMA approx_gpu" "CREATE EXTENSION approx_gpu SCHEMA approx_gpu" \
  "CREATE TABLE t AS SELECT i AS id, i % 30 AS k, (i % 100)::float8 AS x FROM generate_series(1, 30000) i" \
  "ANALYZE t" "SELECT pg_stat_force_next_flush()" \
  "SELECT approx_gpu.create_synopsis('t_syn', 't'::regclass, ARRAY['x', 'k']::name[], 3000, 'cdf', 'never') IS NOT NULL" >/dev/null
stmt="SELECT approx_gpu.approx_sum(x) FROM t WHERE x < 30 OR k = 7"
warm=$(q "$db" "SET approx_gpu.random_seed = 1" "$stmt" "$stmt")
warm=${warm##*$'\n'}  # the second: planned through the hook
# one message of two statements, as psql -c sends it: the first loads the library
got=$(PGOPTIONS="-c approx_gpu.random_seed=1" "$PSQL" -qXAt -d "$db" -c "$stmt; SELECT approx_gpu.last_run()->>'answered_from'" 2>&1)
check "psql -c, a fresh session's first statement: answered from the sample" "$(echo "$got" | tail -1)" "sample"
check "psql -c, a fresh session's first statement: the warm session's estimate" "$(echo "$got" | head -1)" "$warm"
if [ -x "$PG_BIN/pgbench" ]; then
  script="$(mktemp)"
  cat >"$script" <<SQL
\set lim 30
SELECT approx_gpu.approx_sum(x) FROM t WHERE x < :lim OR k = 7;
SELECT 1 / (CASE WHEN approx_gpu.last_run()->>'answered_from' = 'sample' THEN 1 ELSE 0 END);
SQL
  for mode in extended prepared; do
    out=$("$PG_BIN/pgbench" -n -M "$mode" -c 1 -t 1 -C -f "$script" "$db" 2>&1)
    check "pgbench -M $mode, a fresh session's first statement: answered from the sample" \
      "$(echo "$out" | grep -c 'number of transactions actually processed: 1/1')" "1"
  done
  rm -f "$script"
else
  echo "ok cluster: pgbench -M extended / prepared # skip: no pgbench in $PG_BIN"
fi
"$PG_BIN/dropdb" "$db"
