#include "local/apiserver/builtin_defaults.h"

#include "ringmaster/kube/quantity.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

// Sets obj[key] = value unless obj already has the key.
void fill(json& obj, const char* key, json value) {
  if (!obj.contains(key)) obj[key] = std::move(value);
}

json* array(json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? &*it : nullptr;
}

void defaultProbe(json& container, const char* key) {
  auto it = container.find(key);
  if (it == container.end() || !it->is_object()) return;
  json& probe = *it;
  fill(probe, "timeoutSeconds", 1);
  fill(probe, "periodSeconds", 10);
  fill(probe, "successThreshold", 1);
  fill(probe, "failureThreshold", 3);
  if (probe.contains("httpGet") && probe["httpGet"].is_object()) {
    fill(probe["httpGet"], "path", "/");
    fill(probe["httpGet"], "scheme", "HTTP");
  }
}

// "busybox", "busybox:latest" -> Always; a tag or digest -> IfNotPresent (v1 defaults).
std::string pullPolicyFor(const std::string& image) {
  if (image.find('@') != std::string::npos) return "IfNotPresent";
  const size_t slash = image.rfind('/');
  const size_t colon = image.rfind(':');
  const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  if (!tagged || image.substr(colon + 1) == "latest") return "Always";
  return "IfNotPresent";
}

void defaultFieldRef(json& holder) {
  if (holder.contains("fieldRef") && holder["fieldRef"].is_object()) {
    fill(holder["fieldRef"], "apiVersion", "v1");
  }
}

void defaultContainer(json& c) {
  if (!c.is_object()) return;
  fill(c, "terminationMessagePath", "/dev/termination-log");
  fill(c, "terminationMessagePolicy", "File");
  if (c.contains("image") && c["image"].is_string()) {
    fill(c, "imagePullPolicy", pullPolicyFor(c["image"].get<std::string>()));
  }
  fill(c, "resources", json::object());
  json& resources = c["resources"];
  // Requests default to the limits, resource by resource.
  if (resources.is_object() && resources.contains("limits") && resources["limits"].is_object()) {
    json& requests = resources["requests"];
    if (requests.is_null()) requests = json::object();
    for (auto it = resources["limits"].begin(); it != resources["limits"].end(); ++it) {
      fill(requests, it.key().c_str(), it.value());
    }
  }
  if (json* ports = array(c, "ports")) {
    for (auto& p : *ports) {
      if (p.is_object()) fill(p, "protocol", "TCP");
    }
  }
  for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"}) {
    defaultProbe(c, probe);
  }
  if (json* env = array(c, "env")) {
    for (auto& e : *env) {
      if (e.is_object() && e.contains("valueFrom") && e["valueFrom"].is_object()) {
        defaultFieldRef(e["valueFrom"]);
      }
    }
  }
}

void defaultVolume(json& v) {
  if (!v.is_object()) return;
  bool has_source = false;
  for (auto it = v.begin(); it != v.end(); ++it) has_source |= it.key() != "name";
  if (!has_source) v["emptyDir"] = json::object();
  for (const char* source : {"configMap", "secret", "projected", "downwardAPI"}) {
    if (v.contains(source) && v[source].is_object()) fill(v[source], "defaultMode", 420);
  }
  if (v.contains("downwardAPI") && v["downwardAPI"].is_object()) {
    if (json* items = array(v["downwardAPI"], "items")) {
      for (auto& item : *items) defaultFieldRef(item);
    }
  }
}

// DefaultTolerationSeconds: pods ride out a NotReady or unreachable node for 5 minutes.
void addDefaultTolerations(json& spec) {
  json& tolerations = spec["tolerations"];
  if (!tolerations.is_array()) tolerations = json::array();
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    bool tolerated = false;
    for (const auto& t : tolerations) {
      const std::string effect = t.is_object() ? t.value("effect", "") : "";
      if (t.is_object() && t.value("key", "") == key && (effect.empty() || effect == "NoExecute")) {
        tolerated = true;
      }
    }
    if (!tolerated) {
      tolerations.push_back({{"key", key},
                             {"operator", "Exists"},
                             {"effect", "NoExecute"},
                             {"tolerationSeconds", 300}});
    }
  }
}

// The containers and init containers of a pod spec.
template <class Fn>
void forEachContainer(json& spec, Fn fn) {
  for (const char* list : {"initContainers", "containers"}) {
    if (json* cs = array(spec, list)) {
      for (auto& c : *cs) fn(c);
    }
  }
}

std::optional<int64_t> milli(const json& q) {
  if (!q.is_string() && !q.is_number()) return std::nullopt;
  auto parsed = kube::Quantity::parse(q.is_string() ? q.get<std::string>() : q.dump());
  if (!parsed.ok()) return std::nullopt;
  return parsed->milliValue();
}

