#!/usr/bin/env bash
# Approximate aggregates in plain SQL, end to end in PostgreSQL
# (PGHOST/PGPORT/PGUSER/PGDATABASE from the environment): a flights-like table
# of ROWS rows (test/bench/flights_data.sql), a table synopsis of it and a
# stratified one over its 1,000 origins, then client-measured times (psql's
# \timing: parse, plan, execute, the round trip) of
#   1. SELECT approx_gpu.approx_count(*) FROM bench_aqp WHERE <2 ranges>
#      (the planner answers from the synopsis) against the exact count(*)
#      with the same WHERE (parallel workers as the server allows), and the
#      same box through the JSON-predicate API approx_count('bench_aqp', '{...}')
#   2. SELECT origin, approx_count(*) ... WHERE <range> GROUP BY origin
#      (1,000 groups, the stratified synopsis) against the exact GROUP BY
# over 20 predicates each: per predicate one untimed warm-up, then REPS timed
# runs of the approximate query (EXACT_REPS of the exact one); the table gives
# the median over all timed runs, the speedup (exact / approx medians) and
# where last_run() says the answer came from, once per device (cpu, and gpu
# when the server has one). Targets (10^7 rows, GPU machine):
# approx_count(*) WHERE <= 1 ms and >= 200x the exact count(*); GROUP BY of
# 1,000 groups <= 5 ms on the GPU.
#   3. accuracy on a 10^6-row flights table (ACC_ROWS): 200 boxes of
#      selectivity >= 1%, SEEDS sampling seeds, through the planner: median
#      relative error of COUNT / SUM / AVG of the synopsis and of the plain
#      sample (smoothing 'never'), the 95% interval coverage (target 0.9; CI
#      checks 0.85 in test/pgtap/aqp.sql). PARTS=time skips it.
# ROWS defaults to 10^7 when the server has a GPU, else 10^6 (a quick run on
# a laptop or CI); DEVICES="cpu gpu" overrides the devices; KEEP=1 keeps the
# tables and synopses.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/sql_lib.sh
bench_extension
GPU=$(psql -At -c "SELECT coalesce((approx_gpu.device_info()->>'gpu_available')::boolean, false)")
if [ "$GPU" = t ]; then ROWS=${ROWS:-10000000}; DEVICES=${DEVICES:-cpu gpu}; else ROWS=${ROWS:-1000000}; DEVICES=${DEVICES:-cpu}; fi
REPS=${REPS:-3}
EXACT_REPS=${EXACT_REPS:-1}
PARTS=${PARTS:-time,accuracy}
SEEDS=${SEEDS:-1 2 3 4 5 6 7 8}
ACC_ROWS=${ACC_ROWS:-1000000}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "NaN"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
drop_synopses() { psql -c "SET client_min_messages = warning; SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name LIKE 'bench\_aqp%'" >/dev/null; }

echo "device: $(psql -At -c "SELECT coalesce(approx_gpu.device_info()->'devices'->0->>'name', 'no GPU')"), $(nproc) CPU cores," \
     "max_parallel_workers_per_gather = $(psql -At -c 'SHOW max_parallel_workers_per_gather')"
drop_synopses

if [[ $PARTS == *time* ]]; then
echo "-- generating bench_aqp: $ROWS flights-like rows (test/bench/flights_data.sql)"
t0=$(date +%s.%N)
psql -c "DROP TABLE IF EXISTS bench_aqp" -f test/bench/flights_data.sql -c "SELECT pg_temp.flights_table('bench_aqp', $ROWS, 0.42, false)" >/dev/null
echo "   $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
# The stratified synopsis first, the plain one last: WHERE-only queries are answered by
# the most recently built synopsis covering them (bench_aqp), GROUP BY origin only by the
# stratified one (the other does not hold origin).
psql -At <<'SQL' >"$TMP/build.txt"
SET client_min_messages = warning;
\timing on
SELECT 'stratified: ' || ((approx_gpu.create_synopsis('bench_aqp_origin', 'bench_aqp'::regclass,
         ARRAY['distance', 'dep_delay', 'day', 'origin']::name[], 10000, 'cdf', 'auto', ARRAY['origin']::name[]))->>'m') || ' sample rows';
