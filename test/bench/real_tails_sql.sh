#!/usr/bin/env bash
# Interval coverage of the sample path on real heavy-tailed columns, at
# default settings (PGHOST/PGPORT/PGUSER/PGDATABASE from the environment):
#   npm     monthly downloads of every npm package (NPM_TSV: name, version,
#           downloads_a_month; about 227,000 rows), grouped by the name's
#           first character and, separately, by the major version;
#   debian  the .deb size and installed size of every package in apt's lists
#           (`apt-cache dumpavail`; about 64,000 rows), grouped by section and
#           by priority.
# Nothing here was chosen by looking at the results: the columns are the
# numeric ones the lists have, the groupings the obvious ones an analyst
# would write. Per seed (1..SEEDS) and sample fraction (PCTS, percent of the
# table's rows) a default synopsis (create_synopsis(name, table, columns,
# size): unstratified, the census where census_pays accepts a column) and
#   SELECT <group expression>, approx_count_ci(*), approx_sum_ci(x), approx_avg_ci(x)
#     FROM t WHERE x >= 0 OR x IS NULL GROUP BY 1
# (GROUP BY an expression: the sample path) checked against the exact
# answer. Groups the sample missed are counted apart (no interval to cover).
# Prints per dataset, fraction and aggregate: (group, seed) pairs, 95%
# interval coverage, median relative half-width, median and max relative
# error; then coverage by the group's size in the table; then, with
# approx_gpu.max_relative_error = 0.1, the share of (group, SUM / AVG) pairs
# of the exact answer that come back within 10%. Not a timed test.
# MEASURE (default x) is what the aggregates sum and average: e.g.
# MEASURE='x / 1024.0' checks that arithmetic over the column keeps the
# column's intervals (its spread is borrowed as the column's is).
# A dataset whose source is missing is skipped. KEEP=1 keeps the tables.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/sql_lib.sh
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
SEEDS=${SEEDS:-20}
PCTS=${PCTS:-"1 5"}
MEASURE=${MEASURE:-x}
NPM_TSV=${NPM_TSV:-/usr/share/package-lists/npm.tsv}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
bench_extension
psql <<'SQL' >/dev/null
DROP TABLE IF EXISTS bench_real_npm, bench_real_debian, bench_real_results, bench_real_missed, bench_real_default, bench_real_guard;
CREATE TABLE bench_real_results (dataset text, grouping text, pct int, agg text, seed int, g text,
                                 group_rows bigint, covered bool, half_width float8, err float8, truth_above bool);
CREATE TABLE bench_real_missed (dataset text, grouping text, pct int, seed int, groups int, missed int);
CREATE TABLE bench_real_default (dataset text, grouping text, pct int, seed int, answered_from text, reason text);
CREATE TABLE bench_real_guard (dataset text, grouping text, pct int, seed int, answered_from text, pairs int, within int);
SQL
datasets=""
if [ -s "$NPM_TSV" ]; then
    # name, downloads (the version's major part as the second grouping)
    python3 - "$NPM_TSV" "$TMP/npm.csv" <<'PY'
import csv, sys
with open(sys.argv[1], encoding="utf-8", errors="replace") as f, open(sys.argv[2], "w", newline="") as out:
    w = csv.writer(out)
    next(f)
    for line in f:
        p = line.rstrip("\n").split("\t")
        if len(p) < 3 or not p[2].strip().isdigit():
            continue
        w.writerow([p[0], p[1], int(p[2])])
PY
    psql -c "CREATE TABLE bench_real_npm (name text, version text, x bigint)" \
         -c "\\copy bench_real_npm FROM '$TMP/npm.csv' WITH (FORMAT csv)" -c "ANALYZE bench_real_npm" >/dev/null
    datasets="$datasets npm"
else
    echo "-- real_tails: no $NPM_TSV, npm skipped"
fi
if command -v apt-cache >/dev/null && apt-cache dumpavail >"$TMP/debian.txt" 2>/dev/null && [ -s "$TMP/debian.txt" ]; then
    python3 - "$TMP/debian.txt" "$TMP/debian.csv" <<'PY'
import csv, sys
rows, cur = [], {}
def flush():
    if "Package" in cur and "Size" in cur:
        rows.append([cur["Package"], cur.get("Section", ""), cur.get("Priority", ""),
                     int(cur["Size"]), cur.get("Installed-Size")])
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        if line.strip() == "":
            flush(); cur = {}
        elif not line[0].isspace() and ":" in line:
            k, v = line.split(":", 1)
            cur[k] = v.strip()
