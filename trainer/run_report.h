#pragma once
// The accounting of the training loop (training_loop.h), whatever engine steps it: at the
// end of an epoch the totals all ranks summed go into the summary, the epoch's gauges are set
// and rank 0 logs the epoch line (or, for a run that resumed at the end, the restored model's); at
// the end of the run the summary gets throughput (all of it, and steady: without the run's first
// epoch) and the allreduce figures.
//
// Thread-safety: one per rank. Failure: none.

#include <cstdint>
#include <string>

#include "trainer/resume.h"
#include "trainer/trainer.h"
#include "trainer/trainer_metrics.h"

namespace ringmaster::trainer {

// What one rank contributes to an epoch's totals; allreduced (sum) as kCount floats.
struct EpochTotals {
  static constexpr int kCount = 5;
  float values[kCount] = {};  // test hits, test loss sum, test samples, train loss sum, steps
  EpochTotals(double test_hits, double test_loss_sum, double test_samples, double train_loss_sum,
              double train_steps)
      : values{static_cast<float>(test_hits), static_cast<float>(test_loss_sum),
               static_cast<float>(test_samples), static_cast<float>(train_loss_sum),
               static_cast<float>(train_steps)} {}
};

struct EpochFigures {
  int64_t epoch = 0;        // 0-based
  double wall_seconds = 0;  // the epoch's training loop, without evaluation
  int64_t samples = 0;      // all ranks
  int64_t steps = 0;
  // Allreduce time measured this epoch, the part of it backward did not hide, and its bytes.
  double comm_seconds = 0, exposed_seconds = 0;
  uint64_t comm_bytes = 0;
  std::string where;  // after "N steps in T s" in the log line, e.g. " on the GPU (bf16)"
};

class RunReport {
 public:
  RunReport(int rank, int world, int64_t epochs, int64_t first_epoch, TrainerMetrics* metrics)
      : rank_(rank), world_(world), epochs_(epochs), first_epoch_(first_epoch), metrics_(metrics) {}

  // `totals` summed over ranks: sets the summary's accuracy and losses, the gauges, and logs.
  void endEpoch(const EpochFigures& e, const EpochTotals& totals, TrainSummary* summary);
  // A run that resumed at `pos` with nothing left to train: `totals` evaluated the restored
  // model (no training figures). Sets the summary's epochs and test figures, the gauges, logs.
  void endRestored(const Position& pos, const EpochTotals& totals, TrainSummary* summary);
  // Throughput and allreduce figures of the whole run; calls and bytes count every allreduce.
  void finish(int64_t steps, uint64_t allreduce_calls, uint64_t allreduce_bytes,
              TrainSummary* summary) const;
  double trainSeconds() const { return train_wall_; }

 private:
  const int rank_, world_;
  const int64_t epochs_, first_epoch_;
  TrainerMetrics* metrics_;
  double train_wall_ = 0, steady_wall_ = 0;
  int64_t samples_ = 0, steady_samples_ = 0;
  double comm_seconds_ = 0, exposed_seconds_ = 0;
  uint64_t comm_bytes_ = 0;
};

}  // namespace ringmaster::trainer
