#include "local/apiserver/cluster_ip_allocator.h"

#include <arpa/inet.h>

#include <stdexcept>

namespace ringmaster::local {
namespace {

bool parseIpv4(const std::string& text, uint32_t* out) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return false;
  *out = ntohl(addr.s_addr);
  return true;
}

std::string formatIpv4(uint32_t ip) {
  in_addr addr{};
  addr.s_addr = htonl(ip);
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr, buf, sizeof buf);
  return buf;
}

}  // namespace

ClusterIpAllocator::ClusterIpAllocator(const std::string& cidr, uint64_t seed) : random_(seed) {
  const auto slash = cidr.find('/');
  const int bits = slash == std::string::npos ? -1 : std::stoi(cidr.substr(slash + 1));
  if (bits < 8 || bits > 30 || !parseIpv4(cidr.substr(0, slash), &base_)) {
    throw std::invalid_argument("cluster IP range " + cidr + ": want an IPv4 CIDR /8../30");
  }
  size_ = uint32_t{1} << (32 - bits);
  base_ &= ~(size_ - 1);
  // The network address, the first host (the `kubernetes` Service's) and the broadcast address.
  taken_ = {base_, base_ + 1, base_ + size_ - 1};
}

void ClusterIpAllocator::reserve(const std::string& ip) {
  uint32_t addr = 0;
  if (!parseIpv4(ip, &addr) || addr - base_ >= size_) return;
  std::lock_guard lock(mu_);
  taken_.insert(addr);
}

std::string ClusterIpAllocator::allocate() {
  std::lock_guard lock(mu_);
  if (taken_.size() >= size_) return "";
  std::uniform_int_distribution<uint32_t> pick(0, size_ - 1);
  // Random probing finds a free address quickly while the range is mostly free; a linear scan
  // from a random start settles the rest.
  for (int i = 0; i < 64; ++i) {
    const uint32_t addr = base_ + pick(random_);
    if (taken_.insert(addr).second) return formatIpv4(addr);
  }
  const uint32_t start = pick(random_);
  for (uint32_t i = 0; i < size_; ++i) {
    const uint32_t addr = base_ + (start + i) % size_;
    if (taken_.insert(addr).second) return formatIpv4(addr);
  }
  return "";
}

bool ClusterIpAllocator::contains(const std::string& ip) const {
  uint32_t addr = 0;
  return parseIpv4(ip, &addr) && addr - base_ < size_;
}

}  // namespace ringmaster::local
