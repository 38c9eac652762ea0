#!/usr/bin/env bash
# Do the two SSB generators make the same data? ssb_generate (plain SQL,
# test/workloads/ssb_schema.sql) and build/ssbgen (test/bench/ssbgen.cpp, loaded
# by test/bench/ssb_load.sh) draw from different random streams, so their rows
# differ; their tables must not otherwise. At a small scale (SF, default 0.1),
# per variant (uniform; skewed with SKEW, default 1.0) both are generated side
# by side (schemas ssbchk_sql_*, ssbchk_cpp_*, dropped at the end unless
# KEEP=1) and compared:
#   - date (no randomness): identical row for row;
#   - per column of every table: rows, NULLs, distinct values, min, max, mean
#     (of the value; of the length for text, of 0/1 for booleans) and the
#     shares of the three most frequent values (the skewed columns' hot keys).
# A column passes when rows are equal and every other statistic agrees within
# sampling noise: NULL and top shares within 4 binomial standard errors (plus
# 0.001), means within 4 standard errors of the difference, distinct counts
# within 4·sqrt(d) + 1% of d, min and max equal, except where the extremes are
# one draw's luck (printed, not compared): random digits (c_address,
# s_address, c_phone, s_phone), the heavy tails (lo_extendedprice,
# lo_ordtotalprice, lo_revenue: the maximum of Pareto draws below the cap
# varies by tens of percent between samples) and lo_commitdate (its extremes
# need the first or last order day and the extreme lag, 1 row in 146,705). Prints one line per column and a last line "N of M columns
# agree"; exits 1 when any does not. Against PGHOST/PGPORT/PGUSER/PGDATABASE.
set -euo pipefail
cd "$(dirname "$0")/../.."
SF=${SF:-0.1}; SKEW=${SKEW:-1.0}; KEEP=${KEEP:-0}
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
echo "# ssbgen vs ssb_generate at SF $SF"
for v in uniform skewed; do
  skew=0; [ $v = skewed ] && skew=$SKEW
  t0=$(date +%s.%N)
  PGOPTIONS="-c search_path=ssbchk_sql_$v,public -c client_min_messages=warning" psql \
    -c "DROP SCHEMA IF EXISTS ssbchk_sql_$v CASCADE" -c "CREATE SCHEMA ssbchk_sql_$v" \
    -f test/workloads/ssb_schema.sql -c "SELECT ssb_generate($SF, 0.42, $skew)" >/dev/null
  echo "-- $v: ssb_generate in $(secs "$t0") s"
  t0=$(date +%s.%N)
  SCHEMA=ssbchk_cpp_$v VARIANT=$v SKEW=$SKEW SF=$SF VACUUM=0 test/bench/ssb_load.sh >/dev/null
  echo "-- $v: ssbgen + ssb_load.sh in $(secs "$t0") s"
done
out=$(mktemp); trap 'rm -f "$out"' EXIT
psql -At <<'SQL' >"$out"
-- one column's statistics; x: the value the mean is taken of
CREATE FUNCTION pg_temp.colstats(sch text, tab text, col text, typ text,
    OUT n bigint, OUT nulls bigint, OUT nd bigint, OUT lo text, OUT hi text,
    OUT mean float8, OUT sd float8, OUT top text, OUT tops float8[])
LANGUAGE plpgsql AS $$
DECLARE
    x text := CASE WHEN typ = 'boolean' THEN format('%I::int::float8', col)
                   WHEN typ LIKE 'character%' OR typ = 'text' THEN format('length(%I)::float8', col)
                   ELSE format('%I::float8', col) END;
    r text := quote_ident(sch) || '.' || quote_ident(tab);
    mm text := CASE WHEN typ = 'boolean' THEN format('bool_and(%1$I)::text, bool_or(%1$I)::text', col)
                    ELSE format('min(%1$I)::text, max(%1$I)::text', col) END;
