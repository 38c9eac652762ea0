#!/usr/bin/env bash
# What a table synopsis build costs, end to end in PostgreSQL, back to back
# in one run (PGHOST/PGPORT/PGUSER/PGDATABASE from the environment): each
# build beside ANALYZE of the same table and beside the other kinds of build
# of that table. Median of RUNS (3) per line, ms from clock_timestamp().
#   1. diamonds (53,940 rows x 4 float8 columns, test/bench/synopsis_data.sh):
#      ANALYZE vs create_synopsis with default options (sample 10,000)
#   2. a flights-like table of FLIGHTS rows (3*10^6; test/bench/flights_data.sql):
#      the default build (census 'auto') at 1% and 5% of the rows; at 1%,
#      without a census (census => false: the relation reader's one pass),
#      stratified by carrier and with the census (census => true)
#   3. (SSB=1) SSB SF 1 lineorder (6*10^6 rows; test/workloads/ssb_schema.sql,
#      reused when present): a 1% build of the measure columns
#   4. (LARGE=1, the GPU machine) a generated 6*10^7-row table of lineorder's
#      five measure columns (SSB SF 10's size; LARGE_ROWS), loaded by
#      LOAD_SESSIONS (8) sessions at once: ANALYZE and a 10^7-row build
#      (LARGE_SAMPLE), with the default census and without one; one run each.
#      LARGE=only skips parts 1-3.
# Not a timed test; prints a table.
#   FLIGHTS=300000 RUNS=1 bash test/bench/synopsis_build_sql.sh     a quick run
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/sql_lib.sh
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
FLIGHTS=${FLIGHTS:-3000000}
RUNS=${RUNS:-3}
bench_extension
LARGE=${LARGE:-0}
if [ "$LARGE" != 0 ]; then
  LARGE_ROWS=${LARGE_ROWS:-60000000}
  LARGE_SAMPLE=${LARGE_SAMPLE:-10000000}
  sessions=${LOAD_SESSIONS:-8}
  psql -c "SELECT 1 FROM pg_class WHERE relname = 'bld_large' AND reltuples >= $LARGE_ROWS * 0.99" -tA | grep -q 1 || {
    t0=$(date +%s.%N)
    psql -c 'DROP TABLE IF EXISTS bld_large' -c 'CREATE UNLOGGED TABLE bld_large (lo_quantity int4,
      lo_extendedprice int4, lo_discount int4, lo_revenue int4, lo_supplycost int4)'
    # Row i's values from hashes of i (the shapes of SSB's dbgen: quantity
    # 1..50, discount 0..10, price per unit 900..2,000 in cents / 100).
    for ((k = 0; k < sessions; k++)); do
      psql -c "INSERT INTO bld_large
        SELECT q, q * p, dsc, q * p * (100 - dsc) / 100, p * 6 / 10
          FROM (SELECT 1 + (hashint8(i) & 1023) % 50 AS q, 900 + (hashint8(-i) & 65535) % 1101 AS p,
                       (hashint8(i + 7919) & 1023) % 11 AS dsc
                  FROM generate_series($k::int8 * $LARGE_ROWS / $sessions + 1,
                                       ($k + 1)::int8 * $LARGE_ROWS / $sessions) i) g" &
    done
    wait
    echo "large: generated $LARGE_ROWS rows in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s ($sessions sessions)"
  }
  psql -c 'VACUUM bld_large'
fi
data=""
[ "$LARGE" = only ] || data=$(test/bench/synopsis_data.sh diamonds)
if [ -n "$data" ]; then
  psql -c 'DROP TABLE IF EXISTS bld_diamonds' -c 'CREATE TABLE bld_diamonds (carat float8, depth float8, "table" float8, price float8)'
  printf '%s\n' "$data" | psql -c '\copy bld_diamonds FROM STDIN CSV'
fi
[ "$LARGE" = only ] || psql -c "SELECT 1 FROM pg_class WHERE relname = 'bld_flights' AND reltuples >= $FLIGHTS * 0.99" -tA | grep -q 1 || {
  psql -c 'DROP TABLE IF EXISTS bld_flights'
  psql -f test/bench/flights_data.sql -c "SELECT pg_temp.flights_table('bld_flights', $FLIGHTS, 0.42, false)"
}
[ "$LARGE" = only ] || psql -c 'VACUUM ANALYZE bld_flights'
if [ "${SSB:-0}" = 1 ]; then
  psql -c "SELECT 1 FROM pg_class WHERE relname = 'lineorder'" -tA | grep -q 1 ||
    psql -f test/workloads/ssb_schema.sql -c "SELECT ssb_generate(1, 0.5)" >/dev/null
  psql -c 'VACUUM ANALYZE lineorder'
