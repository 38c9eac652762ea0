#!/usr/bin/env bash
# End to end in PostgreSQL (PGHOST/PGPORT/PGUSER/PGDATABASE from the
# environment): synopses against exact SQL on a 10M-row table, and the
# accuracy table of the real and synthetic data sets.
#   1. build time of a named synopsis of 10^7 rows (m = 10^4, cdf), median of 3,
#      from its query and from the table (the relation reader; READ_WORKERS
#      sets approx_gpu.read_workers, default auto)
#   2. named approx_count vs the exact SELECT count(*) ... WHERE on the same
#      table: median latency over 20 predicates, and the ratio
#   3. accuracy (median relative error of COUNT / SUM / AVG, KDE vs the plain
#      sample, 95% interval coverage) on diamonds and movielens (m = 10^4,
#      200 boxes, selectivity >= 1%) and a Gaussian mixture (N = 10^6,
#      m = 10^4, 200 boxes, selectivity 0.1-3%), over 8 sampling seeds (the
#      boxes of one sample share its luck: coverage is reported per seed too)
#      and the generated shapes of test/bench/synopsis_shapes.sql (2 x 10^5 rows
#      each, 200 boxes, selectivity >= 1%): lognormal_int, pareto_int,
#      zero_inflated, point_mass_mix, weekly_dates
#   Per selectivity band (0.1-1%, 1-10%, 10-50%) and with the guard's decisions:
#   build/synopsis_accuracy_bench (make bench; engine API, no PostgreSQL).
# SIZE=N overrides the 10^7 rows (e.g. SIZE=1000000 for a quick run here);
# PARTS=accuracy skips 1 and 2 (the mixture then needs SIZE >= 10^6 rows made
# earlier or now); SETS=diamonds,movielens,mixture picks data sets; SEEDS="1 2".
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE=${SIZE:-10000000}
SEEDS=${SEEDS:-1 2 3 4 5 6 7 8}
PARTS=${PARTS:-e2e,accuracy}
SETS=${SETS:-diamonds,movielens,mixture,lognormal_int,pareto_int,zero_inflated,point_mass_mix,weekly_dates}
. test/bench/sql_lib.sh
[ -n "${READ_WORKERS:-}" ] && export PGOPTIONS="${PGOPTIONS:-} -c approx_gpu.read_workers=$READ_WORKERS"
bench_extension
psql -c "SET client_min_messages = warning; SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name LIKE 'bench_%'" >/dev/null

echo "device: $(psql -At -c "SELECT coalesce(approx_gpu.device_info()->'devices'->0->>'name', 'no GPU')")"
need_rows() { [[ $PARTS == *e2e* || ",$SETS," == *",mixture,"* ]]; }
if need_rows; then
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
VACUUM ANALYZE bench_syn;  -- as a table at rest is: hint bits set, pages all-visible
SQL
fi

if [[ $PARTS == *e2e* ]]; then
echo "-- 1. build (create/refresh_synopsis, $SIZE rows, 4 columns, m = 10^4, cdf) and"
echo "-- 2. named approx_count vs exact count(*) ... WHERE over 20 predicates (server-side clock_timestamp)"
psql -At <<SQL
SET jit = off;
CREATE FUNCTION pg_temp.t_ms(q text) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; BEGIN t0 := clock_timestamp(); EXECUTE q; RETURN 1000 * extract(epoch FROM clock_timestamp() - t0); END \$\$;
CREATE TEMP TABLE build_ms AS
  SELECT pg_temp.t_ms(\$\$SELECT approx_gpu.create_synopsis('bench_10m', 'SELECT x1, x2, x3, price FROM bench_syn', 10000)\$\$) AS ms;
INSERT INTO build_ms SELECT pg_temp.t_ms(\$\$SELECT approx_gpu.refresh_synopsis('bench_10m')\$\$) FROM generate_series(1, 2);
SELECT 'last build (query form): ' || approx_gpu.last_run()::text;
-- the table form: read by the extension's parallel reader (sampling in its workers)
CREATE TEMP TABLE build_table_ms AS
  SELECT pg_temp.t_ms(\$\$SELECT approx_gpu.create_synopsis('bench_10m_t', 'bench_syn', ARRAY['x1', 'x2', 'x3', 'price']::name[], 10000)\$\$) AS ms;
