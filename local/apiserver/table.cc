#include "local/apiserver/table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <utility>

#include "ringmaster/kube/time.h"

namespace ringmaster::local {
namespace {

using ordered = nlohmann::ordered_json;

constexpr const char* kNameDescription =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "http://kubernetes.io/docs/user-guide/identifiers#names";
constexpr const char* kSelectorDescription =
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
    "ones affected by this deployment.";
constexpr const char* kCreationDescription =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";

ordered column(const std::string& name, const std::string& type, const std::string& description,
               int priority = 0, const std::string& format = "") {
  return ordered{{"name", name},
                 {"type", type},
                 {"format", format},
                 {"description", description},
                 {"priority", priority}};
}

std::string ageOf(const nlohmann::json& ts, std::chrono::system_clock::time_point now) {
  if (!ts.is_string()) return "<unknown>";
  core::Result<kube::Time> t = kube::Time::parse(ts.get<std::string>());
  if (!t.ok()) return "<unknown>";
  return humanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - t->timePoint()));
}

std::string str(const nlohmann::json& obj, const std::string& path, const std::string& dflt) {
  auto v = evalJsonPath(obj, path);
  if (v.is_string() && !v.get<std::string>().empty()) return v.get<std::string>();
  return dflt;
}

size_t sizeOf(const nlohmann::json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? it->size() : 0;
}

int64_t intAt(const nlohmann::json& obj, const std::string& path, int64_t dflt = 0) {
  auto v = evalJsonPath(obj, path);
  return v.is_number_integer() ? v.get<int64_t>() : dflt;
}

// labels.FormatLabels: "k=v,k2=v2" sorted by key, "<none>" when empty.
std::string formatLabels(const nlohmann::json& labels) {
  if (!labels.is_object() || labels.empty()) return "<none>";
  std::string out;
  for (const auto& [key, value] : labels.items()) {  // nlohmann::json keeps keys sorted
    if (!out.empty()) out += ",";
    out += key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

// metav1.LabelSelectorAsSelector(...).String(): requirements sorted by key, matchLabels as
// "k=v", expressions as "k in (a,b)", "k notin (a,b)", "k", "!k"; "" for an empty selector.
std::string formatSelector(const nlohmann::json& selector) {
  std::vector<std::pair<std::string, std::string>> requirements;  // key, text
  if (auto labels = selector.find("matchLabels"); labels != selector.end() && labels->is_object()) {
    for (const auto& [key, value] : labels->items())
      requirements.emplace_back(key,
                                key + "=" + (value.is_string() ? value.get<std::string>() : ""));
  }
  if (auto expressions = selector.find("matchExpressions");
      expressions != selector.end() && expressions->is_array()) {
    for (const auto& e : *expressions) {
      const std::string key = e.value("key", "");
      const std::string op = e.value("operator", "");
      std::vector<std::string> values;
      if (auto v = e.find("values"); v != e.end() && v->is_array())
        for (const auto& item : *v)
          if (item.is_string()) values.push_back(item.get<std::string>());
      std::sort(values.begin(), values.end());
      std::string joined;
      for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
      if (op == "In") requirements.emplace_back(key, key + " in (" + joined + ")");
      if (op == "NotIn") requirements.emplace_back(key, key + " notin (" + joined + ")");
      if (op == "Exists") requirements.emplace_back(key, key);
      if (op == "DoesNotExist") requirements.emplace_back(key, "!" + key);
    }
  }
  std::stable_sort(requirements.begin(), requirements.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& r : requirements) out += (out.empty() ? "" : ",") + r.second;
  return out;
}

// The -o wide columns Deployments and ReplicaSets share: their template's containers and
// images, and their selector.
void addWorkloadWideColumns(ordered& cols) {
  cols.push_back(column("Containers", "string", "Names of each container in the template.", 1));
  cols.push_back(
      column("Images", "string", "Images referenced by each container in the template.", 1));
  cols.push_back(column("Selector", "string", kSelectorDescription, 1));
}

// Their cells: layoutContainerCells' names and images, each joined by ",", then the selector.
void addWorkloadWideCells(const nlohmann::json& workload, ordered& cells) {
  std::string names, images;
  const auto containers = evalJsonPath(workload, ".spec.template.spec.containers");
  if (containers.is_array()) {
    for (const auto& c : containers) {
      if (!names.empty()) names += ',', images += ',';
      names += c.value("name", "");
      images += c.value("image", "");
    }
  }
  cells.push_back(names);
  cells.push_back(images);
  cells.push_back(formatSelector(evalJsonPath(workload, ".spec.selector")));
}

// printNode's Status: Ready / NotReady (Unknown without a Ready condition), then
// SchedulingDisabled for a cordoned node.
std::string nodeStatus(const nlohmann::json& node) {
  std::string status = "Unknown";
  const auto conditions = evalJsonPath(node, ".status.conditions");
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      if (c.value("type", "") == "Ready")
        status = c.value("status", "") == "True" ? "Ready" : "NotReady";
    }
  }
  if (evalJsonPath(node, ".spec.unschedulable") == true) status += ",SchedulingDisabled";
  return status;
}

