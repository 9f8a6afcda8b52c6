#pragma once
// IntOrString: a field that holds either an int32 or a string (a Service targetPort of 8080 or
// "http", a probe port). Written back in the form it was read.
//
// Thread-safety: immutable value. Failure: decode of anything but an integer or a string
// returns InvalidArgument naming the field.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/field_path.h"

namespace ringmaster::kube {

class IntOrString {
 public:
  IntOrString() : v_(int32_t{0}) {}
  IntOrString(int32_t v) : v_(v) {}                   // NOLINT: implicit like the Go type
  IntOrString(std::string v) : v_(std::move(v)) {}    // NOLINT
  IntOrString(const char* v) : v_(std::string(v)) {}  // NOLINT

  bool isInt() const { return std::holds_alternative<int32_t>(v_); }
  int32_t intValue() const { return isInt() ? std::get<int32_t>(v_) : 0; }
  const std::string& strValue() const;  // "" when it holds an int
  std::string toString() const;         // "8080" or "http"

  friend bool operator==(const IntOrString&, const IntOrString&) = default;

 private:
  std::variant<int32_t, std::string> v_;
};

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, IntOrString& out);
nlohmann::json toJson(const IntOrString& in);

}  // namespace ringmaster::kube
