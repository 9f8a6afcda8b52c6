# syntax=docker/dockerfile:1
# The worker image every TrainingJob pod runs (spec.image, default ringmaster/trainer:0.1.0):
# ringmaster-launcher and ringmaster-trainer on the CUDA runtime with cuDNN and NCCL, Open MPI
# and a non-root sshd on port 2222 for `launcher: mpi`, and Fashion-MNIST at /data/fashion-mnist.
# Runs as uid 1000 (user ringmaster). Build from the repository root:
#   docker build -f dockerfiles/worker.Dockerfile -t ringmaster/trainer:0.1.0 .
ARG CUDA_TAG=13.0.0-cudnn
ARG UBUNTU=ubuntu24.04

# --- data: Debian's packaged Fashion-MNIST (the IDX .gz files the trainer reads).
FROM debian:bookworm-slim AS data
RUN apt-get update \
 && apt-get install -y --no-install-recommends dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/*

# --- build: CUDA devel + the libraries from scripts/setup; launcher and trainer only.
FROM nvidia/cuda:${CUDA_TAG}-devel-${UBUNTU} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libcpprest-dev libyaml-cpp-dev prometheus-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev libre2-dev \
      libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev \
      libgloo-dev libopenblas-dev zlib1g-dev liblzma-dev libssl-dev libnccl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY lib/ lib/
COPY trainer/ trainer/
COPY launcher/ launcher/
COPY operator/ operator/
COPY dockerfiles/bundle-libs.sh dockerfiles/bundle-libs.sh
RUN cmake -S /src -B /src/build -DCMAKE_BUILD_TYPE=Release -DRM_WITH_CUDA=ON -DRM_WITH_MPI=ON \
      -DRM_BUILD_TESTS=OFF -DRM_BUILD_BENCH=OFF -DRM_BUILD_LOCAL=OFF \
 && cmake --build /src/build --target ringmaster-launcher ringmaster-trainer -j"$(nproc)" \
 && strip /src/build/bin/ringmaster-launcher /src/build/bin/ringmaster-trainer \
 && dockerfiles/bundle-libs.sh /out/lib \
      '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux.*|libcuda|libcudart|libnccl|libcudnn.*|libcublas.*|libmpi.*|libopen-rte|libopen-pal)\.so' \
      /src/build/bin/ringmaster-launcher /src/build/bin/ringmaster-trainer \
 && cp /src/build/lib/ringmaster/libringmaster-trainer-cuda.so /out/lib/

# --- runtime
FROM nvidia/cuda:${CUDA_TAG}-runtime-${UBUNTU}
ENV DEBIAN_FRONTEND=noninteractive
# NCCL (GPU allreduce), Open MPI (mpirun and the MPI backend), OpenSSH for mpirun's remote starts.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libnccl2 openmpi-bin openssh-server openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# The trainer loads its GPU module from ../lib/ringmaster, i.e. /usr/local/lib/ringmaster.
COPY --from=build /out/lib/ /usr/local/lib/ringmaster/
COPY --from=build /src/build/bin/ringmaster-launcher /usr/local/bin/ringmaster-launcher
COPY --from=build /src/build/bin/ringmaster-trainer /usr/local/bin/ringmaster-trainer
COPY --from=data /usr/share/datasets/fashion-mnist/ /data/fashion-mnist/
# uid 1000 is `ubuntu` in the base image; it becomes `ringmaster`, the user worker pods run as
# (the operator sets runAsUser 1000 and fsGroup 1000). In MPI mode the launcher starts sshd as
# that user on port 2222 with a config and host key of its own (no privilege separation, no
# root) and reads the job's key pair from the Secret mounted at /etc/ringmaster-ssh.
RUN echo /usr/local/lib/ringmaster > /etc/ld.so.conf.d/ringmaster.conf && ldconfig \
 && (userdel -r ubuntu 2>/dev/null || true) \
 && useradd --uid 1000 --user-group --create-home --shell /bin/bash ringmaster
# Containers cannot use cross-memory attach between ranks; shared memory copies still work.
ENV OMPI_MCA_btl_vader_single_copy_mechanism=none \
    OMPI_MCA_plm_rsh_agent=ssh
USER 1000:1000
WORKDIR /home/ringmaster
# 2222 sshd (MPI mode), 8080 launcher health, 9090 trainer metrics, 29500 rendezvous.
EXPOSE 2222 8080 9090 29500
ENTRYPOINT ["/usr/local/bin/ringmaster-launcher"]
