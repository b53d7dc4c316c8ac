#!/usr/bin/env bash
# `make bench`: every benchmark docs/performance.md quotes, with its
# documented arguments, in one run; then the generated block of that page is
# rewritten from the results (tools/bench/readme_block.py), with date,
# commit, machine and load before/after.
#
#   tools/bench/run-all.sh [--quick] [--readme FILE] [--results DIR] [--build DIR]
#                          [--repeat N] [--no-readme]
#
#   --quick      toy sizes (seconds, not minutes): checks the pipeline, not the
#                figures; the block says "quick" and is never meant for main
#   --readme     the file whose generated block is rewritten (default
#                docs/performance.md)
#   --results    where the raw outputs go (default BUILD/bench-results)
#   --build      the build tree (default build/release)
#   --repeat N   runs of each bench without a peer (default 3, quick 1); the
#                block shows the median and the range. Benches with a peer
#                (SUMO, the stalled fan-out runs) interleave their own repeats.
#   --no-readme  run and collect only
#
# Each bench's raw output is kept in RESULTS/NAME.N.txt; the last line of a
# bustle-bench run is its --json line (tools/bench/report.hpp). A bench that
# cannot run here (no sumo) is reported as "not run: why" in the block, never
# silently left out. Exit status: 0 when every bench ran or was skipped with
# a reason, 1 when one failed (the block is then not rewritten), 2 bad usage.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
quick=0
readme="$root/docs/performance.md"
build="$root/build/release"
results=""
repeat=""
write_readme=1

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --readme) readme="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --no-readme) write_readme=0; shift ;;
    -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run-all: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -z "$repeat" ]] && repeat=$((quick ? 1 : 3))
[[ "$repeat" =~ ^[1-9][0-9]?$ ]] || { echo "run-all: --repeat: expected an integer in [1, 99], got '$repeat'" >&2; exit 2; }
[[ -z "$results" ]] && results="$build/bench-results"
bench="$build/tools/bench/bustle-bench"
sdk_bench="$build/tools/bench/bustle-sdk-bench"
server="$build/server/app/bustle-server"
replay="$build/tools/replay/bustle-replay"
gateway_bin="$build/server/gateway/bustle-gateway"
for bin in "$bench" "$sdk_bench" "$server" "$replay" "$gateway_bin"; do
  [[ -x "$bin" ]] || { echo "run-all: $bin missing (build first: make build)" >&2; exit 1; }
done
if [[ $write_readme -eq 1 ]]; then
  grep -q '^<!-- BEGIN GENERATED BENCH' "$readme" ||
    { echo "run-all: $readme has no generated bench block (<!-- BEGIN GENERATED BENCH ... -->)" >&2; exit 1; }
fi

rm -rf "$results"
mkdir -p "$results"
work="$(mktemp -d /tmp/bustle-bench-all-XXXXXX)"
trap 'rm -rf "$work"' EXIT

# Sizes: full (the commands docs/performance.md documents) or quick (toys).
if [[ $quick -eq 1 ]]; then
  population_100k=(population --active 2000 --dormant 20000 --steps 50)
  population_1m=(population --active 5000 --dormant 0 --steps 20)
  step=(step --agents 2000 --steps 50)
  snapshot=(snapshot --agents 2000 --repeat 5)
  snapshot_1m=(snapshot --agents 5000 --repeat 3 --threads 2)
  stream=(stream --agents 2000 --grid 3 --vehicles 40 --steps 50)
  frame=(frame --city-scale 20k --clients 2 --steps 20)
  fanout=(fanout --clients 4 --stalled-percent 25 --agents 200 --seconds 1 --warmup 1 --repeat 1)
  fanout_1m=(fanout --city-scale 20k --clients 2 --seconds 1 --warmup 1 --repeat 1)
  fanout_1m_64=()  # the same bench and row format as fanout_1m: not run twice at toy size
  district_servers=(district-servers --grid 8 --agents 2000 --vehicles 300 --steps 100 --districts 1,2)
  gateway=(gateway --agents 2000 --grid 8 --clients 0,1 --seconds 1 --warmup 1 --repeat 1)
  vehicles=(--grid 3 --vehicles 40 --steps 50)
  # SUMO reports its loop time to the millisecond: 50 toy steps (~2 ms)
  # can time as 0 ms, an empty window; 1 000 steps (~0.1 s) cannot.
  sumo=(--grid 3 --vehicles 40 --steps 1000 --repeat 1)
  sdk_sizes=(200)
  sdk_frames=20
  replay_agents=2000
  replay_steps=100
