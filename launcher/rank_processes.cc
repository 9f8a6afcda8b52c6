#include "launcher/rank_processes.h"

#include <filesystem>

#include "ringmaster/contract/rank_environment.h"

namespace ringmaster::launcher {

bool runsTorchrun(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  if (program == "torchrun") return true;
  if (program.rfind("python", 0) != 0) return false;
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-m") return argv[i + 1] == "torch.distributed.run";
    if (argv[i].empty() || argv[i][0] != '-') return false;  // the script: python's args end
  }
  return false;
}

std::vector<ProcessSpec> rankProcesses(const contract::PodEnvironment& pod,
                                       const std::vector<std::string>& argv, int64_t heartbeat_ms,
                                       bool gpus, const std::optional<contract::TfConfig>& tf) {
  std::vector<ProcessSpec> specs;
  if (runsTorchrun(argv)) {
    ProcessSpec agent;
    agent.name = "torchrun (pod " + std::to_string(pod.node_rank) + ")";
    agent.argv = argv;
    for (auto& [name, value] : contract::encodeTorchrunAgent(pod)) agent.env[name] = value;
    specs.push_back(std::move(agent));
    return specs;
  }
  for (int local = 0; local < pod.local_world_size; ++local) {
    const contract::RankEnvironment rank = contract::launchedRank(pod, local, heartbeat_ms);
    ProcessSpec spec;
    spec.name = "rank " + std::to_string(rank.rank);
    spec.argv = argv;
    for (auto& [name, value] : contract::encode(rank)) spec.env[name] = std::move(value);
    if (gpus) spec.env["CUDA_VISIBLE_DEVICES"] = std::to_string(local);
    if (tf) {
      contract::TfConfig own = *tf;
      own.task_index = tf->task_index + local;  // the pod's first task in its role, + k
      spec.env[contract::kTfConfigEnv] = contract::encodeTfConfig(own);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace ringmaster::launcher
