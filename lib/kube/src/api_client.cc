#include "ringmaster/kube/api_client.h"

#include <cctype>
#include <charconv>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/resource_client.h"

namespace ringmaster::kube {
namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// Path segments: unreserved characters stay, everything else is %XX.
std::string encodeSegment(std::string_view in) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == ':') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string_view verbName(Verb verb) {
  switch (verb) {
    case Verb::kGet:
      return "GET";
    case Verb::kPost:
      return "POST";
    case Verb::kPut:
      return "PUT";
    case Verb::kPatch:
      return "PATCH";
    case Verb::kDelete:
      return "DELETE";
  }
  return "GET";
}

const std::string* ApiResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) return &value;
  }
  return nullptr;
}

core::Code codeForHttpStatus(int http_code, std::string_view reason) {
  switch (http_code) {
    case 400:
    case 422:
      return core::Code::kInvalidArgument;
    case 404:
      return core::Code::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? core::Code::kAlreadyExists : core::Code::kUnavailable;
    case 408:
    case 504:
      return core::Code::kTimeout;
    case 410:
    case 429:
      return core::Code::kUnavailable;
    default:
      return http_code >= 500 ? core::Code::kUnavailable : core::Code::kInternal;
  }
}

ApiError ApiError::fromResponse(std::string_view what, const ApiResponse& response) {
  ApiError error;
  error.http_code_ = response.status_code;
  core::Result<ApiStatus> decoded = decodeText<ApiStatus>(response.body);
  if (decoded.ok() && decoded->kind == ApiStatus::kKind) {
    error.api_status_ = std::move(decoded).value();
  } else {
    // A plain-text body ("404 page not found") or none: keep its text as the message.
    error.api_status_ = ApiStatus::failure(response.status_code, "", trim(response.body));
  }
  if (const std::string* retry = response.header("Retry-After")) {
    int seconds = 0;
    auto [ptr, ec] = std::from_chars(retry->data(), retry->data() + retry->size(), seconds);
    if (ec == std::errc() && seconds >= 0) error.retry_after_ = std::chrono::seconds(seconds);
  }
  std::string message = std::string(what) + ": HTTP " + std::to_string(response.status_code);
  if (!error.api_status_.reason.empty()) message += " " + error.api_status_.reason;
  if (!error.api_status_.message.empty()) message += ": " + error.api_status_.message;
  error.status_ = core::Status(codeForHttpStatus(response.status_code, error.api_status_.reason),
                               std::move(message));
  return error;
}

ApiError ApiError::fromStatus(core::Status status) {
  ApiError error;
  if (status.ok()) status = core::internalError("ApiError built from an ok Status");
  error.api_status_ = ApiStatus::failure(0, "", status.message());
  error.status_ = std::move(status);
  return error;
}

ApiResult<ApiResponse> callApi(ApiClient& client, const ApiRequest& request) {
  const std::string what = std::string(verbName(request.verb)) + " " + request.path;
  core::Result<ApiResponse> response = client.request(request);
  if (!response.ok()) return ApiError::fromStatus(response.status().withContext(what));
  if (response->status_code < 200 || response->status_code > 299) {
    return ApiError::fromResponse(what, *response);
  }
  return std::move(response).value();
}

// Built by appending: GCC 12 flags `"/" + std::string(...)` with a false -Wrestrict.
std::string collectionPath(const ResourceType& type, std::string_view namespace_name) {
  std::string path = type.group.empty() ? "/api/" : "/apis/";
  if (!type.group.empty()) path.append(type.group).append("/");
  path.append(type.version);
  if (type.namespaced && !namespace_name.empty()) {
    path.append("/namespaces/").append(encodeSegment(namespace_name));
  }
  return path.append("/").append(type.plural);
}

std::string objectPath(const ResourceType& type, std::string_view namespace_name,
                       std::string_view name, std::string_view subresource) {
  std::string path = collectionPath(type, namespace_name);
  path.append("/").append(encodeSegment(name));
  if (!subresource.empty()) path.append("/").append(subresource);
  return path;
}

namespace detail {

core::Result<nlohmann::json> parseBody(const ApiResponse& response) {
  return parseJson(response.body);
}

void addListQuery(const ListOptions& options, ApiRequest& request) {
  auto& q = request.query;
  if (!options.label_selector.empty()) q.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) q.emplace_back("fieldSelector", options.field_selector);
  if (!options.resource_version.empty()) {
    q.emplace_back("resourceVersion", options.resource_version);
  }
  if (options.limit) q.emplace_back("limit", std::to_string(*options.limit));
  if (!options.continue_token.empty()) q.emplace_back("continue", options.continue_token);
}

void addWatchQuery(const WatchOptions& options, ApiRequest& request) {
  auto& q = request.query;
  q.emplace_back("watch", "true");
  if (!options.label_selector.empty()) q.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) q.emplace_back("fieldSelector", options.field_selector);
  if (!options.resource_version.empty()) {
    q.emplace_back("resourceVersion", options.resource_version);
  }
  q.emplace_back("timeoutSeconds", std::to_string(options.timeout_seconds));
  if (options.allow_watch_bookmarks) q.emplace_back("allowWatchBookmarks", "true");
}

void addDeleteOptions(const DeleteOptions& options, ApiRequest& request) {
  // In the body, as client-go sends them: kube-apiserver reads a DELETE's options from its body
  // when there is one and only then from the query, so the two are never mixed.
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty()) {
    body["preconditions"] = {{"uid", options.precondition_uid}};
  }
  request.body = dumpJson(body);
}

}  // namespace detail
}  // namespace ringmaster::kube
