#include "ringmaster/kube/int_or_string.h"

#include <limits>

namespace ringmaster::kube {

const std::string& IntOrString::strValue() const {
  static const std::string kEmpty;
  return isInt() ? kEmpty : std::get<std::string>(v_);
}

std::string IntOrString::toString() const {
  return isInt() ? std::to_string(std::get<int32_t>(v_)) : std::get<std::string>(v_);
}

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, IntOrString& out) {
  if (j.is_string()) {
    out = IntOrString(j.get<std::string>());
    return core::Status::Ok();
  }
  if (j.is_number_integer()) {
    bool in_range = j.is_number_unsigned()
                        ? j.get<uint64_t>() <= uint64_t(std::numeric_limits<int32_t>::max())
                        : j.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                              j.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!in_range) return path.error("integer " + j.dump() + " out of range for int32");
    out = IntOrString(static_cast<int32_t>(j.get<int64_t>()));
    return core::Status::Ok();
  }
  return path.error("expected integer or string, got " + std::string(j.type_name()));
}

nlohmann::json toJson(const IntOrString& in) {
  if (in.isInt()) return in.intValue();
  return in.strValue();
}

}  // namespace ringmaster::kube
