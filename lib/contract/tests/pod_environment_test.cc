// The pod environment contract: what encode() writes parsePodEnvironment() reads back, and a
// bad environment is refused with a message that names the variable.

#include "ringmaster/contract/pod_environment.h"

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
void PrintTo(const PodEnvironment& env, std::ostream* os) {
  for (const auto& [name, value] : encode(env)) *os << name << "=" << value << " ";
  *os << "POD_IP=" << env.pod_ip << " POD_NAME=" << env.pod_name << " has_gpus=" << env.has_gpus;
}

namespace {

using Env = std::map<std::string, std::string>;

constexpr char kSecret[] = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e7";

// Sets one variable of a test environment. (A literal assigned to the mapped string directly
// trips a false -Wrestrict in GCC 12's optimized builds.)
void set(Env& env, const std::string& name, std::string value) { env[name] = std::move(value); }

// What a worker pod sees: the operator's variables plus what Kubernetes and the container
// runtime add.
Env podSees(const PodEnvironment& pod) {
  Env env;
  for (const auto& [name, value] : encode(pod)) set(env, name, value);
  if (!pod.pod_ip.empty()) set(env, pod_env::kPodIp, pod.pod_ip);
  if (!pod.pod_name.empty()) set(env, pod_env::kPodName, pod.pod_name);
  if (pod.has_gpus) set(env, pod_env::kNvidiaVisibleDevices, "all");
  return env;
}

struct RoundTripCase {
  std::string name;
  PodEnvironment env;
};

PodEnvironment gang(int node_rank, int nnodes, int local_world_size) {
  PodEnvironment e;
  e.node_rank = node_rank;
  e.nnodes = nnodes;
  e.local_world_size = local_world_size;
  e.world_size = nnodes * local_world_size;
  e.master_addr = "j-worker-0.j.ns.svc";
  e.job = "j";
  e.backend = "auto";
  e.store_secret = kSecret;
  e.pod_ip = "10.0.0." + std::to_string(node_rank + 7);
  e.pod_name = "j-worker-" + std::to_string(node_rank);
  return e;
}

std::vector<RoundTripCase> roundTripCases() {
  std::vector<RoundTripCase> cases;
  cases.push_back({"OnePod", PodEnvironment{}});
  PodEnvironment four = gang(3, 4, 2);
  four.backend = "gloo";
  cases.push_back({"FourPodsOfTwoProcesses", four});
  PodEnvironment mpi = gang(0, 2, 4);
  mpi.mode = LauncherMode::kMpi;
  mpi.backend = "mpi";
  mpi.work_dir = "/var/tmp/ringmaster/mpi";
  cases.push_back({"Mpi", mpi});
  PodEnvironment seventh = gang(1, 2, 1);
  seventh.attempt = 7;
  seventh.master_port = 29600;
  seventh.has_gpus = true;
  cases.push_back({"AttemptSevenOnGpus", seventh});
  PodEnvironment scaling = gang(2, 5, 1);  // 4 worker slots and a ps pod, 2 workers made
  scaling.worker_pods = 2;
  scaling.worker_slots = 4;
  cases.push_back({"AnElasticParameterServerJobsPod", scaling});
  return cases;
}

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, WhatTheOperatorWritesTheLauncherReadsBack) {
  const PodEnvironment& env = GetParam().env;
  std::vector<std::pair<std::string, std::string>> vars = encode(env);
  std::set<std::string> names;
  for (const auto& [name, value] : vars) {
    EXPECT_TRUE(names.insert(name).second) << name << " written twice";
    EXPECT_NE(name, pod_env::kPodIp);  // the downward API's, not the operator's
    EXPECT_NE(name, pod_env::kPodName);
  }
  core::Result<PodEnvironment> parsed = parsePodEnvironment(podSees(env));
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(*parsed, env);
}

INSTANTIATE_TEST_SUITE_P(PodEnvironment, RoundTrip, ::testing::ValuesIn(roundTripCases()),
                         [](const auto& info) { return info.param.name; });

TEST(PodEnvironment, EncodeWritesTheOperatorsVariablesInItsOrder) {
  PodEnvironment mpi = gang(1, 2, 4);
  mpi.attempt = 5;
  mpi.mode = LauncherMode::kMpi;
  mpi.work_dir = "/var/tmp/ringmaster/mpi";
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"NODE_RANK", "1"},
      {"WORLD_SIZE", "8"},
      {"LOCAL_WORLD_SIZE", "4"},
      {"NNODES", "2"},
      {"MASTER_ADDR", "j-worker-0.j.ns.svc"},
      {"MASTER_PORT", "29500"},
      {"RINGMASTER_STORE_PORT", "29510"},
      {"RINGMASTER_JOB", "j"},
      {"RINGMASTER_ATTEMPT", "5"},
      {"RINGMASTER_BACKEND", "auto"},
      {"RINGMASTER_STORE_SECRET", kSecret},
      {"RINGMASTER_LAUNCHER_MODE", "mpi"},
      {"RINGMASTER_WORK_DIR", "/var/tmp/ringmaster/mpi"}};
  EXPECT_EQ(encode(mpi), expected);
  // Native is the default: its pods do not name a mode.
  PodEnvironment native = gang(1, 2, 4);
  std::vector<std::pair<std::string, std::string>> vars = encode(native);
  ASSERT_EQ(vars.size(), 11u);
  EXPECT_EQ(vars.back().first, "RINGMASTER_STORE_SECRET");
}

