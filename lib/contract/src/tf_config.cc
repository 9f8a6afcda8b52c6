#include "ringmaster/contract/tf_config.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace ringmaster::contract {

TfConfig clusterTfConfig(const std::map<std::string, std::vector<std::string>>& role_pod_hosts,
                         int procs_per_pod, const std::string& task_type, int task_index) {
  TfConfig config;
  for (const auto& [role, hosts] : role_pod_hosts) {
    if (role == kEvaluatorTask) continue;
    std::vector<std::string>& tasks = config.cluster[role];
    for (const std::string& host : hosts) {
      for (int k = 0; k < procs_per_pod; ++k) {
        tasks.push_back(host + ":" + std::to_string(kTfPort + k));
      }
    }
  }
  config.task_type = task_type;
  config.task_index = task_index;
  return config;
}

std::string encodeTfConfig(const TfConfig& config) {
  nlohmann::json j;
  j["cluster"] = nlohmann::json::object();
  for (const auto& [role, tasks] : config.cluster) j["cluster"][role] = tasks;
  j["task"] = {{"type", config.task_type}, {"index", config.task_index}};
  j["environment"] = "cloud";
  return j.dump();
}

core::Result<TfConfig> parseTfConfig(std::string_view json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  auto refuse = [](const std::string& why) {
    return core::invalidArgument(std::string(kTfConfigEnv) + ": " + why);
  };
  if (j.is_discarded() || !j.is_object()) return refuse("not a JSON object");
  TfConfig config;
  const auto cluster = j.find("cluster");
  if (cluster == j.end() || !cluster->is_object()) return refuse("cluster must be an object");
  for (const auto& [role, tasks] : cluster->items()) {
    if (!tasks.is_array()) return refuse("cluster." + role + " must be a list of addresses");
    for (const auto& task : tasks) {
      if (!task.is_string()) return refuse("cluster." + role + " must be a list of addresses");
      config.cluster[role].push_back(task.get<std::string>());
    }
  }
  const auto task = j.find("task");
  if (task == j.end() || !task->is_object()) return refuse("task must be an object");
  const auto type = task->find("type");
  const auto index = task->find("index");
  if (type == task->end() || !type->is_string()) return refuse("task.type must be a string");
  if (index == task->end() || !index->is_number_integer()) {
    return refuse("task.index must be an integer");
  }
  config.task_type = type->get<std::string>();
  const int64_t at = index->get<int64_t>();
  if (config.task_type == kEvaluatorTask) {
    if (config.cluster.contains(kEvaluatorTask)) {
      return refuse("cluster.evaluator: the evaluator is not a role of the training cluster");
    }
    if (at < 0) return refuse("task.index " + std::to_string(at) + " must not be negative");
    config.task_index = static_cast<int>(std::min<int64_t>(at, INT32_MAX));
    return config;
  }
  const auto role = config.cluster.find(config.task_type);
  if (role == config.cluster.end()) {
    return refuse("task.type '" + config.task_type + "' is not a role of cluster");
  }
  if (at < 0 || at >= static_cast<int64_t>(role->second.size())) {
    return refuse("task.index " + std::to_string(at) + " must be in [0, " +
                  std::to_string(role->second.size()) + ")");
  }
  config.task_index = static_cast<int>(at);
  return config;
}

}  // namespace ringmaster::contract