// findNodeRoles: node-role.kubernetes.io/<role> labels and kubernetes.io/role's value, sorted
// and unique, "<none>" without any.
std::string nodeRoles(const nlohmann::json& node) {
  std::set<std::string> roles;
  const auto labels = evalJsonPath(node, ".metadata.labels");
  if (labels.is_object()) {
    const std::string prefix = "node-role.kubernetes.io/";
    for (const auto& [key, value] : labels.items()) {
      if (key.rfind(prefix, 0) == 0 && key.size() > prefix.size())
        roles.insert(key.substr(prefix.size()));
      if (key == "kubernetes.io/role" && value.is_string() && !value.get<std::string>().empty())
        roles.insert(value.get<std::string>());
    }
  }
  std::string out;
  for (const auto& r : roles) out += (out.empty() ? "" : ",") + r;
  return out.empty() ? "<none>" : out;
}

// The node's first address of `type` ("<none>" without one).
std::string nodeAddress(const nlohmann::json& node, const std::string& type) {
  const auto addresses = evalJsonPath(node, ".status.addresses");
  if (addresses.is_array())
    for (const auto& a : addresses)
      if (a.value("type", "") == type) return a.value("address", "");
  return "<none>";
}

// printPod's readiness gates cell: "<true>/<gates>", "<none>" without gates.
std::string readinessGates(const nlohmann::json& pod) {
  const auto gates = evalJsonPath(pod, ".spec.readinessGates");
  if (!gates.is_array() || gates.empty()) return "<none>";
  const auto conditions = evalJsonPath(pod, ".status.conditions");
  int ready = 0;
  for (const auto& gate : gates) {
    if (!conditions.is_array()) break;
    for (const auto& c : conditions) {
      if (c.value("type", "") != gate.value("conditionType", "")) continue;
      if (c.value("status", "") == "True") ++ready;
      break;
    }
  }
  return std::to_string(ready) + "/" + std::to_string(gates.size());
}

// kubectl's Service PORT(S): "80/TCP", "80:30080/TCP", comma-separated; "<none>" without ports.
std::string servicePorts(const nlohmann::json& service) {
  const auto ports = evalJsonPath(service, ".spec.ports");
  if (!ports.is_array() || ports.empty()) return "<none>";
  std::string out;
  for (const auto& p : ports) {
    if (!out.empty()) out += ",";
    out += std::to_string(p.value("port", 0));
    if (p.contains("nodePort")) out += ":" + std::to_string(p.value("nodePort", 0));
    out += '/';
    out += p.value("protocol", std::string("TCP"));
  }
  return out;
}

// kubectl's pod STATUS column, the common cases of printPod.
std::string podStatus(const nlohmann::json& pod) {
  std::string reason = str(pod, ".status.phase", "");
  if (auto r = str(pod, ".status.reason", ""); !r.empty()) reason = r;
  // A pod held by its scheduling gates says so, as kubectl 1.27 and later print it.
  const auto conditions = evalJsonPath(pod, ".status.conditions");
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      if (c.is_object() && c.value("type", "") == "PodScheduled" &&
          c.value("reason", "") == "SchedulingGated") {
        reason = "SchedulingGated";
      }
    }
  }
  const auto statuses = evalJsonPath(pod, ".status.containerStatuses");
  if (statuses.is_array()) {
    for (const auto& cs : statuses) {
      auto waiting = evalJsonPath(cs, ".state.waiting.reason");
      auto terminated = evalJsonPath(cs, ".state.terminated.reason");
      if (waiting.is_string() && !waiting.get<std::string>().empty()) {
        reason = waiting.get<std::string>();
      } else if (terminated.is_string() && !terminated.get<std::string>().empty()) {
        reason = terminated.get<std::string>();
      }
    }
  }
  if (evalJsonPath(pod, ".metadata.deletionTimestamp").is_string()) reason = "Terminating";
  return reason;
}

