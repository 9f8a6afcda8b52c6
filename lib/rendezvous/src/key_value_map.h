#pragma once
// The data both stores hold and the rules they share: set overwrites, add keeps a decimal-text
// counter (an absent key counts as 0), a wait is satisfied once every key exists.
//
// Ownership: owns its keys and values. Thread-safety: none; callers lock. Failure: add on a
// value that is not a decimal integer, or one that would overflow, is kInvalidArgument; so is
// a set or add that would break one of its StoreLimits (key, value, key count, total bytes),
// which leaves the map unchanged.

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/limits.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {

class KeyValueMap {
 public:
  explicit KeyValueMap(const StoreLimits& limits = {}) : limits_(limits) {}
  core::Status set(const std::string& key, Bytes value);
  // nullptr when absent; valid until the next set/add.
  const Bytes* find(const std::string& key) const;
  core::Result<int64_t> add(const std::string& key, int64_t delta);
  // The keys of `keys` that do not exist yet, in order.
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  // Keys, values and per-key overhead, as limited by StoreLimits::max_total_bytes.
  size_t bytes() const { return bytes_; }
  size_t size() const { return map_.size(); }
  // kInvalidArgument naming the key when it is longer than max_key_bytes.
  core::Status checkKey(const std::string& key) const;

 private:
  StoreLimits limits_;
  std::unordered_map<std::string, Bytes> map_;
  size_t bytes_ = 0;
};

// "timed out after 300 ms waiting for key(s): job/1/a, job/1/b"
std::string timeoutMessage(const std::vector<std::string>& missing,
                           std::chrono::milliseconds timeout);

// now + timeout, clamped so that huge timeouts (milliseconds::max()) do not overflow and
// negative ones mean "now".
std::chrono::steady_clock::time_point deadlineAfter(std::chrono::milliseconds timeout);

}  // namespace ringmaster::rendezvous
