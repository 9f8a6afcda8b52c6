#include "trainer/comm/communicator.h"

#include <utility>

namespace ringmaster::trainer::comm {
namespace {

// A send that finished (or failed) before startSend returned.
class FinishedSend final : public PendingSend {
 public:
  explicit FinishedSend(core::Status status) : status_(std::move(status)) {}
  core::Status wait() override { return status_; }

 private:
  core::Status status_;
};

}  // namespace

core::Result<std::unique_ptr<PendingSend>> Communicator::startSend(
    const void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
  core::Status sent = send(data, bytes, peer, opts);
  if (!sent.ok()) return sent;
  return std::unique_ptr<PendingSend>(std::make_unique<FinishedSend>(std::move(sent)));
}

}  // namespace ringmaster::trainer::comm
