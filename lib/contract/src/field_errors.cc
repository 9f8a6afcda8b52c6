#include "ringmaster/contract/field_errors.h"

namespace ringmaster::contract {

std::string describe(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& error : errors) {
    if (!out.empty()) out += "; ";
    out += error.field + ": " + error.message;
  }
  return out;
}

std::string invalidValue(const std::string& value, const std::string& why) {
  return "Invalid value: " + nlohmann::json(value).dump() + ": " + why;
}

void FieldErrors::add(std::string field, std::string message) {
  errors_.push_back({std::move(field), std::move(message)});
}

void FieldErrors::oneOf(const std::string& field, const std::optional<std::string>& value,
                        const std::vector<std::string>& allowed) {
  if (!value) return;
  std::string list;
  for (const std::string& a : allowed) {
    if (*value == a) return;
    list += (list.empty() ? "" : ", ") + a;
  }
  add(field, "must be one of " + list + ", got \"" + *value + "\"");
}

void FieldErrors::above(const std::string& field, const std::optional<double>& value, double min) {
  if (value && !(*value > min)) {
    add(field, "must be greater than " + text(min) + ", got " + text(*value));
  }
}

void FieldErrors::inInterval(const std::string& field, const std::optional<double>& value,
                             double min, bool min_open, double max, bool max_open) {
  if (!value) return;
  const double v = *value;
  const bool low = min_open ? !(v > min) : !(v >= min);
  const bool high = max_open ? !(v < max) : !(v <= max);
  if (low || high) {
    add(field, "must be in " + std::string(min_open ? "(" : "[") + text(min) + ", " + text(max) +
                   (max_open ? ")" : "]") + ", got " + text(v));
  }
}

void FieldErrors::unknownFields(const std::string& prefix, const nlohmann::json& extra) {
  if (!extra.is_object()) return;
  for (const auto& [key, value] : extra.items()) add(prefix + "." + key, "unknown field");
}

}  // namespace ringmaster::contract
