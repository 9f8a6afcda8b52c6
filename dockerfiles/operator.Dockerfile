# syntax=docker/dockerfile:1
# The operator image: ringmaster-operator on Debian bookworm-slim with the packages that hold
# the shared libraries it loads (build and runtime on bookworm, the distribution of
# scripts/setup's package list), running as uid 65532 (the chart's restricted securityContext).
# Build from the repository root:
#   docker build -f dockerfiles/operator.Dockerfile -t ringmaster/operator:0.1.0 .
# The bases are Debian's dated bookworm images; BUILD_IMAGE and RUNTIME_IMAGE name others (CI
# builds on a base it made itself with debootstrap: scripts/build-images). A build given a
# build context named `binaries` (a directory holding src/build/bin/ringmaster-operator) takes
# the binary from it instead of compiling: the runtime stage is the same either way.
ARG BUILD_IMAGE=debian:bookworm-20250520
ARG RUNTIME_IMAGE=debian:bookworm-20250520-slim

# --- binaries: Debian packages from scripts/setup that the CMake configure and the operator need.
FROM ${BUILD_IMAGE} AS binaries
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev libre2-dev \
      libgtest-dev libgmock-dev \
      libgloo-dev libopenblas-dev zlib1g-dev liblzma-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the configure reads and the operator compiles (.dockerignore drops build trees).
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY lib/ lib/
COPY trainer/ trainer/
COPY launcher/ launcher/
COPY operator/ operator/
RUN cmake -S /src -B /src/build -DCMAKE_BUILD_TYPE=Release -DRM_WITH_CUDA=OFF -DRM_WITH_MPI=OFF \
      -DRM_BUILD_TESTS=OFF -DRM_BUILD_BENCH=OFF -DRM_BUILD_LOCAL=OFF \
 && cmake --build /src/build --target ringmaster-operator -j"$(nproc)" \
 && strip /src/build/bin/ringmaster-operator

# --- runtime: the binary and the packages of the libraries it loads (OpenSSL,
# prometheus-cpp, libcurl, yaml-cpp); no shell tools are added.
FROM ${RUNTIME_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libssl3 libprometheus-cpp-core1.0 libcurl4 \
      libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
# Which binaries: a build that feeds this stage its own (scripts/build-images --binaries) names
# their digest, so that no cached layer keeps older ones.
ARG BINARIES=compiled
LABEL dev.ringmaster.binaries=${BINARIES}
COPY --from=binaries /src/build/bin/ringmaster-operator /usr/local/bin/ringmaster-operator
USER 65532:65532
# The operator's default /metrics and /healthz ports (--metrics-port, --health-port; the chart
# passes its own).
EXPOSE 8383 8384
ENTRYPOINT ["/usr/local/bin/ringmaster-operator"]
