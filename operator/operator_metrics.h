#pragma once
// The operator's Prometheus metrics, registered on an rm::metrics Registry:
//   ringmaster_operator_jobs_created_total / _succeeded_total / _failed_total / _restarted_total
//   ringmaster_operator_reconcile_seconds           histogram
//   ringmaster_operator_reconcile_errors_total
//   ringmaster_operator_workqueue_depth             gauge (ready keys)
//   ringmaster_operator_api_requests_total{verb,code} (code "error" for transport failures)
//   ringmaster_operator_watch_restarts_total        every watch (re)opened
//   ringmaster_operator_leader                      1 while this replica leads
//
// Ownership: the Registry owns the metric families; OperatorMetrics holds pointers into them
// and must not outlive it. Thread-safety: every method is thread-safe (prometheus-cpp metrics and
// Family::Add are). Failure: create() fails on a bad name.

#include <chrono>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/metrics/metrics.h"

namespace ringmaster::op {

class OperatorMetrics {
 public:
  static core::Result<std::unique_ptr<OperatorMetrics>> create(metrics::Registry& registry);

  void jobCreated() { created_->Increment(); }
  void jobSucceeded() { succeeded_->Increment(); }
  void jobFailed() { failed_->Increment(); }
  void jobRestarted() { restarted_->Increment(); }
  void reconciled(std::chrono::duration<double> took, bool ok) {
    reconcile_seconds_->Observe(took.count());
    if (!ok) reconcile_errors_->Increment();
  }
  void workqueueDepth(size_t depth) { depth_->Set(static_cast<double>(depth)); }
  void apiRequest(std::string_view verb, int code);  // code 0: transport error
  void watchStarted() { watch_restarts_->Increment(); }
  void leader(bool is_leader) { leader_->Set(is_leader ? 1 : 0); }

 private:
  OperatorMetrics() = default;
  prometheus::Counter* created_ = nullptr;
  prometheus::Counter* succeeded_ = nullptr;
  prometheus::Counter* failed_ = nullptr;
  prometheus::Counter* restarted_ = nullptr;
  prometheus::Histogram* reconcile_seconds_ = nullptr;
  prometheus::Counter* reconcile_errors_ = nullptr;
  prometheus::Gauge* depth_ = nullptr;
  prometheus::Family<prometheus::Counter>* api_requests_ = nullptr;
  prometheus::Counter* watch_restarts_ = nullptr;
  prometheus::Gauge* leader_ = nullptr;
};

}  // namespace ringmaster::op
