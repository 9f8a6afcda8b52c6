#include "ringmaster/kube/workqueue.h"

#include <gtest/gtest.h>

#include <thread>

#include "fake_clock.h"

namespace ringmaster::kube {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;

class WorkQueueTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  WorkQueue queue_{clock_, WorkQueue::Options{milliseconds(5), milliseconds(40)}};
};

TEST_F(WorkQueueTest, DeduplicatesKeysNotYetHandedOut) {
  queue_.add("ns/a");
  queue_.add("ns/b");
  queue_.add("ns/a");
  EXPECT_EQ(queue_.len(), 2u);
  EXPECT_EQ(queue_.tryGet(), "ns/a");
  EXPECT_EQ(queue_.tryGet(), "ns/b");
  EXPECT_EQ(queue_.tryGet(), std::nullopt);
}

TEST_F(WorkQueueTest, KeyBeingProcessedIsNotHandedOutTwiceAndIsRequeuedOnDone) {
  queue_.add("ns/a");
  ASSERT_EQ(queue_.tryGet(), "ns/a");
  queue_.add("ns/a");  // changed while a worker reconciles it
  queue_.add("ns/a");
  EXPECT_EQ(queue_.tryGet(), std::nullopt);
  queue_.done("ns/a");
  EXPECT_EQ(queue_.tryGet(), "ns/a");
  queue_.done("ns/a");
  EXPECT_EQ(queue_.tryGet(), std::nullopt);
}

TEST_F(WorkQueueTest, AddAfterBecomesReadyWhenDueAndEarliestWins) {
  queue_.addAfter("ns/a", milliseconds(100));
  queue_.addAfter("ns/a", milliseconds(30));
  EXPECT_EQ(queue_.waiting(), 1u);
  clock_.advance(milliseconds(29));
  EXPECT_EQ(queue_.tryGet(), std::nullopt);
  clock_.advance(milliseconds(1));
  EXPECT_EQ(queue_.tryGet(), "ns/a");
  EXPECT_EQ(queue_.waiting(), 0u);
}

TEST_F(WorkQueueTest, DelayedKeysBecomeReadyInDueOrderAndAnEarlierDelayMovesAKey) {
  queue_.addAfter("ns/a", milliseconds(50));
  queue_.addAfter("ns/b", milliseconds(10));
  queue_.addAfter("ns/c", milliseconds(30));
  queue_.addAfter("ns/b", milliseconds(100));  // later than pending: ignored
  queue_.addAfter("ns/c", milliseconds(5));    // earlier: moves
  EXPECT_EQ(queue_.waiting(), 3u);
  clock_.advance(milliseconds(5));
  EXPECT_EQ(queue_.tryGet(), "ns/c");
  EXPECT_EQ(queue_.tryGet(), std::nullopt);
  clock_.advance(milliseconds(5));
  EXPECT_EQ(queue_.tryGet(), "ns/b");
  clock_.advance(milliseconds(39));
  EXPECT_EQ(queue_.tryGet(), std::nullopt);
  clock_.advance(milliseconds(1));
  EXPECT_EQ(queue_.tryGet(), "ns/a");
  EXPECT_EQ(queue_.waiting(), 0u);
  // A thousand delays come due in order.
  for (int i = 999; i >= 0; --i) queue_.addAfter("k/" + std::to_string(i), milliseconds(i + 1));
  clock_.advance(milliseconds(1000));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(queue_.tryGet(), "k/" + std::to_string(i));
}

TEST_F(WorkQueueTest, BlockedGetWakesForADelayEarlierThanTheOneItSleepsFor) {
  queue_.addAfter("ns/late", std::chrono::hours(1));
  std::optional<std::string> got;
  std::thread worker([&] { got = queue_.get(); });
  std::this_thread::sleep_for(milliseconds(20));  // the worker sleeps for the hour
  queue_.addAfter("ns/soon", milliseconds(10));
  clock_.advance(milliseconds(10));
  worker.join();  // without a wake-up for the new earliest delay, this would wait the hour
  EXPECT_EQ(got, "ns/soon");
}

TEST_F(WorkQueueTest, AddAfterNoDelayIsReadyAtOnce) {
  queue_.addAfter("ns/a", milliseconds(0));
  EXPECT_EQ(queue_.waiting(), 0u);
  EXPECT_EQ(queue_.tryGet(), "ns/a");
}

TEST_F(WorkQueueTest, RateLimitedBackoffDoublesPerKeyUpToTheCapAndForgetResets) {
  std::vector<int64_t> due_ms;
  for (int i = 0; i < 5; ++i) {
    queue_.addRateLimited("ns/a");
    int64_t waited = 0;
    while (!queue_.tryGet()) {
      clock_.advance(milliseconds(1));
      ++waited;
    }
    queue_.done("ns/a");
    due_ms.push_back(waited);
  }
  EXPECT_EQ(due_ms, (std::vector<int64_t>{5, 10, 20, 40, 40}));
  EXPECT_EQ(queue_.numRequeues("ns/a"), 5);
  EXPECT_EQ(queue_.numRequeues("ns/b"), 0);  // per key
  queue_.forget("ns/a");
  EXPECT_EQ(queue_.numRequeues("ns/a"), 0);
  queue_.addRateLimited("ns/a");
  clock_.advance(milliseconds(5));
  EXPECT_EQ(queue_.tryGet(), "ns/a");
}

TEST_F(WorkQueueTest, ShutDownDrainsReadyKeysThenEndsGet) {
  queue_.add("ns/a");
  queue_.addAfter("ns/b", milliseconds(10));
  queue_.shutDown();
  queue_.add("ns/c");  // ignored
  EXPECT_EQ(queue_.get(), "ns/a");
  EXPECT_EQ(queue_.get(), std::nullopt);
  EXPECT_TRUE(queue_.shuttingDown());
}

TEST_F(WorkQueueTest, BlockedGetWakesOnAddAndOnShutDown) {
  std::optional<std::string> got;
  std::thread worker([&] { got = queue_.get(); });
  queue_.add("ns/a");
  worker.join();
  EXPECT_EQ(got, "ns/a");

  std::thread waiter([&] { got = queue_.get(); });
  queue_.shutDown();
  waiter.join();
  EXPECT_EQ(got, std::nullopt);
}

}  // namespace
}  // namespace ringmaster::kube
