#include "launcher/first_failure.h"

#include "ringmaster/core/log.h"

namespace ringmaster::launcher {

std::string reportFailure(rendezvous::Store& attempt_store, const std::string& message,
                          std::chrono::milliseconds wait) {
  core::Result<int64_t> order = attempt_store.add(kFailureCountKey, 1);
  if (!order.ok()) {
    RM_LOG(DEBUG, LAUNCH) << "first failure: " << order.status().message();
    return message;
  }
  if (*order == 1) {
    if (core::Status s = attempt_store.set(kFirstFailureKey, rendezvous::toBytes(message));
        !s.ok()) {
      RM_LOG(DEBUG, LAUNCH) << "first failure: " << s.message();
    }
    return message;
  }
  core::Result<rendezvous::Bytes> first = attempt_store.get(kFirstFailureKey, wait);
  if (!first.ok()) {
    RM_LOG(DEBUG, LAUNCH) << "first failure: " << first.status().message();
    return message;
  }
  const std::string cause = rendezvous::toString(*first);
  RM_LOG(INFO, LAUNCH) << "another pod failed first: " << cause;
  return cause + "; then on this pod: " + message;
}

}  // namespace ringmaster::launcher
