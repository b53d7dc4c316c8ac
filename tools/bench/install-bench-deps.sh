#!/usr/bin/env bash
# Installs what the peer benchmark needs (Eclipse SUMO from Debian 12 packages,
# for tools/bench/compare_sumo.sh): the project's one install script in its
# --bench mode. Never called by `make test`.
exec "$(dirname "$0")/../install-deps.sh" --bench "$@"
