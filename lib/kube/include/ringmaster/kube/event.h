#pragma once
// core/v1 Event, in the shape client-go's EventRecorder writes: name
// "<object>.<hex nanos>", involvedObject, reason, message, type, source, first/lastTimestamp,
// count. eventTime is a MicroTime and is null on recorder events.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube {

struct EventSource {
  std::string component;
  std::string host;
  nlohmann::json extra;
  bool operator==(const EventSource&) const = default;
};

struct Event {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Event";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ObjectReference involved_object;
  std::optional<std::string> reason;
  std::optional<std::string> message;
  std::optional<std::string> type;  // Normal | Warning
  std::optional<int32_t> count;
  std::optional<Time> first_timestamp;
  std::optional<Time> last_timestamp;
  std::optional<MicroTime> event_time;
  std::optional<EventSource> source;
  std::optional<std::string> reporting_component;
  std::optional<std::string> reporting_instance;
  std::optional<std::string> action;
  std::optional<ObjectReference> related;
  nlohmann::json extra;  // series
  bool operator==(const Event&) const = default;
};

RM_KUBE_DECLARE_CODEC(EventSource);
RM_KUBE_DECLARE_CODEC(Event);

}  // namespace ringmaster::kube
