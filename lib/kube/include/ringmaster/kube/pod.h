#pragma once
// core/v1 Pod and the parts of its spec and status that Ringmaster builds or reads (the operator's
// worker pods, the local kubelet). Fields not modelled here survive round trips in `extra`.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path
// ("spec.containers[0].resources.limits.cpu: expected a quantity, got \"abc\"").

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/int_or_string.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/quantity.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube {

struct ObjectFieldSelector {
  std::optional<std::string> api_version;
  std::string field_path;  // "metadata.name", "status.podIP"
  nlohmann::json extra;
  bool operator==(const ObjectFieldSelector&) const = default;
};

// secretKeyRef / configMapKeyRef.
struct KeySelector {
  std::string name;
  std::string key;
  std::optional<bool> optional;
  nlohmann::json extra;
  bool operator==(const KeySelector&) const = default;
};

struct EnvVarSource {
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<KeySelector> secret_key_ref;
  std::optional<KeySelector> config_map_key_ref;
  nlohmann::json extra;  // resourceFieldRef
  bool operator==(const EnvVarSource&) const = default;
};

struct EnvVar {
  std::string name;
  std::optional<std::string> value;
  std::optional<EnvVarSource> value_from;
  nlohmann::json extra;
  bool operator==(const EnvVar&) const = default;
};

struct ContainerPort {
  std::optional<std::string> name;
  int32_t container_port = 0;
  std::optional<std::string> protocol;
  std::optional<int32_t> host_port;
  nlohmann::json extra;
  bool operator==(const ContainerPort&) const = default;
};

struct ResourceRequirements {
  std::map<std::string, Quantity> limits;
  std::map<std::string, Quantity> requests;
  nlohmann::json extra;
  bool operator==(const ResourceRequirements&) const = default;
};

struct VolumeMount {
  std::string name;
  std::string mount_path;
  std::optional<bool> read_only;
  std::optional<std::string> sub_path;
  nlohmann::json extra;
  bool operator==(const VolumeMount&) const = default;
};

struct HttpGetAction {
  std::optional<std::string> path;
  IntOrString port;
  std::optional<std::string> host;
  std::optional<std::string> scheme;
  nlohmann::json extra;
  bool operator==(const HttpGetAction&) const = default;
};

struct ExecAction {
  std::vector<std::string> command;
  nlohmann::json extra;
  bool operator==(const ExecAction&) const = default;
};

struct TcpSocketAction {
  IntOrString port;
  std::optional<std::string> host;
  nlohmann::json extra;
  bool operator==(const TcpSocketAction&) const = default;
};

struct Probe {
  std::optional<HttpGetAction> http_get;
  std::optional<ExecAction> exec;
  std::optional<TcpSocketAction> tcp_socket;
  std::optional<int32_t> initial_delay_seconds;
  std::optional<int32_t> period_seconds;
  std::optional<int32_t> timeout_seconds;
  std::optional<int32_t> success_threshold;
  std::optional<int32_t> failure_threshold;
  nlohmann::json extra;
  bool operator==(const Probe&) const = default;
};

struct Capabilities {
  std::vector<std::string> add;
  std::vector<std::string> drop;
  nlohmann::json extra;
  bool operator==(const Capabilities&) const = default;
};

struct SeccompProfile {
  std::string type;  // RuntimeDefault | Localhost | Unconfined
  std::optional<std::string> localhost_profile;
  nlohmann::json extra;
  bool operator==(const SeccompProfile&) const = default;
};

// A container's securityContext: the fields Pod Security "restricted" looks at.
struct SecurityContext {
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::optional<bool> privileged;
  std::optional<bool> allow_privilege_escalation;
  std::optional<bool> read_only_root_filesystem;
  std::optional<Capabilities> capabilities;
  std::optional<SeccompProfile> seccomp_profile;
  nlohmann::json extra;  // seLinuxOptions, procMount, ...
  bool operator==(const SecurityContext&) const = default;
};

struct PodSecurityContext {
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::optional<int64_t> fs_group;
  std::vector<int64_t> supplemental_groups;
  std::optional<SeccompProfile> seccomp_profile;
  nlohmann::json extra;  // sysctls, fsGroupChangePolicy, ...
  bool operator==(const PodSecurityContext&) const = default;
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::vector<ContainerPort> ports;
  std::optional<ResourceRequirements> resources;
  std::vector<VolumeMount> volume_mounts;
  std::string working_dir;
  std::optional<Probe> readiness_probe;
  std::optional<Probe> liveness_probe;
  std::optional<SecurityContext> security_context;
  // Unset: the API server's defaults, kDefaultTerminationMessagePath and "File"
  // (termination_message.h).
  std::optional<std::string> termination_message_path;
  std::optional<std::string> termination_message_policy;
  nlohmann::json extra;  // imagePullPolicy, ...
  bool operator==(const Container&) const = default;
};

struct KeyToPath {
  std::string key;
  std::string path;
  std::optional<int32_t> mode;
  nlohmann::json extra;
  bool operator==(const KeyToPath&) const = default;
};

struct EmptyDirVolumeSource {
  std::optional<std::string> medium;
  std::optional<Quantity> size_limit;
  nlohmann::json extra;
  bool operator==(const EmptyDirVolumeSource&) const = default;
};

struct HostPathVolumeSource {
  std::string path;
  std::optional<std::string> type;
  nlohmann::json extra;
  bool operator==(const HostPathVolumeSource&) const = default;
};

struct ConfigMapVolumeSource {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  nlohmann::json extra;
  bool operator==(const ConfigMapVolumeSource&) const = default;
};

struct SecretVolumeSource {
  std::string secret_name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  nlohmann::json extra;
  bool operator==(const SecretVolumeSource&) const = default;
};

struct PersistentVolumeClaimVolumeSource {
  std::string claim_name;
  std::optional<bool> read_only;
  nlohmann::json extra;
  bool operator==(const PersistentVolumeClaimVolumeSource&) const = default;
};

// One volume; at most one source is set. Other sources (projected, ...) stay in `extra`.
// One file of a downwardAPI volume or projection: a field of the pod (resourceFieldRef is kept
// in `extra`, unsupported by the local kubelet).
struct DownwardApiVolumeFile {
  std::string path;
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<int32_t> mode;
  nlohmann::json extra;
  bool operator==(const DownwardApiVolumeFile&) const = default;
};

struct DownwardApiVolumeSource {
  std::vector<DownwardApiVolumeFile> items;
  std::optional<int32_t> default_mode;  // projections have none of their own
  nlohmann::json extra;
  bool operator==(const DownwardApiVolumeSource&) const = default;
};

// A configMap or secret inside a projected volume: named by `name` in both.
struct KeyProjection {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<bool> optional;
  nlohmann::json extra;
  bool operator==(const KeyProjection&) const = default;
};

// A token of the pod's ServiceAccount, bound to the pod (the kubelet asks for it with a
// TokenRequest).
struct ServiceAccountTokenProjection {
  std::string audience;  // "" = the API server's own audiences
  std::optional<int64_t> expiration_seconds;
  std::string path;
  nlohmann::json extra;
  bool operator==(const ServiceAccountTokenProjection&) const = default;
};

struct VolumeProjection {
  std::optional<KeyProjection> config_map;
  std::optional<KeyProjection> secret;
  std::optional<DownwardApiVolumeSource> downward_api;
  std::optional<ServiceAccountTokenProjection> service_account_token;
  nlohmann::json extra;  // clusterTrustBundle
  bool operator==(const VolumeProjection&) const = default;
};

struct ProjectedVolumeSource {
  std::vector<VolumeProjection> sources;
  std::optional<int32_t> default_mode;
  nlohmann::json extra;
  bool operator==(const ProjectedVolumeSource&) const = default;
};

struct Volume {
  std::string name;
  std::optional<EmptyDirVolumeSource> empty_dir;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<ConfigMapVolumeSource> config_map;
  std::optional<SecretVolumeSource> secret;
  std::optional<PersistentVolumeClaimVolumeSource> persistent_volume_claim;
  std::optional<ProjectedVolumeSource> projected;
  std::optional<DownwardApiVolumeSource> downward_api;
  nlohmann::json extra;
  bool operator==(const Volume&) const = default;
};

// A taint the pod tolerates: key/value/effect, matched with operator Equal (the default) or
// Exists; an empty key with Exists tolerates every taint.
struct Toleration {
  std::optional<std::string> key;
  std::optional<std::string> operator_name;  // "operator": Equal | Exists
  std::optional<std::string> value;
  std::optional<std::string> effect;  // NoSchedule | PreferNoSchedule | NoExecute; none: all
  std::optional<int64_t> toleration_seconds;
  nlohmann::json extra;
  bool operator==(const Toleration&) const = default;
};

// A reference by name to an object in the pod's namespace (imagePullSecrets).
struct LocalObjectReference {
  std::string name;
  nlohmann::json extra;
  bool operator==(const LocalObjectReference&) const = default;
};

// A gate that keeps the pod from being scheduled until whoever added it removes it.
struct PodSchedulingGate {
  std::string name;
  nlohmann::json extra;
  bool operator==(const PodSchedulingGate&) const = default;
};

struct PodSpec {
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  std::vector<Volume> volumes;
  std::string restart_policy;  // Always | OnFailure | Never
  std::string node_name;
  std::string hostname;
  std::string subdomain;
  std::string scheduler_name;
  std::string service_account_name;
  std::optional<bool> automount_service_account_token;
  std::optional<int64_t> termination_grace_period_seconds;
  std::optional<PodSecurityContext> security_context;
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  // Read by the scheduler only; kept as the API gives it.
  nlohmann::json affinity;
  nlohmann::json topology_spread_constraints;  // an array of core/v1 TopologySpreadConstraint
  std::string priority_class_name;
  std::vector<LocalObjectReference> image_pull_secrets;
  std::vector<PodSchedulingGate> scheduling_gates;
  nlohmann::json extra;  // dnsPolicy, hostNetwork, ...
  bool operator==(const PodSpec&) const = default;
};

// A pod's metadata and spec as a workload's template gives them (core/v1 PodTemplateSpec).
struct PodTemplateSpec {
  ObjectMeta metadata;
  PodSpec spec;
  nlohmann::json extra;
  bool operator==(const PodTemplateSpec&) const = default;
};

struct ContainerStateWaiting {
  std::optional<std::string> reason;
  std::optional<std::string> message;
  nlohmann::json extra;
  bool operator==(const ContainerStateWaiting&) const = default;
};

struct ContainerStateRunning {
  std::optional<Time> started_at;
  nlohmann::json extra;
  bool operator==(const ContainerStateRunning&) const = default;
};

struct ContainerStateTerminated {
  int32_t exit_code = 0;
  std::optional<int32_t> signal;
  std::optional<std::string> reason;
  std::optional<std::string> message;
  std::optional<Time> started_at;
  std::optional<Time> finished_at;
  std::optional<std::string> container_id;
  nlohmann::json extra;
  bool operator==(const ContainerStateTerminated&) const = default;
};

// At most one of the three is set; none means unknown ("lastState": {}).
struct ContainerState {
  std::optional<ContainerStateWaiting> waiting;
  std::optional<ContainerStateRunning> running;
  std::optional<ContainerStateTerminated> terminated;
  nlohmann::json extra;
  bool operator==(const ContainerState&) const = default;
};

struct ContainerStatus {
  std::string name;
  std::optional<ContainerState> state;
  std::optional<ContainerState> last_state;
  std::optional<bool> ready;
  std::optional<int32_t> restart_count;
  std::optional<std::string> image;
  std::optional<std::string> image_id;
  std::optional<std::string> container_id;
  std::optional<bool> started;
  nlohmann::json extra;
  bool operator==(const ContainerStatus&) const = default;
};

struct PodStatus {
  std::string phase;  // Pending | Running | Succeeded | Failed | Unknown
  std::vector<Condition> conditions;
  std::string message;
  std::string reason;
  std::string host_ip;
  std::string pod_ip;
  std::optional<Time> start_time;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  nlohmann::json extra;  // podIPs, qosClass, ...
  bool operator==(const PodStatus&) const = default;
};

struct Pod {
  static constexpr const char* kApiVersion = "v1";
  static constexpr const char* kKind = "Pod";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
  nlohmann::json extra;
  bool operator==(const Pod&) const = default;
};

RM_KUBE_DECLARE_CODEC(ObjectFieldSelector);
RM_KUBE_DECLARE_CODEC(KeySelector);
RM_KUBE_DECLARE_CODEC(EnvVarSource);
RM_KUBE_DECLARE_CODEC(EnvVar);
RM_KUBE_DECLARE_CODEC(ContainerPort);
RM_KUBE_DECLARE_CODEC(ResourceRequirements);
RM_KUBE_DECLARE_CODEC(VolumeMount);
RM_KUBE_DECLARE_CODEC(HttpGetAction);
RM_KUBE_DECLARE_CODEC(ExecAction);
RM_KUBE_DECLARE_CODEC(TcpSocketAction);
RM_KUBE_DECLARE_CODEC(Probe);
RM_KUBE_DECLARE_CODEC(Capabilities);
RM_KUBE_DECLARE_CODEC(SeccompProfile);
RM_KUBE_DECLARE_CODEC(SecurityContext);
RM_KUBE_DECLARE_CODEC(PodSecurityContext);
RM_KUBE_DECLARE_CODEC(Container);
RM_KUBE_DECLARE_CODEC(KeyToPath);
RM_KUBE_DECLARE_CODEC(EmptyDirVolumeSource);
RM_KUBE_DECLARE_CODEC(HostPathVolumeSource);
RM_KUBE_DECLARE_CODEC(ConfigMapVolumeSource);
RM_KUBE_DECLARE_CODEC(SecretVolumeSource);
RM_KUBE_DECLARE_CODEC(PersistentVolumeClaimVolumeSource);
RM_KUBE_DECLARE_CODEC(DownwardApiVolumeFile);
RM_KUBE_DECLARE_CODEC(DownwardApiVolumeSource);
RM_KUBE_DECLARE_CODEC(KeyProjection);
RM_KUBE_DECLARE_CODEC(ServiceAccountTokenProjection);
RM_KUBE_DECLARE_CODEC(VolumeProjection);
RM_KUBE_DECLARE_CODEC(ProjectedVolumeSource);
RM_KUBE_DECLARE_CODEC(Volume);
RM_KUBE_DECLARE_CODEC(Toleration);
RM_KUBE_DECLARE_CODEC(LocalObjectReference);
RM_KUBE_DECLARE_CODEC(PodSchedulingGate);
RM_KUBE_DECLARE_CODEC(PodSpec);
RM_KUBE_DECLARE_CODEC(PodTemplateSpec);
RM_KUBE_DECLARE_CODEC(ContainerStateWaiting);
RM_KUBE_DECLARE_CODEC(ContainerStateRunning);
RM_KUBE_DECLARE_CODEC(ContainerStateTerminated);
RM_KUBE_DECLARE_CODEC(ContainerState);
RM_KUBE_DECLARE_CODEC(ContainerStatus);
RM_KUBE_DECLARE_CODEC(PodStatus);
RM_KUBE_DECLARE_CODEC(Pod);

}  // namespace ringmaster::kube
