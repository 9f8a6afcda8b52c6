#pragma once
// Training progress read from rank 0's trainer: HTTP GET http://<pod IP>:<metrics port>/metrics
// and the ringmaster_trainer_* gauges of the Prometheus text format (trainer/trainer_metrics.cc):
//   ringmaster_trainer_epoch                                   -> epoch
//   ringmaster_trainer_steps_total                             -> step
//   ringmaster_trainer_loss                                    -> loss
//   ringmaster_trainer_samples_per_second                      -> samplesPerSecond
//   ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second -> allreduceBusBandwidth
// Gauges still at 0 (epoch, loss, samples/s, bandwidth: the trainer sets them after its first
// measurement) stay unset rather than showing a loss of 0.
// When rank 0's pod succeeds, its final summary replaces the last scrape: the launcher leaves
// the trainer's --summary-json in the pod's termination message (parseTrainerSummary).
// ProgressSource is the seam: the reconciler reads through it and tests fake it.
//
// Thread-safety: parsePrometheusText is pure; HttpProgressSource::read may be called from many
// threads at once (one connection per call). Failure: read() returns Unavailable naming the
// address on connect/timeout/HTTP errors; a body without any trainer metric is NotFound.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// Where rank 0's metrics are served: pod IP and port.
using ProgressAddress = std::pair<std::string, int>;

class ProgressSource {
 public:
  using ChangeListener = std::function<void(const ProgressAddress&)>;

  virtual ~ProgressSource() = default;
  // The newest reading of host:port. A source that reads in the background (ProgressPoller)
  // watches the address from the first call on, until forget().
  virtual core::Result<kube::TrainingProgress> read(const std::string& host, int port) = 0;
  // No reader wants host:port any more.
  virtual void forget(const std::string& /*host*/, int /*port*/) {}
  // A background source calls `listener` with each address whose successful reading differs
  // from the one before, so that a reader need not ask again and again to notice a change, and
  // says so by returning true; the others return false (ask read() for a fresh reading).
  // nullptr unsubscribes, and returns once a call in progress has.
  virtual bool onChange(ChangeListener /*listener*/) { return false; }
};

// The trainer metrics found in `text` (absent ones stay unset); NotFound when there are none.
core::Result<kube::TrainingProgress> parsePrometheusText(std::string_view text);

// The progress in rank 0's final summary (trainer/trainer.cc writeSummaryJson):
//   epochs -> epoch, steps -> step, finalTrainLoss -> loss, samplesPerSecond,
//   testAccuracy, allreduce.busBandwidthBytesPerSecond -> allreduceBusBandwidth,
//   resumedFromStep (when not -1),
// rounded as the scrape is. InvalidArgument for text that is not a JSON object or is longer than
// a termination message may be; a field of the wrong type is InvalidArgument naming it; NotFound
// when no field is there (not a summary).
core::Result<kube::TrainingProgress> parseTrainerSummary(std::string_view text);

// `progress` with every field `final_figures` has replaced by it.
kube::TrainingProgress mergeProgress(const std::optional<kube::TrainingProgress>& progress,
                                     const kube::TrainingProgress& final_figures);

class HttpProgressSource : public ProgressSource {
 public:
  explicit HttpProgressSource(std::chrono::milliseconds timeout = std::chrono::seconds(1))
      : timeout_(timeout) {}
  core::Result<kube::TrainingProgress> read(const std::string& host, int port) override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace ringmaster::op
