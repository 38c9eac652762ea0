#!/usr/bin/env bash
# Moving objects end to end in PostgreSQL: the same workload on
#   - a PostGIS table of points with a GiST index (UPDATE ... FROM unnest() for
#     a batch; per range query one index scan with ST_Intersects, exact on the
#     closed rectangle: the && operator alone compares float4-rounded boxes and
#     counts a few points just outside), when PostGIS is installed, and
#   - an approx_gpu index (mo_update / mo_range_count; its engine follows
#     approx_gpu.device: the GPU when there is one, else the CPU).
# Objects on 100 km x 100 km, speeds 1-1000 m/s, batches of updates of random
# objects (duplicates included: the last entry of an id wins on both sides),
# batches of 100 m x 100 m range counts; both sides must give the same counts.
#
# Uses psql with PGHOST/PGPORT/PGUSER/PGDATABASE from the environment; creates
# (and drops) a scratch database. MO_N (objects, default 1000000), MO_BATCH
# (updates per batch, default 100000), MO_Q (queries per batch, default 10000).
# Prints one table; each figure is the median of 3 timed runs
# (clock_timestamp() around the statement, inside the server).
# Then the load forms (test/bench/forms.sql), RUNS (default 3) warm runs each
# into a fresh index: mo_load over an inner query and over the relation (the
# parallel relation reader), with ms read / transfer / compute, rows/s read and
# read workers, against PostgreSQL building a spatial index on the same rows
# (CREATE INDEX ... USING gist (point(x, y)); the PostGIS load of the first
# table, one run, when PostGIS is there) and a plain scan. PG_WORKERS
# (max_parallel_workers_per_gather of PostgreSQL's queries and the inner-query
# form; default cores/2 capped at 8), READ_WORKERS (approx_gpu.read_workers of
# the relation form, and its max_parallel_workers_per_gather; default -1 =
# auto under PG_WORKERS).
set -euo pipefail
N=${MO_N:-1000000}
U=${MO_BATCH:-100000}
Q=${MO_Q:-10000}
RUNS=${RUNS:-3}
. "$(dirname "${BASH_SOURCE[0]}")/forms.sh"
DB=mo_bench_$$
HOST=$(hostname)
psql -qX -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB" >/dev/null
trap 'psql -qX -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true' EXIT
# PostGIS counts as there only when it loads (a bundle may carry control files
# without their libraries).
HAVE_POSTGIS=0
psql -qX -d "$DB" -c "BEGIN; CREATE EXTENSION postgis; ROLLBACK" >/dev/null 2>&1 && HAVE_POSTGIS=1

psql -qXAt -v ON_ERROR_STOP=1 -d "$DB" <<SQL
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION approx_gpu SCHEMA approx_gpu;
SELECT setseed(0.5);
CREATE TABLE obj AS
  SELECT i::bigint AS id, random() * 100000 AS x, random() * 100000 AS y,
         (1 + 999 * random()) AS sp, 2 * pi() * random() AS th
  FROM generate_series(0, $N - 1) i;
-- batch k moves U random objects (with replacement) k seconds along their heading
CREATE TABLE batches AS
  SELECT k, array_agg(o.id ORDER BY r.j) AS ids,
         array_agg(least(100000, greatest(0, o.x + k * o.sp * cos(o.th))) ORDER BY r.j) AS xs,
         array_agg(least(100000, greatest(0, o.y + k * o.sp * sin(o.th))) ORDER BY r.j) AS ys
  FROM generate_series(1, 4) k,
       LATERAL (SELECT j, (random() * ($N - 1))::bigint AS id FROM generate_series(1, $U) j) r
       JOIN obj o ON o.id = r.id
  GROUP BY k;
CREATE TABLE qs AS SELECT q, random() * 99900 AS x0, random() * 99900 AS y0 FROM generate_series(1, $Q) q;
CREATE TABLE qarr AS
  SELECT array_agg(x0 ORDER BY q) AS x0, array_agg(y0 ORDER BY q) AS y0,
         array_agg(x0 + 100 ORDER BY q) AS x1, array_agg(y0 + 100 ORDER BY q) AS y1 FROM qs;
