// NCCL send/recv between two ranks (DeviceCollectives::sendRecvAsync), as pipeline stages use
// it: two processes with a rank each (nccl_ranks.h: forked, rendezvous through a TCP store this
// test serves, one GPU shared by naming two hosts to NCCL). Skips without a GPU.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/gpu/tests/nccl_ranks.h"

namespace ringmaster::trainer::comm {
namespace {

using gpu::testing::kRankNoGpu;
using gpu::testing::kRankPassed;

constexpr int kWorld = 2;
constexpr size_t kFloats = size_t{1} << 20;  // 4 MiB: NCCL cuts it into several chunks

// rank r's message number m: every float says who sent it and which message it was.
float value(int rank, int message, size_t i) {
  return static_cast<float>(rank * 1000 + message) + static_cast<float>(i % 97) / 128.0f;
}

// Counts mismatches of `got` (device) against what rank `from` sent as message `message`.
size_t mismatches(const float* got, int from, int message) {
  std::vector<float> host(kFloats);
  if (cudaMemcpy(host.data(), got, kFloats * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess)
    return kFloats;
  size_t bad = 0;
  for (size_t i = 0; i < kFloats; ++i) bad += host[i] != value(from, message, i);
  return bad;
}

bool fill(float* device, int rank, int message) {
  std::vector<float> host(kFloats);
  for (size_t i = 0; i < kFloats; ++i) host[i] = value(rank, message, i);
  return cudaMemcpy(device, host.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice) ==
         cudaSuccess;
}

// One rank's part; its exit code.
int runRank(int rank, int store_port) {
  auto made = gpu::testing::joinNcclWorld(rank, kWorld, store_port);
  if (made.status().code() == core::Code::kNotFound) return kRankNoGpu;
  RM_RANK_CHECK(made.ok(), "%s", made.status().message().c_str());
  DeviceCollectives* nccl = (*made)->deviceCollectives();
  RM_RANK_CHECK(nccl != nullptr, "the nccl backend has no device collectives");
  const int peer = 1 - rank;

  float *out = nullptr, *in[3] = {nullptr, nullptr, nullptr};
  RM_RANK_CHECK(cudaMalloc(&out, kFloats * sizeof(float)) == cudaSuccess, "cudaMalloc");
  for (float*& buffer : in)
    RM_RANK_CHECK(cudaMalloc(&buffer, kFloats * sizeof(float)) == cudaSuccess, "cudaMalloc");
  cudaStream_t stream = nullptr;
  RM_RANK_CHECK(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
  const size_t bytes = kFloats * sizeof(float);

  // 1. Neighbours send to each other at the same time (1F1B's steady state).
  RM_RANK_CHECK(fill(out, rank, 0), "upload");
  core::Status s = nccl->sendRecvAsync(out, bytes, peer, in[0], bytes, peer, stream);
  RM_RANK_CHECK(s.ok(), "%s", s.message().c_str());
  RM_RANK_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
  RM_RANK_CHECK(mismatches(in[0], peer, 0) == 0, "the exchanged message differs");

  // 2. One way, three messages enqueued back to back: they arrive in order.
  for (int m = 1; m <= 3; ++m) {
    if (rank == 0) {
      RM_RANK_CHECK(fill(out, rank, m), "upload");
      s = nccl->sendRecvAsync(out, bytes, peer, nullptr, 0, -1, stream);
      RM_RANK_CHECK(s.ok(), "%s", s.message().c_str());
      RM_RANK_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");  // `out` is reused
    } else {
      s = nccl->sendRecvAsync(nullptr, 0, -1, in[m - 1], bytes, peer, stream);
      RM_RANK_CHECK(s.ok(), "%s", s.message().c_str());
    }
  }
  RM_RANK_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
  if (rank == 1) {
    for (int m = 1; m <= 3; ++m)
      RM_RANK_CHECK(mismatches(in[m - 1], peer, m) == 0, "message %d arrived out of order", m);
  }

  // 3. A peer outside the world, or this rank, is refused before anything is enqueued.
  s = nccl->sendRecvAsync(out, bytes, kWorld, nullptr, 0, -1, stream);
  RM_RANK_CHECK(s.code() == core::Code::kInvalidArgument, "peer 2: %s", s.message().c_str());
  s = nccl->sendRecvAsync(nullptr, 0, -1, in[0], bytes, rank, stream);
  RM_RANK_CHECK(s.code() == core::Code::kInvalidArgument, "peer self: %s", s.message().c_str());
  RM_RANK_CHECK(s.message().find("rank " + std::to_string(rank)) != std::string::npos,
                "the error names no rank: %s", s.message().c_str());
  RM_RANK_CHECK(nccl->asyncError().ok(), "%s", nccl->asyncError().message().c_str());

  cudaStreamDestroy(stream);
  cudaFree(out);
  for (float* buffer : in) cudaFree(buffer);
  made->reset();
  return kRankPassed;
}

TEST(NcclPointToPoint, NeighboursExchangeAndOneWayMessagesKeepTheirOrder) {
  const std::vector<int> codes = gpu::testing::runForkedRanks(kWorld, 180, runRank);
  ASSERT_EQ(codes.size(), static_cast<size_t>(kWorld));
  if (gpu::testing::noGpuAnywhere(codes)) GTEST_SKIP() << "no GPU visible";
  for (int rank = 0; rank < kWorld; ++rank)
    EXPECT_EQ(codes[rank], kRankPassed) << "rank " << rank << " (its reason is on stderr above)";
}

}  // namespace
}  // namespace ringmaster::trainer::comm
