#include "ringmaster/kube/codec.h"

namespace ringmaster::kube {

core::Result<nlohmann::json> parseJson(std::string_view text) {
  // nlohmann reports syntax errors only by exception; this is its edge.
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return core::invalidArgument(std::string("invalid JSON: ") + e.what());
  }
}

std::string dumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ringmaster::kube
