#include "ringmaster/rendezvous/barrier.h"

#include "ringmaster/core/log.h"

namespace ringmaster::rendezvous {

core::Status barrier(Store& store, const std::string& name, int rank, int world_size,
                     std::chrono::milliseconds timeout) {
  const std::string context = "barrier '" + name + "' (rank " + std::to_string(rank) + " of " +
                              std::to_string(world_size) + ")";
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return core::invalidArgument(context + ": rank must be in [0, world_size)");
  }
  const std::string done_key = name + "/done";
  core::Result<int64_t> arrived = store.add(name, 1);
  if (!arrived.ok()) return arrived.status().withContext(context);
  if (*arrived > world_size) {
    return core::invalidArgument(context + ": " + std::to_string(*arrived) +
                                 " arrivals for a world of " + std::to_string(world_size) +
                                 " (barrier name reused?)");
  }
  if (*arrived == world_size) RM_RETURN_IF_ERROR_CTX(store.set(done_key, toBytes("1")), context);

  core::Status st = store.wait({done_key}, timeout);
  if (st.code() == core::Code::kTimeout) {
    // add(name, 0) reads the count without changing it: say who is missing, not just that.
    core::Result<int64_t> now = store.add(name, 0);
    const std::string count = now.ok() ? std::to_string(*now) : "?";
    return core::timeoutError(context + ": only " + count + " of " + std::to_string(world_size) +
                              " ranks arrived within " + std::to_string(timeout.count()) + " ms (" +
                              st.message() + ")");
  }
  return st.withContext(context);
}

}  // namespace ringmaster::rendezvous
