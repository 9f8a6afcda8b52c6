#include "local/kubelet/ip_allocator.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

IpAllocator::IpAllocator(std::filesystem::path host_locks) : host_locks_(std::move(host_locks)) {
  std::error_code ec;
  if (std::filesystem::create_directories(host_locks_, ec)) {
    // Shared by the kubelets of every user of the host, as /tmp itself is.
    chmod(host_locks_.c_str(), 01777);
  }
}

IpAllocator::~IpAllocator() {
  for (const auto& [index, fd] : lock_fds_) close(fd);
}

std::filesystem::path IpAllocator::hostLockDir() {
  return std::filesystem::temp_directory_path() / "ringmaster-pod-ips";
}

bool IpAllocator::take(uint32_t i) {
  if (used_.count(i)) return false;
  if (!host_locks_.empty()) {
    const std::string path = (host_locks_ / format(i)).string();
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return false;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      close(fd);
      return false;
    }
    lock_fds_[i] = fd;
  }
  used_.insert(i);
  return true;
}

core::Result<std::string> IpAllocator::allocate() {
  while (next_fresh_ < kSize) {
    uint32_t i = next_fresh_++;
    if (take(i)) return format(i);
    if (!used_.count(i)) released_.push_back(i);  // another kubelet's: try again later
  }
  // Released ones, and fresh ones another kubelet held when they came up, once more.
  for (size_t tries = released_.size(); tries > 0; --tries) {
    uint32_t i = released_.front();
    released_.pop_front();
    if (take(i)) return format(i);
    released_.push_back(i);
  }
  return core::unavailable("no free pod IP: all " + std::to_string(kSize) +
                           " addresses of 127.1.0.0/16 are in use");
}

bool IpAllocator::claim(const std::string& ip) {
  auto i = parse(ip);
  return i && take(*i);
}

void IpAllocator::release(const std::string& ip) {
  auto i = parse(ip);
  if (!i || used_.erase(*i) == 0) return;
  if (auto fd = lock_fds_.find(*i); fd != lock_fds_.end()) {
    close(fd->second);
    lock_fds_.erase(fd);
  }
  if (*i < next_fresh_) released_.push_back(*i);
}

}  // namespace ringmaster::local::kubelet
