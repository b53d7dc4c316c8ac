#!/usr/bin/env bash
# Replay verify speed on the 100 000-pedestrian city (docs/performance.md).
#
#   tools/replay/bench/verify_speed.sh [--ticks N] [--keyframe-steps K]
#       [--repeat R] [--jobs "1 2"] [--dir DIR] [--replay BIN] [--server BIN]
#
# Records N ticks (default 3000) of the default geometry with 100 000
# pedestrians in batch mode (bustle-server --steps N --record, keyframes every
# K steps, default the server's), then runs `bustle-replay verify --json` R
# times (default 3) for every --jobs value, interleaved (1 2 1 2 ...), and
# prints per run and the median per jobs value: seconds, x real time. The
# load average is printed before and after, because the machine is shared.
set -euo pipefail

here=$(cd "$(dirname "$0")/../../.." && pwd)
ticks=3000
keyframe_steps=""
repeat=3
jobs_list="1 2"
dir=""
replay="$here/build/release/tools/replay/bustle-replay"
server="$here/build/release/server/app/bustle-server"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ticks) ticks=$2; shift 2 ;;
    --keyframe-steps) keyframe_steps=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --jobs) jobs_list=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --replay) replay=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    *) echo "verify_speed.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -n "$dir" ]] || dir=$(mktemp -d /tmp/bustle-verify-speed.XXXXXX)
mkdir -p "$dir"

rec="$dir/rec-${ticks}-k${keyframe_steps:-default}.db"
if [[ ! -f "$rec" ]]; then
  python3 - "$here/configs/default.city.json" "$dir/scale.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.pop("$schema", None)
s["id"] = "bench.verify.100k"
s["pedestrians"] = {"count": 100000, "spawn_per_step_max": 4096}
s["entity_capacity"] = 131072
json.dump(s, open(sys.argv[2], "w"), indent=1)
PY
  args=(--config "$dir/scale.json" --steps "$ticks" --record "$rec")
  [[ -n "$keyframe_steps" ]] && args+=(--record-keyframe-steps "$keyframe_steps")
  "$server" "${args[@]}" >/dev/null 2>"$dir/record.log"
fi
echo "recording: $rec ($(du -h "$rec" | cut -f1), $(sqlite3 -readonly "$rec" 'SELECT count(*) FROM recording_keyframes') keyframes, $ticks ticks)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
results="$dir/results.txt"
: >"$results"
for ((r = 1; r <= repeat; ++r)); do
  for j in $jobs_list; do
    out=$("$replay" verify "$rec" --json --jobs "$j" --progress never)
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["verdict"]=="ok", d; print(sys.argv[2], d["seconds"], d["real_time_factor"], d["segments"])' "$out" "$j" | tee -a "$results"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for j in sorted({r[0] for r in rows}, key=int):
    s = [float(r[1]) for r in rows if r[0] == j]
    x = [float(r[2]) for r in rows if r[0] == j]
    print(f"jobs {j}: median {statistics.median(s):.2f} s ({min(s):.2f}-{max(s):.2f}), "
          f"{statistics.median(x):.1f}x real time ({min(x):.1f}-{max(x):.1f}), {len(s)} runs")
PY
