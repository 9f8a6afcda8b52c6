#pragma once
// The operator's Prometheus metrics, registered on an rm::metrics Registry:
//   ringmaster_operator_jobs_created_total / _succeeded_total / _failed_total / _restarted_total
//       {namespace}: the TrainingJob's namespace (kube-state-metrics' convention for an
//       exporter that describes other objects: the chart's ServiceMonitor honours it), so that
//       a dashboard's $namespace means the same on these as on the trainers' series. A
//       namespace's four series start at 0 with its first job.
//   ringmaster_operator_reconcile_seconds           histogram
//   ringmaster_operator_reconcile_errors_total
//   ringmaster_operator_workqueue_depth             gauge (ready keys)
//   ringmaster_operator_api_requests_total{verb,code} (code "error" for transport failures)
//   ringmaster_operator_watch_restarts_total        every watch (re)opened
//   ringmaster_operator_leader                      1 while this replica leads
//   ringmaster_operator_job_phase{namespace,trainingjob,phase}   1, for the job's current phase
//   ringmaster_operator_job_world_size{namespace,trainingjob}    ranks in its world
//   ringmaster_operator_job_restarts{namespace,trainingjob}      gang restarts so far
//       What the operator knows of every job it manages, whatever program its pods run (a
//       user's own program serves no trainer metrics): a dashboard lists jobs from these. A
//       job's series go when it is deleted.
//   ringmaster_operator_experiment_trials{namespace,experiment,state}   an Experiment's trials by
//       state (planned: the search's size; created, running, succeeded, failed), from its status
//   ringmaster_operator_experiment_best_objective{namespace,experiment,metric}   the best trial's
//       objective so far (metric testAccuracy or loss); absent until a trial finished with one
//       Each search's series go when its Experiment is deleted.
//
// Ownership: the Registry owns the metric families; OperatorMetrics holds pointers into them
// and must not outlive it. Thread-safety: every method is thread-safe (prometheus-cpp metrics and
// Family::Add are). Failure: create() fails on a bad name.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/experiment.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/metrics/metrics.h"

namespace ringmaster::op {

class OperatorMetrics {
 public:
  static core::Result<std::unique_ptr<OperatorMetrics>> create(metrics::Registry& registry);

  void jobCreated(const std::string& ns) { jobCounters(ns).created->Increment(); }
  void jobSucceeded(const std::string& ns) { jobCounters(ns).succeeded->Increment(); }
  void jobFailed(const std::string& ns) { jobCounters(ns).failed->Increment(); }
  void jobRestarted(const std::string& ns) { jobCounters(ns).restarted->Increment(); }
  void reconciled(std::chrono::duration<double> took, bool ok) {
    reconcile_seconds_->Observe(took.count());
    if (!ok) reconcile_errors_->Increment();
  }
  void workqueueDepth(size_t depth) { depth_->Set(static_cast<double>(depth)); }
  void apiRequest(std::string_view verb, int code);  // code 0: transport error
  void watchStarted() { watch_restarts_->Increment(); }
  void leader(bool is_leader) { leader_->Set(is_leader ? 1 : 0); }
  // The job `key` ("<namespace>/<name>") as its status now says.
  void jobObserved(const std::string& key, const kube::TrainingJobStatus& status);
  // The job `key` is gone: its series are removed.
  void jobForgotten(const std::string& key);
  // The Experiment `key` ("<namespace>/<name>") as its status now says; `metric` names its
  // objective.
  void experimentObserved(const std::string& key, const kube::ExperimentStatus& status,
                          const std::string& metric);
  // The Experiment `key` is gone: its series are removed.
  void experimentForgotten(const std::string& key);

 private:
  struct JobCounters {
    prometheus::Counter *created, *succeeded, *failed, *restarted;
  };
  OperatorMetrics() = default;
  // The four job counters of namespace `ns`, every one created (at 0) with the first.
  JobCounters jobCounters(const std::string& ns);

  prometheus::Family<prometheus::Counter>* created_ = nullptr;
  prometheus::Family<prometheus::Counter>* succeeded_ = nullptr;
  prometheus::Family<prometheus::Counter>* failed_ = nullptr;
  prometheus::Family<prometheus::Counter>* restarted_ = nullptr;
  prometheus::Histogram* reconcile_seconds_ = nullptr;
  prometheus::Counter* reconcile_errors_ = nullptr;
  prometheus::Gauge* depth_ = nullptr;
  prometheus::Family<prometheus::Counter>* api_requests_ = nullptr;
  prometheus::Counter* watch_restarts_ = nullptr;
  prometheus::Gauge* leader_ = nullptr;
  prometheus::Family<prometheus::Gauge>* job_phase_ = nullptr;
  prometheus::Family<prometheus::Gauge>* job_world_size_ = nullptr;
  prometheus::Family<prometheus::Gauge>* job_restarts_ = nullptr;
  // Each job's series, so that a new phase or a deletion removes the old ones.
  struct JobSeries {
    prometheus::Gauge* phase = nullptr;
    std::string phase_name;
    prometheus::Gauge* world_size = nullptr;
    prometheus::Gauge* restarts = nullptr;
  };
  std::mutex jobs_mu_;
  std::map<std::string, JobSeries> jobs_;  // guarded by jobs_mu_
  prometheus::Family<prometheus::Gauge>* experiment_trials_ = nullptr;
  prometheus::Family<prometheus::Gauge>* experiment_best_ = nullptr;
  struct ExperimentSeries {
    std::map<std::string, prometheus::Gauge*> trials;  // by state
    prometheus::Gauge* best = nullptr;
    std::string best_metric;
  };
  std::map<std::string, ExperimentSeries> experiments_;  // guarded by jobs_mu_
};

}  // namespace ringmaster::op
