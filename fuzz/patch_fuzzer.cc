// PATCH bodies (local/store/patch.h): JSON merge, JSON patch (RFC 6902) and strategic merge.
// Input: first byte picks the type, then one line with the target object (a pod stands in
// when it is not a JSON object), then the patch body exactly as a client sends it.
#include <string>

#include "local/store/patch.h"

namespace {

using nlohmann::json;
using ringmaster::local::PatchType;

const json& fallbackTarget() {
  static const json* pod = new json(json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["f1"],
                 "ownerReferences": [{"uid": "u1", "name": "o"}]},
    "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "E", "value": "1"}],
                             "ports": [{"containerPort": 80}],
                             "volumeMounts": [{"name": "v", "mountPath": "/m"}]}],
             "volumes": [{"name": "v", "emptyDir": {}}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]}
  })"));
  return *pod;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static constexpr PatchType kTypes[] = {PatchType::kMerge, PatchType::kJson,
                                         PatchType::kStrategicMerge};
  const PatchType type = kTypes[data[0] % 3];
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t eol = rest.find('\n');
  if (eol == std::string::npos) return 0;
  json target = json::parse(rest.substr(0, eol), nullptr, /*allow_exceptions=*/false);
  if (target.is_discarded() || !target.is_object()) target = fallbackTarget();
  auto patched =
      ringmaster::local::applyPatch(type, target, std::string_view(rest).substr(eol + 1));
  if (patched.ok()) (void)patched->dump(-1, ' ', false, json::error_handler_t::replace);
  return 0;
}
