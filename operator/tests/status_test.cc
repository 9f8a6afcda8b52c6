#include "operator/status.h"

#include <gtest/gtest.h>

#include <functional>
#include <tuple>

#include "operator/builders.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using testing::defaulted;
using testing::makeJob;

const kube::Time kT0 = kube::Time::fromUnixSeconds(1795312800);
const kube::Time kT1 = kube::Time::fromUnixSeconds(1795312860);

kube::Pod pod(const kube::TrainingJob& job, int i, const std::string& phase, bool ready,
              std::optional<int> exit_code = std::nullopt) {
  kube::Pod p = buildWorkerPod(job, i, 0, "store-secret-for-tests");
  p.status.phase = phase;
  kube::Condition c;
  c.type = "Ready";
  c.status = ready ? "True" : "False";
  p.status.conditions.push_back(c);
  if (exit_code) {
    kube::ContainerStatus cs;
    cs.name = "worker";
    cs.state = kube::ContainerState{};
    cs.state->terminated = kube::ContainerStateTerminated{};
    cs.state->terminated->exit_code = *exit_code;
    p.status.container_statuses.push_back(cs);
  }
  return p;
}

struct Row {
  std::string what;
  std::vector<std::pair<std::string, bool>> pods;  // phase, ready; "" = missing
  int active, ready, succeeded, failed;
  std::string world;
  std::string running;  // Running condition status, "" = absent
  std::string phase;
};

class ObservePods : public ::testing::TestWithParam<Row> {};

