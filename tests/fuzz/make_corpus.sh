#!/usr/bin/env bash
# Regenerates the fuzz seed corpora (tests/fuzz/corpus/) from real data: the
# shipped scenarios, and the frames, snapshot file and recording of a session
# with the real bustle-server (see make_corpus.py for what is kept).
#
#   tests/fuzz/make_corpus.sh    builds the release preset if needed, then runs
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --preset release >/dev/null
cmake --build --preset release --target bustle-server bustle_python_wire >/dev/null
PYTHONPATH="clients/python:build/release/python" /usr/bin/python3 tests/fuzz/make_corpus.py \
  --server build/release/server/app/bustle-server --source .
