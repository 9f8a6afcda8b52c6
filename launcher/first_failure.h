#pragma once
// Which pod's failure started it. When one rank of a gang fails, its peers fail too a moment
// later ("Connection closed by peer"), each pod for a reason of its own, and the operator would
// show whichever pod it picks. So every launcher whose own process failed publishes its failure
// in the attempt's store, "<unix ms> <message>" under failureKey(NODE_RANK), the time being when
// its first error began (ErrorLines), else when it failed; then it reads what the other pods
// publish within a short wait and reports the earliest failure first. Every pod, and so the
// job's Failed condition whichever pod it takes, then names the program's own error. Ties go to
// the lower node rank; clocks of one cluster agree far better than the seconds between a cause
// and its consequences.
//
// Thread-safety: as the store. Failure: none; a store that cannot be reached leaves the pod's
// own message (logged at debug).

#include <chrono>
#include <cstdint>
#include <string>

#include "ringmaster/rendezvous/store.h"

namespace ringmaster::launcher {

// "launcher/failure/<node_rank>".
std::string failureKey(int node_rank);

// Publishes this pod's failure (`message`, begun at `unix_ms`; 0: now, for a failure whose
// beginning nobody saw, e.g. mpirun's), waits until every pod of
// `nnodes` published one or `wait` ends, and returns what the pod should report: `message` when
// it came first, else "<first>; then on this pod: <message>".
std::string reportFailure(rendezvous::Store& attempt_store, int node_rank, int nnodes,
                          const std::string& message, int64_t unix_ms,
                          std::chrono::milliseconds wait);

}  // namespace ringmaster::launcher
