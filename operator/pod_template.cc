#include "operator/pod_template.h"

#include <set>

#include "operator/builders.h"
#include "operator/queue_admission.h"
#include "ringmaster/kube/names.h"

namespace ringmaster::op {
namespace {

using contract::FieldErrors;

// Pod fields outside the modelled ones that a template may pass through: none of them touches
// what the operator wires (DNS and runtime choices). Anything else, e.g. hostNetwork, would put
// ranks on the node's ports or namespaces and is refused.
const std::set<std::string>& passThroughPodFields() {
  static const std::set<std::string> kFields = {
      "runtimeClassName",      "dnsPolicy",       "dnsConfig", "hostAliases", "enableServiceLinks",
      "shareProcessNamespace", "preemptionPolicy"};
  return kFields;
}

std::string at(const std::string& prefix, size_t i) {
  return prefix + "[" + std::to_string(i) + "]";
}

void joinProblems(FieldErrors& e, const std::string& field, const std::string& value,
                  const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  std::string all;
  for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
  e.add(field, contract::invalidValue(value, all));
}

void validateMetadata(const kube::ObjectMeta& m, FieldErrors& e) {
  const std::string p = "spec.template.metadata";
  auto owned = [&](bool set, const char* field) {
    if (set) e.add(p + "." + field, "set by the operator on each worker pod");
  };
  owned(!m.name.empty(), "name");
  owned(!m.generate_name.empty(), "generateName");
  owned(!m.namespace_name.empty(), "namespace");
  owned(!m.owner_references.empty(), "ownerReferences");
  owned(!m.finalizers.empty(), "finalizers");
  e.unknownFields(p, m.extra);
  for (const auto& [key, value] : m.labels) {
    const std::string field = p + ".labels[" + key + "]";
    if (operatorOwnedLabel(key)) {
      e.add(field, "set by the operator on each worker pod");
      continue;
    }
    joinProblems(e, field, key, kube::labelKeyProblems(key));
    joinProblems(e, field, value, kube::labelValueProblems(value));
  }
  for (const auto& [key, value] : m.annotations) {
    const std::string field = p + ".annotations[" + key + "]";
    if (operatorOwnedAnnotation(key)) {
      e.add(field, "set by the operator on each worker pod");
      continue;
    }
    joinProblems(e, field, key, kube::labelKeyProblems(key));
  }
}

// Ports the worker container listens on; another container of the pod shares its network.
std::set<int32_t> workerPorts(int32_t metrics_port) {
  std::set<int32_t> ports = {kMasterPortDefault, kRendezvousPort, kHealthPort, kSshPort};
  if (metrics_port > 0) ports.insert(metrics_port);
  return ports;
}

// The worker: only its resources, env and volumeMounts come from the template.
void validateWorker(const kube::Container& c, const std::string& p, FieldErrors& e) {
  auto owned = [&](bool set, const char* field, const char* instead) {
    if (set) e.add(p + "." + field, std::string("set by the operator") + instead);
  };
  owned(!c.image.empty(), "image", "; give the image in spec.image");
  owned(!c.command.empty(), "command", "; give your program in spec.command");
  owned(!c.args.empty(), "args", "; give your program and its arguments in spec.command");
  owned(!c.ports.empty(), "ports", " (rendezvous, health and metrics)");
  owned(!c.working_dir.empty(), "workingDir", "");
  owned(c.readiness_probe.has_value(), "readinessProbe", " (the launcher's /readyz)");
  owned(c.liveness_probe.has_value(), "livenessProbe", "");
  owned(c.security_context.has_value(), "securityContext",
        "; set spec.template.spec.securityContext for the pod");
  owned(c.termination_message_path.has_value(), "terminationMessagePath", "");
  owned(c.termination_message_policy.has_value(), "terminationMessagePolicy", "");
  if (c.extra.is_object()) {
    for (const auto& [key, value] : c.extra.items()) {
      e.add(p + "." + key,
            "not supported on the worker container; it takes resources, env and volumeMounts");
    }
  }
}

// A sidecar or init container: the user's own, checked where the pod would fail to start.
void validateExtraContainer(const kube::Container& c, const std::string& p,
                            const std::set<int32_t>& taken_ports,
                            const std::set<std::string>& volumes, FieldErrors& e) {
  if (c.image.empty()) e.add(p + ".image", "required");
  for (size_t j = 0; j < c.ports.size(); ++j) {
    const int32_t port = c.ports[j].container_port;
    if (taken_ports.count(port)) {
      e.add(at(p + ".ports", j) + ".containerPort",
            "port " + std::to_string(port) +
                " is the worker's (rendezvous, health, ssh or metrics); the pod's containers "
                "share one network");
    }
  }
  for (size_t j = 0; j < c.volume_mounts.size(); ++j) {
    const std::string& name = c.volume_mounts[j].name;
    if (!volumes.count(name)) {
      e.add(at(p + ".volumeMounts", j) + ".name", "names no volume of the pod: \"" + name + "\"");
    }
  }
}

void validateSpec(const kube::TrainingJobSpec& s, int32_t metrics_port, FieldErrors& e) {
  const kube::PodSpec& t = s.pod_template->spec;
  const std::string p = "spec.template.spec";
  auto owned = [&](bool set, const char* field, const std::string& instead) {
    if (set) e.add(p + "." + field, "set by the operator" + instead);
  };
  owned(!t.restart_policy.empty(), "restartPolicy",
        " (Never: a failed rank restarts the whole gang, see spec.restartPolicy)");
  owned(!t.node_name.empty(), "nodeName", "; choose nodes with nodeSelector or affinity");
  owned(!t.hostname.empty(), "hostname", " (each worker's own name)");
  owned(!t.subdomain.empty(), "subdomain", " (the job's headless Service)");
  owned(!t.scheduler_name.empty(), "schedulerName", "; set spec.schedulingPolicy.schedulerName");
  if (t.extra.is_object()) {
    for (const auto& [key, value] : t.extra.items()) {
      if (!passThroughPodFields().count(key)) {
        e.add(p + "." + key, "not supported in a TrainingJob's pod template");
      }
    }
  }
  // The schema's maxItems, for a server that skipped it.
  auto atMost = [&](const char* field, size_t n, size_t max) {
    if (n > max) {
      e.add(p + "." + field,
            "must have at most " + std::to_string(max) + " items, got " + std::to_string(n));
    }
  };
  auto passThroughCount = [&](const char* field) -> size_t {
    return t.extra.is_object() && t.extra.contains(field) ? t.extra[field].size() : 0;
  };
  atMost("tolerations", t.tolerations.size(), 64);
  atMost("topologySpreadConstraints", t.topology_spread_constraints.size(), 16);
  atMost("imagePullSecrets", t.image_pull_secrets.size(), 16);
  atMost("schedulingGates", t.scheduling_gates.size(), 16);
  atMost("hostAliases", passThroughCount("hostAliases"), 64);
  atMost("volumes", t.volumes.size(), 64);
  atMost("initContainers", t.init_containers.size(), 16);
  atMost("containers", t.containers.size(), 16);
  for (size_t i = 0; i < t.tolerations.size(); ++i) {
    const kube::Toleration& tol = t.tolerations[i];
    const std::string tp = at(p + ".tolerations", i);
    e.unknownFields(tp, tol.extra);
    e.oneOf(tp + ".operator", tol.operator_name, {"Exists", "Equal"});
    e.oneOf(tp + ".effect", tol.effect, {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    if (tol.operator_name == "Exists" && tol.value && !tol.value->empty()) {
      e.add(tp + ".value", "must be empty when operator is Exists");
    }
    if ((!tol.key || tol.key->empty()) && tol.operator_name != "Exists") {
      e.add(tp + ".key", "required unless operator is Exists (which tolerates every taint)");
    }
  }
  auto passThroughString = [&](const char* field) -> std::optional<std::string> {
    if (!t.extra.is_object() || !t.extra.contains(field)) return std::nullopt;
    const nlohmann::json& v = t.extra[field];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  e.oneOf(p + ".dnsPolicy", passThroughString("dnsPolicy"),
          {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"});
  e.oneOf(p + ".preemptionPolicy", passThroughString("preemptionPolicy"),
          {"PreemptLowerPriority", "Never"});
  e.atLeast(p + ".terminationGracePeriodSeconds", t.termination_grace_period_seconds, int64_t{0});
  for (const auto& [key, value] : t.node_selector) {
    const std::string field = p + ".nodeSelector[" + key + "]";
    joinProblems(e, field, key, kube::labelKeyProblems(key));
    joinProblems(e, field, value, kube::labelValueProblems(value));
  }

  // Container names are unique in a pod; the worker's is the operator's.
  std::set<std::string> names = {kWorkerContainer};
  auto checkName = [&](const kube::Container& c, const std::string& cp, bool worker_allowed) {
    if (c.name.empty()) {
      e.add(cp + ".name", "required");
      return;
    }
    joinProblems(e, cp + ".name", c.name, kube::dns1123LabelProblems(c.name));
    if (c.name == kWorkerContainer) {
      if (!worker_allowed) {
        e.add(cp + ".name", std::string("\"") + kWorkerContainer +
                                "\" is the operator's worker container, not an init container");
      }
    } else if (!names.insert(c.name).second) {
      e.add(cp + ".name", "duplicate container name \"" + c.name + "\"");
    }
  };

  // Every volume of the pod: the operator's and those the job adds.
  std::set<std::string> volumes = {"config", "ssh", kTmpVolume};
  for (const auto& v : s.volumes) volumes.insert(v.name);
  for (const auto& v : t.volumes) volumes.insert(v.name);
  const std::set<int32_t> taken = workerPorts(metrics_port);

  bool worker_seen = false;
  for (size_t i = 0; i < t.containers.size(); ++i) {
    const kube::Container& c = t.containers[i];
    const std::string cp = at(p + ".containers", i);
    checkName(c, cp, true);
    if (c.name == kWorkerContainer) {
      if (worker_seen) e.add(cp + ".name", "duplicate container name \"worker\"");
      worker_seen = true;
      validateWorker(c, cp, e);
      if (c.resources && s.resources) {
        e.add(cp + ".resources",
              "spec.resources is set too; give the worker's resources in one place");
      }
    } else if (!c.name.empty()) {
      validateExtraContainer(c, cp, taken, volumes, e);
    }
  }
  for (size_t i = 0; i < t.init_containers.size(); ++i) {
    const kube::Container& c = t.init_containers[i];
    const std::string cp = at(p + ".initContainers", i);
    checkName(c, cp, false);
    validateExtraContainer(c, cp, {}, volumes, e);
  }
}

void addVolumes(const kube::TrainingJobSpec& s, WorkerAdditions& out) {
  for (size_t i = 0; i < s.volumes.size(); ++i) {
    out.volumes.push_back({at("spec.volumes", i), &s.volumes[i]});
  }
  if (!s.pod_template) return;
  const auto& tv = s.pod_template->spec.volumes;
  for (size_t i = 0; i < tv.size(); ++i) {
    out.volumes.push_back({at("spec.template.spec.volumes", i), &tv[i]});
  }
}

}  // namespace

bool operatorOwnedLabel(const std::string& key) {
  return key == kJobNameLabel || key == kReplicaIndexLabel || key == kAttemptLabel ||
         key == kRoleLabel || key == kPodGroupLabel || key == kPodGroupNameLabel;
}

bool operatorOwnedAnnotation(const std::string& key) {
  return key == kVolcanoGroupAnnotation || key == kPodGroupTotalCountAnnotation ||
         key == kRetriableInGroupAnnotation;
}

const kube::Container* templateWorker(const kube::TrainingJobSpec& spec) {
  if (!spec.pod_template) return nullptr;
  for (const kube::Container& c : spec.pod_template->spec.containers) {
    if (c.name == kWorkerContainer) return &c;
  }
  return nullptr;
}

WorkerAdditions workerAdditions(const kube::TrainingJobSpec& s) {
  WorkerAdditions out;
  for (size_t i = 0; i < s.env.size(); ++i) out.env.push_back({at("spec.env", i), &s.env[i]});
  for (size_t i = 0; i < s.volume_mounts.size(); ++i) {
    out.volume_mounts.push_back({at("spec.volumeMounts", i), &s.volume_mounts[i]});
  }
  addVolumes(s, out);
  if (s.resources) out.resources = {"spec.resources", &*s.resources};
  if (!s.pod_template) return out;
  const auto& containers = s.pod_template->spec.containers;
  for (size_t c = 0; c < containers.size(); ++c) {
    if (containers[c].name != kWorkerContainer) continue;
    const kube::Container& w = containers[c];
    const std::string p = at("spec.template.spec.containers", c);
    for (size_t i = 0; i < w.env.size(); ++i) out.env.push_back({at(p + ".env", i), &w.env[i]});
    for (size_t i = 0; i < w.volume_mounts.size(); ++i) {
      out.volume_mounts.push_back({at(p + ".volumeMounts", i), &w.volume_mounts[i]});
    }
    // Both is refused by validatePodTemplate.
    if (w.resources && !out.resources.item) out.resources = {p + ".resources", &*w.resources};
    break;
  }
  return out;
}

void validatePodTemplate(const kube::TrainingJob& job, int32_t metrics_port, FieldErrors& e) {
  for (const auto& [key, value] : job.metadata.labels) {
    if (operatorOwnedLabel(key)) {
      e.add("metadata.labels[" + key + "]",
            "set by the operator on the job's pods, Service and ConfigMap, which carry the "
            "job's labels");
    }
  }
  const kube::TrainingJobSpec& s = job.spec;
  if (!s.pod_template) return;
  e.unknownFields("spec.template", s.pod_template->extra);
  validateMetadata(s.pod_template->metadata, e);
  validateSpec(s, metrics_port, e);
}

void applyPodTemplate(const kube::PodTemplateSpec& tmpl, kube::Pod& pod) {
  // The operator's labels are in place; validation refused a template key among them.
  pod.metadata.labels.insert(tmpl.metadata.labels.begin(), tmpl.metadata.labels.end());
  pod.metadata.annotations.insert(tmpl.metadata.annotations.begin(),
                                  tmpl.metadata.annotations.end());
  const kube::PodSpec& t = tmpl.spec;
  kube::PodSpec& spec = pod.spec;
  spec.node_selector = t.node_selector;
  spec.tolerations = t.tolerations;
  spec.affinity = t.affinity;
  spec.topology_spread_constraints = t.topology_spread_constraints;
  spec.priority_class_name = t.priority_class_name;
  spec.image_pull_secrets = t.image_pull_secrets;
  spec.scheduling_gates = t.scheduling_gates;
  if (!t.service_account_name.empty()) spec.service_account_name = t.service_account_name;
  if (t.automount_service_account_token) {
    spec.automount_service_account_token = t.automount_service_account_token;
  }
  if (t.termination_grace_period_seconds) {
    spec.termination_grace_period_seconds = t.termination_grace_period_seconds;
  }
  if (t.security_context) {
    // Field by field over the operator's restricted defaults.
    kube::PodSecurityContext& psc = *spec.security_context;
    const kube::PodSecurityContext& u = *t.security_context;
    if (u.run_as_user) psc.run_as_user = u.run_as_user;
    if (u.run_as_group) psc.run_as_group = u.run_as_group;
    if (u.run_as_non_root) psc.run_as_non_root = u.run_as_non_root;
    if (u.fs_group) psc.fs_group = u.fs_group;
    if (!u.supplemental_groups.empty()) psc.supplemental_groups = u.supplemental_groups;
    if (u.seccomp_profile) psc.seccomp_profile = u.seccomp_profile;
    if (u.extra.is_object()) {
      if (!psc.extra.is_object()) psc.extra = nlohmann::json::object();
      psc.extra.update(u.extra);
    }
  }
  if (t.extra.is_object()) {
    if (!spec.extra.is_object()) spec.extra = nlohmann::json::object();
    spec.extra.update(t.extra);
  }
  spec.init_containers.insert(spec.init_containers.end(), t.init_containers.begin(),
                              t.init_containers.end());
  for (const kube::Container& c : t.containers) {
    if (c.name != kWorkerContainer) spec.containers.push_back(c);
  }
}

}  // namespace ringmaster::op
