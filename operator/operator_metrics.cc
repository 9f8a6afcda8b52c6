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
  return m;
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
