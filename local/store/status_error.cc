#include "local/store/status_error.h"

#include <string_view>

namespace ringmaster::local {

StatusError& StatusError::withDetails(std::string name, std::string group, std::string kind) {
  name_ = std::move(name);
  group_ = std::move(group);
  kind_ = std::move(kind);
  return *this;
}

StatusError& StatusError::withUid(std::string uid) {
  uid_ = std::move(uid);
  return *this;
}

StatusError& StatusError::addCause(StatusCause cause) {
  causes_.push_back(std::move(cause));
  return *this;
}

StatusError& StatusError::withRetryAfter(int seconds) {
  retry_after_ = seconds;
  return *this;
}

StatusError& StatusError::withContinue(std::string token) {
  continue_ = std::move(token);
  return *this;
}

StatusError& StatusError::asSuccess() {
  success_ = true;
  code_ = 200;
  return *this;
}

nlohmann::ordered_json StatusError::ordered() const {
  nlohmann::ordered_json j;
  j["kind"] = "Status";
  j["apiVersion"] = "v1";
  j["metadata"] = nlohmann::ordered_json::object();
  if (!continue_.empty()) j["metadata"]["continue"] = continue_;
  j["status"] = success_ ? "Success" : "Failure";
  if (!message_.empty()) j["message"] = message_;
  if (!reason_.empty()) j["reason"] = reason_;
  nlohmann::ordered_json d = nlohmann::ordered_json::object();
  if (!name_.empty()) d["name"] = name_;
  if (!group_.empty()) d["group"] = group_;
  if (!kind_.empty()) d["kind"] = kind_;
  if (!uid_.empty()) d["uid"] = uid_;
  if (!causes_.empty()) {
    auto& arr = d["causes"] = nlohmann::ordered_json::array();
    for (const auto& c : causes_) {
      nlohmann::ordered_json cj = nlohmann::ordered_json::object();
      if (!c.reason.empty()) cj["reason"] = c.reason;
      if (!c.message.empty()) cj["message"] = c.message;
      if (!c.field.empty()) cj["field"] = c.field;
      arr.push_back(std::move(cj));
    }
  }
  if (retry_after_ > 0) d["retryAfterSeconds"] = retry_after_;
  if (!d.empty()) j["details"] = std::move(d);
  if (!success_) j["code"] = code_;
  return j;
}

std::string StatusError::bodyText() const {
  return ordered().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json StatusError::body() const { return nlohmann::json::parse(bodyText()); }

core::Status StatusError::toStatus() const {
  core::Code code = core::Code::kInternal;
  switch (code_) {
    case 400:
    case 422:
      code = core::Code::kInvalidArgument;
      break;
    case 404:
      code = core::Code::kNotFound;
      break;
    case 409:
      code = reason_ == "AlreadyExists" ? core::Code::kAlreadyExists : core::Code::kUnavailable;
      break;
    case 410:
      code = core::Code::kDataLoss;
      break;
    case 504:
      code = core::Code::kTimeout;
      break;
    default:
      break;
  }
  return {code, std::to_string(code_) + " " + reason_ + ": " + message_};
}

StatusError notFoundError(const ResourceKey& qr, const std::string& name) {
  StatusError e(404, "NotFound", qr.qualified() + " \"" + name + "\" not found");
  e.withDetails(name, qr.group, qr.resource);
  return e;
}

StatusError alreadyExistsError(const ResourceKey& qr, const std::string& name) {
  StatusError e(409, "AlreadyExists", qr.qualified() + " \"" + name + "\" already exists");
  e.withDetails(name, qr.group, qr.resource);
  return e;
}

StatusError conflictError(const ResourceKey& qr, const std::string& name, const std::string& why) {
  StatusError e(409, "Conflict",
                "Operation cannot be fulfilled on " + qr.qualified() + " \"" + name + "\": " + why);
  e.withDetails(name, qr.group, qr.resource);
  return e;
}

StatusError preconditionError(const ResourceKey& qr, const std::string& kind,
                              const std::string& name, const std::string& field,
                              const std::string& wanted, const std::string& actual) {
  const char* likely = field == "UID" ? "deleted and then recreated" : "modified";
  StatusError e(409, "Conflict",
                "Operation cannot be fulfilled on " + kind + " \"" + name + "\": the " + field +
                    " in the precondition (" + wanted + ") does not match the " + field +
                    " in record (" + actual + "). The object might have been " + likely);
  e.withDetails(name, qr.group, qr.resource);
  return e;
}

StatusError invalidError(const std::string& kind, const std::string& group, const std::string& name,
                         std::vector<StatusCause> causes) {
  std::string qualified_kind = group.empty() ? kind : kind + "." + group;
  std::string joined;
  for (size_t i = 0; i < causes.size(); ++i) {
    if (i > 0) joined += ", ";
    joined += causes[i].field + ": " + causes[i].message;
  }
  if (causes.size() > 1) joined = "[" + joined + "]";
  StatusError e(422, "Invalid", qualified_kind + " \"" + name + "\" is invalid: " + joined);
  e.withDetails(name, group, kind);
  for (auto& c : causes) e.addCause(std::move(c));
  return e;
}

StatusError badRequestError(std::string message) {
  return StatusError(400, "BadRequest", std::move(message));
}

StatusError expiredError(std::string message) {
  return StatusError(410, "Expired", std::move(message));
}

StatusError forbiddenError(const ResourceKey& qr, const std::string& name, const std::string& why) {
  StatusError e(403, "Forbidden", qr.qualified() + " \"" + name + "\" is forbidden: " + why);
  e.withDetails(name, qr.group, qr.resource);
  return e;
}

StatusError internalError(const std::string& message) {
  StatusError e(500, "InternalError", "Internal error occurred: " + message);
  e.addCause({"", message, ""});
  return e;
}

StatusError tooLargeResourceVersionError(uint64_t requested, uint64_t current) {
  StatusError e(504, "Timeout",
                "Timeout: Too large resource version: " + std::to_string(requested) +
                    ", current: " + std::to_string(current));
  e.addCause({"ResourceVersionTooLarge", "Too large resource version", ""});
  e.withRetryAfter(1);
  return e;
}

StatusError unsupportedMediaTypeError(std::string message) {
  return StatusError(415, "UnsupportedMediaType", std::move(message));
}

StatusError customResourcePatchTypeError() {
  return unsupportedMediaTypeError(
      "the body of the request was in an unknown format - accepted media types include: "
      "application/json-patch+json, application/merge-patch+json, "
      "application/apply-patch+yaml");
}

StatusError patchApplyError(const std::string& message) {
  StatusError e(422, "Invalid", "the server rejected our request due to an error in our request");
  e.addCause({"UnexpectedServerResponse", message, ""});
  return e;
}

}  // namespace ringmaster::local
