#include "local/kubelet/placement.h"

#include <algorithm>
#include <cstdlib>

namespace ringmaster::local::kubelet {
namespace {

// Toleration.ToleratesTaint: the effect matches (empty tolerates all), and the key with operator
// Exists (empty key: every key) or key and value with Equal (the default).
bool tolerates(const kube::Toleration& t, const kube::Taint& taint) {
  if (t.effect && !t.effect->empty() && *t.effect != taint.effect) return false;
  const std::string key = t.key.value_or("");
  if (!key.empty() && key != taint.key) return false;
  const std::string op = t.operator_name.value_or("Equal");
  if (op == "Exists") return true;
  if (op == "Equal" || op.empty()) return t.value.value_or("") == taint.value;
  return false;
}

std::optional<std::string> labelOf(const kube::Node& node, const std::string& key) {
  auto it = node.metadata.labels.find(key);
  if (it == node.metadata.labels.end()) return std::nullopt;
  return it->second;
}

bool parseInt(const std::string& s, long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return end != nullptr && *end == '\0';
}

// One NodeSelectorRequirement against a value that may be missing.
bool requirementHolds(const nlohmann::json& req, const std::optional<std::string>& value) {
  if (!req.is_object()) return false;
  const std::string op = req.value("operator", "");
  std::vector<std::string> values;
  if (req.contains("values") && req["values"].is_array()) {
    for (const auto& v : req["values"]) {
      if (!v.is_string()) return false;
      values.push_back(v.get<std::string>());
    }
  }
  const bool listed = value && std::find(values.begin(), values.end(), *value) != values.end();
  if (op == "In") return listed;
  if (op == "NotIn") return !listed;
  if (op == "Exists") return value.has_value();
  if (op == "DoesNotExist") return !value.has_value();
  if (op == "Gt" || op == "Lt") {
    long long have = 0, bound = 0;
    if (!value || values.size() != 1 || !parseInt(*value, have) || !parseInt(values[0], bound)) {
      return false;
    }
    return op == "Gt" ? have > bound : have < bound;
  }
  return false;
}

// A NodeSelectorTerm: every matchExpressions entry on the labels, every matchFields entry on
// the node's fields (metadata.name is the only one Kubernetes defines). An empty term matches
// nothing.
bool termMatches(const nlohmann::json& term, const kube::Node& node) {
  if (!term.is_object()) return false;
  bool any = false;
  for (const char* kind : {"matchExpressions", "matchFields"}) {
    if (!term.contains(kind)) continue;
    if (!term[kind].is_array()) return false;
    for (const auto& req : term[kind]) {
      any = true;
      const std::string key = req.is_object() ? req.value("key", "") : "";
      std::optional<std::string> value;
      if (std::string(kind) == "matchFields") {
        if (key != "metadata.name") return false;
        value = node.metadata.name;
      } else {
        value = labelOf(node, key);
      }
      if (!requirementHolds(req, value)) return false;
    }
  }
  return any;
}

}  // namespace

bool isNodeConditionTaint(const kube::Taint& taint) {
  return taint.key == "node.kubernetes.io/not-ready" ||
         taint.key == "node.kubernetes.io/unreachable";
}

std::optional<std::string> untoleratedTaint(const kube::PodSpec& pod, const kube::Node& node) {
  for (const kube::Taint& taint : node.spec.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    if (isNodeConditionTaint(taint)) continue;
    const bool tolerated = std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                                       [&](const auto& t) { return tolerates(t, taint); });
    if (!tolerated) return "{" + taint.key + ": " + taint.value + "}";
  }
  return std::nullopt;
}

bool matchesNodeSelectorAndAffinity(const kube::PodSpec& pod, const kube::Node& node) {
  for (const auto& [key, value] : pod.node_selector) {
    if (labelOf(node, key) != value) return false;
  }
  const nlohmann::json& affinity = pod.affinity;
  if (!affinity.is_object() || !affinity.contains("nodeAffinity")) return true;
  const nlohmann::json& node_affinity = affinity["nodeAffinity"];
  const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  if (!node_affinity.is_object() || !node_affinity.contains(kRequired)) return true;
  const nlohmann::json& required = node_affinity[kRequired];
  if (!required.is_object() || !required.contains("nodeSelectorTerms")) return false;
  const nlohmann::json& terms = required["nodeSelectorTerms"];
  if (!terms.is_array()) return false;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const nlohmann::json& term) { return termMatches(term, node); });
}

std::optional<std::string> placementProblem(const kube::PodSpec& pod, const kube::Node& node) {
  if (auto taint = untoleratedTaint(pod, node)) return "node(s) had untolerated taint " + *taint;
  if (!matchesNodeSelectorAndAffinity(pod, node)) {
    return std::string("node(s) didn't match Pod's node affinity/selector");
  }
  return std::nullopt;
}

bool placementInputsChanged(const kube::Node& before, const kube::Node& after) {
  return before.spec != after.spec || before.metadata.labels != after.metadata.labels ||
         before.status.allocatable != after.status.allocatable;
}

}  // namespace ringmaster::local::kubelet
