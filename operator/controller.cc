#include "operator/controller.h"

#include <thread>

#include "operator/builders.h"
#include "operator/cache_trim.h"
#include "operator/work_loop.h"
#include "ringmaster/core/log.h"

namespace ringmaster::op {

Controller::Controller(kube::ApiClient& client, kube::EventRecorder& events, kube::Clock& clock,
                       ProgressSource& progress, OperatorMetrics* metrics, Options options)
    : client_(client),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      queue_(clock) {
  kube::Watcher<kube::TrainingJob>::Options job_options;
  job_options.poll = options_.informer_poll;
  kube::Reflector<kube::TrainingJob>::Handler job_notify;
  job_notify.relisted = [this](std::vector<kube::TrainingJob> items,
                               std::vector<kube::RawObject> undecodable) {
    for (const kube::TrainingJob& job : items) queue_.add(kube::objectKey(job));
    for (const kube::RawObject& job : undecodable) queue_.add(kube::objectKey(job));
    jobs_synced_ = true;
  };
  job_notify.event = [this](const kube::WatchEvent<kube::TrainingJob>& e) {
    queue_.add(kube::objectKey(e.object));
  };
  // A job that does not decode is reconciled too: into Failed, naming the field.
  job_notify.undecodable = [this](const kube::WatchEvent<kube::RawObject>& e) {
    queue_.add(kube::objectKey(e.object));
  };
  job_notify.transform = [](kube::TrainingJob& job) { trimForCache(job); };
  jobs_ = std::make_unique<kube::Reflector<kube::TrainingJob>>(
      kube::ResourceClient<kube::TrainingJob>(client_, trainingJobsResource(),
                                              options_.namespace_name),
      job_options, job_notify);
  pods_ = makeOwnedInformer<kube::Pod, WorkerPod>(podsResource(), pods_synced_,
                                                  options_.pod_batch_period, workerPodOf);
  services_ = makeOwnedInformer<kube::Service, OwnedChild>(servicesResource(), services_synced_, {},
                                                           ownedChildOf<kube::Service>);
  config_maps_ = makeOwnedInformer<kube::ConfigMap, OwnedChild>(
      configMapsResource(), config_maps_synced_, {}, ownedChildOf<kube::ConfigMap>);
  // No Secret informer: the operator's RBAC grants no get/list/watch on Secrets.
  Listers listers{jobs_->store(), pods_->store(), services_->store(), config_maps_->store(),
                  jobs_->undecodable()};
  // Progress that moved brings its job back to the queue; unmoved progress costs no pass. The
  // reconciler goes before the queue (declared after it), taking its listener with it.
  options_.reconciler.progress_changed = [this](const std::string& key) { queue_.add(key); };
  reconciler_ = std::make_unique<Reconciler>(client_, listers, events, clock_, progress, metrics_,
                                             options_.reconciler);
}

Controller::~Controller() = default;

template <class T, class Cached>
std::unique_ptr<kube::Reflector<T, Cached>> Controller::makeOwnedInformer(
    const kube::ResourceType& type, std::atomic<bool>& synced, std::chrono::milliseconds batch,
    typename kube::Reflector<T, Cached>::Project project) {
  typename kube::Watcher<T>::Options options;
  options.label_selector = kJobNameLabel;  // only the operator's children
  options.poll = options_.informer_poll;
  typename kube::Reflector<T, Cached>::Handler notify;
  notify.relisted = [this, &synced](std::vector<T> items,
                                    std::vector<kube::RawObject> undecodable) {
    for (const T& item : items) enqueueOwner(item.metadata, {});
    for (const kube::RawObject& item : undecodable) enqueueOwner(item.metadata, {});
    synced = true;
  };
  notify.event = [this, batch](const kube::WatchEvent<T>& e) {
    enqueueOwner(e.object.metadata, batch);
  };
  notify.undecodable = [this, batch](const kube::WatchEvent<kube::RawObject>& e) {
    enqueueOwner(e.object.metadata, batch);
  };
  return std::make_unique<kube::Reflector<T, Cached>>(
      kube::ResourceClient<T>(client_, type, options_.namespace_name), options, notify,
      std::move(project));
}

void Controller::enqueueOwner(const kube::ObjectMeta& meta, std::chrono::milliseconds after) {
  const kube::OwnerReference* owner = controllerOf(meta);
  if (owner == nullptr || owner->kind != kube::TrainingJob::kKind ||
      owner->api_version.rfind("ringmaster.dev/", 0) != 0) {
    return;
  }
  // A later event of the burst joins this pass; no delay adds the key at once.
  queue_.addAfter(meta.namespace_name + "/" + owner->name, after);
}

bool Controller::synced() const {
  return jobs_synced_ && pods_synced_ && services_synced_ && config_maps_synced_;
}

void Controller::run(std::stop_token stop) {
  RM_LOG(INFO, RECONCILE) << "controller starting: namespace "
                          << (options_.namespace_name.empty() ? "(all)" : options_.namespace_name)
                          << ", " << options_.workers << " workers";
  // A fixed array: GCC 12 flags the first emplace_back of a jthread into an empty vector
  // with a false -Warray-bounds.
  std::jthread informers[] = {
      std::jthread([this](std::stop_token s) { jobs_->run(s); }),
      std::jthread([this](std::stop_token s) { pods_->run(s); }),
      std::jthread([this](std::stop_token s) { services_->run(s); }),
      std::jthread([this](std::stop_token s) { config_maps_->run(s); }),
  };

  // Wait for the caches before acting on them.
  if (waitForCaches(stop, [this] { return synced(); })) {
    RM_LOG(INFO, RECONCILE) << "caches synced; workers start";
  }
  runWorkers(
      stop, queue_, options_.workers,
      [this](const std::string& key) { return reconciler_->reconcile(key); }, "job", metrics_);
  for (std::jthread& i : informers) i.request_stop();
  for (std::jthread& i : informers) i.join();
  RM_LOG(INFO, RECONCILE) << "controller stopped";
}

}  // namespace ringmaster::op
