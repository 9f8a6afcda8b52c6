// JSON request bodies of the API server (create/update of a custom resource): parsed as all
// outside JSON is (core::parseJson, with its nesting bound), then admitted against the
// TrainingJob CRD's own schema (crds/trainingjob.yaml: pruning, defaults, OpenAPI checks,
// x-kubernetes-validations CEL rules), as an update against itself too so that transition rules
// run.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "local/apiserver/schema.h"
#include "ringmaster/core/json.h"
#include "ringmaster/kube/yaml_documents.h"

namespace {

using nlohmann::json;

const json& trainingJobSchema() {
  static const json* schema = [] {
    auto docs = ringmaster::kube::readYamlDocuments(RM_SOURCE_DIR "/crds/trainingjob.yaml");
    if (!docs.ok() || docs->empty()) {
      std::fprintf(stderr, "fuzz: cannot read the CRD: %s\n",
                   docs.ok() ? "no document" : docs.status().message().c_str());
      std::abort();
    }
    return new json((*docs)[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]);
  }();
  return *schema;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  trainingJobSchema();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed =
      ringmaster::core::parseJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!parsed.ok() || !parsed->is_object()) return 0;
  const json& body = *parsed;
  const json& schema = trainingJobSchema();
  json created = body;
  (void)ringmaster::local::admitCustomResource(created, nullptr, schema, false);
  json updated = body;
  (void)ringmaster::local::admitCustomResource(updated, &created, schema, false);
  // The store keeps the admitted object as text.
  (void)created.dump(-1, ' ', false, json::error_handler_t::replace);
  return 0;
}
