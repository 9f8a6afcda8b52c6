#include "local/kubelet/ip_allocator.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

namespace ringmaster::local::kubelet {
namespace {

TEST(IpAllocator, HandsOutDistinctLoopbackAddresses) {
  IpAllocator ips;
  std::set<std::string> seen;
  for (int i = 0; i < 600; ++i) {
    auto ip = ips.allocate();
    ASSERT_TRUE(ip.ok());
    ASSERT_TRUE(seen.insert(*ip).second) << *ip;
    ASSERT_EQ(ip->rfind("127.1.", 0), 0u) << *ip;
    ASSERT_FALSE(ip->ends_with(".0") || ip->ends_with(".255")) << *ip;
  }
  EXPECT_EQ(ips.inUse(), 600u);
  EXPECT_EQ(*IpAllocator::parse("127.1.0.1"), 0u);
  EXPECT_EQ(IpAllocator::format(254), "127.1.1.1");
  EXPECT_FALSE(IpAllocator::parse("10.0.0.1"));
  EXPECT_FALSE(IpAllocator::parse("127.1.0.255"));
}

TEST(IpAllocator, ReusesReleasedAddressesOnlyAfterFreshOnes) {
  IpAllocator ips;
  std::string first = *ips.allocate();
  std::string second = *ips.allocate();
  ips.release(first);
  EXPECT_NE(*ips.allocate(), first);
  EXPECT_FALSE(ips.claim(second));  // in use
  ips.release(second);
  EXPECT_TRUE(ips.claim(second));
}

TEST(IpAllocator, ReportsExhaustion) {
  IpAllocator ips;
  for (int i = 0; i < 256 * 254; ++i) ASSERT_TRUE(ips.allocate().ok());
  EXPECT_FALSE(ips.allocate().ok());
  ips.release("127.1.3.4");
  EXPECT_EQ(*ips.allocate(), "127.1.3.4");
}

// Two kubelets of one host (two allocators on one lock directory) never hand out the same
// address; one's released or dropped addresses become the other's.
TEST(IpAllocator, KubeletsOfOneHostShareTheRangeThroughHostLocks) {
  char tmpl[] = "/tmp/rm-ip-locks-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = std::string(tmpl) + "/locks";
  std::set<std::string> first_ips;
  {
    IpAllocator first(dir);
    IpAllocator second(dir);
    for (int i = 0; i < 3; ++i) first_ips.insert(*first.allocate());
    EXPECT_EQ(first_ips, (std::set<std::string>{"127.1.0.1", "127.1.0.2", "127.1.0.3"}));
    EXPECT_EQ(*second.allocate(), "127.1.0.4");
    EXPECT_FALSE(second.claim("127.1.0.2"));  // held by the first
    first.release("127.1.0.2");
    EXPECT_TRUE(second.claim("127.1.0.2"));
    EXPECT_FALSE(first.claim("127.1.0.2"));
  }
  // Both gone (a kubelet that dies drops its locks with its descriptors): all free again.
  IpAllocator third(dir);
  EXPECT_EQ(*third.allocate(), "127.1.0.1");
  EXPECT_TRUE(third.claim("127.1.0.4"));
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
