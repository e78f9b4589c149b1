# runboxd in a container. Two stages on Debian bookworm: build runboxd with CMake, then copy it
# into a slim image with only the runtime libraries. BASE must be Debian bookworm (or a
# derivative with apt and the bookworm archive reachable):
#
#   docker build -t runboxd:latest .                      # pulls debian:bookworm-slim
#   docker build --build-arg BASE=my-mirror/debian:bookworm-slim -t runboxd:latest .
#
# Without a registry, scripts/build-server-image builds the same image from a debootstrap root
# file system and `docker import` (see docs/deployment.md). compose.yaml runs either.
#
# The container needs the host's /var/run/docker.sock (it creates the sandboxes there) and a
# volume for the database; see compose.yaml.
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        gcc make cmake pkg-config libc6-dev \
        libh2o-dev libwslay-dev libuv1-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev libjansson-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY core core
COPY store store
COPY docker docker
COPY server server
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DRUNBOX_TESTS=OFF \
 && cmake --build /build --target runboxd -j"$(nproc)" \
 && install -D -m 0755 /build/runboxd /out/usr/local/bin/runboxd

FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libh2o0.13 libwslay1 libuv1 libsqlite3-0 libcurl4 libssl3 libjansson4 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/runbox
COPY --from=build /out/ /
ENV RUNBOX_LISTEN=0.0.0.0:8080 \
    RUNBOX_DB=/var/lib/runbox/runbox.db \
    RUNBOX_DOCKER_SOCKET=/var/run/docker.sock
VOLUME /var/lib/runbox
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/runboxd"]
