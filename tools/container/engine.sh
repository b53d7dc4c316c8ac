#!/usr/bin/env bash
# Sourced by the other scripts in tools/container: picks a container engine and
# the options it needs on this machine.
#
#   ENGINE        podman or docker (default: podman if it works, else docker
#                 if its daemon answers); set it to force one
#   ENGINE_RUN    array: the engine plus global options, e.g. (podman --runtime runc)
#   RUN_OPTS      array: options every `run` needs here (ulimits for podman)
#
# Why (measured on Debian 12 VMs with cgroups in hybrid mode, no CAP_SYS_RESOURCE):
# - crun, podman's default runtime, refuses hybrid cgroups ("cgroups in hybrid
#   mode not supported"); runc works. runc is used when it is installed and the
#   cgroup setup is not pure cgroup v2 (or BUSTLE_OCI_RUNTIME says so).
# - rootful podman asks for nofile/nproc limits of 1048576, above the host's
#   hard limits; containers then fail with "error setting rlimit". Every run
#   gets nofile and nproc capped at this shell's hard limits (both must be
#   given: one --ulimit replaces podman's whole default list).

_bustle_engine_works() {
  case "$1" in
    podman) command -v podman >/dev/null 2>&1 ;;
    docker) command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

if [[ -z "${ENGINE:-}" ]]; then
  if _bustle_engine_works podman; then ENGINE=podman
  elif _bustle_engine_works docker; then ENGINE=docker
  else
    echo "container: neither podman nor a running docker daemon was found." >&2
    echo "container: on Debian 12: tools/install-deps.sh --container (installs podman, runc, debootstrap)" >&2
    exit 1
  fi
elif ! _bustle_engine_works "$ENGINE"; then
  echo "container: ENGINE=$ENGINE does not work here (not installed, or no daemon)" >&2
  exit 1
fi

ENGINE_RUN=("$ENGINE")
RUN_OPTS=()
if [[ "$ENGINE" == podman ]]; then
  runtime="${BUSTLE_OCI_RUNTIME:-}"
  if [[ -z "$runtime" ]] && command -v runc >/dev/null 2>&1; then
    # pure cgroup v2 mounts cgroup2 at /sys/fs/cgroup; anything else is v1 or hybrid
    if [[ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]]; then
      runtime=runc
    fi
  fi
  [[ -n "$runtime" ]] && ENGINE_RUN+=(--runtime "$runtime")
  cap() { local v="$1" max="$2"; [[ "$v" == unlimited || "$v" -gt "$max" ]] && v="$max"; echo "$v"; }
  nofile=$(cap "$(ulimit -Hn)" 1048576)
  # conmon's own nproc limit bounds what a container may ask for
  nproc=$(cap "$(ulimit -Hu)" 32768)
  RUN_OPTS+=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
fi
