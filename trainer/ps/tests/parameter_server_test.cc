// The parameter server on hand-made pieces: scripted pulls and pushes per consistency model with
// plain SGD at learning rate 1 (so every expected value is exact in float), waits released by
// pushes and removals, errors; then the piece copies the worker uses. Waits have a 10 s
// deadline and no test asserts how fast anything happened.

#include "trainer/ps/parameter_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "trainer/ps/ps_worker.h"
#include "trainer/ps/push_step.h"

namespace ringmaster::trainer::ps {
namespace {

using Floats = std::vector<float>;

const Floats kInitial = {1, 2, 3, 4};
const Floats kGrad0 = {2, 4, 6, 8};
const Floats kGrad1 = {4, 0, -2, 2};
// kInitial - (kGrad0 + kGrad1) / 2: one sync step of the mean, or two async pushes of each / 2.
const Floats kAfterBoth = {-2, 0, 1, -1};

ServerOptions options(Consistency consistency) {
  ServerOptions o;
  o.consistency = consistency;
  o.optimizer.learning_rate = 1;
  o.optimizer.momentum = 0;
  o.wait_timeout = std::chrono::seconds(10);
  return o;
}

// One server holding tensor 0's four elements, with `workers` live workers.
std::unique_ptr<ParameterServer> makeServer(const ServerOptions& o, int workers = 2) {
  auto server = ParameterServer::create(0, {Piece{0, 0, 4, 0}}, kInitial, workers, o);
  EXPECT_TRUE(server.ok()) << server.status().toString();
  return server.ok() ? std::move(*server) : nullptr;
}

Floats pulled(ParameterServer& server, WorkerId worker, int64_t step) {
  Floats out(server.elements());
  const core::Status status = server.pull(worker, step, out);
  EXPECT_TRUE(status.ok()) << status.toString();
  return out;
}

void push(ParameterServer& server, WorkerId worker, int64_t step, const Floats& grads) {
  const core::Status status = server.push(worker, step, grads);
  EXPECT_TRUE(status.ok()) << status.toString();
}

template <typename T>
std::string caseName(const ::testing::TestParamInfo<T>& info) {
  return info.param.name;
}

// --- what one push and then the other do to the values ---

struct ModeCase {
  std::string name;
  Consistency consistency;
  Floats after_first;  // worker 0 pushed step 0
  uint64_t updates_after_first = 0;
};
void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.name; }

class ModeTable : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ModeTable, AppliesPushesAsTheModelSays) {
  const ModeCase& c = GetParam();
  auto server = makeServer(options(c.consistency));
  EXPECT_EQ(pulled(*server, 0, 0), kInitial);
  EXPECT_EQ(pulled(*server, 1, 0), kInitial);
  push(*server, 0, 0, kGrad0);
  EXPECT_EQ(server->values(), c.after_first);
  EXPECT_EQ(server->counters().updates, c.updates_after_first);
  push(*server, 1, 0, kGrad1);
  EXPECT_EQ(server->values(), kAfterBoth);
  const ServerCounters counters = server->counters();
  EXPECT_EQ(counters.pulls, 2u);
  EXPECT_EQ(counters.pushes, 2u);
  EXPECT_EQ(counters.pushes_applied, 2u);
  EXPECT_EQ(counters.bytes_pulled, 2 * 4 * sizeof(float));
  EXPECT_EQ(counters.bytes_pushed, 2 * 4 * sizeof(float));
  EXPECT_EQ(counters.maxStaleness(), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, ModeTable,
                         ::testing::Values(
                             // The mean waits for the second push.
                             ModeCase{"sync", Consistency::sync(), kInitial, 0},
                             // Each push at once, scaled by 1/2.
                             ModeCase{"async", Consistency::async(), {0, 0, 0, 0}, 1},
                             ModeCase{"bounded", Consistency::bounded(2), {0, 0, 0, 0}, 1}),
                         caseName<ModeCase>);

// --- sync: pulls of the next step wait for its update ---

TEST(SyncServer, PullOfTheNextStepSeesTheMeanOfTheStep) {
  auto server = makeServer(options(Consistency::sync()));
  push(*server, 0, 0, kGrad0);
  auto next = std::async(std::launch::async, [&] { return pulled(*server, 0, 1); });
  push(*server, 1, 0, kGrad1);
  EXPECT_EQ(next.get(), kAfterBoth);
  EXPECT_EQ(server->counters().updates, 1u);
}

struct RemovalCase {
  std::string name;
  bool removed_pushed_first;  // the removed worker's gradient of the step is already in
  Floats want;
};
void PrintTo(const RemovalCase& c, std::ostream* os) { *os << c.name; }

class SyncRemovalTable : public ::testing::TestWithParam<RemovalCase> {};

TEST_P(SyncRemovalTable, TheLiveWorkersCompleteTheStep) {
  const RemovalCase& c = GetParam();
  auto server = makeServer(options(Consistency::sync()));
  if (c.removed_pushed_first) push(*server, 1, 0, kGrad1);
  push(*server, 0, 0, kGrad0);
  if (c.removed_pushed_first) {
    EXPECT_EQ(server->counters().updates, 1u);
    ASSERT_TRUE(server->removeWorker(1).ok());
    EXPECT_EQ(pulled(*server, 0, 1), c.want);
  } else {
    auto next = std::async(std::launch::async, [&] { return pulled(*server, 0, 1); });
    ASSERT_TRUE(server->removeWorker(1).ok());
    EXPECT_EQ(next.get(), c.want);
  }
  // The survivor goes on alone; the removed worker is turned away.
  push(*server, 0, 1, kGrad0);
  EXPECT_EQ(server->counters().updates, 2u);
  Floats out(4);
  EXPECT_EQ(server->pull(1, 1, out).code(), core::Code::kNotFound);
  EXPECT_EQ(server->push(1, 1, kGrad1).code(), core::Code::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(
    Removals, SyncRemovalTable,
    ::testing::Values(
        // The pull waits for worker 1 until it is removed; the step is worker 0's alone.
        RemovalCase{"before_its_push", false, {-1, -2, -3, -4}},
        RemovalCase{"after_its_push", true, kAfterBoth}),
    caseName<RemovalCase>);

TEST(SyncServer, AddedWorkerJoinsAtTheSlowestClockAndCountsInTheMean) {
  auto server = makeServer(options(Consistency::sync()));
  push(*server, 0, 0, kGrad0);
  push(*server, 1, 0, kGrad1);
  auto joined = server->addWorker(2);
  ASSERT_TRUE(joined.ok()) << joined.status().toString();
  EXPECT_EQ(*joined, 1);
  push(*server, 0, 1, {3, 3, 3, 3});
  push(*server, 1, 1, {3, 3, 3, 3});
  EXPECT_EQ(server->counters().updates, 1u) << "step 1 waits for the new worker too";
  EXPECT_EQ(pulled(*server, 2, 1), kAfterBoth);
  push(*server, 2, 1, {6, 6, 6, 6});
  EXPECT_EQ(server->values(), (Floats{-6, -4, -3, -5}));  // kAfterBoth - 12 / 3
  EXPECT_EQ(server->addWorker(2).status().code(), core::Code::kAlreadyExists);
}

// --- loose modes: the per-push rule (push_step.h) ---

TEST(AsyncServer, DampsAPushThatOtherPushesOvertook) {
  auto server = makeServer(options(Consistency::async()));
  EXPECT_EQ(pulled(*server, 0, 0), kInitial);
  // Worker 1 runs three steps (of zero gradients) while worker 0 computes its first.
  for (int64_t step = 0; step < 3; ++step) {
    pulled(*server, 1, step);
    push(*server, 1, step, Floats(4, 0));
  }
  EXPECT_EQ(server->values(), kInitial);
  // Three updates since its pull, one round (W - 1 = 1) is normal: 2 / 4 of the 1/2 share.
  push(*server, 0, 0, kGrad0);
  EXPECT_EQ(server->values(), (Floats{0.5, 1, 1.5, 2}));
}

TEST(AsyncServer, WeightDecayIsAPushsShare) {
  ServerOptions o = options(Consistency::async());
  o.optimizer.weight_decay = 0.5;
  auto server = makeServer(o);
  pulled(*server, 0, 0);
  // 0.5 / 2 per push: two pushes decay the weights about as much as one sync step of 0.5.
  push(*server, 0, 0, Floats(4, 0));
  EXPECT_EQ(server->values(), (Floats{0.75, 1.5, 2.25, 3}));
}

// A pull for a step answers the values moved on along the momentum by the updates the worker's
// push will likely find (push_step.h); a pull as stored, and sync, the values as they are.
TEST(LooseServer, APullForAStepLooksAheadAlongTheMomentum) {
  ServerOptions o = options(Consistency::async());
  o.optimizer.momentum = 0.81;  // per push with 2 workers: 0.9
  auto server = makeServer(o);
  const PushStep rule = pushStep(Consistency::async(), o.optimizer, 2);
  ASSERT_DOUBLE_EQ(rule.optimizer.momentum, 0.9);
  // No momentum yet: nothing to look ahead along.
  EXPECT_EQ(pulled(*server, 0, 0), kInitial);
  EXPECT_EQ(pulled(*server, 1, 0), kInitial);
  push(*server, 0, 0, kGrad0);  // found 0 updates since its pull: expects 0.75 from now on
  push(*server, 1, 0, kGrad1);  // found 1: expects 1
  const auto s = static_cast<float>(rule.gradient_scale);
  Floats velocity(4), values(4);
  for (size_t i = 0; i < 4; ++i) {
    velocity[i] = 0.9f * (s * kGrad0[i]) + s * kGrad1[i];
    values[i] = kInitial[i] - s * kGrad0[i] - velocity[i];
  }
  const Floats stored = server->values();
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(stored[i], values[i], 1e-5) << i;
  for (const auto& [worker, expected] : {std::pair{0, 0.75}, std::pair{1, 1.0}}) {
    const auto ahead = static_cast<float>(lookahead(rule.optimizer, 1, expected));
    const Floats got = pulled(*server, worker, 1);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(got[i], values[i] - ahead * velocity[i], 1e-5) << "worker " << worker;
    }
  }
  Floats as_stored(4);
  ASSERT_TRUE(server->pull(0, 1, as_stored, PullView::kAsStored).ok());
  EXPECT_EQ(as_stored, stored);
}

TEST(SyncServer, PullsNeverLookAhead) {
  ServerOptions o = options(Consistency::sync());
  o.optimizer.momentum = 0.9;
  auto server = makeServer(o);
  pulled(*server, 0, 0);
  pulled(*server, 1, 0);
  push(*server, 0, 0, kGrad0);
  push(*server, 1, 0, kGrad1);
  EXPECT_EQ(pulled(*server, 0, 1), server->values());
}

// --- bounded staleness ---

TEST(BoundedServer, PullWaitsOnlyBeyondTheBound) {
  auto server = makeServer(options(Consistency::bounded(1)));
  push(*server, 0, 0, kGrad0);
  pulled(*server, 0, 1);  // one step ahead of worker 1: allowed
  push(*server, 0, 1, kGrad0);
  auto ahead = std::async(std::launch::async, [&] { return pulled(*server, 0, 2); });
  push(*server, 1, 0, kGrad1);  // releases step 2
  ahead.get();
  const ServerCounters counters = server->counters();
  EXPECT_EQ(counters.staleness, (std::map<int64_t, uint64_t>{{0, 2}, {1, 1}}));
  EXPECT_EQ(counters.maxStaleness(), 1);
}

TEST(AsyncServer, NeverWaitsAndRecordsHowFarAheadAPushWas) {
  auto server = makeServer(options(Consistency::async()));
  for (int64_t step = 0; step < 4; ++step) {
    pulled(*server, 0, step);
    push(*server, 0, step, kGrad0);
  }
  EXPECT_EQ(server->counters().maxStaleness(), 3);
  EXPECT_EQ(server->counters().updates, 4u);
}

// --- errors ---

// --- snapshots: a server restored from one goes on exactly as the server it was taken from ---

struct SnapshotCase {
  std::string name;
  Consistency consistency;
};
void PrintTo(const SnapshotCase& c, std::ostream* os) { *os << c.name; }

class SnapshotTable : public ::testing::TestWithParam<SnapshotCase> {};

// Two workers push four steps into a server with momentum that snapshots every 2 steps; a second
// server restored from the step-4 snapshot then takes the same two more steps as the first,
// value for value, and starts the workers' clocks (and the push count) where the first stood.
TEST_P(SnapshotTable, ARestoredServerGoesOnAsTheOriginal) {
  ServerOptions o = options(GetParam().consistency);
  o.optimizer.learning_rate = 0.1;
  o.optimizer.momentum = 0.9;  // a momentum buffer to snapshot in every mode
  o.snapshot_every = 2;
  auto original = makeServer(o);
  auto steps = [](ParameterServer& server, int64_t from, int64_t to) {
    for (int64_t step = from; step < to; ++step) {
      const auto k = static_cast<float>(step + 1);
      pulled(server, 0, step);
      pulled(server, 1, step);
      push(server, 0, step, {k, -k, 2 * k, 0.5f});
      push(server, 1, step, {-k, 3 * k, k, 1});
    }
  };
  steps(*original, 0, 3);
  std::optional<ServerSnapshot> first = original->takeSnapshot();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->step, 2);
  EXPECT_FALSE(original->takeSnapshot().has_value()) << "a snapshot is handed out once";
  steps(*original, 3, 4);
  std::optional<ServerSnapshot> at4 = original->takeSnapshot();
  ASSERT_TRUE(at4.has_value());
  EXPECT_EQ(at4->step, 4);
  EXPECT_EQ(at4->values, original->values());
  ASSERT_EQ(at4->optimizer_state.size(), 1u);  // the momentum buffer

  o.snapshot_every = 0;
  auto restored = makeServer(o);
  ASSERT_TRUE(restored->restore(*at4).ok());
  EXPECT_EQ(restored->values(), original->values());
  EXPECT_EQ(restored->standing(0), (WorkerStanding{true, 4}));
  EXPECT_EQ(restored->standing(1), (WorkerStanding{true, 4}));
  EXPECT_EQ(restored->pushes(), original->pushes());
  steps(*original, 4, 6);
  steps(*restored, 4, 6);
  EXPECT_EQ(restored->values(), original->values());
  EXPECT_EQ(restored->counters().updates, original->counters().updates);
}

INSTANTIATE_TEST_SUITE_P(Modes, SnapshotTable,
                         ::testing::Values(SnapshotCase{"Sync", Consistency::sync()},
                                           SnapshotCase{"Async", Consistency::async()},
                                           SnapshotCase{"Bounded", Consistency::bounded(2)}),
                         caseName<SnapshotCase>);

// An elastic run's server: one worker at the start, a second joining and the first leaving for
// good; its schedule, snapshots and restore count pushes, whoever made them, and a restore
// leaves the clocks alone.
TEST(ElasticServer, CountsPushesWhoeverMadeThemAndLetsWorkersComeAndGo) {
  ServerOptions o = options(Consistency::async());
  std::vector<int64_t> schedule;  // the progress each update's learning rate was asked at
  o.learning_rate_at = [&schedule](int64_t progress) {
    schedule.push_back(progress);
    return 1.0;
  };
  o.snapshot_every = 3;
  o.elastic = true;
  auto server = makeServer(o, 1);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->liveWorkers(), 1u);
  EXPECT_EQ(server->standing(1), (WorkerStanding{false, 0}));  // a slot not filled yet
  for (int64_t step = 0; step < 2; ++step) {
    pulled(*server, 0, step);
    push(*server, 0, step, kGrad0);
  }
  // The job scaled up: worker 1 joins where worker 0 is, then worker 0 leaves.
  auto joined = server->addWorker(1);
  ASSERT_TRUE(joined.ok()) << joined.status().toString();
  EXPECT_EQ(*joined, 2);
  pulled(*server, 1, 2);
  push(*server, 1, 2, kGrad1);
  ASSERT_TRUE(server->removeWorker(0).ok());
  pulled(*server, 1, 3);
  push(*server, 1, 3, kGrad1);
  EXPECT_EQ(schedule, (std::vector<int64_t>{0, 1, 2, 3}));
  std::optional<ServerSnapshot> snapshot = server->takeSnapshot();
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_EQ(snapshot->step, 3);  // the third push, not a step of the workers it started with

