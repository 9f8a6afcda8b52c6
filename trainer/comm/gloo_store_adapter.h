#pragma once
// Lets Gloo rendezvous through our rendezvous::Store: implements the installed
// gloo::rendezvous::Store (Debian's 2022 snapshot: set / get / wait(keys[, timeout])).
//
// Gloo's Store interface reports failure by throwing, so this adapter throws StoreError (a
// gloo::Exception carrying our Status); GlooCommunicator catches it at its edge and returns the
// Status. Nothing else in the project sees these exceptions.
//
// Ownership: does not own `store` (must outlive the adapter). Thread-safety: as thread-safe as
// `store` (ours are). Failure: throws StoreError with the store's Status plus the key.

#include <gloo/common/error.h>
#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::trainer::comm {

// Thrown by GlooStoreAdapter; keeps the original Status (code and message) for the edge.
struct StoreError : public gloo::Exception {
  explicit StoreError(core::Status s) : gloo::Exception(s.message()), status(std::move(s)) {}
  core::Status status;
};

class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  // `timeout` bounds get() and the timeout-less wait() that Gloo calls.
  GlooStoreAdapter(rendezvous::Store* store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  rendezvous::Store* store_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ringmaster::trainer::comm
