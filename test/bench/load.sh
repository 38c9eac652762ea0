#!/usr/bin/env bash
# Load test: CLIENTS pgbench clients for SECONDS seconds of a mixed workload of
# realistic calls across every feature, against a throwaway cluster of its own
# (built, staged and started like test/run, via test/lib.sh).
#
#   test/bench/load.sh                       16 clients x 120 s, CPU engine
#   CLIENTS=4 SECONDS=30 test/bench/load.sh  shorter
#   APPROX_DEVICE=gpu test/bench/load.sh     the GPU engine (on a GPU machine)
#   --no-build                               use what is already built
#
# The workload (one pgbench script per feature, weights in SCRIPTS below):
# kde_bandwidth of a random slice, a topk aggregate over a random range,
# hash_join_count of two random slices, reachability_count of a random
# subgraph, approx_count / approx_count_ci on a stored synopsis value, a named
# synopsis' approx_count / approx_avg, and mo_update / mo_range_count / mo_range
# / mo_delete on a moving-object index that each session creates in its own
# backend (load_mo_ensure()).
#
# Reports pgbench's transactions, tps and per-statement latencies, the failed
# transactions and aborted clients (errors), and each client backend's private
# memory (Private_Clean + Private_Dirty of /proc/PID/smaps_rollup) sampled
# from WARMUP seconds on every SAMPLE_EVERY seconds until pgbench ends.
#
# Exits non-zero when there was any error (a failed transaction or an aborted
# client), a crash in the server log, or when a client backend's private memory
# grew between its first and its last sample by more than MEM_TOLERANCE_KB
# (default 4096 kB) plus MEM_TOLERANCE_PCT (default 10) percent of its first
# sample, i.e. about 5 MiB on the ~11 MiB backends of this workload. Why: the
# first sample is taken after the warm-up, when what a backend keeps for its
# session is in place (catalog and relation caches, the per-session
# moving-object index at its steady ~1000-3000 objects, malloc arenas of the
# CPU engine's threads); from there a steady backend moved by -0.1 to +0.2 MiB
# over 90 s here (glibc keeping freed pages, caches of newly seen values), so
# 5 MiB leaves a wide margin against noise, while a leak of 1 kB per
# extension call -- at the ~30 transactions (~75 calls) per second each of 16
# clients gets on 2 cores, ~6700 calls between the samples -- already passes
# it. Smaller leaks need a longer run (SECONDS=600) or a tighter tolerance
# (a single-backend probe of 2000 calls of each entry point grew by 0 kB).
# (SECONDS is also bash's own counter of seconds since the shell started: the
# run length is read from the environment, where it is a plain variable.)
SECONDS_RUN=$(printenv SECONDS || true); SECONDS_RUN=${SECONDS_RUN:-120}
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. test/lib.sh
CLIENTS=${CLIENTS:-16}
WARMUP=${WARMUP:-20}
SAMPLE_EVERY=${SAMPLE_EVERY:-10}
MEM_TOLERANCE_KB=${MEM_TOLERANCE_KB:-4096}
MEM_TOLERANCE_PCT=${MEM_TOLERANCE_PCT:-10}
DEVICE=${APPROX_DEVICE:-cpu}
BUILD=1
for a in "$@"; do
  case "$a" in
    --no-build) BUILD=0 ;;
    *) echo "usage: test/bench/load.sh [--no-build]" >&2; exit 2 ;;
  esac
done
if [ "$WARMUP" -ge "$SECONDS_RUN" ]; then WARMUP=$((SECONDS_RUN / 3)); fi

