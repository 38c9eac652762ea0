# Shared by the SQL-level benchmarks, sourced from the repository root (they
# `cd` there first); PGHOST/PGPORT/PGUSER/PGDATABASE come from the environment.
# psql that stops at the first error and reads no ~/.psqlrc:
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# The extension in schema approx_gpu (0.5's layout, which the scripts name),
# plus any further psql arguments (-c, -f) in the same session.
bench_extension() {
    psql -c 'CREATE SCHEMA IF NOT EXISTS approx_gpu; CREATE EXTENSION IF NOT EXISTS approx_gpu SCHEMA approx_gpu' "$@" >/dev/null
}
