#include "local/run/job_progress.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

using namespace std::chrono_literals;

kube::TrainingJob runningJob(int epoch, int64_t step) {
  kube::TrainingJob job;
  job.metadata.name = "fmnist";
  job.spec.trainer.emplace();
  job.spec.trainer->epochs = 5;
  job.status.phase = "Running";
  job.status.world = "2/2";
  job.status.restarts = 0;
  job.status.progress.emplace();
  job.status.progress->epoch = epoch;
  job.status.progress->step = step;
  job.status.progress->loss = 0.41234;
  job.status.progress->samples_per_second = 48210.4;
  return job;
}

kube::Condition trueCondition(const std::string& type, const std::string& reason) {
  kube::Condition c;
  c.type = type;
  c.status = "True";
  c.reason = reason;
  c.message = "all ranks exited 0";
  return c;
}

TEST(JobProgress, FormatsTheColumnsUsersWatch) {
  EXPECT_EQ(formatProgress(runningJob(3, 1400)),
            "Running  world 2/2  epoch 3/5  step 1400  loss 0.4123  samples/s 48210  restarts 0");
  kube::TrainingJob fresh;
  EXPECT_EQ(formatProgress(fresh), "Pending");
}

TEST(JobProgress, FinishedOnlyOnATrueTerminalCondition) {
  kube::TrainingJob job = runningJob(1, 10);
  EXPECT_EQ(finishedPhase(job), "");
  kube::Condition not_yet = trueCondition("Succeeded", "x");
  not_yet.status = "False";
  job.status.conditions.push_back(not_yet);
  EXPECT_EQ(finishedPhase(job), "");
  job.status.conditions.push_back(trueCondition("Failed", "BackoffLimitExceeded"));
  EXPECT_EQ(finishedPhase(job), "Failed");
  EXPECT_EQ(finalReason(job), "Failed (BackoffLimitExceeded): all ranks exited 0");
}

TEST(JobProgress, FiguresNotMeasuredYetAreNotShown) {
  // The operator leaves loss and samples/s unset until the trainer measured them.
  kube::TrainingJob job = runningJob(1, 0);
  job.status.progress->loss.reset();
  job.status.progress->samples_per_second.reset();
  EXPECT_EQ(formatProgress(job), "Running  world 2/2  epoch 1/5  step 0  restarts 0");
}

TEST(JobProgress, TheFinalLineCarriesTheFailingRanksOwnWords) {
  kube::TrainingJob job = runningJob(1, 10);
  kube::Condition failed = trueCondition("Failed", "RankFailed");
  failed.message =
      "pod fmnist-worker-0 (replica 0) failed with exit code 1: rank 0 exited with code 1: "
      "E CORE [fmnist rank 0/2] dataset /nope: No such file or directory; restartPolicy is Never";
  job.status.conditions.push_back(failed);
  EXPECT_EQ(finalReason(job), "Failed (RankFailed): " + *failed.message);
}

TEST(JobProgress, ReporterSpeaksOnChangesAndThrottlesTheRest) {
  ProgressReporter reporter(5s);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(reporter.observe(runningJob(1, 10), t0));
  EXPECT_FALSE(reporter.observe(runningJob(1, 10), t0 + 1s)) << "nothing changed";
  EXPECT_FALSE(reporter.observe(runningJob(1, 20), t0 + 2s)) << "step only, within 5 s";
  EXPECT_TRUE(reporter.observe(runningJob(1, 30), t0 + 6s)) << "step, after 5 s";
  EXPECT_TRUE(reporter.observe(runningJob(2, 31), t0 + 6500ms)) << "a new epoch at once";
}

}  // namespace
}  // namespace ringmaster::local