TEST_P(ObservePods, DerivesCountsWorldAndRunning) {
  const Row& row = GetParam();
  kube::TrainingJob job = makeJob("fmnist", static_cast<int>(row.pods.size()));
  job.spec.procs_per_replica = 2;
  job = defaulted(job);
  std::vector<WorkerPod> storage;
  storage.reserve(row.pods.size());
  std::vector<const WorkerPod*> pods;
  for (size_t i = 0; i < row.pods.size(); ++i) {
    if (row.pods[i].first.empty()) {
      pods.push_back(nullptr);
      continue;
    }
    storage.push_back(
        workerPodOf(pod(job, static_cast<int>(i), row.pods[i].first, row.pods[i].second)));
    pods.push_back(&storage.back());
  }
  kube::TrainingJobStatus status;
  observePods(job, pods, kT0, status);
  ASSERT_TRUE(status.replicas.has_value());
  EXPECT_EQ(status.replicas->active, row.active) << row.what;
  EXPECT_EQ(status.replicas->ready, row.ready) << row.what;
  EXPECT_EQ(status.replicas->succeeded, row.succeeded) << row.what;
  EXPECT_EQ(status.replicas->failed, row.failed) << row.what;
  EXPECT_EQ(status.world, row.world) << row.what;
  EXPECT_EQ(status.world_size, static_cast<int>(row.pods.size()) * 2);
  const kube::Condition* running = findCondition(status, kRunning);
  EXPECT_EQ(running ? running->status : "", row.running) << row.what;
  EXPECT_EQ(status.phase, row.phase) << row.what;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ObservePods,
    ::testing::Values(
        Row{"no pods yet", {{"", false}, {"", false}}, 0, 0, 0, 0, "0/4", "", "Pending"},
        Row{"pending pods",
            {{"Pending", false}, {"Pending", false}},
            2,
            0,
            0,
            0,
            "0/4",
            "False",
            "Pending"},
        Row{"running but one rank has not joined",
            {{"Running", true}, {"Running", false}},
            2,
            1,
            0,
            0,
            "2/4",
            "False",
            "Pending"},
        Row{"every rank joined",
            {{"Running", true}, {"Running", true}},
            2,
            2,
            0,
            0,
            "4/4",
            "True",
            "Running"},
        Row{"one pod missing",
            {{"Running", true}, {"", false}},
            1,
            1,
            0,
            0,
            "2/4",
            "False",
            "Pending"},
        Row{"one failed",
            {{"Running", true}, {"Failed", false}},
            1,
            1,
            0,
            1,
            "2/4",
            "False",
            "Pending"},
        Row{"one succeeded",
            {{"Succeeded", false}, {"Running", true}},
            1,
            1,
            1,
            0,
            "2/4",
            "False",
            "Pending"},
        Row{"ready but not running is not ready",
            {{"Pending", true}, {"Running", true}},
            2,
            1,
            0,
            0,
            "2/4",
            "False",
            "Pending"}),
    [](const ::testing::TestParamInfo<Row>& info) {
      std::string name;
      for (char c : info.param.what) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

TEST(Status, ConditionKeepsLastTransitionTimeWhileItsStatusHolds) {
  kube::TrainingJobStatus status;
  setCondition(status, kRunning, true, "AllRanksJoined", "a", 1, kT0);
  setCondition(status, kRunning, true, "AllRanksJoined", "b", 2, kT1);
  ASSERT_EQ(status.conditions.size(), 1u);
  EXPECT_EQ(status.conditions[0].last_transition_time, kT0);
  EXPECT_EQ(status.conditions[0].message, "b");
  EXPECT_EQ(status.conditions[0].observed_generation, 2);
  setCondition(status, kRunning, false, "RanksNotReady", "c", 2, kT1);
  EXPECT_EQ(status.conditions[0].last_transition_time, kT1);
  EXPECT_EQ(status.conditions[0].status, "False");
}

// Every condition carries what meta/v1 Condition requires, in the shapes the CRD's schema
// checks (a status the API server refused would be lost).
TEST(Status, ConditionsAreMetaV1Conditions) {
  kube::TrainingJobStatus status;
  const std::string long_message(40000, 'x');
  setCondition(status, kFailed, true, "Rank 1 failed: exit-3", "é" + long_message, 4, kT0);
  const kube::Condition& c = status.conditions[0];
  EXPECT_EQ(c.type, "Failed");
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "Rank1failedexit3");
  ASSERT_TRUE(c.message.has_value());
  EXPECT_EQ(c.message->size(), kMaxConditionMessage);
  EXPECT_EQ(c.last_transition_time, kT0);
  EXPECT_EQ(c.observed_generation, 4);
  struct Row {
    std::string in, out;
  };
  for (const Row& row :
       {Row{"AllRanksJoined", "AllRanksJoined"}, Row{"", "Unknown"}, Row{"3rdTry", "rdTry"},
        Row{"image-pull back off", "imagepullbackoff"}, Row{"---", "Unknown"}}) {
    EXPECT_EQ(conditionReason(row.in), row.out) << row.in;
  }
  EXPECT_EQ(conditionReason(std::string(2000, 'A')).size(), kMaxConditionReason);
  // Cut where a character starts: 32767 ASCII bytes, then a two-byte character.
  EXPECT_EQ(conditionMessage(std::string(32767, 'a') + "é").size(), 32767u);
}

TEST(Status, PodProblemsAreWhatWaitingAloneWillNotCure) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 1));
  struct Case {
    std::string name;
    std::function<void(kube::Pod&)> change;
    std::optional<std::string> reason;
  };
  auto waiting = [](std::string reason, std::string message) {
    return [reason, message](kube::Pod& p) {
      kube::ContainerStatus cs;
      cs.name = "worker";
      cs.state.emplace().waiting = kube::ContainerStateWaiting{reason, message, {}};
      p.status.container_statuses = {cs};
    };
  };
  const std::vector<Case> cases = {
      {"pending", [](kube::Pod&) {}, std::nullopt},
      {"creating", waiting("ContainerCreating", ""), std::nullopt},
      {"config", waiting("CreateContainerConfigError", "no such key"),
       "CreateContainerConfigError"},
      {"image", waiting("ImagePullBackOff", "back-off pulling"), "ImagePullBackOff"},
      {"crash", waiting("CrashLoopBackOff", "back-off 10s"), "CrashLoopBackOff"},
      {"unschedulable",
       [](kube::Pod& p) {
         kube::Condition c;
         c.type = "PodScheduled";
         c.status = "False";
         c.reason = "Unschedulable";
         c.message = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.";
         p.status.conditions = {c};
       },
       "Unschedulable"},
  };
  for (const Case& c : cases) {
    kube::Pod p = pod(job, 0, "Pending", false);
    c.change(p);
    std::optional<PodProblem> problem = podProblem(p);
    EXPECT_EQ(problem ? std::optional<std::string>(problem->reason) : std::nullopt, c.reason)
        << c.name;
    if (problem) {
      EXPECT_EQ(problem->message.rfind("pod fmnist-worker-0", 0), 0u) << c.name;
    }
  }
}

