#!/usr/bin/env bash
# Builds bustle-client's wheel and sdist into OUT, both carrying the wire
# modules flatc generates from proto/fbs (so neither needs flatc, the
# schemas or a compiler to install):
#
#   clients/python/make-dist.sh OUT     (make wheel: OUT = build/<preset>/dist)
#
# Offline, with Debian's python3, setuptools and wheel (tools/install-deps.sh)
# and flatc. The package is copied first, so the build leaves nothing in the
# work tree. Prints the two file names.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: clients/python/make-dist.sh OUT" >&2; exit 2; }
out="$(mkdir -p "$1" && cd "$1" && pwd)"
python=/usr/bin/python3  # Debian's: setuptools, wheel and flatbuffers come from its packages

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/clients"
cp -r "$here" "$work/clients/python"
rm -rf "$work/clients/python/build" "$work/clients/python"/*.egg-info "$work/clients/python/generated"
mkdir -p "$work/proto"
cp -r "$root/proto/fbs" "$work/proto/fbs"
rm -f "$out"/bustle_client-*.whl "$out"/bustle_client-*.tar.gz "$out"/bustle-client-*.tar.gz

cd "$work/clients/python"
"$python" -W ignore -c 'import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])' "$out" >/dev/null
"$python" -m pip wheel --quiet --no-deps --no-index --no-build-isolation -w "$out" . >/dev/null
ls "$out"/bustle_client-*.whl "$out"/bustle*client-*.tar.gz
