#!/usr/bin/env bash
# Interval coverage of the sample path at SQL level, with and without the
# census (take-all) stratum (PGHOST/PGPORT/PGUSER/PGDATABASE from the
# environment). Two heavy-tailed tables of ROWS rows in 10 groups (Pareto
# alpha = 1.1 and lognormal sigma = 2, from hashint4 of the row number:
# deterministic); per seed (1..SEEDS) a synopsis stratified on the group of a
# 1% sample, built with census => false and => true, and the default one
# (create_synopsis(name, table, columns, size): unstratified, the census
# where census_pays accepts a column); each group's
# approx_sum_ci / approx_avg_ci (an OR in the WHERE keeps the box path off)
# checked against the exact answer. Prints, per table, design and aggregate:
# (group, seed) pairs, coverage of the 95% intervals, median and max relative
# error. Not a timed test. KEEP=1 keeps the tables.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/sql_lib.sh
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
ROWS=${ROWS:-200000}
SEEDS=${SEEDS:-20}
SAMPLE=$((ROWS / 100))
bench_extension
echo "-- census_sql: $ROWS rows in 10 groups, 1% samples stratified on the group, seeds 1..$SEEDS"
psql <<SQL >/dev/null
DROP TABLE IF EXISTS bench_census_pareto, bench_census_lognormal, bench_census_results;
-- u in (0, 1) from the row number: the same tables on every run
CREATE TABLE bench_census_pareto AS
SELECT i AS id, i % 10 AS g, 1 / power(1 - (hashint4(i) & 2147483647)::float8 / 2147483648.0, 1 / 1.1) AS x
  FROM generate_series(1, $ROWS) i;
CREATE TABLE bench_census_lognormal AS
SELECT i AS id, i % 10 AS g,
       exp(2 * sqrt(-2 * ln(((hashint4(i) & 2147483647)::float8 + 1) / 2147483649.0))
             * cos(2 * pi() * (hashint4(i + 7777777) & 2147483647)::float8 / 2147483648.0)) AS x
  FROM generate_series(1, $ROWS) i;
ANALYZE bench_census_pareto; ANALYZE bench_census_lognormal;
CREATE TABLE bench_census_results (tbl text, design text, agg text, seed int, g int, covered bool, err float8);
SQL
for tbl in pareto lognormal; do
    for seed in $(seq "$SEEDS"); do
        for census in false true default; do
            case $census in
                default) build="ARRAY['x', 'g']::name[], $SAMPLE, 'cdf', 'never'"; design="default (unstratified)" ;;
                true) build="ARRAY['x', 'g']::name[], $SAMPLE, 'cdf', 'never', ARRAY['g']::name[], census => true"
                      design="strata = groups, census" ;;
                *) build="ARRAY['x', 'g']::name[], $SAMPLE, 'cdf', 'never', ARRAY['g']::name[], census => false"
                   design="strata = groups, no census" ;;
            esac
            psql <<SQL >/dev/null
SET approx_gpu.random_seed = $seed;
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'bench_census';
SELECT approx_gpu.create_synopsis('bench_census', 'bench_census_$tbl'::regclass, $build);
CREATE TEMP TABLE a AS
SELECT g, approx_gpu.approx_sum_ci(x) AS s, approx_gpu.approx_avg_ci(x) AS m
  FROM bench_census_$tbl WHERE g >= 0 OR id < 0 GROUP BY g;
DO \$\$ BEGIN
  IF approx_gpu.last_run()->>'answered_from' IS DISTINCT FROM 'sample' THEN
    RAISE EXCEPTION 'census_sql: not answered from the sample: %', approx_gpu.last_run();
  END IF; END \$\$;
INSERT INTO bench_census_results
SELECT '$tbl', '$design', 'sum', $seed, g, e.s BETWEEN (a.s).lower AND (a.s).upper, abs((a.s).estimate / e.s - 1)
  FROM a JOIN (SELECT g, sum(x) AS s FROM bench_census_$tbl GROUP BY g) e USING (g)
UNION ALL
SELECT '$tbl', '$design', 'avg', $seed, g, e.m BETWEEN (a.m).lower AND (a.m).upper, abs((a.m).estimate / e.m - 1)
  FROM a JOIN (SELECT g, avg(x) AS m FROM bench_census_$tbl GROUP BY g) e USING (g);
SQL
        done
    done
done
psql -c "SELECT tbl AS measure, design, agg, count(*) AS pairs,
                round(avg(covered::int), 3) AS coverage,
                round(percentile_cont(0.5) WITHIN GROUP (ORDER BY err)::numeric, 4) AS median_err,
                round(max(err)::numeric, 3) AS max_err
           FROM bench_census_results GROUP BY 1, 2, 3 ORDER BY 1 DESC, 2 DESC, 3 DESC"
[ "${KEEP:-0}" = 1 ] || psql -c "DROP TABLE bench_census_pareto, bench_census_lognormal, bench_census_results" \
    -c "SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'bench_census'" >/dev/null
