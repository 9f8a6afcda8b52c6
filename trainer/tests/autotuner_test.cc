// Autotune inside a run of two ranks: it measures, chooses, and trains on the choice; the steps
// it trains while tuning count, so the run takes its usual steps and, two ranks' gradient sums
// not depending on how they are bucketed, ends with exactly the parameters of the same run
// untuned. Every sample is in the CSV log and the metrics, the choice in the summary and beside
// the checkpoints, where a restarted run takes it instead of tuning again (unless retune).
#include "trainer/autotuner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trainer/autotune/tuning_session.h"
#include "trainer/tests/rank_threads.h"
#include "trainer/tests/synthetic_data.h"

extern "C" void openblas_set_num_threads(int);

namespace ringmaster::trainer {
namespace {

namespace fs = std::filesystem;

class AutotuneRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm-autotune-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A model of about 1 MiB of gradients, so that the caps make different bucket plans: 2 ranks
  // of 16 steps an epoch.
  contract::TrainerSettings config() const {
    contract::TrainerSettings c = defaultTrainerSettings();
    c.model.hidden = {256, 256};
    c.epochs = 2;
    c.batch_size = 64;
    c.optimizer.learning_rate = 0.05;
    return c;
  }
  contract::TrainerSettings tuned() const {
    contract::TrainerSettings c = config();
    c.autotune.enabled = true;
    c.autotune.max_samples = 5;
    c.autotune.warmup_steps = 1;
    c.autotune.measure_steps = 2;
    c.autotune.log = (dir_ / "autotune.csv").string();
    c.checkpoint.path = (dir_ / "ckpt").string();
    c.checkpoint.every_steps = 0;
    return c;
  }

  fs::path dir_;
  data::Dataset train_ = testing::syntheticSet(2048, 1);
  data::Dataset test_ = testing::syntheticSet(300, 2);
};

TEST_F(AutotuneRun, ChoosesTrainsOnTheChoiceAndChangesNothingItTrains) {
  std::vector<float> plain_params, tuned_params;
  auto plain = testing::runRanks(config(), 2, train_, test_, nullptr, &plain_params);
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  EXPECT_FALSE(plain->autotune.has_value());

  metrics::Registry registry;
  auto metrics = TrainerMetrics::create(registry, "inproc");
  ASSERT_TRUE(metrics.ok()) << metrics.status().toString();
  auto run = testing::runRanks(tuned(), 2, train_, test_, &*metrics, &tuned_params);
  ASSERT_TRUE(run.ok()) << run.status().toString();
  ASSERT_TRUE(run->autotune.has_value());
  const AutotuneChoice& a = *run->autotune;
  EXPECT_FALSE(a.from_checkpoint);
  EXPECT_GE(a.samples, 2);  // the configured caps and at least one other
  EXPECT_LE(a.samples, 5);
  EXPECT_GT(a.default_seconds, 0);
  EXPECT_GT(a.best_seconds, 0);
  EXPECT_LE(a.best_seconds, a.default_seconds);
  // The steps while tuning counted: the same steps, the same model, to the bit.
  EXPECT_EQ(run->steps, plain->steps);
  EXPECT_EQ(run->steps, 2 * 16);
  EXPECT_EQ(tuned_params, plain_params);

  // Every sample in the CSV log (after its header) and the metrics; the choice beside the
  // checkpoints and in the gauges.
  std::ifstream csv(dir_ / "autotune.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), static_cast<size_t>(a.samples) + 1);
  EXPECT_EQ(lines[0], "sample,step,bucketCapMB,firstBucketCapMB,median_step_seconds,best");
  EXPECT_EQ(lines[1].substr(0, 9), "1,3,25,1,");  // the first sample: the configured caps
  EXPECT_DOUBLE_EQ(metrics->autotune_samples->Value(), a.samples);
  for (const char* knob : {autotune::kBucketCapKnob, autotune::kFirstBucketCapKnob}) {
    EXPECT_DOUBLE_EQ(metrics->autotune_setting->Add({{"knob", knob}}).Value(), a.value(knob))
        << knob;
  }
  EXPECT_EQ(a.values.size(), 2u);
  ASSERT_TRUE(fs::exists(dir_ / "ckpt" / kAutotuneChoiceFile));

  // A longer run over that checkpoint directory trains on the choice without tuning again...
  contract::TrainerSettings longer = tuned();
  longer.epochs = 3;
  auto resumed = testing::runRanks(longer, 2, train_, test_);
  ASSERT_TRUE(resumed.ok()) << resumed.status().toString();
  ASSERT_TRUE(resumed->autotune.has_value());
  EXPECT_TRUE(resumed->autotune->from_checkpoint);
  EXPECT_EQ(resumed->autotune->values, a.values);
  EXPECT_EQ(resumed->steps, 3 * 16);
  // ...unless told to tune again.
  longer.epochs = 4;
  longer.autotune.retune = true;
  auto retuned = testing::runRanks(longer, 2, train_, test_);
  ASSERT_TRUE(retuned.ok()) << retuned.status().toString();
  ASSERT_TRUE(retuned->autotune.has_value());
  EXPECT_FALSE(retuned->autotune->from_checkpoint);
  EXPECT_GE(retuned->autotune->samples, 2);
}

// One rank exchanges no gradients: nothing to tune, nothing chosen, the run as usual.
TEST_F(AutotuneRun, OneRankHasNothingToTune) {
  auto run = testing::runRanks(tuned(), 1, train_, test_);
  ASSERT_TRUE(run.ok()) << run.status().toString();
  EXPECT_FALSE(run->autotune.has_value());
  EXPECT_EQ(run->steps, 2 * 32);
  EXPECT_FALSE(fs::exists(dir_ / "autotune.csv"));
}

// One rank with cores to spare tunes its BLAS threads (its only knob): the search measures
// them, trains on the choice, and the run is the untuned one's, up to float rounding, in the
// same steps. OpenBLAS's threads are the process's, so the test puts back the one thread the
// other tests run their rank threads on.
TEST_F(AutotuneRun, OneRankTunesItsBlasThreads) {
  std::vector<float> plain_params, tuned_params;
  auto plain = testing::runRanks(config(), 1, train_, test_, nullptr, &plain_params);
  ASSERT_TRUE(plain.ok()) << plain.status().toString();
  contract::TrainerSettings c = tuned();
  c.autotune.blas_threads = {1, 2};
  auto run = testing::runRanks(c, 1, train_, test_, nullptr, &tuned_params);
  openblas_set_num_threads(1);
  ASSERT_TRUE(run.ok()) << run.status().toString();
  ASSERT_TRUE(run->autotune.has_value());
  const AutotuneChoice& a = *run->autotune;
  ASSERT_EQ(a.values.size(), 1u);  // no bucket caps on one rank
  const double threads = a.value(autotune::kBlasThreadsKnob);
  EXPECT_TRUE(threads == 1 || threads == 2) << threads;
  EXPECT_EQ(a.samples, 2);
  EXPECT_EQ(run->steps, plain->steps);
  ASSERT_EQ(tuned_params.size(), plain_params.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < plain_params.size(); ++i) {
    diff = std::max(diff, std::fabs(double(tuned_params[i]) - plain_params[i]));
    scale = std::max(scale, std::fabs(double(plain_params[i])));
  }
  EXPECT_LE(diff / scale, 1e-5);
  std::ifstream csv(dir_ / "autotune.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "sample,step,blasThreads,median_step_seconds,best");
}

}  // namespace
}  // namespace ringmaster::trainer
