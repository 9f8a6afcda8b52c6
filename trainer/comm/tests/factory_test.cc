// makeCommunicator: backend choice, fallbacks, and the store it uses (given, self-hosted by
// rank 0, or hosted elsewhere).

#include "trainer/comm/factory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/comm/inproc_communicator.h"
#include "trainer/comm/single_rank_communicator.h"
#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm {
namespace {

using ::testing::HasSubstr;
using testing::runRanks;

// Creates one communicator per rank on its own thread, each with config(rank).
std::vector<core::Result<std::unique_ptr<Communicator>>> makeAll(
    int n, const std::function<CommConfig(int)>& config) {
  std::vector<std::optional<core::Result<std::unique_ptr<Communicator>>>> slots(n);
  runRanks(n, [&](int r) { slots[r] = makeCommunicator(config(r)); });
  std::vector<core::Result<std::unique_ptr<Communicator>>> out;
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

// Every rank allreduces {rank + 1}; returns the sums.
std::vector<float> allreduceRankPlusOne(std::vector<std::unique_ptr<Communicator>>& comms) {
  std::vector<float> v(comms.size());
  std::vector<core::Status> status(comms.size());
  runRanks(static_cast<int>(comms.size()), [&](int r) {
    v[r] = static_cast<float>(r + 1);
    status[r] = comms[r]->allreduceSum(&v[r], 1, {});
  });
  for (const auto& s : status) EXPECT_TRUE(s.ok()) << s.message();
  return v;
}

std::vector<std::unique_ptr<Communicator>> unwrapAll(
    std::vector<core::Result<std::unique_ptr<Communicator>>> results) {
  std::vector<std::unique_ptr<Communicator>> out;
  for (auto& r : results) {
    if (!r.ok()) {
      ADD_FAILURE() << r.status().message();
      return {};
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

CommConfig configFor(const std::string& backend, int rank, int n, rendezvous::Store* store) {
  CommConfig c;
  c.backend = backend;
  c.rank = rank;
  c.world_size = n;
  c.store = store;
  c.timeout = std::chrono::seconds(30);
  return c;
}

TEST(FactoryTest, AutoWithOneRankNeedsNoStoreOrPeers) {
  CommConfig c;
  c.master_port = 1;  // nothing listens there: it must not be used
  auto comm = makeCommunicator(c);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  EXPECT_EQ((*comm)->backend(), "single");
  float v[3] = {1, 2, 3};
  ASSERT_TRUE((*comm)->allreduceSum(v, 3, {}).ok());
  EXPECT_EQ(v[2], 3.0f);
  EXPECT_TRUE((*comm)->barrier().ok());
}

TEST(FactoryTest, AutoPicksShmWhenEveryRankCanMapTheSegment) {
  auto store = rendezvous::makeInMemoryStore();
  auto comms = unwrapAll(makeAll(3, [&](int r) { return configFor("auto", r, 3, store.get()); }));
  ASSERT_EQ(comms.size(), 3u);
  for (auto& c : comms) EXPECT_EQ(c->backend(), "shm");
  EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(3, 6.0f));
}

TEST(FactoryTest, AutoFallsBackToTcpWhenARankCannotMapTheSegment) {
  auto store = rendezvous::makeInMemoryStore();
  auto comms = unwrapAll(makeAll(3, [&](int r) {
    CommConfig c = configFor("auto", r, 3, store.get());
    c.shm_pretend_unreachable_for_testing = (r == 2);
    return c;
  }));
  ASSERT_EQ(comms.size(), 3u);
  for (auto& c : comms) EXPECT_EQ(c->backend(), "tcp");
  EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(3, 6.0f));
}

TEST(FactoryTest, ExplicitShmFailsOnEveryRankWhenOneCannotMapTheSegment) {
  auto store = rendezvous::makeInMemoryStore();
  auto results = makeAll(2, [&](int r) {
    CommConfig c = configFor("shm", r, 2, store.get());
    c.shm_pretend_unreachable_for_testing = (r == 1);
    return c;
  });
  for (auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), core::Code::kUnavailable);
    EXPECT_THAT(r.status().message(), HasSubstr("rank 1: pretending to be unreachable"));
  }
}

TEST(FactoryTest, MpiGroupsNeedTheMpiWorld) {
  auto inproc = makeInProcCommunicators(1);
  auto group = makeMpiGroup(*inproc[0], "g", 0, 1);
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.status().code(),
            mpiBackendBuilt() ? core::Code::kInvalidArgument : core::Code::kUnavailable)
      << group.status().message();
  EXPECT_NE(group.status().message().find("communicator group g"), std::string::npos);
}