  auto restored = makeServer(o, 1);
  ASSERT_TRUE(restored->restore(*snapshot).ok());
  EXPECT_EQ(restored->pushes(), 3u);
  EXPECT_EQ(restored->standing(0), (WorkerStanding{true, 0}));
  // A sync step is every live worker's batch: an elastic server refuses it.
  ServerOptions sync = options(Consistency::sync());
  sync.elastic = true;
  auto refused = ParameterServer::create(0, {Piece{0, 0, 4, 0}}, kInitial, 1, sync);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("use async or bounded staleness"), std::string::npos)
      << refused.status().message();
}

TEST(ServerSnapshot, RestoreRefusesWhatDoesNotFitAndAServerThatAlreadyServed) {
  ServerOptions o = options(Consistency::sync());
  o.optimizer.momentum = 0.5;
  auto server = makeServer(o);
  ServerSnapshot wrong;
  wrong.step = 2;
  wrong.values = {1, 2, 3};
  wrong.optimizer_state = {Floats(4)};
  EXPECT_EQ(server->restore(wrong).code(), core::Code::kInvalidArgument);
  wrong.values = kInitial;
  wrong.optimizer_state = {Floats(3)};
  EXPECT_EQ(server->restore(wrong).code(), core::Code::kInvalidArgument);
  wrong.optimizer_state = {};
  EXPECT_EQ(server->restore(wrong).code(), core::Code::kInvalidArgument);
  pulled(*server, 0, 0);
  ServerSnapshot fits;
  fits.step = 2;
  fits.values = kInitial;
  fits.optimizer_state = {Floats(4)};
  EXPECT_EQ(server->restore(fits).code(), core::Code::kInternal);
}

