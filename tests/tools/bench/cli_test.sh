#!/usr/bin/env bash
# bustle-bench's command line (tools/bench/options.cpp): exit codes and the
# messages that name the flag, and `districts --write-scenario` writing a
# city that bustle-server runs.
# Usage: cli_test.sh PATH/TO/bustle-bench PATH/TO/bustle-server
set -u
bench="$1"
server="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect STATUS PATTERN ARGS...: runs bustle-bench ARGS, checks the exit
# status and that stdout+stderr match the extended regex PATTERN.
expect() {
  local want="$1" pattern="$2"
  shift 2
  local out status
  out="$("$bench" "$@" 2>&1)"
  status=$?
  if [[ $status -ne $want ]]; then
    echo "FAIL: bustle-bench $* exited $status, expected $want; output:"; echo "$out"; fails=$((fails + 1))
  elif ! grep -Eq -- "$pattern" <<<"$out"; then
    echo "FAIL: bustle-bench $*: output does not match '$pattern':"; echo "$out"; fails=$((fails + 1))
  fi
}

expect 0 '^bustle-bench [0-9]+\.[0-9]+\.[0-9]+$' --version
expect 0 'Exit codes: 0 ran' --help
expect 0 '--active' population --help
expect 2 "a subcommand is required \(one of: step, population, snapshot, vehicles, districts, stream, frame, fanout, district-servers, gateway\)"
expect 2 "^bustle-bench: unknown subcommand 'bogus'" bogus
expect 2 "^bustle-bench: unknown option '--agents' \(before the subcommand" --agents 5 step
expect 2 "^bustle-bench vehicles: --grid: expected an integer in \[2, 1000\], got '1'" vehicles --grid 1
expect 2 "--grid: expected an integer in \[2, 1000\], got 'abc'" vehicles --grid abc
expect 2 "^bustle-bench vehicles: --grid: missing value" vehicles --grid
expect 2 "^bustle-bench: --help: takes no value" --help=no
expect 2 "^bustle-bench: --json: takes no value" step --json=yes
expect 2 "unknown option '--steps' \(allowed here: .*--agents" snapshot --steps 3
expect 2 "unexpected argument '7'" step 7
expect 2 "--agents: expected an integer in \[1, 4000000\], got '-1'" step --agents -1
expect 2 "--residents \(200\) must be at most --active \(100\)" population --active 100 --residents 200
expect 2 "--steps: expected an integer in \[1, " population --steps 0
expect 2 "--stalled-percent: expected an integer in \[0, 100\], got '101'" fanout --stalled-percent 101
expect 2 "--outbound-max-bytes: expected an integer in \[4096, " fanout --outbound-max-bytes 100
expect 2 "--server: File does not exist: /nonexistent/bustle-server" fanout --server /nonexistent/bustle-server
expect 2 "--city-scale: expected two-blocks or a pedestrian count in \[1000, 4000000\] such as 1m or 50k, got '5g'" fanout --city-scale 5g
expect 2 "--city-scale: expected two-blocks .* got '999'" fanout --city-scale 999
expect 2 "--clients \(65\) must be at most 64 with --city-scale N" fanout --city-scale 1m --clients 65
expect 2 "--share \(50000\) must be at most 1/25 of --city-scale \(1000000\)" fanout --city-scale 1m --share 50000
expect 2 "^bustle-bench district-servers: --districts: expected an integer in \[1, 64\], got '0'" district-servers --districts 1,0
expect 2 "--districts 4 needs --grid of at least 4" district-servers --grid 3 --districts 4
expect 2 "--server: File does not exist: /nonexistent/bustle-server" district-servers --server /nonexistent/bustle-server
expect 2 "--gateway: File does not exist: /nonexistent/bustle-gateway" gateway --gateway /nonexistent/bustle-gateway
expect 2 "--clients: expected an integer in \[0, 64\], got '65'" gateway --clients 0,65
expect 2 "--share needs --city-scale N" fanout --share 100
expect 2 "--city-scale: expected a pedestrian count .* got 'two-blocks'" frame --city-scale two-blocks
expect 2 "--clients: expected an integer in \[1, 64\], got '65'" frame --clients 65
expect 2 "--share \(50000\) must be at most 1/25 of --city-scale \(1000000\)" frame --share 50000
expect 2 "--agents does not apply with --city-scale N" fanout --city-scale 50k --agents 10
expect 2 "--stalled-percent does not apply with --city-scale N" fanout --city-scale 50k --stalled-percent 5
expect 0 "--city-scale" fanout --help
expect 2 "--dir: Directory does not exist: /nonexistent" snapshot --dir /nonexistent
# A run states the machine and the load before and after, and --json ends
# with one JSON object carrying them.
expect 0 '^machine: [0-9]+ cores, ' step --agents 100 --steps 3
expect 0 '^load average before: [0-9.]+ [0-9.]+ [0-9.]+$' step --agents 100 --steps 3
expect 0 '^load average after: [0-9.]+ [0-9.]+ [0-9.]+$' step --agents 100 --steps 3
expect 0 '^\{"bench":"step",.*"figures":\{.*"step_ms":\{.*"load_after":\[[0-9.,]+\],"load_before":\[[0-9.,]+\],"machine":\{"cores":' \
  step --agents 100 --steps 3 --json

# `districts --write-scenario` writes the generated district city and steps
# nothing; bustle-server loads the file and runs it in batch mode.
city="$tmp/districts.city.json"
expect 0 "^wrote $city: scenario bustle\.bench\.districts\.4\.2, [0-9]+ bytes, 96 lanes, 2 districts$" \
  districts --grid 4 --districts 2 --agents 40 --vehicles 12 --write-scenario "$city"
expect 2 "^bustle-bench districts: --steps does not apply with --write-scenario" \
  districts --steps 5 --write-scenario "$tmp/unused.json"
expect 1 "^bustle-bench: cannot write $tmp/no/such/dir\.json: No such file or directory" \
  districts --grid 4 --agents 10 --vehicles 4 --write-scenario "$tmp/no/such/dir.json"
out="$("$server" --config "$city" --steps 20 --print-digest 2>&1)"
status=$?
if [[ $status -ne 0 ]] || ! grep -Eq '^step 20 digest [0-9a-f]{16}$' <<<"$out"; then
  echo "FAIL: bustle-server --config $city --steps 20 exited $status; output:"; echo "$out"
  fails=$((fails + 1))
fi

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all checks passed"
