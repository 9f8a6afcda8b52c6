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
// Ownership: borrows the ApiClient and Clock, which must outlive it. Thread-safety: record()
// may be called from any thread; calls are serialized (one mutex around the cache and the API
// call). Failure: record() returns the API error with context; callers usually log it and go
// on (an Event is never worth failing a reconcile for).

#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/clock.h"
#include "ringmaster/kube/event.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

inline constexpr std::string_view kEventNormal = "Normal";
inline constexpr std::string_view kEventWarning = "Warning";

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
  };

  EventRecorder(ApiClient& client, Clock& clock, Options options);

  // `type` is kEventNormal or kEventWarning; `reason` a CamelCase word ("WorkersCreated").
  core::Status record(const ObjectReference& object, std::string_view type, std::string reason,
                      std::string message);

  template <class T>
  core::Status record(const T& object, std::string_view type, std::string reason,
                      std::string message) {
    return record(referenceTo(object), type, std::move(reason), std::move(message));
  }

 private:
  struct Seen {
    std::string namespace_name;
    std::string name;
    int32_t count = 0;
    std::list<std::string>::iterator age;  // position in lru_
  };

  core::Status create(const std::string& key, const ObjectReference& object, std::string_view type,
                      const std::string& reason, const std::string& message);
  void remember(const std::string& key, Seen seen);

  ApiClient& client_;
  Clock& clock_;
  Options options_;
  std::mutex mu_;
  std::map<std::string, Seen> seen_;
  std::list<std::string> lru_;  // oldest first
};

}  // namespace ringmaster::kube
