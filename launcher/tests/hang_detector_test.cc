// HangJudge with a scripted clock; HangMonitor over the in-memory store.

#include "launcher/hang_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

namespace ringmaster::launcher {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = HangJudge::Clock;
using rendezvous::Heartbeat;

// 4 ranks, 2 per pod, 10 s timeout; every rank observed alive at step 1 at t0.
struct Fixture {
  HangJudge judge{4, 2, 10s};
  Clock::time_point t0 = Clock::now();
  std::vector<Heartbeat> hb{4, Heartbeat{1, 1, false}};
  void observeAll(Clock::time_point t) {
    for (int r = 0; r < 4; ++r) judge.observe(r, hb[r], t);
  }
  // Every rank but `frozen` beats; nobody advances.
  void beatExcept(int frozen, Clock::time_point t) {
    for (int r = 0; r < 4; ++r) {
      if (r != frozen) ++hb[r].beats;
    }
    observeAll(t);
  }
};

TEST(HangJudge, FrozenRankIsNamedWithItsPodAndStep) {
  Fixture f;
  f.hb[3].step = 17;  // rank 3 (pod 1) froze after step 17; the others wait in allreduce
  f.observeAll(f.t0);
  f.beatExcept(3, f.t0 + 5s);
  EXPECT_FALSE(f.judge.judge(f.t0 + 5s)) << "within the timeout";
  f.beatExcept(3, f.t0 + 11s);
  auto hang = f.judge.judge(f.t0 + 11s);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 3);
  EXPECT_EQ(hang->pod, 1);
  EXPECT_EQ(hang->step, 17);
  EXPECT_THAT(hang->message(), HasSubstr("rank 3 (pod 1) stuck at step 17 for 11 s"));
  EXPECT_THAT(hang->message(), HasSubstr("no heartbeat"));
}

TEST(HangJudge, RanksThatKeepAdvancingAreNeverAHang) {
  Fixture f;
  for (int t = 0; t <= 60; t += 2) {
    for (auto& h : f.hb) {
      ++h.beats;
      ++h.step;
    }
    f.observeAll(f.t0 + std::chrono::seconds(t));
    EXPECT_FALSE(f.judge.judge(f.t0 + std::chrono::seconds(t))) << "at " << t << " s";
  }
}

TEST(HangJudge, AliveButNobodyAdvancingNamesTheLowestStep) {
  Fixture f;
  f.hb = {{1, 9, false}, {1, 9, false}, {1, 8, false}, {1, 9, false}};
  f.observeAll(f.t0);
  f.beatExcept(-1, f.t0 + 11s);
  auto hang = f.judge.judge(f.t0 + 11s);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 2);
  EXPECT_THAT(hang->why, HasSubstr("no rank advanced"));
}

TEST(HangJudge, RanksThatNeverReportedOrFinishedAreNotJudged) {
  Fixture f;
  f.hb[0] = {0, 0, false};  // a user command without heartbeats
  f.hb[1].done = true;      // finished: its beats stop on purpose
  f.observeAll(f.t0);
  // Nobody beats any more: ranks 2 and 3 are frozen, 0 and 1 are not.
  f.observeAll(f.t0 + 11s);
  auto hang = f.judge.judge(f.t0 + 11s);
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->rank, 2);
  HangJudge quiet(2, 1, 10s);
  quiet.observe(0, {0, 0, false}, f.t0);
  quiet.observe(1, {5, 3, true}, f.t0);
  quiet.observe(1, {5, 3, true}, f.t0 + 60s);
  EXPECT_FALSE(quiet.judge(f.t0 + 60s));
}

TEST(HangJudge, StepZeroIsStartupNotAStall) {
  HangJudge judge(2, 1, 10s);
  const auto t0 = Clock::now();
  for (int i = 0; i < 10; ++i) {
    judge.observe(0, {i + 1, 0, false}, t0 + std::chrono::seconds(i * 5));
    judge.observe(1, {i + 1, 0, false}, t0 + std::chrono::seconds(i * 5));
  }
  EXPECT_FALSE(judge.judge(t0 + 45s));
}

TEST(HangMonitor, CallsBackWithTheFrozenRank) {
  auto base = rendezvous::makeInMemoryStore();
  rendezvous::PrefixStore attempt(base.get(), "j/attempt-0");
  // Rank 0 reported once and never again; rank 1 never reported.
  ASSERT_TRUE(attempt.set(rendezvous::heartbeatStepKey(0), rendezvous::toBytes("4")).ok());
  ASSERT_TRUE(attempt.add(rendezvous::heartbeatBeatsKey(0), 1).ok());

  // A store view for the monitor that forwards to the same data.
  struct View final : rendezvous::Store {
    rendezvous::Store* s;
    explicit View(rendezvous::Store* base) : s(base) {}
    core::Status set(const std::string& k, const rendezvous::Bytes& v) override {
      return s->set(k, v);
    }
    core::Result<rendezvous::Bytes> get(const std::string& k, rendezvous::milliseconds t) override {
      return s->get(k, t);
    }
    core::Status wait(const std::vector<std::string>& k, rendezvous::milliseconds t) override {
      return s->wait(k, t);
    }
    core::Result<int64_t> add(const std::string& k, int64_t d) override { return s->add(k, d); }
  };
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Hang> seen;
  {
    HangMonitor monitor(std::make_unique<View>(base.get()), "j/attempt-0", HangJudge(2, 1, 30ms),
                        5ms, [&](const Hang& h) {
                          std::lock_guard lock(mu);
                          seen = h;
                          cv.notify_all();
                        });
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 60s, [&] { return seen.has_value(); }));
  }
  EXPECT_EQ(seen->rank, 0);
  EXPECT_EQ(seen->step, 4);
  // Published for the other launchers before anyone acts on it.
  std::optional<std::string> published = publishedHang(attempt);
  ASSERT_TRUE(published);
  EXPECT_THAT(*published, HasSubstr("rank 0 (pod 0) stuck at step 4"));
}

TEST(HangMonitor, NoPublishedHangReadsAsNone) {
  auto store = rendezvous::makeInMemoryStore();
  EXPECT_FALSE(publishedHang(*store));
}

}  // namespace
}  // namespace ringmaster::launcher
