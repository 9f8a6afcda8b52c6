// The rank environment contract: what the launcher writes (encode, encodeForMpirun) the trainer
// reads back (parseRankEnvironment), and a bad environment is refused with a message that names
// the variable and its value.

#include "ringmaster/contract/rank_environment.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ringmaster::contract {

// Failures print the variables, not the struct's bytes.
void PrintTo(const RankEnvironment& env, std::ostream* os) {
  for (const auto& [name, value] : encode(env)) *os << name << "=" << value << " ";
  *os << "POD_IP=" << env.pod_ip;
}

namespace {

using Env = std::map<std::string, std::string>;
using Vars = std::vector<std::pair<std::string, std::string>>;

constexpr char kSecret[] = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e7";

// Sets one variable of a test environment. (A literal assigned to the mapped string directly
// trips a false -Wrestrict in GCC 12's optimized builds.)
void set(Env& env, const std::string& name, std::string value) { env[name] = std::move(value); }

// What a rank sees: the launcher's variables plus POD_IP, which the pod carries.
Env rankSees(const RankEnvironment& rank) {
  Env env;
  for (const auto& [name, value] : encode(rank)) set(env, name, value);
  if (!rank.pod_ip.empty()) set(env, rank_env::kPodIp, rank.pod_ip);
  return env;
}

PodEnvironment pod(int node_rank, int nnodes, int local_world_size) {
  PodEnvironment p;
  p.node_rank = node_rank;
  p.nnodes = nnodes;
  p.local_world_size = local_world_size;
  p.world_size = nnodes * local_world_size;
  p.master_addr = "j-worker-0.j.ns.svc";
  p.job = "j";
  p.attempt = 3;
  p.store_secret = kSecret;
  return p;
}

struct RoundTripCase {
  std::string name;
  RankEnvironment env;
};

std::vector<RoundTripCase> roundTripCases() {
  std::vector<RoundTripCase> cases;
  cases.push_back({"OneProcess", RankEnvironment{}});
  cases.push_back({"LaunchedRank", launchedRank(pod(2, 4, 3), 1, 250)});
  RankEnvironment with_backend = launchedRank(pod(1, 2, 1), 0, 50);
  with_backend.backend = "gloo";
  with_backend.pod_ip = "10.0.0.8";
  with_backend.master_port = 29600;
  cases.push_back({"WithBackendAndPodIp", with_backend});
  PodEnvironment scaling = pod(1, 5, 1);
  scaling.worker_pods = 3;
  cases.push_back({"AnElasticParameterServerJobsRank", launchedRank(scaling, 0, 100)});
  RankEnvironment own_store;
  own_store.rank = 1;
  own_store.world_size = 2;
  own_store.heartbeat_ms = 7;
  cases.push_back({"OwnStore", own_store});
  return cases;
}

class RankRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RankRoundTrip, WhatTheLauncherWritesTheTrainerReadsBack) {
  const RankEnvironment& env = GetParam().env;
  std::set<std::string> names;
  for (const auto& [name, value] : encode(env)) {
    EXPECT_TRUE(names.insert(name).second) << name << " written twice";
    EXPECT_NE(name, rank_env::kPodIp);  // the downward API's, not the launcher's
  }
  core::Result<RankEnvironment> parsed = parseRankEnvironment(rankSees(env));
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(*parsed, env);
}

INSTANTIATE_TEST_SUITE_P(RankEnvironment, RankRoundTrip, ::testing::ValuesIn(roundTripCases()),
                         [](const auto& info) { return info.param.name; });

TEST(RankEnvironment, LaunchedRankTakesItsPlaceInThePodsWorld) {
  PodEnvironment p = pod(2, 4, 3);
  p.backend = "gloo";
  p.pod_ip = "10.0.0.9";
  RankEnvironment r = launchedRank(p, 1, 250);
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.node_rank, 2);
  EXPECT_EQ(r.world_size, 12);
  EXPECT_EQ(r.local_world_size, 3);
  EXPECT_EQ(r.nnodes, 4);
  EXPECT_EQ(r.master_addr, "j-worker-0.j.ns.svc");
  EXPECT_EQ(r.master_port, 29500);
  EXPECT_EQ(r.attemptPrefix(), "j/attempt-3");
  EXPECT_TRUE(r.use_agent_store);
  EXPECT_EQ(r.store_secret, kSecret);
  EXPECT_EQ(r.heartbeat_ms, 250);
  // Inherited from the pod with the launcher's environment, not written.
  EXPECT_EQ(r.backend, "");
  EXPECT_EQ(r.pod_ip, "");
}

