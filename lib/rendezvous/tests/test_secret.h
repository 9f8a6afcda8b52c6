#pragma once
// What the store tests share: the secret their servers and clients agree on, and how long a
// wait may take before a test calls it a hang.

#include <chrono>

namespace ringmaster::rendezvous::test_support {

inline constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";
// "Forever" for a test: a real hang fails by ctest's timeout instead.
inline constexpr std::chrono::seconds kLong{60};

}  // namespace ringmaster::rendezvous::test_support
