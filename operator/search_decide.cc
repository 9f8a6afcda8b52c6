#include "operator/search_decide.h"

#include <algorithm>
#include <sstream>

#include "operator/conditions.h"
#include "operator/status.h"

namespace ringmaster::op {
namespace {

bool conditionTrue(const kube::ExperimentStatus& status, const char* type) {
  const kube::Condition* c = findCondition(status.conditions, type);
  return c != nullptr && c->status == "True";
}

std::string objectiveText(double value) {
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

std::vector<std::string> activeTrials(const std::vector<TrialObservation>& trials) {
  std::vector<std::string> out;
  for (const TrialObservation& t : trials) {
    if (t.state == search::TrialState::kPending || t.state == search::TrialState::kRunning) {
      out.push_back(t.name);
    }
  }
  return out;
}

}  // namespace

TrialObservation observeTrial(const kube::TrainingJob& trial, int64_t index,
                              ObjectiveMetric metric) {
  TrialObservation t;
  t.index = index;
  t.name = trial.metadata.name;
  if (isTrue(trial.status, kSucceeded)) {
    t.state = search::TrialState::kSucceeded;
    t.objective = objectiveOf(trial.status, metric);
    if (trial.status.progress && trial.status.progress->pbt) {
      t.final_parameters = trial.status.progress->pbt->parameters;
      t.lineage = trial.status.progress->pbt->lineage;
    }
  } else if (isTrue(trial.status, kFailed)) {
    t.state = search::TrialState::kFailed;
  } else if (isTrue(trial.status, kRunning)) {
    t.state = search::TrialState::kRunning;
  }
  return t;
}

std::string finishedSearchPhase(const kube::ExperimentStatus& status) {
  if (conditionTrue(status, kFailed)) return "Failed";
  if (conditionTrue(status, kSucceeded)) return "Succeeded";
  return "";
}

kube::ExperimentStatus invalidSearchStatus(const kube::Experiment& experiment,
                                           const std::string& message, kube::Time now) {
  kube::ExperimentStatus status = experiment.status;
  const int64_t generation = experiment.metadata.generation.value_or(0);
  setCondition(status.conditions, kRunning, false, reason::kInvalidSpec, message, generation, now);
  setCondition(status.conditions, kFailed, true, reason::kInvalidSpec, message, generation, now);
  status.phase = "Failed";
  status.reason = reason::kInvalidSpec;
  if (!status.completion_time) status.completion_time = now;
  status.observed_generation = generation;
  return status;
}

SearchPlan decideSearch(const kube::Experiment& experiment, const SearchSettings& settings,
                        const std::vector<TrialObservation>& trials, kube::Time now) {
  SearchPlan plan;
  plan.status = experiment.status;
  kube::ExperimentStatus& status = plan.status;
  // An ended search stays ended (a trial that finishes late changes nothing); what still runs
  // is stopped.
  if (!finishedSearchPhase(status).empty()) {
    plan.stop = activeTrials(trials);
    return plan;
  }

  std::vector<search::TrialView> views;
  views.reserve(trials.size());
  for (const TrialObservation& t : trials) views.push_back({t.index, t.state, t.objective});
  const search::TrialPlan decided =
      search::planTrials(views, settings.budget(), status.trials_created.value_or(0));

  const int64_t generation = experiment.metadata.generation.value_or(0);
  if (!status.start_time) status.start_time = now;
  status.observed_generation = generation;
  status.trials = static_cast<int32_t>(decided.total);
  status.trials_created = static_cast<int32_t>(decided.created + decided.create.size());
  status.trials_running = static_cast<int32_t>(decided.active + decided.create.size());
  status.trials_succeeded = static_cast<int32_t>(decided.succeeded);
  status.trials_failed = static_cast<int32_t>(decided.failed);
  status.progress =
      std::to_string(decided.succeeded + decided.failed) + "/" + std::to_string(decided.total);
  if (decided.best) {
    kube::TrialResult best;
    best.index = *decided.best;
    best.name = trialName(experiment.metadata.name, *decided.best);
    for (const auto& [path, value] : trialAssignment(settings, *decided.best)) {
      best.parameters[path] = value;
    }
    for (const TrialObservation& t : trials) {
      if (t.index != *decided.best) continue;
      best.objective = t.objective;
      // A pbt member ends on the values its exploits gave it, not those it started with.
      for (const auto& [path, value] : t.final_parameters) best.parameters[path] = value;
      best.lineage = t.lineage;
    }
    status.best_trial = std::move(best);
  }
  plan.create = decided.create;

  switch (decided.outcome) {
    case search::SearchOutcome::kRunning: {
      std::string message = std::to_string(status.trials_running.value_or(0)) +
                            " trials running, " + *status.progress + " finished";
      if (status.best_trial && status.best_trial->objective) {
        message += "; best " + std::string(name(settings.metric)) + " " +
                   objectiveText(*status.best_trial->objective) + " (" + *status.best_trial->name +
                   ")";
      }
      setCondition(status.conditions, kRunning, true, search_reason::kTrialsRunning, message,
                   generation, now);
      status.phase = "Running";
      status.reason.reset();
      break;
    }
    case search::SearchOutcome::kSucceeded:
    case search::SearchOutcome::kFailed: {
      const bool succeeded = decided.outcome == search::SearchOutcome::kSucceeded;
      setCondition(status.conditions, kRunning, false, decided.reason, decided.message, generation,
                   now);
      setCondition(status.conditions, succeeded ? kSucceeded : kFailed, true, decided.reason,
                   decided.message, generation, now);
      status.phase = succeeded ? "Succeeded" : "Failed";
      status.reason = decided.reason;
      status.completion_time = now;
      status.trials_running = 0;
      plan.stop = activeTrials(trials);
      plan.finished = true;
      break;
    }
  }
  return plan;
}

}  // namespace ringmaster::op
