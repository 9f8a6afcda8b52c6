// Parameter-server training of the MLP on Fashion-MNIST with every worker reaching every server
// over loopback TCP (PsTcpServer + PsTcpConnection), servers and workers as threads of one
// process: sync training ends on exactly the parameters (bitwise) of the same run over the
// in-process connection, since the servers do the same math on the same bytes; a worker whose
// connections drop mid-run does not hold the other back. Also logs the round trip of the MLP's
// whole parameter vector (not asserted). Skips the training cases without the data set;
// deadlines are generous and nothing asserts how fast anything ran.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "trainer/ps/parameter_server.h"
#include "trainer/ps/ps_tcp_connection.h"
#include "trainer/ps/ps_tcp_server.h"
#include "trainer/ps/ps_worker.h"
#include "trainer/ps/tests/ps_test_support.h"

namespace ringmaster::trainer::ps {
namespace {

using namespace ::ringmaster::trainer::ps::test_support;  // NOLINT: the shared fixtures
using Clock = std::chrono::steady_clock;

const std::string kSecret = "fedcba9876543210fedcba9876543210";

// The cluster's servers, each served on a loopback port of its own.
struct Served {
  std::vector<std::unique_ptr<PsTcpServer>> tcp;

  explicit Served(Cluster& cluster) {
    for (auto& server : cluster.servers) {
      auto started = PsTcpServer::start(server.get(), "127.0.0.1", 0, kSecret);
      EXPECT_TRUE(started.ok()) << started.status().toString();
      if (started.ok()) tcp.push_back(std::move(*started));
    }
  }
  Connector connector() const {
    return [this](WorkerId worker) {
      std::vector<std::unique_ptr<ServerConnection>> connections;
      for (const auto& server : tcp) {
        auto c = PsTcpConnection::connect("127.0.0.1", server->port(), kSecret, worker,
                                          {.connect_deadline = std::chrono::seconds(60)});
        EXPECT_TRUE(c.ok()) << c.status().toString();
        if (!c.ok()) return std::vector<std::unique_ptr<ServerConnection>>{};
        connections.push_back(std::move(*c));
      }
      return connections;
    };
  }
};

PsTcpConnection& tcpOf(ServerConnection& c) { return dynamic_cast<PsTcpConnection&>(c); }

class PsTcpTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
};

// kSteps of sync training on `cluster`; returns the wall time.
double train(Cluster& cluster, Connector connect, bool leave) {
  std::vector<core::Status> status(kWorkers);
  const Clock::time_point start = Clock::now();
  runWorkers(
      cluster,
      [&](WorkerId w, WorkerKit& kit) {
        auto losses = kit.worker->run(0, kSteps, *kit.batches);
        status[static_cast<size_t>(w)] = losses.status();
        if (leave) {
          for (auto& c : kit.connections) {
            const core::Status left = tcpOf(*c).leave();
            EXPECT_TRUE(left.ok()) << left.toString();
          }
        }
      },
      std::move(connect));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const core::Status& s : status) EXPECT_TRUE(s.ok()) << s.toString();
  return seconds;
}