CREATE FUNCTION ms(stmt text) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN EXECUTE stmt; RETURN 1000 * extract(epoch FROM clock_timestamp() - t0); END \$\$;
CREATE TABLE results (system text, phase text, run int, ms float8, answer bigint);
SQL

# ---- approx_gpu: everything in one session (the index lives in the backend) ----
psql -qXAt -v ON_ERROR_STOP=1 -d "$DB" <<SQL >/dev/null
SET client_min_messages = warning;
SET search_path = approx_gpu, public;
SELECT mo_create('mo', 0, 0, 100000, 100000, 256, 256);
CREATE TEMP TABLE sys AS SELECT 'approx_gpu mo_* (' || (mo_info('mo')->>'device') || ' engine)' AS s;
INSERT INTO results SELECT s, 'load', 1, ms('SELECT approx_gpu.mo_load(''mo'', ''SELECT id, x, y FROM obj'')'), NULL FROM sys;
INSERT INTO results SELECT s, 'update', k,
  ms(format('SELECT approx_gpu.mo_update(''mo'', ids, xs, ys) FROM batches WHERE k = %s', k)), NULL
  FROM sys, generate_series(1, 4) k;
INSERT INTO results SELECT s, 'query', r,
  ms('SELECT approx_gpu.mo_range_count(''mo'', x0, y0, x1, y1) FROM qarr'), NULL
  FROM sys, generate_series(0, 3) r;
INSERT INTO results SELECT s, 'answer', 0, NULL,
  (SELECT sum(c) FROM qarr, unnest(approx_gpu.mo_range_count('mo', x0, y0, x1, y1)) c) FROM sys;
SQL

# ---- PostGIS ----------------------------------------------------------------------
if [ "$HAVE_POSTGIS" = 1 ]; then
psql -qXAt -v ON_ERROR_STOP=1 -d "$DB" <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION postgis;
CREATE TEMP TABLE sys AS SELECT 'PostGIS ' || postgis_lib_version() || ' GiST' AS s;
INSERT INTO results SELECT s, 'load', 1,
  ms('CREATE TABLE pts AS SELECT id, ST_SetSRID(ST_MakePoint(x, y), 0) AS geom FROM obj'), NULL FROM sys;
INSERT INTO results SELECT s, 'load', 2, ms('ALTER TABLE pts ADD PRIMARY KEY (id)'), NULL FROM sys;
INSERT INTO results SELECT s, 'load', 3, ms('CREATE INDEX pts_gist ON pts USING gist (geom)'), NULL FROM sys;
VACUUM ANALYZE pts;
INSERT INTO results SELECT s, 'update', k, ms(format('
  UPDATE pts p SET geom = ST_SetSRID(ST_MakePoint(u.x, u.y), 0)
  FROM (SELECT DISTINCT ON (id) id, x, y FROM batches b, unnest(b.ids, b.xs, b.ys) WITH ORDINALITY u(id, x, y, o)
        WHERE b.k = %s ORDER BY id, o DESC) u
  WHERE p.id = u.id', k)), NULL
  FROM sys, generate_series(1, 4) k;
INSERT INTO results SELECT s, 'query', r,
  ms('SELECT sum((SELECT count(*) FROM pts WHERE ST_Intersects(geom, ST_MakeEnvelope(x0, y0, x0 + 100, y0 + 100)))) FROM qs'), NULL
  FROM sys, generate_series(0, 3) r;
INSERT INTO results SELECT s, 'answer', 0, NULL,
  (SELECT sum((SELECT count(*) FROM pts WHERE ST_Intersects(geom, ST_MakeEnvelope(x0, y0, x0 + 100, y0 + 100)))) FROM qs) FROM sys;
SQL
fi

psql -qX -v ON_ERROR_STOP=1 -d "$DB" <<SQL
\pset footer off
SELECT system, '$HOST ($CORES cores)' AS "measured on", $N AS objects,
       round(($N / sum(ms) FILTER (WHERE phase = 'load') / 1000)::numeric, 3) AS "load M obj/s",
       round(($U / (percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE phase = 'update' AND run > 1)) / 1000)::numeric, 3)
         AS "updates M/s",
       round(($Q / (percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE phase = 'query' AND run > 0)) / 1000)::numeric, 4)
         AS "queries M/s",
       max(answer) AS "objects found"
