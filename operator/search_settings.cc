#include "operator/search_settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "operator/builders.h"
#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/fnv.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/mounts.h"

namespace ringmaster::op {
namespace {

using contract::FieldErrors;

constexpr const char* kParameters = "spec.parameters";
constexpr const char* kTemplateSpec = "spec.trialTemplate.spec";
using contract::kEnvParameterPrefix;

bool isEnvPath(const std::string& path) { return path.starts_with(kEnvParameterPrefix); }

// Whether the trials run a program of the user's own (the template's spec.command).
bool runsOwnProgram(const kube::ExperimentSpec& spec) {
  return spec.trial_template && spec.trial_template->spec &&
         !spec.trial_template->spec->command.empty();
}

// `spec` with `assignment` written in: an `env.NAME` value as the variable NAME of every
// container the trial runs (replacing the template's own NAME), every other under
// spec.trainer. A value the trainer's spec cannot hold (a string where a number goes) is an
// InvalidArgument naming the field.
core::Result<kube::TrainingJobSpec> withValues(const kube::TrainingJobSpec& spec,
                                               const search::Assignment& assignment) {
  kube::TrainingJobSpec out = spec;
  search::Assignment trainer_values;
  for (const auto& [path, value] : assignment) {
    if (!isEnvPath(path)) {
      trainer_values.emplace_back(path, value);
      continue;
    }
    kube::EnvVar var;
    var.name = path.substr(kEnvParameterPrefix.size());
    var.value = contract::envParameterText(value);
    auto same = [&](const kube::EnvVar& e) { return e.name == var.name; };
    auto it = std::find_if(out.env.begin(), out.env.end(), same);
    if (it != out.env.end()) {
      *it = std::move(var);
    } else {
      out.env.push_back(std::move(var));
    }
  }
  if (trainer_values.empty()) return out;
  nlohmann::json trainer = spec.trainer ? kube::encode(*spec.trainer) : nlohmann::json::object();
  RM_RETURN_IF_ERROR(search::applyAssignment(trainer_values, trainer));
  core::Result<kube::TrainerSpec> decoded = kube::decode<kube::TrainerSpec>(trainer);
  if (!decoded.ok()) return decoded.status().withContext("spec.trainer");
  out.trainer = std::move(decoded).value();
  return out;
}

// A C identifier, as a shell and os.environ take a variable's name.
bool isEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Where each parameter goes: `env.NAME` a variable (any trial), anything else a trainer field,
// which a trial of a program of the user's own has none of.
void validateParameterPaths(const kube::ExperimentSpec& spec, FieldErrors& e) {
  const bool own_program = runsOwnProgram(spec);
  for (size_t i = 0; i < spec.parameters.size(); ++i) {
    const std::string path = spec.parameters[i].path.value_or("");
    const std::string at = std::string(kParameters) + "[" + std::to_string(i) + "].path";
    if (path.empty()) continue;  // spaceOf says so
    if (isEnvPath(path)) {
      if (!isEnvName(path.substr(kEnvParameterPrefix.size()))) {
        e.add(at, contract::invalidValue(path,
                                         "env.NAME takes a variable's name: letters, "
                                         "digits and _, not starting with a digit"));
      }
    } else if (own_program) {
      e.add(at, contract::invalidValue(
                    path,
                    "a trial of a program of your own (spec.trialTemplate.spec.command) "
                    "takes its values as environment variables: env.NAME"));
    }
  }
}

kube::TrainingJob jobNamed(const std::string& name, const std::string& ns,
                           kube::TrainingJobSpec spec) {
  kube::TrainingJob job;
  kube::setTypeMeta(job);
  job.metadata.name = name;
  job.metadata.namespace_name = ns;
  job.spec = std::move(spec);
  return job;
}

// The values that stand for a parameter's whole range in validation: its ends, each choice.
std::vector<nlohmann::json> extremes(const search::Parameter& p) {
  if (!p.isRange()) return p.choices;
  if (!p.integer) return {*p.min, *p.max};
  return {static_cast<int64_t>(std::ceil(*p.min)), static_cast<int64_t>(std::floor(*p.max))};
}

bool contains(const std::vector<FieldError>& errors, const FieldError& e) {
  return std::find(errors.begin(), errors.end(), e) != errors.end();
}

// A trial's errors on the template's behalf: spec.X -> spec.trialTemplate.spec.X, except the
// member's spec.trainer.pbt, which the operator writes from the Experiment's own fields:
// parameters[i] -> spec.parameters[i], directory and the population's settings -> spec.pbt.
std::string templateField(const std::string& field) {
  const std::string pbt = "spec.trainer.pbt.";
  if (field.starts_with(pbt + "parameters")) return "spec." + field.substr(pbt.size());
  for (const char* own :
       {"directory", "quantile", "resampleProbability", "waitSeconds", "intervals"}) {
    if (field == pbt + own) return "spec.pbt." + std::string(own);
  }
  if (field.rfind("spec", 0) == 0) return kTemplateSpec + field.substr(4);
  return "spec.trialTemplate." + field;
}

void validateObjective(const std::optional<kube::ObjectiveSpec>& objective, FieldErrors& e,
                       SearchSettings& s) {
  if (!objective) return;
  e.unknownFields("spec.objective", objective->extra);
  e.oneOf("spec.objective.metric", objective->metric, {"testAccuracy", "loss"});
  e.oneOf("spec.objective.goal", objective->goal, {"maximize", "minimize"});
  if (objective->metric == "loss") s.metric = ObjectiveMetric::kLoss;
  s.maximize =
      objective->goal ? *objective->goal == "maximize" : s.metric == ObjectiveMetric::kTestAccuracy;
  if (objective->target && !std::isfinite(*objective->target)) {
    e.add("spec.objective.target", "must be a finite number");
  }
  s.target = objective->target;
}

// Each parameter's extreme values written into the template must make a valid trial; what the
// template alone already gets wrong is reported once, under the template.
void validateTrialValues(const kube::Experiment& experiment, const kube::TrainingJobSpec& spec,
                         const SearchSettings& s, const std::string& trial_name,
                         const std::vector<FieldError>& base, const ValidateOptions& options,
                         FieldErrors& e) {
  for (size_t i = 0; i < s.space.size(); ++i) {
    const std::string at = std::string(kParameters) + "[" + std::to_string(i) + "]";
    for (const nlohmann::json& value : extremes(s.space[i])) {
      const search::Assignment one = {{s.space[i].path, value}};
      core::Result<kube::TrainingJobSpec> trial = withValues(spec, one);
      if (!trial.ok()) {
        e.add(at, "value " + value.dump() + ": " + trial.status().message());
        break;
      }
      const kube::TrainingJob job =
          jobNamed(trial_name, experiment.metadata.namespace_name, withDefaults(*trial, options));
      std::vector<std::string> problems;
      for (const FieldError& err : validate(job, options)) {
        if (!contains(base, err)) problems.push_back(err.field + ": " + err.message);
      }
      if (!problems.empty()) {
        std::string text;
        for (const std::string& p : problems) text += (text.empty() ? "" : "; ") + p;
        e.add(at, "value " + value.dump() + " makes an invalid trial: " + text);
        break;  // one value says enough about this parameter
      }
    }
  }
}

// The template as trial `index` runs it before its values: for pbt, with the member's
// spec.trainer.pbt (its name, the population, the space, where they meet).
kube::TrainingJobSpec memberTemplate(const kube::Experiment& experiment, const SearchSettings& s,
                                     int64_t index) {
  kube::TrainingJobSpec spec = *experiment.spec.trial_template->spec;
  if (s.algorithm != SearchAlgorithm::kPbt) return spec;
  kube::PbtSpec pbt;
  // A directory per Experiment object: a later search of the same name never reads the
  // reports of an earlier one left on the volume.
  pbt.directory =
      s.pbt_directory + (experiment.metadata.uid.empty() ? "" : "/" + experiment.metadata.uid);
  pbt.member = trialName(experiment.metadata.name, index);
  for (int32_t i = 0; i < s.parallelism; ++i) {
    pbt.population.push_back(trialName(experiment.metadata.name, i));
  }
  pbt.parameters = experiment.spec.parameters;
  pbt.seed = static_cast<int64_t>(s.seed & 0x7fffffffffffffffULL);
  pbt.quantile = s.pbt_quantile;
  pbt.resample_probability = s.pbt_resample_probability;
  pbt.metric = name(s.metric);
  pbt.goal = s.maximize ? "maximize" : "minimize";
  pbt.wait_seconds = s.pbt_wait_seconds;
  pbt.intervals = s.pbt_intervals;
  if (!spec.trainer) spec.trainer.emplace();
  spec.trainer->pbt = std::move(pbt);
  return spec;
}

// spec.pbt and what pbt asks of the rest: one population that trains at once, one rank per
// member, a directory every member mounts. What the member's spec.trainer.pbt must hold
// (optimizer fields for the built-in trainer; variables and the number of its runs for a
// program of the user's own) its validation as a TrainingJob says, under this spec's fields
// (templateField).
void validatePbtSearch(const kube::ExperimentSpec& spec, SearchSettings& s, FieldErrors& e) {
  if (s.algorithm != SearchAlgorithm::kPbt) {
    if (spec.pbt) e.add("spec.pbt", "only for algorithm pbt");
    return;
  }
  if (!spec.pbt) {
    e.add("spec.pbt", "required for algorithm pbt: the directory where the members meet");
    return;
  }
  const kube::PbtSearchSpec& pbt = *spec.pbt;
  e.unknownFields("spec.pbt", pbt.extra);
  s.pbt_directory = pbt.directory.value_or("");
  if (s.pbt_directory.empty() || s.pbt_directory.front() != '/') {
    e.add("spec.pbt.directory",
          "required: an absolute path on a volume every trial mounts, where the members meet");
  }
  s.pbt_quantile = pbt.quantile;
  s.pbt_resample_probability = pbt.resample_probability;
  s.pbt_wait_seconds = pbt.wait_seconds;
  s.pbt_intervals = pbt.intervals;
  if (spec.max_trials && *spec.max_trials != s.parallelism) {
    e.add("spec.maxTrials",
          "a pbt population trains all at once: maxTrials must equal "
          "parallelism (" +
              std::to_string(s.parallelism) + "), got " + std::to_string(*spec.max_trials));
  }
  if (s.parallelism < 2) {
    e.add("spec.parallelism",
          "a pbt population needs at least 2 members, got " + std::to_string(s.parallelism));
  }
  if (!spec.trial_template || !spec.trial_template->spec) return;
  const kube::TrainingJobSpec& t = *spec.trial_template->spec;
  if (t.replicas.value_or(1) * t.procs_per_replica.value_or(1) != 1) {
    e.add(kTemplateSpec + std::string(".replicas"),
          "a pbt member trains on one rank: replicas 1, procsPerReplica 1");
  }
  if (!s.pbt_directory.empty() && !kube::mountHolding(t.volume_mounts, s.pbt_directory)) {
    e.add("spec.pbt.directory",
          contract::invalidValue(s.pbt_directory,
                                 "is on none of spec.trialTemplate.spec.volumeMounts: every "
                                 "member must see the same directory"));
  }
}

}  // namespace

search::TrialBudget SearchSettings::budget() const {
  search::TrialBudget b;
  b.max_trials = max_trials;
  b.parallelism = parallelism;
  b.max_failed = max_failed_trials;
  b.candidates = algorithm == SearchAlgorithm::kGrid ? search::gridSize(space) : 0;
  b.maximize = maximize;
  b.target = target;
  return b;
}

const char* name(SearchAlgorithm value) {
  switch (value) {
    case SearchAlgorithm::kGrid:
      return "grid";
    case SearchAlgorithm::kPbt:
      return "pbt";
    case SearchAlgorithm::kRandom:
      break;
  }
  return "random";
}

const char* name(ObjectiveMetric value) {
  return value == ObjectiveMetric::kLoss ? "loss" : "testAccuracy";
}

std::vector<FieldError> validateExperiment(const kube::Experiment& experiment,
                                           const ValidateOptions& options,
                                           SearchSettings* settings) {
  FieldErrors e;
  SearchSettings s;
  const kube::ExperimentSpec& spec = experiment.spec;
  e.unknownFields("spec", spec.extra);
  e.oneOf("spec.algorithm", spec.algorithm, {"grid", "random", "pbt"});
  if (spec.algorithm == "grid") s.algorithm = SearchAlgorithm::kGrid;
  if (spec.algorithm == "pbt") s.algorithm = SearchAlgorithm::kPbt;
  s.seed = spec.seed ? static_cast<uint64_t>(*spec.seed) : core::fnv1a32(experiment.metadata.uid);
  validateObjective(spec.objective, e, s);

  const size_t before_space = e.errors().size();
  for (FieldError& err : search::spaceOf(spec.parameters, kParameters,
                                         s.algorithm == SearchAlgorithm::kGrid, &s.space)) {
    e.add(std::move(err.field), std::move(err.message));
  }
  validateParameterPaths(spec, e);
  const bool space_ok = e.errors().size() == before_space;

  e.atLeast("spec.parallelism", spec.parallelism, 1);
  e.atLeast("spec.maxFailedTrials", spec.max_failed_trials, 0);
  e.atLeast("spec.maxTrials", spec.max_trials, 1);
  s.parallelism = spec.parallelism.value_or(kDefaultSearchParallelism);
  s.max_failed_trials = spec.max_failed_trials.value_or(kDefaultMaxFailedTrials);
  if (s.algorithm == SearchAlgorithm::kGrid && space_ok) {
    const int64_t points = search::gridSize(s.space);
    if (points > kMaxGridTrials) {
      e.add(kParameters, "make a grid of " + std::to_string(points) + " points, more than " +
                             std::to_string(kMaxGridTrials) +
                             "; use fewer gridPoints or a random search");
    }
    s.max_trials = static_cast<int32_t>(
        std::min<int64_t>(spec.max_trials.value_or(INT32_MAX), std::min(points, kMaxGridTrials)));
  } else if (s.algorithm == SearchAlgorithm::kRandom) {
    if (!spec.max_trials) e.add("spec.maxTrials", "required for a random search");
    s.max_trials = spec.max_trials.value_or(1);
  } else {
    s.max_trials = s.parallelism;
  }
  validatePbtSearch(spec, s, e);

  const std::string trial_name = trialName(experiment.metadata.name, std::max(0, s.max_trials - 1));
  if (!spec.trial_template || !spec.trial_template->spec) {
    e.add(kTemplateSpec, "required: the TrainingJob spec every trial runs");
  } else {
    e.unknownFields("spec.trialTemplate", spec.trial_template->extra);
    const kube::TrainingJobSpec member =
        memberTemplate(experiment, s, std::max(0, s.max_trials - 1));
    const kube::TrainingJob job =
        jobNamed(trial_name, experiment.metadata.namespace_name, withDefaults(member, options));
    const std::vector<FieldError> base = validate(job, options);
    for (const FieldError& err : base) {
      if (err.field == "metadata.name") {
        e.add("metadata.name",
              "leaves no room for the trials' names (" + trial_name + "): " + err.message);
      } else {
        e.add(templateField(err.field), err.message);
      }
    }
    if (space_ok) validateTrialValues(experiment, member, s, trial_name, base, options, e);
  }
  if (e.empty() && settings != nullptr) *settings = std::move(s);
  return e.take();
}

core::Result<SearchSettings> searchSettingsOf(const kube::Experiment& experiment,
                                              const ValidateOptions& options) {
  SearchSettings settings;
  std::vector<FieldError> errors = validateExperiment(experiment, options, &settings);
  if (!errors.empty()) return core::invalidArgument(contract::describe(errors));
  return settings;
}

std::string trialName(const std::string& experiment, int64_t index) {
  return experiment + "-trial-" + std::to_string(index);
}

search::Assignment trialAssignment(const SearchSettings& settings, int64_t index) {
  if (settings.algorithm == SearchAlgorithm::kGrid) return search::gridAt(settings.space, index);
  return search::sampleOf(settings.space, settings.seed, index);
}

core::Result<kube::TrainingJob> trialJob(const kube::Experiment& experiment,
                                         const SearchSettings& settings, int64_t index) {
  const search::Assignment values = trialAssignment(settings, index);
  const std::string name = trialName(experiment.metadata.name, index);
  RM_ASSIGN_OR_RETURN(kube::TrainingJobSpec spec,
                      withValues(memberTemplate(experiment, settings, index), values));
  // Trials never share a checkpoint: each would resume the one before.
  if (spec.trainer && spec.trainer->checkpoint && spec.trainer->checkpoint->path) {
    std::string& path = *spec.trainer->checkpoint->path;
    path += (path.empty() || path.back() == '/' ? "" : "/") + name;
  }
  kube::TrainingJob job = jobNamed(name, experiment.metadata.namespace_name, std::move(spec));
  job.metadata.labels[kExperimentLabel] = experiment.metadata.name;
  job.metadata.labels[kTrialIndexLabel] = std::to_string(index);
  nlohmann::json shown = nlohmann::json::object();
  for (const auto& [path, value] : values) shown[path] = value;
  job.metadata.annotations[kTrialParametersAnnotation] = shown.dump();
  job.metadata.owner_references.push_back(controllerRef(experiment));
  return job;
}

std::optional<double> objectiveOf(const kube::TrainingJobStatus& status, ObjectiveMetric metric) {
  if (!status.progress) return std::nullopt;
  return metric == ObjectiveMetric::kLoss ? status.progress->loss : status.progress->test_accuracy;
}

std::optional<int64_t> trialIndexOf(const kube::ObjectMeta& meta) {
  auto it = meta.labels.find(kTrialIndexLabel);
  if (it == meta.labels.end()) return std::nullopt;
  int64_t index = -1;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, index);
  if (ec != std::errc() || ptr != end || index < 0) return std::nullopt;
  return index;
}

}  // namespace ringmaster::op
