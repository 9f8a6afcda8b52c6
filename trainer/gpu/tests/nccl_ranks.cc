#include "trainer/gpu/tests/nccl_ranks.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/nccl_communicator.h"
#include "trainer/cuda/cuda_status.h"

namespace ringmaster::trainer::gpu::testing {

std::vector<int> runForkedRanks(int world, unsigned alarm_seconds,
                                const std::function<int(int rank, int store_port)>& rank_main) {
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", 0, "");
  EXPECT_TRUE(server.ok()) << server.status().message();
  if (!server.ok()) return {};
  const int port = (*server)->port();
  std::fflush(nullptr);  // the children must not print this process's buffered output again
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    const pid_t pid = fork();
    EXPECT_GE(pid, 0) << "fork";
    if (pid < 0) break;
    if (pid == 0) {
      alarm(alarm_seconds);  // a hang ends the rank instead of the test binary's whole timeout
      std::_Exit(rank_main(rank, port));
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

bool noGpuAnywhere(const std::vector<int>& codes) {
  return !codes.empty() &&
         std::all_of(codes.begin(), codes.end(), [](int c) { return c == kRankNoGpu; });
}

core::Result<std::unique_ptr<comm::Communicator>> joinNcclWorld(int rank, int world,
                                                                int store_port) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return core::notFound("no GPU visible");
  if (devices < world) {
    const std::string host = "ringmaster-test-rank-" + std::to_string(rank);
    setenv("NCCL_HOSTID", host.c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  }
  RM_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices < world ? 0 : rank), "cudaSetDevice");
  RM_ASSIGN_OR_RETURN(auto store, rendezvous::TcpStoreClient::connect("127.0.0.1", store_port, "",
                                                                      std::chrono::seconds(30)));
  comm::NcclConfig config;
  config.rank = rank;
  config.size = world;
  config.store = store.get();  // used while the communicator is made, not after
  config.timeout = std::chrono::seconds(60);
  config.collective_timeout = std::chrono::seconds(60);
  return comm::makeNcclCommunicator(config);
}

}  // namespace ringmaster::trainer::gpu::testing
