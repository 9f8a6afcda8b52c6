# syntax=docker/dockerfile:1
# The worker image for CPU nodes (spec.image: ringmaster/trainer-cpu:0.1.0): ringmaster-launcher
# and ringmaster-trainer without the GPU module and without any CUDA library, on Debian bookworm;
# Open MPI and a non-root sshd on port 2222 for `launcher: mpi`; Fashion-MNIST at
# /data/fashion-mnist. Every shared library comes from a package. Runs as uid 1000 (user
# ringmaster), as dockerfiles/worker.Dockerfile's GPU worker does. Build from the repository root:
#   docker build -f dockerfiles/worker-cpu.Dockerfile -t ringmaster/trainer-cpu:0.1.0 .
# The bases are Debian's dated bookworm images; BUILD_IMAGE and RUNTIME_IMAGE name others (CI
# builds on a base it made itself with debootstrap: scripts/build-images). A build context named
# `binaries` (a directory holding src/build/bin/ringmaster-launcher and ringmaster-trainer)
# replaces the compile: the runtime stage is the same either way.
ARG BUILD_IMAGE=debian:bookworm-20250520
ARG RUNTIME_IMAGE=debian:bookworm-20250520-slim

# --- data: Debian's packaged Fashion-MNIST (the IDX .gz files the trainer reads).
FROM ${RUNTIME_IMAGE} AS data
RUN apt-get update \
 && apt-get install -y --no-install-recommends dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/*

# --- binaries: scripts/setup's libraries; launcher and trainer only, without CUDA.
FROM ${BUILD_IMAGE} AS binaries
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev libre2-dev \
      libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev \
      libgloo-dev libopenblas-dev zlib1g-dev liblzma-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY lib/ lib/
COPY trainer/ trainer/
COPY launcher/ launcher/
COPY operator/ operator/
RUN cmake -S /src -B /src/build -DCMAKE_BUILD_TYPE=Release -DRM_WITH_CUDA=OFF -DRM_WITH_MPI=ON \
      -DRM_BUILD_TESTS=OFF -DRM_BUILD_BENCH=OFF -DRM_BUILD_LOCAL=OFF \
 && cmake --build /src/build --target ringmaster-launcher ringmaster-trainer -j"$(nproc)" \
 && strip /src/build/bin/ringmaster-launcher /src/build/bin/ringmaster-trainer

# --- runtime: the binaries and the packages that hold every library they load.
FROM ${RUNTIME_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
# The trainer's libraries (prometheus-cpp, yaml-cpp, OpenSSL, Gloo, Open MPI, OpenBLAS, zlib,
# xz), mpirun, and OpenSSH for mpirun's remote starts.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libprometheus-cpp-core1.0 libyaml-cpp0.7 libssl3 libgloo0 \
      libopenmpi3 libopenblas0-pthread zlib1g liblzma5 \
      openmpi-bin openssh-server openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# Which binaries: a build that feeds this stage its own (scripts/build-images --binaries) names
# their digest, so that no cached layer keeps older ones.
ARG BINARIES=compiled
LABEL dev.ringmaster.binaries=${BINARIES}
COPY --from=binaries /src/build/bin/ringmaster-launcher /usr/local/bin/ringmaster-launcher
COPY --from=binaries /src/build/bin/ringmaster-trainer /usr/local/bin/ringmaster-trainer
COPY --from=data /usr/share/datasets/fashion-mnist/ /data/fashion-mnist/
# `ringmaster` is the user worker pods run as (the operator sets runAsUser 1000 and fsGroup 1000).
# In MPI mode the launcher starts sshd as that user on port 2222 with a config and host key of
# its own (no privilege separation, no root) and reads the job's key pair from the Secret
# mounted at /etc/ringmaster-ssh.
# The dataset is also where Debian's package puts it, the path jobs written for a host name.
RUN useradd --uid 1000 --user-group --create-home --shell /bin/bash ringmaster \
 && mkdir -p /usr/share/datasets \
 && ln -s /data/fashion-mnist /usr/share/datasets/fashion-mnist
# Containers cannot use cross-memory attach between ranks; shared memory copies still work.
ENV OMPI_MCA_btl_vader_single_copy_mechanism=none \
    OMPI_MCA_plm_rsh_agent=ssh
USER 1000:1000
WORKDIR /home/ringmaster
# 2222 sshd (MPI mode), 8080 launcher health, 9090 trainer metrics, 29510 the launcher's
# rendezvous store, 29500 MASTER_PORT (a user's program binds it on pod 0, e.g. torch's store).
EXPOSE 2222 8080 9090 29500 29510
ENTRYPOINT ["/usr/local/bin/ringmaster-launcher"]
