// labelSelector= and fieldSelector= query parameters (local/store/selectors.h). Input: the
// label selector on the first line, the field selector after it; each that parses is matched
// against a pod.
#include <string>

#include "local/store/selectors.h"

namespace {

using nlohmann::json;
using ringmaster::local::FieldSelector;
using ringmaster::local::LabelSelector;
using ringmaster::local::ResourceType;

const ResourceType& pods() {
  static const ResourceType* type = [] {
    auto* t = new ResourceType;
    t->version = "v1";
    t->resource = "pods";
    t->kind = "Pod";
    t->builtin = true;
    t->selectable_fields = {"spec.nodeName", "status.phase"};
    return t;
  }();
  return *type;
}

const json& pod() {
  static const json* p = new json(json::parse(R"({
    "metadata": {"name": "p-1", "namespace": "default",
                 "labels": {"app": "demo", "tier": "a", "example.com/x": "1", "empty": ""}},
    "spec": {"nodeName": "local"}, "status": {"phase": "Running"}
  })"));
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string labels = input.substr(0, eol);
  const std::string fields = eol == std::string::npos ? std::string() : input.substr(eol + 1);
  if (auto s = LabelSelector::parse(labels); s.ok()) {
    (void)s->matches(pod()["metadata"]["labels"]);
    (void)s->matches(json());
  }
  if (auto s = FieldSelector::parse(fields, pods()); s.ok()) (void)s->matches(pod());
  return 0;
}
