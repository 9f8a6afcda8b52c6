#pragma once
// Which pod's failure started it. When one rank of a gang fails, its peers fail too a moment
// later ("Connection closed by peer"), each pod for a reason of its own, and the operator would
// show whichever pod it picks. So every launcher whose own process failed publishes its failure
// in the attempt's store, the first to count itself (add on kFailureCountKey returns 1) as the
// cause (kFirstFailureKey); the others put the cause first in their own message, so that every
// pod, and the job's Failed condition whichever pod it takes, names the program's own error.
//
// Thread-safety: as the store. Failure: none; a store that cannot be reached leaves the pod's
// own message (logged at debug).

#include <chrono>
#include <string>

#include "ringmaster/rendezvous/store.h"

namespace ringmaster::launcher {

inline constexpr char kFailureCountKey[] = "launcher/failure/count";
inline constexpr char kFirstFailureKey[] = "launcher/failure/first";

// Publishes `message` (this pod's failure) and returns what the pod should report: `message`
// when it came first (or the store is gone), else "<first>; then on this pod: <message>".
// `wait` bounds the wait for the first failure's text, which its pod sets right after counting.
std::string reportFailure(rendezvous::Store& attempt_store, const std::string& message,
                          std::chrono::milliseconds wait);

}  // namespace ringmaster::launcher
