#pragma once
// The rendezvous key-value store contract (gloo's shape plus add):
//   set(key, value)             publish bytes under a key (overwrites)
//   get(key, timeout)           wait until the key exists, then return its bytes
//   wait(keys, timeout)         wait until every key exists
//   add(key, delta)             atomic counter; returns the value after adding
// Keys are plain strings; PrefixStore scopes them per job and attempt ("<job>/<attempt>/...")
// so a restarted gang never sees keys of an earlier attempt.
//
// Thread-safety: implementations are thread-safe. Failure: every call returns a Status; a
// timeout is Code::kTimeout naming the missing keys, a lost connection Code::kUnavailable.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::rendezvous {

using Bytes = std::vector<char>;
using std::chrono::milliseconds;

class Store {
 public:
  virtual ~Store() = default;
  virtual core::Status set(const std::string& key, const Bytes& value) = 0;
  virtual core::Result<Bytes> get(const std::string& key, milliseconds timeout) = 0;
  virtual core::Status wait(const std::vector<std::string>& keys, milliseconds timeout) = 0;
  virtual core::Result<int64_t> add(const std::string& key, int64_t delta) = 0;
};

// An in-process store for tests that run every rank as a thread. Thread-safe.
std::unique_ptr<Store> makeInMemoryStore();

// Scopes every key of `base` (not owned; must outlive this) under "<prefix>/".
class PrefixStore final : public Store {
 public:
  PrefixStore(Store* base, std::string prefix) : base_(base), prefix_(std::move(prefix) + "/") {}
  core::Status set(const std::string& key, const Bytes& value) override {
    return base_->set(prefix_ + key, value);
  }
  core::Result<Bytes> get(const std::string& key, milliseconds timeout) override {
    return base_->get(prefix_ + key, timeout);
  }
  core::Status wait(const std::vector<std::string>& keys, milliseconds timeout) override {
    std::vector<std::string> scoped;
    scoped.reserve(keys.size());
    for (const auto& k : keys) scoped.push_back(prefix_ + k);
    return base_->wait(scoped, timeout);
  }
  core::Result<int64_t> add(const std::string& key, int64_t delta) override {
    return base_->add(prefix_ + key, delta);
  }
  const std::string& prefix() const { return prefix_; }

 private:
  Store* base_;
  std::string prefix_;
};

// Convenience for text values.
inline Bytes toBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
inline std::string toString(const Bytes& b) { return std::string(b.begin(), b.end()); }

}  // namespace ringmaster::rendezvous
