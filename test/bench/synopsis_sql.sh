#!/usr/bin/env bash
# End to end in PostgreSQL (PGHOST/PGPORT/PGUSER/PGDATABASE from the
# environment): synopses against exact SQL on a 10M-row table, and the
# accuracy table of the real and synthetic data sets.
#   1. build time of a named synopsis of 10^7 rows (m = 10^4, cdf), median of 3
#   2. named approx_count vs the exact SELECT count(*) ... WHERE on the same
#      table: median latency over 20 predicates, and the ratio
#   3. accuracy (median relative error of COUNT / SUM / AVG, KDE vs the plain
#      sample, 95% interval coverage) on diamonds and movielens (m = 10^4,
#      200 boxes, selectivity >= 1%) and a Gaussian mixture (N = 10^6,
#      m = 10^4, 200 boxes, selectivity 0.1-3%), pooled over 3 sampling seeds
# SIZE=N overrides the 10^7 rows (e.g. SIZE=1000000 for a quick run here).
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE=${SIZE:-10000000}
SEEDS=${SEEDS:-1 2 3}
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psql -c 'CREATE EXTENSION IF NOT EXISTS approx_gpu' >/dev/null
psql -c "SET client_min_messages = warning; SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name LIKE 'bench_%'" >/dev/null
ms() { # ms SQL...: wall milliseconds of one psql run of the statements
  local t0 t1; t0=$(date +%s%N); psql -c "SET jit = off" "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "device: $(psql -At -c "SELECT coalesce(approx_gpu.device_info()->'devices'->0->>'name', 'no GPU')")"
echo "-- generating $SIZE rows (3-column Gaussian mixture + an integer price)"
psql <<SQL
DROP TABLE IF EXISTS bench_syn;
SELECT setseed(0.5);
CREATE TABLE bench_syn AS
  SELECT x1, x2, x3, round(exp(4 + 0.5 * x1 + 0.1 * x3))::float8 AS price FROM (
    SELECT CASE k WHEN 0 THEN 0 WHEN 1 THEN 3 ELSE -2 END + z1 * CASE k WHEN 0 THEN 1 WHEN 1 THEN 0.7 ELSE 1.5 END AS x1,
           CASE k WHEN 0 THEN 0 WHEN 1 THEN 2 ELSE 4 END + (0.6 * z1 + 0.8 * z2) * CASE k WHEN 2 THEN 2 ELSE 1 END AS x2,
           10 * (k + 1) + 3 * z3 AS x3
    FROM (SELECT floor(random() * 3)::int AS k,
                 sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z1,
                 sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z2,
                 sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z3
          FROM generate_series(1, $SIZE)) g) s;
ANALYZE bench_syn;
SQL

echo "-- 1. build: create/refresh_synopsis of $SIZE rows, 4 columns, m = 10^4, cdf"
build=()
build+=("$(ms -c "SELECT approx_gpu.create_synopsis('bench_10m', 'SELECT x1, x2, x3, price FROM bench_syn', 10000)")")
for i in 1 2; do build+=("$(ms -c "SELECT approx_gpu.refresh_synopsis('bench_10m')")"); done
build_ms=$(echo "${build[*]}" | median)
last=$(psql -At -c "SELECT approx_gpu.refresh_synopsis('bench_10m') IS NOT NULL; SELECT approx_gpu.last_run()")

echo "-- 2. named approx_count vs exact count(*) ... WHERE (20 predicates)"
approx=(); exact=()
for i in $(seq 1 20); do
  lo1=$(awk -v i="$i" 'BEGIN { printf "%.3f", -3 + (i % 7) * 0.6 }'); hi1=$(awk -v l="$lo1" 'BEGIN { printf "%.3f", l + 1.5 }')
  lo3=$((5 + i % 9 * 2)); hi3=$((lo3 + 12))
  pred="{\"x1\": [$lo1, $hi1], \"x3\": [$lo3, $hi3]}"
  approx+=("$(ms -c "SELECT approx_gpu.approx_count('bench_10m', '$pred')")")
  exact+=("$(ms -c "SELECT count(*) FROM bench_syn WHERE x1 BETWEEN $lo1 AND $hi1 AND x3 BETWEEN $lo3 AND $hi3")")
done
approx_ms=$(echo "${approx[*]}" | median); exact_ms=$(echo "${exact[*]}" | median)

printf '\n%-58s %12s\n' "synopsis, end to end (psql round trip included)" "ms"
printf '%-58s %12s\n' "build: create/refresh_synopsis, $SIZE rows (median of 3)" "$build_ms"
printf '%-58s %12s\n' "named approx_count, median of 20 predicates" "$approx_ms"
printf '%-58s %12s\n' "exact SELECT count(*) ... WHERE, median of 20" "$exact_ms"
printf '%-58s %12s\n' "ratio exact / approx" "$(awk -v a="$approx_ms" -v e="$exact_ms" 'BEGIN { printf "%.0fx", e / (a > 0 ? a : 1) }')"
echo "last build: $last"

echo
echo "-- 3. accuracy: median relative error (%) KDE vs plain sample, and KDE 95% CI coverage; seeds: $SEEDS"
psql -c "CREATE TABLE IF NOT EXISTS bench_dia (carat float8, depth float8, \"table\" float8, price float8)" \
     -c "CREATE TABLE IF NOT EXISTS bench_ml (year float8, rating float8, ts float8, userid float8)" \
     -c "TRUNCATE bench_dia, bench_ml"
psql -c "\\copy bench_dia FROM PROGRAM 'test/bench/synopsis_data.sh diamonds' WITH (FORMAT csv)"
psql -c "\\copy bench_ml FROM PROGRAM 'test/bench/synopsis_data.sh movielens' WITH (FORMAT csv)"
psql -c "DROP TABLE IF EXISTS bench_mix; CREATE TABLE bench_mix AS SELECT x1, x2, x3 FROM bench_syn LIMIT 1000000; CREATE INDEX ON bench_mix (x1, x2, x3); ANALYZE bench_mix"
for set in "bench_dia|carat,depth,table,price|4|0.01|1|0.2|0.9|0.6|10000|diamonds (price)" \
           "bench_ml|year,rating,ts,userid|2|0.01|1|0.2|0.9|0.6|10000|movielens (rating)" \
           "bench_mix|x1,x2,x3|3|0.001|0.03|0.05|0.4|1.0|10000|mixture 10^6 (x3)"; do
  IFS='|' read -r tab cols agg minsel maxsel minw maxw pc m label <<<"$set"
  n=$(psql -At -c "SELECT count(*) FROM $tab")
  if [ "$n" -lt 50000 ]; then echo "$label: no data (R packages not installed and no .device/data)"; continue; fi
  arr=$(echo "$cols" | sed 's/\([a-z]*\)/"\1"/g')
  for seed in $SEEDS; do
    psql -At -F' ' <<SQL
SET client_min_messages = warning; SET jit = off; SET max_parallel_workers_per_gather = 0;
\\i test/bench/synopsis_accuracy.sql
SET approx_gpu.random_seed = $seed;
CREATE TEMP TABLE syn AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[$arr], $m) AS kde,
                                approx_gpu.kde_synopsis_agg(ARRAY[$arr], $m, 'scott', 'never') AS plain FROM $tab;
