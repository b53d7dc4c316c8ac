#!/bin/sh
# The vehicle kernel runs in parts of 1 024 rows on the lent threads
# (VehicleSystem::kVehicleRowsPerPart): the grid city with 2 500 vehicles
# (3 parts) must end on the same digest for 1, 2 and 4 threads.
set -eu
bench="$1"
digest_for() {
  "$bench" vehicles --grid 12 --vehicles 2500 --steps 100 --threads "$1" |
    sed -n 's/^  final digest //p'
}
one=$(digest_for 1)
[ -n "$one" ] || { echo "no final digest printed" >&2; exit 1; }
for t in 2 4; do
  got=$(digest_for "$t")
  if [ "$got" != "$one" ]; then
    echo "threads $t: final digest $got, 1 thread: $one" >&2
    exit 1
  fi
done
echo "same final digest $one on 1, 2 and 4 threads"
