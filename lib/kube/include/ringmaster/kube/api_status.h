#pragma once
// ApiStatus: the Kubernetes `Status` object (kind "Status", apiVersion "v1") that the API server
// returns for every error and for some successes (a DELETE that removed the object, a Binding),
// and that a watch ERROR event carries (410 Expired). Named ApiStatus so it is never confused with
// core::Status. Shapes as kube-apiserver sends them: details.kind is the plural resource for
// 404/409/403 but the Kind for 422; 422 lists details.causes[{reason, message, field}].
//
// Thread-safety: plain value. Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct StatusCause {
  std::string reason;  // FieldValueInvalid, FieldValueRequired, FieldManagerConflict, ...
  std::string message;
  std::string field;  // "spec.replicas"; "<nil>" for a CEL note
  nlohmann::json extra;
  bool operator==(const StatusCause&) const = default;
};

struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  std::optional<int32_t> retry_after_seconds;
  nlohmann::json extra;
  bool operator==(const StatusDetails&) const = default;
};

struct ApiStatus {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Status";

  std::string api_version;
  std::string kind;
  std::optional<ListMeta> metadata;  // "{}" on errors; carries `continue` on a 410 LIST
  std::string status;                // "Success" | "Failure"
  std::string message;
  std::string reason;  // NotFound, AlreadyExists, Conflict, Invalid, Expired, ...; may be empty
  std::optional<StatusDetails> details;
  std::optional<int32_t> code;  // the HTTP status
  nlohmann::json extra;
  bool operator==(const ApiStatus&) const = default;

  // A Failure as the API server writes it: kind, apiVersion, metadata {}, status, message,
  // reason (omitted when empty) and code.
  static ApiStatus failure(int32_t code, std::string reason, std::string message);
  bool isFailure() const { return status == "Failure"; }
};

RM_KUBE_DECLARE_CODEC(StatusCause);
RM_KUBE_DECLARE_CODEC(StatusDetails);
RM_KUBE_DECLARE_CODEC(ApiStatus);

}  // namespace ringmaster::kube
