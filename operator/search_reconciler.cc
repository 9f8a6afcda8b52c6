#include "operator/search_reconciler.h"

#include "operator/builders.h"
#include "operator/search_decide.h"
#include "ringmaster/core/log.h"
#include "ringmaster/search/space.h"

namespace ringmaster::op {
namespace {

// A trial the cache has not shown this long after its creation is no longer waited for.
constexpr std::chrono::seconds kExpectationTimeout{60};
constexpr std::chrono::milliseconds kAwaitCacheRequeue{500};

// Events are best effort: a failed write is logged, and the pass goes on.
void recordEvent(kube::EventRecorder& events, const kube::Experiment& experiment,
                 std::string_view type, const std::string& reason, const std::string& message) {
  core::Status s = events.record(experiment, type, reason, message);
  if (!s.ok()) {
    RM_LOG(WARN, RECONCILE) << "experiment " << experiment.metadata.namespace_name << "/"
                            << experiment.metadata.name << ": Event " << reason
                            << " not recorded: " << s.toString();
  }
}

}  // namespace

const kube::ResourceType& experimentsResource() {
  static const kube::ResourceType kType{"ringmaster.dev", "v1alpha1", "experiments", true};
  return kType;
}

SearchReconciler::SearchReconciler(kube::ApiClient& client, Listers listers,
                                   kube::EventRecorder& events, kube::Clock& clock,
                                   ValidateOptions options, OperatorMetrics* metrics)
    : client_(client),
      listers_(std::move(listers)),
      events_(events),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics) {}

void SearchReconciler::expect(const std::string& key, const std::string& trial) {
  std::lock_guard lock(mu_);
  expected_[key][trial] = clock_.now();
}

bool SearchReconciler::awaitingCache(const std::string& key, const std::set<std::string>& seen) {
  std::lock_guard lock(mu_);
  auto it = expected_.find(key);
  if (it == expected_.end()) return false;
  auto& pending = it->second;
  for (auto t = pending.begin(); t != pending.end();) {
    const bool expired = clock_.now() - t->second > kExpectationTimeout;
    if (seen.count(t->first) > 0 || expired) {
      if (expired && seen.count(t->first) == 0) {
        RM_LOG(WARN, RECONCILE) << "experiment " << key << ": trial " << t->first
                                << " was created but never reached the cache; going on";
      }
      t = pending.erase(t);
    } else {
      ++t;
    }
  }
  const bool waiting = !pending.empty();
  if (!waiting) expected_.erase(it);
  return waiting;
}

core::Result<Action> SearchReconciler::reconcile(const std::string& key) {
  std::shared_ptr<const kube::Experiment> cached = listers_.experiments->get(key);
  if (cached == nullptr || cached->metadata.deletion_timestamp) {
    if (metrics_ != nullptr) metrics_->experimentForgotten(key);
    std::lock_guard lock(mu_);
    expected_.erase(key);
    return Action::done();
  }
  const kube::Experiment& experiment = *cached;
  const kube::Time now(clock_.wallNow());
  kube::ResourceClient<kube::Experiment> experiments(client_, experimentsResource(),
                                                     experiment.metadata.namespace_name);
  auto writeStatus = [&](const kube::ExperimentStatus& status) -> core::Status {
    if (status == experiment.status) return core::Status::Ok();
    kube::Experiment updated = experiment;
    updated.status = status;
    kube::ApiResult<kube::Experiment> written = experiments.updateStatus(updated);
    if (!written.ok()) return written.status().withContext("experiment " + key + ": status");
    return core::Status::Ok();
  };

  core::Result<SearchSettings> settings = searchSettingsOf(experiment, options_);
  if (!settings.ok()) {
    const kube::ExperimentStatus status =
        invalidSearchStatus(experiment, settings.status().message(), now);
    if (status != experiment.status) {
      RM_LOG(WARN, RECONCILE) << "experiment " << key
                              << ": invalid spec: " << settings.status().message();
      recordEvent(events_, experiment, kube::kEventWarning, reason::kInvalidSpec,
                  settings.status().message());
    }
    RM_RETURN_IF_ERROR(writeStatus(status));
    if (metrics_ != nullptr) metrics_->experimentObserved(key, status, "");
    return Action::done();
  }

  std::vector<TrialObservation> trials;
  std::set<std::string> seen;
  for (const std::shared_ptr<const kube::TrainingJob>& job : listers_.trials->list()) {
    if (job->metadata.namespace_name != experiment.metadata.namespace_name) continue;
    const kube::OwnerReference* owner = controllerOf(job->metadata);
    if (owner == nullptr || owner->uid != experiment.metadata.uid) continue;
    const std::optional<int64_t> index = trialIndexOf(job->metadata);
    if (!index) continue;
    seen.insert(job->metadata.name);
    trials.push_back(observeTrial(*job, *index, settings->metric));
  }
  if (awaitingCache(key, seen)) return Action::requeueAfter(kAwaitCacheRequeue);

  SearchPlan plan = decideSearch(experiment, *settings, trials, now);
  for (int64_t index : plan.create) {
    RM_ASSIGN_OR_RETURN(kube::TrainingJob trial, trialJob(experiment, *settings, index));
    kube::ResourceClient<kube::TrainingJob> jobs(client_, trainingJobsResource(),
                                                 experiment.metadata.namespace_name);
    kube::ApiResult<kube::TrainingJob> created = jobs.create(trial);
    if (!created.ok() && !created.error().isAlreadyExists()) {
      return created.status().withContext("experiment " + key + ": creating trial " +
                                          trial.metadata.name);
    }
    expect(key, trial.metadata.name);
    if (!created.ok()) continue;  // made by an earlier pass whose status write did not land
    const std::string values = search::describe(trialAssignment(*settings, index));
    RM_LOG(INFO, RECONCILE) << "experiment " << key << ": created trial " << trial.metadata.name
                            << " (" << values << ")";
    recordEvent(events_, experiment, kube::kEventNormal, "TrialCreated",
                "created trial " + trial.metadata.name + ": " + values);
  }
  for (const std::string& name : plan.stop) {
    kube::ResourceClient<kube::TrainingJob> jobs(client_, trainingJobsResource(),
                                                 experiment.metadata.namespace_name);
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    kube::ApiResult<kube::NoContent> removed = jobs.remove(name, options);
    if (!removed.ok() && !removed.error().isNotFound()) {
      return removed.status().withContext("experiment " + key + ": stopping trial " + name);
    }
    RM_LOG(INFO, RECONCILE) << "experiment " << key << ": stopped trial " << name
                            << " (the search ended)";
    recordEvent(events_, experiment, kube::kEventNormal, "TrialStopped",
                "stopped trial " + name + ": the search ended");
  }
  RM_RETURN_IF_ERROR(writeStatus(plan.status));
  if (metrics_ != nullptr) metrics_->experimentObserved(key, plan.status, name(settings->metric));
  if (plan.finished) {
    const kube::Condition* ended = findCondition(
        plan.status.conditions, plan.status.phase == "Succeeded" ? kSucceeded : kFailed);
    const std::string message = ended != nullptr ? ended->message.value_or("") : "";
    RM_LOG(INFO, RECONCILE) << "experiment " << key << ": " << *plan.status.phase << " ("
                            << plan.status.reason.value_or("") << "): " << message;
    recordEvent(events_, experiment,
                plan.status.phase == "Succeeded" ? kube::kEventNormal : kube::kEventWarning,
                plan.status.reason.value_or(*plan.status.phase), message);
  }
  return Action::done();
}

}  // namespace ringmaster::op
