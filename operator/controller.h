#pragma once
// Controller: the operator runtime around the Reconciler (kube-runtime's watcher -> reflector ->
// queue -> controller):
//   informers  Reflectors for TrainingJobs and for the Pods, Services and ConfigMaps (not Secrets,
//              which the operator may not read)
//              labelled ringmaster.dev/job-name; a change to an owned object enqueues its
//              controller owner's key "<namespace>/<job>", a change to a job its own key
//   queue      kube::WorkQueue (deduplicating; one key never on two workers at once)
//   workers    N threads: reconcile(key) -> forget on success, addAfter(requeue), or
//              addRateLimited on error (with a log line)
// Workers start once every informer has listed once (synced()), so a fresh operator never acts
// on an empty cache.
//
// Ownership: borrows the ApiClient, EventRecorder, Clock, ProgressSource and metrics (all must
// outlive it); owns the informers, queue, reconciler and threads. Thread-safety: run() once from
// one thread; synced() and queueDepth() from any. Failure: API errors never stop it; they are
// logged and retried (informers back off, keys are re-queued with backoff).

#include <atomic>
#include <memory>
#include <stop_token>
#include <string>

#include "operator/reconciler.h"
#include "ringmaster/kube/workqueue.h"

namespace ringmaster::op {

class Controller {
 public:
  struct Options {
    std::string namespace_name;  // "" = all namespaces
    int workers = 2;
    Reconciler::Options reconciler;
    std::chrono::milliseconds informer_poll{1'000};
    // A pod's event reconciles its job this long after the first of a burst: the gang's pods
    // change together (created, scheduled, ready), and one pass over all of them writes one
    // status instead of one per pod. Job events are handled at once.
    std::chrono::milliseconds pod_batch_period{500};
  };

  Controller(kube::ApiClient& client, kube::EventRecorder& events, kube::Clock& clock,
             ProgressSource& progress, OperatorMetrics* metrics, Options options);
  ~Controller();

  // Runs informers and workers until `stop`; then shuts the queue down, lets the workers finish
  // the keys they hold, stops the informers and returns.
  void run(std::stop_token stop);

  bool synced() const;
  size_t queueDepth() const { return queue_.len(); }

 private:
  // An informer of the objects jobs own, whose store keeps what `project` makes of each.
  template <class T, class Cached>
  std::unique_ptr<kube::Reflector<T, Cached>> makeOwnedInformer(
      const kube::ResourceType& type, std::atomic<bool>& synced, std::chrono::milliseconds batch,
      typename kube::Reflector<T, Cached>::Project project);
  void enqueueOwner(const kube::ObjectMeta& meta, std::chrono::milliseconds after);

  kube::ApiClient& client_;
  kube::Clock& clock_;
  OperatorMetrics* metrics_;
  Options options_;
  kube::WorkQueue queue_;
  std::atomic<bool> jobs_synced_{false}, pods_synced_{false}, services_synced_{false},
      config_maps_synced_{false};
  std::unique_ptr<kube::Reflector<kube::TrainingJob>> jobs_;
  std::unique_ptr<kube::Reflector<kube::Pod, WorkerPod>> pods_;
  std::unique_ptr<kube::Reflector<kube::Service, OwnedChild>> services_;
  std::unique_ptr<kube::Reflector<kube::ConfigMap, OwnedChild>> config_maps_;
  std::unique_ptr<Reconciler> reconciler_;
};

}  // namespace ringmaster::op
