#include "operator/search_controller.h"

#include <thread>

#include "operator/builders.h"
#include "operator/cache_trim.h"
#include "operator/work_loop.h"
#include "ringmaster/core/log.h"

namespace ringmaster::op {

SearchController::SearchController(kube::ApiClient& client, kube::EventRecorder& events,
                                   kube::Clock& clock, Options options)
    : client_(client), options_(std::move(options)), queue_(clock) {
  kube::Watcher<kube::Experiment>::Options experiment_options;
  experiment_options.poll = options_.informer_poll;
  kube::Reflector<kube::Experiment>::Handler on_experiment;
  on_experiment.relisted = [this](std::vector<kube::Experiment> items,
                                  std::vector<kube::RawObject> undecodable) {
    for (const kube::Experiment& e : items) queue_.add(kube::objectKey(e));
    for (const kube::RawObject& e : undecodable) {
      RM_LOG(WARN, RECONCILE) << "experiment " << kube::objectKey(e)
                              << " does not decode; left alone: " << e.error.toString();
    }
    experiments_synced_ = true;
  };
  on_experiment.event = [this](const kube::WatchEvent<kube::Experiment>& e) {
    queue_.add(kube::objectKey(e.object));
  };
  experiments_ = std::make_unique<kube::Reflector<kube::Experiment>>(
      kube::ResourceClient<kube::Experiment>(client_, experimentsResource(),
                                             options_.namespace_name),
      experiment_options, on_experiment);

  // A trial's change wakes the Experiment that controls it.
  auto enqueueOwner = [this](const kube::ObjectMeta& meta) {
    const kube::OwnerReference* owner = controllerOf(meta);
    if (owner == nullptr || owner->kind != kube::Experiment::kKind) return;
    queue_.add(meta.namespace_name + "/" + owner->name);
  };
  kube::Watcher<kube::TrainingJob>::Options trial_options;
  trial_options.poll = options_.informer_poll;
  trial_options.label_selector = kExperimentLabel;
  kube::Reflector<kube::TrainingJob>::Handler on_trial;
  on_trial.relisted = [this, enqueueOwner](std::vector<kube::TrainingJob> items,
                                           std::vector<kube::RawObject> undecodable) {
    for (const kube::TrainingJob& job : items) enqueueOwner(job.metadata);
    for (const kube::RawObject& job : undecodable) enqueueOwner(job.metadata);
    trials_synced_ = true;
  };
  on_trial.event = [enqueueOwner](const kube::WatchEvent<kube::TrainingJob>& e) {
    enqueueOwner(e.object.metadata);
  };
  on_trial.transform = [](kube::TrainingJob& job) { trimForCache(job); };
  trials_ = std::make_unique<kube::Reflector<kube::TrainingJob>>(
      kube::ResourceClient<kube::TrainingJob>(client_, trainingJobsResource(),
                                              options_.namespace_name),
      trial_options, on_trial);
  reconciler_ = std::make_unique<SearchReconciler>(
      client_, SearchReconciler::Listers{experiments_->store(), trials_->store()}, events, clock,
      options_.validate, options_.metrics);
}

SearchController::~SearchController() = default;

void SearchController::run(std::stop_token stop) {
  RM_LOG(INFO, RECONCILE) << "search controller starting: namespace "
                          << (options_.namespace_name.empty() ? "(all)" : options_.namespace_name)
                          << ", " << options_.workers << " workers";
  std::jthread informers[] = {
      std::jthread([this](std::stop_token s) { experiments_->run(s); }),
      std::jthread([this](std::stop_token s) { trials_->run(s); }),
  };
  if (waitForCaches(stop, [this] { return synced(); })) {
    RM_LOG(INFO, RECONCILE) << "search caches synced; workers start";
  }
  runWorkers(
      stop, queue_, options_.workers,
      [this](const std::string& key) { return reconciler_->reconcile(key); }, "experiment",
      options_.metrics);
  for (std::jthread& i : informers) i.request_stop();
  for (std::jthread& i : informers) i.join();
  RM_LOG(INFO, RECONCILE) << "search controller stopped";
}

}  // namespace ringmaster::op
