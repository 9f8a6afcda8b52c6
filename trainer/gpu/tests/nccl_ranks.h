#pragma once
// Test helper for the GPU tests whose ranks are processes with an NCCL communicator each: the
// test process serves a TCP store, forks the ranks before anything in it touches CUDA (a child
// of a process that has used CUDA cannot use it), and reads their exit codes. With as many GPUs
// as ranks each rank has its own; with fewer, all share GPU 0 and each process names a host of
// its own (NCCL_HOSTID), since NCCL refuses two ranks of one communicator on one device of one
// host, and then carries their messages over its socket transport on loopback.

#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::gpu::testing {

// A rank process's exit codes.
inline constexpr int kRankPassed = 0, kRankFailed = 1, kRankNoGpu = 77;

// In a rank process, what it reports on failure: "rank 1: check failed: <cond>: <why>".
#define RM_RANK_CHECK(cond, ...)                                        \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "rank %d: check failed: %s: ", rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                \
      std::fprintf(stderr, "\n");                                       \
      return ::ringmaster::trainer::gpu::testing::kRankFailed;          \
    }                                                                   \
  } while (0)

// Runs rank_main(rank, store_port) in `world` forked processes beside a TCP store on loopback
// and returns each one's exit code (128 + the signal when one was killed: a rank that hangs
// longer than `alarm_seconds` is). Fails the current test where the store or a fork fails.
std::vector<int> runForkedRanks(int world, unsigned alarm_seconds,
                                const std::function<int(int rank, int store_port)>& rank_main);

// Whether every rank found no GPU (the test then skips).
bool noGpuAnywhere(const std::vector<int>& codes);

// In a rank process: selects its GPU (as above) and joins the world's nccl communicator through
// the store at 127.0.0.1:store_port. kNotFound when no GPU is visible.
core::Result<std::unique_ptr<comm::Communicator>> joinNcclWorld(int rank, int world,
                                                                int store_port);

}  // namespace ringmaster::trainer::gpu::testing
