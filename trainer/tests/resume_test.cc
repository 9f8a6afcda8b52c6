// A run that resumes where training already ended (a job re-created over the checkpoint volume
// of a finished one) trains nothing, evaluates the restored model and reports it: the epochs
// and steps of the checkpoint, its test accuracy, and no throughput or train loss at all. And a
// run with globalBatchSize resumes exactly at another world size.
#include "trainer/resume.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "ringmaster/contract/trainer_summary.h"
#include "trainer/tests/rank_threads.h"
#include "trainer/tests/synthetic_data.h"
#include "trainer/trainer.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

namespace fs = std::filesystem;

TEST(TrainingComplete, IsTheEndOfTheEpochsOrOfMaxSteps) {
  struct Case {
    int64_t epochs, max_steps;
    Position pos;
    bool complete;
  };
  const Case cases[] = {
      {2, 0, {0, 0, 0}, false},   // fresh
      {2, 0, {1, 8, 0}, false},   // one epoch of two done
      {2, 0, {1, 12, 4}, false},  // inside the second epoch
      {2, 0, {2, 16, 0}, true},   // both done
      {2, 0, {5, 40, 0}, true},   // a checkpoint of a longer run
      {2, 5, {0, 5, 5}, true},    // max_steps reached inside the first epoch
      {2, 5, {0, 4, 4}, false},  {2, 8, {1, 8, 0}, true},  // max_steps reached at an epoch's end
  };
  for (const Case& c : cases) {
    contract::TrainerSettings config = defaultTrainerSettings();
    config.epochs = c.epochs;
    config.max_steps = c.max_steps;
    EXPECT_EQ(trainingComplete(config, c.pos), c.complete)
        << "epochs " << c.epochs << ", max_steps " << c.max_steps << ", at epoch " << c.pos.epoch
        << " step " << c.pos.step << " (" << c.pos.step_in_epoch << " in the epoch)";
  }
}

using testing::syntheticSet;

class ResumeAtTheEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm-resume-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove(dir_.string() + "-summary.json");
  }

  contract::TrainerSettings config() const {
    contract::TrainerSettings c = defaultTrainerSettings();
    c.model.hidden = {32};
    c.epochs = 2;
    c.batch_size = 64;  // 512 samples: 8 steps per epoch on one rank
    c.optimizer.learning_rate = 0.05;
    c.checkpoint.path = dir_.string();
    c.checkpoint.every_steps = 0;
    return c;
  }

  // Runs `world` ranks (threads) over the same checkpoint directory; returns rank 0's summary.
  // Rank 0 reports to `metrics` when given.
  core::Result<TrainSummary> run(const contract::TrainerSettings& c, int world = 1,
                                 TrainerMetrics* metrics = nullptr,
                                 std::vector<float>* params = nullptr) {
    return testing::runRanks(c, world, train_, test_, metrics, params);
  }

  fs::path dir_;
  data::Dataset train_ = syntheticSet(512, 1);
  data::Dataset test_ = syntheticSet(300, 2);
};

TEST_F(ResumeAtTheEnd, EvaluatesTheRestoredModelAndReportsNoTraining) {
  auto first = run(config());
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->epochs, 2);
  EXPECT_EQ(first->steps, 16);
  EXPECT_EQ(first->resumed_from_step, -1);
  ASSERT_TRUE(first->samples_per_second.has_value());
  ASSERT_TRUE(first->final_train_loss.has_value());
  ASSERT_TRUE(first->test_accuracy.has_value());
  EXPECT_GT(*first->test_accuracy, 0.2) << "the synthetic set is learnable";

  metrics::Registry registry;
  auto metrics = TrainerMetrics::create(registry, "inproc");
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  auto again = run(config(), 1, &*metrics);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(metrics->epoch->Value(), 2);
  EXPECT_EQ(metrics->steps->Value(), 0) << "no step trained";
  EXPECT_EQ(metrics->checkpoints->Value(), 0) << "the checkpoint is not written again";
  EXPECT_EQ(metrics->loss->Value(), 0) << "no train loss: the gauge stays unset";
  EXPECT_FLOAT_EQ(metrics->accuracy->Value(), again->test_accuracy.value_or(-1));
  EXPECT_EQ(again->resumed_from_step, 16);
  EXPECT_EQ(again->epochs, 2);
  EXPECT_EQ(again->steps, 16);
  EXPECT_FALSE(again->samples_per_second.has_value());
  EXPECT_FALSE(again->steady_samples_per_second.has_value());
  EXPECT_FALSE(again->final_train_loss.has_value());
  ASSERT_TRUE(again->test_accuracy.has_value());
  EXPECT_EQ(*again->test_accuracy, *first->test_accuracy) << "the same model, evaluated again";
  EXPECT_EQ(again->test_loss, first->test_loss);

  // Two ranks over the same checkpoint: each evaluates its share, the counts are summed.
  auto two = run(config(), 2);
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->steps, 16);
  ASSERT_TRUE(two->test_accuracy.has_value());
  EXPECT_EQ(*two->test_accuracy, *first->test_accuracy);
  EXPECT_NEAR(two->test_loss.value_or(-1), first->test_loss.value_or(1), 1e-5);
}

