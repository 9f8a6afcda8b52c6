#pragma once
// FieldPath: where a decoder is inside a JSON document ("spec.containers[0].resources.limits.cpu").
// Built on the stack as decoding descends, each node pointing at its parent, and rendered to text
// only when an error is reported, so a successful decode allocates nothing for paths.
//
// Ownership: a node borrows its parent and its key; both must outlive it (true for the nodes a
// decoder makes on its own call stack). Thread-safety: immutable value. Failure: none.

#include <cstddef>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::kube {

class FieldPath {
 public:
  FieldPath() = default;  // the document root

  FieldPath child(std::string_view key) const { return FieldPath(this, key, kNoIndex); }
  FieldPath index(std::size_t i) const { return FieldPath(this, {}, i); }

  // "spec.containers[0].name"; map keys that are not plain identifiers render as "[key]"
  // ("metadata.labels[ringmaster.dev/job-name]"). The root renders as "".
  std::string toString() const;

  // InvalidArgument "<path>: <message>" (just "<message>" at the root).
  core::Status error(std::string_view message) const;

 private:
  static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
  FieldPath(const FieldPath* parent, std::string_view key, std::size_t index)
      : parent_(parent), key_(key), index_(index) {}
  void append(std::string& out) const;

  const FieldPath* parent_ = nullptr;
  std::string_view key_;
  std::size_t index_ = kNoIndex;
};

}  // namespace ringmaster::kube
