#include "ringmaster/kube/event_recorder.h"

#include <cstdio>

#include "ringmaster/core/log.h"
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
    : client_(client), clock_(clock), options_(std::move(options)) {
  if (options_.max_queued > 0) sender_ = std::thread([this] { sendQueued(); });
}

EventRecorder::~EventRecorder() {
  if (!sender_.joinable()) return;
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
    drain_deadline_ = std::chrono::steady_clock::now() + options_.drain_timeout;
  }
  queue_cv_.notify_all();
  sender_.join();
}

void EventRecorder::sendQueued() {
  std::unique_lock lock(queue_mu_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    if (stopping_ && std::chrono::steady_clock::now() >= drain_deadline_) {
      RM_LOG(WARN, KUBE) << "events: " << queue_.size() << " not written before shutdown ("
                         << options_.component << ")";
      queue_.clear();
      queue_cv_.notify_all();
      return;
    }
    Pending event = std::move(queue_.front());
    queue_.pop_front();
    sending_ = true;
    lock.unlock();
    core::Status written = write(event);
    if (!written.ok()) RM_LOG(WARN, KUBE) << written.toString();
    lock.lock();
    sending_ = false;
    queue_cv_.notify_all();
  }
}

bool EventRecorder::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(queue_mu_);
  return queue_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !sending_; });
}

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

core::Status EventRecorder::create(const std::string& key, const Pending& pending) {
  const ObjectReference& object = pending.object;
  const Time now(pending.when);
  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(pending.when.time_since_epoch());
  Event event;
  setTypeMeta(event);
  event.metadata.name = object.name.value_or("") + "." + hex(static_cast<uint64_t>(nanos.count()));
  event.metadata.namespace_name = object.namespace_name.value_or("default");
  event.involved_object = object;
  event.reason = pending.reason;
  event.message = pending.message;
  event.type = pending.type;
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
    return created.status().withContext("event " + pending.reason + " for " +
                                        object.kind.value_or("") + " " + object.name.value_or(""));
  }
  remember(key, Seen{event.metadata.namespace_name, event.metadata.name, 1, {}});
  return core::Status::Ok();
}

core::Status EventRecorder::record(const ObjectReference& object, std::string_view type,
                                   std::string reason, std::string message) {
  Pending event{object, std::string(type), std::move(reason), std::move(message), clock_.wallNow()};
  if (options_.max_queued == 0) return write(event);
  {
    std::lock_guard lock(queue_mu_);
    if (queue_.size() >= options_.max_queued) {
      return core::unavailable("event " + event.reason + " for " + object.kind.value_or("") + " " +
                               object.name.value_or("") + " dropped: " +
                               std::to_string(queue_.size()) + " Events are waiting to be written");
    }
    queue_.push_back(std::move(event));
  }
  queue_cv_.notify_all();
  return core::Status::Ok();
}

core::Status EventRecorder::write(const Pending& event) {
  std::lock_guard lock(write_mu_);
  const std::string key =
      aggregationKey(event.object, event.type, event.reason, event.message, options_);
  auto it = seen_.find(key);
  if (it == seen_.end()) return create(key, event);

  Seen seen = it->second;
  const int32_t count = seen.count + 1;
  nlohmann::json patch = {
      {"count", count}, {"lastTimestamp", Time(event.when).toString()}, {"message", event.message}};
  ResourceClient<Event> events(client_, kEvents, seen.namespace_name);
  ApiResult<Event> patched = events.patch(seen.name, PatchType::kStrategicMerge, patch);
  if (!patched.ok() && patched.error().isNotFound()) {
    return create(key, event);  // it expired: start a new series
  }
  if (!patched.ok()) {
    return patched.status().withContext("event " + event.reason + " (x" + std::to_string(count) +
                                        ")");
  }
  seen.count = count;
  remember(key, std::move(seen));
  return core::Status::Ok();
}

}  // namespace ringmaster::kube
