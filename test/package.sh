#!/usr/bin/env bash
# Debian package check: builds postgresql-15-approx-gpu_*.deb from a copy of
# this tree with dpkg-buildpackage (pg_buildext; its build runs the regress
# suites with `installcheck` in a throwaway cluster, pg_virtualenv, which reads
# the extension from the build tree's debian/<package>), then checks the
# package's files and runs the regress suites again against exactly those
# files. Nothing is installed into the system's PostgreSQL directories: the
# package is unpacked into a scratch root (dpkg-deb -x) and its files are
# copied into a private copy of the PostgreSQL installation (test/lib.sh's
# stage_postgres), where a throwaway cluster runs pg_regress.
#   test/package.sh [OUTDIR]     prints "ok package ..." / "not ok package ..."
#                                (OUTDIR keeps the .deb and the logs)
#   KEEP_WORK=1                  keep the scratch directory (build tree, root, stage)
# As root it installs the build dependencies that are missing with apt-get
# (CI); as another user they must be installed.
set -uo pipefail
cd "$(dirname "$0")/.."
. test/lib.sh
ensure_packages $PACKAGE_PKGS || { echo "not ok package (build dependencies)"; exit 1; }
pg_locations
pg_user
out=${1:-$(mktemp -d)}
mkdir -p "$out"
# The scratch directory must be readable by the server's user: the build's
# installcheck reads the extension from debian/, ours from the stage.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/approx_gpu_package.XXXXXX"); chmod 755 "$scratch"
trap 'stop_cluster; [ "${KEEP_WORK:-0}" = 1 ] && echo "package work directory: $scratch" || rm -rf "$scratch"' EXIT
src=$scratch/approx-gpu
mkdir -p "$src"
# Tracked and untracked-but-not-ignored files: what a clean clone would hold.
git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$src"/ 2>/dev/null
chmod -R a+rX "$src"

# ---- build (with pg_buildext's own installcheck) ------------------------------------
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/package-build.log" 2>&1 \
  || { tail -40 "$out/package-build.log"; echo "not ok package (dpkg-buildpackage failed)"; exit 1; }
deb=$(ls "$scratch"/postgresql-*-approx-gpu_*.deb 2>/dev/null | grep -v dbgsym | head -1)
[ -n "$deb" ] || { echo "not ok package (no .deb produced)"; exit 1; }
cp "$deb" "$out/"
echo "ok package build $(basename "$deb") ($(du -h "$deb" | cut -f1))"
grep -E 'test .* \.\.\. (ok|FAILED)|tests? (passed|failed)' "$out/package-build.log" | sed 's/^/  /' | tail -12

# ---- the package's files, unpacked into a scratch root ------------------------------
root=$scratch/root
dpkg-deb -x "$deb" "$root" || { echo "not ok package (dpkg-deb -x)"; exit 1; }
pkg=$(dpkg-deb -f "$deb" Package)
ext=${SHAREDIR#/}/extension lib=${PKGLIBDIR#/} doc=usr/share/doc/$pkg
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/approx_gpu.control")
# Expected: the control file, every committed script of sql/ and the newest
# version's script (built from sql/ext/), the library, README among the docs.
expected=$( { echo "$ext/approx_gpu.control"; echo "$lib/approx_gpu.so"
              for f in "$src"/sql/approx_gpu--*.sql; do echo "$ext/$(basename "$f")"; done
              echo "$ext/approx_gpu--$version.sql"; } | sort -u)
(cd "$root" && find . ! -type d | sed 's|^\./||' | sort) >"$out/package-files.txt"
missing=$(comm -23 <(echo "$expected") "$out/package-files.txt" | tr '\n' ' ')
grep -qE "^$doc/README\.md(\.gz)?$" "$out/package-files.txt" || missing="$missing$doc/README.md "
# Anything else outside the documentation directory is unexpected.
extra=$(comm -13 <(echo "$expected") "$out/package-files.txt" | grep -v "^$doc/" | tr '\n' ' ')
nscripts=$(grep -c "^$ext/approx_gpu--.*\.sql$" "$out/package-files.txt")
if [ -z "$missing" ] && [ -z "$extra" ]; then
  echo "ok package files (approx_gpu.control, $nscripts scripts, approx_gpu.so, README; $(wc -l <"$out/package-files.txt") files in all)"
else
  sed 's/^/  /' "$out/package-files.txt"
  echo "not ok package files (missing: ${missing:-none}; unexpected: ${extra:-none})"
fi

# ---- installcheck against the package's files in a private PostgreSQL ---------------
# The regress suites of the Makefile (REGRESS, REGRESS_OPTS) on a throwaway
# cluster whose server finds the extension only where the package put it.
stage=$scratch/stage
stage_postgres "$stage"
rm -f "$stage$SHAREDIR"/extension/approx_gpu[.-]* "$stage$PKGLIBDIR"/approx_gpu.so   # only the package's copy
cp -a "$root/." "$stage/"
chmod -R a+rX "$stage"
mkdir -p "$scratch/check/regress"; chmod 777 "$scratch/check/regress"
suites=$(ls "$src"/test/sql/*.sql | sed 's|.*/||; s|\.sql$||' | tr '\n' ' ')
if ! start_cluster "$scratch/check" cpu >"$out/package-installcheck.log" 2>&1; then
  tail -20 "$out/package-installcheck.log"; echo "not ok package installcheck (cluster start)"; exit 1
fi
create_test_db contrib_regression >>"$out/package-installcheck.log" 2>&1
"$PKGLIBDIR/pgxs/src/test/regress/pg_regress" --bindir="$PG_BIN" --inputdir="$src/test" --outputdir="$scratch/check/regress" \
  --use-existing --dbname=contrib_regression $suites >>"$out/package-installcheck.log" 2>&1
rc=$?
stop_cluster
cp "$scratch/check/server.log" "$out/package-server.log" 2>/dev/null
np=$(grep -cE '^ok |\.\.\. ok' "$out/package-installcheck.log"); nf=$(grep -cE '^not ok |\.\.\. FAILED' "$out/package-installcheck.log")
if [ "$rc" = 0 ] && [ "$nf" = 0 ] && [ "$np" -gt 0 ]; then
  echo "ok package installcheck ($np suites, against the unpacked package)"
else
  grep -E '\.\.\. FAILED|^not ok ' "$out/package-installcheck.log" | sed 's/^/  /'
  [ -f "$scratch/check/regress/regression.diffs" ] && { cp "$scratch/check/regress/regression.diffs" "$out/"; head -80 "$out/regression.diffs"; }
  tail -20 "$out/package-installcheck.log"; echo "not ok package installcheck"; exit 1
fi
