// NCCL send/recv between two ranks (DeviceCollectives::sendRecvAsync), as pipeline stages use
// it: two processes with a rank each, rendezvous through a TCP store this test serves. With two
// GPUs each rank has its own. With one, both share it: NCCL refuses two ranks of a communicator
// on one device of one host, so each process names a host of its own (NCCL_HOSTID) and NCCL
// carries the messages over its socket transport on loopback. Skips without a GPU.
//
// The rank processes are forked before anything in this process touches CUDA (a child of a
// process that has used CUDA cannot use it), and report by exit code.

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/nccl_communicator.h"

namespace ringmaster::trainer::comm {
namespace {

constexpr int kPassed = 0, kFailed = 1, kNoGpu = 77;
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

#define RANK_CHECK(cond, ...)                                           \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "rank %d: check failed: %s: ", rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                \
      std::fprintf(stderr, "\n");                                       \
      return kFailed;                                                   \
    }                                                                   \
  } while (0)

// One rank's part; its exit code.
int runRank(int rank, int store_port) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return kNoGpu;
  if (devices < kWorld) {
    const std::string host = "ringmaster-p2p-test-rank-" + std::to_string(rank);
    setenv("NCCL_HOSTID", host.c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  }
  RANK_CHECK(cudaSetDevice(devices < kWorld ? 0 : rank) == cudaSuccess, "cudaSetDevice");
  auto store =
      rendezvous::TcpStoreClient::connect("127.0.0.1", store_port, "", std::chrono::seconds(30));
  RANK_CHECK(store.ok(), "%s", store.status().message().c_str());
  NcclConfig config;
  config.rank = rank;
  config.size = kWorld;
  config.store = store->get();
  config.timeout = std::chrono::seconds(60);
  config.collective_timeout = std::chrono::seconds(60);
  auto made = makeNcclCommunicator(config);
  RANK_CHECK(made.ok(), "%s", made.status().message().c_str());
  DeviceCollectives* nccl = (*made)->deviceCollectives();
  RANK_CHECK(nccl != nullptr, "the nccl backend has no device collectives");
  const int peer = 1 - rank;

  float *out = nullptr, *in[3] = {nullptr, nullptr, nullptr};
  RANK_CHECK(cudaMalloc(&out, kFloats * sizeof(float)) == cudaSuccess, "cudaMalloc");
  for (float*& buffer : in)
    RANK_CHECK(cudaMalloc(&buffer, kFloats * sizeof(float)) == cudaSuccess, "cudaMalloc");
  cudaStream_t stream = nullptr;
  RANK_CHECK(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
  const size_t bytes = kFloats * sizeof(float);

  // 1. Neighbours send to each other at the same time (1F1B's steady state).
  RANK_CHECK(fill(out, rank, 0), "upload");
  core::Status s = nccl->sendRecvAsync(out, bytes, peer, in[0], bytes, peer, stream);
  RANK_CHECK(s.ok(), "%s", s.message().c_str());
  RANK_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
  RANK_CHECK(mismatches(in[0], peer, 0) == 0, "the exchanged message differs");

  // 2. One way, three messages enqueued back to back: they arrive in order.
  for (int m = 1; m <= 3; ++m) {
    if (rank == 0) {
      RANK_CHECK(fill(out, rank, m), "upload");
      s = nccl->sendRecvAsync(out, bytes, peer, nullptr, 0, -1, stream);
      RANK_CHECK(s.ok(), "%s", s.message().c_str());
      RANK_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");  // `out` is reused
    } else {
      s = nccl->sendRecvAsync(nullptr, 0, -1, in[m - 1], bytes, peer, stream);
      RANK_CHECK(s.ok(), "%s", s.message().c_str());
    }
  }
  RANK_CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "sync");
  if (rank == 1) {
    for (int m = 1; m <= 3; ++m)
      RANK_CHECK(mismatches(in[m - 1], peer, m) == 0, "message %d arrived out of order", m);
  }

  // 3. A peer outside the world, or this rank, is refused before anything is enqueued.
  s = nccl->sendRecvAsync(out, bytes, kWorld, nullptr, 0, -1, stream);
  RANK_CHECK(s.code() == core::Code::kInvalidArgument, "peer 2: %s", s.message().c_str());
  s = nccl->sendRecvAsync(nullptr, 0, -1, in[0], bytes, rank, stream);
  RANK_CHECK(s.code() == core::Code::kInvalidArgument, "peer self: %s", s.message().c_str());
  RANK_CHECK(s.message().find("rank " + std::to_string(rank)) != std::string::npos,
             "the error names no rank: %s", s.message().c_str());
  RANK_CHECK(nccl->asyncError().ok(), "%s", nccl->asyncError().message().c_str());

  cudaStreamDestroy(stream);
  cudaFree(out);
  for (float* buffer : in) cudaFree(buffer);
  made->reset();
  return kPassed;
}

TEST(NcclPointToPoint, NeighboursExchangeAndOneWayMessagesKeepTheirOrder) {
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", 0, "");
  ASSERT_TRUE(server.ok()) << server.status().message();
  const int port = (*server)->port();
  std::fflush(nullptr);  // the children must not print this process's buffered output again
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kWorld; ++rank) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork";
    if (pid == 0) {
      alarm(180);  // a hang ends the rank (SIGALRM) instead of the test binary's whole timeout
      std::_Exit(runRank(rank, port));
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  if (codes[0] == kNoGpu && codes[1] == kNoGpu) GTEST_SKIP() << "no GPU visible";
  for (int rank = 0; rank < kWorld; ++rank)
    EXPECT_EQ(codes[rank], kPassed) << "rank " << rank << " (its reason is on stderr above)";
}

}  // namespace
}  // namespace ringmaster::trainer::comm
