#!/usr/bin/env bash
# Runs the fuzz targets built by the `fuzz` preset (ASan + UBSan + libFuzzer)
# and fails on any finding. Two modes:
#
#   tests/fuzz/run.sh SECONDS [TARGET...]   a campaign: random mutations for
#                                           SECONDS per target, starting from its
#                                           seed corpus and regression inputs
#   tests/fuzz/run.sh --replay [TARGET...]  every checked-in input once, no
#                                           mutation (deterministic)
#
# Default: every target, one after another. Inputs: tests/fuzz/corpus/<target>/
# (seeds from real sessions) and tests/fuzz/regressions/<target>/ (inputs that
# once found a defect: a campaign's finding goes there in the commit that
# fixes it).
#
# Environment: FUZZ_BUILD_DIR (build/fuzz), FUZZ_WORK_DIR ($FUZZ_BUILD_DIR/fuzz-work;
# give a long campaign its own, so a `make test` meanwhile does not share its
# logs), FUZZ_NICE (0; e.g. 10 to yield the
# machine), FUZZ_TIMEOUT_S (25: one input taking longer is a finding),
# FUZZ_RSS_MB (2048), FUZZ_ARGS (extra libFuzzer flags).
#
# New inputs found go to $FUZZ_WORK_DIR/<target>/corpus (never into the
# checked-in seeds); a crash, leak, sanitizer report or timeout is written to
# $FUZZ_WORK_DIR/<target>/artifacts/ and makes the run fail.
# Each target prints libFuzzer's final statistics as one line.
set -uo pipefail
cd "$(dirname "$0")/../.."

if [[ $# -lt 1 || ! "$1" =~ ^([0-9]+|--replay)$ ]]; then
  echo "usage: tests/fuzz/run.sh SECONDS [TARGET...] | tests/fuzz/run.sh --replay [TARGET...]" >&2
  exit 2
fi
replay=0
seconds=0
if [[ "$1" == --replay ]]; then replay=1; else seconds=$1; fi
shift
build=${FUZZ_BUILD_DIR:-build/fuzz}
work_root=${FUZZ_WORK_DIR:-$build/fuzz-work}
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(fuzz_server_inbound fuzz_scenario fuzz_snapshot fuzz_recording fuzz_sdk_frames)
fi

failed=()
total=0
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  if [[ ! -x "$bin" ]]; then
    echo "fuzz: $bin is missing; build it with: cmake --preset fuzz && cmake --build --preset fuzz" >&2
    exit 2
  fi
  work="$work_root/$t"
  mkdir -p "$work/corpus" "$work/artifacts"
  log="$work/last-run.log"
  # Options: -print_final_stats gives the execution count; -timeout and
  # -rss_limit_mb make a slow or huge input a finding. A replay adds -runs=0
  # (every input of the directories once, then stop); a campaign starts from
  # its work corpus too and runs for -max_total_time.
  options=(-print_final_stats=1 -timeout="${FUZZ_TIMEOUT_S:-25}"
           -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -artifact_prefix="$work/artifacts/")
  inputs=("tests/fuzz/corpus/$t")
  [[ -d "tests/fuzz/regressions/$t" ]] && inputs+=("tests/fuzz/regressions/$t")
  began=$SECONDS
  if [[ $replay -eq 1 ]]; then
    "$bin" -runs=0 "${options[@]}" "${inputs[@]}" >"$log" 2>&1
  else
    # shellcheck disable=SC2086
    nice -n "${FUZZ_NICE:-0}" "$bin" "$work/corpus" "${inputs[@]}" -max_total_time="$seconds" \
      "${options[@]}" ${FUZZ_ARGS:-} >"$log" 2>&1
  fi
  rc=$?
  took=$((SECONDS - began))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  printf 'fuzz: %-20s %4ss  execs %12s  exec/s %7s  %s  peak rss %s MiB  rc %d\n' \
    "$t" "$took" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" "${rss:-?}" "$rc"
  total=$((total + ${execs:-0}))
  if [[ $rc -ne 0 ]]; then
    failed+=("$t")
    echo "fuzz: $t FAILED (exit $rc); artifacts in $work/artifacts/, log $log:" >&2
    grep -E '^(==[0-9]+==|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' "$log" | head -20 >&2
  fi
done
echo "fuzz: $total executions in total over ${#targets[@]} target(s)"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
