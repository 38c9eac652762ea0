#!/usr/bin/env bash
# End-to-end top-k in PostgreSQL (psql with PGHOST/PGPORT/PGUSER/PGDATABASE
# from the environment; creates and drops its own tables):
#  1. SELECT topk(id, score, k) vs ORDER BY score DESC, id LIMIT k (PostgreSQL's
#     top-N heapsort) over TOPK_ROWS rows (default 10^7; 10^6 distinct scores,
#     so many ties), k in {10, 100, 1000}, serial and parallel plans.
#  1b. The relation form topk(relation, id_column, score_column, k) (the
#     parallel relation reader) next to PostgreSQL's ORDER BY ... LIMIT k and
#     the topk(id, score, k) aggregate, both with parallel workers, over the
#     same table, k in TOPK_REL_K (default "10 100 1000"): one table of
#     test/bench/forms.sql (ms read / transfer / compute, rows/s read, read
#     workers, device, ratio to ORDER BY), and a check that the answers equal
#     ORDER BY's.
#  2. The paper's NRA setup: N objects with 4 independent uniform attributes,
#     a B-tree index per attribute (INCLUDE id: index-only backward scans),
#     k = 100: topk_nra on each engine (time, rounds, depth read, random
#     accesses) vs the full-scan alternative ORDER BY a + b + c + d DESC, id
#     LIMIT 100. NRA_SIZES (default "1000000 10000000").
# TOPK_SECTIONS (default "1 2"): the sections to run (e.g. "2": NRA only).
# Times: median of RUNS (default 3) runs after one warm-up, measured with
# clock_timestamp() around EXECUTE in PL/pgSQL (no client transfer).
# Workers in 1b: PG_WORKERS (max_parallel_workers_per_gather of ORDER BY and
# the aggregate; default cores/2 capped at 8), READ_WORKERS
# (approx_gpu.read_workers of the relation form, and its
# max_parallel_workers_per_gather; default -1 = auto under PG_WORKERS).
set -euo pipefail
ROWS=${TOPK_ROWS:-10000000}
NRA_SIZES=${NRA_SIZES:-"1000000 10000000"}
SECTIONS=" ${TOPK_SECTIONS:-1 2} "
RUNS=${RUNS:-3}
REL_K=${TOPK_REL_K:-"10 100 1000"}
. "$(dirname "${BASH_SOURCE[0]}")/forms.sh"
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -P footer=off)

"${PSQL[@]}" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
CREATE SCHEMA IF NOT EXISTS topk_bench;
CREATE OR REPLACE FUNCTION topk_bench.ms(q text, runs int, dev text, par int) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; v float8[] := '{}';
BEGIN
  PERFORM set_config('approx_gpu.device', dev, false);
  PERFORM set_config('max_parallel_workers_per_gather', par::text, false);
  EXECUTE q;  -- warm-up (and CUDA initialisation)
  FOR i IN 1..runs LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    v := v || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
  END LOOP;
  RETURN (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(v) x);
END $$;
CREATE OR REPLACE FUNCTION topk_bench.has_gpu() RETURNS boolean LANGUAGE sql AS
  $$ SELECT (approx_gpu.device_info()->>'gpu_available')::boolean $$;
SQL

if [[ "$SECTIONS" == *" 1 "* ]]; then
echo "== 1. SELECT topk(id, score, k) vs ORDER BY score DESC, id LIMIT k over $ROWS rows (median of $RUNS, ms)"
"${PSQL[@]}" -v rows="$ROWS" -v runs="$RUNS" -v rel_k="{${REL_K// /,}}" \
  -v pg_workers="$PG_WORKERS" -v read_workers="$READ_WORKERS" -v workers_note="$NOTE" -v forms="$FORMS" <<'SQL'
SET client_min_messages = warning;
SELECT setseed(0.5) AS seed \gset
DROP TABLE IF EXISTS topk_bench.t;
CREATE TABLE topk_bench.t AS
  SELECT i::bigint AS id, floor(random() * 1e6)::float8 / 7 AS score FROM generate_series(1, :rows) i;
VACUUM ANALYZE topk_bench.t;
SET topk_bench.runs = :runs;
CREATE TEMP TABLE r1 (k int, topk_serial float8, topk_par float8, orderby_serial float8, orderby_par float8,
                      same boolean, device text);
DO $$
DECLARE kk int; agg text; ord text; runs int := current_setting('topk_bench.runs')::int;
        par int := greatest(current_setting('max_parallel_workers_per_gather')::int, 2);
        a approx_gpu.scored[]; b approx_gpu.scored[]; dev text;
