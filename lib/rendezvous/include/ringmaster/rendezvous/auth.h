#pragma once
// The challenge-response of the rendezvous store (written down in tcp_store.h) and of the
// parameter servers (trainer/ps/ps_wire.h): nonces from the OS's CSPRNG and HMAC-SHA256 proofs
// over both nonces, compared in constant time; the secret itself never crosses the wire.
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
// The store's protocol name; each protocol's proofs answer only its own challenges.
inline constexpr std::string_view kStoreProtocol = "ringmaster-store";

// HMAC-SHA256(secret, "<protocol> <role>" server_nonce client_nonce bound), where `bound` ties the
// proof to what the peer claims to be (the parameter servers' worker id; empty for the store).
std::string proof(std::string_view secret, std::string_view protocol, Role role,
                  std::string_view server_nonce, std::string_view client_nonce,
                  std::string_view bound = {});
// Constant time in the length of `a` (timing tells a stranger nothing about the right proof).
bool sameProof(std::string_view a, std::string_view b);

}  // namespace ringmaster::rendezvous::auth