BEGIN
    EXECUTE format('SELECT count(*), count(*) - count(%2$I), count(DISTINCT %2$I), %4$s,
                           avg(%3$s), coalesce(stddev_samp(%3$s), 0) FROM %1$s', r, col, x, mm)
       INTO n, nulls, nd, lo, hi, mean, sd;
    EXECUTE format('SELECT (array_agg(v ORDER BY c DESC, v))[1], array_agg(c ORDER BY c DESC)
                      FROM (SELECT %2$I::text AS v, count(*)::float8 / %3$s AS c FROM %1$s WHERE %2$I IS NOT NULL
                             GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3) t', r, col, n)
       INTO top, tops;
END $$;
-- binomial: do shares p and q of n rows each differ by more than 4 standard errors (+ 0.001)?
CREATE FUNCTION pg_temp.pdiff(p float8, q float8, n bigint) RETURNS boolean LANGUAGE sql AS $$
SELECT abs(p - q) > 4 * sqrt(greatest((p + q) / 2 * (1 - (p + q) / 2), 0) * 2.0 / n) + 0.001 $$;
WITH cols AS (
    SELECT table_name::text AS tab, column_name::text AS col, data_type::text AS typ, ordinal_position AS pos
      FROM information_schema.columns WHERE table_schema = 'ssbchk_sql_uniform'),
s AS (
    SELECT v, tab, col, typ, pos, a, b
      FROM unnest(ARRAY['uniform', 'skewed']) v, cols,
           LATERAL pg_temp.colstats('ssbchk_sql_' || v, tab, col, typ) a,
           LATERAL pg_temp.colstats('ssbchk_cpp_' || v, tab, col, typ) b),
c AS (
    SELECT *, col IN ('c_address', 's_address', 'c_phone', 's_phone', 'lo_extendedprice', 'lo_ordtotalprice',
                      'lo_revenue', 'lo_commitdate') AS loose,
           array_remove(ARRAY[
             CASE WHEN (a).n <> (b).n THEN 'rows' END,
             CASE WHEN pg_temp.pdiff((a).nulls::float8 / (a).n, (b).nulls::float8 / (b).n, (a).n) THEN 'nulls' END,
             CASE WHEN abs((a).mean - (b).mean) > 4 * sqrt((a).sd ^ 2 / greatest(1, (a).n - (a).nulls)
                                                          + (b).sd ^ 2 / greatest(1, (b).n - (b).nulls)) + 1e-9 * abs((a).mean)
                  THEN 'mean' END,
             CASE WHEN abs((a).nd - (b).nd) > 4 * sqrt(greatest((a).nd, (b).nd)) + 0.01 * greatest((a).nd, (b).nd)
                  THEN 'distinct' END,
             CASE WHEN EXISTS (SELECT FROM generate_series(1, 3) k
                                WHERE pg_temp.pdiff(coalesce((a).tops[k], 0), coalesce((b).tops[k], 0), (a).n))
                  THEN 'top shares' END
           ]::text[], NULL) AS bad
      FROM s),
d AS (
    SELECT *, bad || array_remove(ARRAY[
             CASE WHEN ((a).lo IS DISTINCT FROM (b).lo OR (a).hi IS DISTINCT FROM (b).hi) AND NOT loose
                  THEN 'min/max' END]::text[], NULL) AS why
      FROM c)
SELECT format('%-7s %-28s rows %s/%s nulls %s/%s distinct %s/%s min %s/%s max %s/%s mean %s/%s top %s %s/%s: %s',
              v, tab || '.' || col, (a).n, (b).n, (a).nulls, (b).nulls, (a).nd, (b).nd,
              (a).lo, (b).lo, (a).hi, (b).hi, round((a).mean::numeric, 3), round((b).mean::numeric, 3),
              (a).top, round((a).tops[1]::numeric, 4), round((b).tops[1]::numeric, 4),
              CASE WHEN why = '{}' THEN 'ok' ELSE 'DIFF ' || array_to_string(why, ', ') END)
  FROM d ORDER BY v DESC, tab, pos;
SELECT format('date: %s rows of ssb_generate''s not in ssbgen''s, %s the other way%s',
              (SELECT count(*) FROM (TABLE ssbchk_sql_uniform.date EXCEPT ALL TABLE ssbchk_cpp_uniform.date) x),
              (SELECT count(*) FROM (TABLE ssbchk_cpp_uniform.date EXCEPT ALL TABLE ssbchk_sql_uniform.date) x),
              CASE WHEN EXISTS (TABLE ssbchk_sql_uniform.date EXCEPT ALL TABLE ssbchk_cpp_uniform.date)
                     OR EXISTS (TABLE ssbchk_cpp_uniform.date EXCEPT ALL TABLE ssbchk_sql_uniform.date)
                   THEN ': DIFF' ELSE '' END);
SQL
cat "$out"
cols=$(grep -c ' rows ' "$out"); bad=$(grep -c 'DIFF' "$out" || true)
echo "$((cols - $(grep ' rows ' "$out" | grep -c DIFF || true))) of $cols columns agree"
[ "$KEEP" = 1 ] || psql -c 'SET client_min_messages = warning' \
  -c 'DROP SCHEMA ssbchk_sql_uniform, ssbchk_cpp_uniform, ssbchk_sql_skewed, ssbchk_cpp_skewed CASCADE'
[ "$bad" = 0 ]
