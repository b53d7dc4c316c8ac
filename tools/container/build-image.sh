#!/usr/bin/env bash
# Builds the Bustle image (Dockerfile at the repository root) with podman or
# docker, making the debian:bookworm base first when it cannot be pulled.
#
#   tools/container/build-image.sh            IMAGE (default bustle:latest)
#   IMAGE=bustle:dev BUILD_JOBS=2 ENGINE=podman tools/container/build-image.sh
#
# Afterwards the build stage's images (about 1.9 GB, labelled
# io.bustle.stage=build) are removed; KEEP_BUILD_STAGE=1 keeps them as a
# cache that makes the next build faster.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/engine.sh"

IMAGE="${IMAGE:-bustle:latest}"
BUILD_JOBS="${BUILD_JOBS:-2}"

"$here/make-base.sh"

revision="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]]; then revision="$revision-dirty"; fi
version="$(sed -n 's/^project(bustle VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
args=(build -t "$IMAGE" -f "$root/Dockerfile"
      --build-arg "BUILD_JOBS=$BUILD_JOBS"
      --build-arg "VERSION=${version:-unknown}"
      --label "org.opencontainers.image.revision=$revision"
      --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)")
if [[ "$ENGINE" == podman ]]; then
  # docker format: OCI image configs cannot carry HEALTHCHECK (podman would drop it)
  args+=(--format docker --pull=never "${RUN_OPTS[@]}")
fi
start=$SECONDS
"${ENGINE_RUN[@]}" "${args[@]}" "$root"
size="$("${ENGINE_RUN[@]}" image inspect --format '{{.Size}}' "$IMAGE")"
echo "image: built $IMAGE with $ENGINE in $((SECONDS - start)) s, $((size / 1000000)) MB"
if [[ "${KEEP_BUILD_STAGE:-0}" != 1 ]]; then
  # Untagged images of the build stage only: the runtime image, the base and
  # any other image stay.
  "${ENGINE_RUN[@]}" image prune --force --filter label=io.bustle.stage=build >/dev/null
  echo "image: removed the build stage's images (KEEP_BUILD_STAGE=1 keeps them)"
fi
