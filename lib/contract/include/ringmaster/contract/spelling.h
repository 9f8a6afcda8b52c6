#pragma once
// An enum of a spec spelled as the spec spells it. Each enum E has a `name(E)` beside it (found
// by argument-dependent lookup) that gives its spelling; these read and list those spellings.
//
// Thread-safety: pure functions. Failure: parseSpelling gives the fallback for a spelling it does
// not know (validation reports that spelling first).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::contract {

template <class E, size_t N>
E parseSpelling(const std::optional<std::string>& text, const E (&values)[N], E fallback) {
  if (!text) return fallback;
  for (E v : values) {
    if (*text == name(v)) return v;
  }
  return fallback;
}

template <class E, size_t N>
std::vector<std::string> spellings(const E (&values)[N]) {
  std::vector<std::string> out;
  for (E v : values) out.emplace_back(name(v));
  return out;
}

}  // namespace ringmaster::contract
