#pragma once
// Data-parallel training of one rank on the CPU, run by the training loop (training_loop.h)
// with the CPU step engine: sharded batches, forward/backward, gradient
// buckets allreduced while backward runs, optimizer step, periodic checkpoints (rank 0), an
// evaluation on the test set after every epoch (sharded across ranks, counts allreduced).
//
// Resuming: rank 0 loads the newest valid checkpoint from checkpoint.path and broadcasts
// parameters, optimizer state and position (epoch, step in epoch) to every rank, so only rank 0
// needs to see the checkpoint volume. Without one, rank 0's initial parameters are broadcast.
//
// Ownership: borrows everything in TrainerContext (it must outlive run()).
// Thread-safety: one Trainer per rank; ranks may be threads of one process (tests).
// Failure: run() returns the first error (communication, checkpoint I/O, stop requested) with
// the rank in the message.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "trainer/autotuner.h"
#include "trainer/comm/communicator.h"
#include "trainer/config.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device_stage.h"
#include "trainer/pbt/member.h"
#include "trainer/trainer_metrics.h"

namespace ringmaster::trainer {

namespace model {
class ModelStage;
}

struct TrainSummary {
  int64_t epochs = 0;              // epochs completed (including ones done before a resume)
  int64_t steps = 0;               // global optimizer steps completed
  int64_t resumed_from_step = -1;  // -1: fresh start
  // Absent where nothing measured them: throughput and train loss when this run trained no step
  // (it resumed at the end of training), test figures when no evaluation ran.
  std::optional<double> samples_per_second;  // global (all ranks), training time only
  // The same without the first epoch of this run (start-up: CUDA graph capture, GEMM plans,
  // caches); equal to samples_per_second when the run had one epoch.
  std::optional<double> steady_samples_per_second;
  std::optional<double> final_train_loss;  // mean over the last epoch that trained, all ranks
  std::optional<double> test_accuracy;     // after the last epoch (or of the restored model)
  std::optional<double> test_loss;
  int world_size = 1;
  std::string backend;
  std::string device = "cpu";  // cpu | cuda
  std::string precision = "fp32";
  std::string model_signature;
  uint64_t allreduce_calls = 0;
  uint64_t allreduce_bytes = 0;
  double allreduce_seconds = 0;
  double allreduce_bus_bandwidth = 0;  // bytes/s, over the whole run
  double comm_hidden_seconds = 0;
  double comm_exposed_seconds = 0;
  double overlap_ratio = 0;
  double train_seconds = 0;
  // What autotune chose (spec.trainer.autotune), when it ran or a checkpoint held its choice.
  std::optional<AutotuneChoice> autotune;
  // A population-based training member's (spec.trainer.pbt): its name, every exploit it made
  // (whose weights, which values, when), the values it ended on, and the time its rounds took
  // (checkpoint, waiting for the others, loading another's weights).
  std::string pbt_member;
  std::vector<pbt::LineageEntry> pbt_lineage;
  search::Assignment pbt_parameters;
  double pbt_round_seconds = 0;
};

// Builds a communicator over some ranks of the world (the data-parallel replicas of one
// pipeline stage): every member calls it with the same `name` (which keeps groups' rendezvous
// apart), its rank in the group and the group's size.
using GroupFactory = std::function<core::Result<std::unique_ptr<comm::Communicator>>(
    const std::string& name, int rank, int size)>;

// The GPU copy of a host pipeline stage with `slots` micro-batches in flight (DeviceStage).
using DeviceStageFactory =
    std::function<core::Result<std::unique_ptr<DeviceStage>>(model::ModelStage& host, int slots)>;

struct TrainerContext {
  comm::Communicator* comm = nullptr;
  GroupFactory make_group;  // needed by pipelines with more than one replica
  // Set where the rank trains on a GPU: its pipeline stage runs there (pipeline_trainer.h).
  DeviceStageFactory make_device_stage;
  const data::Dataset* train = nullptr;
  const data::Dataset* test = nullptr;
  const core::StopSource* stop = nullptr;  // optional
  TrainerMetrics* metrics = nullptr;       // optional
  bool progress_bar = false;               // live bar on stdout (rank 0, when a terminal)
  // The cores this rank's BLAS may keep busy (cpu_share.h), the top of autotune's BLAS threads;
  // 0: unknown (ranks as threads of one process share one BLAS: not tuned).
  int blas_cores = 0;
};

class Trainer {
 public:
  Trainer(contract::TrainerSettings settings, TrainerContext context);
  ~Trainer();
  core::Result<TrainSummary> run();
  // Final parameters (after run()); tests compare them across world sizes.
  std::vector<float> parameters() const;

 private:
  struct State;
  contract::TrainerSettings settings_;
  TrainerContext ctx_;
  std::unique_ptr<State> state_;
};

// Writes `summary` as one JSON object to `path` (atomically: temp file + rename).
core::Status writeSummaryJson(const TrainSummary& summary, const std::string& path);

}  // namespace ringmaster::trainer
