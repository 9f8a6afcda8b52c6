#pragma once
// An Experiment's spec as the operator acts on it: every default applied (the schema's, spelled
// here once), the search space as lib/search's Parameters, and the TrainingJob each trial runs:
// spec.trialTemplate.spec with the trial's values written in: a parameter `env.NAME` as the
// environment variable NAME of the trial's containers (how a program of the user's own,
// spec.command, takes its values), any other under spec.trainer (and, for pbt, the
// member's spec.trainer.pbt: the population is `parallelism` trials that train at once and meet
// in spec.pbt.directory after every epoch). Validation
// refuses what would make a bad trial before any trial exists: the template is validated as a
// TrainingJob (errors under spec.trialTemplate.spec), and every parameter's extreme values (a
// range's ends, each choice) are written into the template and validated too, so that a path
// that is not a trainer field, or a range the trainer refuses (a learning rate through 0), is
// named under spec.parameters[i].
//
// Thread-safety: pure functions. Failure: validateExperiment returns the field errors;
// searchSettingsOf folds them into one InvalidArgument.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "operator/validate.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/experiment.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/search/space.h"
#include "ringmaster/search/trials.h"

namespace ringmaster::op {

enum class SearchAlgorithm { kGrid, kRandom, kPbt };
enum class ObjectiveMetric { kTestAccuracy, kLoss };

// Katib's parallelTrialCount and maxFailedTrialCount defaults.
inline constexpr int32_t kDefaultSearchParallelism = 3;
inline constexpr int32_t kDefaultMaxFailedTrials = 3;
// A grid larger than this is refused: its trials could never all run, and a random search over
// the same space samples it better.
inline constexpr int64_t kMaxGridTrials = 10'000;

using kube::kExperimentLabel;
using kube::kTrialIndexLabel;
using kube::kTrialParametersAnnotation;

struct SearchSettings {
  SearchAlgorithm algorithm = SearchAlgorithm::kRandom;
  uint64_t seed = 0;  // spec.seed, else a hash of the Experiment's uid (stable across restarts)
  ObjectiveMetric metric = ObjectiveMetric::kTestAccuracy;
  bool maximize = true;  // testAccuracy up, loss down, unless objective.goal says otherwise
  std::optional<double> target;
  std::vector<search::Parameter> space;
  int32_t max_trials = 0;  // random: required; grid: the grid's size
  int32_t parallelism = kDefaultSearchParallelism;
  int32_t max_failed_trials = kDefaultMaxFailedTrials;
  // pbt: the population is `parallelism` trials that train at once; spec.pbt.
  std::string pbt_directory;
  std::optional<double> pbt_quantile, pbt_resample_probability;
  std::optional<int32_t> pbt_wait_seconds;
  std::optional<int32_t> pbt_intervals;  // a program of the user's own: its runs

  search::TrialBudget budget() const;
};

const char* name(SearchAlgorithm value);  // "grid" | "random" | "pbt"
const char* name(ObjectiveMetric value);  // "testAccuracy" | "loss"

// Every problem of `experiment`'s spec, each naming its field; `settings` (when not null) holds
// the defaulted settings when there is none.
std::vector<FieldError> validateExperiment(const kube::Experiment& experiment,
                                           const ValidateOptions& options,
                                           SearchSettings* settings);
core::Result<SearchSettings> searchSettingsOf(const kube::Experiment& experiment,
                                              const ValidateOptions& options);

// "<experiment>-trial-<index>"
std::string trialName(const std::string& experiment, int64_t index);
// Trial `index`'s values: the grid's point, or the random draw for (seed, index) (a pbt member's
// first values).
search::Assignment trialAssignment(const SearchSettings& settings, int64_t index);
// The TrainingJob of trial `index`: the template's spec with the trial's values under
// spec.trainer and a checkpoint directory of its own (<checkpoint.path>/<trial name>), owned by
// the Experiment and labelled with it and the index; a pbt member's spec.trainer.pbt names it,
// its population and where they meet.
core::Result<kube::TrainingJob> trialJob(const kube::Experiment& experiment,
                                         const SearchSettings& settings, int64_t index);

// A trial's objective: its final summary's figure, as its status.progress holds it.
std::optional<double> objectiveOf(const kube::TrainingJobStatus& status, ObjectiveMetric metric);
// A trial job's index (its label), or nullopt when it has none that parses.
std::optional<int64_t> trialIndexOf(const kube::ObjectMeta& meta);

}  // namespace ringmaster::op
