// e2e under `ringmaster local up`, and again on a real control plane (envtest) that the local
// kubelet and operator join, driven with real kubectl: examples/fashion-mnist-ps-elastic.yaml, a
// parameter-server job whose worker count follows spec.replicas. It starts with 1 worker pod;
// `kubectl scale` to 2 (the scale subresource) creates worker 1, whose trainer joins the server at
// its step; `kubectl patch` back to 1 deletes it, and its rank leaves the server. Nothing restarts
// (status.restarts stays 0), the Resized condition says ScaledUp and then ScaledDown, a count
// beyond maxReplicas is refused by the API server, and the job Succeeds once the run's pushes are
// in, at the accuracy of a run that never scaled.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "local_cluster.h"
#include "local_run_checks.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
using testutil::eventually;
using testutil::hasCondition;

constexpr char kJob[] = "fmnist-ps-elastic";

class PsScalingE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }

  // `kubectl scale`: the scale subresource's PATCH.
  testutil::ProcessResult scaleTo(int replicas) {
    return cluster_.kubectl(
        {"scale", "trainingjob", kJob, "--replicas=" + std::to_string(replicas)});
  }
  // `kubectl patch` of spec.replicas.
  testutil::ProcessResult patchTo(int replicas) {
    return cluster_.kubectl({"patch", "trainingjob", kJob, "--type", "merge", "-p",
                             "{\"spec\":{\"replicas\":" + std::to_string(replicas) + "}}"});
  }
  // The trainer process of rank `rank` in this cluster's pods (0 when none).
  pid_t trainerOf(int rank) {
    return cluster_.findProcess("ringmaster-trainer",
                                {{"RINGMASTER_JOB", kJob}, {"RANK", std::to_string(rank)}});
  }
  // Holds a process (SIGSTOP) until released or destroyed (SIGCONT).
  class Held {
   public:
    explicit Held(pid_t pid) : pid_(pid) { kill(pid_, SIGSTOP); }
    ~Held() { release(); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    void release() const { kill(pid_, SIGCONT); }

   private:
    pid_t pid_;
  };
  // Whether pod `pod`'s log has `text` yet.
  bool logged(const std::string& pod, const std::string& text) {
    return cluster_.podLog(pod).find(text) != std::string::npos;
  }

  testutil::LocalCluster cluster_{GetParam()};
};

