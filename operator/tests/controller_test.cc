#include "operator/controller.h"

#include <gtest/gtest.h>

#include <thread>

#include "fake_api_server.h"
#include "operator/builders.h"
#include "operator/status.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using testing::FakeApiServer;
using testing::kJobs;
using testing::kPods;

class NoProgress : public ProgressSource {
 public:
  core::Result<kube::TrainingProgress> read(const std::string&, int) override {
    return core::unavailable("no trainer in this test");
  }
};

class ControllerTest : public ::testing::Test {
 protected:
  ControllerTest() {
    options_.namespace_name = "default";
    options_.workers = 2;
    options_.informer_poll = std::chrono::milliseconds(20);
  }
  void start() {
    controller_ = std::make_unique<Controller>(api_, events_, kube::realClock(), progress_, nullptr,
                                               options_);
    thread_ = std::jthread([this](std::stop_token s) { controller_->run(s); });
  }
  void stop() {
    thread_.request_stop();
    thread_.join();
  }
  size_t podCount() { return api_.list(kPods).size(); }

  FakeApiServer api_{kube::realClock()};
  kube::EventRecorder events_{api_, kube::realClock(), {"ringmaster-operator", "", "", 4096}};
  NoProgress progress_;
  Controller::Options options_;
  std::unique_ptr<Controller> controller_;
  std::jthread thread_;
};

TEST_F(ControllerTest, AppliedJobGetsItsPodsAndStatusThenStopsCleanly) {
  start();
  ASSERT_TRUE(api_.waitUntil([&] { return controller_->synced(); }, std::chrono::seconds(10)));
  nlohmann::json job = kube::encode(testing::makeJob("fmnist", 3));
  job["metadata"].erase("uid");
  api_.put(kJobs, job);
  ASSERT_TRUE(api_.waitUntil([&] { return podCount() == 3; }, std::chrono::seconds(10)))
      << podCount() << " pods";
  // The pod events reach the job: Created is recorded in its status.
  ASSERT_TRUE(api_.waitUntil(
      [&] {
        auto j = kube::decode<kube::TrainingJob>(*api_.get(kJobs + "/fmnist"));
        return j.ok() && isTrue(j->status, kCreated);
      },
      std::chrono::seconds(10)));
  stop();
  EXPECT_EQ(podCount(), 3u);
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 3);
}

TEST_F(ControllerTest, OwnedPodChangeRequeuesItsJob) {
  nlohmann::json job = kube::encode(testing::makeJob("fmnist", 1));
  job["metadata"].erase("uid");
  api_.put(kJobs, job);
  start();
  ASSERT_TRUE(api_.waitUntil([&] { return podCount() == 1; }, std::chrono::seconds(10)));
  // The kubelet's report of a finished pod is what ends the job.
  nlohmann::json pod = *api_.get(kPods + "/fmnist-worker-0");
  pod["status"]["phase"] = "Succeeded";
  api_.put(kPods, pod);
  ASSERT_TRUE(api_.waitUntil(
      [&] {
        auto j = kube::decode<kube::TrainingJob>(*api_.get(kJobs + "/fmnist"));
        return j.ok() && j->status.phase == "Succeeded";
      },
      std::chrono::seconds(10)));
  stop();
}

// The gang's pods change together; changes inside one batch period are one pass and one status
// write, not one per pod.
TEST_F(ControllerTest, AGangsPodChangesInOneBatchPeriodAreOneStatusWrite) {
  options_.pod_batch_period = std::chrono::seconds(1);
  nlohmann::json job = kube::encode(testing::makeJob("fmnist", 4));
  job["metadata"].erase("uid");
  api_.put(kJobs, job);
  start();
  auto created = [&] {
    auto j = kube::decode<kube::TrainingJob>(*api_.get(kJobs + "/fmnist"));
    return j.ok() && isTrue(j->status, kCreated);
  };
  ASSERT_TRUE(api_.waitUntil(created, std::chrono::seconds(10)));
  // Quiet: no pass is left pending before the gang's pods turn Ready. However slow the run (a
  // sanitized build beside other tests took four writes to get here, not one), that is once the
  // status writes hold still for two batch periods, not after a fixed sleep.
  auto writes = [&] { return api_.count(kube::Verb::kPut, kJobs + "/fmnist/status"); };
  int writes_before = writes();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (auto still = std::chrono::steady_clock::now();
       std::chrono::steady_clock::now() - still < 2 * options_.pod_batch_period;) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the status writes never settled";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (const int now = writes(); now != writes_before) {
      writes_before = now;
      still = std::chrono::steady_clock::now();
    }
  }
  for (int i = 0; i < 4; ++i) {
    nlohmann::json pod = *api_.get(kPods + "/fmnist-worker-" + std::to_string(i));
    pod["spec"]["nodeName"] = "node-a";
    pod["status"]["phase"] = "Running";
    pod["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
    api_.put(kPods, pod);
    // Apart enough for the informer to hand each change over on its own.
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
  }
  ASSERT_TRUE(api_.waitUntil(
      [&] {
        auto j = kube::decode<kube::TrainingJob>(*api_.get(kJobs + "/fmnist"));
        return j.ok() && isTrue(j->status, kRunning);
      },
      std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a straggling pass would write
  stop();
  EXPECT_EQ(writes(), writes_before + 1);
}

// The API server may hold a job the operator's types cannot (an old CRD schema took a quantity
// "abc"): that job alone fails, with the field named; the others run.
TEST_F(ControllerTest, AJobThatDoesNotDecodeFailsAloneAndNamesTheField) {
  nlohmann::json bad = kube::encode(testing::makeJob("bad", 1));
  bad["metadata"].erase("uid");
  bad["spec"]["resources"]["limits"]["cpu"] = "abc";
  api_.put(kJobs, bad);
  start();
  nlohmann::json good = kube::encode(testing::makeJob("good", 2));
  good["metadata"].erase("uid");
  api_.put(kJobs, good);
  ASSERT_TRUE(api_.waitUntil([&] { return podCount() == 2; }, std::chrono::seconds(10)))
      << podCount() << " pods";
  ASSERT_TRUE(api_.waitUntil(
      [&] {
        return api_.get(kJobs + "/bad")
            ->value("status", nlohmann::json::object())
            .contains("phase");
      },
      std::chrono::seconds(10)));
  stop();
  nlohmann::json status = (*api_.get(kJobs + "/bad"))["status"];
  EXPECT_EQ(status["phase"], "Failed") << status.dump(2);
  auto decoded = kube::decode<kube::TrainingJobStatus>(status);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  const kube::Condition* failed = findCondition(*decoded, kFailed);
  ASSERT_NE(failed, nullptr) << status.dump(2);
  EXPECT_EQ(failed->reason, "InvalidSpec");
  EXPECT_NE(failed->message->find("spec.resources.limits.cpu"), std::string::npos)
      << *failed->message;
  EXPECT_NE(failed->message->find("abc"), std::string::npos) << *failed->message;
  // Nothing was created for it, and a Warning Event says why.
  EXPECT_FALSE(api_.get(kPods + "/bad-worker-0").has_value());
  bool warned = false;
  for (const nlohmann::json& event : api_.list("/api/v1/namespaces/default/events")) {
    warned |= event.value("reason", "") == "InvalidSpec" && event.value("type", "") == "Warning" &&
              event["involvedObject"].value("name", "") == "bad";
  }
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace ringmaster::op
