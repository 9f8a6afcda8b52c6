#pragma once
// Small pure helpers for object metadata: UUIDs, RFC 3339 timestamps, generateName suffixes,
// and list continue tokens (unpadded base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"key\0"},
// the same shape kube-apiserver hands out).
//
// Thread-safety: RandomSource is not thread-safe (the store guards it); the free functions are.
// Failure: decodeContinueToken returns nullopt for a token it cannot read.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace ringmaster::local {

using Clock = std::function<std::chrono::system_clock::time_point()>;

class RandomSource {
 public:
  RandomSource();  // seeded from std::random_device
  explicit RandomSource(uint64_t seed) : rng_(seed) {}
  std::string uuid4();
  std::string nameSuffix();  // 5 chars from Kubernetes' alphabet "bcdfghjklmnpqrstvwxz2456789"

 private:
  std::mt19937_64 rng_;
};

// "2026-11-22T01:55:51Z" (seconds precision, UTC) as metav1.Time marshals.
std::string formatTimestamp(std::chrono::system_clock::time_point t);

struct ContinueToken {
  int64_t rv = 0;     // -1: continue without consistency (the token in a 410)
  std::string start;  // the first key to return (last key of the previous page + "\0")
};
std::string encodeContinueToken(const ContinueToken& token);
std::optional<ContinueToken> decodeContinueToken(std::string_view text);

}  // namespace ringmaster::local
