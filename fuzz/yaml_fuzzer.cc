// Multi-document YAML manifests as `ringmaster local run -f FILE` reads them:
// local/run/yaml_documents.h.
#include <string>

#include "local/run/yaml_documents.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto docs = ringmaster::local::parseYamlDocuments(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  // Applying sends each document as a JSON body.
  if (docs.ok()) {
    for (const auto& doc : *docs) (void)doc.dump();
  }
  return 0;
}