ensure_packages $PKGS ${EXTRA_PKGS:-} || exit 1
pg_locations
pg_user
command -v "$BINDIR/pgbench" >/dev/null || { echo "pgbench not found in $BINDIR"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/approx_gpu_load.XXXXXX")
chmod 755 "$WORK"
trap 'stop_cluster; [ "${KEEP_WORK:-0}" = 1 ] && echo "work directory: $WORK" || rm -rf "$WORK"' EXIT

if [ "$BUILD" = 1 ]; then
  say "build"
  make -j"$(nproc)" PG_CONFIG="$PG_CONFIG" >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
fi
say "install into a private stage"
stage_install "$WORK" || exit 1
start_cluster "$WORK" "$DEVICE" || exit 1
cat >>"$PGDATA_DIR/postgresql.conf" <<CONF
max_connections = $((CLIENTS + 10))
CONF
as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -w restart -l "$WORK/server.log" >/dev/null || exit 1
export PGDATABASE=approx_load
PSQL() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
"$PG_BIN/createdb" approx_load || exit 1

say "data (approx_gpu.device = $DEVICE)"
PSQL <<'SQL' >/dev/null || exit 1
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION approx_gpu SCHEMA approx_gpu;
SELECT setseed(0.42);
-- KDE: a bimodal column
CREATE TABLE load_kde AS
  SELECT i AS id, CASE WHEN i % 3 = 0 THEN 5 ELSE 0 END + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS x
  FROM generate_series(1, 100000) i;
CREATE INDEX ON load_kde (id);
-- top-k: (id, score)
CREATE TABLE load_topk AS SELECT i AS id, random() * 1000 AS score FROM generate_series(1, 200000) i;
CREATE INDEX ON load_topk (id);
-- hashed joins: two (key, value) tables
CREATE TABLE load_build AS SELECT i AS id, (random() * 5000)::bigint AS k, i::bigint AS v FROM generate_series(1, 100000) i;
CREATE TABLE load_probe AS SELECT i AS id, (random() * 5000)::bigint AS k, -i::bigint AS v FROM generate_series(1, 100000) i;
CREATE INDEX ON load_build (id);
CREATE INDEX ON load_probe (id);
-- closure: a random digraph of 20000 vertices, mean out-degree 1.5
CREATE TABLE load_edges AS
  SELECT i AS id, (random() * 20000)::bigint AS src, (random() * 20000)::bigint AS dst FROM generate_series(1, 30000) i;
CREATE INDEX ON load_edges (src);
-- synopses: a stored value and a named one
CREATE TABLE load_points AS
  SELECT i AS id, random() * 100 AS a, (random() * 50)::int::float8 AS b, random() * random() * 1000 AS c
  FROM generate_series(1, 200000) i;
CREATE TABLE load_synopsis AS
  SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 5000) AS s FROM load_points;
SELECT approx_gpu.create_synopsis('load_named', 'SELECT a, b, c FROM load_points', 5000) IS NOT NULL;
-- moving objects: each session creates its own index once
CREATE FUNCTION load_mo_ensure() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM approx_gpu.mo_info('load_mo');
  RETURN false;
EXCEPTION WHEN undefined_object THEN
  PERFORM approx_gpu.mo_create('load_mo', 0, 0, 10000, 10000, 64, 64);
  PERFORM approx_gpu.mo_update('load_mo', array_agg(i::bigint), array_agg(random() * 10000), array_agg(random() * 10000))
    FROM generate_series(1, 1000) i;
  RETURN true;
END $$;
ANALYZE;
SQL

# ---- the scripts --------------------------------------------------------------------
S=$WORK/scripts
mkdir -p "$S"
cat >"$S/kde.sql" <<'SQL'
\set lo random(1, 99000)
SELECT approx_gpu.kde_bandwidth(array_agg(x), 'plugin') FROM load_kde WHERE id BETWEEN :lo AND :lo + 799;
SELECT approx_gpu.kde_bandwidth_agg(x, 'silverman') FROM load_kde WHERE id BETWEEN :lo AND :lo + 4999;
SQL
cat >"$S/topk.sql" <<'SQL'
\set lo random(1, 150000)
\set k random(1, 100)
SELECT approx_gpu.topk(id, score, :k) FROM load_topk WHERE id BETWEEN :lo AND :lo + 19999;
SELECT approx_gpu.bottomk(id, score, 5) FROM load_topk WHERE id BETWEEN :lo AND :lo + 4999;
SQL
cat >"$S/hashjoin.sql" <<'SQL'
\set lo random(1, 80000)
SELECT approx_gpu.hash_join_count(format('SELECT k, v FROM load_build WHERE id BETWEEN %s AND %s', :lo, :lo + 9999),
                                  format('SELECT k, v FROM load_probe WHERE id BETWEEN %s AND %s', :lo, :lo + 4999));
