#include "trainer/pipeline/schedule.h"

#include <algorithm>

namespace ringmaster::trainer::pipeline {

core::Result<ScheduleKind> parseScheduleKind(std::string_view name) {
  if (name == "gpipe") return ScheduleKind::kGPipe;
  if (name == "1f1b") return ScheduleKind::kOneFOneB;
  if (name == "pipedream") return ScheduleKind::kPipeDream;
  return core::invalidArgument(
      "pipeline schedule: expected \"gpipe\", \"1f1b\" or \"pipedream\", got \"" +
      std::string(name) + "\"");
}

std::string scheduleName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGPipe:
      return "gpipe";
    case ScheduleKind::kPipeDream:
      return "pipedream";
    case ScheduleKind::kOneFOneB:
      break;
  }
  return "1f1b";
}

core::Result<std::vector<PipelineOp>> stageSchedule(ScheduleKind kind, int stage, int stages,
                                                    int micro_batches) {
  if (stages < 1 || stage < 0 || stage >= stages) {
    return core::invalidArgument("pipeline schedule: stage " + std::to_string(stage) +
                                 " is not one of " + std::to_string(stages) + " stages");
  }
  if (micro_batches < 1) {
    return core::invalidArgument("pipeline schedule: needs at least one micro-batch, got " +
                                 std::to_string(micro_batches));
  }
  std::vector<PipelineOp> ops;
  ops.reserve(2 * static_cast<size_t>(micro_batches));
  auto forward = [&](int m) { ops.push_back({PipelineOp::kForward, m}); };
  auto backward = [&](int m) { ops.push_back({PipelineOp::kBackward, m}); };
  if (kind == ScheduleKind::kGPipe) {
    for (int m = 0; m < micro_batches; ++m) forward(m);
    for (int m = 0; m < micro_batches; ++m) backward(m);
    return ops;
  }
  // The later the stage, the fewer forwards it needs before the first backward reaches it.
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) forward(next_forward);
  while (next_forward < micro_batches) {
    forward(next_forward++);
    backward(next_backward++);
  }
  while (next_backward < micro_batches) backward(next_backward++);
  return ops;
}

int peakInFlight(const std::vector<PipelineOp>& ops) {
  int in_flight = 0, peak = 0;
  for (const PipelineOp& op : ops) {
    in_flight += op.kind == PipelineOp::kForward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

double idealBubbleFraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

double SimulatedRun::bubbleFraction() const {
  if (busy.empty() || makespan <= 0) return 0;
  double idle = 0;
  for (double b : busy) idle += 1.0 - b / makespan;
  return idle / static_cast<double>(busy.size());
}

SimulatedRun simulate(const std::vector<std::vector<PipelineOp>>& stages, double forward_cost,
                      double backward_cost) {
  return simulate(stages, std::vector<double>(stages.size(), forward_cost),
                  std::vector<double>(stages.size(), backward_cost));
}

SimulatedRun simulate(const std::vector<std::vector<PipelineOp>>& stages,
                      const std::vector<double>& forward_costs,
                      const std::vector<double>& backward_costs) {
  const size_t n = stages.size();
  SimulatedRun run;
  run.busy.assign(n, 0);
  // When each stage's pass of each micro-batch ended (-1: not yet).
  constexpr double kNotYet = -1;
  std::vector<std::vector<double>> forward_end(n), backward_end(n);
  int micro_batches = 0;
  for (const auto& ops : stages) {
    for (const PipelineOp& op : ops) micro_batches = std::max(micro_batches, op.micro + 1);
  }
  for (size_t s = 0; s < n; ++s) {
    forward_end[s].assign(micro_batches, kNotYet);
    backward_end[s].assign(micro_batches, kNotYet);
  }
  std::vector<size_t> next(n, 0);
  std::vector<double> free_at(n, 0);
  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (size_t s = 0; s < n; ++s) {
      while (next[s] < stages[s].size()) {
        const PipelineOp& op = stages[s][next[s]];
        double ready = free_at[s];
        if (op.kind == PipelineOp::kForward && s > 0) {
          const double in = forward_end[s - 1][op.micro];
          if (in == kNotYet) break;
          ready = std::max(ready, in);
        }
        if (op.kind == PipelineOp::kBackward) {
          const double own = forward_end[s][op.micro];
          const double in = s + 1 < n ? backward_end[s + 1][op.micro] : own;
          if (own == kNotYet || in == kNotYet) break;
          ready = std::max(ready, in);
        }
        const double cost = op.kind == PipelineOp::kForward ? forward_costs[s] : backward_costs[s];
        free_at[s] = ready + cost;
        run.busy[s] += cost;
        (op.kind == PipelineOp::kForward ? forward_end : backward_end)[s][op.micro] = free_at[s];
        ++next[s];
        progressed = true;
      }
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (next[s] < stages[s].size()) run.deadlocked = true;
    run.makespan = std::max(run.makespan, free_at[s]);
  }
  return run;
}

}  // namespace ringmaster::trainer::pipeline
