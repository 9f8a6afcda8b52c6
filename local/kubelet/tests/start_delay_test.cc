// --start-delay parsing: what tests use to fix the order in which pods start.
#include <gtest/gtest.h>

#include "local/kubelet/kubelet.h"

namespace ringmaster::local::kubelet {
namespace {

TEST(StartDelay, ParsesRegexSecondsPairs) {
  core::Result<std::vector<StartDelay>> d = parseStartDelays("job-worker-0=4,other-.*=0.5");
  ASSERT_TRUE(d.ok()) << d.status().toString();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].pattern, "job-worker-0");
  EXPECT_EQ((*d)[0].delay, std::chrono::milliseconds(4000));
  EXPECT_TRUE(std::regex_match("job-worker-0", (*d)[0].pod_name));
  EXPECT_FALSE(std::regex_match("job-worker-01", (*d)[0].pod_name));  // full match only
  EXPECT_EQ((*d)[1].delay, std::chrono::milliseconds(500));
  EXPECT_TRUE(std::regex_match("other-x", (*d)[1].pod_name));
}

TEST(StartDelay, EmptyMeansNone) {
  core::Result<std::vector<StartDelay>> d = parseStartDelays("");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->empty());
}

TEST(StartDelay, RejectsMalformedItemsNamingThem) {
  for (const char* bad : {"job-worker-0", "=4", "a=", "a=x", "a=-1", "a[=1"}) {
    core::Result<std::vector<StartDelay>> d = parseStartDelays(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find(bad), std::string::npos) << d.status().message();
  }
}

}  // namespace
}  // namespace ringmaster::local::kubelet
