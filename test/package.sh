#!/usr/bin/env bash
# Debian package check: builds postgresql-15-approx-gpu_*.deb from a copy of
# this tree with dpkg-buildpackage (pg_buildext; its build runs the regress
# suites with `installcheck` in a throwaway cluster), installs the package and
# runs installcheck again against the installed files.
#   test/package.sh [OUTDIR]     prints "ok package ..." / "not ok package ..."
# Needs root for apt-get and dpkg -i (CI runs as root); as another user it
# builds only.
set -uo pipefail
cd "$(dirname "$0")/.."
. test/lib.sh
PKG_DEPS="debhelper dpkg-dev fakeroot postgresql-all postgresql-server-dev-all"
ensure_packages $PKG_DEPS || { echo "not ok package (build dependencies)"; exit 1; }
out=${1:-$(mktemp -d)}
# The build tree must be readable by the server's user: installcheck runs a
# throwaway cluster (pg_virtualenv) that reads the extension from debian/.
parent=$(mktemp -d); chmod 755 "$parent"
src=$parent/approx-gpu
mkdir -p "$src"
# Tracked and untracked-but-not-ignored files: what a clean clone would hold.
git ls-files -co --exclude-standard -z | xargs -0 -I{} cp --parents {} "$src"/ 2>/dev/null
chmod -R a+rX "$src"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/package-build.log" 2>&1 \
  || { tail -40 "$out/package-build.log"; echo "not ok package (dpkg-buildpackage failed)"; exit 1; }
deb=$(ls "$(dirname "$src")"/postgresql-15-approx-gpu_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "not ok package (no .deb produced)"; exit 1; }
cp "$deb" "$out/"
echo "ok package build $(basename "$deb") ($(du -h "$deb" | cut -f1))"
grep -E 'test .* \.\.\. (ok|FAILED)|tests? (passed|failed)' "$out/package-build.log" | sed 's/^/  /' | tail -12
if [ "$(id -u)" = 0 ]; then
  dpkg -i "$deb" >"$out/package-install.log" 2>&1 || { tail -20 "$out/package-install.log"; echo "not ok package install"; exit 1; }
  # installcheck against the installed package (pg_virtualenv: a throwaway cluster)
  if (cd "$src" && pg_buildext -o "approx_gpu.device=cpu" installcheck) >"$out/package-installcheck.log" 2>&1; then
    echo "ok package installcheck"
    dpkg -r postgresql-15-approx-gpu >/dev/null 2>&1   # leave the system PostgreSQL as it was
  else
    dpkg -r postgresql-15-approx-gpu >/dev/null 2>&1
    tail -40 "$out/package-installcheck.log"; echo "not ok package installcheck"; exit 1
  fi
fi
