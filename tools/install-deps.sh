#!/usr/bin/env bash
# Installs every build and test dependency of Bustle from Debian 12 (bookworm)
# packages. The README, CI (.ci/run via `make`) and the Dockerfile all use this
# one script, so a fresh machine and the container get the same toolchain.
#
#   tools/install-deps.sh            build + test dependencies
#   tools/install-deps.sh --runtime  only the shared libraries bustle-server needs
#   tools/install-deps.sh --bench    the peer benchmark's simulator (Eclipse SUMO),
#                                    for tools/bench/compare_sumo.sh; never used by make test
#   tools/install-deps.sh --build    only what building the server, CLI and replay
#                                    tool needs (no test, fuzz or viewer tools): the image's build stage
#   tools/install-deps.sh --image    --runtime plus what the image's health probe uses (curl)
#   tools/install-deps.sh --container  podman, runc and debootstrap on the host, for
#                                    make image / make image-test; never used by make test
#
# It is idempotent: packages already present are not reinstalled, and apt is
# only consulted when something is missing.
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  # a compiler cache: rebuilds of unchanged sources cost nothing (CMake uses it when present)
  ccache
  libasio-dev libspdlog-dev libfmt-dev
  libflatbuffers-dev flatbuffers-compiler
  libsqlite3-dev sqlite3
  nlohmann-json3-dev
  # command-line parsing of bustle, bustle-server, bustle-replay, bustle-bench
  libcli11-dev
  # operations: the metrics endpoint (prometheus-cpp's exposer runs civetweb),
  # the Agones SDK client, and the parser the metrics tests read it with
  prometheus-cpp-dev libcivetweb-dev libcurl4-openssl-dev
  catch2
  python3 python3-flatbuffers python3-pytest python3-jsonschema python3-prometheus-client
  # bustle-view (tools/view): pictures (matplotlib), the live page (aiohttp) and
  # its test in a headless browser (chromium)
  python3-matplotlib python3-numpy python3-aiohttp chromium
  # pip install clients/python into a venv, offline (tests/clients/python_package)
  python3-venv python3-setuptools python3-wheel
  # the fuzz preset (tests/fuzz: make fuzz, make fuzz-replay, make check-all): Clang 14,
  # libFuzzer and sanitizer runtimes
  clang libclang-rt-14-dev
  # the format check (tools/check/format.sh, part of make test) pins clang-format 14
  clang-format-14
  # tests/deploy: the Kubernetes and Agones manifests under deploy/ parse and hang together
  python3-yaml
)
RUNTIME_PACKAGES=(libspdlog1.10 libfmt9 libsqlite3-0 libprometheus-cpp-pull1.0 libprometheus-cpp-core1.0 libcivetweb1 libcurl4)
BENCH_PACKAGES=(sumo sumo-tools python3)
# In BUILD_PACKAGES but needed only by the tests, the fuzzers, the viewer and
# repeated builds (left out by --build, which builds bustle-server, bustle and
# bustle-replay once).
TEST_ONLY_PACKAGES=(ccache catch2 python3-pytest python3-jsonschema clang libclang-rt-14-dev clang-format-14 python3-yaml
                    python3-matplotlib python3-numpy python3-aiohttp chromium)
IMAGE_PACKAGES=(curl)
# Debian 12's podman with runc (crun fails on hybrid cgroups), netavark for
# port publishing, catatonit for --init, debootstrap for tools/container/make-base.sh.
CONTAINER_PACKAGES=(podman runc conmon netavark aardvark-dns iptables catatonit
                    fuse-overlayfs slirp4netns uidmap buildah debootstrap)

build_only() {
  local p t
  for p in "${BUILD_PACKAGES[@]}"; do
    for t in "${TEST_ONLY_PACKAGES[@]}"; do [[ "$p" == "$t" ]] && continue 2; done
    echo "$p"
  done
}

case "${1:-}" in
  "") packages=("${BUILD_PACKAGES[@]}") ;;
  --runtime) packages=("${RUNTIME_PACKAGES[@]}") ;;
  --bench) packages=("${BENCH_PACKAGES[@]}") ;;
  --build) mapfile -t packages < <(build_only) ;;
  --image) packages=("${RUNTIME_PACKAGES[@]}" "${IMAGE_PACKAGES[@]}") ;;
  --container) packages=("${CONTAINER_PACKAGES[@]}") ;;
  *) echo "install-deps: unknown option '$1' (expected --runtime, --bench, --build, --image or --container)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
