#!/usr/bin/env bash
# End to end in PostgreSQL: hash_join_count / hash_join against PostgreSQL's
# own hash join, SELECT count(*) FROM a JOIN b USING (key), on 10^7 x 10^6
# rows: the inner-query forms (SPI) and the relation forms (the parallel
# relation reader). Warm (one untimed run first), median of RUNS, server-side
# clock; the engine's time is split into reading rows out of the executor
# (ms read), copies (ms transfer) and engine work (ms compute), with the read
# rate, the read workers and the read path, from last_run(). One table
# (test/bench/forms.sql); every join's count must agree (the check line).
#
#   PGHOST=... PGPORT=... PGUSER=... PGDATABASE=... bash test/bench/hashjoin_sql.sh
#   N_BUILD=200000 N_PROBE=20000 RUNS=3 bash test/bench/hashjoin_sql.sh   (a small run)
#
# Knobs: N_BUILD (rows of a, default 10^7), N_PROBE (rows of b, 10^6), RUNS (5),
# WORK_MEM (work_mem of the session, default 1GB: PostgreSQL's join in one batch),
# PG_WORKERS (max_parallel_workers_per_gather for PostgreSQL and the inner-query
# forms; default cores/2 capped at 8), READ_WORKERS (approx_gpu.read_workers for
# the relation forms, and their max_parallel_workers_per_gather; default -1 =
# auto under PG_WORKERS).
# Needs the extension installed (CREATE EXTENSION approx_gpu is run if needed).
# Default settings: approx_gpu.device = auto (the GPU when there is one).
set -euo pipefail
N_BUILD=${N_BUILD:-10000000}
N_PROBE=${N_PROBE:-1000000}
RUNS=${RUNS:-5}
WORK_MEM=${WORK_MEM:-1GB}
. "$(dirname "${BASH_SOURCE[0]}")/forms.sh"

psql -X -q -v ON_ERROR_STOP=1 -v nb="$N_BUILD" -v np="$N_PROBE" -v runs="$RUNS" -v work_mem="$WORK_MEM" \
     -v pg_workers="$PG_WORKERS" -v read_workers="$READ_WORKERS" -v workers_note="$NOTE" -v forms="$FORMS" <<'SQL'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS approx_gpu;
CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu;
DROP TABLE IF EXISTS hjb_a, hjb_b;
SELECT setseed(0.5) \gset
-- a: the large side, keys in [0, nb/2] (each about twice); b: the small side, keys in [0, nb]
CREATE TABLE hjb_a AS SELECT (random() * (:nb / 2))::bigint AS key, i::bigint AS value FROM generate_series(1, :nb) i;
CREATE TABLE hjb_b AS SELECT (random() * :nb)::bigint AS key, i::bigint AS value FROM generate_series(1, :np) i;
VACUUM ANALYZE hjb_a, hjb_b;
SET work_mem = :'work_mem';
\i :forms

-- form_time(ord, form, ref (the PostgreSQL row to compare with), kind, query, runs [, device])
\o /dev/null
SELECT pg_temp.form_time(1, 'PostgreSQL: SELECT count(*) FROM a (scan only)', 2, 'pg', 'SELECT count(*) FROM hjb_a', :runs);
SELECT pg_temp.form_time(2, 'PostgreSQL: SELECT count(*) FROM a JOIN b USING (key)', 2, 'pg',
                         'SELECT count(*) FROM hjb_a JOIN hjb_b USING (key)', :runs);
SELECT pg_temp.form_time(3, 'hash_join_count(build b, probe a)', 2, 'query',
                         $$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hjb_b', 'SELECT key, value FROM hjb_a')$$, :runs);
SELECT pg_temp.form_time(4, 'hash_join_count(build a, probe b)', 2, 'query',
                         $$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hjb_a', 'SELECT key, value FROM hjb_b')$$, :runs);
SELECT pg_temp.form_time(5, 'SELECT count(*) FROM hash_join(build b, probe a)', 2, 'query',
                         $$SELECT count(*) FROM approx_gpu.hash_join('SELECT key, value FROM hjb_b', 'SELECT key, value FROM hjb_a')$$, :runs);
SELECT pg_temp.form_time(6, 'hash_join_count(build b, probe a), CPU engine', 2, 'query',
                         $$SELECT approx_gpu.hash_join_count('SELECT key, value FROM hjb_b', 'SELECT key, value FROM hjb_a')$$, :runs, 'cpu');
SELECT pg_temp.form_time(7, 'hash_join_count(relation b, relation a)', 2, 'relation',
                         $$SELECT approx_gpu.hash_join_count('hjb_b', 'key', 'hjb_a', 'key')$$, :runs);
SELECT pg_temp.form_time(8, 'hash_join_count(relation a, relation b)', 2, 'relation',
                         $$SELECT approx_gpu.hash_join_count('hjb_a', 'key', 'hjb_b', 'key')$$, :runs);
SELECT pg_temp.form_time(9, 'SELECT count(*) FROM hash_join(relation b, relation a)', 2, 'relation',
                         $$SELECT count(*) FROM approx_gpu.hash_join('hjb_b', 'key', 'value', 'hjb_a', 'key', 'value')$$, :runs);
SELECT pg_temp.form_time(10, 'hash_join_count(relation b, relation a), CPU engine', 2, 'relation',
                         $$SELECT approx_gpu.hash_join_count('hjb_b', 'key', 'hjb_a', 'key')$$, :runs, 'cpu')
WHERE (approx_gpu.device_info()->>'gpu_available')::boolean;
\o

\echo
\pset footer off
SELECT pg_temp.form_header(format('hash_join end to end: %s x %s rows, %s warm runs; work_mem = %s',
                                  :nb, :np, :runs, current_setting('work_mem'))) AS "setting";
SELECT * FROM pg_temp.form_table;
SELECT CASE WHEN count(DISTINCT answer) = 1 THEN 'all joins agree: ' || min(answer) || ' rows'
            ELSE 'JOIN RESULTS DIFFER' END AS "check"
FROM form_runs WHERE ord >= 2;
DROP TABLE hjb_a, hjb_b;
SQL