SELECT pg_temp.synopsis_boxes('$tab', string_to_array('$cols', ','), $agg, 200, $minsel, $maxsel, $minw, $maxw, $pc, 0.1 + $seed / 100.0) \\gset
CREATE TABLE IF NOT EXISTS bench_acc (label text, seed int, boxes int, kc float8, pc float8, ks float8, ps float8, ka float8, pa float8, cc float8, cs float8, ca float8);
INSERT INTO bench_acc SELECT '$label', $seed, a.* FROM pg_temp.synopsis_accuracy((SELECT kde FROM syn), (SELECT plain FROM syn), $agg) a;
SQL
  done
done
psql -c "SELECT label AS data_set, sum(boxes) AS boxes,
       round(avg(kc)::numeric, 2) AS kde_count, round(avg(pc)::numeric, 2) AS plain_count,
       round(avg(ks)::numeric, 2) AS kde_sum, round(avg(ps)::numeric, 2) AS plain_sum,
       round(avg(ka)::numeric, 2) AS kde_avg, round(avg(pa)::numeric, 2) AS plain_avg,
       round(avg(cc)::numeric, 3) AS cover_count, round(avg(cs)::numeric, 3) AS cover_sum, round(avg(ca)::numeric, 3) AS cover_avg
FROM bench_acc GROUP BY label ORDER BY label"
echo "(median errors averaged over the seeds; coverage = share of boxes whose 95% interval holds the exact answer)"
psql -c "DROP TABLE IF EXISTS bench_acc, bench_dia, bench_ml, bench_mix" \
     -c "SELECT approx_gpu.drop_synopsis('bench_10m')" >/dev/null
