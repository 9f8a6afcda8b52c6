#include "trainer/pipeline/resume_plan.h"

#include <algorithm>

namespace ringmaster::trainer::pipeline {

core::Result<ResumePlan> planResume(std::span<const StageCheckpoints> stages,
                                    const std::string& path) {
  const StageCheckpoints* without = nullptr;
  const StageCheckpoints* ahead = nullptr;  // the stage with the newest checkpoint
  int64_t common = 0;
  for (const StageCheckpoints& s : stages) {
    if (!s.newest_step) {
      if (without == nullptr) without = &s;
      continue;
    }
    common = ahead == nullptr ? *s.newest_step : std::min(common, *s.newest_step);
    if (ahead == nullptr || *s.newest_step > *ahead->newest_step) ahead = &s;
  }
  if (ahead == nullptr) return ResumePlan{};

  // Directories marked by different runs never resume together. An unmarked one (written
  // before stages were marked) is judged by its checkpoints alone.
  const StageCheckpoints* marked = nullptr;
  for (const StageCheckpoints& s : stages) {
    if (!s.run) continue;
    if (marked == nullptr) {
      marked = &s;
    } else if (*s.run != *marked->run) {
      return core::invalidArgument(
          marked->name + " and " + s.name + " under " + path +
          " hold checkpoints of different runs; use another checkpoint.path");
    }
  }

  if (without == nullptr) return ResumePlan{ResumeAction::kResume, common, "", 0};

  const bool one_run = std::all_of(stages.begin(), stages.end(),
                                   [](const StageCheckpoints& s) { return s.run.has_value(); });
  if (one_run) return ResumePlan{ResumeAction::kStartOver, 0, without->name, *ahead->newest_step};
  return core::invalidArgument(
      without->name + " has no checkpoint under " + path + " while " + ahead->name +
      " has one at step " + std::to_string(*ahead->newest_step) +
      ": the stages' checkpoints are not from one run; use another checkpoint.path");
}

}  // namespace ringmaster::trainer::pipeline
