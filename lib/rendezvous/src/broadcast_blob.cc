#include "ringmaster/rendezvous/broadcast_blob.h"

namespace ringmaster::rendezvous {

core::Result<Bytes> broadcastBlob(Store& store, const std::string& key, int rank, int root,
                                  const Bytes& blob, std::chrono::milliseconds timeout) {
  const std::string context = "broadcast '" + key + "' (rank " + std::to_string(rank) + ", root " +
                              std::to_string(root) + ")";
  if (rank < 0 || root < 0) return core::invalidArgument(context + ": negative rank or root");
  if (rank == root) {
    if (blob.empty()) return core::invalidArgument(context + ": the root has nothing to publish");
    RM_RETURN_IF_ERROR_CTX(store.set(key, blob), context);
    return blob;
  }
  core::Result<Bytes> got = store.get(key, timeout);
  if (!got.ok()) return got.status().withContext(context);
  return got;
}

}  // namespace ringmaster::rendezvous
