#pragma once
// A population-based training member that is a program of the user's own (RINGMASTER_PBT on its
// pod, the member's spec.trainer.pbt with `intervals`). The program cannot swap weights while it
// runs, so the launcher runs it once per interval, `intervals` times, and the population meets
// between the runs, through checkpoints. Run i's environment adds:
//   NAME                        each explored env.NAME value (a number as JSON writes it)
//   RINGMASTER_PBT_INTERVAL     i (1-based); RINGMASTER_PBT_INTERVALS: how many
//   RINGMASTER_CHECKPOINT_DIR   <directory>/work/<member>: the run resumes from what it holds
//                               (empty on the first run) and leaves its checkpoint there
// and RINGMASTER_SUMMARY_FILE (launch_plan.h), where the run writes its objective (testAccuracy,
// or finalTrainLoss for a loss). After every run but the last the member meets the others as a
// built-in trainer's members do (trainer/pbt: the same reports, the same decision): its
// checkpoint directory is copied to checkpoints/<member>/round-<i> for the others to take, and
// when it exploits, the source's copy replaces its working directory and the source's values,
// explored, are its next run's. The last run's summary, with the member's lineage under "pbt",
// is the pod's termination message, which the operator folds into status.progress.pbt.
// A member whose pod was replaced (a node lost, a restart) finds its rounds so far in the
// population's directory: resume() replays them (its own reports again, so the same decisions
// from the same reports) and restores its checkpoint directory from the last one's, and it runs
// on from the next interval, with its lineage whole.
//
// Thread-safety: one per pod, from one thread. Failure: bad RINGMASTER_PBT is InvalidArgument
// naming the field; a run that wrote no objective names the interval and the file; I/O errors
// name the path.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "ringmaster/core/stop.h"
#include "trainer/pbt/member.h"

namespace ringmaster::launcher {

class PbtRounds {
 public:
  using Lookup = std::function<const char*(const char*)>;

  // `pbt_json`: RINGMASTER_PBT. The member starts with the values its pod's environment holds
  // (each env.NAME parameter's NAME, as the Experiment wrote it into the trial), read through
  // `lookup`.
  static core::Result<std::unique_ptr<PbtRounds>> create(const std::string& pbt_json,
                                                         const Lookup& lookup);

  // Replays the rounds this member already met in (none on a first start) and returns the
  // interval to run next.
  core::Result<int32_t> resume(const core::StopSource* stop);
  int32_t intervals() const { return settings_.intervals; }
  const std::string& member() const { return settings_.member; }
  const std::string& checkpointDir() const { return work_dir_; }
  // The variables run `interval` adds to the program's environment.
  std::map<std::string, std::string> runEnvironment(int32_t interval) const;
  // The objective run `interval` wrote in `summary_json`.
  core::Result<double> objectiveOf(int32_t interval, const std::string& summary_json) const;
  // After run `interval` (not the last) reached `objective`: publish its checkpoint, gather the
  // others', and on an exploit take the source's checkpoint and values.
  core::Status meet(int32_t interval, double objective, const core::StopSource* stop);
  // The last run's summary with the member's lineage under "pbt".
  core::Result<std::string> finalSummary(const std::string& summary_json) const;

 private:
  PbtRounds(contract::TrainerSettings::Pbt settings, search::Assignment initial);

  contract::TrainerSettings::Pbt settings_;
  trainer::pbt::Member member_;
  std::string work_dir_;
  double round_seconds_ = 0;
};

}  // namespace ringmaster::launcher
