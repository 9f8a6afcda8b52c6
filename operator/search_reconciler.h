#pragma once
// SearchReconciler: one level-triggered pass over one Experiment, keyed "<namespace>/<name>":
//
//   load -> deleted or being deleted: nothing (the trials go with it: they are its children)
//        -> searchSettingsOf: refused -> Failed InvalidSpec naming each field; no trial made
//        -> observe its trials (TrainingJobs it controls, from the cache) -> decideSearch
//        -> create the new trials -> stop the running ones of an ended search
//        -> write status only if it changed -> Events and the search's metrics
//
// Trials are named by their index and AlreadyExists counts as success, so a restarted operator
// never duplicates one; status.trialsCreated records how many were made, so none is made twice
// either. A trial created but not yet in the cache is expected: a pass waits for it instead of
// counting it missing (the Experiment's own status write wakes the next pass sooner than the
// trial's watch event may arrive).
//
// Ownership: borrows the ApiClient, EventRecorder, Clock and metrics (all must outlive it); shares
// the caches. Thread-safety: reconcile() may run on many threads for different keys; the
// expectations are mutex-guarded. Failure: API errors are returned with context (the caller
// requeues with backoff); a refused spec is a Failed status, not an error.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "operator/reconciler.h"
#include "operator/search_settings.h"
#include "ringmaster/kube/experiment.h"

namespace ringmaster::op {

const kube::ResourceType& experimentsResource();

class SearchReconciler {
 public:
  struct Listers {
    std::shared_ptr<const kube::Store<kube::Experiment>> experiments;
    std::shared_ptr<const kube::Store<kube::TrainingJob>> trials;  // labelled kExperimentLabel
  };

  SearchReconciler(kube::ApiClient& client, Listers listers, kube::EventRecorder& events,
                   kube::Clock& clock, ValidateOptions options, OperatorMetrics* metrics = nullptr);

  core::Result<Action> reconcile(const std::string& key);

 private:
  // Trial names created by this operator and not yet seen in the cache, per Experiment key.
  bool awaitingCache(const std::string& key, const std::set<std::string>& seen);
  void expect(const std::string& key, const std::string& trial);

  kube::ApiClient& client_;
  Listers listers_;
  kube::EventRecorder& events_;
  kube::Clock& clock_;
  ValidateOptions options_;
  OperatorMetrics* metrics_;  // nullable
  std::mutex mu_;
  std::map<std::string, std::map<std::string, kube::Clock::TimePoint>> expected_;
};

}  // namespace ringmaster::op
