#pragma once
// The trainer's Prometheus metrics. Labels trainingjob and rank are constant labels of the
// registry; allreduce metrics carry the backend (the transport) and, per call, the algorithm
// that ran (Communicator::allreduceAlgorithm).
//
// Ownership: references point into the rm::metrics::Registry passed to create(), which must
// outlive this struct. Thread-safety: prometheus-cpp metrics are thread-safe.

#include <map>
#include <memory>
#include <string>

#include "ringmaster/metrics/metrics.h"

namespace ringmaster::trainer {

struct TrainerMetrics {
  prometheus::Counter* samples = nullptr;           // ringmaster_trainer_samples_total
  prometheus::Counter* steps = nullptr;             // ringmaster_trainer_steps_total
  prometheus::Histogram* step_seconds = nullptr;    // ringmaster_trainer_step_seconds
  prometheus::Gauge* loss = nullptr;                // ringmaster_trainer_loss
  prometheus::Gauge* accuracy = nullptr;            // ringmaster_trainer_test_accuracy_ratio
  prometheus::Gauge* epoch = nullptr;               // ringmaster_trainer_epoch
  prometheus::Gauge* samples_per_second = nullptr;  // ringmaster_trainer_samples_per_second
  prometheus::Gauge* bus_bandwidth =
      nullptr;  // ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second
  prometheus::Gauge* overlap_ratio = nullptr;  // ringmaster_trainer_comm_overlap_ratio
  prometheus::Counter* comm_hidden_seconds =
      nullptr;  // ringmaster_trainer_comm_hidden_seconds_total
  prometheus::Counter* comm_exposed_seconds =
      nullptr;                                 // ringmaster_trainer_comm_exposed_seconds_total
  prometheus::Counter* checkpoints = nullptr;  // ringmaster_trainer_checkpoints_total
  prometheus::Histogram* checkpoint_seconds = nullptr;  // ringmaster_trainer_checkpoint_seconds
  // Autotune: samples measured, each sample's median step time, and the setting training runs
  // under (the one being measured while the search runs, the chosen one after).
  prometheus::Counter* autotune_samples = nullptr;  // ringmaster_trainer_autotune_samples_total
  prometheus::Gauge* autotune_sample_seconds =
      nullptr;  // ringmaster_trainer_autotune_sample_step_seconds
  // ringmaster_trainer_autotune_setting{knob}: a series per knob of the engine autotune tunes.
  prometheus::Family<prometheus::Gauge>* autotune_setting = nullptr;
  // A population-based training member's objective as it reported it at its last round, and
  // the rounds at which it took another member's weights.
  prometheus::Gauge* pbt_objective = nullptr;   // ringmaster_trainer_pbt_objective
  prometheus::Counter* pbt_exploits = nullptr;  // ringmaster_trainer_pbt_exploits_total

  // A pipeline stage's (null unless create() was told this rank is one):
  struct Pipeline {
    prometheus::Gauge* bubble_ratio = nullptr;         // ringmaster_trainer_pipeline_bubble_ratio
    prometheus::Counter* compute_seconds = nullptr;    // ..._pipeline_compute_seconds_total
    prometheus::Counter* send_bytes = nullptr;         // ..._pipeline_send_bytes_total
    prometheus::Counter* recv_bytes = nullptr;         // ..._pipeline_recv_bytes_total
    prometheus::Counter* send_wait_seconds = nullptr;  // ..._pipeline_send_wait_seconds_total
    prometheus::Counter* recv_wait_seconds = nullptr;  // ..._pipeline_recv_wait_seconds_total
    prometheus::Gauge* activation_bytes = nullptr;     // ..._pipeline_activation_bytes
    // A tensor-parallel stage's sums of its split layers' results over its group (0 for a stage
    // whose layers are whole); not in compute_seconds.
    prometheus::Counter* tensor_sum_seconds = nullptr;  // ..._pipeline_tensor_sum_seconds_total
    prometheus::Counter* tensor_sum_bytes = nullptr;    // ..._pipeline_tensor_sum_bytes_total
  } pipeline;

  // One allreduce algorithm's series.
  struct Allreduce {
    prometheus::Histogram* seconds = nullptr;  // ringmaster_trainer_allreduce_seconds
    prometheus::Counter* bytes = nullptr;      // ringmaster_trainer_allreduce_bytes_total
  };
  // The series of allreduces that ran `algorithm`, made on first use. One thread at a time.
  Allreduce& allreduce(const std::string& algorithm);

  // `pipeline_stage` >= 0: this rank is that stage of a pipeline (its metrics carry it as the
  // label `stage`); -1: no pipeline metrics.
  static core::Result<TrainerMetrics> create(metrics::Registry& registry,
                                             const std::string& backend, int pipeline_stage = -1);

 private:
  std::string backend_;
  prometheus::Family<prometheus::Histogram>* allreduce_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* allreduce_bytes_ = nullptr;
  std::map<std::string, Allreduce> allreduce_by_algorithm_;
};

}  // namespace ringmaster::trainer
