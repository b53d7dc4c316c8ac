#!/usr/bin/env bash
# `make image-test`: runs tools/container/image_test.py against IMAGE (default
# bustle:latest) with the engine and options engine.sh picks, and the host
# build's Python client (PRESET's build tree, for the generated wire modules).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/engine.sh"
PRESET="${PRESET:-release}"
wire="$root/build/$PRESET/python"
[[ -d "$wire/bustle" ]] || { echo "image-test: $wire missing: build first (make build)" >&2; exit 1; }
export BUSTLE_ENGINE_RUN="${ENGINE_RUN[*]}" BUSTLE_RUN_OPTS="${RUN_OPTS[*]}"
export PYTHONPATH="$root/clients/python:$wire${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 "$here/image_test.py" "$@"
