#!/usr/bin/env bash
# `podman run` / `docker run` with the options this machine needs (engine.sh:
# runc on hybrid cgroups, nofile/nproc capped at the host's hard limits).
# Where plain `podman run` works, this is the same thing.
#
#   tools/container/run.sh --rm -p 7777:7777 -e BUSTLE_TOKEN=... bustle:latest
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/engine.sh"
exec "${ENGINE_RUN[@]}" run "${RUN_OPTS[@]}" "$@"
