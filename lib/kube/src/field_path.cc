#include "ringmaster/kube/field_path.h"

namespace ringmaster::kube {
namespace {

// Plain identifiers print as ".key"; anything else (dots, slashes) as "[key]", as Kubernetes
// prints map keys, so "limits.cpu" but "labels[ringmaster.dev/job-name]".
bool isPlainKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

void FieldPath::append(std::string& out) const {
  if (parent_ == nullptr) return;  // the root adds nothing
  parent_->append(out);
  if (index_ != kNoIndex) {
    out += '[';
    out += std::to_string(index_);
    out += ']';
  } else if (isPlainKey(key_)) {
    if (!out.empty()) out += '.';
    out += key_;
  } else {
    out += '[';
    out += key_;
    out += ']';
  }
}

std::string FieldPath::toString() const {
  std::string out;
  append(out);
  return out;
}

core::Status FieldPath::error(std::string_view message) const {
  std::string where = toString();
  if (where.empty()) return core::invalidArgument(std::string(message));
  return core::invalidArgument(where + ": " + std::string(message));
}

}  // namespace ringmaster::kube
