#pragma once
// The "single" backend: a world of one rank, where every collective is the identity. Lets the
// trainer run without any peer, store or network.
//
// Ownership: nothing. Thread-safety: one thread at a time (Communicator contract). Failure:
// only a broadcast root other than 0 (kInvalidArgument).

#include <string>

#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm {

class SingleRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  std::string allreduceAlgorithm(size_t) const override { return "none"; }

  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override {
    stats_.allreduce_calls++;
    stats_.allreduce_bytes += count * sizeof(float);
    return core::Status::Ok();
  }
  core::Status broadcast(void* data, size_t bytes, int root) override {
    if (root != 0) {
      return core::invalidArgument("rank 0: broadcast from rank " + std::to_string(root) +
                                   ": root out of range [0, 1)");
    }
    return core::Status::Ok();
  }
  core::Status barrier() override { return core::Status::Ok(); }
};

}  // namespace ringmaster::trainer::comm
