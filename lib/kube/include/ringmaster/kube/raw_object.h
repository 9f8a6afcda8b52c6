#pragma once
// RawObject: an object as the server sent it, with only apiVersion, kind and metadata decoded.
// Lists and watches are read as RawObjects first and each item is then decoded as its type on
// its own, so that one object the type cannot hold (a quantity "abc" the server let through, an
// integer past int32) stays with that object instead of failing the whole list or watch. Caches
// keep such objects apart, with the error that says why they did not decode.
//
// Thread-safety: plain value. Failure: decode fails only when the document is not an object or
// its metadata does not decode (then there is no name to keep it under).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/field_path.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/watch_event.h"

namespace ringmaster::kube {

struct RawObject {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  nlohmann::json object;  // the whole document, metadata included
  core::Status error;     // why it did not decode as its type; OK until a decode was tried
  bool operator==(const RawObject&) const = default;
};

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, RawObject& out);
// The same, keeping `j` itself (moved) instead of a copy.
core::Status fromJson(nlohmann::json&& j, const FieldPath& path, RawObject& out);
nlohmann::json toJson(const RawObject& in);  // the document as it came

// One line of a watch stream, as decodeText<WatchEvent<RawObject>> decodes it, with the object
// moved out of the parsed line rather than copied: every event of every watch passes here.
core::Result<WatchEvent<RawObject>> decodeRawWatchEvent(std::string_view line);

}  // namespace ringmaster::kube