FROM results GROUP BY system ORDER BY system;
SELECT CASE WHEN count(DISTINCT answer) = 1 THEN 'answers agree: every system found the same objects'
            ELSE 'ANSWERS DIFFER' END AS check
FROM results WHERE phase = 'answer';
SQL

# ---- load forms (one session: the index lives in the backend) ----------------------
echo
echo "== load forms: mo_load over a query and over the relation vs PostgreSQL indexing the same rows"
psql -qX -v ON_ERROR_STOP=1 -d "$DB" -v runs="$RUNS" -v n="$N" -v pg_workers="$PG_WORKERS" \
     -v read_workers="$READ_WORKERS" -v workers_note="$NOTE" -v forms="$FORMS" <<'SQL'
SET client_min_messages = warning;
VACUUM ANALYZE obj;
\i :forms
\o /dev/null
SELECT pg_temp.form_time(1, 'PostgreSQL: SELECT count(*) FROM obj (scan only)', 2, 'pg', 'SELECT count(*) FROM obj', :runs);
SELECT pg_temp.form_time(2, 'PostgreSQL: CREATE INDEX ON obj USING gist (point(x, y))', 2, 'pg',
                         'CREATE INDEX obj_forms_gist ON obj USING gist (point(x, y))', :runs,
                         after => 'DROP INDEX obj_forms_gist');
SELECT pg_temp.form_add(3, 'PostGIS: CREATE TABLE pts + PRIMARY KEY + GiST (1 run, above)', 2, sum(ms), 'postgres')
FROM results WHERE phase = 'load' AND system LIKE 'PostGIS%' HAVING count(*) > 0;
SELECT pg_temp.form_time(4, 'mo_load(index, ''SELECT id, x, y FROM obj'') (query)', 2, 'query',
                         'SELECT approx_gpu.mo_load(''mo_forms'', ''SELECT id, x, y FROM obj'')', :runs,
                         before => 'SELECT approx_gpu.mo_create(''mo_forms'', 0, 0, 100000, 100000, 256, 256)',
                         after => 'SELECT approx_gpu.mo_drop(''mo_forms'')');
SELECT pg_temp.form_time(5, 'mo_load(index, relation obj, ''id'', ''x'', ''y'')', 2, 'relation',
                         'SELECT approx_gpu.mo_load(''mo_forms'', ''obj'', ''id'', ''x'', ''y'')', :runs,
                         before => 'SELECT approx_gpu.mo_create(''mo_forms'', 0, 0, 100000, 100000, 256, 256)',
                         after => 'SELECT approx_gpu.mo_drop(''mo_forms'')');
SELECT pg_temp.form_time(6, 'mo_load(index, relation obj, ...), CPU engine', 2, 'relation',
                         'SELECT approx_gpu.mo_load(''mo_forms'', ''obj'', ''id'', ''x'', ''y'')', :runs, 'cpu',
                         before => 'SELECT approx_gpu.mo_create(''mo_forms'', 0, 0, 100000, 100000, 256, 256)',
                         after => 'SELECT approx_gpu.mo_drop(''mo_forms'')')
WHERE (approx_gpu.device_info()->>'gpu_available')::boolean;
\o
\pset footer off
SELECT pg_temp.form_header(format('mo_load of %s objects (id bigint, x, y float8) into a fresh index, %s warm runs',
                                  :n, :runs)) AS "setting";
SELECT * FROM pg_temp.form_table;
SQL
[ "$HAVE_POSTGIS" = 1 ] || echo "PostGIS is not installed here: only approx_gpu was measured (run this script on a machine with postgresql-15-postgis-3 for the PostGIS row)"
echo "updates: median of batches 2-4 of $U (batch 1 warms up); queries: median of 3 runs of $Q range counts of 100 m x 100 m after a warm-up run"
