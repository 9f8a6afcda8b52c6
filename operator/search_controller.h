#pragma once
// SearchController: the operator runtime around the SearchReconciler, as Controller is around
// the TrainingJob Reconciler: informers for Experiments and for the TrainingJobs labelled
// ringmaster.dev/experiment (their trials; a trial's change enqueues its controlling
// Experiment), a deduplicating work queue and worker threads. Workers start once both informers
// listed once, so a fresh operator never counts trials from an empty cache.
//
// Ownership: borrows the ApiClient, EventRecorder, Clock and metrics (all must outlive it); owns
// the informers, queue, reconciler and threads. Thread-safety: run() once from one thread; synced()
// from any. Failure: API errors are logged and retried with backoff; they never stop it.

#include <atomic>
#include <memory>
#include <stop_token>
#include <string>

#include "operator/search_reconciler.h"
#include "ringmaster/kube/workqueue.h"

namespace ringmaster::op {

class SearchController {
 public:
  struct Options {
    std::string namespace_name;  // "" = all namespaces
    int workers = 2;
    ValidateOptions validate;
    std::chrono::milliseconds informer_poll{1'000};
    OperatorMetrics* metrics = nullptr;  // borrowed; each search's series and reconcile times
  };

  SearchController(kube::ApiClient& client, kube::EventRecorder& events, kube::Clock& clock,
                   Options options);
  ~SearchController();

  void run(std::stop_token stop);
  bool synced() const { return experiments_synced_ && trials_synced_; }

 private:
  kube::ApiClient& client_;
  Options options_;
  kube::WorkQueue queue_;
  std::atomic<bool> experiments_synced_{false}, trials_synced_{false};
  std::unique_ptr<kube::Reflector<kube::Experiment>> experiments_;
  std::unique_ptr<kube::Reflector<kube::TrainingJob>> trials_;
  std::unique_ptr<SearchReconciler> reconciler_;
};

}  // namespace ringmaster::op
