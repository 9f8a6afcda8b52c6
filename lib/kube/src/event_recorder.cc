#include "ringmaster/kube/event_recorder.h"

#include <cstdio>

#include "ringmaster/kube/resource_client.h"

namespace ringmaster::kube {
namespace {

const ResourceType kEvents{"", "v1", "events", true};

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string aggregationKey(const ObjectReference& o, std::string_view type,
                           const std::string& reason, const std::string& message,
                           const EventRecorder::Options& options) {
  std::string key;
  for (const std::string& part :
       {o.api_version.value_or(""), o.kind.value_or(""), o.namespace_name.value_or(""),
        o.name.value_or(""), o.uid.value_or(""), std::string(type), reason, message,
        options.component, options.host}) {
    key += part;
    key += '\x1f';  // a separator that names and messages do not contain
  }
  return key;
}

}  // namespace

EventRecorder::EventRecorder(ApiClient& client, Clock& clock, Options options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

void EventRecorder::remember(const std::string& key, Seen seen) {
  auto it = seen_.find(key);
  if (it != seen_.end()) lru_.erase(it->second.age);
  lru_.push_back(key);
  seen.age = std::prev(lru_.end());
  seen_[key] = std::move(seen);
  while (seen_.size() > options_.max_cached) {
    seen_.erase(lru_.front());
    lru_.pop_front();
  }
}

core::Status EventRecorder::create(const std::string& key, const ObjectReference& object,
                                   std::string_view type, const std::string& reason,
                                   const std::string& message) {
  const auto wall = clock_.wallNow();
  const Time now(wall);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch());
  Event event;
  setTypeMeta(event);
  event.metadata.name = object.name.value_or("") + "." + hex(static_cast<uint64_t>(nanos.count()));
  event.metadata.namespace_name = object.namespace_name.value_or("default");
  event.involved_object = object;
  event.reason = reason;
  event.message = message;
  event.type = std::string(type);
  event.source = EventSource{options_.component, options_.host, {}};
  event.first_timestamp = now;
  event.last_timestamp = now;
  event.count = 1;
  event.event_time = MicroTime();  // null, as the recorder writes it
  event.reporting_component = options_.component;
  event.reporting_instance = options_.reporting_instance;
  ResourceClient<Event> events(client_, kEvents, event.metadata.namespace_name);
  ApiResult<Event> created = events.create(event);
  if (!created.ok()) {
    return created.status().withContext("event " + reason + " for " + object.kind.value_or("") +
                                        " " + object.name.value_or(""));
  }
  remember(key, Seen{event.metadata.namespace_name, event.metadata.name, 1, {}});
  return core::Status::Ok();
}

core::Status EventRecorder::record(const ObjectReference& object, std::string_view type,
                                   std::string reason, std::string message) {
  std::lock_guard lock(mu_);
  const std::string key = aggregationKey(object, type, reason, message, options_);
  auto it = seen_.find(key);
  if (it == seen_.end()) return create(key, object, type, reason, message);

  Seen seen = it->second;
  const int32_t count = seen.count + 1;
  nlohmann::json patch = {
      {"count", count}, {"lastTimestamp", Time(clock_.wallNow()).toString()}, {"message", message}};
  ResourceClient<Event> events(client_, kEvents, seen.namespace_name);
  ApiResult<Event> patched = events.patch(seen.name, PatchType::kStrategicMerge, patch);
  if (!patched.ok() && patched.error().isNotFound()) {
    return create(key, object, type, reason, message);  // it expired: start a new series
  }
  if (!patched.ok()) {
    return patched.status().withContext("event " + reason + " (x" + std::to_string(count) + ")");
  }
  seen.count = count;
  remember(key, std::move(seen));
  return core::Status::Ok();
}

}  // namespace ringmaster::kube
