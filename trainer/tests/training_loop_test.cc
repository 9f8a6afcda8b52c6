// The training loop against a scripted engine: which steps it asks for, where rank 0 writes
// checkpoints, when it evaluates, and where it stops, for fresh and resumed runs, max_steps,
// periodic checkpoints and a stop request. Every engine (CPU, GPU, pipeline) inherits this.

#include "trainer/training_loop.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::trainer {
namespace {

// Records every call as one short line; asks the stop source to fire after `stop_after` steps.
class ScriptedEngine final : public StepEngine {
 public:
  ScriptedEngine(int64_t batches, core::StopSource* stop = nullptr, int stop_after = -1)
      : batches_(batches), stop_(stop), stop_after_(stop_after) {}

  int64_t batchesPerEpoch() const override { return batches_; }
  core::Status beginEpoch(int64_t epoch, int64_t first_batch) override {
    calls.push_back("begin " + std::to_string(epoch) + " at " + std::to_string(first_batch));
    return core::Status::Ok();
  }
  core::Result<int> step(int64_t epoch, int64_t batch, int64_t steps_done) override {
    calls.push_back("step " + std::to_string(epoch) + "." + std::to_string(batch) + " after " +
                    std::to_string(steps_done));
    if (++steps_ == stop_after_) stop_->requestStop("test stop");
    return 10;
  }
  core::Result<EpochMeasures> endEpoch(int64_t epoch, int64_t steps) override {
    calls.push_back("end " + std::to_string(epoch) + " with " + std::to_string(steps));
    EpochMeasures m;
    m.train_loss_sum = static_cast<double>(steps);
    return m;
  }
  core::Result<EpochTotals> evaluate(double, int64_t train_steps,
                                     const std::string& what) override {
    calls.push_back("evaluate " + what);
    return EpochTotals(9, 1, 10, 1, static_cast<double>(train_steps));
  }
  core::Status saveCheckpoint(const Position& at) override {
    calls.push_back("checkpoint " + std::to_string(at.epoch) + "/" + std::to_string(at.step) + "/" +
                    std::to_string(at.step_in_epoch));
    return core::Status::Ok();
  }
  uint64_t allreduceCalls() const override { return 0; }
  uint64_t allreduceBytes() const override { return 0; }
  core::Status finish(const TrainSummary&, double) override {
    calls.push_back("finish");
    return core::Status::Ok();
  }

  std::vector<std::string> calls;

 private:
  int64_t batches_;
  core::StopSource* stop_;
  int stop_after_;
  int steps_ = 0;
};

contract::TrainerSettings configWith(int64_t epochs, int64_t max_steps, int64_t every_steps,
                                     bool checkpoints = true) {
  contract::TrainerSettings config;
  config.epochs = epochs;
  config.max_steps = max_steps;
  config.checkpoint.every_steps = every_steps;
  if (checkpoints) config.checkpoint.path = "/unused";  // the engine writes nothing
  return config;
}

struct Case {
  const char* name;
  contract::TrainerSettings config;
  Position start;
  int rank;
  std::vector<std::string> calls;
  int64_t epochs;  // the summary's
};

TEST(TrainingLoop, AsksForTheStepsCheckpointsAndEvaluationsOfEachRun) {
  const std::vector<Case> cases = {
      {"two epochs of two steps, rank 0 checkpoints each epoch's end",
       configWith(2, 0, 0),
       {},
       0,
       {"begin 0 at 0", "step 0.0 after 0", "step 0.1 after 1", "end 0 with 2", "evaluate epoch 1",
        "checkpoint 1/2/0", "begin 1 at 0", "step 1.0 after 2", "step 1.1 after 3", "end 1 with 2",
        "evaluate epoch 2", "checkpoint 2/4/0", "finish"},
       2},
      {"rank 1 writes no checkpoint",
       configWith(1, 0, 0),
       {},
       1,
       {"begin 0 at 0", "step 0.0 after 0", "step 0.1 after 1", "end 0 with 2", "evaluate epoch 1",
        "finish"},
       1},
      {"no checkpoint path: nothing written",
       configWith(1, 0, 1, /*checkpoints=*/false),
       {},
       0,
       {"begin 0 at 0", "step 0.0 after 0", "step 0.1 after 1", "end 0 with 2", "evaluate epoch 1",
        "finish"},
       1},
      {"resumed mid-epoch: the rest of that epoch, then the next",
       configWith(2, 0, 0),
       {0, 1, 1},
       0,
       {"begin 0 at 1", "step 0.1 after 1", "end 0 with 1", "evaluate epoch 1", "checkpoint 1/2/0",
        "begin 1 at 0", "step 1.0 after 2", "step 1.1 after 3", "end 1 with 2", "evaluate epoch 2",
        "checkpoint 2/4/0", "finish"},
       2},
      {"max_steps inside an epoch: the epoch ends early and its position is saved once",
       configWith(2, 3, 0),
       {},
       0,
       {"begin 0 at 0", "step 0.0 after 0", "step 0.1 after 1", "end 0 with 2", "evaluate epoch 1",
        "checkpoint 1/2/0", "begin 1 at 0", "step 1.0 after 2", "end 1 with 1", "evaluate epoch 2",
        "checkpoint 1/3/1", "finish"},
       1},
      {"periodic checkpoints inside an epoch, not at its last step",
       configWith(1, 0, 1),
       {},
       0,
       {"begin 0 at 0", "step 0.0 after 0", "checkpoint 0/1/1", "step 0.1 after 1", "end 0 with 2",
        "evaluate epoch 1", "checkpoint 1/2/0", "finish"},
       1},
      {"resumed at the end: the restored model is evaluated, nothing trained",
       configWith(2, 0, 0),
       {2, 4, 0},
       0,
       {"evaluate evaluating the restored model", "finish"},
       2},
  };
  for (const Case& c : cases) {
    ScriptedEngine engine(2);
    TrainSummary summary;
    core::Status s =
        runTrainingLoop(c.config, {.rank = c.rank, .world = 2, .checkpoint_writer = c.rank == 0},
                        engine, c.start, &summary);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.toString();
    EXPECT_EQ(engine.calls, c.calls) << c.name;
    EXPECT_EQ(summary.epochs, c.epochs) << c.name;
  }
}

TEST(TrainingLoop, AStopRequestCheckpointsWhereTheNextStepWouldStartAndCancels) {
  core::StopSource stop;
  ScriptedEngine engine(4, &stop, /*stop_after=*/3);
  TrainSummary summary;
  core::Status s = runTrainingLoop(configWith(2, 0, 0), {.checkpoint_writer = true, .stop = &stop},
                                   engine, {}, &summary);
  EXPECT_EQ(s.code(), core::Code::kCancelled);
  EXPECT_NE(s.message().find("test stop: stopped at epoch 1 step 3"), std::string::npos)
      << s.message();
  const std::vector<std::string> want = {"begin 0 at 0", "step 0.0 after 0", "step 0.1 after 1",
                                         "step 0.2 after 2", "checkpoint 0/3/3"};
  EXPECT_EQ(engine.calls, want);
}

}  // namespace
}  // namespace ringmaster::trainer
