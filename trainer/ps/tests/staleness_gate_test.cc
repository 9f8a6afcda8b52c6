// The bounded-staleness gate: the pure clock as tables of states and of scripted joins, leaves
// and advances; then the thread-safe gate waking real waiters. Waits use a 10 s deadline and no
// test asserts how fast anything happened, so load cannot fail them.

#include "trainer/ps/staleness_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::trainer::ps {
namespace {

using std::chrono::steady_clock;

steady_clock::time_point generous() { return steady_clock::now() + std::chrono::seconds(10); }

template <typename T>
std::string caseName(const ::testing::TestParamInfo<T>& info) {
  return info.param.name;
}

// --- parseConsistency ---

struct ParseCase {
  std::string name;
  std::string text;
  std::optional<Consistency> want;  // nullopt: rejected
};
// Failures name the row, not its bytes.
void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.name; }

class ParseTable : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseTable, ReadsTheMode) {
  const ParseCase& c = GetParam();
  auto got = parseConsistency(c.text);
  if (!c.want) {
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), core::Code::kInvalidArgument);
    EXPECT_NE(got.status().message().find("consistency: want sync, async"), std::string::npos);
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(*got, *c.want);
}

INSTANTIATE_TEST_SUITE_P(Texts, ParseTable,
                         ::testing::Values(ParseCase{"sync", "sync", Consistency::sync()},
                                           ParseCase{"async", "async", Consistency::async()},
                                           ParseCase{"zero_is_sync", "0", Consistency::sync()},
                                           ParseCase{"bound", "4", Consistency::bounded(4)},
                                           ParseCase{"negative", "-1", std::nullopt},
                                           ParseCase{"empty", "", std::nullopt},
                                           ParseCase{"word", "fast", std::nullopt},
                                           ParseCase{"trailing", "3x", std::nullopt}),
                         caseName<ParseCase>);

// --- StalenessClock: may a worker start a step, given the live clocks ---

struct StateCase {
  std::string name;
  Consistency consistency;
  std::map<WorkerId, int64_t> clocks;
  int64_t step;
  bool want_allowed;
  int64_t want_staleness;
};
// Failures name the row, not its bytes.
void PrintTo(const StateCase& c, std::ostream* os) { *os << c.name; }

class StateTable : public ::testing::TestWithParam<StateCase> {};

TEST_P(StateTable, AllowsWithinTheBound) {
  const StateCase& c = GetParam();
  StalenessClock clock(c.consistency);
  for (const auto& [worker, at] : c.clocks) ASSERT_TRUE(clock.join(worker, at).ok());
  EXPECT_EQ(clock.mayStart(c.step), c.want_allowed);
  EXPECT_EQ(clock.staleness(c.step), c.want_staleness);
}

INSTANTIATE_TEST_SUITE_P(
    States, StateTable,
    ::testing::Values(
        StateCase{"sync_first_step", Consistency::sync(), {{0, 0}, {1, 0}}, 0, true, 0},
        StateCase{"sync_all_done", Consistency::sync(), {{0, 3}, {1, 3}, {2, 3}}, 3, true, 0},
        StateCase{"sync_one_behind", Consistency::sync(), {{0, 4}, {1, 3}, {2, 4}}, 4, false, 1},
        StateCase{"s1_one_ahead", Consistency::bounded(1), {{0, 4}, {1, 3}}, 4, true, 1},
        StateCase{"s1_two_ahead", Consistency::bounded(1), {{0, 5}, {1, 3}}, 5, false, 2},
        StateCase{"s4_four_ahead", Consistency::bounded(4), {{0, 7}, {1, 3}}, 7, true, 4},
        StateCase{"s4_five_ahead", Consistency::bounded(4), {{0, 8}, {1, 3}}, 8, false, 5},
        StateCase{"async_far_ahead", Consistency::async(), {{0, 1000}, {1, 0}}, 1000, true, 1000},
        StateCase{"no_live_worker", Consistency::sync(), {}, 9, true, 0},
        // A push from behind the slowest live worker (e.g. a removed one) counts as fresh.
        StateCase{"behind_the_minimum", Consistency::sync(), {{0, 5}}, 2, true, 0}),
    caseName<StateCase>);

