#pragma once
// Where to cut a network into pipeline stages. A stage is a contiguous run of layers, and the
// pipeline runs at the pace of its slowest stage, so the balanced cut is the one whose most
// expensive stage is cheapest (the min-max partition PipeDream's planner solves; here by dynamic
// programming over prefix sums, O(S * L^2), trivial for the layer counts a trainer has).
// Costs are whatever the caller measured per layer (forward + backward seconds).
//
// Thread-safety: pure functions. Failure: kInvalidArgument naming the field
// ("parallelism.pipeline.partition[1]: ...").

#include <span>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::pipeline {

// First layer of each of `stages` stages; stage s runs layers [starts[s], starts[s + 1]).
using StageStarts = std::vector<int>;

// The contiguous cut of `layer_costs` into `stages` non-empty stages minimising the largest
// stage's summed cost (deterministic: among equal cuts, the last stage starts earliest).
core::Result<StageStarts> balancedPartition(std::span<const double> layer_costs, int stages);

// A user's cut: `starts` must begin at 0 and rise strictly, with every start below `layers`.
core::Status checkPartition(const StageStarts& starts, int layers);

// The largest stage's summed cost under `starts`.
double bottleneckCost(std::span<const double> layer_costs, const StageStarts& starts);

}  // namespace ringmaster::trainer::pipeline