TEST(Status, TheReasonSaysWhyAJobIsNotRunning) {
  struct Case {
    std::string name;
    std::vector<std::tuple<const char*, bool, const char*>> conditions;
    std::optional<std::string> reason;
  };
  const std::vector<Case> cases = {
      {"new", {}, std::nullopt},
      {"waiting for ranks", {{kRunning, false, "RanksNotReady"}}, std::nullopt},
      {"refused", {{kCreated, false, "FailedCreatePod"}}, "FailedCreatePod"},
      {"cannot start",
       {{kCreated, true, "WorkersCreated"}, {kRunning, false, "ImagePullBackOff"}},
       "ImagePullBackOff"},
      {"running", {{kRunning, true, "AllRanksJoined"}}, std::nullopt},
      {"failed",
       {{kRunning, false, "JobFailed"}, {kFailed, true, "BackoffLimitExceeded"}},
       "BackoffLimitExceeded"},
      {"succeeded", {{kSucceeded, true, "AllRanksSucceeded"}}, std::nullopt},
  };
  for (const Case& c : cases) {
    kube::TrainingJobStatus status;
    for (const auto& [type, value, reason] : c.conditions) {
      setCondition(status, type, value, reason, "m", 1, kT0);
    }
    EXPECT_EQ(reasonOf(status), c.reason) << c.name;
  }
}

TEST(Status, RunningClearsRestarting) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 1));
  kube::TrainingJobStatus status;
  status.restarts = 1;
  setCondition(status, kRestarting, true, "RankFailed", "x", 1, kT0);
  EXPECT_EQ(phaseOf(status), "Restarting");
  const WorkerPod p = workerPodOf(pod(job, 0, "Running", true));
  observePods(job, {&p}, kT1, status);
  EXPECT_FALSE(isTrue(status, kRestarting));
  EXPECT_EQ(status.phase, "Running");
  EXPECT_TRUE(isTrue(status, kCreated));
}

TEST(Status, ARankThatFinishesFirstKeepsTheJobRunning) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 2));
  kube::TrainingJobStatus status;
  const WorkerPod a = workerPodOf(pod(job, 0, "Running", true));
  const WorkerPod b = workerPodOf(pod(job, 1, "Running", true));
  observePods(job, {&a, &b}, kT0, status);
  ASSERT_EQ(status.phase, "Running");
  const WorkerPod done = workerPodOf(pod(job, 0, "Succeeded", false, 0));
  observePods(job, {&done, &b}, kT1, status);
  EXPECT_EQ(status.phase, "Running") << "not Pending while the last rank finishes";
  // But a job that never ran is not Running because one pod finished.
  kube::TrainingJobStatus fresh;
  const WorkerPod waiting = workerPodOf(pod(job, 1, "Pending", false));
  observePods(job, {&done, &waiting}, kT1, fresh);
  EXPECT_NE(fresh.phase, "Running");
}

TEST(Status, PhasePrefersTerminalConditions) {
  kube::TrainingJobStatus status;
  setCondition(status, kRunning, true, "r", "", 1, kT0);
  EXPECT_EQ(phaseOf(status), "Running");
  setCondition(status, kSuspended, true, "s", "", 1, kT0);
  EXPECT_EQ(phaseOf(status), "Suspended");
  setCondition(status, kSucceeded, true, "s", "", 1, kT0);
  EXPECT_EQ(phaseOf(status), "Succeeded");
  setCondition(status, kFailed, true, "f", "", 1, kT0);
  EXPECT_EQ(phaseOf(status), "Failed");
  EXPECT_TRUE(isFinished(status));
}

