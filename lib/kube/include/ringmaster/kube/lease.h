#pragma once
// coordination.k8s.io/v1 Lease, the leader-election lock. acquireTime and
// renewTime are MicroTime: exactly six fractional digits, or the API server answers 400.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube {

struct LeaseSpec {
  std::optional<std::string> holder_identity;  // "" after a release
  std::optional<int32_t> lease_duration_seconds;
  std::optional<MicroTime> acquire_time;
  std::optional<MicroTime> renew_time;
  std::optional<int32_t> lease_transitions;
  nlohmann::json extra;
  bool operator==(const LeaseSpec&) const = default;
};

struct Lease {
  static constexpr const char* kApiVersion = "coordination.k8s.io/v1";
  static constexpr const char* kKind = "Lease";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  LeaseSpec spec;
  nlohmann::json extra;
  bool operator==(const Lease&) const = default;
};

RM_KUBE_DECLARE_CODEC(LeaseSpec);
RM_KUBE_DECLARE_CODEC(Lease);

}  // namespace ringmaster::kube
