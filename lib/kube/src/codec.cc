#include "ringmaster/kube/codec.h"

#include "ringmaster/core/json.h"

namespace ringmaster::kube {

core::Result<nlohmann::json> parseJson(std::string_view text) { return core::parseJson(text); }

std::string dumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ringmaster::kube
