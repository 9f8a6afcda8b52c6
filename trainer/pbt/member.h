#pragma once
// One member of a population-based training population, between two epochs: it publishes its
// objective and checkpoint, gathers the others' (population.h), takes the round's decision
// (lib/search's pbtRound: the same on every member, since every input is in the reports and the
// seed) and, when it is in the bottom quantile, says whose checkpoint to continue from and with
// which optimizer values. It keeps the member's lineage: every exploit, whose weights, which
// values, at which step.
//
// The built-in trainer's values are optimizer fields (contract::kPbtFields), read from and
// written into the run's optimizer settings by path; a program of the user's own (the launcher's
// rounds) explores env.NAME values, which the member only carries.
//
// Thread-safety: one per member (rank 0 of its run). Failure: publish errors; a round where the
// member is alone (the others late past waitSeconds) is no error: it trains on unchanged.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/search/pbt.h"
#include "trainer/pbt/population.h"

namespace ringmaster::trainer::pbt {

// `optimizer`'s value at `path` (one of contract::kPbtFields), and `optimizer` with `values`.
double optimizerValue(const contract::TrainerSettings::Optimizer& optimizer,
                      const std::string& path);
contract::TrainerSettings::Optimizer withValues(contract::TrainerSettings::Optimizer optimizer,
                                                const search::Assignment& values);

struct LineageEntry {
  int64_t round = 0;
  int64_t step = 0;
  std::string source;  // whose weights and optimizer state
  double source_objective = 0;
  double own_objective = 0;       // what this member had reached
  search::Assignment parameters;  // what it trains on from then on
  bool operator==(const LineageEntry&) const = default;
};

// The summary's "pbt" object (contract::trainer_summary: member, the values it ended on, its
// lineage, the seconds its rounds took): what the operator folds into status.progress.pbt.
nlohmann::json summaryJson(const std::string& member, const search::Assignment& parameters,
                           const std::vector<LineageEntry>& lineage, double round_seconds);

// Where a replaced member stands after replaying its rounds: the last round it met in, its step
// then, and the checkpoint to continue from (its own of that round, or its exploit's source's).
struct Replay {
  int64_t round = 0;
  int64_t step = 0;
  std::string checkpoint;
};

struct Decision {
  std::string checkpoint;                          // the source's checkpoint to load
  contract::TrainerSettings::Optimizer optimizer;  // the values to train on
  LineageEntry entry;
};

class Member {
 public:
  // `optimizer`: the values this member starts with (its spec.trainer.optimizer).
  Member(const contract::TrainerSettings::Pbt& settings,
         const contract::TrainerSettings::Optimizer& optimizer);
  // `initial`: the values this member starts with, by path (a program's env.NAME values).
  Member(const contract::TrainerSettings::Pbt& settings, search::Assignment initial);

  const PopulationDirectory& directory() const { return directory_; }
  const std::string& name() const { return settings_.member; }
  // The values this member trains on now.
  const search::Assignment& parameters() const { return parameters_; }
  const std::vector<LineageEntry>& lineage() const { return lineage_; }

  // After interval `round` (1-based: the epochs done), at `step`, with `objective` and its
  // checkpoint written at `checkpoint`: publish, gather, decide. A decision when this member
  // exploits; it then trains on the decision's values (the caller loads the checkpoint).
  core::Result<std::optional<Decision>> interval(int64_t round, int64_t step, double objective,
                                                 const std::string& checkpoint,
                                                 const core::StopSource* stop);
  // A member whose process was replaced (its pod lost, restarted) finds the rounds it met in
  // before in the directory: each is taken again from its own report (so the same decision
  // from the same reports, the values and lineage as they were). nullopt when it met in none.
  core::Result<std::optional<Replay>> replay(const core::StopSource* stop);

 private:
  contract::TrainerSettings::Pbt settings_;
  contract::TrainerSettings::Optimizer optimizer_;
  PopulationDirectory directory_;
  search::Assignment parameters_;
  std::vector<LineageEntry> lineage_;
};

}  // namespace ringmaster::trainer::pbt
