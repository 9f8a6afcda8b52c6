#pragma once
// core/v1 Namespace.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct NamespaceSpec {
  std::vector<std::string> finalizers;
  nlohmann::json extra;
  bool operator==(const NamespaceSpec&) const = default;
};

struct NamespaceStatus {
  std::string phase;  // Active | Terminating
  std::vector<Condition> conditions;
  nlohmann::json extra;
  bool operator==(const NamespaceStatus&) const = default;
};

struct Namespace {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Namespace";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  NamespaceSpec spec;
  NamespaceStatus status;
  nlohmann::json extra;
  bool operator==(const Namespace&) const = default;
};

RM_KUBE_DECLARE_CODEC(NamespaceSpec);
RM_KUBE_DECLARE_CODEC(NamespaceStatus);
RM_KUBE_DECLARE_CODEC(Namespace);

}  // namespace ringmaster::kube
