# syntax=docker/dockerfile:1
# The worker image every TrainingJob pod runs (spec.image, default ringmaster/trainer:0.1.0):
# ringmaster-launcher and ringmaster-trainer with the GPU module, on Debian bookworm (the
# distribution scripts/setup's package list is written for) with CUDA's runtime, cuBLAS and NCCL
# from NVIDIA's Debian 12 repository (no cuDNN: nothing uses it); Open MPI and a non-root sshd
# on port 2222 for `launcher: mpi`; Fashion-MNIST at /data/fashion-mnist. Every shared library
# comes from a package. Runs as uid 1000 (user ringmaster). Build from the repository root:
#   docker build -f dockerfiles/worker.Dockerfile -t ringmaster/trainer:0.1.0 .
# The GPU module is compiled for Ampere (sm_80, sm_86), Ada (sm_89) and Hopper (sm_90, with its
# PTX, which newer GPUs compile at load); --build-arg CUDA_ARCHITECTURES=... names others.
# On a node without a GPU driver the trainer never loads the module and trains on the CPU.
# The bases are Debian's dated bookworm images; BUILD_IMAGE and RUNTIME_IMAGE name others. A
# build context named `binaries` (src/build/bin/ringmaster-{launcher,trainer} and
# src/build/lib/ringmaster/libringmaster-trainer-cuda.so, tmp/cuda-keyring.deb) replaces the
# compile.
# dockerfiles/worker-cpu.Dockerfile is the same worker without CUDA.
ARG BUILD_IMAGE=debian:bookworm-20250520
ARG RUNTIME_IMAGE=debian:bookworm-20250520-slim
ARG CUDA_VERSION=13.0
ARG CUDA_PACKAGES_VERSION=13-0
ARG CUDA_ARCHITECTURES=80-real;86-real;89-real;90

# --- data: Debian's packaged Fashion-MNIST (the IDX .gz files the trainer reads).
FROM ${RUNTIME_IMAGE} AS data
RUN apt-get update \
 && apt-get install -y --no-install-recommends dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/*

# --- binaries: scripts/setup's libraries, CUDA's compiler and libraries; launcher and trainer
# only.
FROM ${BUILD_IMAGE} AS binaries
ARG CUDA_VERSION
ARG CUDA_PACKAGES_VERSION
ARG CUDA_ARCHITECTURES
ENV DEBIAN_FRONTEND=noninteractive
# NVIDIA's keyring package adds its Debian 12 repository and signing key to apt.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && curl -fsSL -o /tmp/cuda-keyring.deb \
      https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb \
 && dpkg -i /tmp/cuda-keyring.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev libre2-dev \
      libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev \
      libgloo-dev libopenblas-dev zlib1g-dev liblzma-dev libssl-dev \
      cuda-nvcc-${CUDA_PACKAGES_VERSION} cuda-cudart-dev-${CUDA_PACKAGES_VERSION} \
      libcublas-dev-${CUDA_PACKAGES_VERSION} libnccl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY lib/ lib/
COPY trainer/ trainer/
COPY launcher/ launcher/
COPY operator/ operator/
RUN cmake -S /src -B /src/build -DCMAKE_BUILD_TYPE=Release -DRM_WITH_CUDA=ON -DRM_WITH_MPI=ON \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda-${CUDA_VERSION}/bin/nvcc \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
      -DRM_BUILD_TESTS=OFF -DRM_BUILD_BENCH=OFF -DRM_BUILD_LOCAL=OFF \
 && cmake --build /src/build --target ringmaster-launcher ringmaster-trainer -j"$(nproc)" \
 && strip /src/build/bin/ringmaster-launcher /src/build/bin/ringmaster-trainer \
      /src/build/lib/ringmaster/libringmaster-trainer-cuda.so

# --- runtime: the binaries and the packages that hold every library they load.
FROM ${RUNTIME_IMAGE}
ARG CUDA_PACKAGES_VERSION
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=binaries /tmp/cuda-keyring.deb /tmp/cuda-keyring.deb
# The trainer's libraries (prometheus-cpp, yaml-cpp, OpenSSL, Gloo, Open MPI, OpenBLAS, zlib,
# xz), the GPU module's (CUDA runtime, cuBLAS, NCCL), mpirun, and OpenSSH for mpirun's remote
# starts.
RUN dpkg -i /tmp/cuda-keyring.deb \
 && rm /tmp/cuda-keyring.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      libprometheus-cpp-core1.0 libyaml-cpp0.7 libssl3 libgloo0 \
      libopenmpi3 libopenblas0-pthread zlib1g liblzma5 \
      cuda-cudart-${CUDA_PACKAGES_VERSION} libcublas-${CUDA_PACKAGES_VERSION} libnccl2 \
      openmpi-bin openssh-server openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# The trainer loads its GPU module from ../lib/ringmaster, i.e. /usr/local/lib/ringmaster.
# Which binaries: a build that feeds this stage its own (scripts/build-images --binaries) names
# their digest, so that no cached layer keeps older ones.
ARG BINARIES=compiled
LABEL dev.ringmaster.binaries=${BINARIES}
COPY --from=binaries /src/build/lib/ringmaster/libringmaster-trainer-cuda.so /usr/local/lib/ringmaster/
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