INSERT INTO build_table_ms SELECT pg_temp.t_ms(\$\$SELECT approx_gpu.refresh_synopsis('bench_10m_t')\$\$) FROM generate_series(1, 2);
SELECT 'last build (table form): ' || approx_gpu.last_run()::text;
CREATE TEMP TABLE preds AS
  SELECT i, -3 + (i % 7) * 0.6 AS lo1, -3 + (i % 7) * 0.6 + 1.5 AS hi1, 5 + (i % 9) * 2 AS lo3, 17 + (i % 9) * 2 AS hi3
  FROM generate_series(1, 20) i;
CREATE TEMP TABLE query_ms AS
  SELECT i, pg_temp.t_ms(format('SELECT approx_gpu.approx_count(%L, %L)', 'bench_10m',
                                format('{"x1": [%s, %s], "x3": [%s, %s]}', lo1, hi1, lo3, hi3))) AS approx,
            pg_temp.t_ms(format('SELECT count(*) FROM bench_syn WHERE x1 BETWEEN %s AND %s AND x3 BETWEEN %s AND %s',
                                lo1, hi1, lo3, hi3)) AS exact
  FROM preds;
\pset format aligned
\pset tuples_only off
SELECT 'build: create/refresh_synopsis(query), $SIZE rows (median of 3)' AS measure,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS ms FROM build_ms
UNION ALL SELECT 'build: create/refresh_synopsis(table, columns), $SIZE rows (median of 3)',
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) FROM build_table_ms
UNION ALL SELECT 'named approx_count (median of 20 predicates)', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY approx)::numeric, 3) FROM query_ms
UNION ALL SELECT 'exact count(*) ... WHERE (median of 20)', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY exact)::numeric, 3) FROM query_ms
UNION ALL SELECT 'ratio exact / approx (median of the 20 ratios)', round(percentile_cont(0.5) WITHIN GROUP (ORDER BY exact / approx)::numeric, 0) FROM query_ms;
SQL
echo
fi
echo "-- 3. accuracy: median relative error (%) KDE vs plain sample, and KDE 95% CI coverage; seeds: $SEEDS"
psql -c "CREATE TABLE IF NOT EXISTS bench_dia (carat float8, depth float8, \"table\" float8, price float8)" \
     -c "CREATE TABLE IF NOT EXISTS bench_ml (year float8, rating float8, ts float8, userid float8)" \
     -c "TRUNCATE bench_dia, bench_ml"
psql -c "\\copy bench_dia FROM PROGRAM 'test/bench/synopsis_data.sh diamonds' WITH (FORMAT csv)"
psql -c "\\copy bench_ml FROM PROGRAM 'test/bench/synopsis_data.sh movielens' WITH (FORMAT csv)"
need_rows && psql -c "DROP TABLE IF EXISTS bench_mix; CREATE TABLE bench_mix AS SELECT x1, x2, x3 FROM bench_syn LIMIT 1000000; CREATE INDEX ON bench_mix (x1, x2, x3); ANALYZE bench_mix"
shape_seed=0.31
for shape in lognormal_int pareto_int zero_inflated point_mass_mix weekly_dates; do
  [[ ",$SETS," == *",$shape,"* ]] || continue
  psql -q -c "SET client_min_messages = warning" -f test/bench/synopsis_shapes.sql \
       -c "SELECT pg_temp.synopsis_shape('bench_$shape', '$shape', 200000, $shape_seed, false)" >/dev/null
  shape_seed=$(awk -v s="$shape_seed" 'BEGIN { printf "%.2f", s + 0.01 }')
