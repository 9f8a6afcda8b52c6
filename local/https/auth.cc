#include "local/https/auth.h"

#include <openssl/crypto.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace ringmaster::local {

namespace {

using OrderedJson = nlohmann::ordered_json;

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string lowerMethod(const std::string& method) {
  std::string out = method;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

RequestInfo requestInfo(const Request& request) {
  RequestInfo info;
  info.verb = lowerMethod(request.method);
  std::vector<std::string> parts = splitPath(request.path);
  size_t at = 0;
  if (parts.size() >= 3 && parts[0] == "apis") {
    info.group = parts[1];
    at = 3;
  } else if (parts.size() >= 2 && parts[0] == "api") {
    at = 2;
  } else {
    return info;
  }
  if (at >= parts.size()) return info;
  info.resource_request = true;
  bool watch_path = false;
  if (parts[at] == "watch") {
    watch_path = true;
    ++at;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<std::ptrdiff_t>(at), parts.end());
  if (!rest.empty() && rest[0] == "namespaces" && rest.size() > 1) {
    info.namespace_name = rest[1];
    if (rest.size() > 2 && rest[2] != "status" && rest[2] != "finalize") {
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (!rest.empty()) info.resource = rest[0];
  if (rest.size() > 1) info.name = rest[1];
  if (rest.size() > 2) info.subresource = rest[2];
  const std::string& m = request.method;
  if (m == "POST") {
    info.verb = "create";
  } else if (m == "GET" || m == "HEAD") {
    info.verb = "get";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = "delete";
  }
  const std::string* watch = request.queryParam("watch");
  bool watch_param = watch != nullptr && (*watch == "true" || *watch == "1");
  if (watch_path || (info.verb == "get" && info.name.empty() && watch_param)) {
    info.verb = "watch";
  } else if (info.verb == "get" && info.name.empty()) {
    info.verb = "list";
  } else if (info.verb == "delete" && info.name.empty()) {
    info.verb = "deletecollection";
  }
  return info;
}

BearerAuthenticator::Result BearerAuthenticator::check(const Request& request) const {
  const std::string* header = request.headers.find("Authorization");
  if (header == nullptr) return {Decision::kAnonymous, std::string(kAnonymousUser)};
  std::string_view value = *header;
  size_t space = value.find(' ');
  if (space == std::string_view::npos || !equalsIgnoreCase(value.substr(0, space), "bearer")) {
    // another scheme: the token authenticator does not apply
    return {Decision::kAnonymous, std::string(kAnonymousUser)};
  }
  std::string_view token = value.substr(space + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (!token_.empty() && token.size() == token_.size() &&
      CRYPTO_memcmp(token.data(), token_.data(), token.size()) == 0) {
    return {Decision::kAdmin, std::string(kAdminUser)};
  }
  if (token_user_) {
    if (auto user = token_user_(token)) return {Decision::kUser, std::move(*user)};
  }
  return {Decision::kInvalidToken, ""};
}

bool isPublicPath(std::string_view path) {
  for (std::string_view prefix : {"/healthz", "/livez", "/readyz"}) {
    if (path == prefix || (path.starts_with(prefix) && path[prefix.size()] == '/')) return true;
  }
  return path == "/version" || path == "/version/";
}

std::string statusBody(int code, std::string_view reason, std::string_view message,
                       std::string_view details_json) {
  OrderedJson status = {{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"metadata", OrderedJson::object()},
                        {"status", "Failure"},
                        {"message", message}};
  if (!reason.empty()) status["reason"] = reason;
  if (!details_json.empty()) {
    status["details"] = OrderedJson::parse(details_json, nullptr, /*allow_exceptions=*/false);
  }
  status["code"] = code;
  return status.dump() + "\n";  // Go's json.Encoder ends every body with a newline
}

std::string unauthorizedBody() { return statusBody(401, "Unauthorized", "Unauthorized"); }

std::string anonymousForbiddenBody(const Request& request) {
  return forbiddenBody(request, kAnonymousUser);
}

std::string forbiddenBody(const Request& request, std::string_view user_name) {
  RequestInfo info = requestInfo(request);
  std::string user = "User " + OrderedJson(std::string(user_name)).dump();
  OrderedJson details = OrderedJson::object();
  std::string message;
  if (!info.resource_request) {
    message =
        "forbidden: " + user + " cannot " + info.verb + " path " + OrderedJson(request.path).dump();
  } else {
    std::string resource = info.resource;
    if (!info.subresource.empty()) resource += "/" + info.subresource;
    std::string qualified = info.resource + (info.group.empty() ? "" : "." + info.group);
    std::string reason = user + " cannot " + info.verb + " resource " +
                         OrderedJson(resource).dump() + " in API group " +
                         OrderedJson(info.group).dump();
    reason += info.namespace_name.empty()
                  ? " at the cluster scope"
                  : " in the namespace " + OrderedJson(info.namespace_name).dump();
    message = qualified + (info.name.empty() ? "" : " " + OrderedJson(info.name).dump()) +
              " is forbidden: " + reason;
    if (!info.name.empty()) details["name"] = info.name;
    if (!info.group.empty()) details["group"] = info.group;
    details["kind"] = info.resource;
  }
  return statusBody(403, "Forbidden", message, details.dump());
}

}  // namespace ringmaster::local
