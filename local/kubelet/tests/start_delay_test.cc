// --start-delay parsing: what tests use to fix the order in which pods start.
#include <fnmatch.h>
#include <gtest/gtest.h>

#include "local/kubelet/kubelet.h"

namespace ringmaster::local::kubelet {
namespace {

TEST(StartDelay, ParsesPatternSecondsPairs) {
  core::Result<std::vector<StartDelay>> d = parseStartDelays("job-worker-0=4,other-*=0.5");
  ASSERT_TRUE(d.ok()) << d.status().toString();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].pod_name, "job-worker-0");
  EXPECT_EQ((*d)[0].delay, std::chrono::milliseconds(4000));
  EXPECT_EQ(fnmatch((*d)[0].pod_name.c_str(), "job-worker-01", 0), FNM_NOMATCH);  // whole name
  EXPECT_EQ((*d)[1].pod_name, "other-*");
  EXPECT_EQ((*d)[1].delay, std::chrono::milliseconds(500));
}

TEST(StartDelay, EmptyMeansNone) {
  core::Result<std::vector<StartDelay>> d = parseStartDelays("");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->empty());
}

TEST(StartDelay, RejectsMalformedItemsNamingThem) {
  for (const char* bad : {"job-worker-0", "=4", "a=", "a=x", "a=-1", "a=1s"}) {
    core::Result<std::vector<StartDelay>> d = parseStartDelays(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find(bad), std::string::npos) << d.status().message();
  }
}

}  // namespace
}  // namespace ringmaster::local::kubelet
