# Bustle server image: multi-stage on Debian bookworm, using the same
# tools/install-deps.sh as the README and CI.
#
#   docker build -t bustle .
#   docker run --rm -p 7777:7777 -e BUSTLE_TOKEN=change-me bustle
#
# The server binds 0.0.0.0 inside the container, which it refuses to do
# without an operator token: set BUSTLE_TOKEN (viewers need no token).

FROM debian:bookworm AS build
WORKDIR /src
COPY tools/install-deps.sh tools/install-deps.sh
RUN bash tools/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake --preset release -DBUSTLE_BUILD_TESTS=OFF \
 && cmake --build --preset release --target bustle-server bustle bustle-replay \
 && install -D build/release/server/app/bustle-server /out/bin/bustle-server \
 && install -D build/release/tools/cli/bustle /out/bin/bustle \
 && install -D build/release/tools/replay/bustle-replay /out/bin/bustle-replay

FROM debian:bookworm-slim AS runtime
COPY tools/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh --runtime && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
 && useradd --system --uid 10001 --home-dir /var/lib/bustle --create-home bustle
COPY --from=build /out/bin/ /usr/local/bin/
COPY configs/ /etc/bustle/configs/
USER bustle
# Snapshots (bustle-snapshots.db) and recordings are written here; mount a
# volume to keep them.
WORKDIR /var/lib/bustle
VOLUME /var/lib/bustle
EXPOSE 7777
# `bustle status` handshakes and queries stats; non-zero exit when unreachable.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bustle", "status", "--host", "127.0.0.1", "--port", "7777", "--timeout-ms", "2000"]
ENTRYPOINT ["bustle-server", "--bind", "0.0.0.0"]