TEST(PodEnvironment, TheLaunchersStoreStaysOffTheProgramsMasterPort) {
  // PyTorchJob gives MASTER_PORT to the program (torch.distributed's store on rank 0 binds it).
  auto defaults = parsePodEnvironment(Env{});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->master_port, 29500);
  EXPECT_EQ(defaults->store_port, 29510);
  auto moved =
      parsePodEnvironment(Env{{"MASTER_PORT", "23456"}, {"RINGMASTER_STORE_PORT", "23457"}});
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_EQ(moved->store_port, 23457);
  auto same = parsePodEnvironment(Env{{"RINGMASTER_STORE_PORT", "29500"}});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.status().message(),
            "RINGMASTER_STORE_PORT=29500 must differ from MASTER_PORT: the training program binds "
            "MASTER_PORT on pod 0");
}

// A valid two-pod environment, as the operator writes it for pod 1.
Env podEnv() {
  return {{"NODE_RANK", "1"},
          {"NNODES", "2"},
          {"LOCAL_WORLD_SIZE", "2"},
          {"WORLD_SIZE", "4"},
          {"MASTER_ADDR", "j-worker-0.j.ns.svc"},
          {"MASTER_PORT", "29500"},
          {"RINGMASTER_JOB", "j"},
          {"RINGMASTER_ATTEMPT", "3"},
          {"RINGMASTER_BACKEND", "gloo"},
          {"POD_IP", "127.1.0.7"},
          {"POD_NAME", "j-worker-1"},
          {"RINGMASTER_STORE_SECRET", kSecret}};
}

struct BadCase {
  std::string name;
  // Variables changed from podEnv(); nullopt removes one.
  std::vector<std::pair<std::string, std::optional<std::string>>> changes;
  std::string error;
};

std::vector<BadCase> badCases() {
  return {
      {"NodeRankOutsideTheGang", {{"NODE_RANK", "2"}}, "NODE_RANK=2 must be in [0, NNODES=2)"},
      {"WorldSizeCountsProcessesNotPods",
       {{"WORLD_SIZE", "2"}},  // Kubeflow's per-pod meaning
       "WORLD_SIZE=2 must be NNODES * LOCAL_WORLD_SIZE = 2 * 2 (WORLD_SIZE counts processes, "
       "not pods)"},
      {"PortZero", {{"MASTER_PORT", "0"}}, "MASTER_PORT=0 must be in [1, 65535]"},
      {"PortAboveTheRange", {{"MASTER_PORT", "70000"}}, "MASTER_PORT=70000 must be in [1, 65535]"},
      {"PortNotANumber",
       {{"MASTER_PORT", "http"}},
       "MASTER_PORT='http': expected an integer, got 'http'"},
      {"NoNodes", {{"NNODES", "0"}}, "NNODES=0 must be in [1, 4096]"},
      {"TooManyProcessesPerPod",
       {{"LOCAL_WORLD_SIZE", "65"}},
       "LOCAL_WORLD_SIZE=65 must be in [1, 64]"},
      {"NegativeAttempt",
       {{"RINGMASTER_ATTEMPT", "-1"}},
       "RINGMASTER_ATTEMPT=-1 must be in [0, 9223372036854775807]"},
      {"JobNameWithSlash",
       {{"RINGMASTER_JOB", "a/b"}},
       "RINGMASTER_JOB='a/b' must not contain '/'"},
      {"UnknownLauncherMode",
       {{"RINGMASTER_LAUNCHER_MODE", "ssh"}},
       "RINGMASTER_LAUNCHER_MODE='ssh' must be native or mpi"},
      // The value itself stays out of the message.
      {"ShortStoreSecret",
       {{"RINGMASTER_STORE_SECRET", "hunter2"}},
       "RINGMASTER_STORE_SECRET is 7 characters, fewer than 32"},
      {"MoreWorkerSlotsThanTheGang",
       {{"RINGMASTER_WORKER_PODS", "1"}, {"RINGMASTER_WORKER_SLOTS", "3"}},
       "RINGMASTER_WORKER_SLOTS=3 must be in [1, 2]"},
      {"MoreWorkerPodsThanSlots",
       {{"RINGMASTER_WORKER_PODS", "2"}, {"RINGMASTER_WORKER_SLOTS", "1"}},
       "RINGMASTER_WORKER_PODS=2 must be in [1, 1]"},
      {"WorkerPodsWithoutSlots",
       {{"RINGMASTER_WORKER_PODS", "1"}},
       "RINGMASTER_WORKER_SLOTS=0 must be in [1, 2]"},
      {"GangWithoutStoreSecret",
       {{"RINGMASTER_STORE_SECRET", std::nullopt}},
       "RINGMASTER_STORE_SECRET must be set when NNODES=2 > 1: every pod proves it to the "
       "rendezvous store"},
  };
}