TEST_F(PsTcpTraining, SyncOverTcpEqualsTheInProcessRunBitwise) {
  constexpr int kServers = 2;
  auto in_proc = makeCluster(kServers, Consistency::sync());
  ASSERT_TRUE(in_proc);
  const double in_proc_s = train(*in_proc, nullptr, false);

  auto over_tcp = makeCluster(kServers, Consistency::sync());
  ASSERT_TRUE(over_tcp);
  Served served(*over_tcp);
  ASSERT_EQ(served.tcp.size(), static_cast<size_t>(kServers));
  const double tcp_s = train(*over_tcp, served.connector(), true);

  const std::vector<float> a = in_proc->parameters();
  const std::vector<float> b = over_tcp->parameters();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
      << "sync over TCP should end on the in-process run's parameters, bit for bit";
  uint64_t bytes = 0;
  for (const auto& server : over_tcp->servers) {
    const ServerCounters counters = server->counters();
    EXPECT_EQ(counters.updates, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(counters.pushes_applied, static_cast<uint64_t>(kSteps * kWorkers));
    bytes += counters.bytes_pulled + counters.bytes_pushed;
  }
  std::printf(
      "sync, %d servers, %d workers, %lld steps: in-process %.2f s, loopback TCP %.2f s "
      "(%.1f MB moved)\n",
      kServers, kWorkers, static_cast<long long>(kSteps), in_proc_s, tcp_s, bytes / 1e6);
}

TEST_F(PsTcpTraining, AWorkerWhoseConnectionsDropDoesNotBlockTheOther) {
  constexpr int64_t kDropAt = 5;
  auto cluster = makeCluster(2, Consistency::sync());
  ASSERT_TRUE(cluster);
  Served served(*cluster);
  ASSERT_EQ(served.tcp.size(), 2u);
  core::Result<std::vector<float>> survivor = core::internalError("did not run");
  runWorkers(
      *cluster,
      [&](WorkerId w, WorkerKit& kit) {
        if (w == 0) {
          survivor = kit.worker->run(0, kSteps, *kit.batches);
          return;
        }
        auto before = kit.worker->run(0, kDropAt, *kit.batches);
        EXPECT_TRUE(before.ok()) << before.status().toString();
        const core::Status pulled = kit.worker->pull(kDropAt);
        EXPECT_TRUE(pulled.ok()) << pulled.toString();
        // Gone between its pull and its push, as a crash would be: no LEAVE.
        for (auto& c : kit.connections) tcpOf(*c).drop();
        EXPECT_EQ(kit.worker->pull(kDropAt + 1).code(), core::Code::kUnavailable);
      },
      served.connector());
  ASSERT_TRUE(survivor.ok()) << survivor.status().toString();
  EXPECT_EQ(survivor->size(), static_cast<size_t>(kSteps));
  for (const auto& server : cluster->servers) {
    const ServerCounters counters = server->counters();
    EXPECT_EQ(counters.updates, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(counters.pushes_applied, static_cast<uint64_t>(kSteps + kDropAt));
  }
}

// The MLP's whole parameter vector on one server, pulled and pushed by one worker (async, so
// nothing waits for the other): the transport's cost per round trip. Needs no data set.
TEST(PsTcpThroughput, LogsTheRoundTripOfTheWholeModel) {
  auto cluster = makeCluster(1, Consistency::async());
  ASSERT_TRUE(cluster);
  Served served(*cluster);
  ASSERT_EQ(served.tcp.size(), 1u);
  std::vector<std::unique_ptr<ServerConnection>> connections = served.connector()(0);
  ASSERT_EQ(connections.size(), 1u);
  ServerConnection& c = *connections[0];
  const size_t n = cluster->servers[0]->elements();
  std::vector<float> values(n), grads(n, 0.0f);
  constexpr int kRounds = 20;
  double pull_s = 0, push_s = 0;
  for (int k = 0; k < kRounds; ++k) {
    const Clock::time_point t0 = Clock::now();
    ASSERT_TRUE(c.pull(0, k, values).ok());
    const Clock::time_point t1 = Clock::now();
    ASSERT_TRUE(c.push(0, k, grads).ok());
    pull_s += std::chrono::duration<double>(t1 - t0).count();
    push_s += std::chrono::duration<double>(Clock::now() - t1).count();
  }
  const double mb = static_cast<double>(n) * sizeof(float) / 1e6;
  std::printf(
      "loopback TCP, %.2f MB of parameters: pull %.2f ms (%.0f MB/s), push %.2f ms (%.0f MB/s), "
      "mean of %d\n",
      mb, 1e3 * pull_s / kRounds, mb * kRounds / pull_s, 1e3 * push_s / kRounds,
      mb * kRounds / push_s, kRounds);
}

}  // namespace
}  // namespace ringmaster::trainer::ps
