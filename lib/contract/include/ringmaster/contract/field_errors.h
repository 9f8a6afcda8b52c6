#pragma once
// Field errors of a spec, worded as the API server words its own ("spec.replicas: must be at
// least 1, got 0"), collected so that one pass reports every problem of an object at once.
//
// Thread-safety: plain values. Failure: none; the caller turns the list into a Status.

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace ringmaster::contract {

struct FieldError {
  std::string field;    // "spec.replicas"
  std::string message;  // "must be at least 1, got 0"
  bool operator==(const FieldError&) const = default;
};

// "spec.replicas: must be at least 1, got 0; spec.image: required ..."
std::string describe(const std::vector<FieldError>& errors);

// Kubernetes' field.Invalid text: `Invalid value: "x": why`.
std::string invalidValue(const std::string& value, const std::string& why);

// The checks every spec field needs; each one is silent when the value is unset (a default
// applies) and adds one error naming the field otherwise.
class FieldErrors {
 public:
  void add(std::string field, std::string message);
  // `value` must be one of `allowed`.
  void oneOf(const std::string& field, const std::optional<std::string>& value,
             const std::vector<std::string>& allowed);
  template <class N>
  void atLeast(const std::string& field, const std::optional<N>& value, N min) {
    if (value && *value < min)
      add(field, "must be at least " + text(min) + ", got " + text(*value));
  }
  template <class N>
  void inRange(const std::string& field, const std::optional<N>& value, N min, N max) {
    if (value && (*value < min || *value > max)) {
      add(field, "must be in [" + text(min) + ", " + text(max) + "], got " + text(*value));
    }
  }
  // `value` > `min` (an open lower bound, as the schema's exclusiveMinimum).
  void above(const std::string& field, const std::optional<double>& value, double min);
  // Open bounds for real numbers: (min, max] when `min_open`, [min, max) when `max_open`.
  void inInterval(const std::string& field, const std::optional<double>& value, double min,
                  bool min_open, double max, bool max_open);
  // Every key a decoder kept in `extra` is a field the schema does not know.
  void unknownFields(const std::string& prefix, const nlohmann::json& extra);

  bool empty() const { return errors_.empty(); }
  const std::vector<FieldError>& errors() const { return errors_; }
  std::vector<FieldError> take() { return std::move(errors_); }

 private:
  template <class N>
  static std::string text(N value) {
    if constexpr (std::is_floating_point_v<N>) {
      char buffer[32];  // the shortest text that reads back: 0.5, 1e-08, not "0.500000"
      return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
    } else {
      return std::to_string(value);
    }
  }
  std::vector<FieldError> errors_;
};

}  // namespace ringmaster::contract
