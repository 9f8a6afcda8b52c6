#include "trainer/comm/communicator.h"

#include <string>

namespace ringmaster::trainer::comm {
namespace {

// A send that finished before startSend returned (a failed one is startSend's own error).
class FinishedSend final : public PendingSend {
 public:
  core::Status wait() override { return core::Status::Ok(); }
};

}  // namespace

core::Result<std::unique_ptr<PendingSend>> Communicator::startSend(
    const void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
  RM_RETURN_IF_ERROR(send(data, bytes, peer, opts));
  return std::unique_ptr<PendingSend>(std::make_unique<FinishedSend>());
}

core::Status Communicator::setDoublingMaxBytes(size_t bytes) {
  return core::invalidArgument("rank " + std::to_string(rank()) + ": the " + backend() +
                               " backend has no recursive-doubling threshold to set (asked for " +
                               std::to_string(bytes) + " bytes)");
}

}  // namespace ringmaster::trainer::comm
