#include "ringmaster/core/json.h"

#include <string>

namespace ringmaster::core {
namespace {

template <typename Json>
Result<Json> parseBounded(std::string_view text, int max_depth) {
  bool too_deep = false;
  // The callback sees each value's depth as it starts; returning false drops that value, so
  // nothing past the bound is ever allocated, while the parser goes on to check the syntax.
  auto guard = [&](int depth, typename Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= max_depth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  Json value = Json::parse(text, guard, /*allow_exceptions=*/false);
  if (too_deep) {
    return invalidArgument("JSON nested deeper than " + std::to_string(max_depth) + " levels");
  }
  if (value.is_discarded()) {
    // Parse again, throwing, only to get the parser's own message (rare: bad input).
    try {
      Json unused = Json::parse(text, guard);
      (void)unused;
    } catch (const typename Json::exception& e) {  // parse_error, or out_of_range for 1e999999
      return invalidArgument(std::string("invalid JSON: ") + e.what());
    }
    return invalidArgument("invalid JSON");
  }
  return value;
}

}  // namespace

Result<nlohmann::json> parseJson(std::string_view text, int max_depth) {
  return parseBounded<nlohmann::json>(text, max_depth);
}

Result<nlohmann::ordered_json> parseOrderedJson(std::string_view text, int max_depth) {
  return parseBounded<nlohmann::ordered_json>(text, max_depth);
}

std::string stringMember(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace ringmaster::core