done
for set in "bench_dia|carat,depth,table,price|4|0.01|1|0.2|0.9|0.6|10000|diamonds (price)" \
           "bench_lognormal_int|a,b|1|0.01|1|0.2|0.9|0.6|10000|lognormal_int (a)" \
           "bench_pareto_int|a,b|1|0.01|1|0.2|0.9|0.6|10000|pareto_int (a)" \
           "bench_zero_inflated|a,b|1|0.01|1|0.2|0.9|0.6|10000|zero_inflated (a)" \
           "bench_point_mass_mix|a,b|2|0.01|1|0.2|0.9|0.6|10000|point_mass_mix (b)" \
           "bench_weekly_dates|a,b|2|0.01|1|0.2|0.9|0.6|10000|weekly_dates (b)" \
           "bench_ml|year,rating,ts,userid|2|0.01|1|0.2|0.9|0.6|10000|movielens (rating)" \
           "bench_mix|x1,x2,x3|3|0.001|0.03|0.05|0.4|1.0|10000|mixture 10^6 (x3)"; do
  IFS='|' read -r tab cols agg minsel maxsel minw maxw pc m label <<<"$set"
  [[ ",$SETS," == *",${label%% *},"* ]] || continue
  n=$(psql -At -c "SELECT count(*) FROM $tab")
  if [ "$n" -lt 50000 ]; then echo "$label: no data (R packages not installed and no .device/data)"; continue; fi
  arr=$(echo "$cols" | awk -F, '{ for (i = 1; i <= NF; i++) printf "%s\"%s\"", (i > 1 ? ", " : ""), $i }')
  for seed in $SEEDS; do
    psql -At -F' ' <<SQL
SET client_min_messages = warning; SET jit = off; SET max_parallel_workers_per_gather = 0;
\\i test/bench/synopsis_accuracy.sql
SET approx_gpu.random_seed = $seed;
CREATE TEMP TABLE syn AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[$arr], $m) AS kde,
                                approx_gpu.kde_synopsis_agg(ARRAY[$arr], $m, 'scott', 'never') AS plain FROM $tab;
SELECT pg_temp.synopsis_boxes('$tab', string_to_array('$cols', ','), $agg, 200, $minsel, $maxsel, $minw, $maxw, $pc, 0.1 + $seed / 100.0) \\gset
CREATE TABLE IF NOT EXISTS bench_acc (label text, seed int, boxes int, kc float8, pc float8, ks float8, ps float8, ka float8, pa float8, cc float8, cs float8, ca float8, plain_cc float8);
INSERT INTO bench_acc SELECT '$label', $seed, a.*, p.cover_count
  FROM pg_temp.synopsis_accuracy((SELECT kde FROM syn), (SELECT plain FROM syn), $agg) a,
       pg_temp.synopsis_accuracy((SELECT plain FROM syn), (SELECT plain FROM syn), $agg) p;
SQL
  done
done
psql -c "SELECT label AS data_set, sum(boxes) AS boxes,
       round(avg(kc)::numeric, 2) AS kde_count, round(avg(pc)::numeric, 2) AS plain_count,
       round(avg(ks)::numeric, 2) AS kde_sum, round(avg(ps)::numeric, 2) AS plain_sum,
       round(avg(ka)::numeric, 2) AS kde_avg, round(avg(pa)::numeric, 2) AS plain_avg,
       round(avg(cc)::numeric, 3) AS cover_count, round(avg(cs)::numeric, 3) AS cover_sum, round(avg(ca)::numeric, 3) AS cover_avg,
       round(avg(plain_cc)::numeric, 3) AS plain_cover_count,
       round(min(least(cc, cs, ca))::numeric, 2) || '-' || round(max(greatest(cc, cs, ca))::numeric, 2) AS cover_range_per_seed
FROM bench_acc GROUP BY label ORDER BY label"
echo "(median errors and coverage averaged over the seeds; coverage = share of boxes whose 95% interval"
echo " holds the exact answer; plain_cover_count: the plain sample's own intervals, for comparison)"
psql -c "DROP TABLE IF EXISTS bench_acc, bench_dia, bench_ml, bench_mix, bench_lognormal_int, bench_pareto_int, bench_zero_inflated, bench_point_mass_mix, bench_weekly_dates" \
     -c "SET client_min_messages = warning; SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name IN ('bench_10m', 'bench_10m_t')" >/dev/null
