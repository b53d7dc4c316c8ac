# Bustle server image: multi-stage on Debian bookworm, using the same
# tools/install-deps.sh as the README and CI. See docs/operations.md, "Container".
#
#   make image                      # podman or docker; makes the base if it cannot be pulled
#   docker run --rm -p 7777:7777 -p 9100:9100 -e BUSTLE_TOKEN=change-me \
#     -v bustle-data:/var/lib/bustle bustle:latest
#
# The server listens on 0.0.0.0 inside the container (BUSTLE_BIND), which it
# refuses without an operator token: set BUSTLE_TOKEN or BUSTLE_TOKEN_FILE
# (viewers need no token). Every setting is a BUSTLE_* variable; arguments
# after the image name are passed to bustle-server.

ARG BASE_IMAGE=debian:bookworm

FROM ${BASE_IMAGE} AS build
# Every image of this stage carries the label (set before its first layer),
# so tools/container/build-image.sh can remove them after a build.
LABEL io.bustle.stage=build
ARG BUILD_JOBS=2
WORKDIR /src
COPY tools/install-deps.sh tools/install-deps.sh
RUN bash tools/install-deps.sh --build && rm -rf /var/lib/apt/lists/*
# The whole tree (.dockerignore leaves out build/, .git and deploy/): the
# top-level CMakeLists.txt adds folders as the project grows.
COPY . .
RUN cmake --preset release -DBUSTLE_BUILD_TESTS=OFF >/dev/null \
 && cmake --build --preset release -j"${BUILD_JOBS}" --target bustle-server bustle bustle-replay bustle-gateway \
 && install -D -s build/release/server/app/bustle-server /out/bin/bustle-server \
 && install -D -s build/release/server/gateway/bustle-gateway /out/bin/bustle-gateway \
 && install -D -s build/release/tools/cli/bustle /out/bin/bustle \
 && install -D -s build/release/tools/replay/bustle-replay /out/bin/bustle-replay

FROM ${BASE_IMAGE} AS runtime
COPY tools/install-deps.sh /tmp/install-deps.sh
# apt-get clean: a debootstrap base (tools/container/make-base.sh) keeps the
# downloaded packages, unlike the official image.
RUN bash /tmp/install-deps.sh --image \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/install-deps.sh \
 && groupadd --system --gid 10001 bustle \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/bustle --no-create-home --shell /usr/sbin/nologin bustle \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/bustle
COPY --from=build /out/bin/ /usr/local/bin/
COPY configs/ /etc/bustle/configs/
COPY tools/container/entrypoint.sh /usr/local/bin/bustle-entrypoint
COPY tools/container/probe.sh /usr/local/bin/bustle-probe

# Settings by environment (the server reads BUSTLE_*; flags given as
# arguments override them). Game port 7777, metrics/health port 9100.
ENV BUSTLE_BIND=0.0.0.0 \
    BUSTLE_PORT=7777 \
    BUSTLE_METRICS_BIND=0.0.0.0:9100 \
    BUSTLE_SNAPSHOT_DB=/var/lib/bustle/bustle-snapshots.db
# Snapshots (bustle-snapshots.db) and recordings (BUSTLE_RECORD_DIR, e.g.
# /var/lib/bustle/recordings) live here: mount a volume to keep them.
WORKDIR /var/lib/bustle
VOLUME /var/lib/bustle
EXPOSE 7777/tcp 9100/tcp
USER 10001:10001
# SIGTERM: stop accepting, final checkpoint if BUSTLE_CHECKPOINT_ON_EXIT is set,
# close clients with ServerShuttingDown, exit 0. A second SIGTERM exits at once.
STOPSIGNAL SIGTERM
# /healthz on the metrics endpoint; never opens a game-protocol session.
# (Docker-format images only: podman builds with --format docker.)
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["bustle-probe", "healthz"]
ENTRYPOINT ["bustle-entrypoint"]
# Last, so a new version does not invalidate the layers above. make image adds
# org.opencontainers.image.revision and .created with --label (buildah does not
# re-run a LABEL step for a changed ARG, so they would go stale here).
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="bustle" \
      org.opencontainers.image.description="Bustle: headless deterministic fixed-step city population server" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm" \
      org.opencontainers.image.documentation="docs/operations.md, section Container"
