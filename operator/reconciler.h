#pragma once
// Reconciler: one level-triggered pass over one TrainingJob, keyed "<namespace>/<name>", in the
// manner of controller-runtime's reconcilers. It reads the world from informer caches (Listers),
// never from its own memory, so a restarted operator continues where the last one stopped:
//
//   load job -> does not decode? (a value the server took but the type cannot hold) -> Failed
//               InvalidSpec naming the field, written with a merge patch; nothing created
//            -> finished?  cleanPodPolicy, ttlSecondsAfterFinished
//            -> defaultAndValidate (InvalidSpec -> Failed, nothing created)
//            -> active: observe -> decide -> apply
//            -> write status only if it changed -> Events -> release the gang if the plan says
//
// An active job's pass is split so that its decisions are testable without an API server:
//   observe  reads the caches and the pass's bookkeeping (pods by replica index, foreign pods,
//            expectations, whether the PodGroup API is served) into an Observed;
//   decide   (decide.h) is a pure function of job, status, Observed and the time: the new status
//            and a Plan (suspend, activeDeadlineSeconds, stale pods, gang restart or fail per
//            restartPolicy / backoffLimit, success, pods to create, gang schedule timeout,
//            progress, requeue);
//   apply    makes the Plan's calls in a fixed order: children (Service, ConfigMap, Secret) before
//            deletions before the PodGroup and pods, then reads rank 0's progress.
//
// Pods are named deterministically (<job>-worker-<i>) and AlreadyExists counts as success, so a
// lagging cache can cost a wasted call but never a duplicate; expectations (pod names created
// but not yet seen in the cache) skip even that. New pods are created only once no pod of an
// older attempt is left, so a name is never reused while its old pod still exists. Objects
// controlled by another owner are never adopted or touched (Warning Event, error).
//
// Ownership: borrows the ApiClient, EventRecorder, Clock, ProgressSource and metrics (all must
// outlive it); shares the caches. Thread-safety: reconcile() may run on many threads at once for
// different keys (the workqueue never hands one key to two workers); the expectations are
// mutex-guarded. Failure: API errors are returned with context (the caller requeues with
// backoff); spec errors are not errors but a Failed status.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "operator/cache_trim.h"
#include "operator/decide.h"
#include "operator/operator_metrics.h"
#include "operator/progress.h"
#include "operator/validate.h"
#include "operator/worker_pod.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/clock.h"
#include "ringmaster/kube/config_map.h"
#include "ringmaster/kube/event_recorder.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/reflector.h"
#include "ringmaster/kube/resource_client.h"
#include "ringmaster/kube/secret.h"
#include "ringmaster/kube/service.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// The resources the operator touches.
const kube::ResourceType& trainingJobsResource();
const kube::ResourceType& podsResource();
const kube::ResourceType& servicesResource();
const kube::ResourceType& configMapsResource();
const kube::ResourceType& secretsResource();
const kube::ResourceType& networkPoliciesResource();

// Read-only informer caches.
struct Listers {
  std::shared_ptr<const kube::Store<kube::TrainingJob>> jobs;
  std::shared_ptr<const kube::Store<WorkerPod>> pods;
  std::shared_ptr<const kube::Store<OwnedChild>> services;
  std::shared_ptr<const kube::Store<OwnedChild>> config_maps;
  // TrainingJobs the server holds that do not decode (each with its error); may be null.
  std::shared_ptr<const kube::Store<kube::RawObject>> undecodable_jobs;
  // No Secrets: the operator may not read them (see Reconciler::ensureSecret).
};

// What the runner does after a successful reconcile.
struct Action {
  std::optional<std::chrono::milliseconds> requeue_after;  // nullopt: done until an event
  static Action done() { return {}; }
  static Action requeueAfter(std::chrono::milliseconds d) { return {d}; }
  bool operator==(const Action&) const = default;
};

class Reconciler {
 public:
  struct Options {
    ValidateOptions validate;
    std::chrono::milliseconds progress_interval{5'000};  // status refresh while running
    std::chrono::seconds expectations_timeout{300};
    std::chrono::seconds unschedulable_backoff{10};  // doubles per retry
    std::chrono::seconds max_unschedulable_backoff{300};
    bool read_progress = true;
    // Called with a job's key when its rank 0's progress changed, where the progress source
    // tells (ProgressSource::onChange): the job then needs no timed refresh.
    std::function<void(const std::string& key)> progress_changed;
  };

