#pragma once
// Watcher<T>: list+watch of one resource as an explicit state machine (as kube-runtime's
// watcher is). Each step() makes one transition:
//
//   kEmpty     LIST (selectors; no resourceVersion: a consistent read)
//                ok    -> handler.relisted(the items that decode, those that do not);
//                         rv = list rv; -> kListing
//                error -> backoff, stay kEmpty
//   kListing   (listed, no watch open) WATCH from rv with timeoutSeconds drawn from
//              [min_watch_timeout, max_watch_timeout] and allowWatchBookmarks=true
//                ok                -> kWatching
//                410 Gone          -> kEmpty (relist at once)
//                other error       -> backoff (at least Retry-After), stay kListing
//   kWatching  takes the lines that arrived (waits up to `poll` for the first)
//                ADDED/MODIFIED/DELETED -> rv = object's rv; handler.event(e), or
//                                          handler.undecodable(e) when the object does not
//                                          decode as T (the watch goes on)
//                BOOKMARK               -> rv = bookmark's rv (no handler call)
//                ERROR 410 (Expired)    -> cancel; kEmpty (relist at once)
//                other ERROR, bad line  -> cancel; backoff; kListing
//                stream ended cleanly   -> kListing (re-watch at once from rv)
//                stream broke           -> backoff; kListing
//
// Backoff doubles from initial_backoff to max_backoff per consecutive failure (plus up to
// backoff_jitter of itself, so that every watcher of a restarted server does not come back at
// once) and resets on a successful list, a received event or a clean end of a watch. step() never
// sleeps: it returns how long the caller should wait; run() does the waiting, interruptibly.
//
// Ownership: owns its ResourceClient (which borrows an ApiClient that must outlive the watcher)
// and the open WatchStream. Thread-safety: not thread-safe; one thread calls step()/run(), and
// the handler runs on that thread (never on a transport thread). Failure: errors never escape;
// they are logged (WATCH), kept in lastError(), and turned into backoff. An object that does
// not decode as T fails neither the list nor the watch: every item is decoded on its own, and
// one that does not decode goes to the handler apart, with its error (a line per object).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <vector>

#include "ringmaster/core/backoff.h"
#include "ringmaster/core/log.h"
#include "ringmaster/kube/resource_client.h"
#include "ringmaster/kube/watch_event.h"

namespace ringmaster::kube {

namespace detail {
// Watch lines handed from the transport thread to the stepping thread, at most about
// `max_bytes` of them waiting: past that, onLine() blocks the transport thread until the
// stepping thread takes them, so a consumer that falls behind slows the stream (TCP flow control
// and then the server's own per-watch buffer) instead of growing this process without bound,
// as a reflector that reads its stream itself does. The bound holds from bound() on: while
// the stepping thread is still opening the watch it cannot take lines, and a transport may hand
// it the first ones on that very thread. abandon() releases a blocked producer for good: the
// watcher abandons a queue before it cancels the stream, whose lock the producer holds.
class LineQueue : public WatchSink {
 public:
  explicit LineQueue(size_t max_bytes) : max_bytes_(max_bytes) {}

  void onLine(std::string_view line) override {
    std::unique_lock lock(mu_);
    // One line always fits, however long: the queue bounds the backlog, not a line.
    space_.wait(lock, [&] {
      return !bounded_ || abandoned_ || bytes_ == 0 || bytes_ + line.size() <= max_bytes_;
    });
    if (abandoned_) return;
    lines_.emplace_back(line);
    bytes_ += line.size();
    peak_bytes_ = std::max(peak_bytes_, bytes_);
    cv_.notify_all();
  }
  void onClose(const core::Status& status) override {
    std::lock_guard lock(mu_);
    closed_ = status;
    cv_.notify_all();
  }
  // Waits up to `timeout` (or until `stop`) for a line or the close, then takes every line
  // and the close status (when the stream has ended).
  void take(std::chrono::milliseconds timeout, std::stop_token stop,
            std::vector<std::string>& lines, std::optional<core::Status>& closed) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop, timeout, [&] { return !lines_.empty() || closed_.has_value(); });
    lines.assign(std::make_move_iterator(lines_.begin()), std::make_move_iterator(lines_.end()));
    lines_.clear();
    bytes_ = 0;
    closed = closed_;
    space_.notify_all();
  }
  // From now on a producer waits while max_bytes are waiting (the watch is open).
  void bound() {
    std::lock_guard lock(mu_);
    bounded_ = true;
  }
  // Lines from now on are dropped and a blocked onLine() returns.
  void abandon() {
    std::lock_guard lock(mu_);
    abandoned_ = true;
    lines_.clear();
    bytes_ = 0;
    space_.notify_all();
  }
  // The most bytes that waited at once (tests, diagnostics).
  size_t peakBytes() const {
    std::lock_guard lock(mu_);
    return peak_bytes_;
  }

