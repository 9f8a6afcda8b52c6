#include "local/apiserver/pod_binding.h"

#include "ringmaster/core/json.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using core::stringMember;

const ResourceKey kPods{"", "pods"};
const ResourceKey kBindings{"", "pods/binding"};

}  // namespace

ApiResult<ObjectPtr> bindPod(ObjectStore& store, const std::string& ns, const std::string& name,
                             const json& binding, const std::string& now_text) {
  const json meta = binding.contains("metadata") ? binding["metadata"] : json::object();
  const std::string body_name = stringMember(meta, "name");
  if (!body_name.empty() && body_name != name) {
    return badRequestError("name in URL does not match name in Binding object");
  }
  const json target = binding.contains("target") ? binding["target"] : json::object();
  const std::string node = stringMember(target, "name");
  const std::string kind = stringMember(target, "kind");
  if (!kind.empty() && kind != "Node") {
    return invalidError(
        "Binding", "", name,
        {{"FieldValueInvalid", "Invalid value: \"" + kind + "\": must be empty or 'Node'",
          "target.kind"}});
  }
  if (node.empty()) {
    return invalidError("Binding", "", name,
                        {{"FieldValueRequired", "Required value", "target.name"}});
  }
  return store.mutate(kPods, ns, name, [&](json& pod) -> std::optional<StatusError> {
    if (pod["metadata"].contains("deletionTimestamp")) {
      return conflictError(kBindings, name,
                           "pod " + name + " is being deleted, cannot be assigned to a host");
    }
    const std::string bound = stringMember(pod["spec"], "nodeName");
    if (!bound.empty()) {
      return conflictError(kBindings, name,
                           "pod " + name + " is already assigned to node \"" + bound + "\"");
    }
    pod["spec"]["nodeName"] = node;
    json& conditions = pod["status"]["conditions"];
    if (!conditions.is_array()) conditions = json::array();
    json scheduled = {{"type", "PodScheduled"},
                      {"status", "True"},
                      {"lastProbeTime", nullptr},
                      {"lastTransitionTime", now_text}};
    bool replaced = false;
    for (auto& c : conditions) {
      if (stringMember(c, "type") == "PodScheduled") {
        c = scheduled;
        replaced = true;
      }
    }
    if (!replaced) conditions.push_back(scheduled);
    return std::nullopt;
  });
}

}  // namespace ringmaster::local