TEST(RankEnvironment, EncodeWritesTheLaunchersVariablesInItsOrder) {
  RankEnvironment r = launchedRank(pod(1, 2, 4), 3, 125);
  const Vars expected = {{"RANK", "7"},
                         {"LOCAL_RANK", "3"},
                         {"GROUP_RANK", "1"},
                         {"NODE_RANK", "1"},
                         {"WORLD_SIZE", "8"},
                         {"LOCAL_WORLD_SIZE", "4"},
                         {"NNODES", "2"},
                         {"MASTER_ADDR", "j-worker-0.j.ns.svc"},
                         {"MASTER_PORT", "29500"},
                         {"RINGMASTER_STORE_PORT", "29510"},
                         {"RINGMASTER_JOB", "j"},
                         {"RINGMASTER_ATTEMPT", "3"},
                         {"RINGMASTER_USE_AGENT_STORE", "1"},
                         {"RINGMASTER_STORE_SECRET", kSecret},
                         {"RINGMASTER_HEARTBEAT_MS", "125"}};
  EXPECT_EQ(encode(r), expected);
  r.backend = "nccl";
  Vars with_backend = expected;
  with_backend.emplace_back("RINGMASTER_BACKEND", "nccl");
  EXPECT_EQ(encode(r), with_backend);
}

TEST(RankEnvironment, MpirunPassesOnWhatEveryRankSharesButNotTheSecret) {
  RankEnvironment r = launchedRank(pod(0, 2, 4), 0, 125);
  r.backend = "mpi";
  const Vars expected = {{"RINGMASTER_JOB", "j"},
                         {"RINGMASTER_ATTEMPT", "3"},
                         {"RINGMASTER_BACKEND", "mpi"},
                         {"RINGMASTER_USE_AGENT_STORE", "1"},
                         {"RINGMASTER_HEARTBEAT_MS", "125"},
                         {"MASTER_ADDR", "j-worker-0.j.ns.svc"},
                         {"MASTER_PORT", "29500"},
                         {"RINGMASTER_STORE_PORT", "29510"}};
  EXPECT_EQ(encodeForMpirun(r), expected);
}

TEST(RankEnvironment, TorchrunGetsPyTorchJobsVariables) {
  const Vars expected = {{"PET_NNODES", "2"},
                         {"PET_NPROC_PER_NODE", "4"},
                         {"PET_NODE_RANK", "1"},
                         {"PET_MASTER_ADDR", "j-worker-0.j.ns.svc"},
                         {"PET_MASTER_PORT", "29500"}};
  EXPECT_EQ(encodeTorchrunAgent(pod(1, 2, 4)), expected);
}

