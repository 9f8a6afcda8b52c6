#include "local/store/metadata_limits.h"

#include <string>

namespace ringmaster::local {

std::vector<StatusCause> metadataLimitCauses(const nlohmann::json& metadata) {
  std::vector<StatusCause> causes;
  if (!metadata.is_object()) return causes;
  auto annotations = metadata.find("annotations");
  if (annotations == metadata.end() || !annotations->is_object()) return causes;
  size_t bytes = 0;
  for (auto it = annotations->begin(); it != annotations->end(); ++it) {
    bytes += it.key().size();
    if (it.value().is_string()) bytes += it.value().get_ref<const std::string&>().size();
  }
  if (bytes > kMaxAnnotationsBytes) {
    causes.push_back(
        {"FieldValueTooLong",
         "Too long: must have at most " + std::to_string(kMaxAnnotationsBytes) + " bytes",
         "metadata.annotations"});
  }
  return causes;
}

}  // namespace ringmaster::local
