#pragma once
// ApiClient: the transport seam between lib/kube and an HTTP library. Everything
// above it (ResourceClient, Watcher, leader election, events) speaks ApiRequest/ApiResponse;
// the libcurl implementation lives in src/ and is made by makeApiClient() (client_factory.h).
//
//   request()  one HTTP exchange with a deadline; any HTTP status is a *response* (the caller or
//              ApiError decides what it means); only transport failures (connect, TLS, timeout,
//              cancel) are errors.
//   watch()    a streaming GET whose body arrives line by line through a WatchSink. A non-2xx
//              answer is returned as an ApiError before any line is delivered.
//
// ApiError keeps what the API server said: the HTTP code, the decoded `Status` object (reason,
// message, details) and a core::Status for propagation. ApiResult<T> is a T or an ApiError; it
// converts to core::Result<T> and works with RM_ASSIGN_OR_RETURN.
//
// Thread-safety: ApiClient implementations are safe to call from many threads at once.
// WatchSink callbacks run on a transport thread, one at a time per stream, and must not block.
// Ownership: the caller owns the WatchSink and must keep it alive until the WatchStream is
// cancelled or destroyed; after cancel() returns no callback runs again.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_status.h"

namespace ringmaster::kube {

enum class Verb { kGet, kPost, kPut, kPatch, kDelete };
std::string_view verbName(Verb verb);  // "GET", ...

inline constexpr std::string_view kJsonContentType = "application/json";
inline constexpr std::string_view kMergePatchContentType = "application/merge-patch+json";
inline constexpr std::string_view kJsonPatchContentType = "application/json-patch+json";
inline constexpr std::string_view kStrategicMergePatchContentType =
    "application/strategic-merge-patch+json";

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct ApiRequest {
  Verb verb = Verb::kGet;
  std::string path;  // "/api/v1/namespaces/default/pods/web-0", already percent-encoded
  std::vector<std::pair<std::string, std::string>> query;  // encoded by the transport
  std::string body;
  std::string content_type;  // defaults to application/json when body is non-empty
  // Deadline for the whole call, retries included. For watch(): the longest silence tolerated
  // on the stream; it must exceed the watch's timeoutSeconds.
  std::chrono::milliseconds timeout{30'000};
};

struct ApiResponse {
  int status_code = 0;
  HeaderList headers;
  std::string body;
  // The first header called `name` (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

// A non-2xx answer, or a failure before any answer (http_code 0).
class ApiError {
 public:
  ApiError() = default;
  // From a response with a non-2xx code; the body is decoded as a Status when it is one,
  // otherwise its text (trimmed) becomes the message. `what` names the call ("GET /api/...").
  static ApiError fromResponse(std::string_view what, const ApiResponse& response);
  // From a transport failure or a decode error.
  static ApiError fromStatus(core::Status status);

  int httpCode() const { return http_code_; }
  const std::string& reason() const { return api_status_.reason; }  // "NotFound", ...
  const ApiStatus& apiStatus() const { return api_status_; }
  const core::Status& status() const { return status_; }
  // Retry-After of a 429/503, when the server sent one.
  std::optional<std::chrono::seconds> retryAfter() const { return retry_after_; }

  bool isNotFound() const { return http_code_ == 404; }
  bool isConflict() const { return http_code_ == 409 && reason() != "AlreadyExists"; }
  bool isAlreadyExists() const { return http_code_ == 409 && reason() == "AlreadyExists"; }
  bool isGone() const { return http_code_ == 410; }  // expired resourceVersion: relist
  bool isInvalid() const { return http_code_ == 422; }
  bool isTooManyRequests() const { return http_code_ == 429; }
  bool isUnauthorized() const { return http_code_ == 401; }
  bool isForbidden() const { return http_code_ == 403; }
  bool isServerError() const { return http_code_ >= 500; }
  bool isTransport() const { return http_code_ == 0; }

 private:
  int http_code_ = 0;
  ApiStatus api_status_;
  core::Status status_;
  std::optional<std::chrono::seconds> retry_after_;
};

// The core::Code an HTTP error maps to: 400/422 -> InvalidArgument, 404 -> NotFound,
// 409 AlreadyExists -> AlreadyExists, 408/504 -> Timeout, 409 Conflict/410/429/5xx ->
// Unavailable (retry after a re-read may help), 401/403 and the rest -> Internal.
core::Code codeForHttpStatus(int http_code, std::string_view reason);

template <class T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // Empty ApiError (http code 0, ok status) when ok().
  const ApiError& error() const {
    static const ApiError kNone;
    return ok() ? kNone : std::get<ApiError>(v_);
  }
  const core::Status& status() const { return error().status(); }
  operator core::Result<T>() && {  // NOLINT: implicit by design
    if (ok()) return std::get<T>(std::move(v_));
    return status();
  }

 private:
  std::variant<T, ApiError> v_;
};

// For calls whose success carries nothing (DELETE).
struct NoContent {};

// Receives a watch body. onLine gets each complete line without its '\n' (empty lines are
// skipped); onClose is called once when the stream ends: ok when the server ended it (watch
// timeoutSeconds), an error when it broke. Neither is called after WatchStream::cancel().
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void onLine(std::string_view line) = 0;
  virtual void onClose(const core::Status& status) = 0;
};

// An open watch. Destroying it cancels it.
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  // Stops the stream; after it returns the sink is not called again. Idempotent.
  virtual void cancel() = 0;
};

class ApiClient {
 public:
  virtual ~ApiClient() = default;
  virtual core::Result<ApiResponse> request(const ApiRequest& request) = 0;
  virtual ApiResult<std::unique_ptr<WatchStream>> watch(const ApiRequest& request,
                                                        WatchSink& sink) = 0;
  // The namespace of the configuration ("default" when none is set).
  virtual const std::string& defaultNamespace() const = 0;
};

// request() with non-2xx answers turned into an ApiError ("GET <path>: ...").
ApiResult<ApiResponse> callApi(ApiClient& client, const ApiRequest& request);

}  // namespace ringmaster::kube
