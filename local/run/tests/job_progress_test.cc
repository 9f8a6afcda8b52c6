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
  kube::TrainingJob queued = fresh;
  queued.status.reason = "SchedulingGated";
  queued.status.world = "0/2";
  EXPECT_EQ(formatProgress(queued), "Pending (SchedulingGated)  world 0/2");
  kube::TrainingJob failed = queued;
  failed.status.phase = "Failed";
  failed.status.reason = "RankFailed";
  EXPECT_EQ(formatProgress(failed), "Failed  world 0/2");
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

// The README's job as a rerun finds it: its checkpoint claim mounted at /ckpt.
kube::TrainingJob resumedJob(int64_t from, int64_t step, const std::string& mount_path,
                             const std::string& checkpoint_path) {
  kube::TrainingJob job = runningJob(5, step);
  job.spec.trainer->checkpoint.emplace();
  job.spec.trainer->checkpoint->path = checkpoint_path;
  kube::Volume scratch;
  scratch.name = "scratch";
  scratch.empty_dir.emplace();
  kube::Volume ckpt;
  ckpt.name = "ckpt";
  ckpt.persistent_volume_claim.emplace();
  ckpt.persistent_volume_claim->claim_name = "fmnist-ckpt";
  job.spec.volumes = {scratch, ckpt};
  kube::VolumeMount root_mount;
  root_mount.name = "scratch";
  root_mount.mount_path = "/";
  kube::VolumeMount ckpt_mount;
  ckpt_mount.name = "ckpt";
  ckpt_mount.mount_path = mount_path;
  job.spec.volume_mounts = {root_mount, ckpt_mount};
  job.status.progress->resumed_from_step = from;
  return job;
}

TEST(ResumeNote, SaysNothingForARunFromScratch) {
  EXPECT_EQ(resumeNote(runningJob(5, 1175), "/data/kubelet/volumes"), std::nullopt);
}

TEST(ResumeNote, ARunThatContinuedNamesTheStep) {
  EXPECT_EQ(resumeNote(resumedJob(600, 1175, "/ckpt", "/ckpt"), "/data/kubelet/volumes"),
            "  resumed from a checkpoint at step 600");
}

TEST(ResumeNote, ARunThatTrainedNothingSaysWhereTheCheckpointIs) {
  const std::string first =
      "  resumed from a checkpoint at step 1175, already the end of training: this run trained "
      "nothing, and the accuracy is the restored model's\n"
      "  To train from scratch, remove the checkpoints in ";
  struct Case {
    std::string mount_path, checkpoint_path, sub_path, where;
  };
  const Case cases[] = {
      {"/ckpt", "/ckpt", "",
       "/ckpt (claim fmnist-ckpt, here /data/kubelet/volumes/default/fmnist-ckpt)"},
      {"/ckpt/", "/ckpt/run1", "",
       "/ckpt/run1 (claim fmnist-ckpt, here /data/kubelet/volumes/default/fmnist-ckpt/run1)"},
      {"/ckpt", "/ckpt/a/b", "jobs",
       "/ckpt/a/b (claim fmnist-ckpt, here /data/kubelet/volumes/default/fmnist-ckpt/jobs/a/b)"},
      // Not on the claim (a sibling whose name starts the same): the deepest mount is "/".
      {"/ckpt", "/ckpt2", "", "/ckpt2"},
  };
  for (const Case& c : cases) {
    kube::TrainingJob job = resumedJob(1175, 1175, c.mount_path, c.checkpoint_path);
    if (!c.sub_path.empty()) job.spec.volume_mounts[1].sub_path = c.sub_path;
    EXPECT_EQ(resumeNote(job, "/data/kubelet/volumes"), first + c.where)
        << c.mount_path << " " << c.checkpoint_path;
  }
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
