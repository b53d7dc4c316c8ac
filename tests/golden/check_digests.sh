#!/usr/bin/env bash
# Pinned digests: runs every row of digests.tsv against the real binaries and
# fails naming the row whose digest differs. The rows were taken from the
# binaries before the core was reorganised; a row may only change together
# with a deliberate change of simulation behaviour (say so in the commit).
#
# usage: check_digests.sh SOURCE_DIR BUSTLE_SERVER BUSTLE_BENCH
set -u
src=$1 server=$2 bench=$3
table=$src/tests/golden/digests.tsv
[[ -r $table ]] || { echo "check_digests: cannot read $table" >&2; exit 2; }
failed=0 rows=0
while IFS=$'\t' read -r kind args expected; do
  [[ -z $kind || $kind == \#* ]] && continue
  rows=$((rows + 1))
  read -ra argv <<<"$args"
  case $kind in
    server)
      # argv: CONFIG SEED STEPS (CONFIG relative to the source tree)
      out=$("$server" --config "$src/${argv[0]}" --seed "${argv[1]}" --steps "${argv[2]}" --print-digest 2>&1)
      got=$(sed -n 's/^step [0-9]* digest \([0-9a-f]\{16\}\)$/\1/p' <<<"$out") ;;
    bench)
      out=$("$bench" "${argv[@]}" 2>&1)
      got=$(sed -n 's/^ *final digest \([0-9a-f]\{16\}\)$/\1/p' <<<"$out") ;;
    *)
      echo "check_digests: $table: unknown kind '$kind' (server | bench)" >&2
      exit 2 ;;
  esac
  if [[ $got != "$expected" ]]; then
    echo "DIGEST CHANGED: $kind $args: expected $expected, got '${got}'"
    [[ -z $got ]] && echo "$out" | tail -5
    failed=$((failed + 1))
  fi
done <"$table"
if ((rows == 0)); then echo "check_digests: $table has no rows" >&2; exit 2; fi
if ((failed)); then echo "$failed of $rows pinned digests changed"; exit 1; fi
echo "all $rows pinned digests unchanged"
