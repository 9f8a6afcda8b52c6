#pragma once
// core/v1 Service: the headless Service (clusterIP "None") that gives worker pods stable DNS names.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/int_or_string.h"
#include "ringmaster/kube/meta.h"

namespace ringmaster::kube {

struct ServicePort {
  std::optional<std::string> name;
  int32_t port = 0;
  std::optional<IntOrString> target_port;
  std::optional<std::string> protocol;  // TCP | UDP | SCTP
  std::optional<int32_t> node_port;
  nlohmann::json extra;
  bool operator==(const ServicePort&) const = default;
};

struct ServiceSpec {
  std::string cluster_ip;  // "clusterIP"; "None" for a headless Service
  std::map<std::string, std::string> selector;
  std::vector<ServicePort> ports;
  std::optional<bool> publish_not_ready_addresses;
  std::string type;      // ClusterIP | NodePort | LoadBalancer | ExternalName
  nlohmann::json extra;  // clusterIPs, sessionAffinity, ...
  bool operator==(const ServiceSpec&) const = default;
};

struct Service {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Service";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ServiceSpec spec;
  nlohmann::json status;  // opaque (loadBalancer)
  nlohmann::json extra;
  bool operator==(const Service&) const = default;
};

RM_KUBE_DECLARE_CODEC(ServicePort);
RM_KUBE_DECLARE_CODEC(ServiceSpec);
RM_KUBE_DECLARE_CODEC(Service);

}  // namespace ringmaster::kube
