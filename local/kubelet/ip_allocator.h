#pragma once
// Pod IPs: distinct loopback addresses 127.1.x.y (x in 0..255, y in 1..254), so every pod can
// bind the same ports, as on a cluster. An address is never handed out twice while in use;
// released addresses go back to the pool after all never-used ones (so a quickly recreated pod
// does not inherit a dead pod's address while clients may still hold it).
// Every kubelet of a host draws from the same range, so with a host lock directory an address is
// also held by an flock(2) on <dir>/<address>: a kubelet skips addresses another live kubelet
// holds, and the kernel drops the locks of one that dies.
//
// Thread-safety: not synchronized (the kubelet's sync thread owns it). Failure: allocate()
// returns ResourceExhausted-like Unavailable when all 65,024 addresses are in use.

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

class IpAllocator {
 public:
  // Without a lock directory the allocator knows only its own addresses.
  IpAllocator() = default;
  explicit IpAllocator(std::filesystem::path host_locks);
  ~IpAllocator();
  IpAllocator(const IpAllocator&) = delete;
  IpAllocator& operator=(const IpAllocator&) = delete;
  // Where the kubelets of this host lock their pods' addresses.
  static std::filesystem::path hostLockDir();

  core::Result<std::string> allocate();
  // Marks a specific address as used (a pod that already had it before a kubelet restart);
  // false when it is outside the range or taken (here or by another kubelet of the host).
  bool claim(const std::string& ip);
  void release(const std::string& ip);
  size_t inUse() const { return used_.size(); }

  static std::optional<uint32_t> parse(const std::string& ip);  // index in the range
  static std::string format(uint32_t index);

 private:
  static constexpr uint32_t kSize = 256 * 254;
  // Takes index i for this allocator: false when it is in use here or locked by another kubelet.
  bool take(uint32_t i);

  std::filesystem::path host_locks_;
  std::map<uint32_t, int> lock_fds_;  // held host locks, by index
  uint32_t next_fresh_ = 0;
  std::deque<uint32_t> released_;
  std::set<uint32_t> used_;
};

}  // namespace ringmaster::local::kubelet