ordered podCells(const nlohmann::json& pod) {
  size_t total = 0, ready = 0;
  int64_t restarts = 0;
  auto containers = evalJsonPath(pod, ".spec.containers");
  if (containers.is_array()) total = containers.size();
  auto statuses = evalJsonPath(pod, ".status.containerStatuses");
  if (statuses.is_array()) {
    for (const auto& cs : statuses) {
      if (cs.value("ready", false)) ++ready;
      restarts += cs.value("restartCount", int64_t{0});
    }
  }
  return ordered::array({std::to_string(ready) + "/" + std::to_string(total), podStatus(pod),
                         std::to_string(restarts)});
}

}  // namespace

IncludeObject parseIncludeObject(const std::string& text) {
  if (text == "None") return IncludeObject::kNone;
  if (text == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

std::string humanDuration(std::chrono::seconds d) {
  const int64_t seconds = d.count();
  char buf[64];
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    if (s == 0) return std::to_string(minutes) + "m";
    snprintf(buf, sizeof(buf), "%lldm%llds", static_cast<long long>(minutes),
             static_cast<long long>(s));
    return buf;
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  const int64_t hours = seconds / 3600;
  if (hours < 8) {
    int64_t m = minutes % 60;
    if (m == 0) return std::to_string(hours) + "h";
    return std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    if (h == 0) return std::to_string(hours / 24) + "d";
    return std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    if (dy == 0) return std::to_string(hours / 24 / 365) + "y";
    return std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

nlohmann::json evalJsonPath(const nlohmann::json& obj, const std::string& path) {
  const nlohmann::json* cur = &obj;
  size_t i = 0;
  std::string p = path;
  if (p.size() >= 2 && p.front() == '{' && p.back() == '}') p = p.substr(1, p.size() - 2);
  while (i < p.size()) {
    if (p[i] == '.') {
      ++i;
      size_t end = p.find_first_of(".[", i);
      std::string field = p.substr(i, end == std::string::npos ? std::string::npos : end - i);
      i = end == std::string::npos ? p.size() : end;
      if (field.empty()) continue;
      if (!cur->is_object()) return nullptr;
      auto it = cur->find(field);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (p[i] == '[') {
      size_t end = p.find(']', i);
      if (end == std::string::npos) return nullptr;
      std::string index = p.substr(i + 1, end - i - 1);
      i = end + 1;
      if (!cur->is_array() || index.empty() ||
          index.find_first_not_of("0123456789") != std::string::npos) {
        return nullptr;
      }
      size_t n = std::stoul(index);
      if (n >= cur->size()) return nullptr;
      cur = &(*cur)[n];
    } else {
      return nullptr;
    }
  }
  return *cur;
}

// kube-apiserver's event printer: what `kubectl get events` shows (LAST SEEN, TYPE, REASON,
// OBJECT, MESSAGE), the rest with -o wide.
ordered eventColumns() {
  ordered cols = ordered::array();
  cols.push_back(
      column("Last Seen", "string",
             "The time at which the most recent occurrence of this event was recorded."));
  cols.push_back(
      column("Type", "string",
             "Type of this event (Normal, Warning), new types could be added in the future"));
  cols.push_back(column("Reason", "string",
                        "This should be a short, machine understandable string that gives the "
                        "reason for the transition into the object's current status."));
  cols.push_back(column("Object", "string", "The object that this event is about."));
  cols.push_back(column("Subobject", "string",
                        "If referring to a piece of an object instead of an entire object, this "
                        "string should contain a valid JSON/Go field access statement, such as "
                        "desiredState.manifest.containers[2].",
                        1));
  cols.push_back(column("Source", "string",
                        "The component reporting this event. Should be a short machine "
                        "understandable string.",
                        1));
  cols.push_back(
      column("Message", "string", "A human-readable description of the status of this operation."));
  cols.push_back(column("First Seen", "string",
                        "The time at which the event was first recorded. (Time of server receipt "
                        "is in TypeMeta.)",
                        1));
  cols.push_back(column("Count", "string", "The number of times this event has occurred.", 1));
  cols.push_back(column("Name", "string", kNameDescription, 1, "name"));
  return cols;
}

// printEvent's cells: ages of the last and first time seen (a series' last observation wins;
// eventTime stands in for a missing firstTimestamp), "kind/name" of the object, the source as
// "component, host" (the reporting controller and instance when the source is empty).
ordered eventCells(const nlohmann::json& obj, std::chrono::system_clock::time_point now) {
  auto set = [&](const char* path) {
    const auto v = evalJsonPath(obj, path);
    return v.is_string() && !v.get<std::string>().empty() ? v : nlohmann::json();
  };
  const nlohmann::json first_ts = set(".firstTimestamp");
  std::string first = ageOf(first_ts.is_null() ? set(".eventTime") : first_ts, now);
  std::string last = set(".lastTimestamp").is_null() ? first : ageOf(set(".lastTimestamp"), now);
  int64_t count = intAt(obj, ".count");
  if (evalJsonPath(obj, ".series").is_object()) {
    last = ageOf(set(".series.lastObservedTime"), now);
    count = intAt(obj, ".series.count");
  } else if (count == 0) {
    count = 1;
  }
  std::string kind = str(obj, ".involvedObject.kind", "");
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string name = str(obj, ".involvedObject.name", "");
  const std::string component = str(obj, ".source.component", str(obj, ".reportingComponent", ""));
  const std::string instance = str(obj, ".source.host", str(obj, ".reportingInstance", ""));
  std::string source = component;
  if (!component.empty() && !instance.empty()) source += ", " + instance;
  std::string message = str(obj, ".message", "");
  const size_t begin = message.find_first_not_of(" \t\r\n");
  message = begin == std::string::npos
                ? ""
                : message.substr(begin, message.find_last_not_of(" \t\r\n") - begin + 1);
  ordered cells = ordered::array();
  cells.push_back(last);
  cells.push_back(str(obj, ".type", ""));
  cells.push_back(str(obj, ".reason", ""));
  cells.push_back(name.empty() ? kind : kind + "/" + name);
  cells.push_back(str(obj, ".involvedObject.fieldPath", ""));
  cells.push_back(source);
  cells.push_back(message);
  cells.push_back(first);
  cells.push_back(count);
  cells.push_back(str(obj, ".metadata.name", ""));
  return cells;
}

nlohmann::ordered_json tableColumns(const ApiResource& r) {
  if (r.printer == TablePrinter::kEvent) return eventColumns();
  ordered cols = ordered::array();
  cols.push_back(column("Name", "string", kNameDescription, 0, "name"));
  switch (r.printer) {
    case TablePrinter::kColumns:
      for (const auto& c : r.columns) {
        std::string description =
            c.description.empty()
                ? "Custom resource definition column (in JSONPath format): " + c.json_path
                : c.description;
        cols.push_back(column(c.name, c.type, description, c.priority, c.format));
      }
      break;
    case TablePrinter::kScale:
      cols.push_back(column("Desired", "integer", "Number of desired replicas"));
      cols.push_back(column("Available", "integer", "Number of actual replicas"));
      cols.push_back(column("Age", "date", kCreationDescription));
      break;
    case TablePrinter::kPod:
      cols.push_back(column("Ready", "string",
                            "The aggregate readiness state of this pod for accepting traffic."));
      cols.push_back(
          column("Status", "string", "The aggregate status of the containers in this pod."));
      cols.push_back(column("Restarts", "string",
                            "The number of times the containers in this pod have been restarted "
                            "and when the last container in this pod has restarted."));
      cols.push_back(column("Age", "string", kCreationDescription));
      cols.push_back(column("IP", "string",
                            "IP address allocated to the pod. Routable at least within the "
                            "cluster. Empty if not yet allocated.",
                            1));
      cols.push_back(column("Node", "string",
                            "NodeName is a request to schedule this pod onto a specific node.", 1));
      cols.push_back(column("Nominated Node", "string",
                            "nominatedNodeName is set only when this pod preempts other pods on "
                            "the node, but it cannot be scheduled right away as preemption "
                            "victims receive their graceful termination periods.",
                            1));
      cols.push_back(column("Readiness Gates", "string",
                            "If specified, all readiness gates will be evaluated for pod "
                            "readiness.",
                            1));
      break;
    case TablePrinter::kConfigMap:
      cols.push_back(column("Data", "integer", "Data contains the configuration data."));
      cols.push_back(column("Age", "string", kCreationDescription));
      break;
    case TablePrinter::kSecret:
      cols.push_back(column("Type", "string", "The type of the secret."));
      cols.push_back(column("Data", "integer", "The number of entries in the secret."));
      cols.push_back(column("Age", "string", kCreationDescription));
      break;
    case TablePrinter::kNamespace:
      cols.push_back(column("Status", "string", "The status of the namespace."));
      cols.push_back(column("Age", "string", kCreationDescription));
      break;
    case TablePrinter::kService:
      cols.push_back(column("Type", "string", "The type of the service."));
      cols.push_back(column("Cluster-IP", "string", "The cluster IP of the service."));
      cols.push_back(column("External-IP", "string", "The external IPs of the service."));
      cols.push_back(column("Port(s)", "string", "The ports of the service."));
      cols.push_back(column("Age", "string", kCreationDescription));
      cols.push_back(column("Selector", "string",
                            "Route service traffic to pods with label keys and values matching "
                            "this selector.",
                            1));
      break;
    case TablePrinter::kServiceAccount:
      cols.push_back(column("Secrets", "string", "The number of secrets of the service account."));
      cols.push_back(column("Age", "string", kCreationDescription));
      break;
    case TablePrinter::kDeployment:
      cols.push_back(column("Ready", "string", "Number of the pod with ready state"));
      cols.push_back(column("Up-to-date", "string",
                            "Total number of non-terminated pods targeted "
                            "by this deployment that have the desired "
                            "template spec."));
      cols.push_back(column("Available", "string",
                            "Total number of available pods (ready for at least minReadySeconds) "
                            "targeted by this deployment."));
      cols.push_back(column("Age", "string", kCreationDescription));
      addWorkloadWideColumns(cols);
      break;
    case TablePrinter::kReplicaSet:
      cols.push_back(column("Desired", "integer", "Number of desired pods."));
      cols.push_back(column("Current", "integer", "The number of replicas of the replica set."));
      cols.push_back(column("Ready", "integer", "The number of ready replicas."));
      cols.push_back(column("Age", "string", kCreationDescription));
      addWorkloadWideColumns(cols);
      break;
    case TablePrinter::kNode:
      cols.push_back(column("Status", "string", "The status of the node"));
      cols.push_back(column("Roles", "string", "The roles of the node"));
      cols.push_back(column("Age", "string", kCreationDescription));
      cols.push_back(column("Version", "string", "Kubelet Version reported by the node."));
      cols.push_back(column("Internal-IP", "string", "The node's internal address.", 1));
      cols.push_back(column("External-IP", "string", "The node's external address.", 1));
      cols.push_back(column("OS-Image", "string",
                            "OS Image reported by the node from /etc/os-release (e.g. Debian "
                            "GNU/Linux 7 (wheezy)).",
                            1));
      cols.push_back(column("Kernel-Version", "string",
                            "Kernel Version reported by the node from 'uname -r' (e.g. "
                            "3.16.0-0.bpo.4-amd64).",
                            1));
      cols.push_back(column("Container-Runtime", "string",
                            "ContainerRuntime Version reported by the node through runtime remote "
                            "API (e.g. containerd://1.4.2).",
                            1));
      break;
    case TablePrinter::kDefault:
    case TablePrinter::kEvent:
      cols.push_back(column("Created At", "date", kCreationDescription));
      break;
  }
  return cols;
}

nlohmann::ordered_json tableRow(const ApiResource& r, const nlohmann::json& obj,
                                IncludeObject include, std::chrono::system_clock::time_point now) {
  ordered cells = ordered::array();
  if (r.printer != TablePrinter::kEvent) cells.push_back(str(obj, ".metadata.name", ""));
  const auto created = evalJsonPath(obj, ".metadata.creationTimestamp");
  switch (r.printer) {
    case TablePrinter::kColumns:
      for (const auto& c : r.columns) {
        auto v = evalJsonPath(obj, c.json_path);
        if (v.is_null()) {
          cells.push_back(nullptr);
        } else if (c.type == "date") {
          cells.push_back(ageOf(v, now));
        } else if (c.type == "integer" || c.type == "number" || c.type == "boolean") {
          cells.push_back(ordered::parse(v.dump()));
        } else if (v.is_string()) {
          cells.push_back(v.get<std::string>());
        } else {
          cells.push_back(v.dump());
        }
      }
      break;
    case TablePrinter::kScale:
      cells.push_back(ordered::parse(evalJsonPath(obj, ".spec.replicas").dump()));
      cells.push_back(ordered::parse(evalJsonPath(obj, ".status.replicas").dump()));
      cells.push_back(ageOf(created, now));
      break;
    case TablePrinter::kPod:
      for (auto& c : podCells(obj)) cells.push_back(c);
      cells.push_back(ageOf(created, now));
      cells.push_back(str(obj, ".status.podIP", "<none>"));
      cells.push_back(str(obj, ".spec.nodeName", "<none>"));
      cells.push_back(str(obj, ".status.nominatedNodeName", "<none>"));
      cells.push_back(readinessGates(obj));
      break;
    case TablePrinter::kConfigMap:
      cells.push_back(sizeOf(obj, "data") + sizeOf(obj, "binaryData"));
      cells.push_back(ageOf(created, now));
      break;
    case TablePrinter::kSecret:
      cells.push_back(str(obj, ".type", "Opaque"));
      cells.push_back(sizeOf(obj, "data"));
      cells.push_back(ageOf(created, now));
      break;
    case TablePrinter::kNamespace:
      cells.push_back(str(obj, ".status.phase", "Active"));
      cells.push_back(ageOf(created, now));
      break;
    case TablePrinter::kService:
      cells.push_back(str(obj, ".spec.type", "ClusterIP"));
      cells.push_back(str(obj, ".spec.clusterIP", "<none>"));
      cells.push_back("<none>");
      cells.push_back(servicePorts(obj));
      cells.push_back(ageOf(created, now));
      cells.push_back(formatLabels(evalJsonPath(obj, ".spec.selector")));
      break;
    case TablePrinter::kServiceAccount:
      cells.push_back(std::to_string(
          evalJsonPath(obj, ".secrets").is_array() ? evalJsonPath(obj, ".secrets").size() : 0));
      cells.push_back(ageOf(created, now));
      break;
    case TablePrinter::kDeployment:
      cells.push_back(std::to_string(intAt(obj, ".status.readyReplicas")) + "/" +
                      std::to_string(intAt(obj, ".spec.replicas", 1)));
      cells.push_back(std::to_string(intAt(obj, ".status.updatedReplicas")));
      cells.push_back(std::to_string(intAt(obj, ".status.availableReplicas")));
      cells.push_back(ageOf(created, now));
      addWorkloadWideCells(obj, cells);
      break;
    case TablePrinter::kReplicaSet:
      cells.push_back(intAt(obj, ".spec.replicas", 1));
      cells.push_back(intAt(obj, ".status.replicas"));
      cells.push_back(intAt(obj, ".status.readyReplicas"));
      cells.push_back(ageOf(created, now));
      addWorkloadWideCells(obj, cells);
      break;
    case TablePrinter::kNode: {
      auto info = [&](const std::string& field) {
        const std::string v = str(obj, ".status.nodeInfo." + field, "");
        return v.empty() ? std::string("<unknown>") : v;
      };
      cells.push_back(nodeStatus(obj));
      cells.push_back(nodeRoles(obj));
      cells.push_back(ageOf(created, now));
      cells.push_back(str(obj, ".status.nodeInfo.kubeletVersion", ""));
      cells.push_back(nodeAddress(obj, "InternalIP"));
      cells.push_back(nodeAddress(obj, "ExternalIP"));
      cells.push_back(info("osImage"));
      cells.push_back(info("kernelVersion"));
      cells.push_back(info("containerRuntimeVersion"));
      break;
    }
    case TablePrinter::kDefault:
      cells.push_back(created.is_string() ? ordered(created.get<std::string>()) : ordered());
      break;
    case TablePrinter::kEvent:
      cells = eventCells(obj, now);
      break;
  }
  ordered row;
  row["cells"] = cells;
  if (include == IncludeObject::kObject) {
    row["object"] = ordered::parse(obj.dump());
  } else if (include == IncludeObject::kMetadata) {
    ordered meta;
    meta["kind"] = "PartialObjectMetadata";
    meta["apiVersion"] = "meta.k8s.io/v1";
    auto m = obj.find("metadata");
    meta["metadata"] = m != obj.end() ? ordered::parse(m->dump()) : ordered::object();
    row["object"] = meta;
  }
  return row;
}

std::string tableText(const ApiResource& resource, const std::vector<ObjectPtr>& objects,
                      uint64_t resource_version, IncludeObject include, bool with_columns,
                      std::chrono::system_clock::time_point now) {
  ordered doc;
  doc["kind"] = "Table";
  doc["apiVersion"] = "meta.k8s.io/v1";
  doc["metadata"] = {{"resourceVersion", std::to_string(resource_version)}};
  doc["columnDefinitions"] = with_columns ? tableColumns(resource) : ordered();
  ordered rows = ordered::array();
  for (const auto& o : objects) rows.push_back(tableRow(resource, o->object, include, now));
  doc["rows"] = rows;
  return doc.dump();
}

}  // namespace ringmaster::local
