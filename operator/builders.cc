#include "operator/builders.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>

#include "operator/pod_template.h"
#include "operator/queue_admission.h"
#include "operator/validate.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/store_secret.h"
#include "ringmaster/contract/tf_config.h"
#include "ringmaster/core/base64.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/termination_message.h"
#include "ringmaster/rendezvous/tcp_store.h"

namespace ringmaster::op {
namespace {

std::map<std::string, std::string> jobLabels(const kube::TrainingJob& job) {
  return {{kJobNameLabel, job.metadata.name}};
}

// Every child carries the job's own labels (for queues, cost reports, selectors of the user's
// tools) and the operator's, which validation keeps apart.
kube::ObjectMeta childMeta(const kube::TrainingJob& job, std::string name) {
  kube::ObjectMeta meta;
  meta.name = std::move(name);
  meta.namespace_name = job.metadata.namespace_name;
  meta.labels = job.metadata.labels;
  for (auto& [key, value] : jobLabels(job)) meta.labels[key] = value;
  meta.owner_references.push_back(controllerRef(job));
  return meta;
}

void emitJson(YAML::Emitter& out, const nlohmann::json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : j.items()) {
      out << YAML::Key << key << YAML::Value;
      emitJson(out, value);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& value : j) emitJson(out, value);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_boolean()) {
    out << (j.get<bool>() ? "true" : "false");
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();  // numbers as JSON writes them
  }
}

kube::EnvVar env(std::string name, std::string value) {
  kube::EnvVar e;
  e.name = std::move(name);
  e.value = std::move(value);
  return e;
}

kube::EnvVar fieldEnv(std::string name, std::string field_path) {
  kube::EnvVar e;
  e.name = std::move(name);
  e.value_from = kube::EnvVarSource{};
  e.value_from->field_ref = kube::ObjectFieldSelector{};
  e.value_from->field_ref->field_path = std::move(field_path);
  return e;
}

kube::ContainerPort port(std::string name, int32_t number) {
  kube::ContainerPort p;
  p.name = std::move(name);
  p.container_port = number;
  p.protocol = "TCP";
  return p;
}

// Pod Security Standards "restricted": non-root, no privilege escalation, no capabilities,
// the runtime's default seccomp profile.
kube::PodSecurityContext restrictedPodSecurity() {
  kube::PodSecurityContext psc;
  psc.run_as_non_root = true;
  psc.run_as_user = kWorkerUid;
  psc.run_as_group = kWorkerUid;
  psc.fs_group = kWorkerUid;
  psc.seccomp_profile = kube::SeccompProfile{"RuntimeDefault", std::nullopt, {}};
  return psc;
}

kube::SecurityContext restrictedContainerSecurity() {
  kube::SecurityContext sc;
  sc.allow_privilege_escalation = false;
  sc.capabilities = kube::Capabilities{{}, {"ALL"}, {}};
  // Writable: the scratch emptyDir (TMPDIR) of every worker pod and the job's own volumes.
  sc.read_only_root_filesystem = true;
  return sc;
}

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};

void putString(std::string& out, std::string_view s) {
  const uint32_t n = static_cast<uint32_t>(s.size());
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  out.append(s);
}

}  // namespace

std::string workerName(const std::string& job, int index) {
  return job + "-worker-" + std::to_string(index);
}
std::string workerSelector(const std::string& job) {
  return std::string(kJobNameLabel) + "=" + job + "," + kRoleLabel + "=" + name(Role::kWorker) +
         ",!" + kStandbyLabel;
}
std::string configMapName(const std::string& job) { return job + "-config"; }
std::string secretName(const std::string& job) { return job + "-ssh"; }
std::string podName(const std::string& job, const JobSettings& settings, int index) {
  const Role role = settings.roleOf(index);
  return job + "-" + name(role) + "-" + std::to_string(settings.indexInRole(index));
}
std::string podHost(const std::string& job, const std::string& ns, const JobSettings& settings,
                    int index) {
  return podName(job, settings, index) + "." + job + "." + ns + ".svc";
}

const kube::OwnerReference* controllerOf(const kube::ObjectMeta& meta) {
  for (const kube::OwnerReference& ref : meta.owner_references) {
    if (ref.controller.value_or(false)) return &ref;
  }
  return nullptr;
}

int32_t metricsPort(const kube::TrainingJob& job) {
  return contract::trainerSettings(job.spec.trainer.value_or(kube::TrainerSpec{})).metrics_port;
}

