#pragma once
// A small evaluator for the common subset of CEL used in CRD `x-kubernetes-validations` rules:
// literals (int, double, string, bool, null, lists, maps), `self` / `oldSelf` and field access
// (`self.a.b`, `self['a']`), ! - * / % + (ints, doubles, string and list concatenation),
// comparisons, `in`, && ||, ?:, has(), size() / x.size(), int() / double() / string(),
// x.startsWith/endsWith/contains/matches(), and the macros all/exists/exists_one/filter/map.
// Anything else (timestamps, durations, quantities, optional types, …) is "unsupported": the
// caller accepts the object and logs the rule once, as the brief for the local server asks.
//
// Thread-safety: pure functions. Failure: CelResult carries kUnsupported (cannot parse or uses a
// feature outside the subset) or kError (a runtime error such as a missing key or a division by
// zero, with the message CEL would give), never an exception.

#include <nlohmann/json.hpp>
#include <string>

namespace ringmaster::local {

struct CelResult {
  enum Kind { kOk, kError, kUnsupported };
  Kind kind = kOk;
  nlohmann::json value;  // kOk
  std::string message;   // kError / kUnsupported: why
};

// Evaluates `expression` with `self` bound to `self` and, when `old_self` is non-null, `oldSelf`.
CelResult evaluateCel(const std::string& expression, const nlohmann::json& self,
                      const nlohmann::json* old_self = nullptr);

// Whether `expression` mentions oldSelf (a transition rule: only checked on updates).
bool celUsesOldSelf(const std::string& expression);

// An RE2 pattern (the syntax of Go's regexp, which Kubernetes uses) matched anywhere in `text`, as
// CEL's matches() and OpenAPI's `pattern` do. nullopt when the pattern does not compile.
std::optional<bool> regexSearch(const std::string& pattern, const std::string& text);

}  // namespace ringmaster::local
