#include "local/store/labels.h"

#include "ringmaster/kube/names.h"

namespace ringmaster::local {
std::vector<StatusCause> labelCauses(const nlohmann::json& metadata) {
  std::vector<StatusCause> out;
  if (!metadata.is_object()) return out;
  auto labels = metadata.find("labels");
  if (labels == metadata.end() || !labels->is_object()) return out;
  auto add = [&](const std::string& bad, const std::vector<std::string>& problems) {
    for (const auto& p : problems) {
      out.push_back(
          {"FieldValueInvalid", "Invalid value: \"" + bad + "\": " + p, "metadata.labels"});
    }
  };
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    add(it.key(), kube::labelKeyProblems(it.key()));
    if (it->is_string())
      add(it->get<std::string>(), kube::labelValueProblems(it->get<std::string>()));
  }
  return out;
}

}  // namespace ringmaster::local
