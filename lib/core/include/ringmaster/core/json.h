#pragma once
// The one way outside JSON enters the process: a parse with a nesting bound.
// nlohmann's parser is iterative, but everything that walks a parsed value afterwards (dump,
// merge patches, schema checks, CEL, destruction of a value being copied) recurses, so a body of
// 200 KB nested 100,000 deep would overflow a thread's stack. Kubernetes objects nest a few dozen
// levels; anything past the bound is refused before any value is built.
//
// Thread-safety: pure functions. Failure: kInvalidArgument naming the problem and where.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::core {

// Deep enough for any real object (the Kubernetes API itself accepts 10,000 but nothing nests
// that far), shallow enough that a recursive walk stays within 100s of KB of stack under ASan.
inline constexpr int kMaxJsonDepth = 1000;

// Parses `text` as one JSON value. Errors read "invalid JSON: <parser's message>" or
// "JSON nested deeper than <max_depth> levels".
Result<nlohmann::json> parseJson(std::string_view text, int max_depth = kMaxJsonDepth);
Result<nlohmann::ordered_json> parseOrderedJson(std::string_view text,
                                                int max_depth = kMaxJsonDepth);

// A string member of a client's object, or "" when `object` is not an object or the member is
// absent or not a string. json's value() would throw on a mismatched type, and a client's
// {"kind": {}} must be a clear error, not an exception.
std::string stringMember(const nlohmann::json& object, std::string_view key);

}  // namespace ringmaster::core