TEST(ParameterServerErrors, CallsOutsideTheContract) {
  auto server = makeServer(options(Consistency::sync()));
  Floats out(4), small(3);
  EXPECT_EQ(server->pull(0, 0, small).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(server->push(0, 0, small).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(server->pull(7, 0, out).code(), core::Code::kNotFound);
  EXPECT_EQ(server->pull(0, 1, out).code(), core::Code::kInvalidArgument) << "clock is 0";
  EXPECT_EQ(server->removeWorker(7).code(), core::Code::kNotFound);
  EXPECT_EQ(server->load(small).code(), core::Code::kInvalidArgument);
  ASSERT_TRUE(server->load(kGrad1).ok());
  EXPECT_EQ(server->values(), kGrad1);
}

TEST(ParameterServerErrors, PullTimesOutWhileTheStepIsOpen) {
  ServerOptions o = options(Consistency::sync());
  o.wait_timeout = std::chrono::milliseconds(20);
  auto server = makeServer(o);
  push(*server, 0, 0, kGrad0);
  Floats out(4);
  const core::Status status = server->pull(0, 1, out);
  EXPECT_EQ(status.code(), core::Code::kTimeout) << status.toString();
}

TEST(ParameterServerErrors, CloseCancelsAWaitingPullAndLaterCalls) {
  auto server = makeServer(options(Consistency::sync()));
  push(*server, 0, 0, kGrad0);
  auto waiting = std::async(std::launch::async, [&] {
    Floats out(4);
    return server->pull(0, 1, out);
  });
  server->close();
  EXPECT_EQ(waiting.get().code(), core::Code::kCancelled);
  EXPECT_EQ(server->push(1, 0, kGrad1).code(), core::Code::kCancelled);
  EXPECT_EQ(server->addWorker(3).status().code(), core::Code::kCancelled);
}

TEST(ParameterServerCreate, RejectsWhatDoesNotFit) {
  const Floats three = {1, 2, 3};
  EXPECT_EQ(ParameterServer::create(0, {Piece{0, 0, 4, 0}}, three, 2, options({})).status().code(),
            core::Code::kInvalidArgument);
  EXPECT_EQ(
      ParameterServer::create(0, {Piece{0, 0, 4, 0}}, kInitial, -1, options({})).status().code(),
      core::Code::kInvalidArgument);
  ServerOptions bad = options({});
  bad.optimizer.learning_rate = 0;
  auto rejected = ParameterServer::create(0, {}, {}, 2, bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("optimizer.learningRate"), std::string::npos);
}

TEST(ParameterServerCreate, AServerWithoutPiecesStillKeepsTheSteps) {
  auto server = ParameterServer::create(3, {}, {}, 2, options(Consistency::sync()));
  ASSERT_TRUE(server.ok()) << server.status().toString();
  ParameterServer& s = **server;
  push(s, 0, 0, {});
  push(s, 1, 0, {});
  EXPECT_EQ(pulled(s, 0, 1), Floats{});
  EXPECT_EQ(s.counters().updates, 1u);
}

// --- piece copies ---

TEST(Pieces, GatherAndScatterFollowTheLayout) {
  const FlatLayout layout =
      FlatLayout::of({{"a.weight", 0, 6}, {"a.bias", 6, 2}, {"b.weight", 8, 4}});
  EXPECT_EQ(layout.size, 12u);
  ASSERT_EQ(layout.tensors.size(), 3u);
  EXPECT_EQ(layout.tensors[1].name, "a.bias");
  EXPECT_EQ(layout.tensors[1].elements, 2);
  const std::vector<Piece> pieces = {{0, 2, 3, 0}, {2, 0, 1, 0}, {1, 1, 1, 0}};
  const Floats flat = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  Floats packed(5);
  gatherPieces(pieces, layout, flat, packed);
  EXPECT_EQ(packed, (Floats{2, 3, 4, 8, 7}));
  Floats back(12, -1);
  scatterPieces(pieces, layout, packed, back);
  EXPECT_EQ(back, (Floats{-1, -1, 2, 3, 4, -1, -1, 7, 8, -1, -1, -1}));
}

TEST(Pieces, ServersMadeFromAPlanGiveTheParametersBack) {
  const FlatLayout layout =
      FlatLayout::of({{"w1", 0, 300}, {"b1", 300, 30}, {"w2", 330, 200}, {"b2", 530, 3}});
  auto plan = planShards(layout.tensors, 3, {.min_piece_bytes = 40});
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  Floats params(layout.size);
  for (size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(i) * 0.5f;
  auto servers = makeServers(*plan, layout, params, 2, options(Consistency::sync()));
  ASSERT_TRUE(servers.ok()) << servers.status().toString();
  ASSERT_EQ(servers->size(), 3u);
  EXPECT_EQ(assembleParameters(*servers, layout), params);
  EXPECT_EQ(makeServers(*plan, layout, Floats(5), 2, options({})).status().code(),
            core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::trainer::ps
