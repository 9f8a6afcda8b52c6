#include "operator/operator_metrics.h"

namespace ringmaster::op {

core::Result<std::unique_ptr<OperatorMetrics>> OperatorMetrics::create(metrics::Registry& r) {
  std::unique_ptr<OperatorMetrics> m(new OperatorMetrics());
  RM_ASSIGN_OR_RETURN(m->created_,
                      r.counter("ringmaster_operator_jobs_created_total",
                                "TrainingJobs whose first pods were created, by namespace"));
  RM_ASSIGN_OR_RETURN(m->succeeded_, r.counter("ringmaster_operator_jobs_succeeded_total",
                                               "TrainingJobs that succeeded, by namespace"));
  RM_ASSIGN_OR_RETURN(m->failed_, r.counter("ringmaster_operator_jobs_failed_total",
                                            "TrainingJobs that failed, by namespace"));
  RM_ASSIGN_OR_RETURN(m->restarted_, r.counter("ringmaster_operator_jobs_restarted_total",
                                               "Gang restarts of TrainingJobs, by namespace"));
  RM_ASSIGN_OR_RETURN(auto seconds, r.histogram("ringmaster_operator_reconcile_seconds",
                                                "Wall time of one reconcile"));
  m->reconcile_seconds_ = &seconds->Add({}, metrics::exponentialBuckets(0.0001, 2, 18));
  RM_ASSIGN_OR_RETURN(auto errors, r.counter("ringmaster_operator_reconcile_errors_total",
                                             "Reconciles that returned an error"));
  m->reconcile_errors_ = &errors->Add({});
  RM_ASSIGN_OR_RETURN(
      auto depth, r.gauge("ringmaster_operator_workqueue_depth", "Keys ready in the work queue"));
  m->depth_ = &depth->Add({});
  RM_ASSIGN_OR_RETURN(m->api_requests_, r.counter("ringmaster_operator_api_requests_total",
                                                  "Kubernetes API requests by verb and HTTP code"));
  RM_ASSIGN_OR_RETURN(auto watches, r.counter("ringmaster_operator_watch_restarts_total",
                                              "Watches opened (first ones and restarts)"));
  m->watch_restarts_ = &watches->Add({});
  RM_ASSIGN_OR_RETURN(auto leader, r.gauge("ringmaster_operator_leader",
                                           "1 while this operator holds the leader Lease"));
  m->leader_ = &leader->Add({});
  RM_ASSIGN_OR_RETURN(m->job_phase_,
                      r.gauge("ringmaster_operator_job_phase",
                              "1 for the TrainingJob's current phase (status.phase)"));
  RM_ASSIGN_OR_RETURN(m->job_world_size_,
                      r.gauge("ringmaster_operator_job_world_size",
                              "Ranks in the TrainingJob's world (status.worldSize)"));
  RM_ASSIGN_OR_RETURN(m->job_restarts_,
                      r.gauge("ringmaster_operator_job_restarts",
                              "Gang restarts of the TrainingJob so far (status.restarts)"));
  RM_ASSIGN_OR_RETURN(m->experiment_trials_,
                      r.gauge("ringmaster_operator_experiment_trials",
                              "An Experiment's trials by state (planned, created, running, "
                              "succeeded, failed)"));
  RM_ASSIGN_OR_RETURN(m->experiment_best_,
                      r.gauge("ringmaster_operator_experiment_best_objective",
                              "The objective of an Experiment's best trial so far"));
  return m;
}

void OperatorMetrics::jobObserved(const std::string& key, const kube::TrainingJobStatus& status) {
  const size_t slash = key.find('/');
  const prometheus::Labels labels{{"namespace", key.substr(0, slash)},
                                  {"trainingjob", key.substr(slash + 1)}};
  const std::string phase = status.phase.value_or("Pending");
  std::lock_guard lock(jobs_mu_);
  JobSeries& series = jobs_[key];
  if (series.phase != nullptr && series.phase_name != phase) {
    job_phase_->Remove(series.phase);
    series.phase = nullptr;
  }
  if (series.phase == nullptr) {
    prometheus::Labels with_phase = labels;
    with_phase["phase"] = phase;
    series.phase = &job_phase_->Add(with_phase);
    series.phase->Set(1);
    series.phase_name = phase;
  }
  if (series.world_size == nullptr) series.world_size = &job_world_size_->Add(labels);
  series.world_size->Set(status.world_size.value_or(0));
  if (series.restarts == nullptr) series.restarts = &job_restarts_->Add(labels);
  series.restarts->Set(status.restarts.value_or(0));
}

void OperatorMetrics::jobForgotten(const std::string& key) {
  std::lock_guard lock(jobs_mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  if (it->second.phase) job_phase_->Remove(it->second.phase);
  if (it->second.world_size) job_world_size_->Remove(it->second.world_size);
  if (it->second.restarts) job_restarts_->Remove(it->second.restarts);
  jobs_.erase(it);
}

void OperatorMetrics::experimentObserved(const std::string& key,
                                         const kube::ExperimentStatus& status,
                                         const std::string& metric) {
  const size_t slash = key.find('/');
  const prometheus::Labels labels{{"namespace", key.substr(0, slash)},
                                  {"experiment", key.substr(slash + 1)}};
  const std::pair<const char*, std::optional<int32_t>> counts[] = {
      {"planned", status.trials},
      {"created", status.trials_created},
      {"running", status.trials_running},
      {"succeeded", status.trials_succeeded},
      {"failed", status.trials_failed}};
  std::lock_guard lock(jobs_mu_);
  ExperimentSeries& series = experiments_[key];
  for (const auto& [state, count] : counts) {
    prometheus::Gauge*& gauge = series.trials[state];
    if (gauge == nullptr) {
      prometheus::Labels with_state = labels;
      with_state["state"] = state;
      gauge = &experiment_trials_->Add(with_state);
    }
    gauge->Set(count.value_or(0));
  }
  const bool has_best = status.best_trial && status.best_trial->objective;
  if (series.best != nullptr && (!has_best || series.best_metric != metric)) {
    experiment_best_->Remove(series.best);
    series.best = nullptr;
  }
  if (!has_best) return;
  if (series.best == nullptr) {
    prometheus::Labels with_metric = labels;
    with_metric["metric"] = metric;
    series.best = &experiment_best_->Add(with_metric);
    series.best_metric = metric;
  }
  series.best->Set(*status.best_trial->objective);
}

void OperatorMetrics::experimentForgotten(const std::string& key) {
  std::lock_guard lock(jobs_mu_);
  auto it = experiments_.find(key);
  if (it == experiments_.end()) return;
  for (auto& [state, gauge] : it->second.trials) experiment_trials_->Remove(gauge);
  if (it->second.best) experiment_best_->Remove(it->second.best);
  experiments_.erase(it);
}

OperatorMetrics::JobCounters OperatorMetrics::jobCounters(const std::string& ns) {
  const prometheus::Labels labels{{"namespace", ns}};
  return {&created_->Add(labels), &succeeded_->Add(labels), &failed_->Add(labels),
          &restarted_->Add(labels)};
}

void OperatorMetrics::apiRequest(std::string_view verb, int code) {
  // Family::Add is thread-safe and returns the existing series for known labels.
  api_requests_
      ->Add({{"verb", std::string(verb)}, {"code", code == 0 ? "error" : std::to_string(code)}})
      .Increment();
}

}  // namespace ringmaster::op