class BadEnvironment : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadEnvironment, IsRefusedNamingTheVariable) {
  Env env = podEnv();
  for (const auto& [name, value] : GetParam().changes) {
    if (value) {
      set(env, name, *value);
    } else {
      env.erase(name);
    }
  }
  core::Result<PodEnvironment> parsed = parsePodEnvironment(env);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), core::Code::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(PodEnvironment, BadEnvironment, ::testing::ValuesIn(badCases()),
                         [](const auto& info) { return info.param.name; });

TEST(PodEnvironment, ReadsTheOperatorsPodEnvironment) {
  auto env = parsePodEnvironment(podEnv());
  ASSERT_TRUE(env.ok()) << env.status().toString();
  EXPECT_EQ(env->node_rank, 1);
  EXPECT_EQ(env->nnodes, 2);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->firstRank(), 2);
  EXPECT_EQ(env->master_addr, "j-worker-0.j.ns.svc");
  EXPECT_EQ(env->attemptPrefix(), "j/attempt-3");
  EXPECT_EQ(env->bindHost(), "127.1.0.7");
  EXPECT_EQ(env->describePod(), "pod 1 (j-worker-1)");
  EXPECT_EQ(env->backend, "gloo");
  EXPECT_EQ(env->mode, LauncherMode::kNative);
  EXPECT_EQ(env->work_dir, "");
  EXPECT_FALSE(env->has_gpus);
  EXPECT_EQ(env->store_secret, kSecret);
}

TEST(PodEnvironment, EmptyEnvironmentIsAOnePodWorldOnThisMachine) {
  auto env = parsePodEnvironment(Env{});
  ASSERT_TRUE(env.ok()) << env.status().toString();
  EXPECT_EQ(*env, PodEnvironment{});
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->bindHost(), "0.0.0.0");
  EXPECT_EQ(env->describePod(), "pod 0");
  EXPECT_EQ(env->attemptPrefix(), "local/attempt-0");
}

TEST(PodEnvironment, AOnePodWorldMayGoWithoutTheStoreSecret) {
  // The launcher makes one up for its own processes.
  Env env = podEnv();
  env.erase("RINGMASTER_STORE_SECRET");
  set(env, "NNODES", "1");
  set(env, "NODE_RANK", "0");
  set(env, "WORLD_SIZE", "2");
  auto parsed = parsePodEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->store_secret, "");
}

TEST(PodEnvironment, EmptyValuesReadAsUnset) {
  Env env = podEnv();
  set(env, "MASTER_PORT", "");
  set(env, "WORLD_SIZE", "");
  set(env, "RINGMASTER_LAUNCHER_MODE", "");
  auto parsed = parsePodEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->master_port, 29500);
  EXPECT_EQ(parsed->world_size, 4);
  EXPECT_EQ(parsed->mode, LauncherMode::kNative);
}

TEST(PodEnvironment, GpuPodsAreRecognizedByTheNvidiaRuntimeVariable) {
  Env env = podEnv();
  for (const auto& [value, has_gpus] : std::vector<std::pair<std::string, bool>>{
           {"all", true}, {"0,1", true}, {"void", false}, {"none", false}, {"", false}}) {
    set(env, "NVIDIA_VISIBLE_DEVICES", value);
    auto parsed = parsePodEnvironment(env);
    ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
    EXPECT_EQ(parsed->has_gpus, has_gpus) << "NVIDIA_VISIBLE_DEVICES=" << value;
  }
}

TEST(PodEnvironment, LauncherModesAreSpelledAsTheVariableSpellsThem) {
  for (LauncherMode mode : {LauncherMode::kNative, LauncherMode::kMpi}) {
    EXPECT_EQ(parseLauncherMode(launcherModeName(mode)), mode);
  }
  EXPECT_EQ(launcherModeName(LauncherMode::kMpi), "mpi");
  EXPECT_EQ(parseLauncherMode("MPI"), std::nullopt);
  EXPECT_EQ(parseLauncherMode(""), std::nullopt);
}

}  // namespace
}  // namespace ringmaster::contract
