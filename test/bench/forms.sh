# Sourced by the *_sql.sh benchmarks that compare query and relation forms
# (test/bench/forms.sql): the worker settings they share.
#   PG_WORKERS    max_parallel_workers_per_gather for PostgreSQL's queries and
#                 the inner-query forms (default cores/2, capped at 8)
#   READ_WORKERS  approx_gpu.read_workers for the relation forms (default -1: auto)
# Sets CORES, PG_WORKERS, NOTE (how PG_WORKERS was chosen), READ_WORKERS and
# FORMS (the path of forms.sql).
CORES=$(nproc)
HALF=$(( CORES / 2 < 1 ? 1 : (CORES / 2 > 8 ? 8 : CORES / 2) ))
PG_WORKERS=${PG_WORKERS:-$HALF}
NOTE=$([ "$PG_WORKERS" = "$HALF" ] && echo "cores/2 capped at 8, $CORES cores" || echo "PG_WORKERS, $CORES cores")
READ_WORKERS=${READ_WORKERS:--1}
FORMS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/forms.sql
