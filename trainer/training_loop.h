#pragma once
// The one training loop of a rank, whatever a step is: epochs and their steps from where the run
// resumed, max_steps, stopping when asked (rank 0 checkpoints first), periodic and end-of-epoch
// checkpoints (rank 0), an evaluation after every epoch, a population-based training member's
// round after it, and the run's report (RunReport).
// What a step does is a StepEngine's: the CPU engine (trainer.cc) and the GPU engine
// (gpu/gpu_trainer.cc) today; a pipeline schedule is another engine, not another loop.
//
// Thread-safety: one loop per rank. Failure: the engine's first error, or kCancelled naming the
// epoch and step when the stop source fired.

#include <cstdint>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "trainer/config.h"
#include "trainer/pbt/member.h"
#include "trainer/resume.h"
#include "trainer/run_report.h"
#include "trainer/trainer.h"
#include "trainer/trainer_metrics.h"

namespace ringmaster::trainer {

// What an engine measured over one epoch's steps on this rank.
struct EpochMeasures {
  double train_loss_sum = 0;  // training loss summed over the epoch's steps
  // Allreduce time measured this epoch, the part backward did not hide, and its bytes.
  double comm_seconds = 0, exposed_seconds = 0;
  uint64_t comm_bytes = 0;
  std::string where;  // after "N steps in T s" in the epoch's log line, e.g. " on the GPU (bf16)"
};

class StepEngine {
 public:
  virtual ~StepEngine() = default;
  // Steps in every epoch (the same for every epoch, so a schedule is a function of the step).
  virtual int64_t batchesPerEpoch() const = 0;
  // Before the first step of `epoch`, which starts at batch `first_batch` (after a resume).
  virtual core::Status beginEpoch(int64_t epoch, int64_t first_batch) = 0;
  // Trains batch `batch` of `epoch`; `steps_done` optimizer steps came before it. Returns the
  // samples this rank trained on.
  virtual core::Result<int> step(int64_t epoch, int64_t batch, int64_t steps_done) = 0;
  // After the epoch's last step (`steps` of them in this run).
  virtual core::Result<EpochMeasures> endEpoch(int64_t epoch, int64_t steps) = 0;
  // This rank's share of the test set, summed over ranks with the training loss of `train_steps`
  // steps; `what` names the moment in errors ("epoch 3").
  virtual core::Result<EpochTotals> evaluate(double train_loss_sum, int64_t train_steps,
                                             const std::string& what) = 0;
  // Rank 0 only: parameters and optimizer state at `at`.
  virtual core::Status saveCheckpoint(const Position& at) = 0;
  // Population-based training (trainer/pbt): parameters and optimizer state at `at` into `dir`
  // for the other members; the file written. Only engines whose runs can be members have it.
  virtual core::Result<std::string> writeMemberCheckpoint(const std::string& dir,
                                                          const Position& at) {
    (void)dir;
    (void)at;
    return core::internalError("this engine cannot be a population-based training member");
  }
  // Continues from another member's checkpoint (at the same step) with `optimizer`'s values.
  virtual core::Status exploit(const std::string& checkpoint_file,
                               const contract::TrainerSettings::Optimizer& optimizer) {
    (void)checkpoint_file;
    (void)optimizer;
    return core::internalError("this engine cannot be a population-based training member");
  }
  // Allreduce calls and bytes of the whole run, for the report.
  virtual uint64_t allreduceCalls() const = 0;
  virtual uint64_t allreduceBytes() const = 0;
  // After the last epoch and the report: final state back where the caller reads it, last logs.
  virtual core::Status finish(const TrainSummary& summary, double train_seconds) = 0;
};

struct LoopContext {
  int rank = 0;
  int world = 1;
  // Ranks that each train on samples of their own (a pipeline's stages share theirs): what a
  // step's samples are multiplied by for the epoch's count. 0: the world.
  int data_replicas = 0;
  // Whether this rank writes checkpoints (rank 0 in data parallelism; every stage of a pipeline
  // writes its own).
  bool checkpoint_writer = false;
  const core::StopSource* stop = nullptr;  // optional
  TrainerMetrics* metrics = nullptr;       // optional
  // This run's part in population-based training: after every epoch but the last, the member
  // meets the population and may continue from another member's weights (optional).
  pbt::Member* pbt = nullptr;

  // Data parallelism: every rank trains on its own samples, rank 0 writes checkpoints.
  static LoopContext dataParallel(int rank, int world, const core::StopSource* stop,
                                  TrainerMetrics* metrics) {
    return {.rank = rank,
            .world = world,
            .checkpoint_writer = rank == 0,
            .stop = stop,
            .metrics = metrics};
  }
};

// The learning rate of step `step` (0-based) of a run of `total_steps` steps: the optimizer's,
// or its cosine decay to 0 at the last step (optimizer.schedule).
double learningRateAt(const contract::TrainerSettings::Optimizer& optimizer, int64_t step,
                      double total_steps);

// Trains from `pos` (restored, or the start) until training is complete; the summary's epochs,
// test figures, throughput and allreduce figures are filled in on the way.
core::Status runTrainingLoop(const contract::TrainerSettings& settings, const LoopContext& context,
                             StepEngine& engine, Position pos, TrainSummary* summary);

}  // namespace ringmaster::trainer
