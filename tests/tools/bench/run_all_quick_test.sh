#!/usr/bin/env bash
# `make bench BENCH_QUICK=1` end to end on a temporary copy of
# docs/performance.md: tools/bench/run-all.sh --quick runs every bench at toy
# size, rewrites the copy's generated block, and the block must parse
# (readme_block.py check); everything outside the block must be unchanged.
# Then a broken block must be refused. The real docs/performance.md is never
# written.
# Usage: run_all_quick_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"
build="$2"
tmp="$(mktemp -d /tmp/bustle-run-all-test-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
page="$src/docs/performance.md"
copy="$tmp/performance.md"
cp "$page" "$copy"
before="$(sha256sum "$page")"

"$src/tools/bench/run-all.sh" --quick --readme "$copy" --results "$tmp/results" --build "$build"
python3 "$src/tools/bench/readme_block.py" check "$copy"

# The prose around the block is untouched.
outside() { sed '/^<!-- BEGIN GENERATED BENCH/,/^<!-- END GENERATED BENCH -->$/d' "$1"; }
if ! diff <(outside "$page") <(outside "$copy") >/dev/null; then
  echo "FAIL: run-all.sh changed text outside the generated block"; exit 1
fi
grep -q 'QUICK toy sizes' "$copy" || { echo "FAIL: a quick block does not say so"; exit 1; }
sed -n '/^<!-- BEGIN GENERATED BENCH/,/^<!-- END GENERATED BENCH -->$/p' "$copy" >"$tmp/block.md"
for row in 'population, 2 000 active' 'pedestrian step' 'checkpoint, 2 000 agents' 'checkpoint, 5 000 agents, 2 threads' \
           'stream bytes' 'frame build, 20 000 pedestrians, 2 district clients' 'clients over sockets' 'live server, 20 000 pedestrians' \
           'C++ SDK per frame' 'vehicles against SUMO' 'replay verify' 'district servers, strong scaling'; do
  grep -q "^| $row" "$tmp/block.md" || { echo "FAIL: no '$row' row in the generated block"; exit 1; }
done
[[ "$(sha256sum "$page")" == "$before" ]] || { echo "FAIL: the source docs/performance.md was written"; exit 1; }

# check refuses a row with a cell missing, and a block without its end marker.
sed -i '/^| checkpoint, /s/^\(| checkpoint, [^|]*|\) [^|]*|/\1/' "$copy"
if python3 "$src/tools/bench/readme_block.py" check "$copy" 2>"$tmp/err"; then
  echo "FAIL: check accepted a row with 3 cells"; exit 1
fi
grep -q 'expected 4 cells, found 3' "$tmp/err" || { echo "FAIL: unexpected message: $(cat "$tmp/err")"; exit 1; }
sed -i '/^<!-- END GENERATED BENCH -->$/d' "$copy"
if python3 "$src/tools/bench/readme_block.py" check "$copy" 2>"$tmp/err"; then
  echo "FAIL: check accepted a block without END"; exit 1
fi
grep -q 'found 1 and 0' "$tmp/err" || { echo "FAIL: unexpected message: $(cat "$tmp/err")"; exit 1; }
echo "run-all quick: passed"