SELECT 'plain: ' || ((approx_gpu.create_synopsis('bench_aqp', 'bench_aqp'::regclass,
         ARRAY['distance', 'dep_delay', 'day', 'carrier']::name[]))->>'m') || ' sample rows';
SQL
echo "-- synopses built (create_synopsis, client time):"
paste -d' ' <(grep -v '^Time' "$TMP/build.txt") <(sed -n 's/^Time: \([0-9.]*\) ms.*/\1 ms/p' "$TMP/build.txt") | sed 's/^/   /'

# 20 predicates: a distance range and a dep_delay range (both bounded in the JSON form too)
preds() {
  for i in $(seq 1 20); do
    lo=$((100 + (i % 5) * 150)); hi=$((lo + 400 + (i % 4) * 300)); c=$((-10 + (i % 3) * 5)); d=$((c + 20 + (i % 7) * 15))
    echo "$lo $hi $c $d"
  done
}
# write_file KIND DEVICE REPS > file: per predicate a warm-up, then REPS timed runs
write_file() {
  local kind=$1 dev=$2 reps=$3
  echo "SET jit = off; SET approx_gpu.device = '$dev';"
  echo '\o /dev/null'
  preds | while read -r lo hi c d; do
    case $kind in
      approx) q="SELECT approx_gpu.approx_count(*) FROM bench_aqp WHERE distance BETWEEN $lo AND $hi AND dep_delay BETWEEN $c AND $d;" ;;
      exact) q="SELECT count(*) FROM bench_aqp WHERE distance BETWEEN $lo AND $hi AND dep_delay BETWEEN $c AND $d;" ;;
      json) q="SELECT approx_gpu.approx_count('bench_aqp', '{\"distance\": [$lo, $hi], \"dep_delay\": [$c, $d]}');" ;;
      approx_group) q="SELECT origin, approx_gpu.approx_count(*) FROM bench_aqp WHERE distance BETWEEN $lo AND $hi GROUP BY origin;" ;;
      exact_group) q="SELECT origin, count(*) FROM bench_aqp WHERE distance BETWEEN $lo AND $hi GROUP BY origin;" ;;
    esac
    echo "$q"; echo '\timing on'
    for _ in $(seq 1 "$reps"); do echo "$q"; done
    echo '\timing off'
  done
  echo '\o'
  echo "SELECT 'FROM ' || coalesce(approx_gpu.last_run()->>'answered_from', '-') || coalesce(' (' || (approx_gpu.last_run()->>'reason') || ')', '');"
}
# run KIND DEVICE REPS: prints "median_ms answered_from"
run() {
  write_file "$1" "$2" "$3" >"$TMP/$1_$2.sql"
  psql -At -f "$TMP/$1_$2.sql" >"$TMP/$1_$2.out"
  echo "$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$TMP/$1_$2.out" | median) $(sed -n 's/^FROM //p' "$TMP/$1_$2.out" | tr ' ' '_')"
}
workers=$(psql -At -c "EXPLAIN SELECT count(*) FROM bench_aqp WHERE distance BETWEEN 100 AND 600 AND dep_delay BETWEEN -10 AND 10" | sed -n 's/.*Workers Planned: \([0-9]*\).*/\1/p')
gworkers=$(psql -At -c "EXPLAIN SELECT origin, count(*) FROM bench_aqp WHERE distance BETWEEN 100 AND 600 GROUP BY origin" | sed -n 's/.*Workers Planned: \([0-9]*\).*/\1/p')
echo "-- exact plans: count(*) WHERE with ${workers:-0} parallel workers, GROUP BY with ${gworkers:-0}"
echo "-- approximate plan (EXPLAIN):"
psql -At -c "EXPLAIN SELECT approx_gpu.approx_count(*) FROM bench_aqp WHERE distance BETWEEN 100 AND 600 AND dep_delay BETWEEN -10 AND 10" | sed 's/^/   /'
read -r exact_ms _ < <(run exact cpu "$EXACT_REPS")
read -r exact_group_ms _ < <(run exact_group cpu "$EXACT_REPS")
: >"$TMP/rows.txt"
for dev in $DEVICES; do
  read -r approx_ms from < <(run approx "$dev" "$REPS")
  read -r json_ms _ < <(run json "$dev" "$REPS")
  read -r group_ms gfrom < <(run approx_group "$dev" "$REPS")
  echo "approx_count(*) WHERE (20 predicates)|$dev|$exact_ms|$approx_ms|$json_ms|$from" >>"$TMP/rows.txt"
  echo "GROUP BY origin, 1000 groups (stratified)|$dev|$exact_group_ms|$group_ms||$gfrom" >>"$TMP/rows.txt"
