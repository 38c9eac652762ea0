#!/usr/bin/env bash
# Percentiles end to end in PostgreSQL (PGHOST/PGPORT/PGUSER/PGDATABASE from
# the environment): a table of ROWS lognormal(sigma = 2) values in NGROUPS
# groups, then client-measured times (psql's \timing) of
#   percentile_cont(0.5) / approx_percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
# ungrouped and GROUP BY g, and tdigest_percentile(x, 100, 0.5) where the
# tdigest extension is installed (Debian's postgresql-15-tdigest; skipped
# otherwise). Per query one untimed warm-up, then REPS timed runs; the table
# gives the median, the ratio to percentile_cont and where last_run() says
# approx_percentile_cont's answer came from (rows: no synopsis answers it, or
# the sample path with a synopsis of the table: SYNOPSIS=1 builds one first)
# and, for the approximate answers, the median relative error over the groups.
# KEEP=1 keeps the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/sql_lib.sh
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
ROWS=${ROWS:-1000000}
NGROUPS=${NGROUPS:-100}
REPS=${REPS:-3}
bench_extension
TDIGEST=$(psql -At -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'tdigest'")
[ "$TDIGEST" = 1 ] && psql -c 'CREATE EXTENSION IF NOT EXISTS tdigest' >/dev/null
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "-- bench_pct: $ROWS rows, $NGROUPS groups, $(nproc) CPU cores"
psql <<SQL >/dev/null
SELECT setseed(0.5);
DROP TABLE IF EXISTS bench_pct;
CREATE TABLE bench_pct AS
SELECT (random() * ($NGROUPS - 1))::int AS g, exp(2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS x
  FROM generate_series(1, $ROWS);
ANALYZE bench_pct;
SQL
if [ "${SYNOPSIS:-0}" = 1 ]; then
    psql -c "SET client_min_messages = warning; SELECT approx_gpu.drop_synopsis('bench_pct') FROM approx_gpu.synopses WHERE name = 'bench_pct'" >/dev/null
    psql -c "SELECT approx_gpu.create_synopsis('bench_pct', 'bench_pct'::regclass, ARRAY['g', 'x']::name[])" >/dev/null
fi

time_query() {  # label, query
    local ms=()
    psql -c "$2" >/dev/null
    for _ in $(seq "$REPS"); do
        ms+=("$(psql -At -c '\timing on' -c "$2" | grep -o 'Time: [0-9.]*' | awk '{ print $2 }')")
    done
    printf '%s\n' "${ms[@]}" | median
}

printf '%-48s %12s %10s %s\n' query "median ms" "vs exact" answered
for shape in ungrouped grouped; do
    if [ $shape = grouped ]; then sel="g,"; grp="GROUP BY g"; else sel=""; grp=""; fi
    exact=$(time_query exact "SELECT $sel percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bench_pct $grp")
    printf '%-48s %12s %10s %s\n' "percentile_cont ($shape)" "$exact" 1 rows
    approx=$(time_query approx "SELECT $sel approx_gpu.approx_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bench_pct $grp")
    from=$(psql -At -c "SELECT $sel approx_gpu.approx_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM bench_pct $grp" \
               -c "SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-')" | tail -1)
    printf '%-48s %12s %10s %s\n' "approx_percentile_cont ($shape)" "$approx" \
           "$(awk -v a="$approx" -v e="$exact" 'BEGIN { printf "%.2f", a / e }')" "$from"
    if [ "$TDIGEST" = 1 ]; then
        td=$(time_query tdigest "SELECT $sel tdigest_percentile(x, 100, 0.5) FROM bench_pct $grp")
        printf '%-48s %12s %10s %s\n' "tdigest_percentile(x, 100, 0.5) ($shape)" "$td" \
               "$(awk -v a="$td" -v e="$exact" 'BEGIN { printf "%.2f", a / e }')" tdigest
    fi
done
err=$(psql -At <<'SQL'
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(a / e - 1))::numeric, 4)
  FROM (SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS e,
               approx_gpu.approx_percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS a
          FROM bench_pct GROUP BY g) q
SQL
)
echo "approx_percentile_cont, median relative error over the groups: $err"
[ "$TDIGEST" = 1 ] || echo "tdigest: not installed (postgresql-15-tdigest is not part of CI's install step), skipped"
[ "${KEEP:-0}" = 1 ] || psql -c "SET client_min_messages = warning; DROP TABLE bench_pct" \
    -c "SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'bench_pct'" >/dev/null
