#include "local/controllers/workload_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ringmaster/core/fnv.h"
#include "ringmaster/core/json.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::local::controllers {
namespace {

using json = nlohmann::json;

const json& field(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

int intField(const json& obj, const char* key, int fallback) {
  const json& v = field(obj, key);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

int desiredReplicas(const json& obj) { return intField(field(obj, "spec"), "replicas", 1); }

bool terminating(const json& pod) {
  return field(field(pod, "metadata"), "deletionTimestamp").is_string();
}

bool active(const json& pod) {
  const std::string phase = core::stringMember(field(pod, "status"), "phase");
  return !terminating(pod) && phase != "Succeeded" && phase != "Failed";
}

// Which of two surplus pods to delete first: the one furthest from serving (unscheduled,
// pending, not ready), then the younger, as the ReplicaSet controller ranks them.
int readinessRank(const json& pod) {
  if (core::stringMember(field(pod, "spec"), "nodeName").empty()) return 0;
  if (core::stringMember(field(pod, "status"), "phase") == "Pending") return 1;
  return podReady(pod) ? 3 : 2;
}

// A condition {type, status, reason, message} whose lastTransitionTime (and lastUpdateTime, for
// Deployments) stays what `old` says while its status does not change.
json condition(const json& old_conditions, const std::string& type, bool status,
               const std::string& reason, const std::string& message, const std::string& now,
               bool with_update_time) {
  json c = {{"type", type},
            {"status", status ? "True" : "False"},
            {"reason", reason},
            {"message", message}};
  std::string transition = now;
  std::string update = now;
  if (old_conditions.is_array()) {
    for (const auto& o : old_conditions) {
      if (core::stringMember(o, "type") != type || core::stringMember(o, "status") != c["status"])
        continue;
      if (!core::stringMember(o, "lastTransitionTime").empty())
        transition = o["lastTransitionTime"];
      if (core::stringMember(o, "reason") == reason &&
          !core::stringMember(o, "lastUpdateTime").empty()) {
        update = o["lastUpdateTime"];
      }
    }
  }
  if (with_update_time) c["lastUpdateTime"] = update;
  c["lastTransitionTime"] = transition;
  return c;
}

// The template without the pod-template-hash label: what a ReplicaSet and its Deployment share.
json withoutHash(json pod_template) {
  json& labels = pod_template["metadata"]["labels"];
  if (labels.is_object()) labels.erase(kPodTemplateHashLabel);
  if (labels.is_object() && labels.empty()) pod_template["metadata"].erase("labels");
  if (pod_template["metadata"].empty()) pod_template.erase("metadata");
  return pod_template;
}

int revisionOf(const json& rs) {
  const std::string text =
      core::stringMember(field(field(rs, "metadata"), "annotations"), kRevisionAnnotation);
  try {
    return text.empty() ? 0 : std::stoi(text);
  } catch (const std::exception&) {
    return 0;
  }
}

json ownerReference(const json& owner, const std::string& api_version) {
  const json& meta = field(owner, "metadata");
  return {{"apiVersion", api_version},
          {"kind", core::stringMember(owner, "kind")},
          {"name", core::stringMember(meta, "name")},
          {"uid", core::stringMember(meta, "uid")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

}  // namespace

int resolveIntOrPercent(const json& value, int total, bool round_up, int fallback) {
  if (value.is_number_integer()) return std::max(0, value.get<int>());
  if (!value.is_string()) return fallback;
  std::string text = value.get<std::string>();
  if (text.empty() || text.back() != '%') {
    try {
      return std::max(0, std::stoi(text));
    } catch (const std::exception&) {
      return fallback;
    }
  }
  text.pop_back();
  int percent = 0;
  try {
    percent = std::stoi(text);
  } catch (const std::exception&) {
    return fallback;
  }
  const double exact = static_cast<double>(percent) * total / 100.0;
  return std::max(0, static_cast<int>(round_up ? std::ceil(exact) : std::floor(exact)));
}

int maxUnavailable(const json& deployment) {
  const json& strategy = field(field(deployment, "spec"), "strategy");
  const int replicas = desiredReplicas(deployment);
  if (core::stringMember(strategy, "type") != "RollingUpdate" || replicas == 0) return 0;
  const json& rolling = field(strategy, "rollingUpdate");
  const int surge = resolveIntOrPercent(field(rolling, "maxSurge"), replicas, true, 0);
  int unavailable = resolveIntOrPercent(field(rolling, "maxUnavailable"), replicas, false, 0);
  // Both zero would leave no way to make progress; Kubernetes then allows one unavailable.
  if (surge == 0 && unavailable == 0) unavailable = 1;
  return std::min(unavailable, replicas);
}

std::string podTemplateHash(const json& pod_template, int collision_count) {
  // FNV-1a over the canonical JSON: what Kubernetes hashes templates with.
  const uint32_t h =
      core::fnv1a32(withoutHash(pod_template).dump() + "/" + std::to_string(collision_count));
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  const std::string digits = std::to_string(h);
  for (char d : digits) out.push_back(kAlphabet[(d - '0') % (sizeof kAlphabet - 1)]);
  return out;
}

bool podReady(const json& pod) {
  const json& conditions = field(field(pod, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const auto& c : conditions) {
    if (core::stringMember(c, "type") == "Ready") return core::stringMember(c, "status") == "True";
  }
  return false;
}

bool podAvailable(const json& pod, int min_ready_seconds, TimePoint now) {
  if (!podReady(pod)) return false;
  if (min_ready_seconds <= 0) return true;
  for (const auto& c : field(field(pod, "status"), "conditions")) {
    if (core::stringMember(c, "type") != "Ready") continue;
    auto since = kube::Time::parse(core::stringMember(c, "lastTransitionTime"));
    if (!since.ok()) return false;
    return since->timePoint() + std::chrono::seconds(min_ready_seconds) <= now;
  }
  return false;
}

ReplicaSetPlan planReplicaSet(const json& replica_set, const std::vector<json>& pods,
                              TimePoint now) {
  ReplicaSetPlan plan;
  const json& spec = field(replica_set, "spec");
  const int desired = desiredReplicas(replica_set);
  const int min_ready = intField(spec, "minReadySeconds", 0);
  const json& template_labels = field(field(field(spec, "template"), "metadata"), "labels");
  std::vector<const json*> running;
  for (const auto& p : pods) {
    if (active(p)) running.push_back(&p);
  }
  const int have = static_cast<int>(running.size());
  if (have < desired) plan.create = desired - have;
  if (have > desired) {
    std::stable_sort(running.begin(), running.end(), [](const json* a, const json* b) {
      const int ra = readinessRank(*a), rb = readinessRank(*b);
      if (ra != rb) return ra < rb;
      return core::stringMember(field(*a, "metadata"), "creationTimestamp") >
             core::stringMember(field(*b, "metadata"), "creationTimestamp");
    });
    for (int i = 0; i < have - desired; ++i) {
      plan.remove.push_back(core::stringMember(field(*running[i], "metadata"), "name"));
    }
  }
  int labeled = 0, ready = 0, available = 0;
  for (const json* p : running) {
    const json& labels = field(field(*p, "metadata"), "labels");
    bool all = true;
    if (template_labels.is_object()) {
      for (const auto& [k, v] : template_labels.items()) {
        all = all && labels.is_object() && labels.contains(k) && labels[k] == v;
      }
    }
    labeled += all ? 1 : 0;
    ready += podReady(*p) ? 1 : 0;
    available += podAvailable(*p, min_ready, now) ? 1 : 0;
  }
  plan.status = {{"replicas", have},
                 {"fullyLabeledReplicas", labeled},
                 {"readyReplicas", ready},
                 {"availableReplicas", available},
                 {"observedGeneration", intField(field(replica_set, "metadata"), "generation", 0)}};
  return plan;
}

json podFor(const json& replica_set) {
  const json& meta = field(replica_set, "metadata");
  const json& tmpl = field(field(replica_set, "spec"), "template");
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  json pod_meta = field(tmpl, "metadata").is_object() ? field(tmpl, "metadata") : json::object();
  pod_meta.erase("name");
  pod_meta["generateName"] = core::stringMember(meta, "name") + "-";
  pod_meta["namespace"] = core::stringMember(meta, "namespace");
  pod_meta["ownerReferences"] = json::array({ownerReference(replica_set, "apps/v1")});
  pod["metadata"] = pod_meta;
  pod["spec"] = field(tmpl, "spec").is_object() ? field(tmpl, "spec") : json::object();
  return pod;
}

DeploymentPlan planDeployment(const json& deployment, const std::vector<json>& replica_sets,
                              TimePoint now) {
  DeploymentPlan plan;
  const json& meta = field(deployment, "metadata");
  const json& spec = field(deployment, "spec");
  const json& old_status = field(deployment, "status");
  const std::string name = core::stringMember(meta, "name");
  const int desired = desiredReplicas(deployment);
  const json pod_template = withoutHash(field(spec, "template"));
  const bool recreate = core::stringMember(field(spec, "strategy"), "type") == "Recreate";
  const bool paused = field(spec, "paused") == true;

  const json* current = nullptr;
  int max_revision = 0;
  for (const auto& rs : replica_sets) {
    max_revision = std::max(max_revision, revisionOf(rs));
    if (!current && withoutHash(field(field(rs, "spec"), "template")) == pod_template)
      current = &rs;
  }
  if (!current && !paused) {
    const int collisions = intField(old_status, "collisionCount", 0);
    const std::string hash = podTemplateHash(pod_template, collisions);
    json tmpl = pod_template;
    tmpl["metadata"]["labels"][kPodTemplateHashLabel] = hash;
    json selector = field(spec, "selector").is_object() ? field(spec, "selector") : json::object();
    selector["matchLabels"][kPodTemplateHashLabel] = hash;
    json rs_meta = {{"name", name + "-" + hash},
                    {"namespace", core::stringMember(meta, "namespace")},
                    {"labels", tmpl["metadata"]["labels"]},
                    {"annotations", {{kRevisionAnnotation, std::to_string(max_revision + 1)}}},
                    {"ownerReferences", json::array({ownerReference(deployment, "apps/v1")})}};
    json rs_spec = {{"replicas", desired}, {"selector", selector}, {"template", tmpl}};
    if (spec.contains("minReadySeconds")) rs_spec["minReadySeconds"] = spec["minReadySeconds"];
    plan.create = json{{"apiVersion", "apps/v1"},
                       {"kind", "ReplicaSet"},
                       {"metadata", rs_meta},
                       {"spec", rs_spec}};
  }

  const json& current_status = current ? field(*current, "status") : json();
  const int current_available = intField(current_status, "availableReplicas", 0);
  const bool current_ready = current && current_available >= desired &&
                             intField(current_status, "observedGeneration", -1) >=
                                 intField(field(*current, "metadata"), "generation", 0);
  int total = 0, ready = 0, available = 0;
  std::vector<const json*> retired;
  for (const auto& rs : replica_sets) {
    const json& st = field(rs, "status");
    total += intField(st, "replicas", 0);
    ready += intField(st, "readyReplicas", 0);
    available += intField(st, "availableReplicas", 0);
    const int replicas = desiredReplicas(rs);
    const std::string rs_name = core::stringMember(field(rs, "metadata"), "name");
    if (paused) continue;
    if (&rs == current) {
      if (replicas != desired) plan.scale.emplace_back(rs_name, desired);
    } else if (replicas != 0 && (recreate || current_ready)) {
      plan.scale.emplace_back(rs_name, 0);
    } else if (replicas == 0 && intField(st, "replicas", 0) == 0) {
      retired.push_back(&rs);
    }
  }
  const int history = intField(spec, "revisionHistoryLimit", 10);
  if (static_cast<int>(retired.size()) > history) {
    std::sort(retired.begin(), retired.end(),
              [](const json* a, const json* b) { return revisionOf(*a) < revisionOf(*b); });
    for (size_t i = 0; i + history < retired.size(); ++i) {
      plan.remove.push_back(core::stringMember(field(*retired[i], "metadata"), "name"));
    }
  }

  const std::string now_text = kube::Time(now).toString();
  const int updated = current ? intField(current_status, "replicas", 0) : 0;
  const bool minimum = available >= desired - maxUnavailable(deployment);
  const json& old_conditions = field(old_status, "conditions");
  json conditions = json::array();
  conditions.push_back(
      condition(old_conditions, "Available", minimum,
                minimum ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
                minimum ? "Deployment has minimum availability."
                        : "Deployment does not have minimum availability.",
                now_text, true));
  const std::string rs_name =
      current ? core::stringMember(field(*current, "metadata"), "name") : name + "-<new>";
  const bool complete = current_ready && updated == desired && total == desired;
  conditions.push_back(
      condition(old_conditions, "Progressing", true,
                complete ? "NewReplicaSetAvailable"
                         : (current ? "ReplicaSetUpdated" : "NewReplicaSetCreated"),
                complete ? "ReplicaSet \"" + rs_name + "\" has successfully progressed."
                         : "ReplicaSet \"" + rs_name + "\" is progressing.",
                now_text, true));
  plan.status = {{"observedGeneration", intField(meta, "generation", 0)},
                 {"replicas", total},
                 {"updatedReplicas", updated},
                 {"readyReplicas", ready},
                 {"availableReplicas", available},
                 {"conditions", conditions}};
  if (desired - available > 0) plan.status["unavailableReplicas"] = desired - available;
  if (old_status.contains("collisionCount"))
    plan.status["collisionCount"] = old_status["collisionCount"];
  return plan;
}

}  // namespace ringmaster::local::controllers
