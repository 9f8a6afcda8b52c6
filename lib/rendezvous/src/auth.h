#pragma once
// The store's challenge-response (written down in tcp_store.h): nonces from the OS's CSPRNG and
// HMAC-SHA256 proofs over both nonces, compared in constant time.
//
// Thread-safety: pure functions (OpenSSL's RNG is thread-safe). Failure: randomBytes returns
// kInternal when the CSPRNG cannot supply bytes.

#include <cstddef>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::rendezvous::auth {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;  // SHA-256

enum class Role { kClient, kServer };

core::Result<std::string> randomBytes(size_t n);
std::string toHex(std::string_view bytes);
// HMAC-SHA256(secret, "ringmaster-store <role>" server_nonce client_nonce).
std::string proof(std::string_view secret, Role role, std::string_view server_nonce,
                  std::string_view client_nonce);
// Constant time in the length of `a` (timing tells a stranger nothing about the right proof).
bool sameProof(std::string_view a, std::string_view b);

}  // namespace ringmaster::rendezvous::auth
