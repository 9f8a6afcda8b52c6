#pragma once
// Quantity: a Kubernetes resource amount ("500m", "1Gi", "16", "1e3"). The text is kept verbatim
// so an object round-trips unchanged; the number is parsed exactly (no floating point) into a
// canonical value: value() in base units rounded up (cores, bytes, GPUs), milliValue() in
// thousandths rounded up (millicores). Grammar as in k8s.io/apimachinery resource.Quantity:
//   [+-]digits[.digits] then one of: nothing, n u m k M G T P E (powers of 10),
//   Ki Mi Gi Ti Pi Ei (powers of 2), or e<int> / E<int> (decimal exponent).
// A quantity written as a bare JSON number (allowed in custom resources: `nvidia.com/gpu: 1`) is
// written back as a number.
//
// Thread-safety: immutable value. Failure: parse() returns InvalidArgument; values that do not
// fit in int64 saturate. Equality is textual ("1000m" != "1"); compare milliValue() for amounts.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/field_path.h"

namespace ringmaster::kube {

class Quantity {
 public:
  Quantity() : Quantity(0) {}
  explicit Quantity(int64_t units);          // "16"
  static Quantity fromMilli(int64_t milli);  // "500m" (or "2" for 2000)
  static core::Result<Quantity> parse(std::string_view text);

  const std::string& toString() const { return text_; }
  int64_t value() const;       // base units, rounded up
  int64_t milliValue() const;  // thousandths of a base unit, rounded up
  double asDouble() const;

  friend bool operator==(const Quantity& a, const Quantity& b) {
    return a.text_ == b.text_ && a.json_number_ == b.json_number_;
  }

 private:
  friend core::Status fromJson(const nlohmann::json& j, const FieldPath& path, Quantity& out);
  friend nlohmann::json toJson(const Quantity& in);
  int64_t scaled(int exp10) const;  // ceil(amount * 10^exp10), saturating

  std::string text_;
  bool negative_ = false;
  uint64_t mantissa_ = 0;  // the digits, without the decimal point
  int exp10_ = 0;          // amount = mantissa * 10^exp10 * 2^exp2
  int exp2_ = 0;
  bool json_number_ = false;  // written as a JSON number, not a string
};

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, Quantity& out);
nlohmann::json toJson(const Quantity& in);

}  // namespace ringmaster::kube
