#pragma once
// ringmaster.dev/v1alpha1 Experiment, plural experiments, short name exp: a hyperparameter search
// whose trials are TrainingJobs made from spec.trialTemplate, each with its own values of the
// parameters under spec.trainer; the typed shape of crds/experiment.yaml. Defaults and
// validation belong to the schema and the operator (operator/search_settings.h); this is only
// the shape. Katib's users know the name; the group keeps the two apart.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/time.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::kube {

// What every trial's TrainingJob carries: the Experiment's name and the trial's index as labels,
// and its values, {"<path>": value, ...} as JSON, as an annotation.
inline constexpr const char* kExperimentLabel = "ringmaster.dev/experiment";
inline constexpr const char* kTrialIndexLabel = "ringmaster.dev/trial-index";
inline constexpr const char* kTrialParametersAnnotation = "ringmaster.dev/trial-parameters";

// What a trial is judged by: a figure of its final summary, as its TrainingJob's
// status.progress holds it.
struct ObjectiveSpec {
  std::optional<std::string> metric;  // testAccuracy | loss
  std::optional<std::string> goal;    // maximize | minimize
  // The search stops (Succeeded, GoalReached) once a trial reaches this value.
  std::optional<double> target;
  nlohmann::json extra;
  bool operator==(const ObjectiveSpec&) const = default;
};

// Population-based training's population: where its members meet and how they exploit.
struct PbtSearchSpec {
  std::optional<std::string> directory;  // on a volume every trial mounts
  std::optional<double> quantile;
  std::optional<double> resample_probability;  // "resampleProbability"
  std::optional<int32_t> wait_seconds;         // "waitSeconds"
  std::optional<int32_t> intervals;            // a program of the user's own: its runs
  nlohmann::json extra;
  bool operator==(const PbtSearchSpec&) const = default;
};

struct TrialTemplate {
  std::optional<TrainingJobSpec> spec;
  nlohmann::json extra;
  bool operator==(const TrialTemplate&) const = default;
};

struct ExperimentSpec {
  std::optional<std::string> algorithm;  // grid | random | pbt
  std::optional<int64_t> seed;           // random draws; default: from the Experiment's uid
  std::optional<ObjectiveSpec> objective;
  std::vector<SearchParameterSpec> parameters;
  std::optional<int32_t> max_trials;            // "maxTrials"
  std::optional<int32_t> parallelism;           // trials running at once
  std::optional<int32_t> max_failed_trials;     // "maxFailedTrials"
  std::optional<TrialTemplate> trial_template;  // "trialTemplate"
  std::optional<PbtSearchSpec> pbt;             // algorithm pbt
  nlohmann::json extra;
  bool operator==(const ExperimentSpec&) const = default;
};

struct TrialResult {
  std::optional<std::string> name;  // the trial's TrainingJob
  std::optional<int64_t> index;
  // path -> value: the trial's values (a pbt member's: those it ended on)
  std::map<std::string, nlohmann::json> parameters;
  std::optional<double> objective;
  std::vector<PbtExploit> lineage;  // a pbt member's exploits, oldest first
  nlohmann::json extra;
  bool operator==(const TrialResult&) const = default;
};

struct ExperimentStatus {
  std::vector<Condition> conditions;
  std::optional<std::string> phase;  // Running | Succeeded | Failed
  std::optional<std::string> reason;
  // Trials the search runs in all (min(maxTrials, the grid's size)), and so far.
  std::optional<int32_t> trials;
  std::optional<int32_t> trials_created;  // "trialsCreated": never decreases
  std::optional<int32_t> trials_running;
  std::optional<int32_t> trials_succeeded;
  std::optional<int32_t> trials_failed;
  std::optional<std::string> progress;    // "<finished>/<trials>" (printer column TRIALS)
  std::optional<TrialResult> best_trial;  // "bestTrial"
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<int64_t> observed_generation;
  nlohmann::json extra;
  bool operator==(const ExperimentStatus&) const = default;
};

struct Experiment {
  static constexpr const char* kApiVersion = "ringmaster.dev/v1alpha1";
  static constexpr const char* kKind = "Experiment";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ExperimentSpec spec;
  ExperimentStatus status;
  nlohmann::json extra;
  bool operator==(const Experiment&) const = default;
};

RM_KUBE_DECLARE_CODEC(ObjectiveSpec);
RM_KUBE_DECLARE_CODEC(PbtSearchSpec);
RM_KUBE_DECLARE_CODEC(TrialTemplate);
RM_KUBE_DECLARE_CODEC(ExperimentSpec);
RM_KUBE_DECLARE_CODEC(TrialResult);
RM_KUBE_DECLARE_CODEC(ExperimentStatus);
RM_KUBE_DECLARE_CODEC(Experiment);

}  // namespace ringmaster::kube
