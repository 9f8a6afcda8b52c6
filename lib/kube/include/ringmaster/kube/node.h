#pragma once
// core/v1 Node: what the local kubelet registers and keeps fresh (capacity, allocatable, the
// Ready condition, addresses) and what its scheduler reads (taints). nodeInfo and
// daemonEndpoints stay in `extra`.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/quantity.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube {

struct NodeAddress {
  std::string type;  // InternalIP | Hostname | ...
  std::string address;
  nlohmann::json extra;
  bool operator==(const NodeAddress&) const = default;
};

// A taint keeps pods that do not tolerate it off the node (NoSchedule), away from it when they
// can go elsewhere (PreferNoSchedule), or evicts them (NoExecute).
struct Taint {
  std::string key;
  std::string value;
  std::string effect;
  std::optional<Time> time_added;
  nlohmann::json extra;
  bool operator==(const Taint&) const = default;
};

struct NodeSpec {
  std::optional<bool> unschedulable;
  std::string pod_cidr;  // "podCIDR"
  std::vector<Taint> taints;
  nlohmann::json extra;  // providerID, ...
  bool operator==(const NodeSpec&) const = default;
};

struct NodeStatus {
  std::map<std::string, Quantity> capacity;
  std::map<std::string, Quantity> allocatable;
  std::vector<Condition> conditions;
  std::vector<NodeAddress> addresses;
  nlohmann::json extra;  // nodeInfo, daemonEndpoints, images, ...
  bool operator==(const NodeStatus&) const = default;
};

struct Node {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Node";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  NodeSpec spec;
  NodeStatus status;
  nlohmann::json extra;
  bool operator==(const Node&) const = default;
};

RM_KUBE_DECLARE_CODEC(NodeAddress);
RM_KUBE_DECLARE_CODEC(Taint);
RM_KUBE_DECLARE_CODEC(NodeSpec);
RM_KUBE_DECLARE_CODEC(NodeStatus);
RM_KUBE_DECLARE_CODEC(Node);

}  // namespace ringmaster::kube
