#include "operator/progress_poller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace ringmaster::op {
namespace {

using namespace std::chrono_literals;

// A source whose reads block while `held`, and count themselves.
class GatedSource : public ProgressSource {
 public:
  core::Result<kube::TrainingProgress> read(const std::string& host, int port) override {
    std::unique_lock lock(mu_);
    ++calls_;
    last_host_ = host + ":" + std::to_string(port);
    released_.wait(lock, [&] { return !held_; });
    kube::TrainingProgress p;
    p.step = step_;
    return p;
  }
  void hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void release(int64_t step) {
    {
      std::lock_guard lock(mu_);
      held_ = false;
      step_ = step;
    }
    released_.notify_all();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::string lastHost() {
    std::lock_guard lock(mu_);
    return last_host_;
  }

 private:
  std::mutex mu_;
  std::condition_variable released_;
  bool held_ = false;
  int64_t step_ = 0;
  int calls_ = 0;
  std::string last_host_;
};

template <class F>
bool eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

TEST(ProgressPoller, AnswersAtOnceWhileTheTrainerHangsAndLaterWithItsReading) {
  GatedSource source;
  source.hold();  // the trainer does not answer
  ProgressPoller poller(source, 20ms);
  core::Result<kube::TrainingProgress> first = poller.read("10.244.0.7", 9090);
  EXPECT_EQ(first.status().code(), core::Code::kUnavailable);
  // The poller's thread is stuck in the scrape; the reconciler's read still answers.
  ASSERT_TRUE(eventually([&] { return source.calls() == 1; }));
  EXPECT_EQ(source.lastHost(), "10.244.0.7:9090");
  EXPECT_FALSE(poller.read("10.244.0.7", 9090).ok());
  source.release(42);
  ASSERT_TRUE(eventually([&] {
    core::Result<kube::TrainingProgress> p = poller.read("10.244.0.7", 9090);
    return p.ok() && p->step == 42;
  }));
}

TEST(ProgressPoller, ReadsAgainEveryIntervalUntilForgotten) {
  GatedSource source;
  source.release(1);
  ProgressPoller poller(source, 20ms);
  ASSERT_FALSE(poller.read("10.244.0.8", 9090).ok());
  // Asked once, the address is read again and again (a running job).
  ASSERT_TRUE(eventually([&] { return source.calls() >= 3; }));
  EXPECT_EQ(poller.watched(), 1u);
  // Nobody wants it any more (the job finished): it is no longer read.
  poller.forget("10.244.0.8", 9090);
  EXPECT_EQ(poller.watched(), 0u);
  std::this_thread::sleep_for(50ms);  // a read under way when forgotten ends meanwhile
  const int calls = source.calls();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(source.calls(), calls);
}

// Forgotten while its read is under way and asked for again at once, an address keeps one
// schedule: it is read once per interval, not twice.
TEST(ProgressPoller, AnAddressForgottenAndAskedAgainDuringItsReadIsScheduledOnce) {
  GatedSource source;
  source.hold();
  ProgressPoller poller(source, 10s);
  (void)poller.read("10.244.0.10", 9090);
  ASSERT_TRUE(eventually([&] { return source.calls() == 1; }));
  poller.forget("10.244.0.10", 9090);
  (void)poller.read("10.244.0.10", 9090);  // due at once
  source.release(1);
  ASSERT_TRUE(eventually([&] { return source.calls() == 2 && poller.scheduled() == 1; }));
  std::this_thread::sleep_for(200ms);  // nothing else is due for 10 s
  EXPECT_EQ(poller.scheduled(), 1u);
  EXPECT_EQ(source.calls(), 2);
  EXPECT_EQ(poller.watched(), 1u);
}

// The listener hears of an address when its reading changed, not at every reading: an idle
// job's unchanged progress costs no reconcile pass.
TEST(ProgressPoller, TellsTheListenerOnlyWhenAReadingChanged) {
  GatedSource source;
  source.release(7);
  ProgressPoller poller(source, 10ms);
  std::mutex mu;
  std::vector<ProgressAddress> told;
  EXPECT_TRUE(poller.onChange([&](const ProgressAddress& address) {
    std::lock_guard lock(mu);
    told.push_back(address);
  }));
  auto toldCount = [&] {
    std::lock_guard lock(mu);
    return told.size();
  };
  (void)poller.read("10.244.0.11", 9090);
  ASSERT_TRUE(eventually([&] { return toldCount() == 1; }));  // the first reading is news
  ASSERT_TRUE(eventually([&] { return source.calls() >= 5; }));
  EXPECT_EQ(toldCount(), 1u);  // four more readings of step 7: nothing new
  source.release(8);
  ASSERT_TRUE(eventually([&] { return toldCount() == 2; }));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(told[1], ProgressAddress("10.244.0.11", 9090));
  }
  // Unsubscribed, it hears nothing more.
  EXPECT_TRUE(poller.onChange(nullptr));
  source.release(9);
  const int calls = source.calls();
  ASSERT_TRUE(eventually([&] { return source.calls() >= calls + 3; }));
  EXPECT_EQ(toldCount(), 2u);
}

// Jobs turn Running one after another: each new address is read at once, and the others keep
// their own schedule instead of being read again with it.
TEST(ProgressPoller, ANewAddressIsReadAtOnceWithoutReadingTheOthersAgain) {
  GatedSource source;
  source.release(1);
  ProgressPoller poller(source, 10s);
  for (int i = 1; i <= 3; ++i) {
    const std::string host = "10.244.1." + std::to_string(i);
    (void)poller.read(host, 9090);
    ASSERT_TRUE(eventually([&] { return source.calls() == i; })) << source.calls();
    EXPECT_EQ(source.lastHost(), host + ":9090");
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(source.calls(), 3);
  EXPECT_EQ(poller.watched(), 3u);
}

TEST(ProgressPoller, StopsWhileAScrapeIsOutstandingOnceItReturns) {
  auto source = std::make_unique<GatedSource>();
  source->hold();
  std::atomic<bool> destroyed = false;
  std::thread destroyer;
  {
    auto poller = std::make_unique<ProgressPoller>(*source, 10ms);
    (void)poller->read("10.244.0.9", 9090);
    ASSERT_TRUE(eventually([&] { return source->calls() == 1; }));
    destroyer = std::thread([&, p = std::move(poller)]() mutable {
      p.reset();
      destroyed = true;
    });
  }
  source->release(0);  // the outstanding scrape returns; the thread sees the stop and ends
  destroyer.join();
  EXPECT_TRUE(destroyed);
}

}  // namespace
}  // namespace ringmaster::op

namespace ringmaster::op {
namespace {

// Reads of all Running jobs together stay within kProgressReadsPerSecond: the base interval
// while that holds, then an interval that grows with the number of jobs.
TEST(ProgressInterval, StretchesSoThatAllJobsTogetherStayWithinTheReadBudget) {
  using std::chrono::milliseconds;
  struct Row {
    size_t running;
    milliseconds want;
  };
  for (const Row& row : std::vector<Row>{{0, milliseconds(5'000)},
                                         {1, milliseconds(5'000)},
                                         {75, milliseconds(5'000)},
                                         {76, milliseconds(5'067)},
                                         {1000, milliseconds(66'667)},
                                         {3000, milliseconds(200'000)}}) {
    const milliseconds got = progressInterval(milliseconds(5'000), row.running);
    EXPECT_EQ(got, row.want) << row.running << " running jobs";
    // Never more reads a second than the budget (beyond what the base interval already allows).
    if (got > milliseconds(5'000)) {
      EXPECT_LE(static_cast<double>(row.running) * 1000.0 / static_cast<double>(got.count()),
                static_cast<double>(kProgressReadsPerSecond));
    }
  }
}

}  // namespace
}  // namespace ringmaster::op
