#include "local/apiserver/cluster_ip_allocator.h"

#include <gtest/gtest.h>

#include <set>

namespace ringmaster::local {
namespace {

TEST(ClusterIpAllocator, HandsOutEveryHostAddressOnceThenNothing) {
  ClusterIpAllocator alloc("10.96.0.0/29", 7);  // 8 addresses: network, .1 and broadcast kept
  alloc.reserve("10.96.0.4");
  alloc.reserve("192.168.0.1");  // outside: ignored
  std::set<std::string> got;
  for (int i = 0; i < 4; ++i) {
    const std::string ip = alloc.allocate();
    ASSERT_FALSE(ip.empty());
    EXPECT_TRUE(alloc.contains(ip));
    EXPECT_TRUE(got.insert(ip).second) << ip << " twice";
  }
  EXPECT_EQ(got, (std::set<std::string>{"10.96.0.2", "10.96.0.3", "10.96.0.5", "10.96.0.6"}));
  EXPECT_EQ(alloc.allocate(), "");
}

TEST(ClusterIpAllocator, RejectsARangeItCannotUse) {
  EXPECT_THROW(ClusterIpAllocator("10.96.0.0"), std::invalid_argument);
  EXPECT_THROW(ClusterIpAllocator("10.96.0.0/31"), std::invalid_argument);
  EXPECT_THROW(ClusterIpAllocator("banana/12"), std::invalid_argument);
}

}  // namespace
}  // namespace ringmaster::local
