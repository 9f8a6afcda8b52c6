#include "local/kubelet/ip_allocator.h"

#include <algorithm>
#include <cstdio>

namespace ringmaster::local::kubelet {

std::optional<uint32_t> IpAllocator::parse(const std::string& ip) {
  unsigned a = 0, b = 0, x = 0, y = 0;
  char tail = 0;
  if (std::sscanf(ip.c_str(), "%u.%u.%u.%u%c", &a, &b, &x, &y, &tail) != 4) return std::nullopt;
  if (a != 127 || b != 1 || x > 255 || y < 1 || y > 254) return std::nullopt;
  return x * 254 + (y - 1);
}

std::string IpAllocator::format(uint32_t index) {
  return "127.1." + std::to_string(index / 254) + "." + std::to_string(index % 254 + 1);
}

core::Result<std::string> IpAllocator::allocate() {
  while (next_fresh_ < kSize) {
    uint32_t i = next_fresh_++;
    if (used_.insert(i).second) return format(i);
  }
  while (!released_.empty()) {
    uint32_t i = released_.front();
    released_.pop_front();
    if (used_.insert(i).second) return format(i);
  }
  return core::unavailable("no free pod IP: all " + std::to_string(kSize) +
                           " addresses of 127.1.0.0/16 are in use");
}

bool IpAllocator::claim(const std::string& ip) {
  auto i = parse(ip);
  return i && used_.insert(*i).second;
}

void IpAllocator::release(const std::string& ip) {
  auto i = parse(ip);
  if (!i || used_.erase(*i) == 0) return;
  if (*i < next_fresh_) released_.push_back(*i);
}

}  // namespace ringmaster::local::kubelet