BEGIN
  FOREACH kk IN ARRAY ARRAY[10, 100, 1000] LOOP
    agg := format('SELECT approx_gpu.topk(id, score, %s) FROM topk_bench.t', kk);
    ord := format('SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY score DESC, id) FROM '
                  '(SELECT id, score FROM topk_bench.t ORDER BY score DESC, id LIMIT %s) s', kk);
    INSERT INTO r1 VALUES (kk, topk_bench.ms(agg, runs, 'auto', 0), topk_bench.ms(agg, runs, 'auto', par),
                           topk_bench.ms(ord, runs, 'auto', 0), topk_bench.ms(ord, runs, 'auto', par));
    PERFORM set_config('max_parallel_workers_per_gather', par::text, false);
    EXECUTE agg INTO a;
    dev := approx_gpu.last_run()->>'device';
    EXECUTE ord INTO b;
    UPDATE r1 SET same = (a = b), device = dev WHERE r1.k = kk;
  END LOOP;
END $$;
SELECT k, round(topk_serial::numeric, 1) AS "topk serial", round(topk_par::numeric, 1) AS "topk parallel",
       round(orderby_serial::numeric, 1) AS "ORDER BY serial", round(orderby_par::numeric, 1) AS "ORDER BY parallel",
       round((orderby_serial / topk_serial)::numeric, 2) AS "x serial", round((orderby_par / topk_par)::numeric, 2) AS "x parallel",
       device AS "final on", same AS "same answer"
FROM r1 ORDER BY k;

\echo
\echo '== 1b. topk(relation, id_column, score_column, k) vs ORDER BY score DESC, id LIMIT k with parallel workers'
\i :forms
SET topk_bench.rel_k = :'rel_k';
\o /dev/null
DO $$
DECLARE kk int; runs int := current_setting('topk_bench.runs')::int;
        ks int[] := current_setting('topk_bench.rel_k')::int[];
        gpu boolean := (approx_gpu.device_info()->>'gpu_available')::boolean;
        ord text; base int;
BEGIN
  PERFORM pg_temp.form_time(1, 'PostgreSQL: SELECT count(*) FROM t (scan only)', 10 * ks[1] + 1, 'pg',
                            'SELECT count(*) FROM topk_bench.t', runs);
  FOREACH kk IN ARRAY ks LOOP
    base := 10 * kk;
    ord := format('SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY score DESC, id) FROM '
                  '(SELECT id, score FROM topk_bench.t ORDER BY score DESC, id LIMIT %s) s', kk);
    PERFORM pg_temp.form_time(base + 1, format('k = %s: PostgreSQL: ORDER BY score DESC, id LIMIT k', kk), base + 1,
                              'pg', ord, runs);
    PERFORM pg_temp.form_time(base + 2, format('k = %s: SELECT topk(id, score, k) FROM t (aggregate)', kk), base + 1,
                              'query', format('SELECT approx_gpu.topk(id, score, %s) FROM topk_bench.t', kk), runs);
    PERFORM pg_temp.form_time(base + 3, format('k = %s: topk(relation t, ''id'', ''score'', k)', kk), base + 1,
                              'relation', format('SELECT approx_gpu.topk(''topk_bench.t'', ''id'', ''score'', %s)', kk), runs);
    IF gpu THEN
      PERFORM pg_temp.form_time(base + 4, format('k = %s: topk(relation t, ...), CPU engine', kk), base + 1,
                                'relation', format('SELECT approx_gpu.topk(''topk_bench.t'', ''id'', ''score'', %s)', kk),
                                runs, 'cpu');
    END IF;
  END LOOP;
END $$;
\o
SELECT pg_temp.form_header(format('top-k over %s rows (id bigint, score float8; 10^6 distinct scores), %s warm runs',
                                  :rows, :runs)) AS "setting";
SELECT * FROM pg_temp.form_table;
SELECT p.ord / 10 AS k,
       CASE WHEN r.a IS NULL THEN 'not run' WHEN r.a = p.a THEN 'yes' ELSE 'NO: DIFFERS' END AS "topk(relation) = ORDER BY",
       CASE WHEN c.a IS NULL THEN '-' WHEN c.a = p.a THEN 'yes' ELSE 'NO: DIFFERS' END AS "its CPU engine = ORDER BY",
       CASE WHEN g.a IS NULL THEN 'not run' WHEN g.a = p.a THEN 'yes' ELSE 'NO: DIFFERS' END AS "topk aggregate = ORDER BY",
       CASE WHEN p.n = 1 AND coalesce(r.n, 1) = 1 AND coalesce(g.n, 1) = 1 AND coalesce(c.n, 1) = 1
            THEN 'yes' ELSE 'NO: an answer varied between runs' END AS "every run the same"