// --- StalenessClock: scripts of joins, leaves and advances ---

enum class Do { kJoin, kLeave, kAdvance, kMayStart, kClockIs, kMinIs };

struct Op {
  Do what;
  WorkerId worker = 0;
  std::optional<int64_t> value;  // clock or step
  core::Code want_code = core::Code::kOk;
  bool want_allowed = true;
};

Op join(WorkerId w, std::optional<int64_t> at = std::nullopt, core::Code code = core::Code::kOk) {
  return {Do::kJoin, w, at, code};
}
Op leave(WorkerId w, core::Code code = core::Code::kOk) { return {Do::kLeave, w, {}, code}; }
Op advance(WorkerId w, int64_t to, core::Code code = core::Code::kOk) {
  return {Do::kAdvance, w, to, code};
}
Op allowed(int64_t step) { return {Do::kMayStart, 0, step, core::Code::kOk, true}; }
Op blocked(int64_t step) { return {Do::kMayStart, 0, step, core::Code::kOk, false}; }
Op clockIs(WorkerId w, std::optional<int64_t> at) { return {Do::kClockIs, w, at}; }
Op minIs(std::optional<int64_t> at) { return {Do::kMinIs, 0, at}; }

struct ScriptCase {
  std::string name;
  Consistency consistency;
  std::vector<Op> ops;
};
// Failures name the row, not its bytes.
void PrintTo(const ScriptCase& c, std::ostream* os) { *os << c.name; }

class ScriptTable : public ::testing::TestWithParam<ScriptCase> {};

