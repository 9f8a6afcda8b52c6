#pragma once
// A gang scheduler's PodGroup: the pods of one group are bound all together or not at all.
// Volcano's scheduling.volcano.sh/v1beta1 and scheduler-plugins' scheduling.x-k8s.io/v1alpha1
// share the fields typed here (scheduleTimeoutSeconds is scheduler-plugins' own), so one type
// serves both and each object carries its own apiVersion. Everything else (each scheduler's
// status, its other fields) survives in `extra`.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct PodGroupSpec {
  std::optional<int32_t> min_member;  // pods that must be placeable before any is bound
  std::optional<int32_t> schedule_timeout_seconds;
  nlohmann::json extra;
  bool operator==(const PodGroupSpec&) const = default;
};

struct PodGroup {
  static constexpr const char* kKind = "PodGroup";

  std::string api_version;  // "scheduling.volcano.sh/v1beta1" | "scheduling.x-k8s.io/v1alpha1"
  std::string kind;
  ObjectMeta metadata;
  PodGroupSpec spec;
  nlohmann::json extra;
  bool operator==(const PodGroup&) const = default;
};

RM_KUBE_DECLARE_CODEC(PodGroupSpec);
RM_KUBE_DECLARE_CODEC(PodGroup);

}  // namespace ringmaster::kube