INSTANTIATE_TEST_SUITE_P(ControlPlanes, PsScalingE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

TEST_P(PsScalingE2e, WorkersJoinAndLeaveAsSpecReplicasChangesWithoutARestart) {
  if (!std::filesystem::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  std::ifstream in(std::string(std::getenv("RM_SOURCE_DIR")) +
                   "/examples/fashion-mnist-ps-elastic.yaml");
  std::stringstream example;
  example << in.rdbuf();
  const testutil::ProcessResult applied = cluster_.apply(example.str());
  ASSERT_EQ(applied.exit_code, 0) << applied.stdout_text << applied.stderr_text;
  const std::string worker0 = std::string(kJob) + "-worker-0";
  const std::string worker1 = std::string(kJob) + "-worker-1";
  // The server's pod comes after the job's 3 worker slots: its name counts among the ps pods.
  const std::string server = std::string(kJob) + "-ps-0";

  ASSERT_TRUE(eventually(300s, [&] { return logged(worker0, " step 100 loss"); }))
      << cluster_.podLog(worker0) << cluster_.get("trainingjob", kJob).dump(2);
  EXPECT_TRUE(logged(server, "for 1 of up to 3 worker(s), staleness 4")) << cluster_.podLog(server);
  // The trainers are held while the job scales up and down (the launchers go on, pod 0's serving
  // the store), so that however loaded this machine, the run cannot end before both happened.
  const pid_t trainer0 = trainerOf(0);
  ASSERT_GT(trainer0, 0) << "no trainer of " << worker0;
  const Held held0(trainer0);

  // Up: worker 1's pod is made, and its trainer joins the server where the run is.
  testutil::ProcessResult up = scaleTo(2);
  ASSERT_EQ(up.exit_code, 0) << up.stdout_text << up.stderr_text;
  EXPECT_NE(up.stdout_text.find("trainingjob.ringmaster.dev/fmnist-ps-elastic scaled"),
            std::string::npos)
      << up.stdout_text;
  ASSERT_TRUE(eventually(180s, [&] { return logged(server, "worker 1 rejoined at step "); }))
      << cluster_.podLog(server) << cluster_.get("trainingjob", kJob).dump(2);
  EXPECT_TRUE(logged(worker1, ": joined 1 parameter server(s) at step "))
      << cluster_.podLog(worker1);
  nlohmann::json job = cluster_.get("trainingjob", kJob);
  EXPECT_TRUE(hasCondition(job, "Resized", "True", "ScaledUp")) << job.dump(2);
  EXPECT_EQ(job["status"].value("currentReplicas", 0), 2) << job.dump(2);
  // The Scale autoscalers read: spec.replicas, status.currentReplicas as its status, and the
  // selector of the worker pods.
  const testutil::ProcessResult scale =
      cluster_.kubectl({"get", "trainingjob", kJob, "--subresource=scale", "-o",
                        "jsonpath={.kind} {.spec.replicas} {.status.replicas} {.status.selector}"});
  EXPECT_EQ(scale.stdout_text,
            "Scale 2 2 ringmaster.dev/job-name=fmnist-ps-elastic,ringmaster.dev/role=worker,"
            "!ringmaster.dev/standby")
      << scale.stdout_text << scale.stderr_text;
  // The newcomer may have run its few steps ahead of worker 0 (the staleness bound); held too.
  const pid_t trainer1 = trainerOf(1);
  ASSERT_GT(trainer1, 0) << "no trainer of " << worker1;
  std::optional<Held> held1(trainer1);

  // Beyond maxReplicas: refused at the API server, naming the bounds.
  const testutil::ProcessResult beyond = scaleTo(4);
  EXPECT_NE(beyond.exit_code, 0) << beyond.stdout_text;
  EXPECT_NE(beyond.stderr_text.find("minReplicas <= spec.replicas <= maxReplicas"),
            std::string::npos)
      << beyond.stderr_text;

  // Down: worker 1's pod is deleted; once both trainers go on, its trainer stops between steps
  // and its rank leaves the server.
  testutil::ProcessResult down = patchTo(1);
  ASSERT_EQ(down.exit_code, 0) << down.stdout_text << down.stderr_text;
  ASSERT_TRUE(eventually(120s, [&] {
    const nlohmann::json pod = cluster_.get("pod", worker1);
    return pod.empty() || pod["metadata"].contains("deletionTimestamp");
  })) << cluster_.get("pod", worker1).dump(2);
  held1.reset();
  held0.release();
  ASSERT_TRUE(eventually(120s, [&] { return logged(server, "worker 1 left"); }))
      << cluster_.podLog(server) << cluster_.podLog(worker1);

  job = cluster_.waitForJob(kJob, 600s, testutil::jobFinished);
  ASSERT_EQ(testutil::jobPhase(job), "Succeeded") << job.dump(2);
  EXPECT_EQ(job["status"].value("restarts", -1), 0) << job.dump(2);
  EXPECT_EQ(job["status"].value("currentReplicas", 0), 1) << job.dump(2);
  EXPECT_TRUE(hasCondition(job, "Resized", "True", "ScaledDown")) << job.dump(2);
  EXPECT_TRUE(cluster_.get("pod", worker1).empty()) << cluster_.get("pod", worker1).dump(2);
  // 4 epochs of the whole data set at batch 128 (469 batches each), whoever pushed them.
  const std::string log = cluster_.podLog(server);
  const size_t at = log.rfind("done, every worker left: ");
  ASSERT_NE(at, std::string::npos) << log;
  const double pushes = std::atof(log.c_str() + at + 25);
  EXPECT_GE(pushes, 4 * 469) << log;
  EXPECT_LE(pushes, 4 * 469 + 3) << log;
  EXPECT_GE(e2e::testAccuracy(cluster_.podLog(worker0)), 0.83) << cluster_.podLog(worker0);
}

}  // namespace
}  // namespace ringmaster
