#!/usr/bin/env bash
# pg_dump by a non-superuser (issue 26 item 12): a role that owns a
# database, its tables and their synopses dumps it (plain) and restores it
# into a fresh database of its own. The metadata comes back (a config table
# without row-level security); sampled values and sample relations do not
# (pg_dump skips them): a restored synopsis is unusable until
# refresh_synopsis rebuilds it from its metadata, and answers again after.
# The extension itself is created by a superuser (it is not trusted).
# Usage: dump_nonsuper.sh WORK. Prints ok/not ok cluster lines.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
work=${1:?usage: dump_nonsuper.sh WORK}
role=regress_dumper
own_cluster "$work/nonsuper" || { echo "not ok cluster: non-superuser dump cluster start"; exit 0; }
q postgres "CREATE ROLE $role LOGIN" "CREATE DATABASE dn OWNER $role" "CREATE DATABASE dn2 OWNER $role" >/dev/null
q dn "CREATE SCHEMA approx_gpu" "CREATE EXTENSION approx_gpu SCHEMA approx_gpu" >/dev/null
q dn2 "CREATE SCHEMA approx_gpu" "CREATE EXTENSION approx_gpu SCHEMA approx_gpu" >/dev/null
as_role() { PGUSER=$role q "$@"; }
as_role dn "CREATE TABLE t (a int, c float8)" "CREATE TABLE u (a int, c float8, g text)" \
  "INSERT INTO t SELECT i, i % 1000 FROM generate_series(1, 3000) i" \
  "INSERT INTO u SELECT i, i % 1000, 'g' || (i % 3) FROM generate_series(1, 3000) i" \
  "SELECT approx_gpu.create_synopsis('t_c', 't'::regclass, ARRAY['c']::name[], 10000, 'cdf', 'never') IS NOT NULL" \
  "SELECT approx_gpu.create_synopsis('t_g', 'u'::regclass, ARRAY['g', 'c']::name[], 500, 'cdf', 'never', ARRAY['g']::name[]) IS NOT NULL" \
  "SELECT approx_gpu.create_synopsis('q_c', 'SELECT c FROM t', 10000, 'cdf', 'never') IS NOT NULL" >/dev/null
check "source: the role's synopsis answers" \
  "$(PGUSER=$role judge dn "SELECT approx_gpu.approx_avg(c) FROM t" "SELECT avg(c) FROM t")" "right synopsis"

PGUSER=$role "$PG_BIN/pg_dump" -d dn -f "$work/nonsuper.sql" 2>"$work/nonsuper_dump.err"
check "pg_dump by a non-superuser succeeds" "$? $(head -c 300 "$work/nonsuper_dump.err")" "0 "
check "the dump holds no sampled values and no sample relation" \
  "$(grep -cE 'synopsis_values|approx_gpu_samples|kde_synopsis' "$work/nonsuper.sql")" "0"

PGUSER=$role "$PSQL" -qX -d dn2 -f "$work/nonsuper.sql" >"$work/nonsuper_restore.log" 2>&1
grep ERROR "$work/nonsuper_restore.log" | sed 's/^/# restore: /'
check "restored by the role: the metadata came back" \
  "$(as_role dn2 "SELECT string_agg(name, ',' ORDER BY name) FROM approx_gpu.synopses")" "q_c,t_c,t_g"
# The extension (created by a superuser before) is not the role's: its
# schema exists, its comment is the owner's.
check "restored: no error but the extension's schema and comment" \
  "$(grep ERROR "$work/nonsuper_restore.log" | grep -v 'must be owner of extension approx_gpu' | grep -vc 'schema "approx_gpu" already exists')" "0"
check "restored: unusable until refreshed, the exact path answers" \
  "$(as_role dn2 "SELECT approx_gpu.synopsis_status('t_c')->>'status'")/$(PGUSER=$role judge dn2 "SELECT approx_gpu.approx_avg(c) FROM t" "SELECT avg(c) FROM t")" \
  "unusable/right rows"
check "refresh_synopsis rebuilds from the metadata" \
  "$(as_role dn2 "SELECT approx_gpu.refresh_synopsis('t_c')->>'m'" "SELECT approx_gpu.refresh_synopsis('t_g')->>'m'" "SELECT (approx_gpu.refresh_synopsis('q_c')->>'m')::int > 0" | tr '\n' ' ')" \
  "3000 500 t "
check "refreshed, the synopsis answers again" \
  "$(PGUSER=$role judge dn2 "SELECT approx_gpu.approx_avg(c) FROM t" "SELECT avg(c) FROM t")" "right synopsis"
check "refreshed, a sample relation again" \
  "$(q dn2 "SELECT count(*) FROM approx_gpu.synopses WHERE sample_relid IS NOT NULL")" "2"
# DROP EXTENSION takes the sample relations with it (extension members).
check "DROP EXTENSION drops the sample relations" \
  "$(q dn2 "DROP EXTENSION approx_gpu" "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'approx_gpu_samples'" "SELECT count(*) FROM pg_namespace WHERE nspname = 'approx_gpu_samples'" | tr '\n' ' ')" \
  "0 0 "
stop_cluster
