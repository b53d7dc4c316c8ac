#!/usr/bin/env bash
# Issue 4's comparison: bustle-bench vehicles against Eclipse SUMO on the same
# signalised grid city with the same vehicle count and 0.1 s steps, on this
# machine, in one go. Prints both vehicle-update rates, their ratio, and
# Bustle's step p50/p99 (medians of --repeat runs, interleaved so background
# load hits both alike), the spread of the runs, ns per vehicle update, the
# machine load before and after, and whether issue 31's target is met.
#
#   tools/bench/install-bench-deps.sh          # once: sumo, netgenerate
#   cmake --preset release && cmake --build --preset release --target bustle-bench
#   tools/bench/compare_sumo.sh [--grid 32] [--vehicles 10000] [--steps 1000]
#                               [--repeat 3] [--bench build/release/tools/bench/bustle-bench]
#
# Each repetition runs exactly:
#   bustle-bench vehicles --grid N --vehicles V --steps S
#   bustle-bench vehicles --grid N --vehicles V --steps S --threads 2   (stated beside)
#   python3 tools/bench/sumo_grid.py --grid N --vehicles V --steps S
# (sumo_grid.py documents its netgenerate and sumo command lines.) Both are
# single-threaded; the figures are whole-core wall time of the timed steps,
# after warm-up (Bustle: until V vehicles are managed; SUMO: 20 steps after
# inserting all V at t = 0). Target (issue 31): ratio of the medians >= 300
# (issue 13's was 200, issue 4's 100). --repeat must be at least 1; 3 or more for a median
# that one disturbed run cannot move.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
grid=32
vehicles=10000
steps=1000
repeat=3
target=300
bench="${BUSTLE_BENCH:-$root/build/release/tools/bench/bustle-bench}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --grid) grid="$2"; shift 2 ;;
    --vehicles) vehicles="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "compare_sumo: unknown option $1" >&2; exit 2 ;;
  esac
done

for n in grid vehicles steps repeat target; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || { echo "compare_sumo: --$n must be a positive integer (got '${!n}')" >&2; exit 2; }
done
[[ -x "$bench" ]] || { echo "compare_sumo: no bustle-bench at $bench (build it or pass --bench)" >&2; exit 1; }
command -v sumo >/dev/null || { echo "compare_sumo: sumo missing; run tools/bench/install-bench-deps.sh" >&2; exit 1; }

log="$(mktemp -d /tmp/bustle-compare-XXXXXX)"
trap 'rm -rf "$log"' EXIT

