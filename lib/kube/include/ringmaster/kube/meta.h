#pragma once
// Object metadata shared by every kind (meta/v1): TypeMeta, ObjectMeta with its
// OwnerReferences, ListMeta, Condition, and core/v1 ObjectReference.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/detail/object_codec.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube {

// apiVersion and kind alone: enough to tell what a document is before decoding all of it.
struct TypeMeta {
  std::string api_version;
  std::string kind;
  nlohmann::json extra;  // everything else in the document
  bool operator==(const TypeMeta&) const = default;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  nlohmann::json extra;
  bool operator==(const OwnerReference&) const = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_name;  // "namespace"
  std::string uid;
  std::string resource_version;
  std::optional<int64_t> generation;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  std::optional<int64_t> deletion_grace_period_seconds;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  nlohmann::json managed_fields;  // opaque: kept so that round trips do not lose it
  nlohmann::json extra;
  bool operator==(const ObjectMeta&) const = default;
};

struct ListMeta {
  std::string resource_version;
  std::string continue_token;  // "continue"
  std::optional<int64_t> remaining_item_count;
  nlohmann::json extra;
  bool operator==(const ListMeta&) const = default;
};

// metav1.Condition plus the extra timestamps of Pod and Node conditions.
struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::optional<std::string> reason;
  std::optional<std::string> message;
  std::optional<Time> last_transition_time;
  std::optional<Time> last_probe_time;      // PodCondition
  std::optional<Time> last_heartbeat_time;  // NodeCondition
  std::optional<int64_t> observed_generation;
  nlohmann::json extra;
  bool operator==(const Condition&) const = default;
};

// core/v1 ObjectReference (Event.involvedObject, Binding.target).
struct ObjectReference {
  std::optional<std::string> api_version;
  std::optional<std::string> kind;
  std::optional<std::string> namespace_name;
  std::optional<std::string> name;
  std::optional<std::string> uid;
  std::optional<std::string> resource_version;
  std::optional<std::string> field_path;
  nlohmann::json extra;
  bool operator==(const ObjectReference&) const = default;
};

RM_KUBE_DECLARE_CODEC(TypeMeta);
RM_KUBE_DECLARE_CODEC(OwnerReference);
RM_KUBE_DECLARE_CODEC(ObjectMeta);
RM_KUBE_DECLARE_CODEC(ListMeta);
RM_KUBE_DECLARE_CODEC(Condition);
RM_KUBE_DECLARE_CODEC(ObjectReference);

}  // namespace ringmaster::kube
