#!/bin/sh
# Entrypoint of the Bustle image: checks what the container needs before
# anything touches the volume, then becomes bustle-server (exec: the server is
# PID 1 and receives SIGTERM itself). Every setting comes from BUSTLE_*
# variables; arguments are passed to bustle-server after them (flags override
# the environment). A first argument that is not a flag runs that command
# instead (e.g. `bustle status`, `bustle-replay verify FILE`, `sh`).
#
# Container-only variables (the server never reads these):
#   BUSTLE_TOKEN_FILE   read the operator token from this file (a mounted secret)
#   BUSTLE_RECORD_DIR   record every run to DIR/session-<UTC time>.db (a fresh
#                       file per start; BUSTLE_RECORD names one file and refuses
#                       to overwrite it, so it cannot survive a restart)
set -eu

die() {
  echo "bustle-entrypoint: $*" >&2
  exit 2
}

case "${1:-}" in
  ""|-*) ;;
  *) exec "$@" ;;
esac

# Batch mode opens no listener and no snapshot store, and refuses their
# settings even from the environment: drop the ones this image sets.
for a in "$@"; do
  case "$a" in
    --steps|--steps=*)
      unset BUSTLE_BIND BUSTLE_PORT BUSTLE_METRICS_BIND BUSTLE_SNAPSHOT_DB BUSTLE_TOKEN BUSTLE_TOKEN_FILE
      exec bustle-server "$@"
      ;;
  esac
done

if [ -n "${BUSTLE_TOKEN_FILE:-}" ]; then
  [ -r "$BUSTLE_TOKEN_FILE" ] || die "BUSTLE_TOKEN_FILE=$BUSTLE_TOKEN_FILE is not a readable file"
  BUSTLE_TOKEN=$(tr -d '\r\n' <"$BUSTLE_TOKEN_FILE")
  [ -n "$BUSTLE_TOKEN" ] || die "BUSTLE_TOKEN_FILE=$BUSTLE_TOKEN_FILE is empty"
  export BUSTLE_TOKEN
fi

# What the server will use: the last --bind/--token flag, else the environment.
bind="${BUSTLE_BIND:-127.0.0.1}"
token_flag=0
prev=""
for a in "$@"; do
  case "$prev" in --bind) bind="$a" ;; esac
  case "$a" in
    --bind=*) bind="${a#--bind=}" ;;
    --token|--token=*) token_flag=1 ;;
  esac
  prev="$a"
done
case "$bind" in
  127.*|::1|localhost) ;;
  *)
    if [ -z "${BUSTLE_TOKEN:-}" ] && [ "$token_flag" = 0 ]; then
      die "the server listens on $bind:${BUSTLE_PORT:-7777} (BUSTLE_BIND), which needs an operator token.
  Set one:      -e BUSTLE_TOKEN=<secret>   (docker/podman run)
  or mount it:  -e BUSTLE_TOKEN_FILE=/run/secrets/bustle-token
  or, for a server reachable only inside the container: -e BUSTLE_BIND=127.0.0.1
Nothing was started and nothing was written."
    fi
    ;;
esac

data_dir=$(dirname "${BUSTLE_SNAPSHOT_DB:-./bustle-snapshots.db}")
[ -d "$data_dir" ] && [ -w "$data_dir" ] || die "snapshot directory $data_dir (BUSTLE_SNAPSHOT_DB) is missing or not writable by uid $(id -u); a volume mounted there must be writable by uid $(id -u) (Kubernetes: securityContext.fsGroup: $(id -g))"

if [ -n "${BUSTLE_RECORD_DIR:-}" ]; then
  [ -z "${BUSTLE_RECORD:-}" ] || die "set BUSTLE_RECORD or BUSTLE_RECORD_DIR, not both"
  mkdir -p "$BUSTLE_RECORD_DIR" 2>/dev/null || die "cannot create BUSTLE_RECORD_DIR=$BUSTLE_RECORD_DIR"
  BUSTLE_RECORD="$BUSTLE_RECORD_DIR/session-$(uname -n)-$(date -u +%Y%m%dT%H%M%SZ).db"
  export BUSTLE_RECORD
fi
unset BUSTLE_TOKEN_FILE BUSTLE_RECORD_DIR

exec bustle-server "$@"