kube::Service buildService(const kube::TrainingJob& job) {
  kube::Service svc;
  kube::setTypeMeta(svc);
  svc.metadata = childMeta(job, job.metadata.name);
  svc.spec.cluster_ip = "None";
  svc.spec.selector = jobLabels(job);
  svc.spec.publish_not_ready_addresses = true;
  for (auto [name, number] :
       {std::pair{"master", kMasterPortDefault}, std::pair{"rendezvous", kRendezvousPort}}) {
    kube::ServicePort p;
    p.name = name;
    p.port = number;
    p.target_port = kube::IntOrString(number);
    p.protocol = "TCP";
    svc.spec.ports.push_back(p);
  }
  return svc;
}

std::string trainerYaml(const kube::TrainingJob& job) {
  // As the job gives it: the trainer applies the defaults, the same ones (trainer_spec.h).
  const kube::TrainerSpec trainer = job.spec.trainer.value_or(kube::TrainerSpec{});
  YAML::Emitter out;
  emitJson(out, kube::encode(trainer));
  return std::string(out.c_str()) + "\n";
}

kube::ConfigMap buildConfigMap(const kube::TrainingJob& job) {
  kube::ConfigMap cm;
  kube::setTypeMeta(cm);
  cm.metadata = childMeta(job, configMapName(job.metadata.name));
  cm.data["trainer.yaml"] = trainerYaml(job);
  const JobSettings settings = settingsOf(job.spec);
  if (settings.launcher == contract::LauncherMode::kMpi) {
    std::string hostfile;
    const int slots = settings.procs_per_replica;
    for (int i = 0; i < settings.gangPods(); ++i) {
      hostfile += podHost(job.metadata.name, job.metadata.namespace_name, settings, i) +
                  " slots=" + std::to_string(slots) + "\n";
    }
    cm.data["hostfile"] = hostfile;
  }
  return cm;
}

core::Result<kube::Secret> buildSecret(const kube::TrainingJob& job) {
  const std::string what = "job " + job.metadata.name + ": SSH key: ";
  std::unique_ptr<EVP_PKEY, PkeyDeleter> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521"));
  if (!key) return core::internalError(what + "EVP_PKEY_Q_keygen(EC P-521) failed");
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey_traditional(bio.get(), key.get(), nullptr, nullptr, 0,
                                                   nullptr, nullptr) != 1) {
    return core::internalError(what + "PEM_write_bio_PrivateKey_traditional failed");
  }
  char* pem_data = nullptr;
  const long pem_size = BIO_get_mem_data(bio.get(), &pem_data);
  std::string private_pem(pem_data, static_cast<size_t>(pem_size));
  unsigned char point[200];
  size_t point_size = 0;
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point),
                                      &point_size) != 1) {
    return core::internalError(what + "EVP_PKEY_get_octet_string_param(pub) failed");
  }
  // RFC 5656 public key blob: string type, string curve, string Q.
  std::string blob;
  putString(blob, "ecdsa-sha2-nistp521");
  putString(blob, "nistp521");
  putString(blob, std::string_view(reinterpret_cast<const char*>(point), point_size));

  kube::Secret secret;
  kube::setTypeMeta(secret);
  secret.metadata = childMeta(job, secretName(job.metadata.name));
  secret.type = "kubernetes.io/ssh-auth";
  secret.data["ssh-privatekey"] = private_pem;
  secret.data["ssh-publickey"] = "ecdsa-sha2-nistp521 " + core::base64Encode(blob) + "\n";
  return secret;
}

std::optional<std::string> storeSecretOf(const kube::Pod& pod) {
  for (const kube::Container& c : pod.spec.containers) {
    if (c.name != kWorkerContainer) continue;
    for (const kube::EnvVar& e : c.env) {
      if (e.name == contract::store_secret::kEnv && e.value && !e.value->empty()) return e.value;
    }
  }
  return std::nullopt;
}

std::optional<std::string> storeSecretForAttempt(
    const std::vector<std::shared_ptr<const WorkerPod>>& pods, int attempt) {
  for (const auto& pod : pods) {
    if (pod && pod->attempt == attempt && pod->store_secret) return pod->store_secret;
  }
  return std::nullopt;
}

core::Result<std::string> newStoreSecret() { return rendezvous::generateSecret(); }

