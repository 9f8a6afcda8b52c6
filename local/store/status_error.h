#pragma once
// StatusError: an API error as kube-apiserver returns it — an HTTP code plus the `v1` Status body.
// ApiResult<T>: a T or a StatusError, the return type of every store operation.
//
// Thread-safety: value types. Failure: none (these are the failure path).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "local/store/resource_type.h"
#include "ringmaster/core/status.h"

namespace ringmaster::local {

struct StatusCause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, … (may be empty)
  std::string message;
  std::string field;
};

class StatusError {
 public:
  StatusError() = default;
  StatusError(int code, std::string reason, std::string message)
      : code_(code), reason_(std::move(reason)), message_(std::move(message)) {}

  int code() const { return code_; }  // HTTP status
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }

  // details{} (omitted from the body when all empty).
  StatusError& withDetails(std::string name, std::string group, std::string kind);
  StatusError& withUid(std::string uid);
  StatusError& addCause(StatusCause cause);
  StatusError& withRetryAfter(int seconds);
  StatusError& withContinue(std::string token);  // metadata.continue (410 on a LIST)
  StatusError& asSuccess();                      // status "Success" (DELETE answers)

  const std::string& detailName() const { return name_; }
  const std::string& detailKind() const { return kind_; }
  const std::vector<StatusCause>& causes() const { return causes_; }

  // The Status object with keys in kube-apiserver's order, compact:
  // {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":…,"code":N}.
  std::string bodyText() const;
  nlohmann::json body() const;
  // For callers that speak core::Status ("409 Conflict: <message>").
  core::Status toStatus() const;

 private:
  nlohmann::ordered_json ordered() const;

  int code_ = 500;
  bool success_ = false;
  std::string reason_;
  std::string message_;
  std::string name_, group_, kind_, uid_;
  std::vector<StatusCause> causes_;
  int retry_after_ = 0;
  std::string continue_;
};

// Builders with kube-apiserver's exact texts. `qr` is the resource's ResourceKey.
StatusError notFoundError(const ResourceKey& qr, const std::string& name);
StatusError alreadyExistsError(const ResourceKey& qr, const std::string& name);
// "Operation cannot be fulfilled on <qr> \"name\": <why>"
StatusError conflictError(const ResourceKey& qr, const std::string& name, const std::string& why);
// A failed delete precondition, worded by the kind ("…on ConfigMap \"cm1\": the UID in the
// precondition (…) does not match the UID in record (…)…"), as the storage layer words it.
StatusError preconditionError(const ResourceKey& qr, const std::string& kind,
                              const std::string& name, const std::string& field,
                              const std::string& wanted, const std::string& actual);
inline constexpr const char* kModifiedConflict =
    "the object has been modified; please apply your changes to the latest version and try again";
// 422 "<Kind>.<group> \"name\" is invalid: <field>: <message>[, …]" with one cause per entry.
StatusError invalidError(const std::string& kind, const std::string& group, const std::string& name,
                         std::vector<StatusCause> causes);
StatusError badRequestError(std::string message);
StatusError expiredError(std::string message);  // 410 Expired
StatusError forbiddenError(const ResourceKey& qr, const std::string& name, const std::string& why);
StatusError internalError(const std::string& message);
StatusError tooLargeResourceVersionError(uint64_t requested, uint64_t current);
StatusError unsupportedMediaTypeError(std::string message);
// The 415 for a patch type custom resources (and their scale subresource) do not take: any but
// JSON patch, merge patch and apply, as kube-apiserver words it.
StatusError customResourcePatchTypeError();
// 422 from a patch that cannot be applied (json patch test failed, bad path, …).
StatusError patchApplyError(const std::string& message);

template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  ApiResult(StatusError error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const StatusError& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, StatusError> v_;
};

}  // namespace ringmaster::local
