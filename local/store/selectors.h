#pragma once
// Label and field selectors as kube-apiserver parses them (labelSelector= / fieldSelector=).
// Labels: equality (=, ==, !=) and set-based (in, notin, key, !key), comma-separated.
// Fields: key=value, key==value, key!=value on metadata.name, metadata.namespace and the
// fields a ResourceType registers; values may escape '\,' '\=' '\\'.
//
// Thread-safety: immutable after parsing; matches() is const. Failure: parse errors are 400
// BadRequest StatusErrors with upstream's texts.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "local/store/resource_type.h"
#include "local/store/status_error.h"

namespace ringmaster::local {

class LabelSelector {
 public:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };

  static ApiResult<LabelSelector> parse(std::string_view text);
  bool empty() const { return requirements_.empty(); }
  // `labels` is metadata.labels (may be null or missing).
  bool matches(const nlohmann::json& labels) const;
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  struct Requirement {
    std::string field;  // "metadata.name", "status.phase"
    bool equals = true;
    std::string value;
  };

  // Rejects fields the type does not support, with upstream's two message styles.
  static ApiResult<FieldSelector> parse(std::string_view text, const ResourceType& type);
  bool empty() const { return requirements_.empty(); }
  bool matches(const nlohmann::json& object) const;
  // The value an object has for `field` (missing -> ""), as the apiserver's field sets do.
  static std::string fieldValue(const nlohmann::json& object, std::string_view field);
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

}  // namespace ringmaster::local
