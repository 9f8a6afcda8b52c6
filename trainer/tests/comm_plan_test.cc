#include "trainer/comm_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace ringmaster::trainer {
namespace {

contract::RankEnvironment environment(const std::map<std::string, std::string>& vars) {
  auto env = contract::parseRankEnvironment(vars);
  EXPECT_TRUE(env.ok()) << env.status().message();
  return env.ok() ? *env : contract::RankEnvironment{};
}

TEST(WorldCommConfig, ComesFromTheRankEnvironmentAndTheSettings) {
  struct Case {
    const char* name;
    std::map<std::string, std::string> env;
    std::string backend;
    int32_t stages;
    bool cuda;
    std::function<void(const comm::CommConfig&)> check;
  };
  const Case cases[] = {
      {"a bare trainer: a world of one hosting its own store",
       {},
       "auto",
       1,
       false,
       [](const comm::CommConfig& c) {
         EXPECT_EQ(c.rank, 0);
         EXPECT_EQ(c.world_size, 1);
         EXPECT_EQ(c.master_addr, "127.0.0.1");
         EXPECT_EQ(c.master_port, 29500);
         EXPECT_TRUE(c.host_store);
         EXPECT_EQ(c.key_prefix, "local/attempt-0/trainer");
         EXPECT_EQ(c.device, "cpu");
         EXPECT_FALSE(c.point_to_point);
         EXPECT_FALSE(c.make_nccl);
       }},
      {"under the launcher: its store, its port, its secret, the pod's address",
       {{"RANK", "3"},
        {"WORLD_SIZE", "4"},
        {"LOCAL_RANK", "1"},
        {"MASTER_ADDR", "job-0.job"},
        {"MASTER_PORT", "29500"},
        {"RINGMASTER_STORE_PORT", "29400"},
        {"RINGMASTER_JOB", "mnist"},
        {"RINGMASTER_ATTEMPT", "2"},
        {"RINGMASTER_USE_AGENT_STORE", "1"},
        {"RINGMASTER_STORE_SECRET", "s3cret"},
        {"POD_IP", "10.0.0.7"}},
       "tcp",
       1,
       false,
       [](const comm::CommConfig& c) {
         EXPECT_EQ(c.backend, "tcp");
         EXPECT_EQ(c.rank, 3);
         EXPECT_EQ(c.world_size, 4);
         EXPECT_EQ(c.master_addr, "job-0.job");
         EXPECT_EQ(c.master_port, 29400);  // the store's, not the program's
         EXPECT_EQ(c.store_secret, "s3cret");
         EXPECT_FALSE(c.host_store);
         EXPECT_EQ(c.key_prefix, "mnist/attempt-2/trainer");
         EXPECT_EQ(c.host, "10.0.0.7");
       }},
      {"pipeline stages send and receive; on the GPU the gradients live there",
       {{"RANK", "1"}, {"WORLD_SIZE", "2"}},
       "nccl",
       2,
       true,
       [](const comm::CommConfig& c) {
         EXPECT_EQ(c.backend, "nccl");
         EXPECT_EQ(c.device, "cuda");
         EXPECT_TRUE(c.point_to_point);
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TrainerConfig config;
    config.settings = defaultTrainerSettings();
    config.settings.pipeline.stages = c.stages;
    config.settings.comm_timeout_seconds = 17;
    config.backend = c.backend;
    const comm::CommConfig cc =
        worldCommConfig(environment(c.env), config, c.cuda, std::chrono::seconds(42));
    EXPECT_EQ(cc.collective_timeout, std::chrono::seconds(17));
    EXPECT_EQ(cc.timeout, std::chrono::seconds(42));
    c.check(cc);
  }
}

TEST(GroupCommConfig, AGroupRendezvousesUnderItsOwnKeysThroughTheWorldsStore) {
  TrainerConfig config;
  config.settings = defaultTrainerSettings();
  config.settings.pipeline.stages = 2;
  config.settings.tcp_doubling_max_kb = 64;
  config.backend = "gloo";
  const comm::CommConfig world =
      worldCommConfig(environment({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"RINGMASTER_JOB", "j"}}),
                      config, false, std::chrono::seconds(30));
  const comm::CommConfig group = groupCommConfig(world, "pipeline-stage-1", 2, 4);
  EXPECT_EQ(group.rank, 2);
  EXPECT_EQ(group.world_size, 4);
  EXPECT_EQ(group.key_prefix, "j/attempt-0/trainer/pipeline-stage-1");
  EXPECT_FALSE(group.host_store);
  EXPECT_FALSE(group.point_to_point);
  EXPECT_EQ(group.backend, "gloo");
  EXPECT_EQ(group.master_addr, world.master_addr);
  EXPECT_EQ(group.master_port, world.master_port);
  EXPECT_EQ(group.timeout, world.timeout);
  // The transport's thresholds are the run's in every group (tcp's doubling limit here).
  EXPECT_EQ(world.tcp_doubling_max_bytes, size_t{64} << 10);
  EXPECT_EQ(group.tcp_doubling_max_bytes, world.tcp_doubling_max_bytes);
}

}  // namespace
}  // namespace ringmaster::trainer
