// e2e, autotune on the user's path: `ringmaster local run examples/fashion-mnist-autotune.yaml`
// trains the README's MLP on 2 worker pods with spec.trainer.autotune. Worker 0's log shows the
// samples the search measured (the configured caps first) and its choice, the other pod trained
// under that choice too (it followed rank 0's decisions), and the job ends Succeeded with the
// accuracy its two epochs reach untuned. The same for a pipeline's micro-batch count:
// examples/fashion-mnist-pipeline-autotune.yaml, two stages in two pods, both rebuilt for every
// count stage 0 measures.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "local_cluster.h"
#include "local_run_checks.h"
#include "process.h"

namespace ringmaster {
namespace {

TEST(LocalRunAutotuneE2e, TheSearchChoosesAndTheJobSucceeds) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testutil::TempDir dir;
  e2e::ExampleRun example =
      e2e::runExample("fashion-mnist-autotune.yaml", dir.path(),
                      {"fmnist-autotune-worker-0", "fmnist-autotune-worker-1"});
  const std::string outcome = example.run.stdout_text + example.run.stderr_text;
  const testutil::ProcessResult& worker0 = example.logs["fmnist-autotune-worker-0"];
  const testutil::ProcessResult& worker1 = example.logs["fmnist-autotune-worker-1"];
  ASSERT_EQ(example.run.exit_code, 0) << outcome;
  EXPECT_EQ(example.down.exit_code, 0) << example.down.stdout_text << example.down.stderr_text;
  EXPECT_NE(example.run.stdout_text.find("fmnist-autotune: Succeeded"), std::string::npos)
      << outcome;
  const std::string& log = worker0.stdout_text;
  EXPECT_NE(log.find("autotune: up to 12 samples of 13 steps (3 warm-up) over bucketCapMB in"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("autotune sample 1 at step 13: bucketCapMB=25 firstBucketCapMB=1"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("autotune chose bucketCapMB="), std::string::npos) << log;
  EXPECT_EQ(log.find("autotune sample 13 "), std::string::npos) << "past maxSamples:\n" << log;
  // Rank 1 logs no samples: rank 0 decides.
  EXPECT_EQ(worker1.stdout_text.find("autotune sample"), std::string::npos) << worker1.stdout_text;
  EXPECT_GE(e2e::testAccuracy(log), 0.83) << log;
}

TEST(LocalRunAutotuneE2e, APipelinesMicroBatchCountIsTunedAndTheJobSucceeds) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testutil::TempDir dir;
  e2e::ExampleRun example =
      e2e::runExample("fashion-mnist-pipeline-autotune.yaml", dir.path(),
                      {"fmnist-pipeline-autotune-worker-0", "fmnist-pipeline-autotune-worker-1"});
  const std::string outcome = example.run.stdout_text + example.run.stderr_text;
  const std::string& log = example.logs["fmnist-pipeline-autotune-worker-0"].stdout_text;
  const std::string& stage1 = example.logs["fmnist-pipeline-autotune-worker-1"].stdout_text;
  ASSERT_EQ(example.run.exit_code, 0) << outcome;
  EXPECT_EQ(example.down.exit_code, 0) << example.down.stdout_text << example.down.stderr_text;
  EXPECT_NE(example.run.stdout_text.find("fmnist-pipeline-autotune: Succeeded"), std::string::npos)
      << outcome;
  EXPECT_NE(log.find("autotune: up to 8 samples of 13 steps (3 warm-up) over microBatches in "
                     "{1, 2, 4, 8, 16, 32}"),
            std::string::npos)
      << log;
  // One micro-batch per stage first, then the search steps up: the stages were rebuilt.
  EXPECT_NE(log.find("autotune sample 1 at step 13: microBatches=2 "), std::string::npos) << log;
  EXPECT_NE(log.find("autotune sample 2 at step 26: microBatches=4 "), std::string::npos) << log;
  EXPECT_NE(log.find("autotune chose microBatches="), std::string::npos) << log;
  EXPECT_EQ(stage1.find("autotune sample"), std::string::npos) << stage1;
  // The accuracy two untuned epochs reach (rank 0 reports what the last stage scored).
  EXPECT_GE(e2e::testAccuracy(log), 0.83) << log;
}

}  // namespace
}  // namespace ringmaster
