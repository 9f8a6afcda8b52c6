#include "ringmaster/contract/tf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ringmaster::contract {
namespace {

TEST(TfConfig, WorkerClusterIsShapedAsTfJobShapesIt) {
  const TfConfig config =
      clusterTfConfig({{"worker", {"j-worker-0.j.ns.svc", "j-worker-1.j.ns.svc"}}}, 1, "worker", 1);
  const nlohmann::json j = nlohmann::json::parse(encodeTfConfig(config));
  EXPECT_EQ(j, nlohmann::json::parse(R"({"cluster": {"worker": ["j-worker-0.j.ns.svc:2222",
      "j-worker-1.j.ns.svc:2222"]}, "task": {"type": "worker", "index": 1},
      "environment": "cloud"})"));
}

TEST(TfConfig, ProcessesOfOnePodTakeConsecutivePorts) {
  const TfConfig config = clusterTfConfig({{"worker", {"a", "b"}}}, 2, "worker", 3);
  EXPECT_EQ(config.cluster.at("worker"),
            (std::vector<std::string>{"a:2222", "a:2223", "b:2222", "b:2223"}));
  EXPECT_EQ(config.task_index, 3);
}

TEST(TfConfig, EveryRolesPodsAreTasksOfTheirRole) {
  const TfConfig config = clusterTfConfig({{"worker", {"w0", "w1"}}, {"ps", {"p0"}}}, 2, "ps", 1);
  EXPECT_EQ(config.cluster.at("worker"),
            (std::vector<std::string>{"w0:2222", "w0:2223", "w1:2222", "w1:2223"}));
  EXPECT_EQ(config.cluster.at("ps"), (std::vector<std::string>{"p0:2222", "p0:2223"}));
  EXPECT_EQ(config.task_type, "ps");
  EXPECT_EQ(config.task_index, 1);
  EXPECT_TRUE(parseTfConfig(encodeTfConfig(config)).ok());
}

TEST(TfConfig, RoundTripsEveryRole) {
  TfConfig config;
  config.cluster = {{"chief", {"c:2222"}}, {"ps", {"p0:2222", "p1:2222"}}, {"worker", {"w:2222"}}};
  config.task_type = "ps";
  config.task_index = 1;
  auto parsed = parseTfConfig(encodeTfConfig(config));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, config);
}

TEST(TfConfig, TheEvaluatorIsNotInTheClusterItsTaskNames) {
  const TfConfig config = clusterTfConfig(
      {{"worker", {"w0"}}, {"chief", {"c0"}}, {"evaluator", {"e0"}}}, 1, "evaluator", 0);
  EXPECT_EQ(config.cluster.count("evaluator"), 0u);
  EXPECT_EQ(config.cluster.at("chief"), (std::vector<std::string>{"c0:2222"}));
  const nlohmann::json j = nlohmann::json::parse(encodeTfConfig(config));
  EXPECT_EQ(j["task"], nlohmann::json::parse(R"({"type": "evaluator", "index": 0})"));
  auto parsed = parseTfConfig(encodeTfConfig(config));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, config);
}

TEST(TfConfig, RefusesWhatATensorFlowProgramCouldNotUse) {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      {"[]", "TF_CONFIG: not a JSON object"},
      {"{\"task\": {\"type\": \"worker\", \"index\": 0}}", "TF_CONFIG: cluster must be an object"},
      {"{\"cluster\": {\"worker\": \"a:1\"}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "TF_CONFIG: cluster.worker must be a list of addresses"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}}", "TF_CONFIG: task must be an object"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}",
       "TF_CONFIG: task.type 'ps' is not a role of cluster"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 1}}",
       "TF_CONFIG: task.index 1 must be in [0, 1)"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"worker\", \"index\": \"0\"}}",
       "TF_CONFIG: task.index must be an integer"},
      {"{\"cluster\": {\"worker\": [\"a:1\"], \"evaluator\": [\"e:1\"]}, "
       "\"task\": {\"type\": \"evaluator\", \"index\": 0}}",
       "TF_CONFIG: cluster.evaluator: the evaluator is not a role of the training cluster"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"evaluator\", "
       "\"index\": -1}}",
       "TF_CONFIG: task.index -1 must not be negative"},
  };
  for (const Case& c : cases) {
    auto parsed = parseTfConfig(c.json);
    ASSERT_FALSE(parsed.ok()) << c.json;
    EXPECT_EQ(parsed.status().message(), c.error) << c.json;
  }
}

}  // namespace
}  // namespace ringmaster::contract
