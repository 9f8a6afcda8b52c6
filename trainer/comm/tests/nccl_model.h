#pragma once
// Test helper: communicators whose DeviceCollectives::sendRecvAsync follows NCCL's rules for
// point-to-point on host memory, so that code written for GPU stages runs, and can deadlock, on
// a machine without one. The rules modelled:
//   - a send and a receive each finish only once the peer has posted its side (no buffering);
//   - between two ranks, sends and receives are matched in the order they were posted;
//   - the ops of one group are posted together and the call returns once all have finished, as
//     a stream runs past a group only then (the model's stream is the calling thread);
//   - a receive must be exactly as long as its message.
// A group that does not finish within the timeout is a deadlock NCCL would hang in:
// sendRecvAsync then returns kTimeout naming the rank and its unmatched ops. The host-memory
// collectives are not modelled (kInvalidArgument).

#include <chrono>
#include <memory>
#include <vector>

#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm::testing {

// n ranks' communicators (backend "nccl-model"), sharing one fabric; any thread may use any.
std::vector<std::unique_ptr<Communicator>> makeNcclModelCommunicators(
    int n, std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace ringmaster::trainer::comm::testing
