#pragma once
// Pure builders of a TrainingJob's children: the headless
// Service, the ConfigMap (trainer.yaml; hostfile in MPI mode), the MPI SSH Secret and one worker
// Pod per replica. Tests call the same builders to say what the reconciler must create.
//
// Every builder takes a job whose spec went through withDefaults() (validate.h). Children carry
// the labels ringmaster.dev/job-name (+ replica-index, attempt on pods) and a controller
// ownerReference to the job, so deleting the job deletes them (garbage collection).
//
// Thread-safety: pure functions. Failure: only the SSH key generation can fail (OpenSSL), with
// an Internal Status naming the call.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/validate.h"
#include "operator/worker_pod.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/network_policy.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/pod_group.h"
#include "ringmaster/kube/secret.h"
#include "ringmaster/kube/service.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

inline constexpr const char* kJobNameLabel = "ringmaster.dev/job-name";
inline constexpr const char* kReplicaIndexLabel = "ringmaster.dev/replica-index";
inline constexpr const char* kAttemptLabel = "ringmaster.dev/attempt";
// The pod's role in the gang: "worker" or "ps" (name(Role)).
inline constexpr const char* kRoleLabel = "ringmaster.dev/role";
// "true" on an elastic job's standby pods: placeholders beyond the current world that hold no
// rank; one that gets scheduled means capacity returned and the job can grow.
inline constexpr const char* kStandbyLabel = "ringmaster.dev/standby";
// How each gang scheduler finds a pod's PodGroup: scheduler-plugins by label, Volcano by
// annotation.
inline constexpr const char* kPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr const char* kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
using contract::pod_env::kHealthPort;
using contract::pod_env::kMasterPortDefault;
using contract::pod_env::kRendezvousPort;
using contract::pod_env::kSshPort;
inline constexpr const char* kWorkerContainer = "worker";
inline constexpr const char* kConfigMountPath = "/etc/ringmaster";
// Not a home directory: the worker runs as kWorkerUid whatever the image's user is.
inline constexpr const char* kSshMountPath = "/etc/ringmaster-ssh";
// The worker's scratch directory (an emptyDir, its TMPDIR): the root filesystem is read-only.
// Not /tmp: the local kubelet would hide the host's /tmp, where its own pod files may live.
inline constexpr const char* kTmpVolume = "ringmaster-tmp";
inline constexpr const char* kTmpMountPath = "/var/tmp/ringmaster";
// Worker pods run under Pod Security "restricted" as this user and group (the worker image's
// `ringmaster` user); fsGroup makes Secret and PVC volumes readable and writable to it.
inline constexpr int64_t kWorkerUid = 1000;

std::string workerName(const std::string& job, int index);  // "<job>-worker-<index>"
// The label selector of the job's worker pods that hold ranks (not the standby ones):
// status.selector, which the scale subresource gives autoscalers to find the pods it scales.
std::string workerSelector(const std::string& job);
// Pod `index` of the gang (JobSettings::roleOf): "<job>-worker-<i>", or "<job>-ps-<i>" with i
// counted among the ps pods.
std::string podName(const std::string& job, const JobSettings& settings, int index);
// "<pod name>.<job>.<namespace>.svc": its address through the job's headless Service.
std::string podHost(const std::string& job, const std::string& ns, const JobSettings& settings,
                    int index);
std::string configMapName(const std::string& job);  // "<job>-config"
std::string secretName(const std::string& job);     // "<job>-ssh"

// ownerReferences entry naming `owner` (a TrainingJob, an Experiment) as controller
// (blockOwnerDeletion true).
template <class T>
kube::OwnerReference controllerRef(const T& owner) {
  kube::OwnerReference ref;
  ref.api_version = T::kApiVersion;
  ref.kind = T::kKind;
  ref.name = owner.metadata.name;
  ref.uid = owner.metadata.uid;
  ref.controller = true;
  ref.block_owner_deletion = true;
  return ref;
}
// The controller ownerReference of `meta`, or nullptr.
const kube::OwnerReference* controllerOf(const kube::ObjectMeta& meta);

// The trainer's metrics port: spec.trainer.metricsPort, defaulted as the trainer defaults it.
int32_t metricsPort(const kube::TrainingJob& job);

kube::Service buildService(const kube::TrainingJob& job);
// trainer.yaml = spec.trainer as YAML; hostfile in MPI mode.
kube::ConfigMap buildConfigMap(const kube::TrainingJob& job);
// MPI mode: the job's SSH identity, in the MPI Operator's shape (type kubernetes.io/ssh-auth,
// keys ssh-privatekey (PEM "EC PRIVATE KEY", ECDSA P-521) and ssh-publickey (authorized_keys
// line)). Fresh keys on every call.
core::Result<kube::Secret> buildSecret(const kube::TrainingJob& job);
// Pod `index` of the gang (a worker, or a ps pod past the workers) of attempt `attempt`;
// `store_secret` is the attempt's rendezvous store secret (RINGMASTER_STORE_SECRET, lib/contract
// store_secret.h), the same for every pod of it.
kube::Pod buildWorkerPod(const kube::TrainingJob& job, int index, int attempt,
                         const std::string& store_secret);
// The store secret a worker pod carries, if any.
std::optional<std::string> storeSecretOf(const kube::Pod& pod);
// The secret for new pods of attempt `attempt`: the one its existing pods carry (a recreated
// pod must match its siblings, and the pods are where it survives an operator restart), else
// nullopt: the attempt has no pod yet and gets a new one (newStoreSecret()).
std::optional<std::string> storeSecretForAttempt(
    const std::vector<std::shared_ptr<const WorkerPod>>& pods, int attempt);
core::Result<std::string> newStoreSecret();

// spec.trainer as the YAML text trainer --config reads.
std::string trainerYaml(const kube::TrainingJob& job);

}  // namespace ringmaster::op

namespace ringmaster::op {

// Which gang scheduler's PodGroup API a job needs (kube::PodGroup is the object of either).
struct PodGroupKind {
  std::string group;    // "scheduling.volcano.sh" | "scheduling.x-k8s.io"
  std::string version;  // "v1beta1" | "v1alpha1"
  std::string plural;   // "podgroups"
  std::string kind;     // "PodGroup"
};
// The PodGroup API that spec.schedulingPolicy.schedulerName asks for: one naming volcano, or
// scheduler-plugins / coscheduling; nullopt for any other scheduler.
std::optional<PodGroupKind> podGroupKindFor(const kube::TrainingJob& job);
// PodGroup "<job>" with minMember = replicas, owned by the job.
kube::PodGroup buildPodGroup(const kube::TrainingJob& job, const PodGroupKind& kind);

// networking.k8s.io/v1 NetworkPolicy "<job>-workers": the job's pods (kJobNameLabel) admit
// ingress from the job's own pods only, on any port (the store, MPI's ssh, and gloo, NCCL and
// Open MPI, which listen on ephemeral ports), and on the metrics port from anywhere
// (Prometheus, the operator's progress scrape). Kubelet probes come from the node, which
// NetworkPolicies always admit.
std::string networkPolicyName(const std::string& job);  // "<job>-workers"
kube::NetworkPolicy buildNetworkPolicy(const kube::TrainingJob& job);

}  // namespace ringmaster::op
