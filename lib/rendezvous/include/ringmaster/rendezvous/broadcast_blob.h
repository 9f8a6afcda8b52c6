#pragma once
// broadcastBlob(): the root rank publishes opaque bytes, every other rank waits for them. This is
// how a backend's bootstrap secret travels, e.g. the 128-byte ncclUniqueId that rank 0 makes
// with ncclGetUniqueId() (passed as bytes, so no CUDA header is needed here).
//
// Keys are single-use per store prefix (scope them per attempt with a PrefixStore): a second
// broadcast under the same key on the same prefix would hand out the first one's bytes.
//
// Thread-safety: as the Store. Failure: kInvalidArgument for a bad rank/root or an empty blob
// on the root; kTimeout naming the key when the root does not publish within `timeout`; store
// errors with the key and rank as context.

#include <chrono>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {

// Returns the root's bytes on every rank (the root gets `blob` back).
core::Result<Bytes> broadcastBlob(Store& store, const std::string& key, int rank, int root,
                                  const Bytes& blob, std::chrono::milliseconds timeout);

}  // namespace ringmaster::rendezvous