# field NAME FILE: the value of NAME=... on the file's RESULT line.
field() { grep '^RESULT' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "load before: $(uptime)"
echo "bustle-bench: $bench"
echo "sumo: $(sumo --version 2>/dev/null | head -1)"
for ((r = 1; r <= repeat; ++r)); do
  echo "--- run $r/$repeat: bustle-bench vehicles --grid $grid --vehicles $vehicles --steps $steps"
  "$bench" vehicles --grid "$grid" --vehicles "$vehicles" --steps "$steps" | tee "$log/bustle.$r"
  echo "--- run $r/$repeat: bustle-bench vehicles --grid $grid --vehicles $vehicles --steps $steps --threads 2"
  "$bench" vehicles --grid "$grid" --vehicles "$vehicles" --steps "$steps" --threads 2 >"$log/bustle2.$r"
  grep '^RESULT' "$log/bustle2.$r"
  echo "--- run $r/$repeat: sumo_grid.py --grid $grid --vehicles $vehicles --steps $steps"
  python3 "$here/sumo_grid.py" --grid "$grid" --vehicles "$vehicles" --steps "$steps" >"$log/sumo.$r"
  grep -E '^(sumo:|  timed|  vehicle updates|RESULT)' "$log/sumo.$r"
done
echo "load after: $(uptime)"

b_ups=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/bustle.$r"; done | median)
b_p50=$(for ((r = 1; r <= repeat; ++r)); do field p50_ms "$log/bustle.$r"; done | median)
b_p99=$(for ((r = 1; r <= repeat; ++r)); do field p99_ms "$log/bustle.$r"; done | median)
b_veh=$(field vehicles "$log/bustle.1")
# Beside the one-thread comparison (both single-threaded), Bustle on two
# threads: the vehicle kernel in parts on the PhaseExecutor, same digest.
b2_ups=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/bustle2.$r"; done | median)
all_b2=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/bustle2.$r"; done | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1 / 1e6}')
s_ups=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/sumo.$r"; done | median)
s_sec=$(for ((r = 1; r <= repeat; ++r)); do field seconds "$log/sumo.$r"; done | median)
s_veh=$(field vehicles "$log/sumo.1")
all_b=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/bustle.$r"; done | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1 / 1e6}')
all_s=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/sumo.$r"; done | awk '{printf "%s%.3f", (NR > 1 ? " " : ""), $1 / 1e6}')
# Spread: (max - min) / median of each side's runs; and each interleaved
# pair's own ratio (run r of Bustle over run r of SUMO).
spread() { sort -g | awk '{v[NR]=$1} END {m=(NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.0f%%", 100 * (v[NR]-v[1]) / m}'; }
b_spread=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/bustle.$r"; done | spread)
s_spread=$(for ((r = 1; r <= repeat; ++r)); do field ups "$log/sumo.$r"; done | spread)
pairs=$(for ((r = 1; r <= repeat; ++r)); do
  awk -v b="$(field ups "$log/bustle.$r")" -v s="$(field ups "$log/sumo.$r")" 'BEGIN {printf "%.0f\n", b / s}'
done)
all_p=$(echo "$pairs" | awk '{printf "%s%sx", (NR > 1 ? " " : ""), $1}')
p_med=$(echo "$pairs" | median)

echo
echo "grid ${grid}x${grid}, $vehicles vehicles, $steps timed steps of 0.1 s, median of $repeat"
awk -v bu="$b_ups" -v su="$s_ups" -v bv="$b_veh" -v sv="$s_veh" -v p50="$b_p50" -v p99="$b_p99" \
    -v ss="$s_sec" -v steps="$steps" -v ab="$all_b" -v as="$all_s" -v bsp="$b_spread" -v ssp="$s_spread" \
    -v ap="$all_p" -v pm="$p_med" -v target="$target" -v grid="$grid" -v repeat="$repeat" \
    -v b2="$b2_ups" -v ab2="$all_b2" 'BEGIN {
  printf "%-28s %16s %16s %10s\n", "", "Bustle", "SUMO", "ratio"
  printf "%-28s %16.0f %16.0f\n", "vehicles on the road", bv, sv
  printf "%-28s %16.3f %16.3f %9.1fx\n", "vehicle updates/s (M)", bu / 1e6, su / 1e6, bu / su
  printf "%-28s %16.3f %16s %9.1fx\n", "  Bustle on 2 threads (M)", b2 / 1e6, "-", b2 / su
  printf "%-28s %16.1f %16.1f\n", "ns per vehicle update", 1e9 / bu, 1e9 / su
  printf "%-28s %16.3f %16.3f\n", "mean step (ms)", bv * 1000 / bu, ss * 1000 / steps
  printf "%-28s %16.3f %16s\n", "step p50 (ms)", p50, "-"
  printf "%-28s %16.3f %16s\n", "step p99 (ms)", p99, "-"
  printf "%-28s %16s %16s\n", "runs (M updates/s)", ab, as
  printf "%-28s %16s %16s\n", "spread (max-min)/median", bsp, ssp
  printf "%-28s %s (median %sx)\n", "ratio per interleaved run", ap, pm
  printf "target %dx: %s (ratio of the medians %.1fx)\n", target, (bu / su >= target) ? "met" : "not met", bu / su
  # One machine-readable line (tools/bench/run-all.sh): medians, then every run.
  gsub(" ", ",", ab); gsub(" ", ",", as); gsub(" ", ",", ab2)
  printf "RESULT compare grid=%s vehicles=%d steps=%d repeat=%d bustle_ups=%.0f sumo_ups=%.0f ratio=%.2f bustle_p50_ms=%.4f bustle_p99_ms=%.4f bustle_runs_m=%s sumo_runs_m=%s bustle_2t_ups=%.0f bustle_2t_runs_m=%s\n", grid, bv, steps, repeat, bu, su, bu / su, p50, p99, ab, as, b2, ab2
}'
