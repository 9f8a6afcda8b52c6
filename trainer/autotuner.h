#pragma once
// Autotune inside a run (spec.trainer.autotune): rank 0 runs the TuningSession
// (trainer/autotune) on its own step times, which the step's collectives make the slowest
// rank's, and at the end of every sample sends its decision to every rank in one small
// allreduce; every rank then applies it between the same two steps: a new gradient bucket plan
// (data parallelism), or stages rebuilt for another micro-batch count (a pipeline), and the
// BLAS threads where a process has cores to spare. The steps trained while tuning count like
// any other. Rank 0 logs every sample, writes it to the CSV log when one is asked for
// (Horovod's HOROVOD_AUTOTUNE_LOG columns: the knobs, then the measure), and once the search
// ends writes the choice to the checkpoint directory, so that a restarted
// run trains on it at once instead of tuning again (unless retune).
//
// Thread-safety: the training thread, between steps (the buckets' communication thread is idle
// then). Failure: a broadcast's error names the rank and the step; the CSV log and the choice
// file name their path.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "trainer/autotune/coordinate_search.h"
#include "trainer/comm/communicator.h"
#include "trainer/trainer_metrics.h"

namespace ringmaster::trainer {

// A setting by knob name: {"bucketCapMB": 4, "firstBucketCapMB": 1}, {"microBatches": 8}.
using AutotuneValues = std::map<std::string, double>;

// What autotune chose, for the run's summary and the checkpoint.
struct AutotuneChoice {
  AutotuneValues values;
  int samples = 0;             // measured in this run (0: taken from the checkpoint)
  double default_seconds = 0;  // median step time under the configured setting
  double best_seconds = 0;     // under the chosen one
  int64_t step = 0;            // the step after which training ran under the choice
  bool from_checkpoint = false;
  // The value of `knob`, 0 when the choice has none.
  double value(const std::string& knob) const {
    const auto it = values.find(knob);
    return it == values.end() ? 0 : it->second;
  }
};

// "autotune.json": the choice beside the checkpoints.
inline constexpr char kAutotuneChoiceFile[] = "autotune.json";

// The data-parallel engine's space: its bucket caps over the spec's lists, or the default
// grids for a model of `model_bytes` gradient bytes.
std::vector<autotune::Knob> bucketSpace(const contract::TrainerSettings& settings,
                                        size_t model_bytes);
// A pipeline's: its micro-batch count over the spec's list, or the default grid.
std::vector<autotune::Knob> microBatchSpace(const contract::TrainerSettings& settings);
// The transport's knobs: tcp's recursive-doubling threshold over the spec's list or the default
// grid, starting at the one the transport runs with (tcpDoublingMaxKB, or its own), which is
// added; none for other backends.
std::vector<autotune::Knob> transportSpace(const contract::TrainerSettings& settings,
                                           const comm::Communicator& comm);

class Autotuner {
 public:
  // Makes the engine run under these values of its knobs from the next step on.
  using Apply = std::function<core::Status(const AutotuneValues& values)>;

  // Tunes the engine's `knobs` (every rank passes the same) and the process's BLAS threads, up
  // to the fewest `blas_cores` of any rank (trainer/cpu_share.h; 0: unknown, not searched), or,
  // where the checkpoint directory holds a choice of the same knobs (and not retune), applies
  // it. A knob of one value has nothing to search and is left out; with none left it tunes
  // nothing and chooses nothing. Every rank calls it.
  static core::Result<std::unique_ptr<Autotuner>> start(const contract::TrainerSettings& settings,
                                                        comm::Communicator& comm,
                                                        std::vector<autotune::Knob> knobs,
                                                        int blas_cores, Apply apply,
                                                        TrainerMetrics* metrics);
  ~Autotuner();

  // A step just finished in `seconds`; `step` steps are done. Every rank calls it after every
  // step; at a sample's end the ranks agree on the next setting.
  core::Status afterStep(double seconds, int64_t step);
  bool tuning() const;
  // Set once the search ended (or the checkpoint's choice was applied).
  const std::optional<AutotuneChoice>& choice() const;

 private:
  struct State;
  explicit Autotuner(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ringmaster::trainer