else
  population_100k=(population --active 100000 --dormant 1000000 --steps 600)
  population_1m=(population --active 1000000 --dormant 1000000 --steps 200)
  step=(step --agents 100000 --steps 400)
  snapshot=(snapshot --agents 100000 --repeat 100)
  # Issue 17: a checkpoint at 1 M active (~12 s a run).
  snapshot_1m=(snapshot --agents 1000000 --repeat 10 --threads 2)
  stream=(stream --agents 20000 --grid 32 --vehicles 10000 --steps 300)
  # The live server's streaming work without sockets (issue 31): the
  # 1 000 000-pedestrian city, 8 district clients, 2 threads (~15 s).
  frame=(frame --city-scale 1m --clients 8 --steps 300)
  fanout=(fanout)
  # The server as users run it (issue 31): the 1 000 000-pedestrian city,
  # 8 district clients, the server's default thread counts (~4 min).
  fanout_1m=(fanout --city-scale 1m --repeat 3 --seconds 15)
  # Issue 31's goal: the same city with 64 overlapping district clients,
  # one pair of runs (~4 min).
  fanout_1m_64=(fanout --city-scale 1m --clients 64 --repeat 1 --seconds 15)
  # Issue 34: the district city on 1, 2 and 4 bustle-server processes
  # (strong scaling, 200 000 pedestrians, 500 steps; ~20 s).
  district_servers=(district-servers --vehicles 10000)
  # The gateway in front of 2 live districts (200 000 pedestrians, 10 Hz),
  # 0, 1, 4 and 8 whole-city clients, 3 interleaved rounds (~3 min).
  gateway=(gateway --clients 0,1,4,8)
  vehicles=(--grid 32 --vehicles 10000 --steps 1000)
  sumo=("${vehicles[@]}" --repeat 3)
  sdk_sizes=(2000 20000)
  sdk_frames=300
  replay_agents=100000
  replay_steps=1300
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
failed=0
# run NAME CMD...: runs the command, keeps its output in RESULTS/NAME.txt
# (and on the terminal), notes a failure without stopping the others.
run() {
  local name="$1"
  shift
  echo "=== $name: $*"
  if ! "$@" 2>&1 | tee "$results/$name.txt"; then
    echo "run-all: $name failed" >&2
    echo "failed" >"$results/$name.failed"
    failed=1
  fi
}

{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | grep -qv 'docs/performance.md$' && echo yes || echo no)"
  echo "quick=$quick"
  echo "repeat=$repeat"
  echo "load_before=$(load)"
} >"$results/run.env"

for ((r = 1; r <= repeat; ++r)); do
  run "population-100k.$r" "$bench" "${population_100k[@]}" --json
  run "population-100k-2t.$r" "$bench" "${population_100k[@]}" --threads 2 --json
  run "population-1m.$r" "$bench" "${population_1m[@]}" --json
  run "population-1m-2t.$r" "$bench" "${population_1m[@]}" --threads 2 --json
  run "step.$r" "$bench" "${step[@]}" --json
  run "snapshot.$r" "$bench" "${snapshot[@]}" --dir "$work" --json
  run "snapshot-1m.$r" "$bench" "${snapshot_1m[@]}" --dir "$work" --json
  run "stream.$r" "$bench" "${stream[@]}" --json
  run "frame.$r" "$bench" "${frame[@]}" --json
  for n in "${sdk_sizes[@]}"; do
    run "sdk-$n.$r" "$sdk_bench" --entities "$n" --frames "$sdk_frames" --json
  done
