#include "ringmaster/core/stop.h"

#include <gtest/gtest.h>

#include <thread>

namespace ringmaster::core {
namespace {

TEST(StopSource, WaitForReturnsEarlyWhenStopped) {
  StopSource stop;
  EXPECT_FALSE(stop.waitFor(std::chrono::milliseconds(1)));
  std::thread t([&] { stop.requestStop("test done"); });
  EXPECT_TRUE(stop.waitFor(std::chrono::hours(1)));  // would hang the test if the wake were lost
  t.join();
  EXPECT_TRUE(stop.stopRequested());
  EXPECT_EQ(stop.reason(), "test done");
}

TEST(StopSource, FirstReasonWins) {
  StopSource stop;
  stop.requestStop("first");
  stop.requestStop("second");
  EXPECT_EQ(stop.reason(), "first");
}

}  // namespace
}  // namespace ringmaster::core
