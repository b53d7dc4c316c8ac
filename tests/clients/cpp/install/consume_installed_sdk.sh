#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, configures and builds the
# example consumer (clients/cpp/examples/consumer) against it with
# find_package(Bustle CONFIG), and runs it. Usage: $0 BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/bustle-sdk-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/lib/cmake/Bustle/BustleConfig.cmake" || { echo "no package config installed"; exit 1; }
# No installed header includes Asio: the transport keeps it private.
if grep -rlE '#include [<"]asio' "$work/prefix/include"; then
  echo "installed headers include Asio"; exit 1
fi
cmake -S "$source_dir/clients/cpp/examples/consumer" -B "$work/consumer" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/consumer/bustle-sdk-consumer"