TEST(Status, ExitCodeComesFromTheWorkerContainer) {
  kube::TrainingJob job = defaulted(makeJob());
  EXPECT_EQ(exitCodeOf(pod(job, 0, "Failed", false, 137)), 137);
  EXPECT_EQ(exitCodeOf(pod(job, 0, "Running", false)), std::nullopt);
  EXPECT_EQ(attemptOf(buildWorkerPod(job, 0, 7, "store-secret-for-tests")), 7);
}

TEST(Status, TerminationMessageComesFromTheWorkerContainer) {
  kube::TrainingJob job = defaulted(makeJob());
  kube::Pod failed = pod(job, 0, "Failed", false, 1);
  EXPECT_EQ(terminationMessageOf(failed), std::nullopt);
  failed.status.container_statuses[0].state->terminated->message = "rank 0 exited: E CORE boom";
  EXPECT_EQ(terminationMessageOf(failed), "rank 0 exited: E CORE boom");
}

TEST(Status, FirstFailedReplicaPrefersTheCauseOverItsConsequences) {
  kube::TrainingJob job = defaulted(makeJob("fmnist", 3));
  struct Rank {
    std::string phase;
    std::optional<int> code;
    int finished_after = 0;  // seconds after kT0
  };
  struct Case {
    std::string name;
    std::vector<Rank> ranks;
    int want;
  };
  const Case cases[] = {
      {"none failed", {{"Running", {}}, {"Succeeded", 0}, {"Running", {}}}, -1},
      {"the only failure", {{"Running", {}}, {"Failed", 1}, {"Running", {}}}, 1},
      {"own exit code before a peer's loss", {{"Failed", 142, 1}, {"Failed", 1, 2}}, 1},
      {"own exit code before SIGTERM", {{"Failed", 143, 0}, {"Failed", 1, 0}}, 1},
      {"the earliest of equals", {{"Failed", 1, 5}, {"Failed", 1, 3}, {"Failed", 2, 4}}, 1},
      {"ties go to the lowest index", {{"Failed", 1, 3}, {"Failed", 1, 3}}, 0},
      {"no exit code counts as a consequence", {{"Failed", {}, 0}, {"Failed", 137, 9}}, 1},
  };
  for (const Case& c : cases) {
    std::vector<WorkerPod> storage;
    for (size_t i = 0; i < c.ranks.size(); ++i) {
      const Rank& r = c.ranks[i];
      kube::Pod p = pod(job, static_cast<int>(i), r.phase, false, r.code);
      if (r.code) {
        p.status.container_statuses[0].state->terminated->finished_at =
            kube::Time::fromUnixSeconds(kT0.unixSeconds() + r.finished_after);
      }
      storage.push_back(workerPodOf(p));
    }
    std::vector<const WorkerPod*> pods;
    for (const WorkerPod& p : storage) pods.push_back(&p);
    pods.push_back(nullptr);  // a missing pod
    EXPECT_EQ(firstFailedReplica(pods), c.want) << c.name;
  }
}

TEST(Status, FoldMessageTable) {
  struct Case {
    std::string name, message;
    size_t max;
    std::string want;
  };
  const Case cases[] = {
      {"one line", "rank 0 exited with code 1: E CORE bad input\n", 512,
       "rank 0 exited with code 1: E CORE bad input"},
      {"blank", " \n\n", 512, ""},
      {"lines joined", "a\n\n  b  \nc", 512, "a | b | c"},
      {"the last lines that fit", "first line\nsecond\nthird", 14, "second | third"},
      {"a long last line keeps its start", "x\n0123456789abcdef", 10, "0123456..."},
      {"never inside a UTF-8 character", "x\n\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 6, "\xc3\xa9..."},
  };
  for (const Case& c : cases) EXPECT_EQ(foldMessage(c.message, c.max), c.want) << c.name;
  EXPECT_LE(foldMessage(std::string(100, 'l') + "\n" + std::string(9000, 'x')).size(),
            kMaxFoldedMessageBytes);
}

}  // namespace
}  // namespace ringmaster::op
