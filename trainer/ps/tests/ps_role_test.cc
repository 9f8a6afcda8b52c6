// Which role a rank plays in parameter-server mode, the store key and address format servers
// publish, the host they advertise, and the step a worker starts or rejoins at.

#include "trainer/ps/ps_role.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::trainer::ps {
namespace {

contract::TrainerSettings::ParameterServers servers(
    int32_t count, contract::PsConsistency consistency = contract::PsConsistency::kSync,
    int32_t staleness = 0) {
  return {count, consistency, staleness};
}

TEST(PlaceRank, WorkersFirstThenServers) {
  struct Case {
    int rank, world;
    int32_t servers;
    PsRole role;
    int index;
  };
  const Case cases[] = {
      {0, 3, 1, PsRole::kWorker, 0}, {1, 3, 1, PsRole::kWorker, 1}, {2, 3, 1, PsRole::kServer, 0},
      {0, 5, 2, PsRole::kWorker, 0}, {2, 5, 2, PsRole::kWorker, 2}, {3, 5, 2, PsRole::kServer, 0},
      {4, 5, 2, PsRole::kServer, 1}, {0, 2, 1, PsRole::kWorker, 0}, {1, 2, 1, PsRole::kServer, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("rank " + std::to_string(c.rank) + " of " + std::to_string(c.world) + ", " +
                 std::to_string(c.servers) + " server(s)");
    auto p = placeRank(c.rank, c.world, servers(c.servers));
    ASSERT_TRUE(p.ok()) << p.status().toString();
    EXPECT_EQ(p->role, c.role);
    EXPECT_EQ(p->index, c.index);
    EXPECT_EQ(p->servers, c.servers);
    EXPECT_EQ(p->workers, c.world - c.servers);
    EXPECT_EQ(p->consistency, Consistency::sync());
  }
}

TEST(PlaceRank, TheContractsConsistencyIsTheGatesBound) {
  using contract::PsConsistency;
  EXPECT_EQ(placeRank(1, 3, servers(1, PsConsistency::kAsync))->consistency, Consistency::async());
  EXPECT_EQ(placeRank(1, 3, servers(1, PsConsistency::kBounded, 2))->consistency,
            Consistency::bounded(2));
  EXPECT_EQ(placeRank(1, 3, servers(1, PsConsistency::kBounded, 0))->consistency,
            Consistency::sync());
  EXPECT_EQ(placeRank(1, 3, servers(1, PsConsistency::kSync))->consistency, Consistency::sync());
}

TEST(PlaceRank, UsageErrorsNameTheServers) {
  struct Case {
    int rank, world;
    int32_t servers;
    const char* needle;
  };
  const Case cases[] = {
      {0, 3, 0, "--ps-servers 0"},
      {0, 3, -1, "--ps-servers -1"},
      {0, 3, 3, "leaves no worker"},
      {0, 1, 1, "WORLD_SIZE must exceed the servers"},
      {0, 2, 5, "--ps-servers 5 in a world of 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    auto p = placeRank(c.rank, c.world, servers(c.servers));
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), core::Code::kUsage);
    EXPECT_NE(p.status().message().find(c.needle), std::string::npos) << p.status().message();
  }
}

struct StartCase {
  std::string name;
  std::vector<WorkerStanding> standings;  // by server
  core::Code code;                        // kOk: `plan`
  StartPlan plan;
};

TEST(PlanStart, FirstStartRejoinAndWhatCannotBeJoined) {
  const std::vector<StartCase> cases = {
      {"first_start_live_everywhere_at_0", {{true, 0}, {true, 0}}, core::Code::kOk, {0, {}}},
      {"one_server", {{true, 0}}, core::Code::kOk, {0, {}}},
      // Started again: gone from every server, which would join it at the slowest live clock;
      // one server is a step further (a live worker was between its pushes).
      {"rejoin_at_the_furthest", {{false, 41}, {false, 42}}, core::Code::kOk, {42, {0, 1}}},
      {"rejoin_where_all_agree",
       {{false, 7}, {false, 7}, {false, 7}},
       core::Code::kOk,
       {7, {0, 1, 2}}},
      // A server that still has it live at the furthest step needs no JOIN.
      {"live_on_one_at_the_furthest", {{true, 9}, {false, 8}}, core::Code::kOk, {9, {1}}},
      {"live_behind_another_server", {{true, 3}, {false, 9}}, core::Code::kUnavailable, {}},
      {"live_at_two_clocks", {{true, 3}, {true, 4}}, core::Code::kUnavailable, {}},
  };
  for (const StartCase& c : cases) {
    SCOPED_TRACE(c.name);
    core::Result<StartPlan> plan = planStart(c.standings, 1);
    ASSERT_EQ(plan.status().code(), c.code) << plan.status().toString();
    if (plan.ok()) {
      EXPECT_EQ(plan->step, c.plan.step);
      EXPECT_EQ(plan->join, c.plan.join);
    } else {
      EXPECT_NE(plan.status().message().find("worker 1"), std::string::npos)
          << plan.status().toString();
    }
  }
}

TEST(ServerAddress, KeyAndRoundTrip) {
  EXPECT_EQ(serverAddressKey("job/attempt-0", 3), "job/attempt-0/ps/server/3");
  EXPECT_EQ(workerReadyKey("job/attempt-0", 1), "job/attempt-0/ps/worker/1/ready");
  const HostPort a{"10.1.2.3", 40123};
  EXPECT_EQ(toString(a), "10.1.2.3:40123");
  auto back = parseHostPort(toString(a), "k");
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(*back, a);
  auto named = parseHostPort("node-7.example:1", "k");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->host, "node-7.example");
}

TEST(ServerAddress, MalformedIsNamedWithItsKey) {
  for (const char* text : {"", "host", ":80", "host:", "host:x", "host:0", "host:65536", "h:80x"}) {
    SCOPED_TRACE(text);
    auto a = parseHostPort(text, "job/ps/server/0");
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), core::Code::kInvalidArgument);
    EXPECT_NE(a.status().message().find("job/ps/server/0"), std::string::npos);
  }
}

TEST(AdvertisedHost, PodIpThenLoopbackThenHostname) {
  EXPECT_EQ(advertisedHost("10.0.0.5", "127.0.0.1", "box"), "10.0.0.5");
  EXPECT_EQ(advertisedHost("", "127.0.0.1", "box"), "127.0.0.1");
  EXPECT_EQ(advertisedHost("", "localhost", "box"), "127.0.0.1");
  EXPECT_EQ(advertisedHost("", "10.0.0.1", "box"), "box");
  EXPECT_EQ(advertisedHost("", "10.0.0.1", ""), "127.0.0.1");
}

}  // namespace
}  // namespace ringmaster::trainer::ps
