#!/usr/bin/env bash
# Installs what the peer benchmarks need (not the build or `make test`): Eclipse
# SUMO from Debian 12 (bookworm) packages, for tools/bench/sumo_grid.sh and
# tools/bench/compare_sumo.sh.
#
#   tools/bench/install-bench-deps.sh
#
#   sumo        sumo, netgenerate (the simulator and the grid generator)
#   sumo-tools  python tools (randomTrips.py, ...); sumo_grid.sh writes its own
#               routes, but the tools are handy for variations
#   python3     the route/statistics helpers in sumo_grid.sh
#
# Idempotent like tools/install-deps.sh: packages already present are not
# reinstalled, and apt is only consulted when something is missing. Never
# called by `make test`.
set -euo pipefail

packages=(sumo sumo-tools python3)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-bench-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-bench-deps: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi

echo "install-bench-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