fi
psql -v runs="$RUNS" -v flights="$FLIGHTS" -v ssb="${SSB:-0}" -v large="$LARGE" -v large_sample="${LARGE_SAMPLE:-0}" <<'SQL'
CREATE TEMP TABLE timings (id serial, what text, ms float8);
CREATE FUNCTION pg_temp.timed(what text, stmt text, runs int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t timestamptz; i int;
BEGIN
  FOR i IN 1 .. runs LOOP
    t := clock_timestamp();
    EXECUTE stmt;
    INSERT INTO timings (what, ms) VALUES (what, 1000 * extract(epoch FROM clock_timestamp() - t));
    IF stmt LIKE '%create_synopsis%' THEN PERFORM approx_gpu.drop_synopsis('bld'); END IF;
  END LOOP;
END $$;
SELECT pg_temp.timed('diamonds: ANALYZE', 'ANALYZE bld_diamonds', :runs)
  WHERE to_regclass('bld_diamonds') IS NOT NULL;
SELECT pg_temp.timed('diamonds: create_synopsis (default, sample 10,000)',
  $$SELECT approx_gpu.create_synopsis('bld', 'bld_diamonds', ARRAY['carat', 'depth', 'table', 'price'])$$, :runs)
  WHERE to_regclass('bld_diamonds') IS NOT NULL;
SELECT pg_temp.timed('flights: ANALYZE', 'ANALYZE bld_flights', :runs) WHERE :'large' <> 'only';
SELECT pg_temp.timed(format('flights: uniform 1%% (%s rows)', :flights / 100),
  format($$SELECT approx_gpu.create_synopsis('bld', 'bld_flights', ARRAY['carrier', 'origin', 'dep_delay', 'distance'], %s)$$, :flights / 100), :runs) WHERE :'large' <> 'only';
SELECT pg_temp.timed(format('flights: uniform 1%%, census => false (%s rows)', :flights / 100),
  format($$SELECT approx_gpu.create_synopsis('bld', 'bld_flights', ARRAY['carrier', 'origin', 'dep_delay', 'distance'], %s, census => false)$$, :flights / 100), :runs) WHERE :'large' <> 'only';
SELECT pg_temp.timed(format('flights: uniform 5%% (%s rows)', :flights / 20),
  format($$SELECT approx_gpu.create_synopsis('bld', 'bld_flights', ARRAY['carrier', 'origin', 'dep_delay', 'distance'], %s)$$, :flights / 20), :runs) WHERE :'large' <> 'only';
SELECT pg_temp.timed('flights: 1% stratified by carrier',
  format($$SELECT approx_gpu.create_synopsis('bld', 'bld_flights', ARRAY['carrier', 'origin', 'dep_delay', 'distance'], %s, stratify => ARRAY['carrier'])$$, :flights / 100), :runs) WHERE :'large' <> 'only';
SELECT pg_temp.timed('flights: 1% with census',
  format($$SELECT approx_gpu.create_synopsis('bld', 'bld_flights', ARRAY['carrier', 'origin', 'dep_delay', 'distance'], %s, census => true)$$, :flights / 100), :runs) WHERE :'large' <> 'only';
SELECT pg_temp.timed('ssb lineorder: ANALYZE', 'ANALYZE lineorder', :runs) WHERE :ssb = 1;
SELECT pg_temp.timed('ssb lineorder: 1% (60,000 rows)',
  $$SELECT approx_gpu.create_synopsis('bld', 'lineorder', ARRAY['lo_quantity', 'lo_extendedprice', 'lo_discount', 'lo_revenue', 'lo_supplycost'], 60000)$$, :runs)
  WHERE :ssb = 1;
SELECT pg_temp.timed('large (6*10^7 rows): ANALYZE', 'ANALYZE bld_large', 1) WHERE :'large' <> '0';
SELECT what, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) AS median_ms,
       round(min(ms)::numeric, 1) AS min_ms, count(*) AS runs
  FROM timings GROUP BY what ORDER BY min(id);
SQL
# The large builds one at a time, each with what last_run() says of it (the
# read, the workers, the engine's share).
if [ "$LARGE" != 0 ]; then
  for opt in "" ", census => false"; do
    psql -At <<SQL
SELECT 'large: ' || $LARGE_SAMPLE || '-row sample${opt:+,}${opt#, }: ' || round(1000 * extract(epoch FROM clock_timestamp() - t))::text || ' ms'
  FROM (SELECT clock_timestamp() AS t) t0,
       LATERAL (SELECT approx_gpu.create_synopsis('bld', 'bld_large', ARRAY['lo_quantity', 'lo_extendedprice',
                'lo_discount', 'lo_revenue', 'lo_supplycost'], $LARGE_SAMPLE$opt)) b;
SELECT 'last_run: ' || approx_gpu.last_run()::text;
SELECT approx_gpu.drop_synopsis('bld');
SQL
  done
fi
