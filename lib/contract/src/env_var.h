#pragma once
// Reading one variable of an environment contract, shared by the pod and rank contracts so that
// both read values and word parse errors alike. An empty value reads as unset.
//
// Thread-safety: pure functions over the lookup. Failure: kInvalidArgument naming the variable
// and its text ("RANK='x': expected an integer, got 'x'").

#include <cstdint>
#include <string>

#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/core/flags.h"

namespace ringmaster::contract::env_var {

// The text of `name`, or nullptr when unset or empty.
inline const char* text(const EnvLookup& lookup, const char* name) {
  const char* v = lookup(name);
  return v == nullptr || *v == '\0' ? nullptr : v;
}

// An integer variable, or `fallback` when unset. Bounds are the caller's.
inline core::Result<int64_t> integer(const EnvLookup& lookup, const char* name, int64_t fallback) {
  const char* v = text(lookup, name);
  if (v == nullptr) return fallback;
  core::Result<int64_t> parsed = core::parseInt(v);
  if (!parsed.ok()) {
    return core::invalidArgument(std::string(name) + "='" + v + "': " + parsed.status().message());
  }
  return *parsed;
}

// A string variable, or `fallback` when unset.
inline std::string string(const EnvLookup& lookup, const char* name, std::string fallback) {
  const char* v = text(lookup, name);
  return v == nullptr ? fallback : std::string(v);
}

}  // namespace ringmaster::contract::env_var
