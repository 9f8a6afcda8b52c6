#include "local/store/watch.h"

namespace ringmaster::local {

ObjectPtr makeStoredObject(nlohmann::json object, uint64_t rv) {
  auto stored = std::make_shared<StoredObject>();
  stored->text = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  stored->object = std::move(object);
  stored->resource_version = rv;
  return stored;
}

std::string_view watchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "ERROR";
}

std::string WatchEvent::line() const {
  std::string out = "{\"type\":\"";
  out += watchEventTypeName(type);
  out += "\",\"object\":";
  out += object ? object->text : std::string("null");
  out += "}\n";
  return out;
}

std::optional<WatchEvent> Watch::next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return std::nullopt;
  WatchEvent event = std::move(queue_.front());
  queue_.pop_front();
  if (initial_ > 0) --initial_;
  return event;
}

void Watch::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    queue_.clear();
    initial_ = 0;
  }
  cv_.notify_all();
}

bool Watch::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_ && queue_.empty();
}

bool Watch::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

bool Watch::overflowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return overflowed_;
}

bool Watch::push(WatchEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    if (queue_.size() - initial_ >= capacity_) {
      overflowed_ = true;
      closed_ = true;
    } else {
      queue_.push_back(std::move(event));
    }
  }
  cv_.notify_all();
  return !overflowed();
}

void Watch::pushInitial(WatchEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    queue_.push_back(std::move(event));
    ++initial_;
  }
  cv_.notify_all();
}

void Watch::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace ringmaster::local