// SetDefaults_PodSpec: what a pod spec gets wherever it appears, a workload's template included.
void defaultPodSpec(json& spec) {
  fill(spec, "dnsPolicy", "ClusterFirst");
  fill(spec, "restartPolicy", "Always");
  fill(spec, "terminationGracePeriodSeconds", 30);
  fill(spec, "securityContext", json::object());
  fill(spec, "schedulerName", "default-scheduler");
  forEachContainer(spec, defaultContainer);
  if (json* volumes = array(spec, "volumes")) {
    for (auto& v : *volumes) defaultVolume(v);
  }
}

}  // namespace

void defaultPod(json& pod, bool creating) {
  if (!pod.is_object()) return;
  json& spec = pod["spec"];
  if (!spec.is_object()) return;
  defaultPodSpec(spec);
  fill(spec, "enableServiceLinks", true);  // SetDefaults_Pod's, not the spec's: templates lack it
  if (!creating) return;
  // Admission, on create only.
  fill(spec, "serviceAccountName", "default");
  spec["serviceAccount"] = spec["serviceAccountName"];
  fill(spec, "priority", 0);
  fill(spec, "preemptionPolicy", "PreemptLowerPriority");
  addDefaultTolerations(spec);
  json& status = pod["status"];
  if (!status.is_object()) status = json::object();
  fill(status, "phase", "Pending");
  status["qosClass"] = podQosClass(pod);
}

std::string podQosClass(const json& pod) {
  bool any = false, guaranteed = true;
  json spec = pod.value("spec", json::object());
  forEachContainer(spec, [&](const json& c) {
    const json resources = c.is_object() ? c.value("resources", json::object()) : json::object();
    const json limits = resources.value("limits", json::object());
    const json requests = resources.value("requests", json::object());
    for (const char* name : {"cpu", "memory"}) {
      const int64_t limit = limits.contains(name) ? milli(limits[name]).value_or(0) : 0;
      const int64_t request = requests.contains(name) ? milli(requests[name]).value_or(0) : 0;
      any |= limit != 0 || request != 0;
      if (limit == 0 || request != limit) guaranteed = false;
    }
  });
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

std::optional<StatusError> podQuantityError(const json& pod) {
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) return std::nullopt;
  const json& spec = pod["spec"];
  for (const char* containers : {"initContainers", "containers"}) {
    auto list = spec.find(containers);
    if (list == spec.end() || !list->is_array()) continue;
    for (const json& c : *list) {
      if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
      const json& resources = c["resources"];
      for (const char* kind : {"limits", "requests"}) {
        if (!resources.contains(kind) || !resources[kind].is_object()) continue;
        for (const auto& q : resources[kind]) {
          // A JSON number is a quantity too (YAML's `cpu: 2`).
          const std::string text = q.is_string() ? q.get<std::string>() : q.dump();
          if (!(q.is_string() || q.is_number()) || !kube::Quantity::parse(text).ok()) {
            return badRequestError(
                "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the "
                "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
          }
        }
      }
    }
  }
  return std::nullopt;
}

void defaultService(json& service) {
  if (!service.is_object()) return;
  json& spec = service["spec"];
  if (!spec.is_object()) spec = json::object();
  fill(spec, "type", "ClusterIP");
  fill(spec, "sessionAffinity", "None");
  const std::string type = spec["type"].is_string() ? spec["type"].get<std::string>() : "";
  if (json* ports = array(spec, "ports")) {
    for (auto& p : *ports) {
      if (!p.is_object()) continue;
      fill(p, "protocol", "TCP");
      if (!p.contains("targetPort") || p["targetPort"] == 0 || p["targetPort"] == "") {
        if (p.contains("port")) p["targetPort"] = p["port"];
      }
    }
  }
  if (type == "ExternalName") return;
  fill(spec, "internalTrafficPolicy", "Cluster");
  if (spec.contains("clusterIP") && spec["clusterIP"].is_string() &&
      !spec["clusterIP"].get<std::string>().empty()) {
    fill(spec, "clusterIPs", json::array({spec["clusterIP"]}));
  }
  fill(spec, "ipFamilies", json::array({"IPv4"}));
  fill(spec, "ipFamilyPolicy", "SingleStack");
  json& status = service["status"];
  if (!status.is_object()) status = json::object();
  fill(status, "loadBalancer", json::object());
}

std::optional<StatusError> serviceError(const json& service) {
  if (!service.is_object() || !service.contains("spec") || !service["spec"].is_object()) {
    return std::nullopt;
  }
  const json& ports = service["spec"].value("ports", json::array());
  if (!ports.is_array() || ports.size() < 2) return std::nullopt;
  std::vector<StatusCause> causes;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (!ports[i].is_object() || ports[i].value("name", "").empty()) {
      causes.push_back(
          {"FieldValueRequired", "Required value", "spec.ports[" + std::to_string(i) + "].name"});
    }
  }
  if (causes.empty()) return std::nullopt;
  const json& meta = service.value("metadata", json::object());
  return invalidError("Service", "", meta.is_object() ? meta.value("name", "") : "",
                      std::move(causes));
}

