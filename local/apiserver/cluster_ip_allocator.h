#pragma once
// Cluster IPs for Services, as kube-apiserver allocates them: a random free address of the
// service range (10.96.0.0/12 by default, the first address kept for the `kubernetes` Service).
// Clients read them (`helm install --wait` waits for a Service to have one); nothing on a local
// node routes them: pods reach each other by their own addresses and names.
//
// Addresses are not given back when a Service is deleted until the server restarts (it then
// reserves those of the stored Services only): a million addresses outlast any local session.
//
// Thread-safety: allocate() and reserve() may be called concurrently. Failure: allocate() returns
// "" when the range is full.

#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <unordered_set>

namespace ringmaster::local {

class ClusterIpAllocator {
 public:
  // `cidr`: "10.96.0.0/12". `seed` makes the order reproducible in tests.
  explicit ClusterIpAllocator(const std::string& cidr = "10.96.0.0/12",
                              uint64_t seed = std::random_device{}());

  // Marks an address taken (a stored Service's). Addresses outside the range are ignored.
  void reserve(const std::string& ip);
  // A free address of the range, now taken; "" when none is left.
  std::string allocate();
  bool contains(const std::string& ip) const;

 private:
  uint32_t base_ = 0;
  uint32_t size_ = 0;
  std::mutex mu_;
  std::mt19937_64 random_;
  std::unordered_set<uint32_t> taken_;
};

}  // namespace ringmaster::local
