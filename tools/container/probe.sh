#!/bin/sh
# Health and readiness probe of the Bustle image (HEALTHCHECK, podman/docker
# healthcheck, or an exec probe):
#
#   bustle-probe healthz   process alive and the sim thread stepping
#   bustle-probe readyz    scenario loaded, listening, not restoring
#
# It asks the metrics endpoint (BUSTLE_METRICS_BIND, default 127.0.0.1:9100
# here; a 0.0.0.0 or [::] bind is probed on loopback) with curl, and never
# opens a game-protocol session. Exit 0 healthy/ready, 1 otherwise.
#
# With the metrics endpoint switched off (BUSTLE_METRICS_BIND set empty), the
# probe falls back to `bustle status` on BUSTLE_PORT, which handshakes as a
# viewer: it tells only that the server answers, not that it is ready.
set -u
what="${1:-healthz}"
case "$what" in healthz|readyz) ;; *) echo "usage: bustle-probe healthz|readyz" >&2; exit 2 ;; esac

bind="${BUSTLE_METRICS_BIND-127.0.0.1:9100}"
if [ -n "$bind" ]; then
  port="${bind##*:}"
  host="${bind%:*}"
  case "$host" in
    ""|0.0.0.0|"*") host=127.0.0.1 ;;
    "[::]"|"::") host="[::1]" ;;
  esac
  exec curl --silent --show-error --fail --max-time "${BUSTLE_PROBE_TIMEOUT_S:-2}" \
    --output /dev/null "http://$host:$port/$what"
fi

exec bustle status --host 127.0.0.1 --port "${BUSTLE_PORT:-7777}" --timeout-ms 2000 >/dev/null
