#pragma once
// The rendezvous store's per-attempt secret in the worker pod environment. The operator writes
// it into every worker pod of an attempt (operator/builders.cc), the launcher reads it
// (pod_environment.h) and hands it to the processes it starts, and the trainer reads it
// to connect to the launcher's store. Every connection to the store proves it knows the secret
// before anything else (lib/rendezvous/include/ringmaster/rendezvous/tcp_store.h).
//
// The value is kRandomBytes random bytes as lowercase hex. A new attempt gets a new one; a pod
// recreated within an attempt gets the one its sibling pods already carry.

#include <cstddef>

namespace ringmaster::contract::store_secret {

inline constexpr char kEnv[] = "RINGMASTER_STORE_SECRET";
inline constexpr size_t kRandomBytes = 32;
// Shorter values are refused: a typo or placeholder must not pass for a secret.
inline constexpr size_t kMinChars = 32;

}  // namespace ringmaster::contract::store_secret
