// CollectiveWatchdog with a scripted probe: the timeout counts only time without progress,
// idle work never times out, a probe error aborts at once, and terminate runs only when the
// owner does not acknowledge the failure in time.

#include "trainer/comm/collective_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace ringmaster::trainer::comm {
namespace {

using namespace std::chrono_literals;
using State = CollectiveWatchdog::State;

// A probe the test steers, and counters of what the watchdog did.
struct Script {
  std::atomic<int> state{static_cast<int>(State::kIdle)};
  std::atomic<uint64_t> progress{0};
  std::atomic<int> aborts{0}, terminates{0};

  CollectiveWatchdog::Hooks hooks() {
    return {[this] {
              CollectiveWatchdog::Probe p;
              p.state = static_cast<State>(state.load());
              p.progress = progress.load();
              if (p.state == State::kFailed) p.error = "remote error: peer 2 closed the connection";
              return p;
            },
            [this](const core::Status&) { aborts++; },
            [this](const core::Status&) { terminates++; }};
  }
};

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = 3s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST(CollectiveWatchdog, PendingWorkWithoutProgressTimesOutNamingIt) {
  Script script;
  script.state = static_cast<int>(State::kPending);
  CollectiveWatchdog dog("rank 3 nccl", 200ms, 10ms, 10s, script.hooks());
  dog.arm("step 1200");
  ASSERT_TRUE(eventually([&] { return dog.failed(); }));
  EXPECT_EQ(script.aborts.load(), 1);
  const core::Status error = dog.error();
  EXPECT_EQ(error.code(), core::Code::kTimeout);
  EXPECT_NE(error.message().find("rank 3 nccl"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("step 1200"), std::string::npos) << error.message();
  dog.acknowledge();
}

TEST(CollectiveWatchdog, ProgressKeepsSlowWorkAlive) {
  Script script;
  script.state = static_cast<int>(State::kPending);
  CollectiveWatchdog dog("rank 0 nccl", 400ms, 10ms, 10s, script.hooks());
  dog.arm("step 1");
  // 600 ms of pending work, progressing every 50 ms: never 400 ms without progress.
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(50ms);
    script.progress++;
  }
  EXPECT_FALSE(dog.failed()) << dog.error().message();
  EXPECT_EQ(script.aborts.load(), 0);
  // Then it stalls.
  ASSERT_TRUE(eventually([&] { return dog.failed(); }));
  dog.acknowledge();
}

TEST(CollectiveWatchdog, IdleOrDisarmedNeverTimesOut) {
  Script script;  // idle
  CollectiveWatchdog dog("rank 0 nccl", 50ms, 5ms, 10s, script.hooks());
  dog.arm("step 1");
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(dog.failed());
  script.state = static_cast<int>(State::kPending);
  dog.disarm();
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(dog.failed()) << "pending but not armed: nothing of ours is outstanding";
  EXPECT_EQ(script.aborts.load(), 0);
}

TEST(CollectiveWatchdog, AProbeErrorAbortsAtOnceAndIsRetryable) {
  Script script;
  CollectiveWatchdog dog("rank 1 nccl", 1h, 10ms, 10s, script.hooks());
  script.state = static_cast<int>(State::kFailed);
  ASSERT_TRUE(eventually([&] { return dog.failed(); }, 1s));
  EXPECT_EQ(script.aborts.load(), 1);
  EXPECT_EQ(dog.error().code(), core::Code::kUnavailable);
  EXPECT_NE(dog.error().message().find("peer 2 closed"), std::string::npos);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(script.aborts.load(), 1) << "abort runs once";
  dog.acknowledge();
}

TEST(CollectiveWatchdog, TerminatesWhenTheOwnerDoesNotAcknowledge) {
  Script script;
  script.state = static_cast<int>(State::kFailed);
  CollectiveWatchdog dog("rank 1 nccl", 1h, 10ms, 200ms, script.hooks());
  ASSERT_TRUE(eventually([&] { return script.terminates.load() == 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(script.terminates.load(), 1) << "terminate runs once";
}

TEST(CollectiveWatchdog, AnAcknowledgedFailureIsNotTerminated) {
  Script script;
  script.state = static_cast<int>(State::kFailed);
  CollectiveWatchdog dog("rank 1 nccl", 1h, 10ms, 300ms, script.hooks());
  ASSERT_TRUE(eventually([&] { return dog.failed(); }));
  dog.acknowledge();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(script.terminates.load(), 0);
}

}  // namespace
}  // namespace ringmaster::trainer::comm