SELECT count(*) FROM approx_gpu.hash_join(format('SELECT k, v FROM load_build WHERE id BETWEEN %s AND %s', :lo, :lo + 999),
                                          'SELECT k, v FROM load_probe WHERE id <= 1000');
SQL
cat >"$S/closure.sql" <<'SQL'
\set lo random(0, 15000)
SELECT approx_gpu.reachability_count(format('SELECT src, dst FROM load_edges WHERE src BETWEEN %s AND %s', :lo, :lo + 3999));
SELECT count(*) FROM approx_gpu.reachable('SELECT src, dst FROM load_edges WHERE src < 3000', :lo % 3000);
SQL
cat >"$S/synopsis.sql" <<'SQL'
\set lo random(0, 80)
\set b random(0, 45)
SELECT approx_gpu.approx_count(s, ARRAY[:lo, :b, NULL]::float8[], ARRAY[:lo + 20, :b + 5, NULL]::float8[]) FROM load_synopsis;
SELECT approx_gpu.approx_count_ci(s, ARRAY[:lo, NULL, 0]::float8[], ARRAY[:lo + 10, NULL, 100]::float8[]) FROM load_synopsis;
SELECT approx_gpu.approx_avg(s, 3, ARRAY[:lo, :b, NULL]::float8[], ARRAY[:lo + 20, :b + 5, NULL]::float8[]) FROM load_synopsis;
SQL
cat >"$S/named.sql" <<'SQL'
\set lo random(0, 80)
SELECT approx_gpu.approx_count('load_named', format('{"a": [%s, %s], "b": [null, 25]}', :lo, :lo + 20)::jsonb);
SELECT approx_gpu.approx_avg('load_named', 'c', format('{"a": [%s, %s]}', :lo, :lo + 10)::jsonb);
SQL
cat >"$S/moving.sql" <<'SQL'
\set id random(1, 1000)
\set x random(0, 9900)
\set y random(0, 9900)
SELECT load_mo_ensure();
SELECT approx_gpu.mo_update('load_mo', ARRAY[:id, :id + 1000, :id + 2000]::bigint[],
                            ARRAY[:x, :x + 50, :x + 99]::float8[], ARRAY[:y, :y + 10, :y]::float8[]);
SELECT approx_gpu.mo_range_count('load_mo', ARRAY[:x, 0]::float8[], ARRAY[:y, 0]::float8[],
                                 ARRAY[:x + 100, 5000]::float8[], ARRAY[:y + 100, 5000]::float8[]);
SELECT count(*) FROM approx_gpu.mo_range('load_mo', :x, :y, :x + 500, :y + 500);
SELECT approx_gpu.mo_delete('load_mo', ARRAY[:id + 1000, :id + 2000]::bigint[]);
SQL
# script@weight
SCRIPTS="kde.sql@2 topk.sql@3 hashjoin.sql@2 closure.sql@2 synopsis.sql@4 named.sql@3 moving.sql@4"
FARGS=""; for s in $SCRIPTS; do FARGS="$FARGS -f $S/$s"; done

# ---- memory sampler ----------------------------------------------------------------------
# private kB of each client backend (application_name pgbench), one line per
# sample: "<seconds> <pid>:<kB> ..."
private_kb() { awk '/^Private_(Clean|Dirty):/ { s += $2 } END { print s + 0 }' "/proc/$1/smaps_rollup" 2>/dev/null; }
sample() {
  local line="$1" p
  for p in $("$PG_BIN/psql" -X -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' ORDER BY pid" 2>/dev/null); do
    line="$line $p:$(private_kb "$p")"
  done
  echo "$line" >>"$WORK/memory.txt"
}
# from WARMUP every SAMPLE_EVERY seconds after pgbench started, the last one
# 2 s before its clients stop (at SECONDS); times are wall-clock, so the time a
# sample takes does not shift the next one
sampler() {
  local start=$1 t=$WARMUP last=$((SECONDS_RUN - 2)) next now
  while :; do
    now=$(date +%s); [ $((start + t)) -gt "$now" ] && sleep $((start + t - now))
    kill -0 "$BENCH_PID" 2>/dev/null || break
    sample "$t"
    [ "$t" -ge "$last" ] && break
    next=$((t + SAMPLE_EVERY)); [ "$next" -gt "$last" ] && next=$last
    t=$next
  done
}

say "pgbench: $CLIENTS clients x $SECONDS_RUN s, scripts: $SCRIPTS"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo); $("$PG_BIN/postgres" --version); approx_gpu.device = $DEVICE; $(date -u '+%Y-%m-%d %H:%M UTC')"
: >"$WORK/memory.txt"
"$PG_BIN/pgbench" -n -c "$CLIENTS" -j "$(nproc)" -T "$SECONDS_RUN" -P 20 -r $FARGS approx_load >"$WORK/pgbench.log" 2>&1 &
BENCH_PID=$!
sampler "$(date +%s)" &
SAMPLER_PID=$!
wait "$BENCH_PID"; BENCH_RC=$?
wait "$SAMPLER_PID" 2>/dev/null
cat "$WORK/pgbench.log"

