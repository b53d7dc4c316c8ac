#!/usr/bin/env bash
# Makes the debian:bookworm base image locally when it cannot be pulled (no
# registry reachable, only Debian's package mirrors): debootstrap --variant=minbase
# from the mirrors this machine's apt already uses, then `import` into the
# engine as debian:bookworm (and docker.io/library/debian:bookworm, so either
# FROM spelling resolves without a pull). Needs root and debootstrap
# (tools/install-deps.sh --container).
#
#   tools/container/make-base.sh            make it unless the engine has it
#   tools/container/make-base.sh --force    make it again
#   MIRROR=... MIRROR_SECURITY=...          override the mirrors read from apt
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/engine.sh"

BASE=debian:bookworm
force=0
[[ "${1:-}" == --force ]] && force=1

if [[ $force -eq 0 ]] && "${ENGINE_RUN[@]}" image inspect "$BASE" >/dev/null 2>&1; then
  echo "make-base: $BASE present in $ENGINE"
  exit 0
fi
# Where a registry is reachable, pulling is faster and gives the official image.
if [[ $force -eq 0 && "${BUSTLE_BASE_NO_PULL:-0}" != 1 ]] \
   && timeout 30 "${ENGINE_RUN[@]}" pull "docker.io/library/$BASE" >/dev/null 2>&1; then
  echo "make-base: pulled docker.io/library/$BASE"
  exit 0
fi
echo "make-base: $BASE cannot be pulled; building it with debootstrap"

if [[ "$(id -u)" -ne 0 ]]; then
  echo "make-base: debootstrap needs root (run as root or with sudo)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "make-base: debootstrap missing: tools/install-deps.sh --container" >&2; exit 1; }

# The mirror URIs apt uses here: one-line (.list) and deb822 (.sources) files.
apt_uris() {  # $1: suite to look for (bookworm or bookworm-security)
  local suite="$1" f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    awk -v s="$suite" '$1=="deb" { i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                                   if ($(i+1)==s) print $i }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    # paragraphs with Types: deb whose Suites include the suite
    awk -v s="$suite" 'BEGIN{RS=""; FS="\n"}
      { uris=""; suites=""; deb=0; on=1
        for (i=1;i<=NF;i++) { l=$i
          if (l ~ /^Types:/ && l ~ /(^|[ \t])deb([ \t]|$)/) deb=1
          if (l ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", l); uris=l }
          if (l ~ /^Suites:/) { sub(/^Suites:[ \t]*/, "", l); suites=" " l " " }
          if (l ~ /^Enabled:[ \t]*no/) on=0 }
        if (deb && on && index(suites, " " s " ")) { n=split(uris, u, /[ \t]+/); for (j=1;j<=n;j++) print u[j] } }' "$f"
  done
}
MIRROR="${MIRROR:-$(apt_uris bookworm | head -n1)}"
MIRROR_SECURITY="${MIRROR_SECURITY:-$(apt_uris bookworm-security | head -n1)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
MIRROR_SECURITY="${MIRROR_SECURITY:-http://deb.debian.org/debian-security}"
echo "make-base: mirror $MIRROR, security $MIRROR_SECURITY"

work="$(mktemp -d "${TMPDIR:-/var/tmp}/bustle-base.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
start=$SECONDS
nice debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  echo "make-base: debootstrap failed (log above)" >&2
  exit 1
}
# What the official image also drops: package caches and lists.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
mkdir -p "$rootfs/var/lib/apt/lists/partial"
cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $MIRROR_SECURITY bookworm-security main
SOURCES
import=(import --change 'CMD ["bash"]')
[[ "$ENGINE" == podman ]] && import+=(--quiet)
tar -C "$rootfs" -c . | "${ENGINE_RUN[@]}" "${import[@]}" \
  --message "debian bookworm minbase (debootstrap from $MIRROR)" - "localhost/$BASE" >/dev/null
"${ENGINE_RUN[@]}" tag "localhost/$BASE" "$BASE" 2>/dev/null || true
"${ENGINE_RUN[@]}" tag "localhost/$BASE" "docker.io/library/$BASE"
echo "make-base: imported $BASE in $((SECONDS - start)) s"
