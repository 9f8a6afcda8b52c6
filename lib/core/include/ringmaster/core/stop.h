#pragma once
// Cooperative shutdown. A StopSource is requested to stop once (SIGTERM, SIGINT, or a test);
// long-running loops poll stopRequested() or sleep with waitFor() so they wake at once.
//
// Thread-safety: all members are thread-safe. Ownership: the caller owns StopSource objects;
// installSignalStop() returns a process-wide one that lives until exit.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace ringmaster::core {

class StopCallback;

class StopSource {
 public:
  void requestStop(std::string reason = "stop requested");
  bool stopRequested() const { return stopped_.load(std::memory_order_acquire); }
  std::string reason() const;
  // Sleeps up to `timeout`; returns true (early) when a stop was requested.
  bool waitFor(std::chrono::nanoseconds timeout) const;

 private:
  friend class StopCallback;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::string reason_;                                           // guarded by mu_
  mutable uint64_t next_callback_ = 0;                           // guarded by mu_
  mutable std::map<uint64_t, std::function<void()>> callbacks_;  // guarded by mu_
  // Held while callbacks run (taken under mu_): a StopCallback being destroyed waits for them.
  mutable std::mutex running_callbacks_;
};

// Runs `wake` once when `source` is asked to stop (at once if it already was), for a loop that
// sleeps on a condition of its own. Unregistered when destroyed; `wake` runs on the thread that
// requested the stop, without the source's lock, and must not destroy this object.
class StopCallback {
 public:
  StopCallback(const StopSource& source, std::function<void()> wake);
  ~StopCallback();
  StopCallback(const StopCallback&) = delete;
  StopCallback& operator=(const StopCallback&) = delete;

 private:
  const StopSource& source_;
  uint64_t id_ = 0;
  bool registered_ = false;
};

// Installs SIGTERM and SIGINT handlers that turn the first signal into requestStop() on the
// returned source (through a pipe and a watcher thread); a second signal exits the process with
// 128+N at once. Idempotent.
StopSource& installSignalStop();
// Restores the default disposition and unblocks SIGTERM/SIGINT; for child processes after fork
// (handlers do not survive exec, but a blocked mask would).
void unblockStopSignals();

}  // namespace ringmaster::core
