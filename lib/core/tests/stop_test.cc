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

TEST(StopCallback, WakesOnceWhenStoppedAndAtOnceWhenAlreadyStopped) {
  StopSource stop;
  int woken = 0;
  StopCallback before(stop, [&] { ++woken; });
  EXPECT_EQ(woken, 0);
  stop.requestStop("first");
  stop.requestStop("second");
  EXPECT_EQ(woken, 1);
  StopCallback after(stop, [&] { ++woken; });
  EXPECT_EQ(woken, 2);
}

TEST(StopCallback, DestroyedBeforeTheStopNeverRuns) {
  StopSource stop;
  int woken = 0;
  {
    StopCallback gone(stop, [&] { ++woken; });
  }
  StopCallback kept(stop, [&] { woken += 10; });
  stop.requestStop();
  EXPECT_EQ(woken, 10);
}

// The kubelet's use: a loop asleep on a condition of its own wakes when the stop comes.
TEST(StopCallback, WakesALoopWaitingOnItsOwnCondition) {
  StopSource stop;
  std::mutex mu;
  std::condition_variable cv;
  StopCallback wake(stop, [&] {
    std::lock_guard lock(mu);
    cv.notify_all();
  });
  std::thread stopper([&] { stop.requestStop(); });
  std::unique_lock lock(mu);
  // Would hang the test if the wake were lost.
  cv.wait(lock, [&] { return stop.stopRequested(); });
  lock.unlock();
  stopper.join();
}

}  // namespace
}  // namespace ringmaster::core
