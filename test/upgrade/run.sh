#!/usr/bin/env bash
# Upgrade test (called by test/run against its running cluster): a database
# created at every older released version and moved with ALTER EXTENSION
# UPDATE must hold the same objects as a fresh install of the newest version,
# and a synopsis stored under the old version must still answer.
# Prints "ok upgrade FROM" / "not ok upgrade FROM"; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
PSQL=${PSQL:-psql}
newest=$(sed -n "s/^default_version = '\(.*\)'/\1/p" approx_gpu.control)
work=${1:-$(mktemp -d)}
rc=0
$PSQL -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS upgrade_fresh" -c "CREATE DATABASE upgrade_fresh" >/dev/null
# Versions before 0.7.0 named their schema in the control file (approx_gpu)
# and their scripts name it: they install only with SCHEMA approx_gpu, and an
# updated database keeps it, so the fresh install it is compared with is made
# in the same schema (0.5's layout; test/sql/extension_schema.sql tests the
# default one).
$PSQL -qX -d upgrade_fresh -c "CREATE SCHEMA approx_gpu" -c "CREATE EXTENSION approx_gpu SCHEMA approx_gpu" >/dev/null
$PSQL -qX -d upgrade_fresh -f test/upgrade/describe.sql > "$work/fresh.txt"
for script in sql/approx_gpu--*.sql; do
  v=${script#sql/approx_gpu--}; v=${v%.sql}
  case "$v" in *--*|"$newest") continue ;; esac
  db=upgrade_from_${v//./_}
  $PSQL -qX -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  # A synopsis stored under the old version (fixed seed), and its answer then.
  $PSQL -qX -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<SQL || { echo "not ok upgrade $v (setup)"; rc=1; continue; }
CREATE SCHEMA approx_gpu;
CREATE EXTENSION approx_gpu VERSION '$v' SCHEMA approx_gpu;
SET approx_gpu.random_seed = 7;
CREATE TABLE kept AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[(g % 97)::float8, (g % 13)::float8], 500) AS s
  FROM generate_series(1, 5000) g;
CREATE TABLE kept_answer AS SELECT approx_gpu.approx_count(s, ARRAY[10, 2]::float8[], ARRAY[50, 8]::float8[]) AS c FROM kept;
-- A named synopsis as 0.1.0's create_synopsis stored it (this library
-- builds none in a 0.1.0 database: 0.1.0 kept no search_path).
INSERT INTO approx_gpu.synopses (name, owner, query, synopsis)
  SELECT 'kept_named', current_user::regrole, 'SELECT (g % 97)::float8 AS a FROM generate_series(1, 1000) g',
         approx_gpu.kde_synopsis_agg(ARRAY[(g % 97)::float8], 100) FROM generate_series(1, 1000) g;
SQL
  $PSQL -qX -v ON_ERROR_STOP=1 -d "$db" -c "ALTER EXTENSION approx_gpu UPDATE" >/dev/null \
    || { echo "not ok upgrade $v (ALTER EXTENSION UPDATE failed)"; rc=1; continue; }
  $PSQL -qX -d "$db" -f test/upgrade/describe.sql > "$work/from_$v.txt"
  if ! diff -u "$work/fresh.txt" "$work/from_$v.txt" > "$work/upgrade_$v.diff"; then
    echo "not ok upgrade $v: objects differ from a fresh $newest install"; head -60 "$work/upgrade_$v.diff"; rc=1; continue
  fi
  same=$($PSQL -qXAt -d "$db" -c "SELECT bool_and(abs(approx_gpu.approx_count(s, ARRAY[10, 2]::float8[], ARRAY[50, 8]::float8[]) - c) <= 1e-6 * greatest(1, abs(c))) FROM kept, kept_answer" 2>&1)
  if [ "$same" != t ]; then echo "not ok upgrade $v: a synopsis stored at $v does not answer as before ($same)"; rc=1; continue; fi
  # A named synopsis stored at $v still answers, and its owner (this role) can
  # refresh it, which captures the search_path 0.1.0 did not store.
  named=$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.approx_count('kept_named', '{}')::int, (SELECT search_path IS NULL FROM approx_gpu.synopses)" \
    -c "SELECT (approx_gpu.refresh_synopsis('kept_named')->>'N')::int" -c "SELECT search_path IS NOT NULL FROM approx_gpu.synopses" 2>&1 | tr '\n' ' ')
  if [ "$named" != "1000|t 1000 t " ]; then echo "not ok upgrade $v: the named synopsis stored at $v ($named)"; rc=1; continue; fi
  echo "ok upgrade $v"
done
exit $rc