kube::Pod buildWorkerPod(const kube::TrainingJob& job, int index, int attempt,
                         const std::string& store_secret) {
  const std::string& name = job.metadata.name;
  const std::string& ns = job.metadata.namespace_name;
  const JobSettings settings = settingsOf(job.spec);
  const Role role = settings.roleOf(index);
  // The role's resources and template where it has its own.
  const kube::TrainingJobSpec s = specForRole(job.spec, role);
  const int pods = settings.gangPods();
  const int procs = settings.procs_per_replica;
  const bool mpi = settings.launcher == contract::LauncherMode::kMpi;

  kube::Pod pod;
  kube::setTypeMeta(pod);
  pod.metadata = childMeta(job, podName(name, settings, index));
  pod.metadata.labels[kReplicaIndexLabel] = std::to_string(index);
  pod.metadata.labels[kRoleLabel] = op::name(role);
  pod.metadata.labels[kAttemptLabel] = std::to_string(attempt);
  pod.spec.hostname = podName(name, settings, index);
  pod.spec.subdomain = name;
  pod.spec.restart_policy = "Never";

  kube::Container c;
  c.name = kWorkerContainer;
  c.image = s.image.value_or("");
  c.command = {"ringmaster-launcher"};
  if (s.command.empty()) {
    c.args = {std::string("--trainer-config=") + kConfigMountPath + "/trainer.yaml"};
  } else {
    c.args = {"--"};
    c.args.insert(c.args.end(), s.command.begin(), s.command.end());
  }
  contract::PodEnvironment worker_env;
  worker_env.node_rank = index;
  worker_env.nnodes = pods;
  worker_env.local_world_size = procs;
  worker_env.world_size = settings.worldSize();
  worker_env.master_addr = podHost(name, ns, settings, 0);
  worker_env.master_port = kMasterPortDefault;
  worker_env.store_port = kRendezvousPort;
  worker_env.job = name;
  worker_env.attempt = attempt;
  worker_env.backend = op::name(settings.backend);
  worker_env.store_secret = store_secret;
  worker_env.mode = settings.launcher;
  // A job that scales its workers: how many there are as this pod is made (the servers take
  // those in at the start, the others as they come).
  if (settings.scalesWorkers()) {
    worker_env.worker_pods = settings.replicas;
    worker_env.worker_slots = settings.workerSlots();
  }
  if (mpi) {
    worker_env.work_dir = std::string(kTmpMountPath) + "/mpi";
  }
  // A pbt member of a program of the user's own: the launcher runs its intervals.
  if (!s.command.empty() && s.trainer && s.trainer->pbt) {
    worker_env.pbt = kube::encode(*s.trainer->pbt).dump();
  }
  for (auto& [var, value] : contract::encode(worker_env)) {
    c.env.push_back(env(std::move(var), std::move(value)));
  }
  if (!s.command.empty() && !mpi) {
    // A user's program may be TensorFlow's: its cluster as TFJob gives it, every role's pods,
    // one task per process (the launcher sets each process's index).
    std::map<std::string, std::vector<std::string>> hosts;
    for (int i = 0; i < pods; ++i) {
      hosts[op::name(settings.roleOf(i))].push_back(podHost(name, ns, settings, i));
    }
    c.env.push_back(env(contract::kTfConfigEnv,
                        contract::encodeTfConfig(contract::clusterTfConfig(
                            hosts, procs, op::name(role), settings.indexInRole(index) * procs))));
  }
  c.env.push_back(fieldEnv(contract::pod_env::kPodIp, contract::pod_env::kPodIpField));
  c.env.push_back(fieldEnv(contract::pod_env::kPodName, contract::pod_env::kPodNameField));
  c.env.push_back(env("TMPDIR", kTmpMountPath));
  const WorkerAdditions additions = workerAdditions(s);
  // Last, so that the user's variables may refer to ours as $(NAME).
  for (const auto& given : additions.env) c.env.push_back(*given.item);
  c.ports = {port("master", kMasterPortDefault), port("rendezvous", kRendezvousPort),
             port("health", kHealthPort), port("metrics", metricsPort(job))};
  if (additions.resources.item) c.resources = *additions.resources.item;

  kube::VolumeMount config_mount;
  config_mount.name = "config";
  config_mount.mount_path = kConfigMountPath;
  config_mount.read_only = true;
  c.volume_mounts.push_back(config_mount);
  kube::Volume config_volume;
  config_volume.name = "config";
  config_volume.config_map = kube::ConfigMapVolumeSource{};
  config_volume.config_map->name = configMapName(name);
  pod.spec.volumes.push_back(config_volume);
  if (mpi) {
    // As the MPI Operator mounts its ssh-auth Secret: key, public key and authorized_keys.
    kube::Volume ssh;
    ssh.name = "ssh";
    ssh.secret = kube::SecretVolumeSource{};
    ssh.secret->secret_name = secretName(name);
    ssh.secret->default_mode = 0600;
    ssh.secret->items = {{"ssh-privatekey", "id_ecdsa", std::nullopt, {}},
                         {"ssh-publickey", "id_ecdsa.pub", std::nullopt, {}},
                         {"ssh-publickey", "authorized_keys", std::nullopt, {}}};
    pod.spec.volumes.push_back(ssh);
    kube::VolumeMount ssh_mount;
    ssh_mount.name = "ssh";
    ssh_mount.mount_path = kSshMountPath;
    ssh_mount.read_only = true;
    c.volume_mounts.push_back(ssh_mount);
  }
  // The root filesystem is read-only: the launcher writes the trainer's summary and, in MPI
  // mode, sshd's config and host key to the scratch emptyDir, Open MPI its session directory.
  kube::Volume tmp;
  tmp.name = kTmpVolume;
  tmp.empty_dir = kube::EmptyDirVolumeSource{};
  pod.spec.volumes.push_back(tmp);
  kube::VolumeMount tmp_mount;
  tmp_mount.name = kTmpVolume;
  tmp_mount.mount_path = kTmpMountPath;
  c.volume_mounts.push_back(tmp_mount);
  for (const auto& given : additions.volumes) pod.spec.volumes.push_back(*given.item);
  for (const auto& given : additions.volume_mounts) c.volume_mounts.push_back(*given.item);

  kube::Probe readiness;
  readiness.http_get = kube::HttpGetAction{};
  readiness.http_get->path = "/readyz";
  readiness.http_get->port = kube::IntOrString(kHealthPort);
  readiness.period_seconds = 1;
  c.readiness_probe = readiness;
  c.security_context = restrictedContainerSecurity();
  // The launcher leaves the outcome there (a failing rank's error line, rank 0's summary); a
  // launcher that could not, e.g. killed, still leaves its log's tail.
  c.termination_message_path = std::string(kube::kDefaultTerminationMessagePath);
  c.termination_message_policy = std::string(kube::kTerminationMessagePolicyFallbackToLogsOnError);
  pod.spec.containers.push_back(std::move(c));
  pod.spec.security_context = restrictedPodSecurity();
  // Workers never call the API server: no ServiceAccount token in the pod.
  pod.spec.automount_service_account_token = false;

  if (s.scheduling_policy && s.scheduling_policy->scheduler_name &&
      !s.scheduling_policy->scheduler_name->empty()) {
    pod.spec.scheduler_name = *s.scheduling_policy->scheduler_name;
    if (std::optional<PodGroupKind> kind = podGroupKindFor(job)) {
      if (kind->group == "scheduling.volcano.sh") {
        pod.metadata.annotations[kVolcanoGroupAnnotation] = name;
      } else {
        pod.metadata.labels[kPodGroupLabel] = name;
      }
    }
  }
  if (s.pod_template) applyPodTemplate(*s.pod_template, pod);
  joinQueuePodGroup(job, attempt, pod);
  if (index >= pods) {
    // Beyond an elastic job's world: the same pod, placed as a worker would be, holding no rank.
    pod.metadata.labels[kStandbyLabel] = "true";
    for (kube::Container& worker : pod.spec.containers) {
      if (worker.name != kWorkerContainer) continue;
      worker.args = {"--standby"};
      worker.readiness_probe.reset();
    }
  }
  return pod;
}