flush()
with open(sys.argv[2], "w", newline="") as out:
    csv.writer(out).writerows(rows)
PY
    psql -c "CREATE TABLE bench_real_debian (package text, section text, priority text, x bigint, installed bigint)" \
         -c "\\copy bench_real_debian FROM '$TMP/debian.csv' WITH (FORMAT csv)" -c "ANALYZE bench_real_debian" >/dev/null
    datasets="$datasets debian"
else
    echo "-- real_tails: apt has no package lists (apt-get update), debian skipped"
fi
[ -n "$datasets" ] || { echo "-- real_tails: no dataset"; exit 2; }

# grouping name, group expression, per dataset
groupings() {
    case $1 in
        npm) echo "first_char|left(lower(name), 1)"; echo "major_version|split_part(version, '.', 1)" ;;
        debian) echo "section|section"; echo "priority|priority" ;;
    esac
}
for ds in $datasets; do
    tbl=bench_real_$ds
    rows=$(psql -tA -c "SELECT count(*) FROM $tbl")
    echo "-- real_tails: $ds, $rows rows"
    for pct in $PCTS; do
        size=$((rows * pct / 100))
        for seed in $(seq "$SEEDS"); do
            psql <<SQL >/dev/null
SET approx_gpu.random_seed = $seed;
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'bench_real';
SELECT approx_gpu.create_synopsis('bench_real', '$tbl'::regclass, ARRAY['x']::name[], $size, 'cdf', 'never');
SQL
            groupings "$ds" | while IFS='|' read -r gname gexpr; do
                psql <<SQL >/dev/null
SELECT approx_gpu.last_run();  -- loads the library before the query is planned
-- at default settings: does the sample answer, or the exact plan (why)?
CREATE TEMP TABLE d AS
SELECT ($gexpr)::text AS g, approx_gpu.approx_sum($MEASURE) AS s FROM $tbl WHERE x >= 0 OR x IS NULL GROUP BY 1;
INSERT INTO bench_real_default SELECT '$ds', '$gname', $pct, $seed, approx_gpu.last_run()->>'answered_from',
       approx_gpu.last_run()->>'reason';
-- the guard: with max_relative_error = 0.1, how many (group, aggregate) pairs
-- of the exact answer come back within 10% (a missing group is a miss; an
-- exact fallback is within)?
SET approx_gpu.max_relative_error = 0.1;
CREATE TEMP TABLE q AS
SELECT ($gexpr)::text AS g, approx_gpu.approx_sum($MEASURE) AS s, approx_gpu.approx_avg($MEASURE) AS m
  FROM $tbl WHERE x >= 0 OR x IS NULL GROUP BY 1;
CREATE TEMP TABLE qf AS SELECT approx_gpu.last_run()->>'answered_from' AS answered_from;
RESET approx_gpu.max_relative_error;
-- the intervals of every group the sample saw (the missing-groups rule off)
SET approx_gpu.max_missing_groups = 1;
CREATE TEMP TABLE a AS
SELECT ($gexpr)::text AS g, approx_gpu.approx_count_ci(*) AS c, approx_gpu.approx_sum_ci($MEASURE) AS s,
       approx_gpu.approx_avg_ci($MEASURE) AS m
  FROM $tbl WHERE x >= 0 OR x IS NULL GROUP BY 1;
DO \$\$ BEGIN
  IF approx_gpu.last_run()->>'answered_from' IS DISTINCT FROM 'sample' THEN
    RAISE EXCEPTION 'real_tails: not answered from the sample: %', approx_gpu.last_run();
  END IF; END \$\$;
CREATE TEMP TABLE e AS
SELECT ($gexpr)::text AS g, count(*)::float8 AS c, sum($MEASURE)::float8 AS s, avg($MEASURE)::float8 AS m
  FROM $tbl GROUP BY 1;
INSERT INTO bench_real_missed
SELECT '$ds', '$gname', $pct, $seed, count(*), count(*) FILTER (WHERE a.g IS NULL)
  FROM e LEFT JOIN a ON a.g IS NOT DISTINCT FROM e.g;
