#include "local/run/experiment_progress.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ringmaster::local {
namespace {

std::string metricOf(const kube::Experiment& experiment) {
  const auto& objective = experiment.spec.objective;
  return objective && objective->metric ? *objective->metric : "testAccuracy";
}

bool maximizes(const kube::Experiment& experiment) {
  const auto& objective = experiment.spec.objective;
  if (objective && objective->goal) return *objective->goal == "maximize";
  return metricOf(experiment) != "loss";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  return buf;
}

const kube::Condition* condition(const kube::Experiment& experiment, const std::string& type) {
  for (const kube::Condition& c : experiment.status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool isTrue(const std::vector<kube::Condition>& conditions, const std::string& type) {
  for (const kube::Condition& c : conditions) {
    if (c.type == type) return c.status == "True";
  }
  return false;
}

std::optional<double> objectiveOf(const kube::Experiment& experiment,
                                  const kube::TrainingJob& trial) {
  if (!trial.status.progress) return std::nullopt;
  return metricOf(experiment) == "loss" ? trial.status.progress->loss
                                        : trial.status.progress->test_accuracy;
}

}  // namespace

std::string formatSearchProgress(const kube::Experiment& experiment) {
  const kube::ExperimentStatus& s = experiment.status;
  std::ostringstream out;
  out << s.phase.value_or("Pending") << "  trials " << s.progress.value_or("0/?") << " finished, "
      << s.trials_running.value_or(0) << " running, " << s.trials_failed.value_or(0) << " failed";
  if (s.best_trial && s.best_trial->objective) {
    out << "  best " << metricOf(experiment) << " " << number(*s.best_trial->objective) << " ("
        << s.best_trial->name.value_or("?") << ")";
  }
  return out.str();
}

std::string finishedSearch(const kube::Experiment& experiment) {
  if (const kube::Condition* c = condition(experiment, "Failed"); c && c->status == "True") {
    return "Failed";
  }
  if (const kube::Condition* c = condition(experiment, "Succeeded"); c && c->status == "True") {
    return "Succeeded";
  }
  return "";
}

std::string searchOutcome(const kube::Experiment& experiment) {
  const std::string phase = finishedSearch(experiment);
  const kube::Condition* c = condition(experiment, phase.empty() ? "Running" : phase);
  if (c == nullptr) return phase.empty() ? "Pending" : phase;
  return (phase.empty() ? experiment.status.phase.value_or("Pending") : phase) + " (" +
         c->reason.value_or("") + "): " + c->message.value_or("");
}

std::string trialTable(const kube::Experiment& experiment,
                       const std::vector<kube::TrainingJob>& trials) {
  struct Row {
    std::string name, state, objective, values;
    std::optional<double> score;
    int64_t index = 0;
  };
  std::vector<Row> rows;
  for (const kube::TrainingJob& t : trials) {
    Row row;
    row.name = t.metadata.name;
    row.state = isTrue(t.status.conditions, "Succeeded") ? "Succeeded"
                : isTrue(t.status.conditions, "Failed")  ? "Failed"
                                                         : t.status.phase.value_or("Pending");
    if (row.state == "Succeeded") row.score = objectiveOf(experiment, t);
    row.objective = row.score ? number(*row.score) : "-";
    // A pbt member's values are those it ended on; any other trial's, those it was given.
    auto values = t.metadata.annotations.find(kube::kTrialParametersAnnotation);
    row.values = values == t.metadata.annotations.end() ? "" : values->second;
    if (t.status.progress && t.status.progress->pbt &&
        !t.status.progress->pbt->parameters.empty()) {
      nlohmann::json ended(t.status.progress->pbt->parameters);
      const size_t exploits = t.status.progress->pbt->lineage.size();
      row.values = ended.dump() + " (" + std::to_string(exploits) +
                   (exploits == 1 ? " exploit)" : " exploits)");
    }
    auto index = t.metadata.labels.find(kube::kTrialIndexLabel);
    if (index != t.metadata.labels.end()) row.index = std::atoll(index->second.c_str());
    rows.push_back(std::move(row));
  }
  const bool up = maximizes(experiment);
  std::stable_sort(rows.begin(), rows.end(), [up](const Row& a, const Row& b) {
    if (a.score && b.score && *a.score != *b.score)
      return up ? *a.score > *b.score : *a.score < *b.score;
    if (a.score.has_value() != b.score.has_value()) return a.score.has_value();
    return a.index < b.index;
  });
  const std::string best =
      experiment.status.best_trial ? experiment.status.best_trial->name.value_or("") : "";
  size_t width = 5;
  for (const Row& r : rows) width = std::max(width, r.name.size());
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof(line), "    %-*s  %-10s  %-12s  %s\n", static_cast<int>(width),
                "TRIAL", "STATE", metricOf(experiment).c_str(), "VALUES");
  out << line;
  for (const Row& r : rows) {
    std::snprintf(line, sizeof(line), "  %s %-*s  %-10s  %-12s  ", r.name == best ? "*" : " ",
                  static_cast<int>(width), r.name.c_str(), r.state.c_str(), r.objective.c_str());
    out << line << r.values << "\n";
  }
  return out.str();
}

std::optional<std::string> SearchReporter::observe(const kube::Experiment& experiment) {
  std::string line = formatSearchProgress(experiment);
  if (line == last_line_) return std::nullopt;
  last_line_ = line;
  return line;
}

}  // namespace ringmaster::local