done
echo "-- median end-to-end ms over 20 predicates ($REPS timed runs each; exact: $EXACT_REPS), $ROWS rows"
psql <<SQL
CREATE TEMP TABLE aqp_bench (query text, device text, exact_ms float8, approx_ms float8, json_ms float8, answered_from text);
\copy aqp_bench FROM '$TMP/rows.txt' WITH (DELIMITER '|', NULL '')
SELECT query, device, round(exact_ms::numeric, 3) AS "exact ms", round(approx_ms::numeric, 3) AS "approx ms",
       round((exact_ms / nullif(approx_ms, 0))::numeric, 0) AS speedup, coalesce(round(json_ms::numeric, 3)::text, '-') AS "JSON API ms",
       replace(answered_from, '_', ' ') AS "answered from"
FROM aqp_bench;
SQL
echo
fi

if [[ $PARTS == *accuracy* ]]; then
echo "-- accuracy through the planner: flights $ACC_ROWS rows, 200 boxes of selectivity >= 1% (distance, day, dep_delay), seeds: $SEEDS"
seeds_arr=$(echo "$SEEDS" | tr ' ' ',')
psql <<SQL
SET client_min_messages = warning; SET jit = off; SET max_parallel_workers_per_gather = 0;
\i test/bench/flights_data.sql
\i test/bench/aqp_accuracy.sql
DROP TABLE IF EXISTS bench_aqp_acc;
SELECT pg_temp.flights_table('bench_aqp_acc', $ACC_ROWS, 0.43, false) \gset
SELECT pg_temp.aqp_boxes('acc', 'bench_aqp_acc', ARRAY['distance', 'day', 'dep_delay', 'carrier', 'cancelled'],
                         ARRAY['num', 'date', 'num', 'skip', 'skip'], 200, 0.01, 1, 0.6, 0.14, 'distance') AS n_boxes \gset
SELECT pg_temp.aqp_run('acc', 'bench_aqp_acc', ARRAY['distance', 'day', 'dep_delay', 'carrier', 'cancelled'], 'distance', ARRAY[$seeds_arr], 'bench_aqp_') \gset
SELECT 'flights ' || '$ACC_ROWS' AS data_set, boxes, from_synopsis || '/' || answers AS from_synopsis,
       round(kde_count::numeric, 2) AS kde_count, round(plain_count::numeric, 2) AS plain_count,
       round(kde_sum::numeric, 2) AS kde_sum, round(plain_sum::numeric, 2) AS plain_sum,
       round(kde_avg::numeric, 2) AS kde_avg, round(plain_avg::numeric, 2) AS plain_avg,
       round(cover_count::numeric, 3) AS cover_count, round(cover_sum::numeric, 3) AS cover_sum, round(cover_avg::numeric, 3) AS cover_avg,
       round(plain_cover_count::numeric, 3) AS plain_cover_count,
       round(cover_min::numeric, 2) || '-' || round(cover_max::numeric, 2) AS cover_range_per_seed
FROM pg_temp.aqp_summary('acc');
SQL
echo "(median relative errors in percent, averaged over the seeds; coverage = share of boxes whose 95% interval"
echo " holds the exact answer, target 0.9; plain_cover_count: the plain sample's own COUNT intervals)"
fi

if [ "${KEEP:-0}" != 1 ]; then
  drop_synopses
  psql -c "DROP TABLE IF EXISTS bench_aqp, bench_aqp_acc" >/dev/null
fi
