#pragma once
// The two directions of a connection as the HTTP layer sees them, so request parsing and
// response framing run over a TLS connection in the server and over strings in tests.
//
// Thread-safety: implementations are used by one thread at a time. Failure: a non-ok Status
// (timeout, peer gone, server stopping) after which the connection is not used again.

#include <chrono>
#include <cstddef>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

using SteadyClock = std::chrono::steady_clock;

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads 1..n bytes into `buf`, waiting at most until `deadline`; returns 0 on orderly EOF.
  virtual core::Result<size_t> read(char* buf, size_t n, SteadyClock::time_point deadline) = 0;
};

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Writes all of `data` and flushes it to the peer before returning.
  virtual core::Status writeAll(std::string_view data) = 0;
};

}  // namespace ringmaster::local