TEST(FactoryTest, ExplicitGlooIsHonored) {
  auto store = rendezvous::makeInMemoryStore();
  auto comms = unwrapAll(makeAll(2, [&](int r) { return configFor("gloo", r, 2, store.get()); }));
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0]->backend(), "gloo");
  EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(2, 3.0f));
}

TEST(FactoryTest, TcpTakesTheRunsDoublingThresholdFromItsConfig) {
  auto store = rendezvous::makeInMemoryStore();
  auto comms = unwrapAll(makeAll(2, [&](int r) {
    CommConfig c = configFor("tcp", r, 2, store.get());
    c.tcp_doubling_max_bytes = size_t{1} << 20;
    return c;
  }));
  ASSERT_EQ(comms.size(), 2u);
  for (const auto& c : comms) EXPECT_EQ(c->doublingMaxBytes(), std::optional<size_t>(1 << 20));
  EXPECT_EQ(comms[0]->allreduceAlgorithm(size_t{256} << 10), "recursive_doubling");
  EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(2, 3.0f));
  // Other backends have no such threshold: the setting is tcp's alone.
  auto shm = unwrapAll(makeAll(2, [&](int r) {
    CommConfig c = configFor("shm", r, 2, store.get());
    c.key_prefix = "shm";
    c.tcp_doubling_max_bytes = size_t{1} << 20;
    return c;
  }));
  ASSERT_EQ(shm.size(), 2u);
  EXPECT_EQ(shm[0]->doublingMaxBytes(), std::nullopt);
}

TEST(FactoryTest, KeyPrefixKeepsTwoGroupsOnOneStoreApart) {
  auto store = rendezvous::makeInMemoryStore();
  for (std::string prefix : {"job/0", "job/1"}) {
    auto comms = unwrapAll(makeAll(2, [&](int r) {
      CommConfig c = configFor("gloo", r, 2, store.get());
      c.key_prefix = prefix;
      return c;
    }));
    ASSERT_EQ(comms.size(), 2u) << prefix;
    EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(2, 3.0f));
  }
}

TEST(FactoryTest, InprocUsesTheGivenGroup) {
  auto group = std::make_shared<InProcGroup>(2);
  auto comms = unwrapAll(makeAll(2, [&](int r) {
    CommConfig c = configFor("inproc", r, 2, nullptr);
    c.inproc_group = group;
    return c;
  }));
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[1]->backend(), "inproc");
  EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(2, 3.0f));
}

TEST(FactoryTest, InprocWithoutAGroupIsRejected) {
  auto comm = makeCommunicator(configFor("inproc", 0, 2, nullptr));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(comm.status().message(), HasSubstr("inproc_group"));
}

TEST(FactoryTest, UnknownBackendIsRejectedNamingTheChoices) {
  auto comm = makeCommunicator(configFor("nccl-over-pigeons", 0, 2, nullptr));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(comm.status().message(), HasSubstr("auto, nccl, shm, tcp, gloo, mpi, inproc"));
}

TEST(FactoryTest, GpuGradientsNeedNcclAndNcclNeedsTheGpu) {
  CommConfig gloo_on_gpu = configFor("gloo", 0, 2, nullptr);
  gloo_on_gpu.device = "cuda";
  auto comm = makeCommunicator(gloo_on_gpu);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(comm.status().message(), HasSubstr("gloo reads host memory"));

  auto nccl_on_cpu = makeCommunicator(configFor("nccl", 0, 2, nullptr));
  ASSERT_FALSE(nccl_on_cpu.ok());
  EXPECT_EQ(nccl_on_cpu.status().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(nccl_on_cpu.status().message(), HasSubstr("nccl needs the GPU"));

  CommConfig tpu = configFor("auto", 0, 1, nullptr);
  tpu.device = "tpu";
  EXPECT_EQ(makeCommunicator(tpu).status().code(), core::Code::kInvalidArgument);
}

TEST(FactoryTest, NcclWithoutTheGpuModuleSaysSo) {
  CommConfig config = configFor("auto", 0, 1, nullptr);
  config.device = "cuda";
  auto comm = makeCommunicator(config);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), core::Code::kUnavailable);
  EXPECT_THAT(comm.status().message(), HasSubstr("no NCCL backend (the GPU module is not loaded)"));
}

TEST(FactoryTest, NcclIsBuiltByTheGivenFactoryWithTheConfiguredWorld) {
  CommConfig config = configFor("auto", 0, 1, nullptr);
  config.device = "cuda";
  config.timeout = std::chrono::seconds(7);
  config.collective_timeout = std::chrono::seconds(9);
  NcclConfig seen;
  config.make_nccl =
      [&seen](const NcclConfig& nccl) -> core::Result<std::unique_ptr<Communicator>> {
    seen = nccl;
    return std::unique_ptr<Communicator>(std::make_unique<SingleRankCommunicator>());
  };
  auto comm = makeCommunicator(config);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  EXPECT_EQ(seen.rank, 0);
  EXPECT_EQ(seen.size, 1);
  EXPECT_NE(seen.store, nullptr) << "a world of one bootstraps through its own store";
  EXPECT_EQ(seen.timeout, std::chrono::seconds(7));
  EXPECT_EQ(seen.collective_timeout, std::chrono::seconds(9));
}