INSERT INTO bench_real_guard
SELECT '$ds', '$gname', $pct, $seed, (SELECT answered_from FROM qf), count(*),
       count(*) FILTER (WHERE abs(v.est - v.truth) <= 0.1 * abs(v.truth) OR v.est = v.truth)
  FROM e LEFT JOIN q ON q.g IS NOT DISTINCT FROM e.g,
       LATERAL (VALUES (q.s, e.s), (q.m, e.m)) v(est, truth)
 WHERE v.truth IS NOT NULL;
INSERT INTO bench_real_results
SELECT '$ds', '$gname', $pct, v.agg, $seed, e.g, e.c::bigint,
       v.truth BETWEEN (v.est).lower AND (v.est).upper,
       ((v.est).upper - (v.est).lower) / 2 / nullif(abs(v.truth), 0),
       abs((v.est).estimate - v.truth) / nullif(abs(v.truth), 0), v.truth > (v.est).upper
  FROM e JOIN a ON a.g IS NOT DISTINCT FROM e.g,
       LATERAL (VALUES ('count', a.c, e.c), ('sum', a.s, e.s), ('avg', a.m, e.m)) v(agg, est, truth)
 WHERE v.truth IS NOT NULL;
SQL
            done
        done
    done
done
psql -c "SELECT dataset, grouping, pct AS \"sample %\", agg, count(*) AS pairs,
                round(avg(covered::int), 3) AS coverage,
                round(percentile_cont(0.5) WITHIN GROUP (ORDER BY half_width)::numeric, 3) AS median_half_width,
                round(percentile_cont(0.5) WITHIN GROUP (ORDER BY err)::numeric, 4) AS median_err,
                round(max(err)::numeric, 3) AS max_err
           FROM bench_real_results GROUP BY 1, 2, 3, 4 ORDER BY 1 DESC, 2, 3, 4 DESC"
psql -c "SELECT m.dataset, m.grouping, m.pct AS \"sample %\", sum(m.groups) AS \"(group, seed) pairs\",
                sum(m.missed) AS missed_by_the_sample,
                count(*) FILTER (WHERE d.answered_from = 'sample') || ' / ' || count(*) AS answered_from_sample_at_defaults,
                min(d.reason) FILTER (WHERE d.answered_from <> 'sample') AS a_reason_for_the_exact_plan
           FROM bench_real_missed m JOIN bench_real_default d USING (dataset, grouping, pct, seed)
          GROUP BY 1, 2, 3 ORDER BY 1 DESC, 2, 3"
echo "By the group's rows in the table (all datasets, groupings and fractions): coverage SUM / AVG"
psql -c "SELECT CASE WHEN group_rows < 100 THEN '< 100' WHEN group_rows < 1000 THEN '100-999'
                     WHEN group_rows < 10000 THEN '1000-9999' ELSE '>= 10000' END AS group_rows, pct AS \"sample %\",
                count(*) FILTER (WHERE agg = 'sum') AS pairs,
                round(avg(covered::int) FILTER (WHERE agg = 'sum'), 3) AS sum_coverage,
                round(avg(covered::int) FILTER (WHERE agg = 'avg'), 3) AS avg_coverage,
                round(avg(covered::int) FILTER (WHERE agg = 'count'), 3) AS count_coverage
           FROM bench_real_results GROUP BY 1, 2 ORDER BY min(group_rows), 2"
psql -c "SELECT agg, count(*) AS pairs, round(avg(covered::int), 3) AS coverage,
                count(*) FILTER (WHERE truth_above) AS missed_below_the_truth,
                count(*) FILTER (WHERE NOT covered AND NOT truth_above) AS missed_above_the_truth
           FROM bench_real_results GROUP BY 1 ORDER BY 1 DESC"
echo "With approx_gpu.max_relative_error = 0.1 (SUM and AVG; a missing group is a miss, an exact fallback within):"
psql -c "SELECT dataset, grouping, pct AS \"sample %\",
                count(*) FILTER (WHERE answered_from = 'sample') || ' / ' || count(*) AS answered_from_sample,
                sum(within) || ' / ' || sum(pairs) AS pairs_within_10pct,
                round(sum(within)::numeric / sum(pairs), 3) AS share
           FROM bench_real_guard GROUP BY ROLLUP ((1, 2, 3)) ORDER BY 1 DESC NULLS LAST, 2, 3"
[ "${KEEP:-0}" = 1 ] || psql -c "DROP TABLE IF EXISTS bench_real_npm, bench_real_debian, bench_real_results, bench_real_missed, bench_real_default, bench_real_guard" \
    -c "SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'bench_real'" >/dev/null 2>&1 || true
