#include "trainer/pipeline/partition.h"

#include <algorithm>
#include <limits>
#include <string>

namespace ringmaster::trainer::pipeline {

namespace {
const char* kField = "parallelism.pipeline.partition";
}  // namespace

core::Result<StageStarts> balancedPartition(std::span<const double> layer_costs, int stages) {
  const int layers = static_cast<int>(layer_costs.size());
  if (stages < 1 || stages > layers) {
    return core::invalidArgument("parallelism.pipeline.stages: " + std::to_string(stages) +
                                 " stages cannot split a network of " + std::to_string(layers) +
                                 " layers (each stage needs at least one)");
  }
  std::vector<double> prefix(layers + 1, 0);
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + layer_costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: the smallest bottleneck of the first i layers in s stages; cut[s][i]: where the
  // last of those stages starts.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(layers + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(layers + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= layers; ++i) {
      for (int j = s - 1; j < i; ++j) {
        const double cost = std::max(best[s - 1][j], prefix[i] - prefix[j]);
        if (cost < best[s][i]) {
          best[s][i] = cost;
          cut[s][i] = j;
        }
      }
    }
  }
  StageStarts starts(stages);
  for (int s = stages, i = layers; s >= 1; --s) {
    starts[s - 1] = cut[s][i];
    i = cut[s][i];
  }
  return starts;
}

core::Status checkPartition(const StageStarts& starts, int layers) {
  if (starts.empty() || starts[0] != 0) {
    return core::invalidArgument(std::string(kField) +
                                 ": must start with 0 (the first stage begins at layer 0)");
  }
  for (size_t s = 1; s < starts.size(); ++s) {
    if (starts[s] <= starts[s - 1] || starts[s] >= layers) {
      return core::invalidArgument(std::string(kField) + "[" + std::to_string(s) +
                                   "]: " + std::to_string(starts[s]) + " must be above " +
                                   std::to_string(starts[s - 1]) + " and below " +
                                   std::to_string(layers) + " (the network's layer count)");
    }
  }
  return core::Status::Ok();
}

double bottleneckCost(std::span<const double> layer_costs, const StageStarts& starts) {
  double worst = 0;
  for (size_t s = 0; s < starts.size(); ++s) {
    const size_t end = s + 1 < starts.size() ? starts[s + 1] : layer_costs.size();
    double sum = 0;
    for (size_t i = starts[s]; i < end; ++i) sum += layer_costs[i];
    worst = std::max(worst, sum);
  }
  return worst;
}

}  // namespace ringmaster::trainer::pipeline
