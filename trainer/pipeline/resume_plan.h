#pragma once
// Where a pipeline resumes after a restart, decided from what each stage's checkpoint
// directory holds. Every stage keeps its own checkpoints, so the stages only resume together
// at a step all of them saved. A stage can also be killed before its first checkpoint is
// whole while another stage already wrote one; the run marker (a number drawn at the run's
// fresh start and written into every stage's directory) tells that case, where the stages
// simply start over, from directories of different runs, which is an error. Parameter servers
// (ps/server_checkpoint.h), each with a directory of its own, resume by the same plan.
//
// Thread-safety: a pure function. Failure: kInvalidArgument naming the stage and the path.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::pipeline {

// What one stage's checkpoint directory holds.
struct StageCheckpoints {
  std::string name;                    // "stage 1 of 2", for messages
  std::optional<int64_t> newest_step;  // its newest valid checkpoint
  std::optional<uint64_t> run;         // its run marker
};

enum class ResumeAction {
  kStartFresh,  // no stage holds a checkpoint: start at step 0 and mark the directories
  kResume,      // every stage holds one: load `step` in each
  kStartOver,   // one run, but a stage never saved: drop the others' checkpoints, start at 0
};

struct ResumePlan {
  ResumeAction action = ResumeAction::kStartFresh;
  int64_t step = 0;           // kResume: the newest step every stage holds
  std::string without;        // kStartOver: the first stage that holds none
  int64_t others_newest = 0;  // kStartOver: the newest step another stage holds
};

// `path` is the job's checkpoint.path, named in errors.
core::Result<ResumePlan> planResume(std::span<const StageCheckpoints> stages,
                                    const std::string& path);

}  // namespace ringmaster::trainer::pipeline
