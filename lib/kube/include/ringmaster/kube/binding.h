#pragma once
// core/v1 Binding: POSTed to pods/NAME/binding to schedule a pod onto a node:
// {"apiVersion":"v1","kind":"Binding","metadata":{"name":POD},"target":{"apiVersion":"v1","kind":"Node","name":NODE}}.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <nlohmann/json.hpp>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct Binding {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Binding";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ObjectReference target;
  nlohmann::json extra;
  bool operator==(const Binding&) const = default;
};

RM_KUBE_DECLARE_CODEC(Binding);

}  // namespace ringmaster::kube
