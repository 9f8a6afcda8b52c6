#include "operator/reconciler.h"

#include <algorithm>
#include <charconv>
#include <type_traits>

#include "operator/builders.h"
#include "operator/decide.h"
#include "operator/progress_poller.h"
#include "operator/status.h"
#include "ringmaster/core/log.h"

namespace ringmaster::op {

using std::chrono::milliseconds;

const kube::ResourceType& trainingJobsResource() {
  static const kube::ResourceType kType{"ringmaster.dev", "v1alpha1", "trainingjobs", true};
  return kType;
}
const kube::ResourceType& podsResource() {
  static const kube::ResourceType kType{"", "v1", "pods", true};
  return kType;
}
const kube::ResourceType& servicesResource() {
  static const kube::ResourceType kType{"", "v1", "services", true};
  return kType;
}
const kube::ResourceType& configMapsResource() {
  static const kube::ResourceType kType{"", "v1", "configmaps", true};
  return kType;
}
const kube::ResourceType& secretsResource() {
  static const kube::ResourceType kType{"", "v1", "secrets", true};
  return kType;
}
const kube::ResourceType& networkPoliciesResource() {
  static const kube::ResourceType kType{"networking.k8s.io", "v1", "networkpolicies", true};
  return kType;
}

struct Reconciler::Pass {
  std::string key;
  std::string ns;
  std::string name;
  kube::TrainingJob original;  // as cached
  kube::TrainingJob job;       // spec defaulted once valid
  kube::TrainingJobStatus status;
  kube::Time now;
  int64_t generation = 0;
  int attempt = 0;
  std::vector<std::shared_ptr<const WorkerPod>> pods;  // ours, by replica index
  bool release_pods = false;  // delete every pod once the status is written
  // The API server refused a pod of this pass (quota, admission, validation): its words.
  std::optional<std::string> pod_refused;
};

namespace {

// How soon a pass that found the cache behind its own status write looks again, and how long it
// waits for the cache at most.
constexpr milliseconds kCacheCatchUp{50};
constexpr milliseconds kOwnWriteWait{10'000};

bool anyPod(const WorkerPod&) { return true; }
bool unfinishedPod(const WorkerPod& pod) { return !pod.finished() || pod.sidecars_running; }

bool ownedBy(const kube::ObjectMeta& meta, const kube::TrainingJob& job) {
  const kube::OwnerReference* ref = controllerOf(meta);
  return ref != nullptr && ref->uid == job.metadata.uid;
}
// A cached child (a WorkerPod is one too).
bool ownedBy(const OwnedChild& child, const kube::TrainingJob& job) {
  return !child.controller_uid.empty() && child.controller_uid == job.metadata.uid;
}

}  // namespace

Reconciler::Reconciler(kube::ApiClient& client, Listers listers, kube::EventRecorder& events,
                       kube::Clock& clock, ProgressSource& progress, OperatorMetrics* metrics,
                       Options options)
    : client_(client),
      listers_(std::move(listers)),
      events_(events),
      clock_(clock),
      progress_(progress),
      metrics_(metrics),
      options_(std::move(options)) {
  if (!options_.progress_changed) return;
  progress_pushed_ = progress_.onChange([this](const ProgressAddress& address) {
    std::set<std::string> readers;
    {
      std::lock_guard lock(mu_);
      auto it = progress_readers_.find(address);
      if (it != progress_readers_.end()) readers = it->second;
    }
    for (const std::string& key : readers) options_.progress_changed(key);
  });
}

Reconciler::~Reconciler() {
  if (progress_pushed_) progress_.onChange(nullptr);
  // The source outlives this reconciler (a new leader term makes a new one): it stops reading
  // what only this one wanted.
  for (const auto& [address, readers] : progress_readers_) {
    progress_.forget(address.first, address.second);
  }
}

void Reconciler::trackProgress(const std::string& key, std::optional<ProgressAddress> address) {
  std::optional<ProgressAddress> unread;
  {
    std::lock_guard lock(mu_);
    auto it = progress_jobs_.find(key);
    if (it != progress_jobs_.end()) {
      if (address && it->second == *address) return;
      auto readers = progress_readers_.find(it->second);
      readers->second.erase(key);
      if (readers->second.empty()) {
        unread = it->second;
        progress_readers_.erase(readers);
      }
      progress_jobs_.erase(it);
    }
    if (address) {
      progress_jobs_.emplace(key, *address);
      progress_readers_[*address].insert(key);
      if (unread == address) unread.reset();
    }
  }
  if (unread) progress_.forget(unread->first, unread->second);
}

core::Result<Action> Reconciler::reconcile(const std::string& key) {
  std::shared_ptr<const kube::TrainingJob> cached = listers_.jobs->get(key);
  if (!cached && listers_.undecodable_jobs) {
    if (std::shared_ptr<const kube::RawObject> raw = listers_.undecodable_jobs->get(key)) {
      return undecodable(key, *raw);
    }
  }
  if (!cached) {
    // Deleted: garbage collection removes the children through their ownerReferences.
    trackProgress(key, std::nullopt);
    std::lock_guard lock(mu_);
    expectations_.erase(key);
    ssh_secrets_.erase(key);
    own_writes_.erase(key);
    gate_releases_.erase(key);
    if (metrics_ != nullptr) metrics_->jobForgotten(key);
    return Action::done();
  }
  if (cached->metadata.deletion_timestamp || !managedByUs(cached->spec)) {
    trackProgress(key, std::nullopt);
  }
  if (cached->metadata.deletion_timestamp) return Action::done();
  if (!managedByUs(cached->spec)) {
    RM_LOG(DEBUG, RECONCILE) << "job " << key << ": managed by " << *cached->spec.managed_by
                             << "; left alone";
    return Action::done();
  }
  if (cacheBehindOwnWrite(key, cached->metadata.resource_version)) {
    return Action::requeueAfter(kCacheCatchUp);
  }
  Pass p;
  p.key = key;
  p.ns = cached->metadata.namespace_name;
  p.name = cached->metadata.name;
  p.original = *cached;
  p.job = *cached;
  p.status = cached->status;
  p.now = kube::Time(clock_.wallNow());
  p.generation = cached->metadata.generation.value_or(0);

  core::Result<Action> result = Action::done();
  if (isFinished(p.status)) {
    trackProgress(key, std::nullopt);
    p.job.spec = withDefaults(p.job.spec, options_.validate);
    result = finished(p);
  } else {
    core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(p.job, options_.validate);
    if (!spec.ok()) {
      trackProgress(key, std::nullopt);
      failJob(p.status, reason::kInvalidSpec, spec.status().message(), p.generation, p.now);
    } else {
      p.job.spec = std::move(spec).value();
      result = active(p);
    }
  }
  RM_RETURN_IF_ERROR(writeStatus(p));
  if (p.release_pods) {
    RM_RETURN_IF_ERROR(deletePods(p, anyPod, "gang released"));
  }
  return result;
}

core::Result<Action> Reconciler::undecodable(const std::string& key, const kube::RawObject& raw) {
  if (raw.metadata.deletion_timestamp) return Action::done();
  Pass p;
  p.key = key;
  p.ns = raw.metadata.namespace_name;
  p.name = raw.metadata.name;
  p.original.metadata = raw.metadata;
  // The status is the operator's own writing and decodes apart from the spec.
  if (auto it = raw.object.find("status"); it != raw.object.end()) {
    core::Result<kube::TrainingJobStatus> status = kube::decode<kube::TrainingJobStatus>(*it);
    if (status.ok()) p.original.status = *status;
  }
  if (isFinished(p.original.status)) return Action::done();
  p.status = p.original.status;
  p.now = kube::Time(clock_.wallNow());
  p.generation = raw.metadata.generation.value_or(0);
  failJob(p.status, reason::kInvalidSpec, "the spec cannot be read: " + raw.error.message(),
          p.generation, p.now);
  stampStatus(p);
  // A merge patch: the object as a whole cannot be encoded back. The resourceVersion makes it
  // fail on a newer object, which the next pass sees.
  nlohmann::json patch = {{"metadata", {{"resourceVersion", raw.metadata.resource_version}}},
                          {"status", kube::encode(p.status)}};
  kube::ResourceClient<kube::RawObject> jobs(client_, trainingJobsResource(), p.ns);
  kube::ApiResult<kube::RawObject> written =
      jobs.patch(p.name, kube::PatchType::kMerge, patch, "status");
  if (!written.ok()) {
    if (written.error().isNotFound()) return Action::done();
    return written.status().withContext("job " + key + ": write status");
  }
  recordTransitions(p);
  return Action::done();
}

core::Result<Action> Reconciler::finished(Pass& p) {
  const JobSettings settings = settingsOf(p.job.spec);
  const int slots = std::max(0, settings.podSlots());
  p.pods.assign(static_cast<size_t>(std::min(slots, kMaxWorldSize)), nullptr);
  for (size_t i = 0; i < p.pods.size(); ++i) {
    auto pod = listers_.pods->get(p.ns, podName(p.name, settings, static_cast<int>(i)));
    if (pod && ownedBy(*pod, p.job)) p.pods[i] = pod;
  }
  // Standby pods hold no rank and would hold their node's room forever.
  RM_RETURN_IF_ERROR(deletePods(
      p, [](const WorkerPod& pod) { return pod.standby; }, "job finished, standby pod"));
  const CleanPodPolicy policy = settings.clean_pod_policy;
  if (policy == CleanPodPolicy::kAll) {
    RM_RETURN_IF_ERROR(deletePods(p, anyPod, "job finished, cleanPodPolicy All"));
  } else if (policy == CleanPodPolicy::kRunning) {
    RM_RETURN_IF_ERROR(deletePods(p, unfinishedPod, "job finished, cleanPodPolicy Running"));
  }
  if (p.job.spec.ttl_seconds_after_finished && p.status.completion_time) {
    kube::Time due = plusSeconds(*p.status.completion_time, *p.job.spec.ttl_seconds_after_finished);
    if (p.now < due) return Action::requeueAfter(timeUntil(p.now, due));
    kube::ResourceClient<kube::TrainingJob> jobs(client_, trainingJobsResource(), p.ns);
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    kube::ApiResult<kube::NoContent> deleted = jobs.remove(p.name, options);
    if (!deleted.ok() && !deleted.error().isNotFound()) {
      return deleted.status().withContext("job " + p.key +
                                          ": delete after ttlSecondsAfterFinished");
    }
    RM_LOG(INFO, RECONCILE) << "job " << p.key << ": deleted "
                            << *p.job.spec.ttl_seconds_after_finished
                            << " s after it finished (ttlSecondsAfterFinished)";
  }
  return Action::done();
}

Observed Reconciler::observe(Pass& p) {
  Observed o;
  const JobSettings settings = settingsOf(p.job.spec);
  const int slots = settings.podSlots();
  o.pods.assign(static_cast<size_t>(slots), nullptr);
  for (int i = 0; i < slots; ++i) {
    auto pod = listers_.pods->get(p.ns, podName(p.name, settings, i));
    if (!pod) continue;
    if (ownedBy(*pod, p.job)) {
      o.pods[static_cast<size_t>(i)] = pod;
    } else {
      o.foreign.push_back(pod->metadata.name);
    }
  }
  // Prunes the expectations with what the cache shows, on every pass.
  o.expectations_met = expectationsSatisfied(p.key, p);
  o.pod_group_served = podGroupServed(p.job);
  o.released = noteGateRelease(p, o.pods);
  return o;
}

std::optional<kube::Time> Reconciler::noteGateRelease(
    const Pass& p, const std::vector<std::shared_ptr<const WorkerPod>>& pods) {
  const bool gated = std::any_of(pods.begin(), pods.end(), [&](const auto& pod) {
    return pod && pod->attempt == p.attempt && !pod->scheduling_gate.empty();
  });
  std::lock_guard lock(mu_);
  if (gated) {
    gate_releases_[p.key] = GateRelease{p.attempt, std::nullopt};
    return std::nullopt;
  }
  auto it = gate_releases_.find(p.key);
  if (it == gate_releases_.end()) return std::nullopt;  // never gated (as far as we know)
  if (it->second.attempt != p.attempt) {
    gate_releases_.erase(it);  // an earlier attempt's gate; this one's pods were never held
    return std::nullopt;
  }
  if (!it->second.released) it->second.released = p.now;
  return it->second.released;
}

core::Result<Action> Reconciler::active(Pass& p) {
  p.attempt = p.status.restarts.value_or(0);
  const Observed observed = observe(p);
  p.pods = observed.pods;
  DecideOptions decide_options;
  decide_options.unschedulable_backoff = options_.unschedulable_backoff;
  decide_options.max_unschedulable_backoff = options_.max_unschedulable_backoff;
  if (progress_pushed_) {
    decide_options.progress_interval = std::chrono::milliseconds(0);
  } else {
    std::lock_guard lock(mu_);
    decide_options.progress_interval =
        progressInterval(options_.progress_interval, progress_jobs_.size());
  }
  decide_options.read_progress = options_.read_progress;
  Plan plan = decide(p.job, p.status, observed, p.now, decide_options);

  // Until every call succeeded, the status to write is what the pass knew before them.
  p.status = plan.status_on_error;
  if (plan.refusal) return refused(p, *plan.refusal);
  if (plan.ensure_children) {
    RM_RETURN_IF_ERROR(ensureService(p));
    RM_RETURN_IF_ERROR(ensureConfigMap(p));
  }
  if (plan.ensure_ssh_secret) RM_RETURN_IF_ERROR(ensureSecret(p));
  if (plan.delete_pods == PodDeletion::kAll) {
    RM_RETURN_IF_ERROR(deletePods(p, anyPod, plan.delete_reason));
  } else if (plan.delete_pods == PodDeletion::kStale) {
    const std::set<std::string> stale(plan.stale.begin(), plan.stale.end());
    RM_RETURN_IF_ERROR(deletePods(
        p, [&stale](const WorkerPod& pod) { return stale.count(pod.metadata.name) > 0; },
        plan.delete_reason));
  }
  for (const Plan::Note& note : plan.notes) {
    if (note.warning) {
      RM_LOG(WARN, RECONCILE) << "job " << p.key << ": " << note.text;
    } else {
      RM_LOG(DEBUG, RECONCILE) << "job " << p.key << ": " << note.text;
    }
  }
  if (plan.ensure_pod_group) RM_RETURN_IF_ERROR(ensurePodGroup(p));
  if (!plan.create.empty()) RM_RETURN_IF_ERROR(createPods(p, plan.create));

  p.status = std::move(plan.status);
  p.release_pods = plan.release_pods;
  const WorkerPod* rank0 = plan.read_progress ? observed.pods.front().get() : nullptr;
  trackProgress(p.key, rank0 == nullptr
                           ? std::nullopt
                           : std::optional(ProgressAddress(rank0->pod_ip, metricsPort(p.job))));
  if (rank0 != nullptr) {
    core::Result<kube::TrainingProgress> progress =
        progress_.read(rank0->pod_ip, metricsPort(p.job));
    if (progress.ok()) {
      p.status.progress = *progress;
    } else {
      RM_LOG(DEBUG, RECONCILE) << "job " << p.key << ": progress: " << progress.status().toString();
    }
  }
  return plan.requeue ? Action::requeueAfter(*plan.requeue) : Action::done();
}

core::Status Reconciler::refused(Pass& p, const std::string& what) {
  const std::string message =
      what + " exists and is not controlled by this TrainingJob; not adopting it";
  RM_LOG(WARN, RECONCILE) << "job " << p.key << ": " << message;
  setCondition(p.status, kCreated, false, reason::kNotOwned, message, p.generation, p.now);
  core::Status s = events_.record(p.original, kube::kEventWarning, reason::kNotOwned, message);
  if (!s.ok()) RM_LOG(WARN, RECONCILE) << "job " << p.key << ": event: " << s.toString();
  return core::Status(core::Code::kAlreadyExists, "job " + p.key + ": " + message);
}

// Creates `object`; AlreadyExists is success only when the existing object is ours (the caches
// hold labelled objects only, so a stranger with our name shows up here first).
template <class T>
core::Result<Reconciler::Created> Reconciler::createOwned(Pass& p, const kube::ResourceType& type,
                                                          const T& object,
                                                          const std::string& what) {
  kube::ResourceClient<T> client(client_, type, p.ns);
  kube::ApiResult<T> created = client.create(object);
  if (created.ok()) return Created::kCreated;
  if (!created.error().isAlreadyExists()) {
    const kube::ApiError& e = created.error();
    // A refusal no retry soon cures (a quota, an admission webhook, a policy) is the job's news.
    if constexpr (std::is_same_v<T, kube::Pod>) {
      if (e.httpCode() >= 400 && e.httpCode() < 500 && !e.isConflict() && !e.isTooManyRequests() &&
          !p.pod_refused) {
        p.pod_refused =
            e.apiStatus().message.empty() ? e.status().message() : e.apiStatus().message;
      }
    }
    return created.status().withContext("job " + p.key + ": create " + what);
  }
  kube::ApiResult<T> existing = client.get(object.metadata.name);
  if (!existing.ok()) {
    if (existing.error().isNotFound()) return Created::kNotYet;  // gone since
    return existing.status().withContext("job " + p.key + ": get " + what);
  }
  if (!ownedBy(existing->metadata, p.job)) return refused(p, what);
  // The cache can lag the API: an old attempt's pod still terminating there is not the new one.
  // Taken as created, the pass would wait for a pod nobody creates (until expectations expire).
  if (existing->metadata.deletion_timestamp) {
    RM_LOG(INFO, RECONCILE) << "job " << p.key << ": " << what
                            << " is still being deleted; creating it once it is gone";
    return Created::kNotYet;
  }
  if constexpr (std::is_same_v<T, kube::Pod>) {
    if (attemptOf(*existing) != p.attempt) {
      RM_LOG(INFO, RECONCILE) << "job " << p.key << ": " << what << " is attempt "
                              << attemptOf(*existing) << "'s; creating it once it is gone";
      return Created::kNotYet;
    }
  }
  return Created::kAlreadyOurs;
}

core::Status Reconciler::ensureService(Pass& p) {
  if (auto svc = listers_.services->get(p.ns, p.name)) {
    return ownedBy(*svc, p.job) ? core::Status::Ok() : refused(p, "service " + p.name);
  }
  // kNotYet: a later pass, seeing it gone, creates it.
  return createOwned(p, servicesResource(), buildService(p.job), "service " + p.name).status();
}

core::Status Reconciler::ensureConfigMap(Pass& p) {
  const std::string name = configMapName(p.name);
  if (auto cm = listers_.config_maps->get(p.ns, name)) {
    return ownedBy(*cm, p.job) ? core::Status::Ok() : refused(p, "configmap " + name);
  }
  return createOwned(p, configMapsResource(), buildConfigMap(p.job), "configmap " + name).status();
}

// The operator may create Secrets but never read them: it creates <job>-ssh and takes
// AlreadyExists on that name, which it owns by the job's name, as its own (it cannot look).
// Each process creates once per job uid; the pods mount the Secret by name.
core::Status Reconciler::ensureSecret(Pass& p) {
  const std::string name = secretName(p.name);
  {
    std::lock_guard lock(mu_);
    if (auto it = ssh_secrets_.find(p.key);
        it != ssh_secrets_.end() && it->second == p.job.metadata.uid) {
      return core::Status::Ok();
    }
  }
  RM_ASSIGN_OR_RETURN(kube::Secret secret, buildSecret(p.job));
  kube::ResourceClient<kube::Secret> client(client_, secretsResource(), p.ns);
  kube::ApiResult<kube::Secret> created = client.create(secret);
  if (!created.ok() && !created.error().isAlreadyExists()) {
    return created.status().withContext("job " + p.key + ": create secret " + name);
  }
  std::lock_guard lock(mu_);
  ssh_secrets_[p.key] = p.job.metadata.uid;
  return core::Status::Ok();
}

bool Reconciler::podGroupServed(const kube::TrainingJob& job) {
  std::optional<PodGroupKind> kind = podGroupKindFor(job);
  if (!kind) return false;
  std::lock_guard lock(mu_);
  auto it = api_exists_.find(kind->group + "/" + kind->version);
  return it != api_exists_.end() && it->second.value_or(false);
}

core::Status Reconciler::ensurePodGroup(Pass& p) {
  std::optional<PodGroupKind> kind = podGroupKindFor(p.job);
  if (!kind) return core::Status::Ok();
  const std::string group_version = kind->group + "/" + kind->version;
  std::optional<bool> exists;
  {
    std::lock_guard lock(mu_);
    exists = api_exists_[group_version];
  }
  if (!exists) {
    kube::ApiRequest request;
    request.path = "/apis/" + group_version;
    request.timeout = std::chrono::seconds(10);
    core::Result<kube::ApiResponse> response = client_.request(request);
    if (!response.ok()) return response.status().withContext("discovery of " + group_version);
    if (response->status_code != 200 && response->status_code != 404) {
      return core::unavailable("discovery of " + group_version + ": HTTP " +
                               std::to_string(response->status_code));
    }
    exists = response->status_code == 200;
    std::lock_guard lock(mu_);
    api_exists_[group_version] = exists;
  }
  if (!*exists) {
    if (!p.status.start_time) {
      const std::string message = "schedulerName " + settingsOf(p.job.spec).scheduler_name +
                                  " needs " + group_version +
                                  " PodGroups, which this cluster does not serve; the operator "
                                  "enforces scheduleTimeoutSeconds itself";
      RM_LOG(WARN, RECONCILE) << "job " << p.key << ": " << message;
      core::Status s =
          events_.record(p.original, kube::kEventWarning, "PodGroupUnavailable", message);
      if (!s.ok()) RM_LOG(WARN, RECONCILE) << "job " << p.key << ": event: " << s.toString();
    }
    return core::Status::Ok();
  }
  const kube::PodGroup group = buildPodGroup(p.job, *kind);
  return createOwned(p, kube::ResourceType{kind->group, kind->version, kind->plural, true}, group,
                     "podgroup " + group.metadata.name)
      .status();
}

// The job's NetworkPolicy, before any of its pods exist: their store and training ports are
// never open to strangers. One POST per gang start; the one already there is kept if it is ours.
core::Status Reconciler::ensureNetworkPolicy(Pass& p) {
  return createOwned(p, networkPoliciesResource(), buildNetworkPolicy(p.job),
                     "networkpolicy " + networkPolicyName(p.job.metadata.name))
      .status();
}

core::Status Reconciler::deletePods(Pass& p, const std::function<bool(const WorkerPod&)>& which,
                                    const std::string& why) {
  kube::ResourceClient<kube::Pod> pods(client_, podsResource(), p.ns);
  for (const auto& pod : p.pods) {
    if (!pod || pod->terminating || !which(*pod)) continue;
    kube::ApiResult<kube::NoContent> deleted = pods.remove(pod->metadata.name);
    if (!deleted.ok() && !deleted.error().isNotFound()) {
      return deleted.status().withContext("job " + p.key + ": delete pod " + pod->metadata.name);
    }
    RM_LOG(INFO, RECONCILE) << "job " << p.key << ": deleted pod " << pod->metadata.name << " ("
                            << why << ")";
    std::lock_guard lock(mu_);
    auto it = expectations_.find(p.key);
    if (it != expectations_.end()) it->second.names.erase(pod->metadata.name);
  }
  return core::Status::Ok();
}

core::Status Reconciler::createPods(Pass& p, const std::vector<int>& indices) {
  std::vector<std::string> created;
  core::Status first_error;
  RM_RETURN_IF_ERROR(ensureNetworkPolicy(p));
  std::optional<std::string> secret = storeSecretForAttempt(p.pods, p.attempt);
  if (!secret) {
    core::Result<std::string> fresh = newStoreSecret();
    if (!fresh.ok()) return fresh.status().withContext("job " + p.key + ": store secret");
    secret = std::move(fresh).value();
  }
  // The pods of the world the plan is at (an elastic job's may differ from spec.replicas).
  const kube::TrainingJob at = atCurrentWorld(p.job, p.status);
  const JobSettings settings = settingsOf(at.spec);
  for (int i : indices) {
    const std::string name = podName(p.name, settings, i);
    core::Result<Created> c =
        createOwned(p, podsResource(), buildWorkerPod(at, i, p.attempt, *secret), "pod " + name);
    if (c.ok()) {
      if (*c != Created::kNotYet) created.push_back(name);
    } else if (first_error.ok()) {
      first_error = c.status();
    }
  }
  expectCreations(p.key, created);
  if (p.pod_refused) {
    setCondition(p.status, kCreated, false, reason::kFailedCreatePod, foldMessage(*p.pod_refused),
                 p.generation, p.now);
  }
  if (!created.empty()) {
    std::string message = "created pod" + std::string(created.size() > 1 ? "s " : " ");
    message += created.size() > 1 ? created.front() + " .. " + created.back() : created.front();
    message += " (attempt " + std::to_string(p.attempt) + ")";
    RM_LOG(INFO, RECONCILE) << "job " << p.key << ": " << message;
    core::Status s = events_.record(p.original, kube::kEventNormal, "CreatedPods", message);
    if (!s.ok()) RM_LOG(WARN, RECONCILE) << "job " << p.key << ": event: " << s.toString();
  }
  return first_error;
}

void Reconciler::stampStatus(Pass& p) {
  p.status.observed_generation = p.generation;
  p.status.phase = phaseOf(p.status);
  p.status.reason = reasonOf(p.status);
}

core::Status Reconciler::writeStatus(Pass& p) {
  stampStatus(p);
  if (metrics_ != nullptr) metrics_->jobObserved(p.key, p.status);
  if (p.status == p.original.status) return core::Status::Ok();
  kube::TrainingJob updated = p.original;
  updated.status = p.status;
  kube::ResourceClient<kube::TrainingJob> jobs(client_, trainingJobsResource(), p.ns);
  kube::ApiResult<kube::TrainingJob> written = jobs.updateStatus(updated);
  if (!written.ok()) return written.status().withContext("job " + p.key + ": write status");
  rememberOwnWrite(p.key, written->metadata.resource_version);
  recordTransitions(p);
  return core::Status::Ok();
}

void Reconciler::recordTransitions(const Pass& p) {
  for (const kube::Condition& c : p.status.conditions) {
    const kube::Condition* old = findCondition(p.original.status, c.type);
    // Every resize and replacement is news, also a second one for the same reason.
    const bool changed = old == nullptr || old->status != c.status || old->reason != c.reason ||
                         ((c.type == kResized || c.type == kReplaced) && old->message != c.message);
    // A False condition is news when it now says why the job is not running (status.reason).
    // (Not when a True condition gives the same reason: that one's Event says it already.)
    const bool blocking = c.status == "False" && c.reason && c.reason == p.status.reason &&
                          std::none_of(p.status.conditions.begin(), p.status.conditions.end(),
                                       [&](const kube::Condition& o) {
                                         return o.status == "True" && o.reason == c.reason;
                                       });
    if (!changed ||
        (c.status != "True" && !blocking && (old == nullptr || old->status != "True"))) {
      continue;
    }
    const bool warning =
        blocking || (c.status == "True" && (c.type == kFailed || c.type == kReplaced ||
                                            (c.type == kRestarting && c.reason != kResized)));
    const std::string reason = c.reason.value_or(c.type);
    const std::string message = c.type + " " + c.status + ": " + c.message.value_or("");
    if (warning) {
      RM_LOG(WARN, RECONCILE) << "job " << p.key << ": " << reason << ": " << message;
    } else {
      RM_LOG(INFO, RECONCILE) << "job " << p.key << ": " << reason << ": " << message;
    }
    // Created True has its Event already: the pass that created the pods recorded CreatedPods,
    // naming them and the attempt. A resize has the Resized condition's (not also Restarting's
    // and Running's, which give it as their reason).
    const bool said =
        (c.type == kCreated && c.status == "True") || (c.type != kResized && c.reason == kResized);
    if (!said) {
      core::Status s =
          events_.record(p.original, warning ? kube::kEventWarning : kube::kEventNormal, reason,
                         c.message.value_or(c.type));
      if (!s.ok()) RM_LOG(WARN, RECONCILE) << "job " << p.key << ": event: " << s.toString();
    }
    if (metrics_ != nullptr && c.status == "True") {
      if (c.type == kCreated) metrics_->jobCreated(p.ns);
      if (c.type == kSucceeded) metrics_->jobSucceeded(p.ns);
      if (c.type == kFailed) metrics_->jobFailed(p.ns);
    }
  }
  if (metrics_ != nullptr &&
      p.status.restarts.value_or(0) > p.original.status.restarts.value_or(0)) {
    metrics_->jobRestarted(p.ns);
  }
}

namespace {
// resourceVersions are etcd revisions, decimal and increasing, on every server this operator
// meets; one that is not (nullopt) disables the wait rather than guessing.
std::optional<uint64_t> revisionOf(const std::string& resource_version) {
  uint64_t value = 0;
  const char* end = resource_version.data() + resource_version.size();
  auto [ptr, ec] = std::from_chars(resource_version.data(), end, value);
  if (ec != std::errc() || ptr != end || resource_version.empty()) return std::nullopt;
  return value;
}
}  // namespace

bool Reconciler::cacheBehindOwnWrite(const std::string& key, const std::string& cached_version) {
  std::lock_guard lock(mu_);
  auto it = own_writes_.find(key);
  if (it == own_writes_.end()) return false;
  std::optional<uint64_t> cached = revisionOf(cached_version);
  if (!cached || *cached >= it->second.resource_version || clock_.now() >= it->second.deadline) {
    own_writes_.erase(it);
    return false;
  }
  return true;
}

void Reconciler::rememberOwnWrite(const std::string& key, const std::string& written_version) {
  std::optional<uint64_t> written = revisionOf(written_version);
  std::lock_guard lock(mu_);
  if (!written) {
    own_writes_.erase(key);
    return;
  }
  own_writes_[key] = OwnWrite{*written, clock_.now() + kOwnWriteWait};
}

bool Reconciler::expectationsSatisfied(const std::string& key, const Pass& p) {
  std::lock_guard lock(mu_);
  auto it = expectations_.find(key);
  if (it == expectations_.end()) return true;
  for (auto name = it->second.names.begin(); name != it->second.names.end();) {
    name = listers_.pods->get(p.ns, *name) ? it->second.names.erase(name) : std::next(name);
  }
  if (it->second.names.empty() || clock_.now() >= it->second.deadline) {
    if (!it->second.names.empty()) {
      RM_LOG(WARN, RECONCILE) << "job " << key << ": " << it->second.names.size()
                              << " created pods never appeared in the cache; creating again";
    }
    expectations_.erase(it);
    return true;
  }
  return false;
}

void Reconciler::expectCreations(const std::string& key, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::lock_guard lock(mu_);
  Expectation& e = expectations_[key];
  e.names.insert(names.begin(), names.end());
  e.deadline = clock_.now() + options_.expectations_timeout;
}

}  // namespace ringmaster::op
