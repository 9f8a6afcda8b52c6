// Multi-document YAML manifests as `ringmaster local run -f FILE` reads them:
// ringmaster/kube/yaml_documents.h.
#include <string>

#include "ringmaster/kube/yaml_documents.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto docs = ringmaster::kube::parseYamlDocuments(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  // Applying sends each document as a JSON body.
  if (docs.ok()) {
    for (const auto& doc : *docs) (void)doc.dump();
  }
  return 0;
}
