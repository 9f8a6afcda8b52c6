#pragma once
// Label keys and values as kube-apiserver checks them (apimachinery's IsQualifiedName and
// IsValidLabelValue, with their messages): in label selectors and in every object's
// metadata.labels.
//
// Thread-safety: pure functions. Failure: the problems are returned, never thrown; empty means
// valid.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/store/status_error.h"

namespace ringmaster::local {

// Why `key` is not a qualified name ([prefix/]name: a DNS-1123 subdomain prefix, a name part of
// at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends).
std::vector<std::string> labelKeyProblems(const std::string& key);
// Why `value` is not a label value (empty, or a name part).
std::vector<std::string> labelValueProblems(const std::string& value);

// The 422 causes of an object's metadata.labels, one per problem, on field metadata.labels.
std::vector<StatusCause> labelCauses(const nlohmann::json& metadata);

}  // namespace ringmaster::local
