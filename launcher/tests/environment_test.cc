// parseEnvironment: the pod environment, with errors that name the variable.

#include "launcher/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

namespace ringmaster::launcher {
namespace {

using ::testing::HasSubstr;

std::map<std::string, std::string> podEnv() {
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
          {"RINGMASTER_STORE_SECRET", "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e7"}};
}

// Sets one variable of a test environment. (A literal assigned to the mapped string directly
// trips a false -Wrestrict in GCC 12's optimized builds.)
void set(std::map<std::string, std::string>& env, const std::string& name, std::string value) {
  env[name] = std::move(value);
}

std::string errorFor(std::map<std::string, std::string> env) {
  auto parsed = parseEnvironment(env);
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), core::Code::kInvalidArgument);
  return parsed.status().message();
}

TEST(Environment, ReadsTheOperatorsPodEnvironment) {
  auto env = parseEnvironment(podEnv());
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
  EXPECT_EQ(env->mode, "native");
  EXPECT_FALSE(env->has_gpus);
  EXPECT_EQ(env->store_secret, "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e7");
}

TEST(Environment, AGangOfSeveralPodsNeedsTheStoreSecret) {
  auto env = podEnv();
  env.erase("RINGMASTER_STORE_SECRET");
  EXPECT_THAT(errorFor(env), HasSubstr("RINGMASTER_STORE_SECRET must be set when NNODES=2 > 1"));
  // A one-pod world may go without: the launcher makes one up for its own processes.
  set(env, "NNODES", "1");
  set(env, "NODE_RANK", "0");
  set(env, "WORLD_SIZE", "2");
  auto parsed = parseEnvironment(env);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->store_secret, "");
}

TEST(Environment, AShortStoreSecretIsRejectedWithoutEchoingIt) {
  auto env = podEnv();
  set(env, "RINGMASTER_STORE_SECRET", "hunter2");
  const std::string error = errorFor(env);
  EXPECT_THAT(error, HasSubstr("RINGMASTER_STORE_SECRET is 7 characters, fewer than 32"));
  EXPECT_EQ(error.find("hunter2"), std::string::npos) << error;
}

TEST(Environment, EmptyEnvironmentIsAOnePodWorldOnThisMachine) {
  auto env = parseEnvironment(std::map<std::string, std::string>{});
  ASSERT_TRUE(env.ok()) << env.status().toString();
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->bindHost(), "0.0.0.0");
  EXPECT_EQ(env->attemptPrefix(), "local/attempt-0");
}

TEST(Environment, WorldSizeCountsProcessesNotPods) {
  auto env = podEnv();
  set(env, "WORLD_SIZE", "2");  // Kubeflow's per-pod meaning
  EXPECT_THAT(errorFor(env), HasSubstr("WORLD_SIZE=2 must be NNODES * LOCAL_WORLD_SIZE"));
}

TEST(Environment, NodeRankOutsideTheGangIsNamed) {
  auto env = podEnv();
  set(env, "NODE_RANK", "2");
  EXPECT_THAT(errorFor(env), HasSubstr("NODE_RANK=2 must be in [0, NNODES=2)"));
}

TEST(Environment, NonNumberIsNamedWithItsValue) {
  auto env = podEnv();
  set(env, "MASTER_PORT", "http");
  EXPECT_THAT(errorFor(env), HasSubstr("MASTER_PORT='http'"));
  set(env, "MASTER_PORT", "70000");
  EXPECT_THAT(errorFor(env), HasSubstr("MASTER_PORT=70000 must be in [1, 65535]"));
}

TEST(Environment, JobNameWithSlashIsRejected) {
  auto env = podEnv();
  set(env, "RINGMASTER_JOB", "a/b");
  EXPECT_THAT(errorFor(env), HasSubstr("RINGMASTER_JOB"));
}

TEST(Environment, UnknownLauncherModeIsRejected) {
  auto env = podEnv();
  set(env, "RINGMASTER_LAUNCHER_MODE", "ssh");
  EXPECT_THAT(errorFor(env), HasSubstr("RINGMASTER_LAUNCHER_MODE='ssh'"));
}

TEST(Environment, GpuPodsAreRecognizedByTheNvidiaRuntimeVariable) {
  auto env = podEnv();
  set(env, "NVIDIA_VISIBLE_DEVICES", "all");
  EXPECT_TRUE(parseEnvironment(env)->has_gpus);
  set(env, "NVIDIA_VISIBLE_DEVICES", "void");
  EXPECT_FALSE(parseEnvironment(env)->has_gpus);
}

}  // namespace
}  // namespace ringmaster::launcher
