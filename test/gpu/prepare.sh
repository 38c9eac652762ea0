#!/usr/bin/env bash
# Prepare a run on the GPU machine (which has no PostgreSQL, GoogleTest or
# network): build here with CUDA, install into this machine's PostgreSQL, pack
# PostgreSQL + the extension with ../shared/tools/pg-bundle, and gather what the
# device needs under .device/ (git-ignored; carry it together with `build`).
#
#   test/gpu/prepare.sh      then, through the device tool:
#   run(command="bash test/gpu/device.sh", carry=[".device", "build"])
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
[ "$(id -u)" = 0 ] || { echo "run as root (make install into the system PostgreSQL)"; exit 1; }
make clean >/dev/null   # objects of a WITH_CUDA=0 build must not leak into this one
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" unit bench >/dev/null
make install >/dev/null
rm -rf .device && mkdir -p .device/perl
"$SHARED/tools/pg-bundle" .device/pg.tar.xz
cp "$SHARED/tools/pg-unbundle" .device/
# pg_prove and its pgTAP source handler (pure Perl) for the pgTAP suites
cp "$(command -v pg_prove)" .device/
cp -r /usr/share/perl5/TAP .device/perl/
du -sh .device build