FROM (SELECT ord, min(answer) AS a, count(DISTINCT answer) AS n FROM form_runs GROUP BY ord) p
LEFT JOIN (SELECT ord, min(answer) AS a, count(DISTINCT answer) AS n FROM form_runs GROUP BY ord) g ON g.ord = p.ord + 1
LEFT JOIN (SELECT ord, min(answer) AS a, count(DISTINCT answer) AS n FROM form_runs GROUP BY ord) r ON r.ord = p.ord + 2
LEFT JOIN (SELECT ord, min(answer) AS a, count(DISTINCT answer) AS n FROM form_runs GROUP BY ord) c ON c.ord = p.ord + 3
WHERE p.ord % 10 = 1 AND p.ord > 1
ORDER BY 1;
DROP TABLE topk_bench.t;
SQL
echo
fi

if [[ "$SECTIONS" == *" 2 "* ]]; then
echo "== 2. NRA, the paper's setup: 4 independent uniform attributes, k = 100, batch 1024 (median of $RUNS, ms)"
for N in $NRA_SIZES; do
"${PSQL[@]}" -v n="$N" -v runs="$RUNS" <<'SQL'
SET client_min_messages = warning;
SELECT setseed(0.25) AS seed \gset
DROP TABLE IF EXISTS topk_bench.nra;
CREATE TABLE topk_bench.nra AS
  SELECT i::bigint AS id, random() AS a, random() AS b, random() AS c, random() AS d FROM generate_series(1, :n) i;
ALTER TABLE topk_bench.nra ADD PRIMARY KEY (id);
CREATE INDEX ON topk_bench.nra (a) INCLUDE (id);
CREATE INDEX ON topk_bench.nra (b) INCLUDE (id);
CREATE INDEX ON topk_bench.nra (c) INCLUDE (id);
CREATE INDEX ON topk_bench.nra (d) INCLUDE (id);
VACUUM ANALYZE topk_bench.nra;
SET topk_bench.runs = :runs;
SET topk_bench.n = :n;
CREATE TEMP TABLE r2 (n bigint, engine text, ms float8, ms_read float8, ms_compute float8, rounds bigint,
                      depth bigint, random_accesses bigint, scan_ms float8, same boolean);
DO $$
DECLARE nra text := 'SELECT array_agg(ROW(id, score)::approx_gpu.scored ORDER BY o) FROM '
                    'approx_gpu.topk_nra(''topk_bench.nra'', ''id'', ''{a,b,c,d}'', 100, 1024) WITH ORDINALITY t(id, score, o)';
        runs int := current_setting('topk_bench.runs')::int; n bigint := current_setting('topk_bench.n')::bigint;
        scan text := 'SELECT array_agg(ROW(id, s)::approx_gpu.scored ORDER BY s DESC, id) FROM '
                     '(SELECT id, a + b + c + d AS s FROM topk_bench.nra ORDER BY 2 DESC, 1 LIMIT 100) q';
        dev text; t float8; scan_ms float8; a approx_gpu.scored[]; b approx_gpu.scored[]; lr jsonb;
        par int := greatest(current_setting('max_parallel_workers_per_gather')::int, 2);
BEGIN
  scan_ms := topk_bench.ms(scan, runs, 'cpu', par);
  EXECUTE scan INTO b;
  FOREACH dev IN ARRAY CASE WHEN topk_bench.has_gpu() THEN ARRAY['cpu', 'gpu'] ELSE ARRAY['cpu'] END LOOP
    t := topk_bench.ms(nra, runs, dev, 0);
    EXECUTE nra INTO a;
    lr := approx_gpu.last_run();
    INSERT INTO r2 VALUES (n, lr->>'device', t, (lr->>'ms_read')::float8, (lr->>'ms_compute')::float8,
                           (lr->>'rounds')::bigint, (lr->>'depth_1')::bigint, (lr->>'random_accesses')::bigint,
                           scan_ms, a = b);
  END LOOP;
END $$;
SELECT n AS objects, engine, round(ms::numeric, 1) AS "NRA ms", round(ms_read::numeric, 1) AS "read ms",
       round(ms_compute::numeric, 1) AS "engine ms", rounds, round(100.0 * depth / n, 2) AS "depth %",
       round((100 * power(24.0 * 100 / n, 0.25))::numeric, 2) AS "(24k/N)^.25 %", random_accesses AS "random acc.",
       round(scan_ms::numeric, 1) AS "full scan ms", round((scan_ms / ms)::numeric, 2) AS "x scan", same AS "same answer"
FROM r2 ORDER BY r2.engine;
DROP TABLE topk_bench.nra;
SQL
done
fi
"${PSQL[@]}" -c "DROP SCHEMA topk_bench CASCADE" >/dev/null 2>&1 || true
