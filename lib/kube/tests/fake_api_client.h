#pragma once
// FakeApiClient: a scripted ApiClient for unit tests. Each expected call is queued with its
// answer; calls must arrive in order and match verb and path (a mismatch fails the test and is
// answered with an Internal error). Watches deliver their scripted lines synchronously inside
// watch(), then onClose when a close status was scripted (otherwise the stream stays open).
// Every request is recorded in calls().
//
// Thread-safety: all methods lock one mutex. Ownership: plain value owned by the test.

#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/api_client.h"

namespace ringmaster::kube::testing {

inline ApiResponse jsonResponse(int code, std::string body, HeaderList headers = {}) {
  headers.emplace_back("Content-Type", "application/json");
  return ApiResponse{code, std::move(headers), std::move(body)};
}

inline ApiResponse statusResponse(int code, const std::string& reason, const std::string& message,
                                  HeaderList headers = {}) {
  return jsonResponse(code, encodeText(ApiStatus::failure(code, reason, message)),
                      std::move(headers));
}

class FakeApiClient : public ApiClient {
 public:
  struct Expectation {
    Verb verb = Verb::kGet;
    std::string path;
    bool is_watch = false;
    core::Result<ApiResponse> response = ApiResponse{200, {}, "{}"};
    std::vector<std::string> lines;     // watch only
    std::optional<core::Status> close;  // watch only: nullopt keeps it open
  };

  void expect(Verb verb, std::string path, core::Result<ApiResponse> response) {
    std::lock_guard lock(mu_);
    Expectation e;
    e.verb = verb;
    e.path = std::move(path);
    e.response = std::move(response);
    script_.push_back(std::move(e));
  }
  // A watch answered 200 whose stream carries `lines`, then ends with `close` (if given).
  void expectWatch(std::string path, std::vector<std::string> lines,
                   std::optional<core::Status> close) {
    std::lock_guard lock(mu_);
    Expectation e;
    e.path = std::move(path);
    e.is_watch = true;
    e.lines = std::move(lines);
    e.close = std::move(close);
    script_.push_back(std::move(e));
  }
  // A watch refused with `response` (non-2xx) or a transport error.
  void expectWatchFailure(std::string path, core::Result<ApiResponse> response) {
    std::lock_guard lock(mu_);
    Expectation e;
    e.path = std::move(path);
    e.is_watch = true;
    e.response = std::move(response);
    script_.push_back(std::move(e));
  }

  core::Result<ApiResponse> request(const ApiRequest& request) override {
    std::optional<Expectation> e = next(request, false);
    if (!e) return core::internalError("unexpected request " + request.path);
    return e->response;
  }

  ApiResult<std::unique_ptr<WatchStream>> watch(const ApiRequest& request,
                                                WatchSink& sink) override {
    std::optional<Expectation> e = next(request, true);
    if (!e) return ApiError::fromStatus(core::internalError("unexpected watch " + request.path));
    if (!e->response.ok()) return ApiError::fromStatus(e->response.status());
    if (e->response->status_code != 200) return ApiError::fromResponse("watch", *e->response);
    for (const std::string& line : e->lines) sink.onLine(line);
    if (e->close) sink.onClose(*e->close);
    auto stream = std::make_unique<Stream>();
    std::lock_guard lock(mu_);
    ++open_watches_;
    stream->owner = this;
    return std::unique_ptr<WatchStream>(std::move(stream));
  }

  const std::string& defaultNamespace() const override { return namespace_; }

  std::vector<ApiRequest> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  size_t remaining() const {
    std::lock_guard lock(mu_);
    return script_.size();
  }
  int openWatches() const {
    std::lock_guard lock(mu_);
    return open_watches_;
  }

 private:
  struct Stream : WatchStream {
    FakeApiClient* owner = nullptr;
    bool cancelled = false;
    void cancel() override {
      if (cancelled) return;
      cancelled = true;
      std::lock_guard lock(owner->mu_);
      --owner->open_watches_;
    }
    ~Stream() override { cancel(); }
  };

  std::optional<Expectation> next(const ApiRequest& request, bool is_watch) {
    std::lock_guard lock(mu_);
    calls_.push_back(request);
    if (script_.empty()) {
      ADD_FAILURE() << "unexpected " << verbName(request.verb) << " " << request.path;
      return std::nullopt;
    }
    Expectation e = std::move(script_.front());
    script_.pop_front();
    if (e.is_watch != is_watch || e.path != request.path || (!is_watch && e.verb != request.verb)) {
      ADD_FAILURE() << "expected " << (e.is_watch ? "WATCH" : verbName(e.verb)) << " " << e.path
                    << ", got " << (is_watch ? "WATCH" : verbName(request.verb)) << " "
                    << request.path;
      return std::nullopt;
    }
    return e;
  }

  mutable std::mutex mu_;
  std::deque<Expectation> script_;
  std::vector<ApiRequest> calls_;
  int open_watches_ = 0;
  std::string namespace_ = "default";
};

// The value of query parameter `name` in `request`, or "" when absent.
inline std::string queryParam(const ApiRequest& request, std::string_view name) {
  for (const auto& [key, value] : request.query) {
    if (key == name) return value;
  }
  return {};
}

}  // namespace ringmaster::kube::testing
