#include "local/kubelet/ip_allocator.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ringmaster::local::kubelet