# ---- verdict -------------------------------------------------------------------------------
FAIL=0
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/pgbench.log"); failed=${failed:-0}
aborted=$(grep -c 'aborted in command' "$WORK/pgbench.log")
errors=$((failed + aborted))
echo
echo "transactions: $(sed -n 's/^number of transactions actually processed: //p' "$WORK/pgbench.log"); $(grep -E '^tps' "$WORK/pgbench.log" | head -1)"
echo "errors: $errors (failed transactions $failed, aborted clients $aborted; pgbench exit status $BENCH_RC)"
if [ "$errors" -gt 0 ] || [ "$BENCH_RC" -ne 0 ]; then
  grep -E 'ERROR|aborted' "$WORK/pgbench.log" | head -10
  FAIL=1
fi
CRASH='LOG: +(server process|background worker "[^"]*") \(PID [0-9]+\) (was terminated by (signal|exception)|exited with exit code [2-9])|LOG: +all server processes terminated; reinitializing'
if grep -qE "$CRASH" "$WORK/server.log"; then grep -E "$CRASH" "$WORK/server.log" | head -5; echo "a server process crashed"; FAIL=1; fi

echo
echo "private memory of the client backends (Private_Clean + Private_Dirty, kB), first sample at ${WARMUP}s:"
samples=$(wc -l <"$WORK/memory.txt")
if [ "$samples" -lt 2 ]; then
  echo "fewer than two memory samples (run longer than WARMUP + SAMPLE_EVERY)"; FAIL=1
else
  first=$(head -1 "$WORK/memory.txt"); last=$(tail -1 "$WORK/memory.txt")
  echo "  samples: $(cut -d' ' -f1 "$WORK/memory.txt" | tr '\n' ' ')(seconds)"
  if ! awk -v first="$first" -v last="$last" -v tol="$MEM_TOLERANCE_KB" -v pct="$MEM_TOLERANCE_PCT" '
    BEGIN {
      n = split(first, f, " "); t0 = f[1]
      for (i = 2; i <= n; i++) { split(f[i], a, ":"); start[a[1]] = a[2] }
      n = split(last, l, " "); t1 = l[1]
      bad = 0; cnt = 0
      printf "  %-8s %12s %12s %10s %10s\n", "pid", "kB@" t0 "s", "kB@" t1 "s", "growth", "allowed"
      for (i = 2; i <= n; i++) {
        split(l[i], a, ":"); pid = a[1]
        if (!(pid in start)) continue
        cnt++; g = a[2] - start[pid]; allow = tol + start[pid] * pct / 100
        s0 += start[pid]; s1 += a[2]
        flag = g > allow ? "  <-- grew" : ""
        if (g > allow) bad++
        printf "  %-8s %12d %12d %10d %10d%s\n", pid, start[pid], a[2], g, allow, flag
      }
      printf "  %-8s %12d %12d %10d\n", "total", s0, s1, s1 - s0
      if (cnt == 0) { print "  no backend was in both samples"; exit 1 }
      printf "  backends compared: %d, over the tolerance: %d\n", cnt, bad
      exit bad > 0
    }'; then FAIL=1; fi
fi
echo
if [ "$FAIL" = 0 ]; then echo "load: PASS"; else echo "load: FAIL"; fi
[ -n "${OUT:-}" ] && cp "$WORK"/*.log "$WORK/memory.txt" "$OUT"/ 2>/dev/null
exit "$FAIL"
