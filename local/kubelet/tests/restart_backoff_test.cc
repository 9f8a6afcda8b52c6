#include "local/kubelet/restart_backoff.h"

#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

using std::chrono::milliseconds;

TEST(RestartBackoff, DoublesUpToTheCap) {
  RestartBackoff b({milliseconds(1000), milliseconds(10000), milliseconds(60000)});
  EXPECT_EQ(b.next(milliseconds(5)), milliseconds(1000));
  EXPECT_EQ(b.next(milliseconds(5)), milliseconds(2000));
  EXPECT_EQ(b.next(milliseconds(5)), milliseconds(4000));
  EXPECT_EQ(b.next(milliseconds(5)), milliseconds(8000));
  EXPECT_EQ(b.next(milliseconds(5)), milliseconds(10000));
  EXPECT_EQ(b.next(milliseconds(5)), milliseconds(10000));
}

TEST(RestartBackoff, ResetsAfterALongRun) {
  RestartBackoff b({milliseconds(1000), milliseconds(10000), milliseconds(60000)});
  b.next(milliseconds(0));
  b.next(milliseconds(0));
  EXPECT_EQ(b.next(milliseconds(60000)), milliseconds(1000));
}

TEST(ShouldRestart, FollowsTheRestartPolicy) {
  EXPECT_TRUE(shouldRestart("Always", 0));
  EXPECT_TRUE(shouldRestart("", 0));
  EXPECT_TRUE(shouldRestart("OnFailure", 3));
  EXPECT_FALSE(shouldRestart("OnFailure", 0));
  EXPECT_FALSE(shouldRestart("Never", 1));
}

}  // namespace
}  // namespace ringmaster::local::kubelet
