#pragma once
// core/v1 ConfigMap. binaryData holds raw bytes here and base64 on the wire.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct ConfigMap {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "ConfigMap";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;  // raw bytes
  std::optional<bool> immutable;
  nlohmann::json extra;
  bool operator==(const ConfigMap&) const = default;
};

RM_KUBE_DECLARE_CODEC(ConfigMap);

}  // namespace ringmaster::kube
