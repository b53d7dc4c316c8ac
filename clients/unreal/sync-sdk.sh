#!/usr/bin/env bash
# Copies the portable C++ SDK into the UE5 plugin so that the plugin builds
# on its own once copied into a project's Plugins/ folder:
#
#   BustleClient/Source/ThirdParty/BustleSDK/
#     include/bustle/client/*.hpp   portable SDK headers (no transport headers)
#     include/bustle/proto/*.hpp    framing / motion / wire headers
#     src/*.cpp, src/*.hpp          portable SDK sources (clients/cpp/src, bustle::client only)
#     proto/src/*.cpp               proto sources (framing, motion)
#     generated/*_generated.h       flatc output of proto/schema/*.fbs
#     flatbuffers/include/flatbuffers/   FlatBuffers runtime headers (header-only)
#     SDK_VERSION                   the commit and flatc version it was made from
#
# The module compiles each SDK source through one wrapper in
# Source/BustleClient/Private/Sdk/ (see BustleSdkSource.h). The copy is not
# tracked (.gitignore); run this script again after every SDK change.
#
# Usage: clients/unreal/sync-sdk.sh [--dest DIR] [--flatc PATH] [--flatbuffers-include DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="$here/BustleClient/Source/ThirdParty/BustleSDK"
flatc="${FLATC:-flatc}"
fb_include="${FLATBUFFERS_INCLUDE:-/usr/include}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dest) dest="$2"; shift 2 ;;
    --flatc) flatc="$2"; shift 2 ;;
    --flatbuffers-include) fb_include="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "sync-sdk.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

command -v "$flatc" >/dev/null || { echo "sync-sdk.sh: flatc not found (set FLATC or --flatc)" >&2; exit 1; }
[[ -f "$fb_include/flatbuffers/flatbuffers.h" ]] ||
  { echo "sync-sdk.sh: no flatbuffers/flatbuffers.h under $fb_include (set --flatbuffers-include)" >&2; exit 1; }

# The portable library's sources, exactly as clients/cpp/CMakeLists.txt lists
# them for bustle_client (the transport, bustle_client_asio, stays out).
mapfile -t sdk_sources < <(awk '/^bustle_library\(client$/{on=1; next} on && /PUBLIC_DEPS/{exit} on && /src\/.*\.cpp/{print $1}' \
  "$repo/clients/cpp/CMakeLists.txt")
[[ ${#sdk_sources[@]} -gt 0 ]] || { echo "sync-sdk.sh: no bustle_client sources found" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/include/bustle/client" "$dest/include/bustle/proto" "$dest/src" "$dest/proto/src" \
         "$dest/generated" "$dest/flatbuffers/include"

# Headers: every portable header; connection.hpp / client.hpp are the Asio transport.
for h in "$repo"/clients/cpp/include/bustle/client/*.hpp; do
  case "$(basename "$h")" in connection.hpp|client.hpp) continue ;; esac
  cp "$h" "$dest/include/bustle/client/"
done
cp "$repo"/proto/include/bustle/proto/*.hpp "$dest/include/bustle/proto/"
for s in "${sdk_sources[@]}"; do cp "$repo/clients/cpp/$s" "$dest/src/"; done
cp "$repo"/clients/cpp/src/*.hpp "$dest/src/" 2>/dev/null || true
cp "$repo"/proto/src/*.cpp "$dest/proto/src/"

# Generated headers, with the same flags as cmake/Flatc.cmake.
for schema in "$repo"/proto/schema/*.fbs; do
  "$flatc" --cpp --scoped-enums --gen-name-strings --gen-object-api --gen-compare --reflect-names -o "$dest/generated" -I "$repo/proto/schema" "$schema"
done
cp -r "$fb_include/flatbuffers" "$dest/flatbuffers/include/"

{
  echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "flatc: $("$flatc" --version)"
  echo "sources: ${sdk_sources[*]}"
} > "$dest/SDK_VERSION"
echo "sync-sdk.sh: SDK copied to $dest (${#sdk_sources[@]} SDK sources + proto)"