  Reconciler(kube::ApiClient& client, Listers listers, kube::EventRecorder& events,
             kube::Clock& clock, ProgressSource& progress, OperatorMetrics* metrics,
             Options options);

  ~Reconciler();
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  core::Result<Action> reconcile(const std::string& key);

 private:
  struct Pass;  // the state of one reconcile (reconciler.cc)

  core::Result<Action> undecodable(const std::string& key, const kube::RawObject& raw);
  core::Result<Action> finished(Pass& p);
  Observed observe(Pass& p);
  core::Result<Action> active(Pass& p);  // observe -> decide -> apply
  core::Status ensureService(Pass& p);
  core::Status ensureConfigMap(Pass& p);
  core::Status ensureSecret(Pass& p);
  core::Status ensurePodGroup(Pass& p);
  core::Status ensureNetworkPolicy(Pass& p);
  core::Status deletePods(Pass& p, const std::function<bool(const WorkerPod&)>& which,
                          const std::string& why);
  bool podGroupServed(const kube::TrainingJob& job);
  core::Status createPods(Pass& p, const std::vector<int>& indices);
  // observedGeneration, phase and reason, as the pass's conditions now say.
  static void stampStatus(Pass& p);
  core::Status writeStatus(Pass& p);
  void recordTransitions(const Pass& p);
  core::Status refused(Pass& p, const std::string& what);
  // What createOwned found: kNotYet when an object of that name exists and is ours but cannot
  // stand in for the new one (being deleted, or a pod of another attempt), or is gone again:
  // a later pass creates it.
  enum class Created { kCreated, kAlreadyOurs, kNotYet };
  template <class T>
  core::Result<Created> createOwned(Pass& p, const kube::ResourceType& type, const T& object,
                                    const std::string& what);
  // Whether the cached job is older than the status this operator last wrote for it (then the
  // pass would start from stale state and meet 409 Conflict: it waits for the cache instead).
  bool cacheBehindOwnWrite(const std::string& key, const std::string& cached_version);
  void rememberOwnWrite(const std::string& key, const std::string& written_version);
  bool expectationsSatisfied(const std::string& key, const Pass& p);
  void expectCreations(const std::string& key, const std::vector<std::string>& names);

  kube::ApiClient& client_;
  Listers listers_;
  kube::EventRecorder& events_;
  kube::Clock& clock_;
  ProgressSource& progress_;
  OperatorMetrics* metrics_;
  Options options_;

  struct Expectation {
    std::set<std::string> names;
    kube::Clock::TimePoint deadline;
  };
  std::mutex mu_;
  std::map<std::string, Expectation> expectations_;        // job key -> pods created, not yet seen
  std::map<std::string, std::optional<bool>> api_exists_;  // "group/version" -> served?
  std::map<std::string, std::string> ssh_secrets_;         // job key -> uid whose <job>-ssh exists
  // Jobs whose last pass read rank 0's progress, and where: their number stretches the progress
  // interval (progressInterval), and a change at an address is news for its readers.
  std::map<std::string, ProgressAddress> progress_jobs_;
  std::map<ProgressAddress, std::set<std::string>> progress_readers_;
  bool progress_pushed_ = false;  // the source tells of changes (options_.progress_changed)
  // Records that `key` reads progress at `address` (none: no longer), and tells the source when
  // nobody reads an address any more.
  void trackProgress(const std::string& key, std::optional<ProgressAddress> address);
  struct OwnWrite {
    uint64_t resource_version = 0;
    kube::Clock::TimePoint deadline;  // wait no longer than this for the cache
  };
  std::map<std::string, OwnWrite> own_writes_;  // job key -> its last status write
  // Observed::released, per job key: the attempt whose pods a scheduling gate held, and when
  // this operator first saw them all without one (empty: still gated).
  struct GateRelease {
    int attempt = 0;
    std::optional<kube::Time> released;
  };
  std::map<std::string, GateRelease> gate_releases_;
  std::optional<kube::Time> noteGateRelease(
      const Pass& p, const std::vector<std::shared_ptr<const WorkerPod>>& pods);
};

}  // namespace ringmaster::op
