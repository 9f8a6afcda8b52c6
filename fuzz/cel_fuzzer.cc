// CEL rules of CRD x-kubernetes-validations (local/apiserver/cel.h). Input: the rule on the
// first line, then the JSON bound to `self` (and `oldSelf`); when that is not valid JSON a
// fixed object with every JSON type stands in, so mutations of the rule alone stay useful.
#include <string>

#include "local/apiserver/cel.h"

namespace {

using nlohmann::json;

const json& fallbackSelf() {
  static const json* self = new json(json::parse(R"({
    "metadata": {"name": "job-1", "labels": {"app": "x"}},
    "spec": {"replicas": 2, "procsPerReplica": 1, "lr": 0.5, "on": true, "none": null,
             "names": ["a", "bb", "ccc"], "nums": [1, 2, 3], "nested": [[1], [2, 3]]}
  })"));
  return *self;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string rule = input.substr(0, eol);
  json self = eol == std::string::npos
                  ? json()
                  : json::parse(input.substr(eol + 1), nullptr, /*allow_exceptions=*/false);
  if (self.is_discarded() || self.is_null()) self = fallbackSelf();
  (void)ringmaster::local::celUsesOldSelf(rule);
  auto result = ringmaster::local::evaluateCel(rule, self, &self);
  if (result.kind == ringmaster::local::CelResult::kOk) {
    (void)result.value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return 0;
}
