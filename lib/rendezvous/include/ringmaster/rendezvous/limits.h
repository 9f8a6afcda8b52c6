#pragma once
// Every bound the rendezvous store enforces, in one place. The defaults are generous for real
// jobs (NCCL unique ids of 128 bytes, gloo's per-rank address lists of ~150 bytes per peer,
// hostnames, heartbeats, hang reports) and keep a launcher's memory bounded whatever peers send.

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ringmaster::rendezvous {

struct StoreLimits {
  size_t max_key_bytes = 4u << 10;
  size_t max_value_bytes = 4u << 20;
  // Keys plus values plus kEntryOverheadBytes per key.
  size_t max_total_bytes = 256u << 20;
  size_t max_keys = 1u << 20;
  size_t max_connections = 16384;
  // How long a new connection may take to authenticate before it is closed.
  std::chrono::milliseconds auth_timeout{10000};

  // Bookkeeping a key costs beyond its bytes (hash node, vector header), counted in the total
  // so that a flood of tiny keys is bounded as well.
  static constexpr size_t kEntryOverheadBytes = 64;
  // The largest request frame: a SET of the largest key and value, plus headers.
  constexpr size_t maxFrameBytes() const { return max_key_bytes + max_value_bytes + 64; }
};

// Frames before authentication (the challenge, AUTH and its answer) are small and fixed; a
// stranger cannot make the server buffer more than this per connection.
inline constexpr size_t kMaxAuthFrameBytes = 256;

}  // namespace ringmaster::rendezvous
