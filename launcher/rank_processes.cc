#include "launcher/rank_processes.h"

#include <utility>

#include "ringmaster/contract/rank_environment.h"

namespace ringmaster::launcher {

std::vector<ProcessSpec> rankProcesses(const contract::PodEnvironment& pod,
                                       const std::vector<std::string>& argv, int64_t heartbeat_ms,
                                       bool gpus) {
  std::vector<ProcessSpec> specs;
  for (int local = 0; local < pod.local_world_size; ++local) {
    const contract::RankEnvironment rank = contract::launchedRank(pod, local, heartbeat_ms);
    ProcessSpec spec;
    spec.name = "rank " + std::to_string(rank.rank);
    spec.argv = argv;
    for (auto& [name, value] : contract::encode(rank)) spec.env[name] = std::move(value);
    if (gpus) spec.env["CUDA_VISIBLE_DEVICES"] = std::to_string(local);
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace ringmaster::launcher
