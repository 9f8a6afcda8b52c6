#pragma once
// Waiting for one key per rank ("<prefix>/<rank>") in the rendezvous store, with an error that
// names the ranks that never wrote theirs. Used by the shm and gloo setups.
//
// Thread-safety: as the store. Failure: kTimeout "rank(s) 1, 3 did not <verb> within 2000 ms";
// other store errors as they come.

#include <chrono>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::trainer::comm {

// "<prefix>/<rank>"
inline std::string rankKey(const std::string& prefix, int rank) {
  return prefix + "/" + std::to_string(rank);
}

// Waits until rankKey(prefix, q) exists for every q in [0, size). `verb` completes the
// timeout message ("join", "report on the segment").
core::Status waitForRankKeys(rendezvous::Store& store, const std::string& prefix, int size,
                             std::chrono::milliseconds timeout, const std::string& verb);

}  // namespace ringmaster::trainer::comm