TEST_F(ResumeAtTheEnd, MaxStepsReachedInsideAnEpochIsTheEndToo) {
  contract::TrainerSettings c = config();
  c.max_steps = 5;
  auto first = run(c);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->steps, 5);
  EXPECT_EQ(first->epochs, 0) << "the first epoch was not finished";

  auto again = run(c);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->resumed_from_step, 5);
  EXPECT_EQ(again->steps, 5);
  EXPECT_EQ(again->epochs, 0);
  EXPECT_FALSE(again->samples_per_second.has_value());
  EXPECT_EQ(again->test_accuracy, first->test_accuracy);

  // Raising max_steps continues the same run from step 5.
  c.max_steps = 12;
  auto more = run(c);
  ASSERT_TRUE(more.ok()) << more.status().message();
  EXPECT_EQ(more->resumed_from_step, 5);
  EXPECT_EQ(more->steps, 12);
  EXPECT_EQ(more->epochs, 1);
  EXPECT_TRUE(more->samples_per_second.has_value());
}

// A job that restarts at another world size with globalBatchSize trains what one uninterrupted
// run would: the same samples in each step (each rank's share of the step's global batch), the
// same number of steps, the same learning rate. 4 ranks train 5 steps, 2 ranks resume at step 5
// and finish; the parameters are a single rank's after all 16 steps, to float rounding.
TEST_F(ResumeAtTheEnd, GlobalBatchSizeResumesAtAnotherWorldSizeExactly) {
  contract::TrainerSettings c = config();
  c.global_batch_size = 64;  // 16 per rank at 4 ranks, 32 at 2, 64 at 1: 8 steps an epoch
  c.optimizer.momentum = 0.9;
  c.optimizer.schedule = contract::LrSchedule::kCosine;

  contract::TrainerSettings whole = c;
  whole.checkpoint.path = dir_.string() + "-whole";
  std::vector<float> reference;
  auto uninterrupted = run(whole, 1, nullptr, &reference);
  fs::remove_all(whole.checkpoint.path);
  ASSERT_TRUE(uninterrupted.ok()) << uninterrupted.status().message();
  EXPECT_EQ(uninterrupted->steps, 16);

  contract::TrainerSettings cut = c;
  cut.max_steps = 5;
  auto four = run(cut, 4);
  ASSERT_TRUE(four.ok()) << four.status().message();
  EXPECT_EQ(four->steps, 5);
  std::vector<float> resumed;
  auto two = run(c, 2, nullptr, &resumed);
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_EQ(two->resumed_from_step, 5);
  EXPECT_EQ(two->steps, 16);
  EXPECT_EQ(two->epochs, 2);

  ASSERT_EQ(resumed.size(), reference.size());
  double scale = 0, worst = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(reference[i])));
    worst = std::max(worst, static_cast<double>(std::abs(resumed[i] - reference[i])));
  }
  std::ostringstream relative;
  relative << worst / scale;
  RecordProperty("max_relative_difference", relative.str());
  EXPECT_LE(worst / scale, 1e-5) << "max |difference| " << worst << " of max |parameter| " << scale;

  // A world the global batch does not split among is refused, naming the field.
  fs::remove_all(dir_);
  auto three = run(c, 3);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.status().message().find("trainer.globalBatchSize: 64 samples do not split "
                                          "evenly among 3 ranks"),
            std::string::npos)
      << three.status().message();
}

TEST_F(ResumeAtTheEnd, MaxStepsAtAnEpochsEndEndsWithThatEpoch) {
  contract::TrainerSettings c = config();
  c.max_steps = 8;  // exactly the first epoch
  metrics::Registry registry;
  auto metrics = TrainerMetrics::create(registry, "inproc");
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  auto first = run(c, 1, &*metrics);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->steps, 8);
  EXPECT_EQ(first->epochs, 1);
  EXPECT_TRUE(first->final_train_loss.has_value());
  // No second epoch of zero steps is started, evaluated or checkpointed.
  EXPECT_EQ(metrics->epoch->Value(), 1);
  EXPECT_EQ(metrics->checkpoints->Value(), 1);
}

TEST_F(ResumeAtTheEnd, TheSummaryLeavesOutWhatWasNotMeasured) {
  ASSERT_TRUE(run(config()).ok());
  auto again = run(config());
  ASSERT_TRUE(again.ok()) << again.status().message();
  const fs::path path = dir_.string() + "-summary.json";
  ASSERT_TRUE(writeSummaryJson(*again, path.string()).ok());
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  namespace key = contract::trainer_summary;
  EXPECT_EQ(j.at(key::kEpochs), 2);
  EXPECT_EQ(j.at(key::kSteps), 16);
  EXPECT_EQ(j.at(key::kResumedFromStep), 16);
  EXPECT_TRUE(j.contains(key::kTestAccuracy));
  EXPECT_TRUE(j.contains(key::kTestLoss));
  EXPECT_FALSE(j.contains(key::kSamplesPerSecond)) << j.dump();
  EXPECT_FALSE(j.contains(key::kSteadySamplesPerSecond)) << j.dump();
  EXPECT_FALSE(j.contains(key::kFinalTrainLoss)) << j.dump();
}

}  // namespace
}  // namespace ringmaster::trainer
