#pragma once
// ResourceClient<T>: typed REST calls on one resource (pods, leases, trainingjobs, ...) through
// an ApiClient. Objects go in and out as typed structs through their codecs (codec.h); callers
// never handle JSON text. Paths follow the API server's layout:
//   core group   /api/v1[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]
//   named group  /apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]
//
// Ownership: borrows the ApiClient, which must outlive it. Thread-safety: const methods only;
// safe to share between threads when the ApiClient is. Failure: every call returns an ApiError
// naming the call ("PUT /api/v1/namespaces/default/pods/web-0: ...") with the server's Status
// kept; a reply that does not decode as T is an ApiError with http code 0 and InvalidArgument.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/list.h"
#include "ringmaster/kube/raw_object.h"

namespace ringmaster::kube {

struct ResourceType {
  std::string group;    // "" for the core group
  std::string version;  // "v1"
  std::string plural;   // "pods"
  bool namespaced = true;
};

// Paths for `type`; an empty namespace_name means all namespaces (or a cluster-scoped type).
std::string collectionPath(const ResourceType& type, std::string_view namespace_name);
std::string objectPath(const ResourceType& type, std::string_view namespace_name,
                       std::string_view name, std::string_view subresource = {});

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" = most recent (quorum read)
  std::optional<int64_t> limit;
  std::string continue_token;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // watch changes after this version
  int timeout_seconds = 300;     // the server ends the watch after this long
  bool allow_watch_bookmarks = true;
};

// kStrategicMerge is for built-in kinds only (client-go's Event correlator uses it).
enum class PatchType { kMerge, kJson, kStrategicMerge };

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string propagation_policy;  // "Foreground" | "Background" | "Orphan" | ""
  // Delete only the object with this uid ("": any): a 409 Conflict when the name now belongs to
  // a newer object, which a delete by name alone would take with it.
  std::string precondition_uid;
};

namespace detail {
core::Result<nlohmann::json> parseBody(const ApiResponse& response);
void addListQuery(const ListOptions& options, ApiRequest& request);
void addWatchQuery(const WatchOptions& options, ApiRequest& request);
// A DELETE's DeleteOptions, as its body.
void addDeleteOptions(const DeleteOptions& options, ApiRequest& request);
// Call + decode the JSON body as T, naming the call on a decode error.
template <class T>
ApiResult<T> callAndDecode(ApiClient& client, const ApiRequest& request) {
  ApiResult<ApiResponse> response = callApi(client, request);
  if (!response.ok()) return response.error();
  core::Result<nlohmann::json> json = parseBody(*response);
  core::Result<T> out = json.ok() ? decode<T>(*json) : core::Result<T>(json.status());
  if (!out.ok()) {
    return ApiError::fromStatus(out.status().withContext(std::string(verbName(request.verb)) + " " +
                                                         request.path + ": reply"));
  }
  return std::move(out).value();
}
}  // namespace detail

template <class T>
class ResourceClient {
 public:
  // `namespace_name` "" addresses every namespace on list/watch; for object calls the
  // object's own metadata.namespace is used then.
  ResourceClient(ApiClient& client, ResourceType type, std::string namespace_name = {},
                 std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : client_(client),
        type_(std::move(type)),
        namespace_(type_.namespaced ? std::move(namespace_name) : std::string()),
        timeout_(timeout) {}

  const ResourceType& type() const { return type_; }
  const std::string& namespaceName() const { return namespace_; }

  ApiResult<T> get(std::string_view name) const {
    return detail::callAndDecode<T>(client_, make(Verb::kGet, objectPath(type_, namespace_, name)));
  }

  ApiResult<List<T>> list(const ListOptions& options = {}) const {
    ApiRequest request = make(Verb::kGet, collectionPath(type_, namespace_));
    detail::addListQuery(options, request);
    return detail::callAndDecode<List<T>>(client_, request);
  }

  // The same list with each item left undecoded (raw_object.h), so that the caller decodes
  // every item on its own and one bad item does not fail the others.
  ApiResult<List<RawObject>> listRaw(const ListOptions& options = {}) const {
    ApiRequest request = make(Verb::kGet, collectionPath(type_, namespace_));
    detail::addListQuery(options, request);
    return detail::callAndDecode<List<RawObject>>(client_, request);
  }

  ApiResult<T> create(const T& object) const {
    ApiRequest request = make(Verb::kPost, collectionPath(type_, nsOf(object)));
    request.body = encodeText(withTypeMeta(object));
    return detail::callAndDecode<T>(client_, request);
  }

  // PUT of the whole object; a stale metadata.resourceVersion gets 409 Conflict.
  ApiResult<T> update(const T& object) const { return put(object, {}); }
  ApiResult<T> updateStatus(const T& object) const { return put(object, "status"); }

  // Merge patch takes a JSON object; JSON patch (RFC 6902) an array of operations.
  ApiResult<T> patch(std::string_view name, PatchType type, const nlohmann::json& patch,
                     std::string_view subresource = {}) const {
    ApiRequest request = make(Verb::kPatch, objectPath(type_, namespace_, name, subresource));
    request.content_type = type == PatchType::kMerge  ? kMergePatchContentType
                           : type == PatchType::kJson ? kJsonPatchContentType
                                                      : kStrategicMergePatchContentType;
    request.body = dumpJson(patch);
    return detail::callAndDecode<T>(client_, request);
  }

  ApiResult<NoContent> remove(std::string_view name, const DeleteOptions& options = {}) const {
    ApiRequest request = make(Verb::kDelete, objectPath(type_, namespace_, name));
    detail::addDeleteOptions(options, request);
    ApiResult<ApiResponse> response = callApi(client_, request);
    if (!response.ok()) return response.error();
    return NoContent{};
  }

  // Lines reach `sink` as they arrive; decode them with decodeText<WatchEvent<T>>. The
  // stream's silence limit is the watch timeout plus a minute.
  ApiResult<std::unique_ptr<WatchStream>> watch(const WatchOptions& options,
                                                WatchSink& sink) const {
    ApiRequest request = make(Verb::kGet, collectionPath(type_, namespace_));
    detail::addWatchQuery(options, request);
    request.timeout = std::chrono::seconds(options.timeout_seconds + 60);
    return client_.watch(request, sink);
  }

 private:
  ApiRequest make(Verb verb, std::string path) const {
    ApiRequest request;
    request.verb = verb;
    request.path = std::move(path);
    request.timeout = timeout_;
    return request;
  }
  std::string nsOf(const T& object) const {
    return namespace_.empty() && type_.namespaced ? object.metadata.namespace_name : namespace_;
  }
  static T withTypeMeta(T object) {
    if (object.api_version.empty() || object.kind.empty()) setTypeMeta(object);
    return object;
  }
  ApiResult<T> put(const T& object, std::string_view subresource) const {
    ApiRequest request =
        make(Verb::kPut, objectPath(type_, nsOf(object), object.metadata.name, subresource));
    request.body = encodeText(withTypeMeta(object));
    return detail::callAndDecode<T>(client_, request);
  }

  ApiClient& client_;
  ResourceType type_;
  std::string namespace_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ringmaster::kube
