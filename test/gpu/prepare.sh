#!/usr/bin/env bash
# Prepare a run on the GPU machine (which has no PostgreSQL, GoogleTest or
# network): build here with CUDA, install into a private stage, pack
# PostgreSQL + the extension with ../shared/tools/pg-bundle, and gather what the
# device needs under .device/ (git-ignored; carry it together with `build`).
#
#   test/gpu/prepare.sh [DEST]    (DEST defaults to ./.device) then, through the device tool:
#   run(command="bash test/gpu/device.sh", carry=[".device"])
# Building in a separate clone and passing DEST=/path/to/checkout/.device keeps
# the checkout's own build untouched.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-$(cd ../shared 2>/dev/null && pwd || echo /work/shared)}
# objects of a WITH_CUDA=0 build must not leak into this one; KEEP_OBJECTS=1
# reuses a clone that only ever built with CUDA (an incremental build)
[ "${KEEP_OBJECTS:-0}" = 1 ] || make clean >/dev/null
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" unit bench >/dev/null
DEST=${1:-.device}
rm -rf "$DEST" && mkdir -p "$DEST/perl" "$DEST/bin"
# Bundle a private stage holding only PostgreSQL's own modules and ours (other
# extensions installed here, e.g. PostGIS, would drag in large libraries).
. test/lib.sh
pg_locations
STAGE_WORK=$(mktemp -d); trap 'rm -rf "$STAGE_WORK"' EXIT
stage_install "$STAGE_WORK"
keep=" $(dpkg -L postgresql-15 | grep '\.so$' | xargs -n1 basename | tr '\n' ' ') approx_gpu.so "
for f in "$STAGE_WORK/stage$PKGLIBDIR"/*.so; do
  case "$keep" in *" $(basename "$f") "*) ;; *) rm -f "$f" ;; esac
done
PG_CONFIG="$STAGE_WORK/stage$BINDIR/pg_config" "$SHARED/tools/pg-bundle" "$DEST/pg.tar.xz"
cp "$SHARED/tools/pg-unbundle" "$DEST/"
cp build/unit_tests build/*_bench build/ssbgen "$DEST/bin/" 2>/dev/null || true
# Every binary embeds every engine's GPU code: strip and compress them to
# stay well inside what one device call may carry.
strip "$DEST"/bin/*
tar -C "$DEST" -cJf "$DEST/bin.tar.xz" bin && rm -rf "$DEST/bin"
# Data sets the tests and benchmarks read that the device cannot make (it has
# no network and no R): each test/bench/*_data.sh --export DIR writes its own.
for g in test/bench/*_data.sh; do [ -e "$g" ] && bash "$g" --export "$DEST/data"; done
# pg_prove and its pgTAP source handler (pure Perl) for the pgTAP suites
cp "$(command -v pg_prove)" "$DEST/"
cp -r /usr/share/perl5/TAP "$DEST/perl/"
du -sh "$DEST"
