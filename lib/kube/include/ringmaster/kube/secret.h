#pragma once
// core/v1 Secret. data holds raw bytes here and base64 on the wire (a bad encoding fails the
// decode naming the key); stringData is write-only plain text that the server merges into data.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct Secret {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Secret";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  std::map<std::string, std::string> data;  // raw bytes
  std::map<std::string, std::string> string_data;
  std::string type;  // Opaque, kubernetes.io/ssh-auth, ...
  std::optional<bool> immutable;
  nlohmann::json extra;
  bool operator==(const Secret&) const = default;
};

RM_KUBE_DECLARE_CODEC(Secret);

}  // namespace ringmaster::kube