std::optional<PodGroupKind> podGroupKindFor(const kube::TrainingJob& job) {
  const std::string scheduler = settingsOf(job.spec).scheduler_name;
  if (scheduler.empty()) return std::nullopt;
  if (scheduler.find("volcano") != std::string::npos) {
    return PodGroupKind{"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup"};
  }
  if (scheduler.find("scheduler-plugins") != std::string::npos ||
      scheduler.find("coscheduling") != std::string::npos) {
    return PodGroupKind{"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"};
  }
  return std::nullopt;
}

std::string networkPolicyName(const std::string& job) { return job + "-workers"; }

kube::NetworkPolicy buildNetworkPolicy(const kube::TrainingJob& job) {
  const nlohmann::json job_pods = {{"matchLabels", jobLabels(job)}};
  kube::NetworkPolicy np;
  kube::setTypeMeta(np);
  np.metadata = childMeta(job, networkPolicyName(job.metadata.name));
  np.spec["podSelector"] = job_pods;
  np.spec["policyTypes"] = {"Ingress"};
  np.spec["ingress"] =
      nlohmann::json::array({{{"from", {{{"podSelector", job_pods}}}}},
                             {{"ports", {{{"protocol", "TCP"}, {"port", metricsPort(job)}}}}}});
  return np;
}

kube::PodGroup buildPodGroup(const kube::TrainingJob& job, const PodGroupKind& kind) {
  const JobSettings settings = settingsOf(job.spec);
  kube::PodGroup pg;
  pg.api_version = kind.group + "/" + kind.version;
  pg.kind = kind.kind;
  pg.metadata = childMeta(job, job.metadata.name);
  pg.spec.min_member = settings.gangPods();
  if (kind.group == "scheduling.x-k8s.io") {
    pg.spec.schedule_timeout_seconds = settings.schedule_timeout_seconds;
  }
  return pg;
}

}  // namespace ringmaster::op
