#pragma once
// The label rules of ringmaster/kube/names.h as kube-apiserver applies them to every object's
// metadata.labels.
//
// Thread-safety: pure functions. Failure: the problems are returned, never thrown; empty means
// valid.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/store/status_error.h"

namespace ringmaster::local {

// The 422 causes of an object's metadata.labels, one per problem, on field metadata.labels.
std::vector<StatusCause> labelCauses(const nlohmann::json& metadata);

}  // namespace ringmaster::local
