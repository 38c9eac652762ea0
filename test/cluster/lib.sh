# Shared pieces of the cluster tests (sourced): a throwaway cluster of their
# own in a sub-directory, so that the main test cluster (and its server.log
# crash check) is never disturbed. Needs PG_BIN (the private stage's bindir).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$ROOT/test/lib.sh"
pg_user
: "${PG_BIN:?PG_BIN must name the staged PostgreSQL bindir}"
PSQL="$PG_BIN/psql"

# own_cluster DIR: initdb + start in DIR (a free port: retried on a clash);
# sets PGHOST/PGPORT/PGUSER and PGDATA_DIR for this script only.
own_cluster() {
  local dir=$1 try
  for try in 1 2 3; do
    rm -rf "$dir"; mkdir -p "$dir"; chmod 777 "$dir"
    start_cluster "$dir" cpu >"$dir.start.log" 2>&1 && return 0
  done
  cat "$dir.start.log"; return 1
}

# q DB SQL...: each SQL a statement of one session (psql -c per statement);
# unaligned, tuples only, stops at the first error.
q() { local db=$1; shift; local a=(); for s in "$@"; do a+=(-c "$s"); done; "$PSQL" -qXAt -v ON_ERROR_STOP=1 -d "$db" "${a[@]}" 2>&1; }

# check NAME GOT WANT: one "ok cluster: NAME" or "not ok cluster: NAME" line.
check() {
  if [ "$2" = "$3" ]; then echo "ok cluster: $1"; else echo "not ok cluster: $1 (got: $(echo "$2" | tr '\n' ' '), want: $3)"; fi
}

# The approximate answer of QUERY (one approx_* aggregate) against its exact
# twin EXACT, within 1e-6 relative, and whether a synopsis answered:
# "right synopsis" / "right rows" / "wrong synopsis" ...
judge() {
  local db=$1 approx=$2 exact=$3
  q "$db" "SET approx_gpu.random_seed = 1" \
    "CREATE TEMP TABLE j AS SELECT ($approx)::float8 AS a, approx_gpu.last_run()->>'answered_from' AS f" \
    "SELECT CASE WHEN abs(a - ($exact)) <= 1e-6 * abs(($exact)) THEN 'right' ELSE 'wrong' END || ' ' || f FROM j"
}
