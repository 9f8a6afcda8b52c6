#pragma once
// networking.k8s.io/v1 NetworkPolicy: which pods may reach the selected ones. The spec stays as
// the API has it (podSelector, policyTypes, ingress): the operator writes one shape and reads
// none of it back, only the object's metadata (whose it is).
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <nlohmann/json.hpp>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct NetworkPolicy {
  static constexpr const char* kApiVersion = "networking.k8s.io/v1";
  static constexpr const char* kKind = "NetworkPolicy";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  nlohmann::json spec;
  nlohmann::json extra;
  bool operator==(const NetworkPolicy&) const = default;
};

RM_KUBE_DECLARE_CODEC(NetworkPolicy);

}  // namespace ringmaster::kube
