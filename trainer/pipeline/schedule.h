#pragma once
// Pipeline schedules as data: for one stage, the order in which it runs the forward (F) and
// backward (B) passes of a mini-batch's M micro-batches. The executor (stage_executor.h) walks
// the list; these functions decide, and tests check the decisions without running a network.
//
//   gpipe  all M forwards, then all M backwards: M micro-batches of activations in flight.
//   1f1b   PipeDream-Flush: stage s runs min(S - s - 1, M) forwards to fill the pipeline, then
//          alternates one forward with one backward, then drains the backwards. The same
//          mathematics as gpipe (one optimizer step per mini-batch) with at most S - s
//          micro-batches in flight.
// Every stage runs forwards and backwards in micro-batch order, so the messages between two
// neighbours arrive in the order the receiver expects them.
//
// simulate() plays per-stage lists against each other with fixed costs per pass (a send arrives
// when its pass ends; a stage waits for what it receives) and reports the makespan, each stage's
// busy time and a deadlock, if any: the bubble fraction of gpipe and 1f1b is (S - 1) / (M + S - 1)
// when a forward and a backward cost the same on every stage.
//
// Thread-safety: pure functions. Failure: invalid arguments return kInvalidArgument.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::pipeline {

// kPipeDream is 1F1B over a whole epoch's micro-batches without flushes (asynchronous, with
// weight stashing: StageExecutor::runStream); per stage it orders passes as kOneFOneB does.
enum class ScheduleKind { kGPipe, kOneFOneB, kPipeDream };

core::Result<ScheduleKind> parseScheduleKind(
    std::string_view name);  // "gpipe", "1f1b", "pipedream"
std::string scheduleName(ScheduleKind kind);

struct PipelineOp {
  enum Kind : uint8_t { kForward, kBackward };
  Kind kind;
  int micro;  // micro-batch index in [0, M)
  bool operator==(const PipelineOp&) const = default;
};

// Stage `stage` of `stages` on `micro_batches` micro-batches.
core::Result<std::vector<PipelineOp>> stageSchedule(ScheduleKind kind, int stage, int stages,
                                                    int micro_batches);

// The most micro-batches whose forward ran and whose backward has not (activations kept).
int peakInFlight(const std::vector<PipelineOp>& ops);

// The theoretical bubble fraction of a flushed pipeline: (S - 1) / (M + S - 1).
double idealBubbleFraction(int stages, int micro_batches);

struct SimulatedRun {
  bool deadlocked = false;
  double makespan = 0;
  std::vector<double> busy;  // per stage
  // 1 - busy / makespan, averaged over stages.
  double bubbleFraction() const;
};

// Each stage runs its list in order; a forward of stage s > 0 waits for the same micro-batch's
// forward on s - 1, a backward of stage s < S - 1 for its backward on s + 1.
SimulatedRun simulate(const std::vector<std::vector<PipelineOp>>& stages, double forward_cost,
                      double backward_cost);
// The same with each stage's own costs (what a measured, imperfectly balanced cut has): the
// bubble the schedule itself leaves on that cut, free of communication and overheads.
SimulatedRun simulate(const std::vector<std::vector<PipelineOp>>& stages,
                      const std::vector<double>& forward_costs,
                      const std::vector<double>& backward_costs);

}  // namespace ringmaster::trainer::pipeline
