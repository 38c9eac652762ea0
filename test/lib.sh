# Shared shell pieces of test/run and test/demo (sourced, not run):
# prerequisites, a private installation stage and a throwaway cluster.

say() { printf '== %s\n' "$*"; }

# Base packages; features add theirs to EXTRA_PKGS.
PKGS="make g++ postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl libgtest-dev"
# Real data sets for accuracy tests, read with Rscript from Debian's R packages
# (ggplot2: diamonds, 53,940 rows; dslabs: movielens, 100,004 rows).
PKGS="$PKGS r-cran-ggplot2 r-cran-dslabs"

# What test/package.sh needs to build the Debian package (debian/control's
# Build-Depends); test/run installs them before it records the system's
# PostgreSQL directories, so that installing them is not counted as a change.
PACKAGE_PKGS="debhelper dpkg-dev fakeroot postgresql-all postgresql-server-dev-all"

# Installs missing Debian packages when root, else names them and fails.
ensure_packages() {
  local missing="" p
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"; done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing; } >/dev/null 2>&1 || { echo "apt-get install$missing failed"; return 1; }
  else
    echo "missing packages:$missing (install them, or run as root to have them installed)"; return 1
  fi
}

# PG_CONFIG, BINDIR, PKGLIBDIR, SHAREDIR of the PostgreSQL to test against.
pg_locations() {
  export PATH="/usr/lib/postgresql/15/bin:$PATH"
  PG_CONFIG=${PG_CONFIG:-$(command -v pg_config)}
  BINDIR=$($PG_CONFIG --bindir); PKGLIBDIR=$($PG_CONFIG --pkglibdir); SHAREDIR=$($PG_CONFIG --sharedir)
}

# PG_USER and as_pg: PostgreSQL refuses to run as root, so root runs it as an
# unprivileged user (postgres, or pgrun created here).
pg_user() {
  if [ "$(id -u)" = 0 ]; then
    PG_USER=${PG_RUN_USER:-}
    if [ -z "$PG_USER" ]; then
      if id postgres >/dev/null 2>&1; then PG_USER=postgres; else id pgrun >/dev/null 2>&1 || useradd -m pgrun; PG_USER=pgrun; fi
    fi
    as_pg() { runuser -u "$PG_USER" -- env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@"; }
  else
    PG_USER=$(id -un)
    as_pg() { "$@"; }
  fi
}

# stage_postgres STAGE: a private copy of the PostgreSQL installation (bindir,
# the libraries of pkglibdir, sharedir) under STAGE; the server finds share/
# and lib/ relative to its own binary, so an extension installed into the
# copy is found there and nothing is written into system directories.
# Sets PG_BIN.
stage_postgres() {
  local stage=$1
  mkdir -p "$stage$BINDIR" "$stage$PKGLIBDIR" "$stage$SHAREDIR"
  cp -a "$BINDIR/." "$stage$BINDIR/"
  # *.bc: llvmjit_types.bc, which JIT needs when a test query is costly enough
  find "$PKGLIBDIR" -maxdepth 1 -type f \( -name '*.so' -o -name '*.bc' \) -exec cp -a {} "$stage$PKGLIBDIR/" \;
  cp -a "$SHAREDIR/." "$stage$SHAREDIR/"
  # PGXS too (pg_regress and the makefiles), for runs from a bundle of this stage
  [ -d "$PKGLIBDIR/pgxs" ] && cp -a "$PKGLIBDIR/pgxs" "$stage$PKGLIBDIR/"
  PG_BIN=$stage$BINDIR
}

# stage_install WORK: stage_postgres WORK/stage with the extension installed
# into it by `make install`. Sets PG_BIN.
stage_install() {
  local stage=$1/stage
  stage_postgres "$stage"
  make install DESTDIR="$stage" PG_CONFIG="$PG_CONFIG" >"$1/install.log" 2>&1 || { tail -20 "$1/install.log"; return 1; }
  chmod -R a+rX "$1"
}

# system_sums: the contents of the system's PostgreSQL directories that an
# extension's installation touches (sharedir, pkglibdir), one sorted line per
# file (sha256), symbolic link (its target) and directory; test/run compares
# them before and after its run (the tests must leave them as they were).
system_sums() {
  find "$SHAREDIR" "$PKGLIBDIR" -type f -print0 | sort -z | xargs -0 -r sha256sum
  find "$SHAREDIR" "$PKGLIBDIR" \( -type l -printf 'link %p -> %l\n' \) -o \( -type d -printf 'dir %p\n' \) | sort
}

# start_cluster WORK DEVICE: initdb + start on a private socket; exports
# PGHOST/PGPORT/PGUSER. stop_cluster stops it (also from an EXIT trap).
# EXTRA_CONF: more postgresql.conf lines (e.g. shared_preload_libraries).
start_cluster() {
  local work=$1 device=$2
  PGDATA_DIR=$work/data
  SOCK=$work/sock
  mkdir -p "$SOCK"; chmod 777 "$SOCK"
  [ "$(id -u)" = 0 ] && chown "$PG_USER" "$work"
  local port=$((54000 + RANDOM % 1000))
  as_pg "$PG_BIN/initdb" -D "$PGDATA_DIR" -A trust -E UTF8 --locale=C.UTF-8 >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log"; return 1; }
  cat >>"$PGDATA_DIR/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$SOCK'
port = $port
max_worker_processes = 8
max_parallel_workers = 4
fsync = off
# the SQLSTATE of every logged error: test/run fails on an internal one (XX000)
log_line_prefix = '%m [%p] %e '
approx_gpu.device = '$device'
${EXTRA_CONF:-}
CONF
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$work/server.log" -w start >/dev/null || { cat "$work/server.log"; return 1; }
  export PGHOST=$SOCK PGPORT=$port PGUSER=$PG_USER
}

stop_cluster() {
  if [ -n "${PGDATA_DIR:-}" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate stop >/dev/null 2>&1
  fi
}

# create_test_db DB [PSQL]: a database as pg_regress creates one (template0,
# its ALTER DATABASE settings: pg_regress.c's create_database) with the
# extension in 0.5's layout: CREATE SCHEMA approx_gpu + CREATE EXTENSION
# approx_gpu SCHEMA approx_gpu, so that the suites' approx_gpu.* names hold
# (pg_regress's --load-extension cannot pass SCHEMA: the suites run with
# --use-existing). test/sql/extension_schema.sql tests the default layout.
create_test_db() {
  local db=$1 psql=${2:-${PG_BIN:+$PG_BIN/}psql}
  "$psql" -qX -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL || return 1
SET client_min_messages = warning;
DROP DATABASE IF EXISTS "$db";
CREATE DATABASE "$db" TEMPLATE = template0;
ALTER DATABASE "$db" SET lc_messages TO 'C';
ALTER DATABASE "$db" SET lc_monetary TO 'C';
ALTER DATABASE "$db" SET lc_numeric TO 'C';
ALTER DATABASE "$db" SET lc_time TO 'C';
ALTER DATABASE "$db" SET bytea_output TO 'hex';
ALTER DATABASE "$db" SET timezone_abbreviations TO 'Default';
SQL
  "$psql" -qX -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE SCHEMA approx_gpu' -c 'CREATE EXTENSION approx_gpu SCHEMA approx_gpu' >/dev/null
}
