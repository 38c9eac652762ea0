#!/usr/bin/env bash
# Generate and load the Star Schema Benchmark in parallel (issue 39: SF 10 in
# minutes on the 16-core GPU machine), with build/ssbgen (test/bench/ssbgen.cpp:
# the same tables and distributions as ssb_generate of
# test/workloads/ssb_schema.sql, which runs serially inside one backend).
#
#   SF=10 VARIANT=uniform test/bench/ssb_load.sh        # schema ssb
#   SF=10 VARIANT=skewed  test/bench/ssb_load.sh        # schema ssb_skew
#
# Against the server of PGHOST/PGPORT/PGUSER/PGDATABASE (e.g. a private cluster
# of test/lib.sh start_cluster; needs no extension). Stages, each timed:
#   1. schema: DROP SCHEMA ... CASCADE, then test/workloads/ssb_schema.sql
#      (the one definition of the tables) with the tables made UNLOGGED (no
#      WAL: a benchmark's data is regenerated, not recovered; a crash empties
#      them) and their primary keys dropped until the data is in;
#   2. load: JOBS (default: the number of cores) `ssbgen --shard i/JOBS |
#      psql -c "COPY lineorder FROM STDIN"` sessions, and one session per
#      dimension table, all at once;
#   3. keys: the dimensions' primary keys (the joins' unique keys; lineorder
#      gets no index), one session per table;
#   4. analyze: VACUUM (FREEZE, ANALYZE) per table in parallel, so every page
#      is all-visible and frozen (no hint-bit writes in the first timed
#      queries; issue 39's exact pass needs all-visible pages); VACUUM=0 runs
#      ANALYZE alone.
# Settings: SF (10), VARIANT (uniform | skewed), SKEW (1.0: the skewed
# variant's Zipf exponent, as aqp_workloads.sh), SEED (42, any string),
# SCHEMA (ssb or ssb_skew by VARIANT), JOBS (nproc), VACUUM (1), SSBGEN (the
# binary: build/ssbgen, else .device/bin/ssbgen, else built by make),
# LOGGED=1 keeps the tables logged (slower: every row goes through WAL).
# Ends with one line per stage and the tables' sizes (pg_total_relation_size).
set -euo pipefail
cd "$(dirname "$0")/../.."
SF=${SF:-10}; VARIANT=${VARIANT:-uniform}; SKEW=${SKEW:-1.0}; SEED=${SEED:-42}
JOBS=${JOBS:-$(nproc)}; VACUUM=${VACUUM:-1}; LOGGED=${LOGGED:-0}
case $VARIANT in
  uniform) skew=0; SCHEMA=${SCHEMA:-ssb} ;;
  skewed) skew=$SKEW; SCHEMA=${SCHEMA:-ssb_skew} ;;
  *) echo "ssb_load: VARIANT must be uniform or skewed"; exit 2 ;;
esac
if [ -z "${SSBGEN:-}" ]; then
  if [ -x build/ssbgen ]; then SSBGEN=build/ssbgen
  elif [ -x .device/bin/ssbgen ]; then SSBGEN=.device/bin/ssbgen
  else make -s build/ssbgen >/dev/null; SSBGEN=build/ssbgen; fi
fi
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
gen() { "$SSBGEN" --sf "$SF" --skew "$skew" --seed "$SEED" "$@"; }
dims="date customer supplier part"
declare -A key=([date]=d_datekey [customer]=c_custkey [supplier]=s_suppkey [part]=p_partkey)
waitall() { local p rc=0; for p in "$@"; do wait "$p" || rc=1; done; return $rc; }
copy_in() {  # TABLE [SHARD]: one COPY session
  gen --table "$1" ${2:+--shard "$2/$JOBS"} | psql -c "COPY $SCHEMA.$1 FROM STDIN"
}
stages=()
t0=$(now)
persist="SET UNLOGGED"; [ "$LOGGED" = 1 ] && persist="SET LOGGED"
# autovacuum stays off the tables until they are vacuumed here (it would
# analyze lineorder halfway through the load, and wait for or on stage 4)
alters=(-c "ALTER TABLE lineorder $persist, SET (autovacuum_enabled = off)")
for t in $dims; do alters+=(-c "ALTER TABLE $t DROP CONSTRAINT ${t}_pkey, $persist, SET (autovacuum_enabled = off)"); done
PGOPTIONS="-c search_path=$SCHEMA,public -c client_min_messages=warning" psql \
  -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" -c "CREATE SCHEMA $SCHEMA" -f test/workloads/ssb_schema.sql "${alters[@]}"
stages+=("schema $(secs "$t0") s")

t0=$(now); pids=()
for t in $dims; do copy_in "$t" & pids+=($!); done
for ((i = 0; i < JOBS; i++)); do copy_in lineorder "$i" & pids+=($!); done
waitall "${pids[@]}" || { echo "ssb_load: a COPY session failed"; exit 1; }
stages+=("load $(secs "$t0") s (lineorder in $JOBS sessions, each dimension in one)")

t0=$(now); pids=()
for t in $dims; do
  psql -c "SET maintenance_work_mem = '1GB'" -c "ALTER TABLE $SCHEMA.$t ADD PRIMARY KEY (${key[$t]})" & pids+=($!)
done
waitall "${pids[@]}" || { echo "ssb_load: a primary key failed"; exit 1; }
stages+=("keys $(secs "$t0") s")

t0=$(now); pids=()
what="VACUUM (FREEZE, ANALYZE)"; [ "$VACUUM" = 1 ] || what=ANALYZE
for t in lineorder $dims; do psql -c "$what $SCHEMA.$t" & pids+=($!); done
waitall "${pids[@]}" || { echo "ssb_load: $what failed"; exit 1; }
stages+=("analyze $(secs "$t0") s ($what, one session per table)")

for t in lineorder $dims; do psql -c "ALTER TABLE $SCHEMA.$t RESET (autovacuum_enabled)"; done
psql -c "COMMENT ON TABLE $SCHEMA.lineorder IS \$\$ssbgen(sf $SF, seed $SEED, skew $skew)\$\$"
echo "-- ssb_load: SF $SF $VARIANT (skew $skew, seed $SEED) into schema $SCHEMA, $(nproc) cores, $SSBGEN"
for s in "${stages[@]}"; do echo "   $s"; done
psql -At -F ' ' <<SQL | sed 's/^/   /'
SELECT c.relname, '~' || c.reltuples::bigint || ' rows', pg_size_pretty(pg_total_relation_size(c.oid))
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = '$SCHEMA' AND c.relkind = 'r' ORDER BY pg_total_relation_size(c.oid) DESC;
SELECT 'total', pg_size_pretty(sum(pg_total_relation_size(c.oid)))
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$SCHEMA' AND c.relkind = 'r';
SQL
