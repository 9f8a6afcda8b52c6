#pragma once
// Size limits kube-apiserver puts on every object's metadata, checked on every write: the
// annotations of one object, keys and values together, fit in 256 KiB.
//
// Thread-safety: pure functions.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "local/store/status_error.h"

namespace ringmaster::local {

inline constexpr size_t kMaxAnnotationsBytes = 256 * 1024;

// The 422 causes for `metadata` (an object's metadata; anything else has none): a
// FieldValueTooLong on metadata.annotations when they exceed kMaxAnnotationsBytes.
std::vector<StatusCause> metadataLimitCauses(const nlohmann::json& metadata);

}  // namespace ringmaster::local
