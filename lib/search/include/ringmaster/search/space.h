#pragma once
// A hyperparameter search space over a TrainingJob template's spec.trainer: each parameter names
// a field by its path under spec.trainer ("optimizer.learningRate", "batchSize", "model.hidden")
// and how its values are drawn: a range (linear or log scale, real or integer) or a list of
// choices (any JSON the field takes: numbers, strings, arrays). What the grid and the random
// search try, and what PBT's explore step perturbs.
//
// Draws are a pure function of (seed, trial index, parameter): an operator that restarts draws
// again exactly what it drew, so a trial is never drawn twice or lost. The generator is
// SplitMix64 written here, because the standard distributions differ between standard libraries.
//
// Thread-safety: pure functions over plain values. Failure: validateSpace's field errors, one per
// problem, each naming the parameter's field.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/contract/field_errors.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::search {

enum class Scale { kLinear, kLog };

struct Parameter {
  std::string path;  // under spec.trainer: dot-separated keys, as in the YAML
  // A range (min < max; the log scale needs min > 0; integer rounds to whole numbers), or
  // choices (at least one); never both.
  std::optional<double> min, max;
  Scale scale = Scale::kLinear;
  bool integer = false;
  std::vector<nlohmann::json> choices;
  // A range's values in a grid search: this many, evenly spaced on its scale, both ends in.
  int32_t grid_points = 0;

  bool isRange() const { return min.has_value() || max.has_value(); }
  bool operator==(const Parameter&) const = default;
};

// One trial's values, parameter by parameter in the space's order.
using Assignment = std::vector<std::pair<std::string, nlohmann::json>>;

// Problems of `space` under `prefix` (e.g. "spec.parameters"): none at all, a path twice or
// empty, a range without both ends, min >= max, a log range through or below 0, an integer range
// without a whole number in it, a parameter that is both a range and choices, a grid size below 2.
// `grid`: the search is a grid, so every range needs its grid_points.
std::vector<contract::FieldError> validateSpace(const std::vector<Parameter>& space,
                                                const std::string& prefix, bool grid);

// The space `specs` describes (an Experiment's spec.parameters, a pbt member's
// spec.trainer.pbt.parameters) into *space, and its problems under `prefix`: unknown fields, a
// missing path, a scale other than linear or log, and validateSpace's.
std::vector<contract::FieldError> spaceOf(const std::vector<kube::SearchParameterSpec>& specs,
                                          const std::string& prefix, bool grid,
                                          std::vector<Parameter>* space);

// Every combination of the parameters' grid values, the first parameter varying slowest. A
// range's values: grid_points evenly on its scale, ends included (integers rounded, repeats
// dropped); choices as listed. Requires validateSpace(space, ..., true) to be empty.
std::vector<Assignment> gridOf(const std::vector<Parameter>& space);
// gridOf(space)[index] without making the others; requires 0 <= index < gridSize(space).
Assignment gridAt(const std::vector<Parameter>& space, int64_t index);
// How many assignments gridOf() returns, without making them (saturates at INT64_MAX).
int64_t gridSize(const std::vector<Parameter>& space);

// Trial `index`'s random draw from `seed`: a range uniform on its scale, a choice uniform.
Assignment sampleOf(const std::vector<Parameter>& space, uint64_t seed, int64_t index);
// One parameter's draw for trial `index`, stream `stream` (the others draw their own).
nlohmann::json drawValue(const Parameter& parameter, uint64_t seed, int64_t index, int64_t stream);

// A uniform double in [0, 1) from (seed, a, b): SplitMix64 over the three.
double uniform01(uint64_t seed, uint64_t a, uint64_t b);

// Sets each path of `assignment` in `trainer` (spec.trainer as JSON), making objects on the way.
// A path through something that is not an object is kInvalidArgument naming it.
core::Status applyAssignment(const Assignment& assignment, nlohmann::json& trainer);

// "optimizer.learningRate=0.01, batchSize=64", for names, logs and Events.
std::string describe(const Assignment& assignment);

}  // namespace ringmaster::search
