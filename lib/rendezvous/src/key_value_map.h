#pragma once
// The data both stores hold and the rules they share: set overwrites, add keeps a decimal-text
// counter (an absent key counts as 0), a wait is satisfied once every key exists.
//
// Ownership: owns its keys and values. Thread-safety: none; callers lock. Failure: add on a
// value that is not a decimal integer, or one that would overflow, is kInvalidArgument.

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {

class KeyValueMap {
 public:
  void set(const std::string& key, Bytes value) { map_[key] = std::move(value); }
  // nullptr when absent; valid until the next set/add.
  const Bytes* find(const std::string& key) const;
  core::Result<int64_t> add(const std::string& key, int64_t delta);
  // The keys of `keys` that do not exist yet, in order.
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;

 private:
  std::unordered_map<std::string, Bytes> map_;
};

// "timed out after 300 ms waiting for key(s): job/1/a, job/1/b"
std::string timeoutMessage(const std::vector<std::string>& missing,
                           std::chrono::milliseconds timeout);

// now + timeout, clamped so that huge timeouts (milliseconds::max()) do not overflow and
// negative ones mean "now".
std::chrono::steady_clock::time_point deadlineAfter(std::chrono::milliseconds timeout);

}  // namespace ringmaster::rendezvous