TEST(RankEnvironment, TheStoreIsAtMasterPortUnlessSetApart) {
  // A trainer outside the launcher hosts its own store at MASTER_PORT.
  auto bare = parseRankEnvironment(Env{{"MASTER_PORT", "23456"}});
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->store_port, 23456);
  auto launched = parseRankEnvironment(Env{{"RINGMASTER_STORE_PORT", "29510"}});
  ASSERT_TRUE(launched.ok());
  EXPECT_EQ(launched->master_port, 29500);
  EXPECT_EQ(launched->store_port, 29510);
  auto bad = parseRankEnvironment(Env{{"RINGMASTER_STORE_PORT", "0"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "RINGMASTER_STORE_PORT=0 is not a TCP port");
}

// What a rank of a two-pod MPI gang sees on pod 1: mpirun's variables and the ones it passed
// on, the pod's through sshd, the secret forwarded by name.
Env mpiRankSees(int rank, int local_rank) {
  RankEnvironment shared = launchedRank(pod(1, 2, 2), 0, 125);
  shared.backend = "mpi";
  Env env;
  for (const auto& [name, value] : encode(pod(1, 2, 2))) set(env, name, value);
  for (const auto& [name, value] : encodeForMpirun(shared)) set(env, name, value);
  set(env, "OMPI_COMM_WORLD_RANK", std::to_string(rank));
  set(env, "OMPI_COMM_WORLD_SIZE", "4");
  set(env, "OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local_rank));
  set(env, "POD_IP", "10.0.0.8");
  return env;
}

TEST(RankEnvironment, UnderMpirunOpenMpisVariablesPlaceTheRank) {
  core::Result<RankEnvironment> parsed = parseRankEnvironment(mpiRankSees(3, 1));
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  RankEnvironment expected = launchedRank(pod(1, 2, 2), 1, 125);
  expected.backend = "mpi";
  expected.pod_ip = "10.0.0.8";
  EXPECT_EQ(*parsed, expected);
}

TEST(RankEnvironment, RankWinsOverOpenMpisVariables) {
  Env env = mpiRankSees(3, 1);
  set(env, "RANK", "0");
  set(env, "LOCAL_RANK", "0");
  core::Result<RankEnvironment> parsed = parseRankEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->rank, 0);
  EXPECT_EQ(parsed->local_rank, 0);
  EXPECT_EQ(parsed->world_size, 4);  // the pod's WORLD_SIZE, not OMPI_COMM_WORLD_SIZE
  // Only an unset RANK lets mpirun's through: an empty one reads as 0.
  set(env, "RANK", "");
  parsed = parseRankEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->rank, 0);
}

TEST(RankEnvironment, StartedByMpirunIsOpenMpisRankWithoutRank) {
  struct Case {
    Env env;
    bool mpirun;
  };
  Env both = mpiRankSees(3, 1);
  set(both, "RANK", "0");
  Env size_only;
  set(size_only, "OMPI_COMM_WORLD_SIZE", "4");
  const Case cases[] = {
      {mpiRankSees(3, 1), true},
      {both, false},  // the launcher's RANK wins, as parseRankEnvironment reads it
      {size_only, false},
      {Env{}, false},
  };
  for (const Case& c : cases) {
    auto lookup = [&](const char* name) -> const char* {
      auto it = c.env.find(name);
      return it == c.env.end() ? nullptr : it->second.c_str();
    };
    EXPECT_EQ(startedByMpirun(lookup), c.mpirun) << testing::PrintToString(c.env);
  }
}

TEST(RankEnvironment, EmptyEnvironmentIsAWorldOfOneProcess) {
  core::Result<RankEnvironment> env = parseRankEnvironment(Env{});
  ASSERT_TRUE(env.ok()) << env.status().toString();
  EXPECT_EQ(*env, RankEnvironment{});
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->attemptPrefix(), "local/attempt-0");
  EXPECT_FALSE(env->use_agent_store);
  EXPECT_EQ(env->store_secret, "");
  EXPECT_EQ(env->heartbeat_ms, 1000);
  EXPECT_EQ(env->backend, "");
  EXPECT_EQ(env->bindHost(), "0.0.0.0");
}

TEST(RankEnvironment, EmptyValuesReadAsUnset) {
  Env env = rankSees(launchedRank(pod(1, 2, 2), 1, 125));
  for (const char* name : {"MASTER_PORT", "RINGMASTER_HEARTBEAT_MS", "RINGMASTER_USE_AGENT_STORE",
                           "MASTER_ADDR", "RINGMASTER_JOB"}) {
    set(env, name, "");
  }
  core::Result<RankEnvironment> parsed = parseRankEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->master_port, 29500);
  EXPECT_EQ(parsed->heartbeat_ms, 1000);
  EXPECT_FALSE(parsed->use_agent_store);
  EXPECT_EQ(parsed->master_addr, "127.0.0.1");
  EXPECT_EQ(parsed->job, "local");
}