void defaultEvent(json& event) {
  if (!event.is_object()) return;
  fill(event, "eventTime", nullptr);
  fill(event, "reportingComponent", "");
  fill(event, "reportingInstance", "");
}

void defaultNamespace(json& ns, bool creating) {
  if (!ns.is_object()) return;
  json& meta = ns["metadata"];
  if (meta.is_object() && meta.contains("name") && meta["name"].is_string()) {
    meta["labels"]["kubernetes.io/metadata.name"] = meta["name"];
  }
  if (creating) {
    json& spec = ns["spec"];
    if (!spec.is_object()) spec = json::object();
    fill(spec, "finalizers", json::array({"kubernetes"}));
    json& status = ns["status"];
    if (!status.is_object()) status = json::object();
    fill(status, "phase", "Active");
  }
}

void defaultWorkload(json& workload, bool creating) {
  if (!workload.is_object()) return;
  json& spec = workload["spec"];
  if (!spec.is_object()) return;
  if (creating) fill(workload, "status", json::object());
  // A ReplicaSet's status.replicas is not omitempty: its zero reads back.
  if (workload.value("kind", "") == "ReplicaSet" && workload.contains("status") &&
      workload["status"].is_object())
    fill(workload["status"], "replicas", 0);
  fill(spec, "replicas", 1);
  if (auto pod_template = spec.find("template");
      pod_template != spec.end() && pod_template->is_object()) {
    // A template's metadata is an ObjectMeta, whose zero creationTimestamp reads back as null.
    json& meta = (*pod_template)["metadata"];
    if (!meta.is_object()) meta = json::object();
    fill(meta, "creationTimestamp", nullptr);
    if (auto pod_spec = pod_template->find("spec");
        pod_spec != pod_template->end() && pod_spec->is_object())
      defaultPodSpec(*pod_spec);
  }
  if (workload.value("kind", "") != "Deployment") return;
  fill(spec, "revisionHistoryLimit", 10);
  fill(spec, "progressDeadlineSeconds", 600);
  json& strategy = spec["strategy"];
  if (!strategy.is_object()) strategy = json::object();
  fill(strategy, "type", "RollingUpdate");
  if (strategy["type"] == "RollingUpdate") {
    json& rolling = strategy["rollingUpdate"];
    if (!rolling.is_object()) rolling = json::object();
    fill(rolling, "maxUnavailable", "25%");
    fill(rolling, "maxSurge", "25%");
  }
}

void addServiceAccountVolume(json& pod, const std::string& suffix) {
  if (!pod.is_object() || !pod["spec"].is_object()) return;
  json& spec = pod["spec"];
  if (spec.value("automountServiceAccountToken", true) == false) return;
  bool mounted = false;
  forEachContainer(spec, [&](json& c) {
    if (!c.is_object() || !c.contains("volumeMounts") || !c["volumeMounts"].is_array()) return;
    for (const auto& m : c["volumeMounts"]) {
      if (m.is_object() && m.value("mountPath", "") == kServiceAccountMountPath) mounted = true;
    }
  });
  if (mounted) return;
  const std::string name = "kube-api-access-" + suffix;
  json sources = json::array();
  sources.push_back({{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}});
  sources.push_back({{"configMap",
                      {{"name", "kube-root-ca.crt"},
                       {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}}}});
  sources.push_back(
      {{"downwardAPI",
        {{"items",
          json::array(
              {{{"path", "namespace"},
                {"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}}})}}}});
  json& volumes = spec["volumes"];
  if (!volumes.is_array()) volumes = json::array();
  volumes.push_back({{"name", name}, {"projected", {{"defaultMode", 420}, {"sources", sources}}}});
  forEachContainer(spec, [&](json& c) {
    if (!c.is_object()) return;
    json& mounts = c["volumeMounts"];
    if (!mounts.is_array()) mounts = json::array();
    mounts.push_back({{"name", name}, {"readOnly", true}, {"mountPath", kServiceAccountMountPath}});
  });
}

void defaultNode(json& node) {
  if (!node.is_object()) return;
  fill(node, "spec", json::object());
  json& status = node["status"];
  if (!status.is_object()) status = json::object();
  if (json* conditions = array(status, "conditions")) {
    for (auto& c : *conditions) {
      if (!c.is_object()) continue;
      fill(c, "lastHeartbeatTime", nullptr);
      fill(c, "lastTransitionTime", nullptr);
    }
  }
  json& endpoints = status["daemonEndpoints"];
  if (!endpoints.is_object()) endpoints = json::object();
  json& kubelet = endpoints["kubeletEndpoint"];
  if (!kubelet.is_object()) kubelet = json::object();
  fill(kubelet, "Port", 0);
  json& info = status["nodeInfo"];
  if (!info.is_object()) info = json::object();
  for (const char* field :
       {"architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
        "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID"})
    fill(info, field, "");
}

}  // namespace ringmaster::local
