// makeInMemoryStore(): the Store for tests that run every rank as a thread of one process.

#include <condition_variable>
#include <mutex>

#include "key_value_map.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {
namespace {

// One mutex guards the map; every change wakes all waiters, who recheck their keys.
class InMemoryStore final : public Store {
 public:
  core::Status set(const std::string& key, const Bytes& value) override {
    core::Status status;
    {
      std::lock_guard lock(mu_);
      status = map_.set(key, value);
    }
    cv_.notify_all();
    return status;
  }

  core::Result<Bytes> get(const std::string& key, milliseconds timeout) override {
    std::unique_lock lock(mu_);
    RM_RETURN_IF_ERROR(waitLocked(lock, {key}, timeout));
    return *map_.find(key);
  }

  core::Status wait(const std::vector<std::string>& keys, milliseconds timeout) override {
    std::unique_lock lock(mu_);
    return waitLocked(lock, keys, timeout);
  }

  core::Result<int64_t> add(const std::string& key, int64_t delta) override {
    core::Result<int64_t> result = [&] {
      std::lock_guard lock(mu_);
      return map_.add(key, delta);
    }();
    cv_.notify_all();
    return result;
  }

 private:
  core::Status waitLocked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                          milliseconds timeout) {
    const auto deadline = deadlineAfter(timeout);
    while (true) {
      std::vector<std::string> missing = map_.missing(keys);
      if (missing.empty()) return core::Status::Ok();
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        missing = map_.missing(keys);
        if (missing.empty()) return core::Status::Ok();
        return core::timeoutError(timeoutMessage(missing, timeout));
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  KeyValueMap map_;
};

}  // namespace

std::unique_ptr<Store> makeInMemoryStore() { return std::make_unique<InMemoryStore>(); }

}  // namespace ringmaster::rendezvous