done
# Benches with a peer run their interleaved repeats themselves.
run "fanout.1" "$bench" "${fanout[@]}" --server "$server" --dir "$work" --json
run "fanout-1m.1" "$bench" "${fanout_1m[@]}" --server "$server" --dir "$work" --json
if ((${#fanout_1m_64[@]})); then
  run "fanout-1m-64.1" "$bench" "${fanout_1m_64[@]}" --server "$server" --dir "$work" --json
fi
run "district-servers.1" "$bench" "${district_servers[@]}" --json --server "$server" --dir "$work"
run "gateway.1" "$bench" "${gateway[@]}" --json --server "$server" --gateway "$gateway_bin" --dir "$work"
if command -v sumo >/dev/null 2>&1; then
  run "vehicles-sumo.1" "$here/compare_sumo.sh" "${sumo[@]}" --bench "$bench"
else
  echo "not run: sumo is not installed (tools/bench/install-bench-deps.sh)" >"$results/vehicles-sumo.skipped"
  for ((r = 1; r <= repeat; ++r)); do
    run "vehicles.$r" "$bench" vehicles "${vehicles[@]}" --json
  done
fi

# Replay verify speed: record a city in batch mode, then time the verify.
python3 - "$root/configs/default.city.json" "$work/replay-city.json" "$replay_agents" <<'EOF'
import json, sys
city = json.load(open(sys.argv[1]))
n = int(sys.argv[3])
city["id"] = "bustle.bench.replay.%d" % n
city.setdefault("pedestrians", {})["count"] = n
city["pedestrians"]["spawn_per_step_max"] = 4096
cap = 1024
while cap < n + n // 4:
    cap *= 2
city["entity_capacity"] = max(cap, city.get("entity_capacity", 1024))
json.dump(city, open(sys.argv[2], "w"), indent=2)
EOF
step_us=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("step_us", 100000))' "$work/replay-city.json")
for ((r = 1; r <= repeat; ++r)); do
  rec="$work/replay.$r.db"
  rm -f "$rec"
  run "replay-record.$r" "$server" --config "$work/replay-city.json" --steps "$replay_steps" --record "$rec" --log-level warn
  (
    echo "load average before: $(load)"
    t0=$(date +%s.%N)
    "$replay" verify "$rec" && status=0 || status=$?
    t1=$(date +%s.%N)
    echo "load average after: $(load)"
    echo "RESULT replay-verify ticks=$replay_steps step_us=$step_us seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}') bytes=$(stat -c %s "$rec")"
    exit "$status"
  ) >"$results/replay-verify.$r.txt" 2>&1 || {
    echo "failed" >"$results/replay-verify.$r.failed"
    failed=1
  }
  cat "$results/replay-verify.$r.txt"
done

echo "load_after=$(load)" >>"$results/run.env"
if [[ $failed -ne 0 ]]; then
  # The tail of each failed bench again, last, where a CI log excerpt shows it.
  for f in "$results"/*.failed; do
    name="$(basename "$f" .failed)"
    echo "run-all: $name failed; the end of its output ($results/$name.txt):" >&2
    tail -n 15 "$results/$name.txt" | sed 's/^/  | /' >&2
  done
  echo "run-all: some benches failed (see $results/*.failed); $readme not rewritten" >&2
  exit 1
fi
python3 "$here/readme_block.py" render "$results" >"$results/block.md"
if [[ $write_readme -eq 1 ]]; then
  python3 "$here/readme_block.py" splice "$readme" "$results/block.md"
  python3 "$here/readme_block.py" check "$readme"
  echo "run-all: rewrote the generated block of $readme"
else
  cat "$results/block.md"
fi