TEST_P(ScriptTable, FollowsTheScript) {
  const ScriptCase& c = GetParam();
  StalenessClock clock(c.consistency);
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const Op& op = c.ops[i];
    SCOPED_TRACE("op " + std::to_string(i));
    switch (op.what) {
      case Do::kJoin:
        EXPECT_EQ(clock.join(op.worker, op.value).code(), op.want_code);
        break;
      case Do::kLeave:
        EXPECT_EQ(clock.leave(op.worker).code(), op.want_code);
        break;
      case Do::kAdvance:
        EXPECT_EQ(clock.advance(op.worker, *op.value).code(), op.want_code);
        break;
      case Do::kMayStart:
        EXPECT_EQ(clock.mayStart(*op.value), op.want_allowed) << "step " << *op.value;
        break;
      case Do::kClockIs:
        EXPECT_EQ(clock.clockOf(op.worker), op.value);
        break;
      case Do::kMinIs:
        EXPECT_EQ(clock.minClock(), op.value);
        break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scripts, ScriptTable,
    ::testing::Values(
        // Step 1 starts only when all three have finished step 0.
        ScriptCase{"sync_lockstep",
                   Consistency::sync(),
                   {join(0), join(1), join(2), allowed(0), advance(0, 1), blocked(1), advance(1, 1),
                    blocked(1), advance(2, 1), allowed(1), blocked(2)}},
        ScriptCase{"s1_one_step_ahead",
                   Consistency::bounded(1),
                   {join(0), join(1), advance(0, 1), allowed(1), advance(0, 2), blocked(2),
                    advance(1, 1), allowed(2), blocked(3)}},
        ScriptCase{"s4_four_steps_ahead",
                   Consistency::bounded(4),
                   {join(0), join(1), advance(0, 4), allowed(4), advance(0, 5), blocked(5),
                    advance(1, 1), allowed(5), blocked(6)}},
        ScriptCase{"async_never_blocks",
                   Consistency::async(),
                   {join(0), join(1), advance(0, 100), allowed(100), allowed(1000000)}},
        // A dead straggler is removed: the minimum moves up to the live workers.
        ScriptCase{"removed_straggler_unblocks",
                   Consistency::sync(),
                   {join(0), join(1), join(2), advance(0, 5), advance(1, 5), advance(2, 2),
                    blocked(5), minIs(2), leave(2), minIs(5), allowed(5), clockIs(2, {})}},
        ScriptCase{"removing_the_leader_changes_nothing",
                   Consistency::bounded(1),
                   {join(0), join(1), advance(0, 3), advance(1, 1), leave(0), minIs(1), allowed(2),
                    blocked(3)}},
        // A joiner starts at the slowest live clock unless told otherwise; a joiner behind the
        // others holds them back until it catches up.
        ScriptCase{
            "join_at_minimum",
            Consistency::bounded(1),
            {join(0), join(1), advance(0, 3), advance(1, 4), join(2), clockIs(2, 3), minIs(3),
             allowed(4), join(3, 1), minIs(1), blocked(3), advance(3, 3), allowed(4)}},
        ScriptCase{
            "join_after_all_left_keeps_the_clock",
            Consistency::sync(),
            {join(0), advance(0, 7), leave(0), minIs({}), allowed(100), join(1), clockIs(1, 7)}},
        ScriptCase{
            "rejoin_after_leaving",
            Consistency::sync(),
            {join(0), join(1), advance(0, 2), advance(1, 2), leave(1), join(1), clockIs(1, 2)}},
        ScriptCase{"errors",
                   Consistency::sync(),
                   {join(0), join(0, {}, core::Code::kAlreadyExists),
                    join(1, -1, core::Code::kInvalidArgument), leave(9, core::Code::kNotFound),
                    advance(9, 1, core::Code::kNotFound), advance(0, 3), advance(0, 3),
                    advance(0, 2, core::Code::kInvalidArgument), clockIs(0, 3)}}),
    caseName<ScriptCase>);

TEST(StalenessClock, ReadsANegativeBoundAsSync) {
  StalenessClock clock(Consistency::bounded(-3));
  EXPECT_EQ(clock.consistency(), Consistency::sync());
}

// --- StalenessGate: real waiters ---

// Runs waitUntilAllowed on a thread; `done` is set once it returns.
struct Waiter {
  Waiter(StalenessGate& gate, WorkerId worker, int64_t step,
         steady_clock::time_point deadline = generous(), std::stop_token stop = {})
      : thread([&gate, worker, step, deadline, stop, this] {
          status = gate.waitUntilAllowed(worker, step, deadline, stop);
          done = true;
        }) {}
  core::Status result() {
    thread.join();
    return status;
  }

  std::atomic<bool> done = false;
  core::Status status;
  std::thread thread;
};

TEST(StalenessGate, AdvanceOfTheSlowestWakesAWaiter) {
  StalenessGate gate(Consistency::sync());
  ASSERT_TRUE(gate.join(0).ok());
  ASSERT_TRUE(gate.join(1).ok());
  ASSERT_TRUE(gate.advance(0, 1).ok());
  Waiter waiter(gate, 0, 1);
  // Worker 1 has not finished step 0, so the waiter cannot have been let through.
  EXPECT_FALSE(waiter.done);
  ASSERT_TRUE(gate.advance(1, 1).ok());
  EXPECT_TRUE(waiter.result().ok()) << waiter.status.toString();
}

TEST(StalenessGate, RemovingTheStragglerWakesAWaiter) {
  StalenessGate gate(Consistency::bounded(1));
  ASSERT_TRUE(gate.join(0, 3).ok());
  ASSERT_TRUE(gate.join(1, 0).ok());
  Waiter waiter(gate, 0, 3);
  EXPECT_FALSE(waiter.done);
  ASSERT_TRUE(gate.remove(1).ok());
  EXPECT_TRUE(waiter.result().ok()) << waiter.status.toString();
}

TEST(StalenessGate, RemovingTheWaiterEndsItsWait) {
  StalenessGate gate(Consistency::sync());
  ASSERT_TRUE(gate.join(0, 1).ok());
  ASSERT_TRUE(gate.join(1, 0).ok());
  Waiter waiter(gate, 0, 1);
  ASSERT_TRUE(gate.remove(0).ok());
  EXPECT_EQ(waiter.result().code(), core::Code::kNotFound) << waiter.status.toString();
}

TEST(StalenessGate, StopEndsTheWait) {
  StalenessGate gate(Consistency::sync());
  ASSERT_TRUE(gate.join(0, 1).ok());
  ASSERT_TRUE(gate.join(1, 0).ok());
  std::stop_source stop;
  Waiter waiter(gate, 0, 1, generous(), stop.get_token());
  stop.request_stop();
  EXPECT_EQ(waiter.result().code(), core::Code::kCancelled) << waiter.status.toString();
}

TEST(StalenessGate, TimesOutNamingTheWait) {
  StalenessGate gate(Consistency::bounded(2));
  ASSERT_TRUE(gate.join(0, 5).ok());
  ASSERT_TRUE(gate.join(1, 2).ok());
  const core::Status status =
      gate.waitUntilAllowed(0, 5, steady_clock::now() + std::chrono::milliseconds(20));
  EXPECT_EQ(status.code(), core::Code::kTimeout);
  EXPECT_EQ(status.message(),
            "worker 0: step 5 still waits for the slowest worker (clock 2, staleness 2)");
}

TEST(StalenessGate, UnknownWorkerDoesNotWait) {
  StalenessGate gate(Consistency::sync());
  EXPECT_EQ(gate.waitUntilAllowed(4, 0, generous()).code(), core::Code::kNotFound);
}

// Workers as threads, each running its steps through the gate: no step ever starts more than
// the bound ahead of the slowest live worker, and a straggler that dies midway blocks no one.
struct RunCase {
  std::string name;
  Consistency consistency;
  int workers;
  int steps;
  int straggler_dies_at;  // the last worker leaves after this many steps; -1: it runs them all
};
// Failures name the row, not its bytes.
void PrintTo(const RunCase& c, std::ostream* os) { *os << c.name; }

class GateRunTable : public ::testing::TestWithParam<RunCase> {};

TEST_P(GateRunTable, KeepsTheBound) {
  const RunCase& c = GetParam();
  StalenessGate gate(c.consistency);
  for (int w = 0; w < c.workers; ++w) ASSERT_TRUE(gate.join(w).ok());
  std::atomic<int64_t> worst = 0;
  std::vector<core::Status> results(c.workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < c.workers; ++w) {
    threads.emplace_back([&, w] {
      const bool straggler = w == c.workers - 1 && c.straggler_dies_at >= 0;
      const int steps = straggler ? c.straggler_dies_at : c.steps;
      for (int step = 0; step < steps; ++step) {
        core::Status allowed = gate.waitUntilAllowed(w, step, generous());
        if (!allowed.ok()) {
          results[w] = allowed;
          return;
        }
        // The minimum only rises, so this is at most the staleness the step started with.
        const int64_t staleness = gate.staleness(step);
        int64_t seen = worst.load();
        while (staleness > seen && !worst.compare_exchange_weak(seen, staleness)) {
        }
        if (w % 2 == 0) std::this_thread::yield();  // uneven speeds
        results[w] = gate.advance(w, step + 1);
        if (!results[w].ok()) return;
      }
      if (straggler) results[w] = gate.remove(w);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int w = 0; w < c.workers; ++w) EXPECT_TRUE(results[w].ok()) << results[w].toString();
  if (c.consistency.max_staleness) {
    EXPECT_LE(worst.load(), *c.consistency.max_staleness);
  }
  const StalenessClock final_clock = gate.snapshot();
  for (int w = 0; w < c.workers - (c.straggler_dies_at >= 0 ? 1 : 0); ++w) {
    EXPECT_EQ(final_clock.clockOf(w), c.steps);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, GateRunTable,
    ::testing::Values(RunCase{"sync", Consistency::sync(), 4, 50, -1},
                      RunCase{"s1", Consistency::bounded(1), 4, 50, -1},
                      RunCase{"s4", Consistency::bounded(4), 4, 50, -1},
                      RunCase{"async", Consistency::async(), 4, 50, -1},
                      RunCase{"sync_straggler_dies", Consistency::sync(), 4, 50, 10},
                      RunCase{"s2_straggler_dies", Consistency::bounded(2), 4, 50, 10}),
    caseName<RunCase>);

}  // namespace
}  // namespace ringmaster::trainer::ps
