# syntax=docker/dockerfile:1
# The operator image: ringmaster-operator and the shared libraries it loads, on Debian slim,
# running as uid 65532 (the chart's restricted securityContext). Build from the repository root:
#   docker build -f dockerfiles/operator.Dockerfile -t ringmaster/operator:0.1.0 .

# --- build: Debian packages from scripts/setup that the CMake configure and the operator need.
FROM debian:bookworm AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev libre2-dev \
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
COPY dockerfiles/bundle-libs.sh dockerfiles/bundle-libs.sh
RUN cmake -S /src -B /src/build -DCMAKE_BUILD_TYPE=Release -DRM_WITH_CUDA=OFF -DRM_WITH_MPI=OFF \
      -DRM_BUILD_TESTS=OFF -DRM_BUILD_BENCH=OFF -DRM_BUILD_LOCAL=OFF \
 && cmake --build /src/build --target ringmaster-operator -j"$(nproc)" \
 && strip /src/build/bin/ringmaster-operator \
 && dockerfiles/bundle-libs.sh /out/lib '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux.*)\.so' \
      /src/build/bin/ringmaster-operator

# --- runtime: the binary, its libraries, nothing else (no shell tools are added).
FROM debian:bookworm-slim
COPY --from=build /out/lib/ /usr/local/lib/ringmaster/
COPY --from=build /src/build/bin/ringmaster-operator /usr/local/bin/ringmaster-operator
RUN echo /usr/local/lib/ringmaster > /etc/ld.so.conf.d/ringmaster.conf && ldconfig
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/ringmaster-operator"]
