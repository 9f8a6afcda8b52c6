// Parameter servers agreeing on where they resume, each from a directory of its own, through a
// real rendezvous store on loopback: a table of what the directories hold before the start and
// what each server then resumes from (and what is left on disk), plus a snapshot's round trip
// through the checkpoint format.

#include "trainer/ps/server_checkpoint.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <future>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ringmaster/rendezvous/tcp_store.h"

namespace ringmaster::trainer::ps {
namespace {

namespace fs = std::filesystem;

constexpr int kServers = 2;
const std::string kSecret = "server-checkpoint-test-secret";

ServerSnapshot snapshotAt(int64_t step, int server) {
  ServerSnapshot s;
  s.step = step;
  const auto v = static_cast<float>(step + server);
  s.values = {v, -v, 0.5f * v};
  s.optimizer_step = step;
  s.optimizer_state = {{v, v, v}};
  return s;
}

struct Dirs {
  std::vector<int64_t> steps;  // checkpoints the directory holds
  uint64_t run = 0;            // its run marker; 0: none
};

struct AgreeCase {
  std::string name;
  Dirs server0, server1;
  int64_t want_step = -1;  // where both resume; -1: from scratch
  // What each directory holds afterwards (its older files kept or removed).
  std::vector<int64_t> left0, left1;
  std::string error;  // part of both servers' error, when they must refuse
};
void PrintTo(const AgreeCase& c, std::ostream* os) { *os << c.name; }

class AgreeTable : public ::testing::TestWithParam<AgreeCase> {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "rm_ps_ckpt_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  ServerCheckpoints where(int server) const {
    ServerCheckpoints w;
    w.path = root_;
    w.server = server;
    w.servers = kServers;
    w.signature = serverSignature("mlp:test", server, kServers, 3);
    w.optimizer_type = "sgd";
    w.attempt_prefix = "job/attempt-1";
    w.timeout = std::chrono::seconds(20);
    return w;
  }
  void prepare(int server, const Dirs& dirs) const {
    const ServerCheckpoints w = where(server);
    for (int64_t step : dirs.steps) ASSERT_TRUE(writeSnapshot(w, snapshotAt(step, server)).ok());
    if (dirs.run != 0) {
      ASSERT_TRUE(
          checkpoint::writeRunMarker(serverCheckpointDir(root_, server, kServers), dirs.run).ok());
    }
  }
  std::vector<int64_t> stepsLeft(int server) const {
    std::vector<int64_t> steps;
    const std::string dir = serverCheckpointDir(root_, server, kServers);
    for (int64_t step = 0; step <= 1000; step += 100) {
      if (fs::exists(dir + "/" + checkpoint::checkpointFileName(step))) steps.push_back(step);
    }
    return steps;
  }

  std::string root_;
};

TEST_P(AgreeTable, EveryServerResumesAtTheSameStep) {
  const AgreeCase& c = GetParam();
  prepare(0, c.server0);
  prepare(1, c.server1);
  auto store = rendezvous::TcpStoreServer::start("127.0.0.1", 0, kSecret);
  ASSERT_TRUE(store.ok()) << store.status().toString();
  auto agree = [&](int server) {
    auto client = rendezvous::TcpStoreClient::connect("127.0.0.1", (*store)->port(), kSecret,
                                                      std::chrono::seconds(10));
    if (!client.ok()) return core::Result<std::optional<ServerSnapshot>>(client.status());
    return agreeOnResume(where(server), **client);
  };
  auto first = std::async(std::launch::async, agree, 0);
  auto second = std::async(std::launch::async, agree, 1);
  const std::vector<core::Result<std::optional<ServerSnapshot>>> results = {first.get(),
                                                                            second.get()};
  for (int server = 0; server < kServers; ++server) {
    SCOPED_TRACE("server " + std::to_string(server));
    const auto& result = results[static_cast<size_t>(server)];
    if (!c.error.empty()) {
      ASSERT_FALSE(result.ok());
      EXPECT_NE(result.status().message().find(c.error), std::string::npos)
          << result.status().toString();
      continue;
    }
    ASSERT_TRUE(result.ok()) << result.status().toString();
    if (c.want_step < 0) {
      EXPECT_FALSE(result->has_value()) << "resumed at step " << (*result)->step;
    } else {
      ASSERT_TRUE(result->has_value());
      const ServerSnapshot want = snapshotAt(c.want_step, server);
      EXPECT_EQ((*result)->step, want.step);
      EXPECT_EQ((*result)->values, want.values);
      EXPECT_EQ((*result)->optimizer_step, want.optimizer_step);
      EXPECT_EQ((*result)->optimizer_state, want.optimizer_state);
    }
  }
  if (!c.error.empty()) return;
  EXPECT_EQ(stepsLeft(0), c.left0);
  EXPECT_EQ(stepsLeft(1), c.left1);
  // Both directories carry one run's marker from here on.
  auto run0 = checkpoint::readRunMarker(serverCheckpointDir(root_, 0, kServers));
  auto run1 = checkpoint::readRunMarker(serverCheckpointDir(root_, 1, kServers));
  ASSERT_TRUE(run0.ok() && run1.ok());
  ASSERT_TRUE(run0->has_value());
  EXPECT_EQ(*run0, *run1);
}

INSTANTIATE_TEST_SUITE_P(
    Directories, AgreeTable,
    ::testing::Values(
        AgreeCase{"NoneHoldsACheckpointSoBothStartFresh", {}, {}, -1, {}, {}, ""},
        AgreeCase{"BothHoldTheSameNewestStep",
                  {{100, 200}, 7},
                  {{100, 200}, 7},
                  200,
                  {100, 200},
                  {100, 200},
                  ""},
        // Server 1 died before it wrote step 200: both go back to 100.
        AgreeCase{"OneIsAheadSoBothTakeTheNewestBothHold",
                  {{100, 200}, 7},
                  {{100}, 7},
                  100,
                  {100, 200},
                  {100},
                  ""},
        // Server 1 died before its first checkpoint of this run: the run starts over, and
        // server 0's files go.
        AgreeCase{"OneOfThisRunNeverSavedSoBothStartOver", {{100}, 7}, {{}, 7}, -1, {}, {}, ""},
        AgreeCase{"DirectoriesOfDifferentRunsAreRefused",
                  {{100}, 7},
                  {{100}, 8},
                  -1,
                  {},
                  {},
                  "hold checkpoints of different runs"}),
    [](const ::testing::TestParamInfo<AgreeCase>& info) { return info.param.name; });

TEST(ServerCheckpoint, ASnapshotRoundTripsThroughTheCheckpointFormat) {
  const ServerSnapshot s = snapshotAt(300, 1);
  const checkpoint::Checkpoint ck = toCheckpoint(s, "sig", "sgd");
  EXPECT_EQ(ck.step, 300);
  EXPECT_EQ(ck.model_signature, "sig");
  EXPECT_EQ(ck.optimizer_type, "sgd");
  const ServerSnapshot back = fromCheckpoint(ck);
  EXPECT_EQ(back.step, s.step);
  EXPECT_EQ(back.values, s.values);
  EXPECT_EQ(back.optimizer_step, s.optimizer_step);
  EXPECT_EQ(back.optimizer_state, s.optimizer_state);
  EXPECT_EQ(serverCheckpointDir("/ckpt", 1, 2), "/ckpt/ps-server-1-of-2");
  EXPECT_NE(serverSignature("mlp:a", 0, 2, 10), serverSignature("mlp:a", 0, 1, 10))
      << "another shard plan is another signature";
}

}  // namespace
}  // namespace ringmaster::trainer::ps