TEST(FactoryTest, RankOutsideTheWorldIsRejected) {
  auto comm = makeCommunicator(configFor("gloo", 2, 2, nullptr));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), core::Code::kInvalidArgument);
}

// A port that was free a moment ago (the store server picks one, then stops).
int freePort() {
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", 0, "");
  EXPECT_TRUE(server.ok()) << server.status().message();
  return server.ok() ? (*server)->port() : 0;
}

TEST(FactoryTest, RankZeroHostsTheStoreWhenNobodyElseDoes) {
  const int port = freePort();
  for (std::string backend : {"gloo", "shm"}) {
    auto comms = unwrapAll(makeAll(2, [&](int r) {
      CommConfig c = configFor(backend, r, 2, nullptr);
      c.master_addr = "127.0.0.1";
      c.master_port = port;
      c.key_prefix = backend;
      return c;
    }));
    ASSERT_EQ(comms.size(), 2u) << backend;
    EXPECT_EQ(comms[0]->backend(), backend);
    EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(2, 3.0f));
    EXPECT_EQ(comms[1]->stats().allreduce_calls, 1u);
  }
}

// Pipeline stages send and receive: auto picks shm with rings on one host, and a communicator
// that owns its store must pass messages through to the backend.
TEST(FactoryTest, PointToPointPicksShmWithRingsAndPassesMessagesThroughTheOwnedStore) {
  const int port = freePort();
  auto comms = unwrapAll(makeAll(2, [&](int r) {
    CommConfig c = configFor("auto", r, 2, nullptr);
    c.master_addr = "127.0.0.1";
    c.master_port = port;
    c.point_to_point = true;
    return c;
  }));
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0]->backend(), "shm");
  std::vector<core::Status> status(2);
  float got = 0;
  runRanks(2, [&](int r) {
    float value = 42;
    if (r == 0) {
      auto pending = comms[0]->startSend(&value, sizeof value, 1, {});
      status[0] = pending.ok() ? (*pending)->wait() : pending.status();
    } else {
      status[1] = comms[1]->recv(&got, sizeof got, 0, {});
    }
  });
  for (const auto& s : status) EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(got, 42.0f);
  // nccl carries stages' messages on device memory (the stage executor's device link): asking for
  // point-to-point is no reason to refuse it; here only the missing GPU module is.
  CommConfig c = configFor("nccl", 0, 2, nullptr);
  c.device = "cuda";
  c.point_to_point = true;
  auto refused = makeCommunicator(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("no NCCL backend (the GPU module is not loaded)"));
}

TEST(FactoryTest, ConnectsToAStoreHostedBySomeoneElse) {
  auto server = rendezvous::TcpStoreServer::start("127.0.0.1", 0, "");
  ASSERT_TRUE(server.ok()) << server.status().message();
  const int port = (*server)->port();
  auto comms = unwrapAll(makeAll(2, [&](int r) {
    CommConfig c = configFor("auto", r, 2, nullptr);
    c.master_addr = "127.0.0.1";
    c.master_port = port;
    return c;
  }));
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0]->backend(), "shm");
  EXPECT_EQ(allreduceRankPlusOne(comms), std::vector<float>(2, 3.0f));
}

TEST(FactoryTest, RankZeroOnlyConnectsWhenTheLauncherHostsTheStore) {
  // Nobody hosts: with host_store false rank 0 must not start a server of its own, so both
  // ranks time out connecting (instead of rank 0 silently hosting a store nobody else shares).
  const int port = freePort();
  auto results = makeAll(2, [&](int r) {
    CommConfig c = configFor("gloo", r, 2, nullptr);
    c.master_addr = "127.0.0.1";
    c.master_port = port;
    c.host_store = false;
    c.timeout = std::chrono::milliseconds(300);
    return c;
  });
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("connect to the rendezvous store"));
  }
}

TEST(FactoryTest, MpiBackendIsReportedMissingWhenNotBuilt) {
  if (mpiBackendBuilt()) GTEST_SKIP() << "this build has the MPI backend";
  auto comm = makeCommunicator(configFor("mpi", 0, 1, nullptr));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), core::Code::kUnavailable);
}

}  // namespace
}  // namespace ringmaster::trainer::comm
