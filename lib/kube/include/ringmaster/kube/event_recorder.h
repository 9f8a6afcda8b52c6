#pragma once
// EventRecorder: core/v1 Events about objects, in the shape client-go's record.EventRecorder
// writes them, so that `kubectl describe` shows them:
//   first time   POST events: name "<object name>.<unix nanoseconds in hex>", involvedObject,
//                reason, message, type (Normal|Warning), source.component/host,
//                firstTimestamp = lastTimestamp = now, count 1, eventTime null,
//                reportingComponent/reportingInstance
//   a repeat     (same object, type, reason, message, source) PATCH (strategic merge) of that
//                Event with {count, lastTimestamp, message}: kubectl shows "(x3 over 25s)".
//                If that Event is gone (404: events expire), a new one is created.
//
// Delivery: with Options::max_queued 0, record() writes before it returns. Otherwise it queues
// the Event (stamped with the time of the call) and one sender thread writes the queue in order,
// as client-go's broadcaster does: a reconcile never waits for an Event, and many workers never
// queue behind one mutex around an API call. A full queue drops the Event (record() says so).
//
// Ownership: borrows the ApiClient and Clock, which must outlive it; the destructor sends what
// is queued for up to Options::drain_timeout, then drops the rest and logs how many.
// Thread-safety: record() and flush() may be called from any thread. Failure: a synchronous
// record() returns the API error with context, and callers usually log it and go on (an Event
// is never worth failing a reconcile for); a queued Event that fails is logged by the sender.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/clock.h"
#include "ringmaster/kube/event.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

inline constexpr std::string_view kEventNormal = "Normal";
inline constexpr std::string_view kEventWarning = "Warning";
// The queue a long-running component gives its recorder: client-go's broadcaster holds as many.
inline constexpr size_t kEventQueueLength = 1000;

// The reference an Event names: apiVersion, kind, name, namespace, uid, resourceVersion.
template <class T>
ObjectReference referenceTo(const T& object) {
  ObjectReference ref;
  ref.api_version = object.api_version.empty() ? T::kApiVersion : object.api_version;
  ref.kind = object.kind.empty() ? T::kKind : object.kind;
  ref.name = object.metadata.name;
  if (!object.metadata.namespace_name.empty()) ref.namespace_name = object.metadata.namespace_name;
  if (!object.metadata.uid.empty()) ref.uid = object.metadata.uid;
  if (!object.metadata.resource_version.empty()) {
    ref.resource_version = object.metadata.resource_version;
  }
  return ref;
}

class EventRecorder {
 public:
  struct Options {
    std::string component;           // source.component and reportingComponent
    std::string host;                // source.host (the node), may be empty
    std::string reporting_instance;  // "" as client-go's recorder writes
    size_t max_cached = 4096;        // repeats tracked; the oldest is forgotten beyond this
    size_t max_queued = 0;           // 0: write in record(); else the sender's queue bound
    std::chrono::milliseconds drain_timeout{2'000};  // what the destructor waits for the queue
  };

  EventRecorder(ApiClient& client, Clock& clock, Options options);
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // `type` is kEventNormal or kEventWarning; `reason` a CamelCase word ("WorkersCreated").
  core::Status record(const ObjectReference& object, std::string_view type, std::string reason,
                      std::string message);

  template <class T>
  core::Status record(const T& object, std::string_view type, std::string reason,
                      std::string message) {
    return record(referenceTo(object), type, std::move(reason), std::move(message));
  }

  // Waits until every queued Event has been written (or failed); false at the timeout.
  // Immediate when nothing is queued or the recorder is synchronous.
  bool flush(std::chrono::milliseconds timeout);

 private:
  struct Pending {
    ObjectReference object;
    std::string type;
    std::string reason;
    std::string message;
    Clock::WallTime when;
  };
  struct Seen {
    std::string namespace_name;
    std::string name;
    int32_t count = 0;
    std::list<std::string>::iterator age;  // position in lru_
  };

  core::Status write(const Pending& event);  // create, or patch a repeat
  core::Status create(const std::string& key, const Pending& event);
  void remember(const std::string& key, Seen seen);
  void sendQueued();

  ApiClient& client_;
  Clock& clock_;
  Options options_;
  std::mutex write_mu_;  // the repeat cache and the writes
  std::map<std::string, Seen> seen_;
  std::list<std::string> lru_;  // oldest first
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Pending> queue_;
  bool sending_ = false;   // the sender holds an Event taken off the queue
  bool stopping_ = false;  // the destructor runs: send what is left until drain_deadline_
  std::chrono::steady_clock::time_point drain_deadline_;
  std::thread sender_;
};

}  // namespace ringmaster::kube