struct BadCase {
  std::string name;
  // Variables changed from what rank 3 of a two-pod gang sees; nullopt removes one.
  std::vector<std::pair<std::string, std::optional<std::string>>> changes;
  std::string error;
};

std::vector<BadCase> badCases() {
  return {
      {"RankNotANumber", {{"RANK", "one"}}, "RANK='one': expected an integer, got 'one'"},
      {"RankNotBelowWorldSize", {{"RANK", "4"}}, "RANK=4 must be in [0, WORLD_SIZE=4)"},
      {"NegativeRank", {{"RANK", "-1"}}, "RANK=-1 must be in [0, WORLD_SIZE=4)"},
      {"NoWorld", {{"WORLD_SIZE", "0"}}, "WORLD_SIZE=0 must be in [1, 4096]"},
      {"WorldTooLarge", {{"WORLD_SIZE", "4097"}}, "WORLD_SIZE=4097 must be in [1, 4096]"},
      {"NegativeLocalRank", {{"LOCAL_RANK", "-2"}}, "LOCAL_RANK=-2 must not be negative"},
      {"LocalRankBeyondAnInt",
       {{"LOCAL_RANK", "4294967296"}},
       "LOCAL_RANK=4294967296 must be at most 2147483647"},
      {"PortZero", {{"MASTER_PORT", "0"}}, "MASTER_PORT=0 is not a TCP port"},
      {"PortAboveTheRange", {{"MASTER_PORT", "70000"}}, "MASTER_PORT=70000 is not a TCP port"},
      {"PortNotANumber",
       {{"MASTER_PORT", "http"}},
       "MASTER_PORT='http': expected an integer, got 'http'"},
      {"NegativeAttempt",
       {{"RINGMASTER_ATTEMPT", "-1"}},
       "RINGMASTER_ATTEMPT=-1 must not be negative"},
      {"AgentStoreSwitchNotANumber",
       {{"RINGMASTER_USE_AGENT_STORE", "yes"}},
       "RINGMASTER_USE_AGENT_STORE='yes': expected an integer, got 'yes'"},
      {"AgentStoreSwitchNeitherZeroNorOne",
       {{"RINGMASTER_USE_AGENT_STORE", "2"}},
       "RINGMASTER_USE_AGENT_STORE=2 must be 0 or 1"},
      {"HeartbeatZero",
       {{"RINGMASTER_HEARTBEAT_MS", "0"}},
       "RINGMASTER_HEARTBEAT_MS=0 must be positive"},
      {"NodeRankBeyondTheGangLimit",
       {{"NODE_RANK", "4096"}},
       "NODE_RANK=4096 must be in [0, 4095]"},
      {"NoNodes", {{"NNODES", "0"}}, "NNODES=0 must be in [1, 4096]"},
      {"TooManyProcessesPerPod",
       {{"LOCAL_WORLD_SIZE", "65"}},
       "LOCAL_WORLD_SIZE=65 must be in [1, 64]"},
      // Under mpirun the message names the variable read.
      {"MpiRankNotBelowMpiWorldSize",
       {{"RANK", std::nullopt},
        {"OMPI_COMM_WORLD_RANK", "2"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}},
       "OMPI_COMM_WORLD_RANK=2 must be in [0, OMPI_COMM_WORLD_SIZE=2)"},
      {"MpiLocalRankNotANumber",
       {{"RANK", std::nullopt},
        {"OMPI_COMM_WORLD_RANK", "1"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "x"}},
       "OMPI_COMM_WORLD_LOCAL_RANK='x': expected an integer, got 'x'"},
  };
}

class BadRankEnvironment : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRankEnvironment, IsRefusedNamingTheVariableAndItsValue) {
  Env env = rankSees(launchedRank(pod(1, 2, 2), 1, 125));
  for (const auto& [name, value] : GetParam().changes) {
    if (value) {
      set(env, name, *value);
    } else {
      env.erase(name);
    }
  }
  core::Result<RankEnvironment> parsed = parseRankEnvironment(env);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), core::Code::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(RankEnvironment, BadRankEnvironment, ::testing::ValuesIn(badCases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ringmaster::contract
