#!/usr/bin/env bash
# The real-graph check of reachability_count: the Debian package dependency
# graph (package -> dependency, from Depends and Pre-Depends of every package
# in apt's lists; see closure_debian_graph.py for the exact definition).
#
#   test/bench/closure_debian_graph.sh [DIR]     (DIR defaults to build/)
#
# 1. DIR/closure_debian_edges.csv (src,dst integer ids) and
#    DIR/closure_debian_names.csv (id,name) from `apt-cache dumpavail`, unless
#    the edge file exists already (run `apt-get update` once before; on a
#    machine without apt lists, carry the CSV there);
# 2. the independent count: a breadth-first search from every vertex in plain
#    Python (test/bench/closure_debian_graph.py count);
# 3. when psql reaches a server (PGHOST, PGPORT, PGUSER, PGDATABASE), loads the
#    edges into table closure_debian and checks that
#    approx_gpu.reachability_count equals the Python count on the CPU and, when
#    there is one, on the GPU (auto and blocked; blocked on the CPU too with
#    CLOSURE_CPU_BLOCKED=1). Prints PASS or FAIL lines; exits 1 on a FAIL.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-build}
mkdir -p "$DIR"
EDGES=$DIR/closure_debian_edges.csv
if [ ! -s "$EDGES" ]; then
  command -v apt-cache >/dev/null || { echo "apt-cache not found and no $EDGES"; exit 2; }
  apt-cache dumpavail >"$DIR/closure_debian_packages.txt"
  [ -s "$DIR/closure_debian_packages.txt" ] || { echo "apt has no package lists: run apt-get update"; exit 2; }
  python3 test/bench/closure_debian_graph.py extract "$DIR/closure_debian_packages.txt" "$EDGES" "$DIR/closure_debian_names.csv"
fi
BFS=$(python3 test/bench/closure_debian_graph.py count "$EDGES")
echo "independent count: $BFS"
EXPECTED=$(sed -n 's/.* pairs \([0-9]*\) .*/\1/p' <<<"$BFS")

if ! psql -XAtc 'SELECT 1' >/dev/null 2>&1; then
  echo "no PostgreSQL server reachable with psql: skipped the comparison"
  exit 0
fi
psql -qXAt -v ON_ERROR_STOP=1 >/dev/null <<SQL
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
DROP TABLE IF EXISTS closure_debian;
CREATE TABLE closure_debian (src int4, dst int4);
\copy closure_debian FROM '$EDGES' WITH (FORMAT csv, HEADER)
ANALYZE closure_debian;
SQL
GPU=$(psql -XAtc "SELECT (approx_gpu.device_info()->>'gpu_available')")
FAIL=0
for dev in cpu gpu; do
  if [ "$dev" = gpu ] && [ "$GPU" != true ]; then echo "gpu: skipped (no GPU)"; continue; fi
  # the blocked closure of 64k vertices takes minutes on a few CPU cores
  algs="auto blocked"; [ "$dev" = cpu ] && [ "${CLOSURE_CPU_BLOCKED:-0}" != 1 ] && algs=auto
  for alg in $algs; do
    GOT=$(psql -XAt -v ON_ERROR_STOP=1 <<SQL | tail -1
SET approx_gpu.device = '$dev';
SET approx_gpu.closure_algorithm = '$alg';
SELECT approx_gpu.reachability_count('SELECT src, dst FROM closure_debian')
       || ' ' || round((approx_gpu.last_run()->>'ms_compute')::numeric, 1);
SQL
)
    if [ "${GOT%% *}" = "$EXPECTED" ]; then r=PASS; else r=FAIL; FAIL=1; fi
    echo "$r: device $dev, closure_algorithm $alg: reachability_count ${GOT%% *} (engine ${GOT#* } ms), Python BFS $EXPECTED"
  done
done
exit $FAIL
