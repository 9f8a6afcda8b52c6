#pragma once
// Pod IPs: distinct loopback addresses 127.1.x.y (x in 0..255, y in 1..254), so every pod can
// bind the same ports, as on a cluster. An address is never handed out twice while in use;
// released addresses go back to the pool after all never-used ones (so a quickly recreated pod
// does not inherit a dead pod's address while clients may still hold it).
//
// Thread-safety: not synchronized (the kubelet's sync thread owns it). Failure: allocate()
// returns ResourceExhausted-like Unavailable when all 65,024 addresses are in use.

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

class IpAllocator {
 public:
  core::Result<std::string> allocate();
  // Marks a specific address as used (a pod that already had it before a kubelet restart);
  // false when it is outside the range or taken.
  bool claim(const std::string& ip);
  void release(const std::string& ip);
  size_t inUse() const { return used_.size(); }

  static std::optional<uint32_t> parse(const std::string& ip);  // index in the range
  static std::string format(uint32_t index);

 private:
  static constexpr uint32_t kSize = 256 * 254;
  uint32_t next_fresh_ = 0;
  std::deque<uint32_t> released_;
  std::set<uint32_t> used_;
};

}  // namespace ringmaster::local::kubelet
