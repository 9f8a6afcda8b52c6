#pragma once
// Stored objects and the per-watch event queue.
//
// StoredObject is immutable once published: the JSON and its compact text are built once per
// write, so a LIST or a watch event costs a pointer copy and the HTTP layer writes `text` as is.
//
// Watch: the consumer side of one watch. The store pushes events under its own lock and never
// blocks (bounded queue; when it overflows the watch is terminated — the events already queued
// are still delivered, then next() reports the end and the client re-watches or relists, as
// client-go does when kube-apiserver drops a slow watcher). The consumer calls next(timeout)
// from one thread; close() may come from any thread.
//
// Thread-safety: all Watch methods are thread-safe. Failure: none; an ERROR event (410 Expired)
// is an ordinary event followed by the end of the stream.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace ringmaster::local {

struct StoredObject {
  nlohmann::json object;
  std::string text;  // object.dump(), compact
  uint64_t resource_version = 0;
};
using ObjectPtr = std::shared_ptr<const StoredObject>;

// Serializes `object` once. `rv` is what metadata.resourceVersion says (0 for Status objects).
ObjectPtr makeStoredObject(nlohmann::json object, uint64_t rv);

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
std::string_view watchEventTypeName(WatchEventType type);  // "ADDED", …

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  ObjectPtr object;
  // {"type":"ADDED","object":{…}} plus '\n', the wire form of one watch chunk.
  std::string line() const;
};

class Watch {
 public:
  // `capacity`: how many undelivered events may queue before the watch is terminated.
  explicit Watch(size_t capacity) : capacity_(capacity) {}

  // The next event, waiting up to `timeout`; nullopt on timeout or when the stream has ended
  // (then done() is true).
  std::optional<WatchEvent> next(std::chrono::milliseconds timeout);
  // Ends the watch from the consumer side; the store drops it on its next write.
  void close();
  // Closed (by the consumer, the store or an overflow) and nothing left to deliver.
  bool done() const;
  bool closed() const;
  bool overflowed() const;

  // ---- producer side (the store) ----
  // Queues an event; false when the watch is closed or has just overflowed (and is now closed).
  bool push(WatchEvent event);
  // Queues without the capacity check (the initial events of a watch).
  void pushInitial(WatchEvent event);
  // No more events after those queued.
  void finish();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchEvent> queue_;
  size_t capacity_;
  size_t initial_ = 0;  // initial events still queued; they do not count against capacity_
  bool closed_ = false;
  bool overflowed_ = false;
};

}  // namespace ringmaster::local