 private:
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;  // a line or the close arrived
  std::condition_variable space_;   // lines were taken, or the queue was abandoned
  std::deque<std::string> lines_;
  size_t bytes_ = 0;
  size_t peak_bytes_ = 0;
  bool bounded_ = false;
  bool abandoned_ = false;
  std::optional<core::Status> closed_;
};
}  // namespace detail

template <class T>
class Watcher {
 public:
  enum class State { kEmpty, kListing, kWatching };

  struct Handler {
    // The full state after a LIST: the items that decode as T, and those that do not (each
    // with its error set).
    std::function<void(std::vector<T> items, std::vector<RawObject> undecodable)> relisted;
    std::function<void(const WatchEvent<T>& event)> event;  // ADDED, MODIFIED, DELETED
    // ADDED, MODIFIED or DELETED of an object that does not decode as T (its error set).
    std::function<void(const WatchEvent<RawObject>& event)> undecodable;
    // Applied to each decoded object, in place, before the members above see it.
    std::function<void(T& object)> transform;
  };

  struct Options {
    std::string label_selector;
    std::string field_selector;
    std::chrono::seconds min_watch_timeout{300};
    std::chrono::seconds max_watch_timeout{600};
    std::chrono::milliseconds initial_backoff{200};
    std::chrono::milliseconds max_backoff{30'000};
    double backoff_jitter = 0.5;
    std::chrono::milliseconds poll{1'000};  // longest wait for watch lines in one step
    // Watch lines that may wait for this watcher's thread before the stream is slowed down.
    size_t max_buffered_bytes = 1 << 20;
    uint64_t seed = std::random_device{}();
  };

  Watcher(ResourceClient<T> client, Handler handler, Options options)
      : client_(std::move(client)),
        handler_(std::move(handler)),
        options_(std::move(options)),
        rng_(options_.seed) {}
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  ~Watcher() { closeStream(); }

  State state() const { return state_; }
  const std::string& resourceVersion() const { return resource_version_; }
  const core::Status& lastError() const { return last_error_; }

  // One transition; returns how long to wait before the next step (zero: at once).
  std::chrono::milliseconds step(std::stop_token stop = {}) {
    switch (state_) {
      case State::kEmpty:
        return list();
      case State::kListing:
        return startWatch();
      case State::kWatching:
        return consume(stop);
    }
    return std::chrono::milliseconds(0);
  }

  // Steps until `stop` is requested, waiting out backoffs.
  void run(std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    while (!stop.stop_requested()) {
      std::chrono::milliseconds delay = step(stop);
      if (delay.count() > 0) {
        std::unique_lock lock(mu);
        cv.wait_for(lock, stop, delay, [] { return false; });
      }
    }
    closeStream();
  }

 private:
  std::chrono::milliseconds list() {
    ListOptions options;
    options.label_selector = options_.label_selector;
    options.field_selector = options_.field_selector;
    ApiResult<List<RawObject>> listed = client_.listRaw(options);
    if (!listed.ok()) return fail(listed.error(), "list");
    resource_version_ = listed->metadata.resource_version;
    failures_ = 0;
    state_ = State::kListing;
    std::vector<T> items;
    std::vector<RawObject> undecodable;
    items.reserve(listed->items.size());
    for (RawObject& raw : listed->items) {
      core::Result<T> item = decodeItem(raw);
      if (item.ok()) {
        if (handler_.transform) handler_.transform(*item);
        items.push_back(std::move(item).value());
      } else {
        undecodable.push_back(std::move(raw));
      }
    }
    RM_LOG(DEBUG, WATCH) << client_.type().plural << ": listed " << listed->items.size()
                         << " at resourceVersion " << resource_version_;
    if (handler_.relisted) handler_.relisted(std::move(items), std::move(undecodable));
    return std::chrono::milliseconds(0);
  }

  std::chrono::milliseconds startWatch() {
    WatchOptions options;
    options.label_selector = options_.label_selector;
    options.field_selector = options_.field_selector;
    options.resource_version = resource_version_;
    options.allow_watch_bookmarks = true;
    std::uniform_int_distribution<int64_t> timeout(options_.min_watch_timeout.count(),
                                                   options_.max_watch_timeout.count());
    options.timeout_seconds = static_cast<int>(timeout(rng_));
    queue_ = std::make_shared<detail::LineQueue>(options_.max_buffered_bytes);
    ApiResult<std::unique_ptr<WatchStream>> stream = client_.watch(options, *queue_);
    if (!stream.ok()) {
      if (stream.error().isGone()) return relist("watch: " + stream.status().message());
      return fail(stream.error(), "watch");
    }
    stream_ = std::move(stream).value();
    queue_->bound();
    state_ = State::kWatching;
    return std::chrono::milliseconds(0);
  }

  std::chrono::milliseconds consume(std::stop_token stop) {
    std::vector<std::string> lines;
    std::optional<core::Status> closed;
    queue_->take(options_.poll, stop, lines, closed);
    for (const std::string& line : lines) {
      core::Result<WatchEvent<RawObject>> event = decodeRawWatchEvent(line);
      if (!event.ok()) {
        closeStream();
        state_ = State::kListing;
        return fail(ApiError::fromStatus(event.status()), "watch event");
      }
      switch (event->type) {
        case WatchEventType::kBookmark:
          resource_version_ = event->object.metadata.resource_version;
          break;
        case WatchEventType::kError:
          closeStream();
          if (event->error.code.value_or(0) == 410) return relist(event->error.message);
          state_ = State::kListing;
          return fail(
              ApiError::fromStatus(core::unavailable("watch ERROR event: " + event->error.message)),
              "watch");
        default:
          resource_version_ = event->object.metadata.resource_version;
          failures_ = 0;
          deliver(*event);
      }
    }
    if (closed) {
      closeStream();
      state_ = State::kListing;
      if (!closed->ok()) return fail(ApiError::fromStatus(*closed), "watch stream");
      failures_ = 0;  // the server ended it (timeoutSeconds): watch again from rv
    }
    return std::chrono::milliseconds(0);
  }

  // Hands an ADDED, MODIFIED or DELETED on as a WatchEvent<T>, or as undecodable.
  void deliver(WatchEvent<RawObject>& raw) {
    core::Result<T> object = decodeItem(raw.object);
    if (!object.ok()) {
      if (handler_.undecodable) handler_.undecodable(raw);
      return;
    }
    WatchEvent<T> event;
    event.type = raw.type;
    event.object = std::move(object).value();
    if (handler_.transform) handler_.transform(event.object);
    if (handler_.event) handler_.event(event);
  }

  // `raw` as T; when it does not decode, raw.error says why (and a line is logged).
  core::Result<T> decodeItem(RawObject& raw) const {
    core::Result<T> item = decode<T>(raw.object);
    if (!item.ok()) {
      raw.error = item.status();
      const std::string& ns = raw.metadata.namespace_name;
      RM_LOG(WARN, WATCH) << client_.type().plural << ": " << (ns.empty() ? "" : ns + "/")
                          << raw.metadata.name
                          << " does not decode, kept out of the cache: " << raw.error.message();
    }
    return item;
  }

  std::chrono::milliseconds relist(const std::string& why) {
    RM_LOG(INFO, WATCH) << client_.type().plural << ": resourceVersion " << resource_version_
                        << " expired (" << why << "), relisting";
    closeStream();
    resource_version_.clear();
    state_ = State::kEmpty;
    return std::chrono::milliseconds(0);
  }

  std::chrono::milliseconds fail(const ApiError& error, const char* what) {
    last_error_ = error.status();
    ++failures_;
    std::chrono::milliseconds delay = core::jittered(
        core::backoffDelay({options_.initial_backoff, options_.max_backoff, 0}, failures_),
        options_.backoff_jitter, std::uniform_real_distribution<double>(0, 1)(rng_));
    if (error.retryAfter()) delay = std::max<std::chrono::milliseconds>(delay, *error.retryAfter());
    RM_LOG(WARN, WATCH) << client_.type().plural << ": " << what << " failed ("
                        << error.status().toString() << "); retry in " << delay.count() << " ms";
    return delay;
  }

  void closeStream() {
    // First release a transport thread blocked on a full queue: it holds the stream's lock.
    if (queue_) queue_->abandon();
    if (stream_) stream_->cancel();
    stream_.reset();
  }

  ResourceClient<T> client_;
  Handler handler_;
  Options options_;
  std::mt19937_64 rng_;
  State state_ = State::kEmpty;
  std::string resource_version_;
  std::shared_ptr<detail::LineQueue> queue_;
  std::unique_ptr<WatchStream> stream_;
  int failures_ = 0;
  core::Status last_error_;
};

}  // namespace ringmaster::kube
