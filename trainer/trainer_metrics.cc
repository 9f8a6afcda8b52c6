#include "trainer/trainer_metrics.h"

namespace ringmaster::trainer {

TrainerMetrics::Allreduce& TrainerMetrics::allreduce(const std::string& algorithm) {
  auto [it, added] = allreduce_by_algorithm_.try_emplace(algorithm);
  if (added) {
    const metrics::Labels labels = {{"backend", backend_}, {"algorithm", algorithm}};
    it->second.seconds = &allreduce_seconds_->Add(labels, metrics::exponentialBuckets(1e-5, 2, 20));
    it->second.bytes = &allreduce_bytes_->Add(labels);
  }
  return it->second;
}

core::Result<TrainerMetrics> TrainerMetrics::create(metrics::Registry& r,
                                                    const std::string& backend,
                                                    int pipeline_stage) {
  TrainerMetrics m;
  const metrics::Labels by_backend = {{"backend", backend}};
  RM_ASSIGN_OR_RETURN(auto samples, r.counter("ringmaster_trainer_samples_total",
                                              "Training samples processed by this rank"));
  m.samples = &samples->Add({});
  RM_ASSIGN_OR_RETURN(auto steps, r.counter("ringmaster_trainer_steps_total", "Optimizer steps"));
  m.steps = &steps->Add({});
  RM_ASSIGN_OR_RETURN(auto step_seconds, r.histogram("ringmaster_trainer_step_seconds",
                                                     "Wall time of one training step"));
  m.step_seconds = &step_seconds->Add({}, metrics::exponentialBuckets(0.0005, 2, 16));
  RM_ASSIGN_OR_RETURN(auto loss, r.gauge("ringmaster_trainer_loss",
                                         "Mean training loss of the last logged interval"));
  m.loss = &loss->Add({});
  RM_ASSIGN_OR_RETURN(auto acc, r.gauge("ringmaster_trainer_test_accuracy_ratio",
                                        "Test-set accuracy after the last epoch (0..1)"));
  m.accuracy = &acc->Add({});
  RM_ASSIGN_OR_RETURN(auto epoch, r.gauge("ringmaster_trainer_epoch", "Current epoch (1-based)"));
  m.epoch = &epoch->Add({});
  RM_ASSIGN_OR_RETURN(auto sps, r.gauge("ringmaster_trainer_samples_per_second",
                                        "Global training throughput over the last epoch"));
  m.samples_per_second = &sps->Add({});
  RM_ASSIGN_OR_RETURN(auto checkpoints, r.counter("ringmaster_trainer_checkpoints_total",
                                                  "Checkpoints written by this rank"));
  m.checkpoints = &checkpoints->Add({});
  RM_ASSIGN_OR_RETURN(auto ckpt_seconds, r.histogram("ringmaster_trainer_checkpoint_seconds",
                                                     "Wall time of writing one checkpoint"));
  m.checkpoint_seconds = &ckpt_seconds->Add({}, metrics::exponentialBuckets(0.001, 2, 16));
  RM_ASSIGN_OR_RETURN(auto tuned, r.counter("ringmaster_trainer_autotune_samples_total",
                                            "Settings autotune has measured"));
  m.autotune_samples = &tuned->Add({});
  RM_ASSIGN_OR_RETURN(auto sample, r.gauge("ringmaster_trainer_autotune_sample_step_seconds",
                                           "Median step time of autotune's last sample"));
  m.autotune_sample_seconds = &sample->Add({});
  RM_ASSIGN_OR_RETURN(m.autotune_setting,
                      r.gauge("ringmaster_trainer_autotune_setting",
                              "The value of each knob training runs under (MiB for bucket caps)"));
  RM_ASSIGN_OR_RETURN(auto pbt_objective,
                      r.gauge("ringmaster_trainer_pbt_objective",
                              "A pbt member's objective at its last round (0 outside pbt)"));
  m.pbt_objective = &pbt_objective->Add({});
  RM_ASSIGN_OR_RETURN(auto exploits,
                      r.counter("ringmaster_trainer_pbt_exploits_total",
                                "Rounds at which this pbt member took another member's weights"));
  m.pbt_exploits = &exploits->Add({});
  m.backend_ = backend;
  RM_ASSIGN_OR_RETURN(m.allreduce_seconds_, r.histogram("ringmaster_trainer_allreduce_seconds",
                                                        "Wall time of one bucket allreduce"));
  RM_ASSIGN_OR_RETURN(m.allreduce_bytes_, r.counter("ringmaster_trainer_allreduce_bytes_total",
                                                    "Bytes allreduced by this rank"));
  RM_ASSIGN_OR_RETURN(auto busbw,
                      r.gauge("ringmaster_trainer_allreduce_bus_bandwidth_bytes_per_second",
                              "Allreduce bus bandwidth (nccl-tests formula) over the last epoch"));
  m.bus_bandwidth = &busbw->Add(by_backend);
  RM_ASSIGN_OR_RETURN(auto overlap, r.gauge("ringmaster_trainer_comm_overlap_ratio",
                                            "Share of allreduce time hidden behind backward"));
  m.overlap_ratio = &overlap->Add({});
  RM_ASSIGN_OR_RETURN(auto hidden, r.counter("ringmaster_trainer_comm_hidden_seconds_total",
                                             "Allreduce time that overlapped with compute"));
  m.comm_hidden_seconds = &hidden->Add({});
  RM_ASSIGN_OR_RETURN(auto exposed, r.counter("ringmaster_trainer_comm_exposed_seconds_total",
                                              "Time the training thread waited for allreduce"));
  m.comm_exposed_seconds = &exposed->Add({});
  if (pipeline_stage < 0) return m;

  const metrics::Labels stage = {{"stage", std::to_string(pipeline_stage)}};
  RM_ASSIGN_OR_RETURN(
      auto bubble,
      r.gauge("ringmaster_trainer_pipeline_bubble_ratio",
              "Share of the last epoch's pipeline schedule time this stage spent not computing"));
  m.pipeline.bubble_ratio = &bubble->Add(stage);
  RM_ASSIGN_OR_RETURN(auto compute,
                      r.counter("ringmaster_trainer_pipeline_compute_seconds_total",
                                "Forward, backward and loss time of this stage (and "
                                "PipeDream's updates between them, and the zeroing of its "
                                "gradients), less its tensor-parallel sums"));
  m.pipeline.compute_seconds = &compute->Add(stage);
  RM_ASSIGN_OR_RETURN(auto sent, r.counter("ringmaster_trainer_pipeline_send_bytes_total",
                                           "Activation and gradient bytes this stage sent"));
  m.pipeline.send_bytes = &sent->Add(stage);
  RM_ASSIGN_OR_RETURN(auto received,
                      r.counter("ringmaster_trainer_pipeline_recv_bytes_total",
                                "Activation and gradient bytes this stage received"));
  m.pipeline.recv_bytes = &received->Add(stage);
  RM_ASSIGN_OR_RETURN(auto send_wait,
                      r.counter("ringmaster_trainer_pipeline_send_wait_seconds_total",
                                "Time this stage waited for its sends to finish"));
  m.pipeline.send_wait_seconds = &send_wait->Add(stage);
  RM_ASSIGN_OR_RETURN(auto recv_wait,
                      r.counter("ringmaster_trainer_pipeline_recv_wait_seconds_total",
                                "Time this stage waited for activations or gradients"));
  m.pipeline.recv_wait_seconds = &recv_wait->Add(stage);
  RM_ASSIGN_OR_RETURN(auto activations,
                      r.gauge("ringmaster_trainer_pipeline_activation_bytes",
                              "Peak bytes of micro-batch activations this stage holds"));
  m.pipeline.activation_bytes = &activations->Add(stage);
  RM_ASSIGN_OR_RETURN(
      auto tensor_seconds,
      r.counter("ringmaster_trainer_pipeline_tensor_sum_seconds_total",
                "Time this stage summed its split layers' results over its tensor-parallel group"));
  m.pipeline.tensor_sum_seconds = &tensor_seconds->Add(stage);
  RM_ASSIGN_OR_RETURN(auto tensor_bytes,
                      r.counter("ringmaster_trainer_pipeline_tensor_sum_bytes_total",
                                "Bytes this stage summed over its tensor-parallel group"));
  m.pipeline.tensor_sum_bytes = &tensor_bytes->Add(stage);
  return m;
}

}  // namespace ringmaster::trainer
